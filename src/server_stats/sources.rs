//! Where a sample's figures come from, one reader per source: the server's telemetry
//! (`sys/metrics`, in Prometheus form when the server keeps it, else its JSON form),
//! the host it runs on (`sys/host-info`), its process (`/proc/PID`, `--server-pid`) and
//! that process's cgroup CPU quota and throttling (cgroup v2 or v1).
//! Each answers its figures or a `Cause` that says why the source is missing.

use std::borrow::Cow;
use std::collections::HashMap;

use super::NodeApi;
use crate::error::Cause;

use super::sample::{CgroupCpu, HostCpu, Process, Raft, Sample, TimerTotals};

/// Storage backends whose telemetry names a `get` and `put` timer (`vault.<name>.get`).
const STORAGE: [&str; 14] = [
    "raft_storage",
    "raft",
    "postgres",
    "file",
    "consul",
    "mysql",
    "etcd",
    "dynamodb",
    "s3",
    "gcs",
    "azure",
    "zookeeper",
    "spanner",
    "cockroachdb",
];

/// The server's telemetry in the form it answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `?format=prometheus`: cumulative counters and timers.
    Prometheus,
    /// The in-memory sink's JSON: gauges only are kept (its timers cover the sink's own
    /// interval, not the run).
    Json,
}

/// Values by metric name (Prometheus spelling, `vault_core_handle_request_count`), each
/// the sum over its label sets. Only the metrics a sample keeps (`kept`) are in it.
pub type Values = HashMap<String, f64>;

/// The gauges a sample keeps, by their Prometheus names.
const GAUGES: [&str; 15] = [
    "vault_raft_storage_stats_fsm_pending",
    "vault_raft_storage_stats_applied_index",
    "vault_raft_storage_stats_term",
    "vault_raft_storage_follower_applied_index_delta",
    "vault_raft_storage_bolt_freelist_free_pages",
    "vault_raft_storage_bolt_freelist_allocated_bytes",
    "vault_core_in_flight_requests",
    "vault_runtime_num_goroutines",
    "vault_runtime_alloc_bytes",
    "vault_expire_num_leases",
    "vault_token_count",
    "vault_quota_rate_limit_violation",
    "vault_quota_rate_limit_violation_total",
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
];

/// The timers a sample keeps (their `_count` and `_sum`), storage backends' aside.
const TIMERS: [&str; 8] = [
    "vault_raft_commitTime",
    "vault_raft_fsm_applyBatch",
    "vault_core_handle_request",
    "vault_ha_rpc_client_forward",
    "vault_core_handle_login_request",
    "vault_core_check_token",
    "vault_barrier_get",
    "vault_barrier_put",
];

/// Whether a sample keeps the metric `name`. The server lists hundreds (a series per
/// route, mount and quantile); reading only these keeps each sample's cost small, so that
/// sampling costs the client next to nothing beside the load (issue 23 item 8).
fn kept(name: &str) -> bool {
    if GAUGES.contains(&name) {
        return true;
    }
    let Some(base) = name
        .strip_suffix("_count")
        .or_else(|| name.strip_suffix("_sum"))
    else {
        return false;
    };
    TIMERS.contains(&base)
        || base.strip_prefix("vault_").is_some_and(|rest| {
            STORAGE.iter().any(|s| {
                rest.strip_prefix(s)
                    .is_some_and(|op| matches!(op, "_get" | "_put" | "_delete" | "_list"))
            })
        })
}

/// Adds `v` to `name`'s sum when a sample keeps it.
fn add(out: &mut Values, name: &str, v: f64) {
    if !kept(name) {
        return;
    }
    match out.get_mut(name) {
        Some(sum) => *sum += v,
        None => {
            out.insert(name.to_string(), v);
        }
    }
}

/// The leader's per-follower lag gauge: each follower's applied index behind the leader's,
/// a series per follower (label `peer_id`). Kept summed under its name, and per follower
/// under `FOLLOWER_LAG` `/` its peer id.
const FOLLOWER_LAG: &str = "vault_raft_storage_follower_applied_index_delta";
/// The node's own applied index, labelled with its own `peer_id`: kept as well under
/// `OWN_PEER` `/` that id, which names the node among the leader's followers.
const OWN_PEER: &str = "vault_raft_storage_stats_applied_index";

