//! What the server's samples say about a run, beside the client's figures: per node the
//! peak and mean CPU, memory, peak in-flight requests, the server's mean time per request
//! and its biggest component; over all nodes the server's handled count against the
//! client's answered count (the accounting cross-check). And the report's "Server" lines.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::sample::{Sample, TimerTotals};
use super::timeline::{Interval, NodeSamples, ServerSamples, timer_delta};

/// How closely the client's window start is known after a warm-up: its engine's clock
/// starts a little after the step's recorded start (threads spawned, connections opened).
const START_KNOWN_MS: u64 = 50;

/// What the client measured over its window, for the comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientSide {
    /// The measured window (after warm-up), milliseconds since the Unix epoch.
    pub start_ms: u64,
    pub end_ms: u64,
    /// Whether a warm-up came before the window (its requests are not the client's).
    pub warmup: bool,
    /// Requests the server answered, as the client counted them (failures to connect,
    /// read or write and timeouts left out).
    pub answered: u64,
    /// The client's mean latency, milliseconds.
    pub mean_ms: f64,
    /// The client's connections: at most that many requests are in flight at an edge.
    pub connections: u64,
    /// The run was stopped (a signal): the requests in flight then (one per connection at
    /// most) reached the server, and the client counted no answer to them.
    pub interrupted: bool,
    /// This is one shard's own report, of this many (0 or 1: not a shard): the server
    /// counts every shard's requests, the client this shard's only.
    pub shards: u64,
}

/// How long the shards' rendezvous waits between two looks at the sync mount
/// (`session::fixtures::rendezvous`, which takes it from here): a shard outside its own
/// sampling window asks the server at most once per this, while the others run.
pub const RENDEZVOUS_POLL_MS: u64 = 250;

/// What a shard does on the server outside its own load, beside its polls: its marker
/// written (and once retried), its session's own setup and cleanup (a token made and
/// revoked, a login, a check): at most this many requests at each edge of its window.
const SHARD_EDGE_REQUESTS: u64 = 6;

/// The server side of a run (the JSON report's `server`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
    pub nodes: Vec<ServerNodeSummary>,
    /// Requests the nodes handled in the client's window, when their telemetry counts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handled: Option<u64>,
    pub client_answered: u64,
    /// handled - client_answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<i64>,
    /// How much of a difference the sampling windows explain: with a warm-up, the requests
    /// the server handled between the edge sample and the window's start (at the rate of
    /// the interval that straddles it) and those in flight at the start (one per
    /// connection); 0 without warm-up (the first sample came before the load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explained: Option<u64>,
    /// What `explained` is made of, each part in words with its count ("sampling windows
    /// 32", "in flight at the stop 8", "profiles asked 3", "the shards' rendezvous 5").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explained_by: Vec<String>,
    /// The difference is beyond what the windows explain: requests lost, or a proxy.
    pub beyond: bool,
    /// One shard's own report (this many shards): its server count holds every shard's
    /// requests, so it is not compared; the merged report compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_of: Option<u64>,
    /// The server's mean time per request (handle_request, all nodes), milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_ms: Option<f64>,
    pub client_ms: f64,
    /// client_ms - server_ms: the time outside Vault's handler (network, queueing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_ms: Option<f64>,
    /// The biggest server-side component of a request: "token check", "barrier", "storage".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub biggest: Option<String>,
    /// What the sampling cost vblast: the sampler's CPU seconds (its thread's, and its
    /// calls before and after the load), summed over shards, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_cpu_s: Option<f64>,
}

/// One node's figures over the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerNodeSummary {
    pub node: String,
    pub samples: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_cores_peak: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_cores_mean: Option<f64>,
    /// CPU the server waited for, in cores, and the cores it may use (see `Interval`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_wait_cores_mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// Where the server's CPU limit was looked for: its cgroup read (`--server-pid`), not
    /// readable, or not visible from here (no process to read: a remote node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_limit_seen: Option<LimitSeen>,
    /// Its cgroup's CPU quota, in cores, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_cores: Option<f64>,
    /// The CPU it may use, in cores: the quota, or its cores when lower (or no quota).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_limit_cores: Option<f64>,
    /// Its CPU as a share of that limit, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_limit_pct_peak: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_limit_pct_mean: Option<f64>,
    /// Time the quota held it back over the window, seconds, and per second (the mean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_s_per_s_mean: Option<f64>,
    /// The share of its cgroup's periods throttled, percent (the intervals' mean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_pct_mean: Option<f64>,
    /// vblast's own CPU and CPU wait, in cores (the first node's samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cpu_cores_mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_wait_cores_mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_mean: Option<f64>,
    /// Its threads waiting for the disk (state `D`), the samples' mean, and their time
    /// waiting for block IO, seconds per second, when the kernel counts it (`--server-pid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_blocked_threads_mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blkio_s_per_s_mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_cpu_pct_peak: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_cpu_pct_mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_bytes_peak: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_mem_used_bytes_peak: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_peak: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goroutines_peak: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leases_peak: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_peak: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit_violations: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handled: Option<u64>,
    /// Of those, sent on to the active node (a standby forwarding writes), from the
    /// server's own `vault.ha.rpc.client.forward`; and the mean time of a forward, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_ms: Option<f64>,
    /// Mean times over the window, milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check_token_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub barrier_get_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub barrier_put_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_get_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_put_ms: Option<f64>,
    /// Per handled request, milliseconds: token checks, barrier and storage time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ms_per_request: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub barrier_ms_per_request: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_ms_per_request: Option<f64>,
    /// Integrated storage's figures over the window (a raft node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raft: Option<RaftSummary>,
    /// The sources that did not answer, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// The timeline: one interval per pair of neighbouring samples.
    pub intervals: Vec<Interval>,
}

