//! Each node's samples over a run, and the intervals between them: what the server did
//! from one sample to the next (CPU used, requests handled, their mean times), derived from
//! the samples' cumulative counters. Samples of several shards of one run merge by node.

use serde::{Deserialize, Serialize};

use super::sample::{FollowerLag, Process, Sample, TimerTotals};

/// The samples of every node of a run (the results file's `server_samples`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSamples {
    /// How often the nodes were sampled, seconds (`--server-interval`).
    pub interval_s: f64,
    pub nodes: Vec<NodeSamples>,
    /// `--pprof-interval`: the profile files of the first node saved during the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<String>,
    /// The CPU time the sampling cost vblast, seconds (its thread's, and its calls on the
    /// run's thread before and after the load), summed over shards; 0 when not measured.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sampler_cpu_s: f64,
    /// `--pprof-interval`: the profile requests sent to the first node, refused ones
    /// included (each passes through its handler); 0 in files from before it was kept.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub profile_requests: u64,
    /// A merged report of shards: each shard's sampling window (its earliest and latest
    /// sample, ms since the Unix epoch), for what the shards did outside their own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shard_windows: Vec<[u64; 2]>,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// One node's samples, in time order, and the sources it could not be sampled from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeSamples {
    /// The node's address (`http://127.0.0.1:8200`).
    pub node: String,
    /// `--server-pid`: the node's process, read from /proc.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub samples: Vec<Sample>,
    /// One line per source that did not answer, and why (said once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// What the sampler measured of its own calls' cost on this node before the load;
    /// absent when merged across shards (each shard's file keeps its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// What one sampler's calls add to one node's count of handled requests
/// (`vault_core_handle_request`), as it measured them before the load: the costs it took
/// off the server's count with every sample, and each try they were taken from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// What one `sys/metrics` call adds.
    pub metrics_cost: u64,
    /// What one `sys/host-info` call adds.
    pub host_cost: u64,
    /// Each try's measured count for a `sys/metrics` call, in order (other clients'
    /// requests inside a try inflate it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics_tries: Vec<f64>,
    /// The same for a `sys/host-info` call (beyond the readings around it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_tries: Vec<f64>,
    /// When the calibration began and ended, ms since the Unix epoch.
    pub at_ms: [u64; 2],
}

impl ServerSamples {
    /// The earliest and latest sample of any node, ms since the Unix epoch.
    fn window(&self) -> Option<[u64; 2]> {
        let at = || {
            self.nodes
                .iter()
                .flat_map(|n| n.samples.iter().map(|s| s.at_ms))
        };
        Some([at().min()?, at().max()?])
    }

    /// The samples of several shards of one run, merged by node: each node's samples from
    /// every shard, in time order (the counters are the server's, so any two neighbours
    /// give an interval). None when no part has samples.
    pub fn merge<'a>(parts: impl IntoIterator<Item = &'a ServerSamples>) -> Option<ServerSamples> {
        let mut out: Option<ServerSamples> = None;
        for p in parts {
            let o = out.get_or_insert_with(|| ServerSamples {
                interval_s: p.interval_s,
                ..ServerSamples::default()
            });
            o.sampler_cpu_s += p.sampler_cpu_s;
            o.profile_requests += p.profile_requests;
            if let Some(w) = p.window() {
                o.shard_windows.push(w);
            }
            o.profiles.extend(p.profiles.iter().cloned());
            o.interval_s = o.interval_s.max(p.interval_s);
            for n in &p.nodes {
                match o.nodes.iter_mut().find(|m| m.node == n.node) {
                    Some(m) => {
                        // Several samplers' samples: no one calibration is theirs.
                        m.calibration = None;
                        m.samples.extend(n.samples.iter().cloned());
                        m.samples.sort_by_key(|s| s.at_ms);
                        m.pid = m.pid.or(n.pid);
                        for line in &n.missing {
                            if !m.missing.contains(line) {
                                m.missing.push(line.clone());
                            }
                        }
                    }
                    None => o.nodes.push(n.clone()),
                }
            }
        }
        out
    }
}