/// The `peer_id` label's value in a series' labels (`{cluster="c",peer_id="node1"} 3`).
fn peer_id(labels: &str) -> Option<&str> {
    let at = labels.find("peer_id=\"")? + "peer_id=\"".len();
    let rest = &labels[at..];
    rest.find('"').map(|end| &rest[..end])
}

/// Reads the Prometheus text form: `name{labels} value` lines, comments skipped.
pub fn parse_prometheus(text: &str) -> Values {
    let mut out = Values::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => continue,
        };
        // Quantile lines of a summary are not kept (their name repeats with `quantile=`).
        if !kept(name) || rest.contains("quantile=") {
            continue;
        }
        let value = rest.rsplit('}').next().unwrap_or(rest);
        if let Some(v) = value
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            && v.is_finite()
        {
            add(&mut out, name, v);
            if (name == FOLLOWER_LAG || name == OWN_PEER)
                && let Some(peer) = peer_id(rest)
            {
                out.insert(format!("{name}/{peer}"), v);
            }
        }
    }
    out
}

/// The leader's followers and each one's lag, by peer id (`FOLLOWER_LAG`), in peer order.
fn follower_lags(v: &Values) -> Vec<super::sample::FollowerLag> {
    let mut lags: Vec<super::sample::FollowerLag> = v
        .iter()
        .filter_map(|(k, &lag)| {
            let peer = k.strip_prefix(FOLLOWER_LAG)?.strip_prefix('/')?;
            Some(super::sample::FollowerLag {
                peer_id: peer.to_string(),
                lag,
            })
        })
        .collect();
    lags.sort_by(|a, b| a.peer_id.cmp(&b.peer_id));
    lags
}

/// The in-memory sink's JSON, its gauges only (the rest is skipped unread).
#[derive(serde::Deserialize)]
struct Sink<'a> {
    #[serde(rename = "Gauges", default, borrow)]
    gauges: Vec<Gauge<'a>>,
}

#[derive(serde::Deserialize)]
struct Gauge<'a> {
    #[serde(rename = "Name", borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(rename = "Value")]
    value: Option<f64>,
}

/// Reads the JSON form's gauges, under their Prometheus names (dots become underscores).
/// None: not the sink's JSON.
pub fn parse_json_gauges(body: &[u8]) -> Option<Values> {
    let sink: Sink = serde_json::from_slice(body).ok()?;
    let mut out = Values::new();
    let mut name = String::new();
    for g in sink.gauges {
        let Some(v) = g.value else { continue };
        name.clear();
        name.extend(
            g.name
                .chars()
                .map(|c| if c == '.' || c == '-' { '_' } else { c }),
        );
        add(&mut out, &name, v);
    }
    Some(out)
}