/// A raft node over the window: mean commit and FSM apply times (ms), the peak of the
/// entries waiting to be applied, the last applied index, the peak of the followers' lag
/// (on the leader), the leader elections (new terms), the BoltDB freelist at the end, and
/// the data written per second (`/proc/PID/io`, with `--server-pid`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RaftSummary {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsm_pending_peak: Option<f64>,
    pub applied_index: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub followers_lag_peak: Option<f64>,
    /// On the leader, each follower's peak lag over the window, by peer id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub followers: Vec<super::sample::FollowerLag>,
    /// The node's own peer id (as the leader's `followers` name it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_changes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt_free_pages: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt_freelist_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes_per_s_peak: Option<f64>,
    /// The data directory's writes over the window, bytes per second (the process's,
    /// `/proc/PID/io`: a raft node writes little else).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes_per_s_mean: Option<f64>,
    /// Its BoltDB files at the window's end and their growth over it, bytes: the FSM's
    /// (`vault.db`) and the raft log's (`raft/raft.db`), `--server-pid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt_fsm_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt_log_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt_growth_bytes: Option<i64>,
}

fn raft_summary(w: &[Sample], intervals: &[Interval]) -> Option<RaftSummary> {
    let rafts: Vec<&super::sample::Raft> = w.iter().filter_map(|s| s.raft.as_deref()).collect();
    let (first, last) = (rafts.first()?, rafts.last()?);
    let peak_of = |f: fn(&super::sample::Raft) -> Option<f64>| peak(rafts.iter().map(|r| f(r)));
    let bolts = || w.iter().filter_map(|s| s.process.as_ref()?.bolt);
    let (bolt_first, bolt_last) = (bolts().next(), bolts().next_back());
    Some(RaftSummary {
        commit_ms: mean_of(timer_delta(first.commit, last.commit)),
        apply_ms: mean_of(timer_delta(first.apply, last.apply)),
        fsm_pending_peak: peak_of(|r| r.fsm_pending),
        applied_index: last.applied_index,
        followers_lag_peak: peak_of(|r| r.followers_lag),
        followers: follower_peaks(w),
        peer_id: w.iter().rev().find_map(|s| s.raft_peer_id.clone()),
        leader_changes: match (first.term, last.term) {
            (Some(a), Some(b)) => Some((b - a).max(0.0) as u64),
            _ => None,
        },
        bolt_free_pages: last.bolt_free_pages,
        bolt_freelist_bytes: last.bolt_freelist_bytes,
        write_bytes_per_s_peak: peak(intervals.iter().map(|i| i.write_bytes_per_s)),
        write_bytes_per_s_mean: average(intervals.iter().map(|i| i.write_bytes_per_s)),
        bolt_fsm_bytes: bolt_last.and_then(|b| b.fsm_bytes),
        bolt_log_bytes: bolt_last.and_then(|b| b.log_bytes),
        bolt_growth_bytes: match (
            bolt_first.and_then(|b| b.total()),
            bolt_last.and_then(|b| b.total()),
        ) {
            (Some(a), Some(b)) => Some(b as i64 - a as i64),
            _ => None,
        },
    })
}

/// Each follower's peak lag over the samples `w`, in peer order.
fn follower_peaks(w: &[Sample]) -> Vec<super::sample::FollowerLag> {
    let mut peaks: Vec<super::sample::FollowerLag> = Vec::new();
    for f in w.iter().flat_map(|s| &s.raft_followers) {
        match peaks.iter_mut().find(|p| p.peer_id == f.peer_id) {
            Some(p) => p.lag = p.lag.max(f.lag),
            None => peaks.push(f.clone()),
        }
    }
    peaks.sort_by(|a, b| a.peer_id.cmp(&b.peer_id));
    peaks
}