/// What a node did between two samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The interval's end, seconds since the run's load began.
    pub at_s: f64,
    pub duration_s: f64,
    /// CPU of the server's process, in cores (1.0 = one core busy): /proc with
    /// `--server-pid`, else the server's own `process_cpu_seconds_total`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_cores: Option<f64>,
    /// CPU the server's threads waited for while runnable, in cores (`--server-pid`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_wait_cores: Option<f64>,
    /// The cores the server may use: its process's allowed CPUs (`--server-pid`), else
    /// the host's CPUs (`sys/host-info`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// The CPU quota of the server's cgroup, in cores (`--server-pid`; a container's
    /// limit): the CPU it may use, below `cores` when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_cores: Option<f64>,
    /// Time the quota held the server's tasks back, seconds per second of the interval
    /// (its cgroup's throttled time), and the share of its periods throttled, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_s_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_pct: Option<f64>,
    /// vblast's own CPU, and what its threads waited for, in cores (first node only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cpu_cores: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_wait_cores: Option<f64>,
    /// The host's CPU in use, percent of all its cores (`sys/host-info`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_cpu_pct: Option<f64>,
    /// The server process's resident memory at the interval's end, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_mem_used_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goroutines: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leases: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<f64>,
    /// Requests the server handled (its `handle_request` and `handle_login_request`
    /// counts, less the sampler's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handled: Option<f64>,
    /// Mean times, milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check_token_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub barrier_get_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub barrier_put_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_get_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_put_ms: Option<f64>,
    /// Storage time (get, put, delete and list) per handled request, milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_ms_per_request: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit_violations: Option<f64>,
    /// Storage IO of the process (`/proc/PID/io`), bytes per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_bytes_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_bytes_per_s: Option<f64>,
    /// The server's threads waiting for the disk (state `D`) at the interval's end
    /// (`--server-pid`), and their time waiting for block IO, seconds per second, when the
    /// kernel counts it (`kernel.task_delayacct`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_blocked_threads: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blkio_s_per_s: Option<f64>,
    /// Integrated storage's figures over the interval (a raft node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raft: Option<RaftInterval>,
    /// On the leader, each follower's lag behind it at the interval's end, by peer id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub raft_followers: Vec<FollowerLag>,
}

/// A raft node between two samples: its mean commit and FSM apply times (ms) and how many
/// ran, the entries committed but not yet applied, its applied index and (on the leader)
/// the followers' lag behind it at the interval's end, the leader elections in it (new
/// terms), its BoltDB freelist, and its BoltDB files' sizes (`--server-pid`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RaftInterval {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commits: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsm_pending: Option<f64>,
    pub applied_index: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub followers_lag: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_changes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt_free_pages: Option<f64>,
    /// The FSM's file (`vault.db`) and the raft log's (`raft/raft.db`), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt_fsm_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt_log_bytes: Option<u64>,
}

/// The raft figures from sample `a` to sample `b`; None when `b` has none.
fn raft_interval(a: &Sample, b: &Sample) -> Option<RaftInterval> {
    let rb = b.raft.as_deref()?;
    let ra = a.raft.as_deref();
    let commit = timer_delta(ra.and_then(|r| r.commit), rb.commit);
    let bolt = b.process.as_ref().and_then(|p| p.bolt);
    Some(RaftInterval {
        commit_ms: mean(commit),
        commits: commit.map(|t| t.count),
        apply_ms: mean(timer_delta(ra.and_then(|r| r.apply), rb.apply)),
        fsm_pending: rb.fsm_pending,
        applied_index: rb.applied_index,
        followers_lag: rb.followers_lag,
        leader_changes: diff(ra.and_then(|r| r.term), rb.term),
        bolt_free_pages: rb.bolt_free_pages,
        bolt_fsm_bytes: bolt.and_then(|b| b.fsm_bytes),
        bolt_log_bytes: bolt.and_then(|b| b.log_bytes),
    })
}

