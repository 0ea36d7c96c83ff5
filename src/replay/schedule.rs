//! The recorded-instant schedule of a replay: a log's request times in, the intended send
//! times out (offsets from the replay's origin), as a pure type.
//!
//! The first replayed request is the origin; recorded second s is [s, s+1) seconds after
//! it. `--speed F` divides every offset by F (ten seconds of log in one at 10). `--scale F`
//! multiplies the count of every recorded second:
//! - at 1, each request keeps its own recorded instant;
//! - otherwise recorded second s, which held n(s) requests, gets
//!   m(s) = round(F * C(s+1)) - round(F * C(s)) requests, C(s) being the requests recorded
//!   before second s (rounding half away from zero). The whole log gives round(F * N), a
//!   second's count is within one of F * n(s), and a fraction left over in one second is
//!   carried to the next (at 0.5 a second of one request gives one request every other
//!   second). The m(s) requests are spread evenly over the second: the j-th at s + j/m(s),
//!   never a burst at its start. The j-th replays recorded request floor(j * n(s) / m(s))
//!   of that second (in order): each one twice at 2, every other one at 0.5.

use std::time::Duration;

/// Why a replay's schedule cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayRefusal {
    #[error("--speed {0}: give a factor above 0 (10: ten seconds of log in one)")]
    Speed(f64),
    #[error("--scale {0}: give a factor above 0 (2: twice the recorded requests)")]
    Scale(f64),
    #[error("no request to replay")]
    Nothing,
    #[error(
        "--scale {scale} on {recorded} recorded requests makes {sends:.3e} sends, more than a replay holds ({max}): replay a slice of the log, or a smaller scale"
    )]
    TooMany {
        scale: f64,
        recorded: usize,
        sends: f64,
        max: usize,
    },
}

/// The most sends a replay's schedule holds (about 16 bytes each, plus 10 in the engine's
/// `Schedule::Instants`): some 0.5 GB at the bound, 20,000 req/s for over 16 minutes.
pub const MAX_SENDS: usize = 20_000_000;

/// One intended send: its offset from the origin and which recorded request it replays
/// (an index into the times given).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub offset_ns: u64,
    pub recorded: usize,
}

/// A log's request times placed on the replay's clock.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedSchedule {
    sends: Vec<Placed>,
    /// Requests recorded in each second from the first.
    recorded_per_second: Vec<u64>,
    speed: f64,
}

fn factor(f: f64) -> bool {
    f.is_finite() && f > 0.0
}

/// Refuses a `--speed` or `--scale` that is not a finite factor above 0 (before any log
/// is read).
pub fn check_factors(speed: f64, scale: f64) -> Result<(), ReplayRefusal> {
    if !factor(speed) {
        return Err(ReplayRefusal::Speed(speed));
    }
    if !factor(scale) {
        return Err(ReplayRefusal::Scale(scale));
    }
    Ok(())
}

impl RecordedSchedule {
    /// From the recorded times (ns since the epoch, non-decreasing), `speed` and `scale`.
    pub fn new(
        times_ns: &[i64],
        speed: f64,
        scale: f64,
    ) -> Result<RecordedSchedule, ReplayRefusal> {
        check_factors(speed, scale)?;
        let Some(&first) = times_ns.first() else {
            return Err(ReplayRefusal::Nothing);
        };
        let planned = (times_ns.len() as f64 * scale).round();
        if planned > MAX_SENDS as f64 {
            return Err(ReplayRefusal::TooMany {
                scale,
                recorded: times_ns.len(),
                sends: planned,
                max: MAX_SENDS,
            });
        }
        let since = |t: i64| (t.max(first) - first) as u64;
        let seconds = since(*times_ns.last().unwrap_or(&first)) / 1_000_000_000 + 1;
        let mut recorded_per_second = vec![0u64; seconds as usize];
        for &t in times_ns {
            recorded_per_second[(since(t) / 1_000_000_000) as usize] += 1;
        }
        let on_clock = |ns: f64| (ns / speed).round() as u64;
        let mut sends = Vec::with_capacity(planned as usize + 1);
        if scale == 1.0 {
            sends.extend(times_ns.iter().enumerate().map(|(i, &t)| Placed {
                offset_ns: on_clock(since(t) as f64),
                recorded: i,
            }));
        } else {
            let mut before = 0u64;
            for (s, &n) in recorded_per_second.iter().enumerate() {
                let m = (scale * (before + n) as f64).round() as u64
                    - (scale * before as f64).round() as u64;
                for j in 0..m {
                    let at = (s as f64 + j as f64 / m as f64) * 1e9;
                    sends.push(Placed {
                        offset_ns: on_clock(at),
                        recorded: (before + j * n / m) as usize,
                    });
                }
                before += n;
            }
        }
        if sends.is_empty() {
            return Err(ReplayRefusal::Nothing);
        }
        Ok(RecordedSchedule {
            sends,
            recorded_per_second,
            speed,
        })
    }

    /// The intended sends, in order of their offsets.
    pub fn sends(&self) -> &[Placed] {
        &self.sends
    }

    /// The offsets alone (the engine's `Schedule::Instants`).
    pub fn offsets(&self) -> Vec<u64> {
        self.sends.iter().map(|s| s.offset_ns).collect()
    }