/// The raft line of a node, after "raft": None for a node without raft figures.
pub fn raft_line(n: &ServerNodeSummary) -> Option<String> {
    let r = n.raft.as_ref()?;
    let num = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
    Some(format!(
        "{}commit {}   apply {}   fsm_pending peak {}   applied index {:.0}   followers' lag peak {}{}   leader changes {}   BoltDB free pages {} ({})   BoltDB files {}   writes {}",
        peer_words(r),
        ms(r.commit_ms),
        ms(r.apply_ms),
        num(r.fsm_pending_peak),
        r.applied_index,
        num(r.followers_lag_peak),
        follower_words(r),
        r.leader_changes.map_or("-".into(), |c| c.to_string()),
        num(r.bolt_free_pages),
        mib(r.bolt_freelist_bytes),
        bolt_words(r),
        r.write_bytes_per_s_peak
            .map_or("- (--server-pid reads them)".into(), |b| format!(
                "peak {}/s",
                mib(Some(b))
            )),
    ))
}

/// Each follower's peak lag in words, after the summed one: " (node1 3, node2 0)", or
/// nothing on a node that is not the leader.
fn follower_words(r: &RaftSummary) -> String {
    if r.followers.is_empty() {
        return String::new();
    }
    let each: Vec<String> = r
        .followers
        .iter()
        .map(|f| format!("{} {:.0}", f.peer_id, f.lag))
        .collect();
    format!(" ({})", each.join(", "))
}

/// The node's own peer id in words, as the leader's followers name it: "peer node1   ".
fn peer_words(r: &RaftSummary) -> String {
    r.peer_id
        .as_ref()
        .map_or(String::new(), |p| format!("peer {p}   "))
}

/// The BoltDB files' sizes in words: "vault.db 1.2 MiB + raft.db 3.4 MiB (+0.5 MiB)".
fn bolt_words(r: &RaftSummary) -> String {
    if r.bolt_fsm_bytes.is_none() && r.bolt_log_bytes.is_none() {
        return "- (--server-pid reads them)".into();
    }
    let size = |b: Option<u64>| mib(b.map(|b| b as f64));
    format!(
        "vault.db {} + raft.db {}{}",
        size(r.bolt_fsm_bytes),
        size(r.bolt_log_bytes),
        r.bolt_growth_bytes.map_or(String::new(), |g| format!(
            " ({}{} in the window)",
            if g < 0 { "-" } else { "+" },
            mib(Some(g.unsigned_abs() as f64))
        ))
    )
}

/// Where a node's CPU limit (its cgroup's quota) was looked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitSeen {
    /// Its cgroup was read (`--server-pid`): a quota, or none.
    Read,
    /// `--server-pid` given, its cgroup not readable here.
    Unreadable,
    /// No process read: a quota cannot be seen from here (a remote node, or no
    /// `--server-pid`).
    NotVisible,
}

/// The node's CPU limit and what it used of it, over `intervals` (see `LimitSeen`).
struct CpuLimit {
    seen: LimitSeen,
    quota: Option<f64>,
    limit: Option<f64>,
    pct_peak: Option<f64>,
    pct_mean: Option<f64>,
    throttled_s: Option<f64>,
    throttled_per_s: Option<f64>,
    throttled_pct: Option<f64>,
}

fn cpu_limit(n: &NodeSamples, w: &[Sample], intervals: &[Interval]) -> CpuLimit {
    let read = w
        .iter()
        .any(|s| s.process.as_ref().is_some_and(|p| p.cgroup.is_some()));
    let seen = match (read, n.pid) {
        (true, _) => LimitSeen::Read,
        (false, Some(_)) => LimitSeen::Unreadable,
        (false, None) => LimitSeen::NotVisible,
    };
    let quota = intervals
        .iter()
        .filter_map(|i| i.quota_cores)
        .reduce(f64::min);
    let cores = intervals
        .iter()
        .filter_map(|i| i.cores)
        .max()
        .map(f64::from);
    let limit = match (quota, cores) {
        (Some(q), Some(c)) => Some(q.min(c)),
        (q, c) => q.or(c),
    };
    let pct = |i: &Interval| Some(100.0 * i.cpu_cores? / limit.filter(|l| *l > 0.0)?);
    let throttled: Vec<(f64, f64)> = intervals
        .iter()
        .filter_map(|i| Some((i.throttled_s_per_s?, i.duration_s)))
        .collect();
    CpuLimit {
        seen,
        quota,
        limit,
        pct_peak: peak(intervals.iter().map(pct)),
        pct_mean: average(intervals.iter().map(pct)),
        throttled_s: (!throttled.is_empty()).then(|| throttled.iter().map(|(r, d)| r * d).sum()),
        throttled_per_s: average(throttled.iter().map(|(r, _)| Some(*r))),
        throttled_pct: average(intervals.iter().map(|i| i.throttled_pct)),
    }
}

/// The window's edge samples of a node: the first (taken before the load) or, after a
/// warm-up, the one nearest the window's start; and the last (taken after the load).
fn edges(n: &NodeSamples, c: &ClientSide) -> Option<(usize, usize)> {
    let last = n.samples.len().checked_sub(1)?;
    let first = if c.warmup {
        (0..last).min_by_key(|&i| n.samples[i].at_ms.abs_diff(c.start_ms))?
    } else {
        0
    };
    (first < last).then_some((first, last))
}

fn sum_timer(samples: &[Sample], f: fn(&Sample) -> Option<TimerTotals>) -> Option<TimerTotals> {
    timer_delta(f(samples.first()?), f(samples.last()?))
}