/// A timer's count and time between two samples.
pub fn timer_delta(a: Option<TimerTotals>, b: Option<TimerTotals>) -> Option<TimerTotals> {
    let (a, b) = (a?, b?);
    // A restarted server's counters start again: that interval says nothing.
    (b.count >= a.count).then(|| TimerTotals {
        count: b.count - a.count,
        sum_ms: (b.sum_ms - a.sum_ms).max(0.0),
    })
}

/// Mean milliseconds of a timer's delta, when it ran.
fn mean(t: Option<TimerTotals>) -> Option<f64> {
    t.filter(|t| t.count > 0.0).map(|t| t.sum_ms / t.count)
}

fn diff(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(b? - a?).filter(|d| *d >= 0.0)
}

/// The interval from sample `a` to sample `b`, with `start_ms` the run's start.
pub fn interval(a: &Sample, b: &Sample, start_ms: u64) -> Interval {
    let dt = (b.at_ms.saturating_sub(a.at_ms)) as f64 / 1000.0;
    let per_s = |d: Option<f64>| d.filter(|_| dt > 0.0).map(|d| d / dt);
    let process = match (a.process.as_deref(), b.process.as_deref()) {
        (Some(pa), Some(pb)) => Some((pa, pb)),
        _ => None,
    };
    let cpu_cores = match process {
        Some((pa, pb)) => per_s(diff(Some(pa.cpu_s), Some(pb.cpu_s))),
        None => per_s(diff(a.server_cpu_s, b.server_cpu_s)),
    };
    let wait =
        |pa: Option<&Process>, pb: Option<&Process>| per_s(diff(pa?.cpu_wait_s, pb?.cpu_wait_s));
    let host_cpu_pct = match (a.host_cpu, b.host_cpu) {
        (Some(ha), Some(hb)) if hb.total_s > ha.total_s => {
            Some(100.0 * (hb.busy_s - ha.busy_s).max(0.0) / (hb.total_s - ha.total_s))
        }
        _ => None,
    };
    // Logins with the rest: the server times them apart (`Sample::handled`).
    let handled = timer_delta(a.handled(), b.handled());
    let storage = [
        timer_delta(a.storage_get, b.storage_get),
        timer_delta(a.storage_put, b.storage_put),
        timer_delta(a.storage_delete, b.storage_delete),
        timer_delta(a.storage_list, b.storage_list),
    ];
    let storage_sum = storage.iter().flatten().map(|t| t.sum_ms).sum::<f64>();
    let handled_n = handled.map(|t| (t.count - b.own_requests as f64).max(0.0));
    Interval {
        at_s: b.at_ms.saturating_sub(start_ms) as f64 / 1000.0,
        duration_s: dt,
        cpu_cores,
        cpu_wait_cores: wait(a.process.as_deref(), b.process.as_deref()),
        cores: b
            .process
            .as_ref()
            .and_then(|p| p.cpus_allowed)
            .or(b.host_cpu.map(|h| h.cpus).filter(|c| *c > 0)),
        quota_cores: b
            .process
            .as_ref()
            .and_then(|p| p.cgroup)
            .and_then(|c| c.quota_cores),
        throttled_s_per_s: process.and_then(|(pa, pb)| {
            per_s(diff(
                Some(pa.cgroup?.throttled_s),
                Some(pb.cgroup?.throttled_s),
            ))
        }),
        throttled_pct: process.and_then(|(pa, pb)| {
            let (ca, cb) = (pa.cgroup?, pb.cgroup?);
            let periods = cb.periods.checked_sub(ca.periods).filter(|p| *p > 0)?;
            let throttled = cb.throttled_periods.checked_sub(ca.throttled_periods)?;
            Some(100.0 * throttled as f64 / periods as f64)
        }),
        client_cpu_cores: match (a.client.as_deref(), b.client.as_deref()) {
            (Some(ca), Some(cb)) => per_s(diff(Some(ca.cpu_s), Some(cb.cpu_s))),
            _ => None,
        },
        client_wait_cores: wait(a.client.as_deref(), b.client.as_deref()),
        host_cpu_pct,
        rss_bytes: process
            .map(|(_, pb)| pb.rss_bytes as f64)
            .or(b.server_rss_bytes),
        host_mem_used_bytes: b.host_mem_used_bytes,
        in_flight: b.in_flight,
        goroutines: b.goroutines,
        leases: b.leases,
        tokens: b.tokens,
        handled: handled_n,
        handle_ms: mean(handled),
        check_token_ms: mean(timer_delta(a.check_token, b.check_token)),
        barrier_get_ms: mean(timer_delta(a.barrier_get, b.barrier_get)),
        barrier_put_ms: mean(timer_delta(a.barrier_put, b.barrier_put)),
        storage_get_ms: mean(storage[0]),
        storage_put_ms: mean(storage[1]),
        storage_ms_per_request: handled
            .filter(|h| h.count > 0.0 && storage.iter().any(Option::is_some))
            .map(|h| storage_sum / h.count),
        rate_limit_violations: diff(a.rate_limit_violations, b.rate_limit_violations),
        read_bytes_per_s: process.and_then(|(pa, pb)| {
            per_s(diff(
                pa.read_bytes.map(|v| v as f64),
                pb.read_bytes.map(|v| v as f64),
            ))
        }),
        write_bytes_per_s: process.and_then(|(pa, pb)| {
            per_s(diff(
                pa.write_bytes.map(|v| v as f64),
                pb.write_bytes.map(|v| v as f64),
            ))
        }),
        io_blocked_threads: process.and_then(|(_, pb)| pb.io_blocked_threads),
        blkio_s_per_s: process.and_then(|(pa, pb)| per_s(diff(pa.blkio_s, pb.blkio_s))),
        raft: raft_interval(a, b),
        raft_followers: b.raft_followers.clone(),
    }
}