    /// Requests recorded in each second of the log, from its first replayed request.
    pub fn recorded_per_second(&self) -> &[u64] {
        &self.recorded_per_second
    }

    /// Requests intended in each recorded second (each lasting 1/speed on the replay's
    /// clock): the recorded ones at scale 1, m(s) otherwise.
    pub fn intended_per_second(&self) -> Vec<u64> {
        let mut out = vec![0u64; self.recorded_per_second.len()];
        let second = 1e9 / self.speed;
        for s in &self.sends {
            let i = ((s.offset_ns as f64 / second) as usize).min(out.len() - 1);
            out[i] += 1;
        }
        out
    }

    /// The length of a recorded second on the replay's clock.
    pub fn second(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.speed)
    }

    /// From the first intended send to the last.
    pub fn span(&self) -> Duration {
        Duration::from_nanos(self.sends.last().map_or(0, |s| s.offset_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;
    const T0: i64 = 1_796_000_000 * S;

    /// Seconds 0..3 of a log: 4, 0, 2 requests.
    fn log() -> Vec<i64> {
        vec![
            T0,
            T0 + S / 10,
            T0 + S / 2,
            T0 + 9 * S / 10,
            T0 + 2 * S + 1,
            T0 + 2 * S + S / 4,
        ]
    }

    #[test]
    fn at_scale_one_each_request_keeps_its_recorded_instant() {
        let r = RecordedSchedule::new(&log(), 1.0, 1.0).unwrap();
        let got: Vec<u64> = r.sends().iter().map(|s| s.offset_ns).collect();
        let want: Vec<u64> = log().iter().map(|t| (t - T0) as u64).collect();
        assert_eq!(got, want);
        assert_eq!(r.recorded_per_second(), [4, 0, 2]);
        assert_eq!(r.intended_per_second(), [4, 0, 2]);
        assert!(r.sends().iter().enumerate().all(|(i, s)| s.recorded == i));
    }

    #[test]
    fn speed_divides_every_offset() {
        let r = RecordedSchedule::new(&log(), 10.0, 1.0).unwrap();
        assert_eq!(r.span(), Duration::from_nanos((2 * S + S / 4) as u64 / 10));
        assert_eq!(r.second(), Duration::from_millis(100));
        assert_eq!(r.intended_per_second(), [4, 0, 2]);
    }

    #[test]
    fn scale_two_doubles_each_second_spread_evenly_over_it() {
        let r = RecordedSchedule::new(&log(), 1.0, 2.0).unwrap();
        assert_eq!(r.intended_per_second(), [8, 0, 4]);
        let first: Vec<u64> = r.sends()[..8].iter().map(|s| s.offset_ns).collect();
        let want: Vec<u64> = (0..8).map(|j| (j * S / 8) as u64).collect();
        assert_eq!(first, want, "spread over the second, not a burst");
        let replayed: Vec<usize> = r.sends().iter().map(|s| s.recorded).collect();
        assert_eq!(replayed, [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
        let third: Vec<u64> = r.sends()[8..].iter().map(|s| s.offset_ns).collect();
        assert_eq!(
            third,
            [
                2 * S as u64,
                2 * S as u64 + S as u64 / 4,
                2 * S as u64 + S as u64 / 2,
                2 * S as u64 + 3 * S as u64 / 4
            ]
        );
    }

    #[test]
    fn fractional_scales_carry_their_remainder_to_the_next_second() {
        // One request a second for ten seconds at 0.5: five, every other second.
        let times: Vec<i64> = (0..10).map(|s| T0 + s * S).collect();
        let r = RecordedSchedule::new(&times, 1.0, 0.5).unwrap();
        assert_eq!(r.intended_per_second(), [1, 0, 1, 0, 1, 0, 1, 0, 1, 0]);
        let r = RecordedSchedule::new(&times, 1.0, 1.5).unwrap();
        assert_eq!(r.sends().len(), 15);
        assert!(r.intended_per_second().iter().all(|&n| n == 1 || n == 2));
        // Three requests in one second at 2.5: round(7.5) = 8.
        let r = RecordedSchedule::new(&[T0, T0 + 1, T0 + 2], 1.0, 2.5).unwrap();
        assert_eq!(r.intended_per_second(), [8]);
    }

    #[test]
    fn bad_factors_and_nothing_to_replay_are_refused() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                RecordedSchedule::new(&log(), 1.0, bad),
                Err(ReplayRefusal::Scale(_))
            ));
            assert!(matches!(
                RecordedSchedule::new(&log(), bad, 1.0),
                Err(ReplayRefusal::Speed(_))
            ));
        }
        assert_eq!(
            RecordedSchedule::new(&[], 1.0, 1.0),
            Err(ReplayRefusal::Nothing)
        );
        // A scale so small that nothing is left.
        assert_eq!(
            RecordedSchedule::new(&[T0], 1.0, 0.1),
            Err(ReplayRefusal::Nothing)
        );
    }

    #[test]
    fn a_scale_past_what_a_replay_holds_is_refused_before_anything_is_placed() {
        for scale in [1e7, 1e300] {
            assert!(matches!(
                RecordedSchedule::new(&log(), 1.0, scale),
                Err(ReplayRefusal::TooMany { max: MAX_SENDS, .. })
            ));
        }
    }
}