fn mean_of(t: Option<TimerTotals>) -> Option<f64> {
    t.filter(|t| t.count > 0.0).map(|t| t.sum_ms / t.count)
}

fn peak(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    v.flatten()
        .fold(None, |m, x| Some(m.map_or(x, |m: f64| m.max(x))))
}

fn average(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let (n, sum) = v.flatten().fold((0, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| sum / n as f64)
}

/// What the node handled over its window, with how much of it is uncertain.
struct Counted {
    handled: u64,
    explained: u64,
}

fn counted(n: &NodeSamples, c: &ClientSide) -> Option<Counted> {
    let (first, last) = edges(n, c)?;
    let w = &n.samples[first..=last];
    let s = &n.samples;
    let total = sum_timer(w, Sample::handled)?;
    let own: u64 = w[1..].iter().map(|s| s.own_requests).sum();
    let handled = (total.count as u64).saturating_sub(own);
    // Without warm-up the first sample came before the load: nothing is uncertain.
    // After a warm-up, the edge sample is off the window's start by a gap: the server
    // handled (or not yet) the requests of that gap, at the rate of the interval it is in,
    // and up to one per connection was in flight at the start.
    let explained = if c.warmup {
        let (a, b) = if s[first].at_ms <= c.start_ms {
            (first, first + 1)
        } else {
            (first.saturating_sub(1), first)
        };
        let span = s[b].at_ms.saturating_sub(s[a].at_ms).max(1) as f64;
        let gap = (s[first].at_ms.abs_diff(c.start_ms) + START_KNOWN_MS) as f64;
        let rate = timer_delta(s[a].handled(), s[b].handled()).map_or(0.0, |t| t.count);
        (rate * gap / span).ceil() as u64 + c.connections
    } else {
        0
    };
    Some(Counted { handled, explained })
}

fn node_summary(n: &NodeSamples, c: &ClientSide, start_ms: u64) -> ServerNodeSummary {
    let all = n.intervals(start_ms);
    let (w, intervals): (&[Sample], Vec<Interval>) = match edges(n, c) {
        Some((first, last)) => (
            &n.samples[first..=last],
            all.get(first..last)
                .map(<[Interval]>::to_vec)
                .unwrap_or_default(),
        ),
        None => (&[], Vec::new()),
    };
    let handled = sum_timer(w, Sample::handled);
    let per_request = |ts: &[Option<TimerTotals>]| {
        let h = handled.filter(|h| h.count > 0.0)?;
        let parts: Vec<TimerTotals> = ts.iter().flatten().copied().collect();
        (!parts.is_empty()).then(|| parts.iter().map(|t| t.sum_ms).sum::<f64>() / h.count)
    };
    let token = sum_timer(w, |s| s.check_token);
    let barrier = [
        sum_timer(w, |s| s.barrier_get),
        sum_timer(w, |s| s.barrier_put),
    ];
    let storage = [
        sum_timer(w, |s| s.storage_get),
        sum_timer(w, |s| s.storage_put),
        sum_timer(w, |s| s.storage_delete),
        sum_timer(w, |s| s.storage_list),
    ];
    let it = || intervals.iter();
    let limit = cpu_limit(n, w, &intervals);
    ServerNodeSummary {
        cpu_limit_seen: Some(limit.seen),
        quota_cores: limit.quota,
        cpu_limit_cores: limit.limit,
        cpu_limit_pct_peak: limit.pct_peak,
        cpu_limit_pct_mean: limit.pct_mean,
        throttled_s: limit.throttled_s,
        throttled_s_per_s_mean: limit.throttled_per_s,
        throttled_pct_mean: limit.throttled_pct,
        node: n.node.clone(),
        samples: n.samples.len(),
        cpu_cores_peak: peak(it().map(|i| i.cpu_cores)),
        cpu_cores_mean: average(it().map(|i| i.cpu_cores)),
        cpu_wait_cores_mean: average(it().map(|i| i.cpu_wait_cores)),
        cores: it().filter_map(|i| i.cores).max(),
        client_cpu_cores_mean: average(it().map(|i| i.client_cpu_cores)),
        client_wait_cores_mean: average(it().map(|i| i.client_wait_cores)),
        in_flight_mean: average(it().map(|i| i.in_flight)),
        io_blocked_threads_mean: average(it().map(|i| i.io_blocked_threads.map(f64::from))),
        blkio_s_per_s_mean: average(it().map(|i| i.blkio_s_per_s)),
        host_cpu_pct_peak: peak(it().map(|i| i.host_cpu_pct)),
        host_cpu_pct_mean: average(it().map(|i| i.host_cpu_pct)),
        rss_bytes_peak: peak(it().map(|i| i.rss_bytes)),
        host_mem_used_bytes_peak: it().filter_map(|i| i.host_mem_used_bytes).max(),
        in_flight_peak: peak(it().map(|i| i.in_flight)),
        goroutines_peak: peak(it().map(|i| i.goroutines)),
        leases_peak: peak(it().map(|i| i.leases)),
        tokens_peak: peak(it().map(|i| i.tokens)),
        rate_limit_violations: it()
            .filter_map(|i| i.rate_limit_violations)
            .reduce(|a, b| a + b),
        handled: counted(n, c).map(|k| k.handled),
        forwarded: sum_timer(w, |s| s.forwarded).map(|t| t.count as u64),
        forward_ms: mean_of(sum_timer(w, |s| s.forwarded)),
        handle_ms: mean_of(handled),
        check_token_ms: mean_of(token),
        barrier_get_ms: mean_of(barrier[0]),
        barrier_put_ms: mean_of(barrier[1]),
        storage: w
            .iter()
            .rev()
            .find_map(|s| s.storage.as_deref().map(String::from)),
        storage_get_ms: mean_of(storage[0]),
        storage_put_ms: mean_of(storage[1]),
        token_ms_per_request: per_request(&[token]),
        barrier_ms_per_request: per_request(&barrier),
        storage_ms_per_request: per_request(&storage),
        missing: n.missing.clone(),
        raft: raft_summary(w, &intervals),
        intervals,
    }
}

/// The biggest component of a request's server time: token checks, or the barrier (its
/// storage, when storage is most of it).
fn biggest(n: &ServerNodeSummary) -> Option<String> {
    let token = n.token_ms_per_request.unwrap_or(0.0);
    let barrier = n.barrier_ms_per_request.unwrap_or(0.0);
    let storage = n.storage_ms_per_request.unwrap_or(0.0);
    if token <= 0.0 && barrier <= 0.0 {
        return None;
    }
    Some(if token >= barrier {
        "token check".into()
    } else if storage * 2.0 >= barrier {
        "storage".into()
    } else {
        "barrier".into()
    })
}

impl ServerSamples {
    /// The server side of a run beside the client's figures; `start_ms` is when the run's
    /// load began (the timeline's zero).
    pub fn summary(&self, c: &ClientSide, start_ms: u64) -> ServerSummary {
        let nodes: Vec<ServerNodeSummary> = self
            .nodes
            .iter()
            .map(|n| node_summary(n, c, start_ms))
            .collect();
        let counts: Vec<Counted> = self.nodes.iter().filter_map(|n| counted(n, c)).collect();
        // A request a standby forwarded is counted by it and again by the active node.
        let forwarded: u64 = nodes.iter().filter_map(|n| n.forwarded).sum();
        let handled = (!counts.is_empty()).then(|| {
            counts
                .iter()
                .map(|k| k.handled)
                .sum::<u64>()
                .saturating_sub(forwarded)
        });
        let parts = handled.map_or_else(Vec::new, |_| self.explained_parts(&counts, c));
        let explained = handled.map(|_| parts.iter().map(|(_, n)| n).sum::<u64>());
        let explained_by = parts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(what, n)| format!("{what} {n}"))
            .collect();
        let difference = handled.map(|h| h as i64 - c.answered as i64);
        // One shard's own report: the server counted every shard's requests.
        let shard_of = (c.shards > 1).then_some(c.shards);
        // Mean server time over all nodes, weighted by what each handled.
        let (n, sum) = nodes
            .iter()
            .filter_map(|s| Some((s.handled? as f64, s.handle_ms?)))
            .fold((0.0, 0.0), |(n, sum), (h, ms)| (n + h, sum + h * ms));
        let server_ms = (n > 0.0).then(|| sum / n);
        let busiest = nodes
            .iter()
            .max_by(|a, b| a.handled.unwrap_or(0).cmp(&b.handled.unwrap_or(0)));
        ServerSummary {
            handled,
            client_answered: c.answered,
            difference,
            explained,
            explained_by,
            beyond: shard_of.is_none()
                && matches!((difference, explained), (Some(d), Some(e)) if d.unsigned_abs() > e),
            shard_of,
            server_ms,
            client_ms: c.mean_ms,
            outside_ms: server_ms.map(|s| c.mean_ms - s),
            biggest: busiest.and_then(biggest),
            sampling_cpu_s: (self.sampler_cpu_s > 0.0).then_some(self.sampler_cpu_s),
            nodes,
        }
    }
}

