//! Whether an open-model run kept its schedule: the documented thresholds
//! (docs/exit-status.md) and the verdict from the run's counts. A run that did not keep it
//! ends with its own exit status (`error::EXIT_SCHEDULE_NOT_KEPT`) and says so in every
//! report: its latency figures stand for the requests it sent, not for the schedule.

use crate::stats::LATE_US;

/// More than this share of the scheduled requests (sent + never sent) never sent: the
/// schedule was not kept.
pub const NOT_SENT_SHARE: f64 = 0.01;

/// More than this share of the sent requests started over `LATE_US` behind schedule...
pub const LATE_SHARE: f64 = 0.5;

/// ...and the largest lag over this (microseconds): the schedule was not kept. A short
/// stall the run caught up with is not enough, nor a busy machine's few milliseconds, nor
/// the second or two a client kept off a crowded CPU can fall behind (the requests that
/// were never sent tell a stall past the end).
pub const LATE_LAG_US: u64 = 5_000_000;

/// The verdict on an open-model run's schedule (a closed-model run has none to keep: its
/// counts of late and unsent requests are 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScheduleVerdict {
    Kept,
    /// Too many scheduled requests were never sent.
    NotSent {
        not_sent: u64,
        scheduled: u64,
    },
    /// Too many were sent too late.
    Late {
        late: u64,
        sent: u64,
        max_lag_us: u64,
    },
}

/// The verdict from the run's counts: `sent` measured requests sent, `not_sent` never sent,
/// `late` of the sent ones over `LATE_US` behind, the largest lag `max_lag_us`.
pub fn verdict(sent: u64, not_sent: u64, late: u64, max_lag_us: u64) -> ScheduleVerdict {
    let scheduled = sent.saturating_add(not_sent);
    if not_sent > 0 && not_sent as f64 > NOT_SENT_SHARE * scheduled as f64 {
        return ScheduleVerdict::NotSent {
            not_sent,
            scheduled,
        };
    }
    if late > 0 && late as f64 > LATE_SHARE * sent as f64 && max_lag_us > LATE_LAG_US {
        return ScheduleVerdict::Late {
            late,
            sent,
            max_lag_us,
        };
    }
    ScheduleVerdict::Kept
}

impl ScheduleVerdict {
    /// The warning every report gives (None when the schedule was kept).
    pub fn warning(&self) -> Option<String> {
        let pct = |a: u64, b: u64| 100.0 * a as f64 / b.max(1) as f64;
        match *self {
            ScheduleVerdict::Kept => None,
            ScheduleVerdict::NotSent {
                not_sent,
                scheduled,
            } => Some(format!(
                "the schedule was not kept: {not_sent} of the {scheduled} scheduled requests ({:.1}%) were never sent; the sent requests' latency leaves them out (the unsent requests' own figure counts each as having waited until the run ended)",
                pct(not_sent, scheduled)
            )),
            ScheduleVerdict::Late {
                late,
                sent,
                max_lag_us,
            } => Some(format!(
                "the schedule was not kept: {late} of the {sent} requests ({:.1}%) were sent over {} ms behind their intended start, the largest lag {:.2} s",
                pct(late, sent),
                LATE_US / 1000,
                max_lag_us as f64 / 1e6
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_sent_its_schedule_on_time_kept_it() {
        assert_eq!(verdict(6000, 0, 0, 900), ScheduleVerdict::Kept);
        assert_eq!(verdict(0, 0, 0, 0), ScheduleVerdict::Kept);
        // 1% never sent is still kept; one more is not.
        assert_eq!(verdict(990, 10, 0, 0), ScheduleVerdict::Kept);
        assert_eq!(
            verdict(989, 11, 0, 0),
            ScheduleVerdict::NotSent {
                not_sent: 11,
                scheduled: 1000
            }
        );
        assert!(verdict(989, 11, 0, 0).warning().is_some());
        assert!(ScheduleVerdict::Kept.warning().is_none());
    }

    #[test]
    fn the_issues_run_is_not_kept_and_says_how_much_was_never_sent() {
        // -R 1000 -z 6s, the server stopped from 3.5 s: 2,706 of 6,000 never sent.
        let v = verdict(3294, 2706, 12, 2_000_000);
        assert_eq!(
            v,
            ScheduleVerdict::NotSent {
                not_sent: 2706,
                scheduled: 6000
            }
        );
        let w = v.warning().unwrap();
        assert!(
            w.contains("2706 of the 6000 scheduled requests (45.1%)"),
            "{w}"
        );
    }

    #[test]
    fn lateness_counts_only_when_most_were_late_and_by_over_five_seconds() {
        // A 2 s stall in a 20 s run that caught up: a tenth late, not enough.
        assert_eq!(verdict(20_000, 0, 2_100, 2_000_000), ScheduleVerdict::Kept);
        // Most late, but by milliseconds or a second or two (a busy machine): kept.
        assert_eq!(verdict(1000, 0, 900, 40_000), ScheduleVerdict::Kept);
        assert_eq!(verdict(1000, 0, 900, 4_400_000), ScheduleVerdict::Kept);
        // Most late by many seconds: not kept.
        let v = verdict(1000, 0, 600, 6_500_000);
        assert_eq!(
            v,
            ScheduleVerdict::Late {
                late: 600,
                sent: 1000,
                max_lag_us: 6_500_000
            }
        );
        let w = v.warning().unwrap();
        assert!(w.contains("600 of the 1000 requests (60.0%)"), "{w}");
        assert!(w.contains("over 10 ms") && w.contains("6.50 s"), "{w}");
    }
}