/// Fills `s` with what the telemetry's values say.
pub fn fill_telemetry(s: &mut Sample, v: &Values) {
    let gauge = |name: &str| v.get(name).copied();
    let timer = |name: &str| {
        Some(TimerTotals {
            count: *v.get(&format!("{name}_count"))?,
            sum_ms: v.get(&format!("{name}_sum")).copied().unwrap_or(0.0),
        })
    };
    s.in_flight = gauge("vault_core_in_flight_requests");
    s.goroutines = gauge("vault_runtime_num_goroutines");
    s.alloc_bytes = gauge("vault_runtime_alloc_bytes");
    s.leases = gauge("vault_expire_num_leases");
    s.tokens = gauge("vault_token_count");
    s.rate_limit_violations = gauge("vault_quota_rate_limit_violation")
        .or_else(|| gauge("vault_quota_rate_limit_violation_total"));
    s.server_cpu_s = gauge("process_cpu_seconds_total");
    s.server_rss_bytes = gauge("process_resident_memory_bytes");
    s.handle_request = timer("vault_core_handle_request");
    s.handle_login_request = timer("vault_core_handle_login_request");
    // A standby lists its forwarding timer once it has forwarded: none yet is 0 when the
    // telemetry answered.
    s.forwarded = timer("vault_ha_rpc_client_forward")
        .or_else(|| s.handle_request.map(|_| TimerTotals::default()));
    s.check_token = timer("vault_core_check_token");
    s.raft = gauge("vault_raft_storage_stats_applied_index").map(|applied| {
        Box::new(Raft {
            commit: timer("vault_raft_commitTime"),
            apply: timer("vault_raft_fsm_applyBatch"),
            fsm_pending: gauge("vault_raft_storage_stats_fsm_pending"),
            applied_index: applied,
            term: gauge("vault_raft_storage_stats_term"),
            followers_lag: gauge(FOLLOWER_LAG),
            bolt_free_pages: gauge("vault_raft_storage_bolt_freelist_free_pages"),
            bolt_freelist_bytes: gauge("vault_raft_storage_bolt_freelist_allocated_bytes"),
        })
    });
    if s.raft.is_some() {
        s.raft_followers = follower_lags(v);
        s.raft_peer_id = v
            .keys()
            .find_map(|k| k.strip_prefix(OWN_PEER)?.strip_prefix('/'))
            .map(str::to_string);
    }
    s.barrier_get = timer("vault_barrier_get");
    s.barrier_put = timer("vault_barrier_put");
    for name in STORAGE {
        let get = timer(&format!("vault_{name}_get"));
        let put = timer(&format!("vault_{name}_put"));
        if get.is_some() || put.is_some() {
            s.storage = Some(Cow::Borrowed(name));
            s.storage_get = get;
            s.storage_put = put;
            s.storage_delete = timer(&format!("vault_{name}_delete"));
            s.storage_list = timer(&format!("vault_{name}_list"));
            break;
        }
    }
}

/// One look at the server's telemetry: the Prometheus form if `form` says so, the JSON
/// form otherwise. A Prometheus form the server does not keep (no
/// `prometheus_retention_time`) answers `Ok(None)`: try the JSON form.
pub fn telemetry(client: &mut dyn NodeApi, form: Form) -> Result<Option<Values>, Cause> {
    let path = match form {
        Form::Prometheus => "/v1/sys/metrics?format=prometheus",
        Form::Json => "/v1/sys/metrics",
    };
    let r = client.get(path, false)?;
    match (r.status, form) {
        (200, Form::Prometheus) => Ok(Some(parse_prometheus(&String::from_utf8_lossy(&r.body)))),
        (200, Form::Json) => match parse_json_gauges(&r.body) {
            Some(v) => Ok(Some(v)),
            None => Err(Cause::Said(
                "sys/metrics answered something other than JSON".into(),
            )),
        },
        // Prometheus form not kept by this server: the JSON form may be.
        (400 | 500, Form::Prometheus) => Ok(None),
        (status, _) => Err(Cause::Http {
            what: "sys/metrics".into(),
            status,
            excerpt: r.error_text(),
        }),
    }
}

/// The host's CPU times and memory from `sys/host-info` (which needs `sudo` rights on
/// the path).
pub fn host_info(client: &mut dyn NodeApi) -> Result<(HostCpu, u64, u64), Cause> {
    let r = client.get("/v1/sys/host-info", false)?;
    if r.status != 200 {
        return Err(Cause::Http {
            what: "sys/host-info".into(),
            status: r.status,
            excerpt: r.error_text(),
        });
    }
    parse_host_info(&r.body)
}

/// Reads `sys/host-info`'s answer: the CPU times summed over CPUs, memory used and total.
pub fn parse_host_info(body: &[u8]) -> Result<(HostCpu, u64, u64), Cause> {
    let doc: HostInfo = serde_json::from_slice(body)
        .map_err(|_| Cause::Said("sys/host-info answered something other than JSON".into()))?;
    let mut cpu = HostCpu::default();
    for t in &doc.data.cpu_times {
        let busy = t.user + t.system + t.nice + t.irq + t.softirq + t.steal;
        cpu.busy_s += busy;
        cpu.total_s += busy + t.idle + t.iowait;
        cpu.cpus += 1;
    }
    if cpu.cpus == 0 {
        return Err(Cause::Said("sys/host-info gave no CPU times".into()));
    }
    Ok((cpu, doc.data.memory.used, doc.data.memory.total))
}

/// What a sample reads of `sys/host-info` (the rest of its answer is skipped unread).
#[derive(serde::Deserialize)]
struct HostInfo {
    #[serde(default)]
    data: HostData,
}

