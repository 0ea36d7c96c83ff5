//! A sweep step measured again: an unclear step (a percentile's interval straddling its
//! bound) is run once more at the same load, up to `--max-repeats`, and every measurement's
//! samples are pooled into one step by lossless histogram merge, the later measurements'
//! seconds after the earlier ones', so that the pooled step reports as one run of all of
//! them would; their blocks of time (`stats::blocks`) are appended, each repeat's blocks
//! blocks of the pooled step, so its intervals see the correlation within each.

use crate::results::Results;

use super::search::Phase;

/// The step being measured again: its load and pass, its samples so far, and why.
#[derive(Debug)]
pub struct Repeating {
    pub load: u64,
    pub phase: Phase,
    pub results: Results,
    /// Repeats made so far (0 after the first measurement).
    pub repeats: u32,
    pub because: Vec<String>,
}

/// `more`'s samples added to `into`'s, as one run of both, `more` measured after `into`.
pub fn pool(mut into: Results, more: Results) -> Results {
    let before = into.stats.elapsed_s;
    let mut later = more.stats;
    later.timeline.shift(before.ceil() as u64);
    // Its blocks of time come after the earlier ones' (blocks of their own).
    let blocks = std::mem::take(&mut later.blocks);
    let elapsed = before + later.elapsed_s;
    into.stats.merge(&later);
    into.stats.blocks.append(&blocks);
    into.stats.elapsed_s = elapsed;
    // The nodes' samples of both, by node in time order (their counters are the server's).
    into.server_samples = crate::server_stats::ServerSamples::merge(
        into.server_samples.iter().chain(more.server_samples.iter()),
    );
    into
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Model, RunInfo};
    use crate::stats::Stats;

    fn measured(values: &[u64], secs: f64) -> Results {
        let mut stats = Stats::new(1);
        for (i, v) in values.iter().enumerate() {
            stats.ops[0].requests += 1;
            stats.ops[0].ok += 1;
            stats.ops[0].latency.record(*v);
            stats
                .timeline
                .record(i as u64 % secs as u64, true, Some(*v));
        }
        stats.elapsed_s = secs;
        let run = RunInfo {
            operation: "GET".into(),
            model: Model::Open,
            target_rate: Some(10.0),
            ..RunInfo::sample("http://127.0.0.1:1", 1)
        };
        Results::build(
            run,
            stats,
            vec!["GET".into()],
            serde_json::Value::Null,
            std::time::SystemTime::now(),
        )
    }

    #[test]
    fn pooled_measurements_report_as_one_run_of_all_their_samples() {
        let a: Vec<u64> = (1..=400).map(|v| v * 37).collect();
        let b: Vec<u64> = (1..=600).map(|v| v * 53).collect();
        let pooled = pool(measured(&a, 2.0), measured(&b, 3.0));
        let all: Vec<u64> = a.iter().chain(&b).copied().collect();
        let one = measured(&all, 5.0);
        let (p, o) = (pooled.summary(), one.summary());
        assert_eq!(p.requests, 1000);
        assert_eq!(p.duration_s, 5.0);
        assert_eq!(p.rps, o.rps);
        assert_eq!(
            p.latency_ms, o.latency_ms,
            "the same percentiles and intervals"
        );
        // The later measurement's seconds come after the earlier one's.
        assert_eq!(p.timeline.len(), 5);
    }
}
