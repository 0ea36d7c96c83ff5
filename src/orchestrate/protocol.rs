//! The messages between a run's coordinator and its workers, one JSON object per line,
//! versioned. A worker is a local child process (`vblast --worker`, over its stdin and
//! stdout); nothing in the messages is tied to a pipe: they are plain lines on a byte
//! stream.
//!
//! Coordinator -> worker: `plan` (the share of the run, whether to report progress, and
//! whether the run is held), `go` (start the clock at a wall-clock instant), `stop` (end the
//! run now; end of input means the same), `route` (a cluster's active node moved:
//! connections follow it), `step` (a held run's next step, over the same connections).
//! Worker -> coordinator: `ready` (connections open), `progress` (its running totals, about
//! once a second, when the plan asked for them), `result` (its statistics), `step_done` (a
//! held run's statistics of the step just ended), `error`.
//!
//! A held run (`vblast sweep`'s rate steps): after `go` the worker runs the plan's own
//! step, sends `step_done`, and waits, its connections open, for the next `step` (or for
//! `stop` / the end of input, which end it).

use std::io::{BufRead, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::engine::{EnginePlan, StepPlan};
use crate::stats::Stats;

/// Bumped whenever a message changes shape; both sides refuse another version.
/// 2: `plan` carries `progress`, and workers may send `progress`.
/// 3: `progress` carries `figures`, everything `--metrics-listen` serves (src/metrics.rs).
/// 4: the coordinator may send `route` (the new active node after a failover).
/// 5: `plan` carries `held`; held runs add `step` and `step_done`.
/// 6: `plan`'s load is the scenario's `Load`, nested (`plan.load`, its step fields beside
///    the others); `step` is that `Load`'s `StepPlan`.
pub const VERSION: u32 = 6;

#[derive(Serialize, Deserialize)]
#[serde(tag = "msg", content = "data", rename_all = "snake_case")]
pub enum ToWorker {
    Plan {
        version: u32,
        plan: Box<EnginePlan>,
        /// Send `progress` messages during the run (the coordinator shows a progress line).
        #[serde(default)]
        progress: bool,
        /// A held run: several steps over the same connections (`step`, `step_done`).
        #[serde(default)]
        held: bool,
    },
    /// Start the measured run at this wall-clock instant (nanoseconds since the Unix epoch).
    Go {
        at_unix_ns: u64,
    },
    Stop,
    /// `--nodes active`: the cluster's active node is now node `node` (an index into the
    /// plan's `nodes.targets`); the coordinator's watcher saw the failover.
    Route {
        node: usize,
    },
    /// A held run's next step (its schedule, warm-up and bounds), starting at this
    /// wall-clock instant (nanoseconds since the Unix epoch).
    Step {
        step: Box<StepPlan>,
        at_unix_ns: u64,
    },
}

#[derive(Serialize, Deserialize, Debug)]
#[serde(tag = "msg", content = "data", rename_all = "snake_case")]
pub enum FromWorker {
    Ready {
        version: u32,
        connections: u64,
    },
    /// The worker's running totals over its threads (requests completed, and ok), the
    /// rest of the figures `--metrics-listen` serves, and each operation's figures (what
    /// `--threshold-abort` judges a threshold on one operation by), summed over its threads.
    Progress {
        requests: u64,
        ok: u64,
        #[serde(default)]
        figures: Box<crate::stats::figures::Figures>,
        #[serde(default)]
        ops: Vec<crate::stats::figures::OpFigures>,
    },
    Result {
        stats: Box<Stats>,
    },
    /// A held run: the statistics of the step just ended (connections stay open).
    StepDone {
        stats: Box<Stats>,
    },
    Error {
        message: String,
    },
}

/// Writes one message as one line.
pub fn send<T: Serialize>(out: &mut impl Write, msg: &T) -> std::io::Result<()> {
    let line = serde_json::to_string(msg).map_err(std::io::Error::other)?;
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// A message that could not be read. A malformed line is described without quoting it
/// (a plan holds the token).
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("malformed message ({category:?} error at line {line}, column {column})")]
    Malformed {
        category: serde_json::error::Category,
        line: usize,
        column: usize,
    },
    #[error("cannot read a message: {0}")]
    Read(std::io::Error),
}

/// Reads one message; `Ok(None)` at the end of input.
pub fn recv<T: DeserializeOwned>(input: &mut impl BufRead) -> Result<Option<T>, ProtocolError> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) => Ok(None),
        Ok(_) => {
            serde_json::from_str(line.trim())
                .map(Some)
                .map_err(|e| ProtocolError::Malformed {
                    category: e.classify(),
                    line: e.line(),
                    column: e.column(),
                })
        }
        Err(e) => Err(ProtocolError::Read(e)),
    }
}