#[derive(serde::Deserialize, Default)]
struct HostData {
    #[serde(default)]
    cpu_times: Vec<CpuTimes>,
    #[serde(default)]
    memory: Memory,
}

/// One CPU's times, seconds; a field the server leaves out is 0.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct CpuTimes {
    user: f64,
    system: f64,
    nice: f64,
    irq: f64,
    softirq: f64,
    steal: f64,
    idle: f64,
    iowait: f64,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct Memory {
    used: u64,
    total: u64,
}

/// The process `pid` from /proc: CPU time, resident memory, and IO when readable.
pub fn process(pid: u32) -> Result<Process, Cause> {
    let stat_path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&stat_path)
        .map_err(|e| Cause::io(format!("process {pid} (--server-pid)"), e))?;
    // Fields after the command name (which may hold spaces), from field 3 on.
    let after = stat
        .rfind(')')
        .map(|i| &stat[i + 1..])
        .ok_or_else(|| Cause::Said(format!("{stat_path} is not a process's stat")))?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // A process that has exited and not been reaped yet still has its /proc entry, whose
    // CPU time no longer moves: its samples would read as an idle server.
    if let Some(state @ ("Z" | "X" | "x")) = fields.first().copied() {
        return Err(Cause::Said(format!(
            "process {pid} has exited (state {state} in {stat_path})"
        )));
    }
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    let (Some(utime), Some(stime), Some(rss_pages)) = (field(14), field(15), field(24)) else {
        return Err(Cause::Said(format!("{stat_path} is not a process's stat")));
    };
    let ticks = sysconf(libc::_SC_CLK_TCK, 100) as f64;
    let mut p = Process {
        cpu_s: (utime + stime) as f64 / ticks,
        rss_bytes: rss_pages * sysconf(libc::_SC_PAGESIZE, 4096),
        read_bytes: None,
        write_bytes: None,
        cpus_allowed: cpus_allowed(pid),
        cpu_wait_s: cpu_wait_s(pid),
        cgroup: cgroup_cpu(pid),
        io_blocked_threads: None,
        blkio_s: None,
        bolt: None,
    };
    if let Some((blocked, blkio_ticks)) = task_io(pid) {
        p.io_blocked_threads = Some(blocked);
        // The kernel counts none with `kernel.task_delayacct` off: not counted, not 0.
        p.blkio_s = (blkio_ticks > 0).then(|| blkio_ticks as f64 / ticks);
    }
    if let Ok(io) = std::fs::read_to_string(format!("/proc/{pid}/io")) {
        for line in io.lines() {
            let mut kv = line.split(':');
            let (k, v) = (kv.next(), kv.next().and_then(|v| v.trim().parse().ok()));
            match k {
                Some("read_bytes") => p.read_bytes = v,
                Some("write_bytes") => p.write_bytes = v,
                _ => {}
            }
        }
    }
    Ok(p)
}

/// How many CPUs `pid` may run on, from `Cpus_allowed_list` ("0-1,3" is 3).
fn cpus_allowed(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    cpu_list_len(list.trim())
}

/// The number of CPUs in a list such as "0-1,3".
pub fn cpu_list_len(list: &str) -> Option<u32> {
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<u32>().ok()? + 1 - a.parse::<u32>().ok()?,
            None => part.parse::<u32>().map(|_| 1).ok()?,
        };
    }
    (n > 0).then_some(n)
}

/// The time `pid`'s threads spent runnable but waiting for a CPU, seconds (the second
/// field of each thread's `schedstat`, nanoseconds).
fn cpu_wait_s(pid: u32) -> Option<f64> {
    let mut ns = 0u64;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(text) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        ns += text
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(ns as f64 / 1e9)
}

/// Of `pid`'s threads, how many are in uninterruptible sleep (state `D`, waiting for the
/// disk, mostly) and their time waiting for block IO, clock ticks (`delayacct_blkio_ticks`,
/// field 42 of each thread's `stat`; 0 when the kernel does not count it).
fn task_io(pid: u32) -> Option<(u32, u64)> {
    let (mut blocked, mut ticks) = (0, 0);
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = after.split_whitespace();
        blocked += u32::from(fields.next() == Some("D"));
        // Field 42 is the 40th after the state (field 3).
        ticks += fields
            .nth(38)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some((blocked, ticks))
}