impl NodeSamples {
    /// The intervals between neighbouring samples.
    pub fn intervals(&self, start_ms: u64) -> Vec<Interval> {
        self.samples
            .windows(2)
            .map(|w| interval(&w[0], &w[1], start_ms))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: u64, count: f64, sum_ms: f64, cpu_s: f64) -> Sample {
        Sample {
            at_ms,
            handle_request: Some(TimerTotals { count, sum_ms }),
            server_cpu_s: Some(cpu_s),
            ..Sample::default()
        }
    }

    #[test]
    fn an_interval_comes_from_the_counters_deltas() {
        let i = interval(
            &sample(1000, 10.0, 5.0, 1.0),
            &sample(3000, 110.0, 55.0, 2.0),
            0,
        );
        assert_eq!(i.handled, Some(100.0));
        assert_eq!(i.handle_ms, Some(0.5));
        assert_eq!(i.cpu_cores, Some(0.5));
        assert_eq!(i.at_s, 3.0);
        // A restarted server: no interval figures.
        let r = interval(
            &sample(1000, 10.0, 5.0, 1.0),
            &sample(2000, 2.0, 1.0, 0.1),
            0,
        );
        assert_eq!((r.handled, r.cpu_cores), (None, None));
    }

    #[test]
    fn shards_samples_merge_by_node_in_time_order() {
        let part = |at: u64, node: &str| ServerSamples {
            interval_s: 1.0,
            sampler_cpu_s: 0.002,
            nodes: vec![NodeSamples {
                node: node.into(),
                samples: vec![sample(at, 0.0, 0.0, 0.0)],
                missing: vec!["sys/host-info: HTTP 403".into()],
                ..NodeSamples::default()
            }],
            ..ServerSamples::default()
        };
        let m = ServerSamples::merge([&part(2000, "a"), &part(1000, "a"), &part(5, "b")])
            .expect("merged");
        assert_eq!(m.nodes.len(), 2);
        let at: Vec<u64> = m.nodes[0].samples.iter().map(|s| s.at_ms).collect();
        assert_eq!(at, [1000, 2000]);
        assert_eq!(m.nodes[0].missing.len(), 1);
        assert!(
            (m.sampler_cpu_s - 0.006).abs() < 1e-12,
            "each shard's sampling cost"
        );
    }
}