/// Now, as `go` carries it.
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// How long until the wall-clock instant `at_unix_ns` (zero if it has passed).
pub fn until(at_unix_ns: u64) -> Duration {
    Duration::from_nanos(at_unix_ns.saturating_sub(unix_ns(SystemTime::now())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_one_per_line() {
        let mut buf = Vec::new();
        send(&mut buf, &ToWorker::Go { at_unix_ns: 42 }).unwrap();
        send(&mut buf, &ToWorker::Stop).unwrap();
        send(
            &mut buf,
            &FromWorker::Ready {
                version: VERSION,
                connections: 7,
            },
        )
        .unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.starts_with("{\"msg\":\"go\",\"data\":{\"at_unix_ns\":42}}\n"));
        let mut r = std::io::BufReader::new(buf.as_slice());
        assert!(matches!(
            recv::<ToWorker>(&mut r).unwrap(),
            Some(ToWorker::Go { at_unix_ns: 42 })
        ));
        assert!(matches!(
            recv::<ToWorker>(&mut r).unwrap(),
            Some(ToWorker::Stop)
        ));
        assert!(matches!(
            recv::<FromWorker>(&mut r).unwrap(),
            Some(FromWorker::Ready { connections: 7, .. })
        ));
        assert!(recv::<FromWorker>(&mut r).unwrap().is_none());
    }

    #[test]
    fn route_names_the_new_active_node() {
        let mut buf = Vec::new();
        send(&mut buf, &ToWorker::Route { node: 2 }).unwrap();
        assert_eq!(
            String::from_utf8(buf.clone()).unwrap(),
            "{\"msg\":\"route\",\"data\":{\"node\":2}}\n"
        );
        let mut r = std::io::BufReader::new(buf.as_slice());
        assert!(matches!(
            recv::<ToWorker>(&mut r).unwrap(),
            Some(ToWorker::Route { node: 2 })
        ));
    }

    #[test]
    fn progress_carries_every_figure_on_one_line() {
        let mut stats = Stats::new(1);
        stats.ops[0].latency.record(700);
        stats.ops[0].service.record(300);
        stats.errors.timeout = 2;
        stats.connections_opened = 5;
        let mut status = vec![0u64; 1000];
        status[200] = 10;
        status[429] = 1;
        let figures = crate::stats::figures::Figures::of(&stats, &status, 4);
        let ops = crate::stats::figures::OpFigures::of(&stats);
        let mut buf = Vec::new();
        send(
            &mut buf,
            &FromWorker::Progress {
                requests: 12,
                ok: 10,
                figures: Box::new(figures),
                ops: ops.clone(),
            },
        )
        .unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(
            text.starts_with("{\"msg\":\"progress\",\"data\":{\"requests\":12,\"ok\":10,"),
            "{text}"
        );
        let mut r = std::io::BufReader::new(buf.as_slice());
        let Some(FromWorker::Progress {
            requests: 12,
            ok: 10,
            figures: got,
            ops: got_ops,
        }) = recv::<FromWorker>(&mut r).unwrap()
        else {
            panic!("not the progress sent");
        };
        assert_eq!(*got, figures);
        // Each operation's figures, for --threshold-abort's thresholds on one operation.
        assert_eq!(got_ops, ops);
        assert_eq!(got_ops[0].latency.count, 1);
        assert_eq!(got.errors.timeout, 2);
        assert_eq!(got.connections_open, 4);
        assert_eq!(got.latency.count, 1);
        assert!(got.status.contains(&(429, 1)));
    }

    #[test]
    fn results_keep_every_counter_and_histogram() {
        // Status codes are map keys: they must survive the trip as numbers.
        let mut stats = Stats::new(1);
        stats.status.insert(200, 7);
        stats.status.insert(503, 2);
        stats.ops[0].requests = 9;
        stats.ops[0].latency.record(1234);
        stats.timeline.record(0, true, Some(1234));
        let mut buf = Vec::new();
        send(
            &mut buf,
            &FromWorker::Result {
                stats: Box::new(stats),
            },
        )
        .unwrap();
        let mut r = std::io::BufReader::new(buf.as_slice());
        let Some(FromWorker::Result { stats }) = recv::<FromWorker>(&mut r).unwrap() else {
            panic!("not a result");
        };
        assert_eq!(stats.status.get(&200), Some(&7));
        assert_eq!(stats.status.get(&503), Some(&2));
        assert_eq!(stats.ops[0].requests, 9);
        assert_eq!(stats.ops[0].latency.0.len(), 1);
        assert_eq!(stats.timeline.seconds().len(), 1);
    }

    #[test]
    fn held_steps_carry_their_schedule_and_results() {
        let step = StepPlan {
            schedule: Some(crate::config::schedule::Schedule::from_flags("250", None).unwrap()),
            warmup: Duration::from_millis(200),
            duration: Some(Duration::from_secs(3)),
            requests: None,
        };
        let mut stats = Stats::new(1);
        stats.ops[0].requests = 750;
        let mut buf = Vec::new();
        send(
            &mut buf,
            &ToWorker::Step {
                step: Box::new(step),
                at_unix_ns: 9,
            },
        )
        .unwrap();
        send(
            &mut buf,
            &FromWorker::StepDone {
                stats: Box::new(stats),
            },
        )
        .unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.starts_with("{\"msg\":\"step\",\"data\":{"), "{text}");
        let mut r = std::io::BufReader::new(buf.as_slice());
        let Some(ToWorker::Step { step, at_unix_ns }) = recv::<ToWorker>(&mut r).unwrap() else {
            panic!("not a step: {text}");
        };
        assert_eq!(at_unix_ns, 9);
        assert_eq!(step.schedule.unwrap().constant_rate(), Some(250.0));
        assert_eq!(step.warmup, Duration::from_millis(200));
        assert_eq!(step.duration, Some(Duration::from_secs(3)));
        assert_eq!(step.requests, None);
        let Some(FromWorker::StepDone { stats }) = recv::<FromWorker>(&mut r).unwrap() else {
            panic!("not a step's results: {text}");
        };
        assert_eq!(stats.ops[0].requests, 750);
    }

    #[test]
    fn malformed_lines_are_not_quoted() {
        let mut r = std::io::BufReader::new(&b"{\"msg\":\"plan\",\"token\":\"hvs.SECRET\"\n"[..]);
        let e = recv::<ToWorker>(&mut r).err().unwrap().to_string();
        assert!(!e.contains("SECRET") && e.contains("malformed"), "{e}");
    }

    #[test]
    fn go_instants_in_the_past_mean_now() {
        assert_eq!(until(0), Duration::ZERO);
        let later = unix_ns(SystemTime::now()) + 5_000_000_000;
        assert!(until(later) > Duration::from_secs(4));
    }
}