/// The BoltDB files a raft node holds open, found among `/proc/PID/fd`'s links: its FSM
/// (`vault.db`) and its raft log (`raft.db`), in that order of the answer. Read once per
/// node (a process keeps them open while it runs); empty for a node on other storage.
pub fn bolt_paths(pid: u32) -> [Option<std::path::PathBuf>; 2] {
    let mut out = [None, None];
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return out;
    };
    for fd in dir.flatten() {
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        let slot = match target.file_name().and_then(|n| n.to_str()) {
            Some("vault.db") => 0,
            Some("raft.db") => 1,
            _ => continue,
        };
        out[slot] = Some(target);
    }
    out
}

/// The sizes of the files `bolt_paths` found; None when neither is there.
pub fn bolt_files(paths: &[Option<std::path::PathBuf>; 2]) -> Option<super::sample::BoltFiles> {
    let size = |p: &Option<std::path::PathBuf>| Some(std::fs::metadata(p.as_ref()?).ok()?.len());
    let b = super::sample::BoltFiles {
        fsm_bytes: size(&paths[0]),
        log_bytes: size(&paths[1]),
    };
    b.total().map(|_| b)
}

/// Where the cgroup hierarchies are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// The CPU limit of `pid`'s cgroup and its throttling, from /proc/PID/cgroup and the
/// cgroup files: cgroup v2 (`cpu.max`, `cpu.stat`'s `nr_throttled` and `throttled_usec`)
/// or v1 (the `cpu` controller's `cpu.cfs_quota_us`, `cpu.cfs_period_us`, `cpu.stat`'s
/// `throttled_time`). The limit is the tightest on the way from the process's cgroup to
/// the root, its throttling that cgroup's. None: no cgroup CPU controller readable here.
pub fn cgroup_cpu(pid: u32) -> Option<CgroupCpu> {
    let list = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let (dir, v2) = cgroup_dir(&list)?;
    let mut tightest: Option<(f64, std::path::PathBuf)> = None;
    let mut at = Some(dir.as_path());
    while let Some(d) = at.filter(|d| d.starts_with(CGROUP_ROOT)) {
        if let Some(q) = if v2 { quota_v2(d) } else { quota_v1(d) }
            && tightest.as_ref().is_none_or(|(t, _)| q < *t)
        {
            tightest = Some((q, d.to_path_buf()));
        }
        at = d.parent();
    }
    let stat_dir = tightest
        .as_ref()
        .map_or(dir.as_path(), |(_, d)| d.as_path());
    let stat = std::fs::read_to_string(stat_dir.join("cpu.stat")).ok()?;
    let mut c = parse_cpu_stat(&stat, v2);
    c.quota_cores = tightest.map(|(q, _)| q);
    Some(c)
}

/// The directory of the process's CPU cgroup, and whether it is cgroup v2, from the lines
/// of /proc/PID/cgroup (`0::/path` for v2, `N:cpu,cpuacct:/path` for v1).
fn cgroup_dir(list: &str) -> Option<(std::path::PathBuf, bool)> {
    let root = std::path::Path::new(CGROUP_ROOT);
    for line in list.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "cpu") {
            // v1: mounted as `cpu,cpuacct` (with a `cpu` link) or `cpu` alone.
            for mount in [controllers, "cpu"] {
                let d = root.join(mount).join(rel);
                if d.join("cpu.cfs_quota_us").exists() {
                    return Some((d, false));
                }
            }
        }
    }
    let path = list.lines().find_map(|l| l.strip_prefix("0::"))?;
    let d = root.join(path.trim_start_matches('/'));
    (root.join("cgroup.controllers").exists() && d.join("cpu.stat").exists()).then_some((d, true))
}

/// cgroup v2's `cpu.max` ("50000 100000", or "max 100000") in cores.
fn quota_v2(dir: &std::path::Path) -> Option<f64> {
    parse_cpu_max(&std::fs::read_to_string(dir.join("cpu.max")).ok()?)
}