impl ServerSamples {
    /// What the run itself adds to (or leaves out of) the server's count in the client's
    /// window, beside the client's answered requests, each part with its count:
    /// - the sampling windows' edges (`Counted::explained`, summed over nodes);
    /// - the requests in flight when a signal stopped the run (one per connection at most:
    ///   the server handled them, the client counted no answer);
    /// - the profiles asked for (`--pprof-interval`), refused ones included;
    /// - in a merged report of shards, each shard's rendezvous and own setup and cleanup
    ///   while another shard's window was open (`rendezvous_allowance`).
    ///
    /// The sampler's own `sys/metrics` and `sys/host-info` calls are already taken off
    /// the count (`Sample::own_requests`).
    fn explained_parts(&self, counts: &[Counted], c: &ClientSide) -> Vec<(&'static str, u64)> {
        let asked = self.profile_requests.max(self.profiles.len() as u64);
        vec![
            (
                "sampling windows",
                counts.iter().map(|k| k.explained).sum::<u64>(),
            ),
            (
                "in flight at the stop",
                if c.interrupted { c.connections } else { 0 },
            ),
            ("profiles asked", asked),
            ("the shards' rendezvous", self.rendezvous_allowance()),
        ]
    }

    /// In a merged report of shards, the requests each shard made outside its own window
    /// while the merged window was open: its polls of the sync mount (one per
    /// `RENDEZVOUS_POLL_MS` at most) and its edge requests (`SHARD_EDGE_REQUESTS`).
    fn rendezvous_allowance(&self) -> u64 {
        if self.shard_windows.len() < 2 {
            return 0;
        }
        let first = self.shard_windows.iter().map(|w| w[0]).min().unwrap_or(0);
        let last = self.shard_windows.iter().map(|w| w[1]).max().unwrap_or(0);
        self.shard_windows
            .iter()
            .map(|&[a, b]| {
                let (before, after) = (a.saturating_sub(first), last.saturating_sub(b));
                let edges = u64::from(before > 0) + u64::from(after > 0);
                (before + after).div_ceil(RENDEZVOUS_POLL_MS) + edges * SHARD_EDGE_REQUESTS
            })
            .sum()
    }
}

