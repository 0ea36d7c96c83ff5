//! What one look at one node gives: the server's counters and gauges as they stood at that
//! instant (cumulative counters, never deltas), so that samples taken by several shards of
//! one run merge by sorting, and every interval's figures follow from two neighbours.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// A cumulative timer of the server's telemetry: how many times it ran and their total
/// time, milliseconds (`vault_core_handle_request_count` and `_sum`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimerTotals {
    pub count: f64,
    pub sum_ms: f64,
}

/// The host's CPU times from `sys/host-info`, summed over its CPUs, seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCpu {
    /// Time not idle (user, system, nice, irq, softirq, steal; iowait counts as idle).
    pub busy_s: f64,
    /// All of it.
    pub total_s: f64,
    pub cpus: u32,
}

/// The server's process from /proc (`--server-pid`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Process {
    /// User and system CPU time, seconds.
    pub cpu_s: f64,
    pub rss_bytes: u64,
    /// Bytes read from and written to storage (`/proc/PID/io`), when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes: Option<u64>,
    /// The CPUs the process may run on (`Cpus_allowed_list`; `taskset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_allowed: Option<u32>,
    /// Time its threads waited for a CPU while runnable (`/proc/PID/task/*/schedstat`),
    /// seconds: CPU the process wanted and did not get.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait_s: Option<f64>,
    /// Its cgroup's CPU limit and throttling (`sources::cgroup_cpu`), when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<CgroupCpu>,
    /// Its threads in uninterruptible sleep at this instant (state `D` in
    /// `/proc/PID/task/*/stat`: waiting for the disk, mostly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_blocked_threads: Option<u32>,
    /// Time its threads waited for block IO, seconds, cumulative (`delayacct_blkio_ticks`;
    /// None when the kernel does not count it, `kernel.task_delayacct` off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blkio_s: Option<f64>,
    /// Its BoltDB files' sizes, bytes (`sources::bolt_files`), when it holds them open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt: Option<BoltFiles>,
}

/// The sizes of a raft node's two BoltDB files, bytes: the FSM's (`vault.db` in the data
/// directory) and the raft log's (`raft/raft.db`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BoltFiles {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsm_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<u64>,
}

impl BoltFiles {
    /// Both files together.
    pub fn total(&self) -> Option<u64> {
        match (self.fsm_bytes, self.log_bytes) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        }
    }
}

/// The CPU limit of a process's cgroup (a container's limit, `systemd-run -p CPUQuota`,
/// Kubernetes' `resources.limits.cpu`), and how much it has held the process back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupCpu {
    /// The quota in cores (quota / period of the tightest limit on the way to the root):
    /// None when no cgroup on the way has one (`max`, or `-1` in cgroup v1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_cores: Option<f64>,
    /// Periods in which the limiting cgroup ran out of quota, cumulative (`nr_throttled`).
    pub throttled_periods: u64,
    /// Periods of the limiting cgroup with runnable tasks, cumulative (`nr_periods`).
    pub periods: u64,
    /// Time its tasks were held back by the quota, seconds, cumulative (`throttled_usec`,
    /// or `throttled_time` in cgroup v1).
    pub throttled_s: f64,
}

impl Sample {
    /// Every request the server handled, logins with the rest: `handle_request` and
    /// `handle_login_request` summed (a server that has handled no login yet lists no
    /// login timer: none).
    pub fn handled(&self) -> Option<TimerTotals> {
        let h = self.handle_request?;
        let l = self.handle_login_request.unwrap_or_default();
        Some(TimerTotals {
            count: h.count + l.count,
            sum_ms: h.sum_ms + l.sum_ms,
        })
    }
}

/// One node at one instant. Every figure is optional: a source that did not answer
/// leaves its figures out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Wall-clock time of the sample, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Requests the sampler itself had sent that the server counts as handled
    /// (`sys/host-info`; `sys/metrics` is not counted), cumulative.
    #[serde(default)]
    pub own_requests: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goroutines: Option<f64>,
    /// Go heap in use (`vault.runtime.alloc_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leases: Option<f64>,
    /// Service tokens (`vault.token.count`, when the server has counted them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<f64>,
    /// Requests refused by a rate-limit quota, cumulative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_violations: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle_request: Option<TimerTotals>,
    /// Logins (`vault_core_handle_login_request`): the server times them apart from
    /// `handle_request`, and an `approle-login` request is counted there only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle_login_request: Option<TimerTotals>,
    /// Requests this node sent on to the active node (a standby forwarding a write,
    /// `vault_ha_rpc_client_forward`); 0 when the telemetry answered without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded: Option<TimerTotals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_token: Option<TimerTotals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier_get: Option<TimerTotals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier_put: Option<TimerTotals>,
    /// The storage backend's name (`raft_storage`, `postgres`, `file`...), when it reports
    /// (borrowed from the sampler's list of backends: a sample allocates nothing for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Cow<'static, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_get: Option<TimerTotals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_put: Option<TimerTotals>,
    /// The backend's deletes and lists (OpenBao's PostgreSQL backend writes a KV entry
    /// inside a transaction as deletes, not as `put`s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_delete: Option<TimerTotals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_list: Option<TimerTotals>,
    /// The server process's CPU seconds and resident memory as its telemetry says them
    /// (`process_cpu_seconds_total`, `process_resident_memory_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rss_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<HostCpu>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_mem_used_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_mem_total_bytes: Option<u64>,
    /// Integrated storage's own figures (a raft node's telemetry; boxed: most nodes have
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raft: Option<Box<Raft>>,
    /// On a raft leader, each follower's lag: its applied index behind the leader's, from
    /// the leader's own per-peer gauge (`vault.raft_storage.follower.applied_index_delta`,
    /// label `peer_id`), in peer order. Empty elsewhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub raft_followers: Vec<FollowerLag>,
    /// A raft node's own peer id (the `peer_id` label of its applied index), which names
    /// it among the leader's followers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raft_peer_id: Option<String>,
    /// Boxed, as `client`: most samples have neither, and a long run keeps every sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<Box<Process>>,
    /// vblast's own process at the same instant (the first node's samples only), for
    /// whether the client itself gave out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Box<Process>>,
}

/// One follower of a raft leader and its lag: the entries of the leader's applied index it
/// has not applied (`vault.raft_storage.follower.applied_index_delta` for its `peer_id`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FollowerLag {
    pub peer_id: String,
    pub lag: f64,
}

/// A raft node's figures at one instant (`sys/metrics`): its commit and FSM apply timers
/// (cumulative), the entries committed but not yet applied (`fsm_pending`), its applied
/// index and term (a new term is a leader election), on the leader the followers' lag
/// behind its applied index (summed over them), and its BoltDB freelist.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Raft {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<TimerTotals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<TimerTotals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsm_pending: Option<f64>,
    pub applied_index: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub term: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub followers_lag: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt_free_pages: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt_freelist_bytes: Option<f64>,
}