/// Reads `cpu.max`: quota and period, microseconds; None for `max` (no limit).
pub fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut it = text.split_whitespace();
    let quota: f64 = it.next()?.parse().ok()?;
    let period: f64 = it.next().unwrap_or("100000").parse().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// cgroup v1's `cpu.cfs_quota_us` over `cpu.cfs_period_us`, in cores; None for -1.
fn quota_v1(dir: &std::path::Path) -> Option<f64> {
    let read = |f: &str| -> Option<f64> {
        std::fs::read_to_string(dir.join(f))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let (quota, period) = (read("cpu.cfs_quota_us")?, read("cpu.cfs_period_us")?);
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// Reads `cpu.stat`'s periods and throttling (v2: `throttled_usec`; v1: `throttled_time`,
/// nanoseconds).
pub fn parse_cpu_stat(text: &str, v2: bool) -> CgroupCpu {
    let mut c = CgroupCpu::default();
    for line in text.lines() {
        let mut kv = line.split_whitespace();
        let (Some(k), Some(Ok(v))) = (kv.next(), kv.next().map(str::parse::<u64>)) else {
            continue;
        };
        match (k, v2) {
            ("nr_periods", _) => c.periods = v,
            ("nr_throttled", _) => c.throttled_periods = v,
            ("throttled_usec", true) => c.throttled_s = v as f64 / 1e6,
            ("throttled_time", false) => c.throttled_s = v as f64 / 1e9,
            _ => {}
        }
    }
    c
}

/// A system configuration value, or `fallback` when the system does not say.
fn sysconf(name: libc::c_int, fallback: u64) -> u64 {
    // SAFETY: sysconf reads a configuration value; it takes no pointer.
    let v = unsafe { libc::sysconf(name) };
    if v > 0 { v as u64 } else { fallback }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A --server-pid that exited during the run (a zombie until reaped) is gone, not an
    /// idle server whose CPU reads 0.
    #[test]
    fn a_process_that_has_exited_is_not_sampled() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let exited = loop {
            match process(pid) {
                Err(e) => break e.to_string(),
                Ok(_) if std::time::Instant::now() > deadline => panic!("{pid} never exited"),
                Ok(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        };
        assert!(exited.contains("has exited (state Z"), "{exited}");
        child.wait().unwrap();
        assert!(process(std::process::id()).is_ok());
    }

    #[test]
    fn prometheus_lines_sum_over_labels_and_skip_quantiles() {
        let v = parse_prometheus(
            "# HELP x\nvault_core_handle_request{quantile=\"0.5\"} 0.3\nvault_core_handle_request_sum 4.5\nvault_core_handle_request_count 8\nvault_core_in_flight_requests{cluster=\"a b\"} 2\nvault_core_in_flight_requests{cluster=\"c\"} 1\nvault_barrier_put{quantile=\"0.9\"} NaN\n",
        );
        assert_eq!(v.get("vault_core_handle_request_count"), Some(&8.0));
        assert_eq!(v.get("vault_core_in_flight_requests"), Some(&3.0));
        assert!(!v.contains_key("vault_core_handle_request"));
        let mut s = Sample::default();
        fill_telemetry(&mut s, &v);
        assert_eq!(
            s.handle_request,
            Some(TimerTotals {
                count: 8.0,
                sum_ms: 4.5
            })
        );
        assert_eq!(s.in_flight, Some(3.0));
        assert_eq!(s.storage, None);
        let all = parse_prometheus(
            "vault_route_read_secret_count 9\nvault_postgres_put_sum 2\nvault_postgresx_put_sum 1\nprocess_cpu_seconds_total 1.5\n",
        );
        assert_eq!(all.len(), 2, "only the metrics a sample keeps: {all:?}");
        assert_eq!(all.get("process_cpu_seconds_total"), Some(&1.5));
    }

    /// Issue 39: the leader's per-follower lag is kept per peer, beside its sum, and a
    /// node's own peer id from its applied index's label.
    #[test]
    fn each_followers_lag_is_kept_by_its_peer_id() {
        let v = parse_prometheus(
            "vault_raft_storage_follower_applied_index_delta{peer_id=\"node2\"} 1\nvault_raft_storage_follower_applied_index_delta{peer_id=\"node1\"} 4\nvault_raft_storage_stats_applied_index{cluster=\"c\",peer_id=\"node0\"} 32\n",
        );
        let mut s = Sample::default();
        fill_telemetry(&mut s, &v);
        let raft = s.raft.as_deref().expect("raft figures");
        assert_eq!(raft.followers_lag, Some(5.0));
        assert_eq!(raft.applied_index, 32.0);
        let lags: Vec<(&str, f64)> = s
            .raft_followers
            .iter()
            .map(|f| (f.peer_id.as_str(), f.lag))
            .collect();
        assert_eq!(lags, [("node1", 4.0), ("node2", 1.0)]);
        assert_eq!(s.raft_peer_id.as_deref(), Some("node0"));
        // A follower lists no followers.
        let v = parse_prometheus("vault_raft_storage_stats_applied_index{peer_id=\"node1\"} 30\n");
        let mut s = Sample::default();
        fill_telemetry(&mut s, &v);
        assert!(s.raft_followers.is_empty());
        assert_eq!(s.raft_peer_id.as_deref(), Some("node1"));
    }

    #[test]
    fn storage_timers_are_found_by_backend() {
        let v = parse_prometheus(
            "vault_postgres_get_count 3\nvault_postgres_get_sum 6\nvault_postgres_delete_count 2\nvault_postgres_delete_sum 5\n",
        );
        let mut s = Sample::default();
        fill_telemetry(&mut s, &v);
        assert_eq!(s.storage.as_deref(), Some("postgres"));
        assert_eq!(s.storage_get.map(|t| t.sum_ms), Some(6.0));
        assert_eq!(s.storage_delete.map(|t| t.count), Some(2.0));
        assert_eq!(s.storage_list, None);
    }

    #[test]
    fn json_gauges_take_prometheus_names() {
        let doc = br#"{"Timestamp": "x", "Gauges": [{"Name": "vault.runtime.num_goroutines", "Value": 541.0, "Labels": {}}, {"Name": "vault.runtime.num_goroutines", "Value": 1.0}, {"Name": "vault.route.read.secret-", "Value": 2.0}], "Samples": [{"Name": "vault.core.handle_request", "Count": 3}]}"#;
        let v = parse_json_gauges(doc).expect("the sink's JSON");
        assert_eq!(v.get("vault_runtime_num_goroutines"), Some(&542.0));
        assert_eq!(v.len(), 1, "only the kept gauges: {v:?}");
        assert!(parse_json_gauges(b"<html>").is_none());
    }

    #[test]
    fn host_info_sums_its_cpus() {
        let body = br#"{"request_id": "r", "data": {"cpu": [{"cores": 1}], "cpu_times": [{"cpu": "cpu0", "user": 2.0, "system": 1.0, "idle": 7.0, "iowait": 0.5}, {"cpu": "cpu1", "user": 1.0, "steal": 0.5, "idle": 8.5}], "memory": {"used": 30, "total": 100, "free": 70}, "disk": []}}"#;
        let (cpu, used, total) = parse_host_info(body).expect("host-info");
        assert_eq!((cpu.cpus, used, total), (2, 30, 100));
        assert_eq!(cpu.busy_s, 4.5);
        assert_eq!(cpu.total_s, 20.5);
        assert!(parse_host_info(br#"{"data": {"cpu_times": []}}"#).is_err());
        assert!(parse_host_info(b"not json").is_err());
    }

    #[test]
    fn cgroup_files_give_the_quota_and_the_throttling() {
        assert_eq!(parse_cpu_max("50000 100000\n"), Some(0.5));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        let v2 = parse_cpu_stat(
            "usage_usec 9\nnr_periods 40\nnr_throttled 12\nthrottled_usec 250000\n",
            true,
        );
        assert_eq!((v2.periods, v2.throttled_periods), (40, 12));
        assert_eq!(v2.throttled_s, 0.25);
        let v1 = parse_cpu_stat(
            "nr_periods 3\nnr_throttled 2\nthrottled_time 1500000000\n",
            false,
        );
        assert_eq!((v1.throttled_periods, v1.throttled_s), (2, 1.5));
    }

    #[test]
    fn this_process_is_read_from_proc() {
        let p = process(std::process::id()).expect("own process");
        assert!(p.rss_bytes > 0);
        assert!(process(u32::MAX).is_err());
    }
}