fn cores(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3} ms"))
}

fn mib(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1} MiB", v / 1048576.0))
}

/// The text report's "Server" section.
pub fn write_text(s: &ServerSummary, o: &mut dyn Write) -> io::Result<()> {
    writeln!(o)?;
    writeln!(
        o,
        "Server (sampled on the node{}):",
        if s.nodes.len() > 1 { "s" } else { "" }
    )?;
    for n in &s.nodes {
        write_node_text(n, o)?;
    }
    if let Some(server) = s.server_ms {
        writeln!(
            o,
            "  mean time per request: server {:.3} ms, client {:.3} ms, outside Vault {:.3} ms{}",
            server,
            s.client_ms,
            s.client_ms - server,
            s.biggest
                .as_ref()
                .map_or(String::new(), |b| format!("; biggest server part: {b}"))
        )?;
    }
    if let Some(cpu) = s.sampling_cpu_s {
        writeln!(
            o,
            "  sampling cost vblast {:.1} ms of CPU (the sampler's thread, and its calls before and after the load)",
            cpu * 1e3
        )?;
    }
    if let Some(line) = accounting_line(s) {
        writeln!(o, "  accounting: {line}")?;
    }
    Ok(())
}

/// The accounting cross-check, after "accounting: ": what the server handled beside what
/// the client answered, the difference and what the run itself explains of it (in a shard's
/// own report: why it does not compare). None without the server's count. The text and
/// HTML reports print this one line.
pub fn accounting_line(s: &ServerSummary) -> Option<String> {
    if let (Some(h), Some(n)) = (s.handled, s.shard_of) {
        return Some(format!(
            "server handled {h}, this shard answered {} (the server counts every shard's requests: this is 1 of {n} shards; `vblast report` of every shard's file compares them)",
            s.client_answered
        ));
    }
    let (h, d) = (s.handled?, s.difference?);
    let parts = if s.explained_by.is_empty() {
        s.explained.unwrap_or(0).to_string()
    } else {
        s.explained_by.join(", ")
    };
    Some(format!(
        "server handled {h}, client answered {}, difference {d:+}{}",
        s.client_answered,
        if s.beyond {
            format!(
                "  <-- beyond what the run explains ({parts}): requests lost, or a proxy in between"
            )
        } else if d != 0 {
            format!(" (within what the run explains: {parts})")
        } else {
            String::new()
        }
    ))
}

/// The node's CPU limit line (after "CPU limit"): its cgroup quota (or cores) and the
/// share of it used, the throttling; or why no quota could be seen. None for a file from
/// before limits were kept. The text and HTML reports print this one line.
pub fn limit_line(n: &ServerNodeSummary) -> Option<String> {
    let share = match (n.cpu_limit_pct_peak, n.cpu_limit_pct_mean) {
        (Some(p), Some(m)) => format!("used peak {p:.0}%  mean {m:.0}% of it"),
        _ => "used -".into(),
    };
    let line = match (n.cpu_limit_seen, n.quota_cores, n.cpu_limit_cores) {
        (Some(LimitSeen::Read), Some(q), _) => format!(
            "quota {q:.2} cores (cgroup): {share}; throttled {:.2} s{}",
            n.throttled_s.unwrap_or(0.0),
            n.throttled_pct_mean
                .map_or(String::new(), |p| format!(" ({p:.0}% of its periods)"))
        ),
        (Some(LimitSeen::Read), None, Some(l)) => {
            format!("no cgroup quota; {l:.0} cores allowed: {share}")
        }
        (Some(LimitSeen::Unreadable), _, l) => format!(
            "its cgroup not readable here: quota unknown{}",
            l.map_or(String::new(), |l| format!(
                "; {l:.0} cores allowed: {share}"
            ))
        ),
        (Some(LimitSeen::NotVisible), _, l) => format!(
            "a quota cannot be seen from here (read from /proc with --server-pid on the server's machine){}",
            l.map_or(String::new(), |l| format!(
                "; of {l:.0} host cores: {share}"
            ))
        ),
        // A file from before limits were kept.
        (None, ..) => return None,
        (Some(LimitSeen::Read), None, None) => "no cgroup quota".into(),
    };
    Some(line)
}

