//! The figures a thread's live snapshot carries beyond requests and ok (`Figures`: errors,
//! status codes, open connections, latency buckets; `OpFigures`: each operation's requests,
//! successes and latency buckets), built from its statistics once a second, summed over
//! threads and processes, served by the metrics exporter and judged by `--threshold-abort`.

use crate::stats::{Errors, Stats};

/// Upper bounds of the latency buckets, in microseconds (`le` in seconds; +Inf added).
pub const BUCKETS_US: [u64; 19] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000,
    500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000,
];
pub const NB: usize = BUCKETS_US.len();
/// Status codes carried per snapshot (the most frequent first is not needed: few differ).
const CODES: usize = 16;

/// One histogram's cumulative bucket counts, sum and count.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Buckets {
    pub le: [u64; NB],
    pub sum_us: f64,
    pub count: u64,
}

impl Buckets {
    pub fn add_hist(&mut self, h: &crate::stats::Hist) {
        let h = &h.0;
        if h.is_empty() {
            return;
        }
        // One pass over the recorded values, then cumulative.
        let mut per = [0u64; NB];
        for v in h.iter_recorded() {
            let i =
                BUCKETS_US.partition_point(|&le| le < h.lowest_equivalent(v.value_iterated_to()));
            if let Some(b) = per.get_mut(i) {
                *b += v.count_at_value();
            }
        }
        let mut acc = 0;
        for (b, n) in self.le.iter_mut().zip(per) {
            acc += n;
            *b += acc;
        }
        self.sum_us += h.mean() * h.len() as f64;
        self.count += h.len();
    }

    pub fn add(&mut self, o: &Buckets) {
        for (a, b) in self.le.iter_mut().zip(&o.le) {
            *a += b;
        }
        self.sum_us += o.sum_us;
        self.count += o.count;
    }
}

/// What a thread's snapshot carries beyond requests and ok. Fixed size, no allocation.
/// A worker process sums its threads' and sends the sum in its `progress` message
/// (`orchestrate::protocol`), so the coordinator serves the figures of every process.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Figures {
    pub errors: Errors,
    /// Requests a rate-limit quota throttled (failed, but no error).
    #[serde(default)]
    pub throttled: u64,
    /// Connections that failed with no request failing with them, by kind (`status`
    /// unused): `Stats::connection_failures`.
    #[serde(default)]
    pub connection_failures: Errors,
    /// (status code, responses); unused entries have code 0.
    pub status: [(u16, u64); CODES],
    pub connections_open: u64,
    pub connections_opened: u64,
    pub latency: Buckets,
    pub service: Buckets,
}

impl Figures {
    /// A thread's figures from its statistics and its status counts (indexed by code).
    pub fn of(stats: &Stats, status: &[u64], connections_open: u64) -> Figures {
        Figures::with_ops(stats, status, connections_open, &OpFigures::of(stats))
    }

    /// `of`, with the operations' figures already built from `stats` (their latency
    /// buckets summed rather than built again).
    pub fn with_ops(
        stats: &Stats,
        status: &[u64],
        connections_open: u64,
        ops: &[OpFigures],
    ) -> Figures {
        let mut f = Figures {
            errors: stats.errors,
            throttled: stats.throttled,
            connection_failures: Errors {
                connect: stats.connection_failures.connect,
                read: stats.connection_failures.read,
                write: stats.connection_failures.write,
                timeout: stats.connection_failures.timeout,
                status: 0,
            },
            connections_open,
            connections_opened: stats.connections_opened,
            ..Figures::default()
        };
        let codes = status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(c, n)| (c as u16, *n));
        for (slot, code) in f.status.iter_mut().zip(codes) {
            *slot = code;
        }
        for (op, o) in stats.ops.iter().zip(ops) {
            f.latency.add(&o.latency);
            f.service.add_hist(&op.service);
        }
        f
    }

    /// Adds another thread's (or process's) figures: counts add, histogram buckets add,
    /// status codes add by code (codes beyond the fixed slots are dropped from this
    /// snapshot only; the final figures come from the merged statistics).
    pub fn add(&mut self, o: &Figures) {
        self.errors.merge(&o.errors);
        self.throttled += o.throttled;
        self.connection_failures.merge(&o.connection_failures);
        self.connections_open += o.connections_open;
        self.connections_opened += o.connections_opened;
        self.latency.add(&o.latency);
        self.service.add(&o.service);
        for &(code, n) in o.status.iter().filter(|(c, _)| *c != 0) {
            if let Some(slot) = self.status.iter_mut().find(|(c, _)| *c == code || *c == 0) {
                slot.0 = code;
                slot.1 += n;
            }
        }
    }
}

/// One operation's live figures (in the order of the run's operations): what
/// `--threshold-abort` judges a threshold on one operation by.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OpFigures {
    pub requests: u64,
    pub ok: u64,
    pub latency: Buckets,
}

impl OpFigures {
    /// Each operation's figures of a thread's statistics.
    pub fn of(stats: &Stats) -> Vec<OpFigures> {
        stats
            .ops
            .iter()
            .map(|op| {
                let mut latency = Buckets::default();
                latency.add_hist(&op.latency);
                OpFigures {
                    requests: op.requests,
                    ok: op.ok,
                    latency,
                }
            })
            .collect()
    }

    /// Adds another thread's figures of the same operation.
    pub fn add(&mut self, o: &OpFigures) {
        self.requests += o.requests;
        self.ok += o.ok;
        self.latency.add(&o.latency);
    }
}