/// Which of the node's requests it served itself and which it sent on to the active node,
/// by the server's own counters (`vault.core.handle_request` counts both; a forwarded
/// request is counted again by the active node that served it). None without them.
pub fn served_line(n: &ServerNodeSummary) -> Option<String> {
    let (h, f) = (n.handled?, n.forwarded?);
    Some(format!(
        "served itself {}, forwarded to the active node {f}{} (the server's vault.ha.rpc.client.forward)",
        h.saturating_sub(f),
        n.forward_ms
            .map_or(String::new(), |m| format!(", {m:.3} ms per forward"))
    ))
}

/// One node's lines of the "Server" section.
fn write_node_text(n: &ServerNodeSummary, o: &mut dyn Write) -> io::Result<()> {
    writeln!(o, "  {} ({} samples)", n.node, n.samples)?;
    writeln!(
        o,
        "    CPU (cores)     peak {}  mean {}{}",
        cores(n.cpu_cores_peak),
        cores(n.cpu_cores_mean),
        match (n.host_cpu_pct_peak, n.host_cpu_pct_mean) {
            (Some(p), Some(m)) => format!("   host peak {p:.0}%  mean {m:.0}%"),
            _ => String::new(),
        }
    )?;
    if let Some(line) = limit_line(n) {
        writeln!(o, "    CPU limit       {line}")?;
    }
    writeln!(
        o,
        "    memory          RSS peak {}{}",
        mib(n.rss_bytes_peak),
        n.host_mem_used_bytes_peak
            .map_or(String::new(), |b| format!(
                "   host used {}",
                mib(Some(b as f64))
            ))
    )?;
    writeln!(
        o,
        "    in flight       peak {}   goroutines peak {}   leases {}",
        cores(n.in_flight_peak).trim_end_matches(".00"),
        n.goroutines_peak.map_or("-".into(), |v| format!("{v:.0}")),
        n.leases_peak.map_or("-".into(), |v| format!("{v:.0}")),
    )?;
    if n.handle_ms.is_some() {
        writeln!(
            o,
            "    per request     handle {}   token check {}   barrier get {} put {}",
            ms(n.handle_ms),
            ms(n.check_token_ms),
            ms(n.barrier_get_ms),
            ms(n.barrier_put_ms)
        )?;
    }
    if let Some(line) = served_line(n) {
        writeln!(o, "    requests        {line}")?;
    }
    if let Some(st) = &n.storage {
        writeln!(
            o,
            "    storage ({st})  get {}   put {}",
            ms(n.storage_get_ms),
            ms(n.storage_put_ms)
        )?;
    }
    if let Some(line) = raft_line(n) {
        writeln!(o, "    raft            {line}")?;
    }
    if let Some(b) = n.io_blocked_threads_mean {
        writeln!(
            o,
            "    disk            threads waiting for it (state D) mean {b:.2}{}",
            n.blkio_s_per_s_mean.map_or(String::new(), |w| format!(
                "   block IO wait {w:.2} s per s"
            ))
        )?;
    }
    if let Some(v) = n.rate_limit_violations.filter(|v| *v > 0.0) {
        writeln!(o, "    rate-limit violations {v:.0}")?;
    }
    for m in &n.missing {
        writeln!(o, "    not sampled: {m}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(at_ms: u64, count: f64, token: f64, barrier: f64) -> Sample {
        Sample {
            at_ms,
            handle_request: Some(TimerTotals {
                count,
                sum_ms: count * 0.5,
            }),
            check_token: Some(TimerTotals {
                count,
                sum_ms: token,
            }),
            barrier_get: Some(TimerTotals {
                count,
                sum_ms: barrier,
            }),
            ..Sample::default()
        }
    }

    fn client(answered: u64, warmup: bool) -> ClientSide {
        ClientSide {
            start_ms: 1500,
            end_ms: 4000,
            warmup,
            answered,
            mean_ms: 0.8,
            connections: 4,
            interrupted: false,
            shards: 0,
        }
    }

    fn node(samples: Vec<Sample>) -> ServerSamples {
        ServerSamples {
            interval_s: 1.0,
            nodes: vec![NodeSamples {
                node: "n".into(),
                samples,
                ..NodeSamples::default()
            }],
            ..ServerSamples::default()
        }
    }

    /// Issue 36 item 8: what the run itself caused is accounted for, not blamed on the
    /// server: logins (timed apart by the server), the requests in flight at a stop, a
    /// refused profile request, another shard's requests, the shards' rendezvous.
    #[test]
    fn the_runs_own_requests_are_not_blamed_on_the_server() {
        let login = |at, count: f64, logins: f64| Sample {
            handle_login_request: Some(TimerTotals {
                count: logins,
                sum_ms: logins,
            }),
            ..s(at, count, 1.0, 1.0)
        };
        // 90 requests, 10 of them logins: the client answered 100.
        let logins = node(vec![login(1000, 0.0, 0.0), login(4000, 90.0, 10.0)]);
        let l = logins.summary(&client(100, false), 1000);
        assert_eq!((l.handled, l.difference), (Some(100), Some(0)));
        // Before the first login the server lists no login timer: none counted yet.
        let later = node(vec![s(1000, 0.0, 1.0, 1.0), login(4000, 90.0, 10.0)]);
        assert_eq!(later.summary(&client(100, false), 1000).difference, Some(0));
        // Stopped by a signal: up to one request per connection (4) in flight, handled by
        // the server and never answered to the client.
        let plain = node(vec![s(1000, 0.0, 1.0, 1.0), s(4000, 104.0, 1.0, 1.0)]);
        assert!(plain.summary(&client(100, false), 1000).beyond);
        let stopped = plain.summary(
            &ClientSide {
                interrupted: true,
                ..client(100, false)
            },
            1000,
        );
        assert!(!stopped.beyond, "{stopped:?}");
        let mut text = Vec::new();
        write_text(&stopped, &mut text).expect("text");
        let text = String::from_utf8(text).expect("utf8");
        assert!(text.contains("in flight at the stop 4"), "{text}");
        // One profile request refused (no profile saved): the server handled it.
        let refused = ServerSamples {
            profile_requests: 1,
            ..node(vec![s(1000, 0.0, 1.0, 1.0), s(4000, 101.0, 1.0, 1.0)])
        };
        assert!(!refused.summary(&client(100, false), 1000).beyond);
        // One shard's own report: the other shards' requests are the server's count too.
        let shard = plain.summary(
            &ClientSide {
                shards: 2,
                ..client(50, false)
            },
            1000,
        );
        assert!(!shard.beyond && shard.shard_of == Some(2), "{shard:?}");
        let mut text = Vec::new();
        write_text(&shard, &mut text).expect("text");
        let text = String::from_utf8(text).expect("utf8");
        assert!(text.contains("1 of 2 shards"), "{text}");
        assert!(!text.contains("beyond"), "{text}");
        // Two shards merged, one ending 500 ms before the other: the first's polls of the
        // sync mount and its marker fall in the merged window.
        let part =
            |a, b, count_a, count_b| node(vec![s(a, count_a, 1.0, 1.0), s(b, count_b, 1.0, 1.0)]);
        let merged =
            ServerSamples::merge([&part(1000, 3500, 0.0, 60.0), &part(1000, 4000, 0.0, 105.0)])
                .expect("merged");
        assert_eq!(merged.shard_windows, [[1000, 3500], [1000, 4000]]);
        let m = merged.summary(&client(100, false), 1000);
        assert_eq!(m.difference, Some(5));
        assert!(!m.beyond, "{m:?}");
        assert!(
            m.explained_by
                .iter()
                .any(|p| p.starts_with("the shards' rendezvous")),
            "{m:?}"
        );
    }

    #[test]
    fn the_accounting_compares_the_window() {
        let samples = ServerSamples {
            interval_s: 1.0,
            nodes: vec![NodeSamples {
                node: "n".into(),
                samples: vec![
                    s(1000, 10.0, 1.0, 2.0),
                    s(2000, 60.0, 3.0, 30.0),
                    s(4000, 110.0, 5.0, 60.0),
                ],
                ..NodeSamples::default()
            }],
            ..ServerSamples::default()
        };
        let without = samples.summary(&client(100, false), 1000);
        assert_eq!(without.handled, Some(100));
        assert_eq!(without.difference, Some(0));
        assert!(!without.beyond);
        assert_eq!(without.biggest.as_deref(), Some("barrier"));
        let off = samples.summary(&client(90, false), 1000);
        assert!(off.beyond);
        let warm = samples.summary(&client(90, true), 1000);
        // The nearest sample is 500 ms before the start (and 50 ms of uncertainty): 55% of
        // the second's 50 requests, and 4 in flight.
        assert_eq!(warm.explained, Some(32));
        assert!(!warm.beyond);
        let mut text = Vec::new();
        write_text(&off, &mut text).expect("text");
        let text = String::from_utf8(text).expect("utf8");
        assert!(text.contains("difference +10"), "{text}");
        assert!(text.contains("beyond"), "{text}");
        // Ten profiles saved (`--pprof-interval`): ten requests of the server's are theirs.
        let profiled = ServerSamples {
            profiles: (0..10).map(|i| format!("{i}-cpu.pb.gz")).collect(),
            ..samples
        };
        let p = profiled.summary(&client(90, false), 1000);
        assert_eq!((p.difference, p.explained), (Some(10), Some(10)));
        assert!(!p.beyond);
    }
}
