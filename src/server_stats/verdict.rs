//! Which resource gave out first at a sweep's knee, from the steps' server-side figures:
//! the server's CPU quota (its cgroup throttling it more at the knee); the server's CPU at
//! its cores (or its quota); the disk under its data directory (its threads waiting for
//! it); raft's commit time growing (integrated storage); its storage (or barrier) time
//! growing while its CPU has room; requests piling up in flight while throughput stays
//! flat; or the client itself (vblast's own CPU). When the disk's figures and raft's commit
//! time both say so, the disk is named: a commit is an fsync of the log, so its time grew
//! because of the disk; raft's commit is named for commit time that grew without the disk
//! waited for (the followers' network, the leader's scheduling). Pure: the sweep hands it
//! each step's figures and the knee.

use serde::{Deserialize, Serialize};

/// A CPU this busy (used, plus waited for while runnable) over its cores is at its cores.
/// Not nearer 1: a step's mean takes in the 1 s samples that straddle its start and end,
/// and a one-core OpenBao held at 16 requests in flight measured 0.84 on a busy machine.
const CPU_FULL: f64 = 0.80;
/// Storage time per request this many times the lowest step's has grown.
const GREW: f64 = 2.0;
/// Throughput within this ratio of the step below is flat.
const FLAT: f64 = 1.10;
/// Storage (or barrier) time that grew names storage only when it is at least this share
/// of the server's time per request at the knee: a kv-read step served from the storage
/// cache spends 0.000 ms per request in storage, and a few misses at the knee (0.004 ms of
/// a 0.3 ms request) double it without storage being what gave out.
const STORAGE_SHARE: f64 = 0.25;
/// Throttled time a quota held the server back, seconds per second, that is more than a
/// burst's: a server held by its quota at the knee is held back far more (a half-core
/// OpenBao at its knee, 0.3 s per s and more).
const THROTTLED: f64 = 0.02;
/// The server's threads waiting for the disk (state `D`, the samples' mean), or their
/// block IO wait in seconds per second, at which the disk is what it waits for: half a
/// thread always waiting. An unthrottled loopback raft node at its knee measured
/// 0.0-0.1 here; the same node behind a 20-writes-per-second throttle, 1 and more.
const DISK_WAIT: f64 = 0.5;
/// Threads waiting for the disk at the knee, whatever the lowest step's, at which the disk
/// is what the server waits for: a thread always waiting. A raft node's writes wait in two
/// threads (the log's and the FSM's fsync), so behind a throttle the lowest step already
/// waits most of the time (0.78-0.91 measured at 20-40 writes/s, 1-2 req/s) and the knee
/// does not double it (1.27-1.57); an unthrottled loop-device node at its knee, 0.67.
const DISK_FULL: f64 = 1.0;

/// One step's figures, as the verdict reads them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadEvidence {
    /// The step's load (req/s offered, or connections).
    pub load: u64,
    /// Responses per second the client saw.
    pub achieved: f64,
    /// The busiest node's CPU used and waited for, in cores, and the cores it may use.
    pub cpu_cores: Option<f64>,
    pub cpu_wait_cores: Option<f64>,
    pub cores: Option<u32>,
    /// The busiest node's cgroup CPU quota, in cores, and the time it held the server
    /// back, seconds per second (`--server-pid`).
    pub quota_cores: Option<f64>,
    pub throttled_s_per_s: Option<f64>,
    /// Per handled request, milliseconds: storage backend and barrier time.
    pub storage_ms: Option<f64>,
    pub barrier_ms: Option<f64>,
    /// The server's mean time per handled request (`handle_request`), milliseconds.
    pub handle_ms: Option<f64>,
    /// Mean of the sampled in-flight gauge.
    pub in_flight: Option<f64>,
    /// vblast's own CPU used and waited for, in cores, and the cores its threads had.
    pub client_cpu_cores: Option<f64>,
    pub client_wait_cores: Option<f64>,
    pub client_cores: f64,
    /// The server's threads waiting for the disk (the most of any node's means), and
    /// their block IO wait, seconds per second, when the kernel counts it (`--server-pid`).
    pub io_blocked: Option<f64>,
    pub blkio_s_per_s: Option<f64>,
    /// The data directory's writes, bytes per second (the most of any node's means).
    pub write_bytes_per_s: Option<f64>,
    /// Raft's mean commit time (the leader's), milliseconds, and the peak of the entries
    /// committed but not yet applied (`fsm_pending`).
    pub raft_commit_ms: Option<f64>,
    pub fsm_pending: Option<f64>,
}

/// The resource that gave out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resource {
    ServerCpu,
    /// The server's CPU quota (its cgroup's limit, a container's): throttled at the knee.
    CpuQuota,
    Storage,
    InFlight,
    Client,
    /// The disk under the server's data directory: its threads waiting for it.
    Disk,
    /// Raft's commit path (integrated storage): its commit time grew at the knee.
    RaftCommit,
}

/// The verdict: the resource, the step it was read at, and its figures in words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Saturated {
    /// None: the figures name no resource (said in `figures`).
    pub resource: Option<Resource>,
    pub load: u64,
    pub figures: String,
}

/// How full a CPU was: (used + waited) / cores.
fn fullness(used: Option<f64>, wait: Option<f64>, cores: f64) -> Option<f64> {
    let used = used?;
    (cores > 0.0).then(|| (used + wait.unwrap_or(0.0)) / cores)
}

fn cpu_words(who: &str, used: Option<f64>, wait: Option<f64>, cores: f64) -> String {
    // A quota is a fraction of a core (0.50): said as such, not rounded to 0.
    let of = if cores.fract() == 0.0 {
        format!("{cores:.0}")
    } else {
        format!("{cores:.2}")
    };
    format!(
        "{who} CPU {:.2} cores used + {:.2} waited for, of {of}",
        used.unwrap_or(0.0),
        wait.unwrap_or(0.0)
    )
}

/// The server's CPU quota, when it gave out at the knee `k` (against the lowest step
/// `base`): the server throttled by it beyond a burst's worth, more than at the lowest
/// step (`GREW` times), or at its quota. The figures in words; None otherwise.
fn quota_verdict(k: &LoadEvidence, base: &LoadEvidence) -> Option<String> {
    let quota = k.quota_cores?;
    let at = k.throttled_s_per_s.unwrap_or(0.0);
    let was = base.throttled_s_per_s.unwrap_or(0.0);
    let used = k.cpu_cores.unwrap_or(0.0);
    let grew = k.load > base.load && at >= THROTTLED && at >= GREW * was;
    let full = quota > 0.0 && used / quota >= CPU_FULL;
    (grew || full).then(|| {
        format!(
            "server CPU {used:.2} cores used of its cgroup quota {quota:.2} ({:.0}%), held back by it {at:.2} s per s ({was:.2} at {})",
            100.0 * used / quota.max(f64::MIN_POSITIVE),
            base.load
        )
    })
}

/// The disk, when the server's threads waited for it at the knee `k`: half a thread and
/// more, `GREW` times the lowest step's, or a thread always (`DISK_FULL`) whatever the
/// lowest step's. The figures in words; None otherwise.
fn disk_verdict(k: &LoadEvidence, base: &LoadEvidence) -> Option<String> {
    let grew = |at: Option<f64>, was: Option<f64>| {
        let at = at?;
        (at >= DISK_FULL || at >= DISK_WAIT && at >= GREW * was.unwrap_or(0.0)).then_some(at)
    };
    let waited = grew(k.blkio_s_per_s, base.blkio_s_per_s)
        .map(|w| {
            format!(
                "block IO wait {:.2} s per s at {} grew to {w:.2}",
                base.blkio_s_per_s.unwrap_or(0.0),
                base.load
            )
        })
        .or_else(|| {
            grew(k.io_blocked, base.io_blocked).map(|b| {
                format!(
                    "threads waiting for the disk {:.2} at {} grew to {b:.2}",
                    base.io_blocked.unwrap_or(0.0),
                    base.load
                )
            })
        })?;
    let commit = k
        .raft_commit_ms
        .map_or(String::new(), |c| format!(", raft commit {c:.3} ms"));
    let writes = k.write_bytes_per_s.map_or(String::new(), |w| {
        format!(", writes {:.2} MiB/s", w / (1024.0 * 1024.0))
    });
    Some(format!("{waited}{commit}{writes}"))
}

/// Raft's commit path, when its commit time grew `GREW` times from the lowest step and is
/// at least `STORAGE_SHARE` of the server's time per request at the knee `k`.
fn raft_verdict(k: &LoadEvidence, base: &LoadEvidence) -> Option<String> {
    let (at, was) = (k.raft_commit_ms?, base.raft_commit_ms?);
    let grew = at >= GREW * was.max(0.001) && k.handle_ms.is_none_or(|h| at >= STORAGE_SHARE * h);
    grew.then(|| {
        format!(
            "raft commit time {was:.3} ms at {} grew to {at:.3} ms{}",
            base.load,
            k.fsm_pending
                .map_or(String::new(), |p| format!(", fsm_pending peak {p:.0}"))
        )
    })
}

/// The resource that gave out first at `steps[knee]` (the first step that broke the
/// objective, or the highest step when none did), against the lowest step's figures.
pub fn saturated(steps: &[LoadEvidence], knee: usize) -> Option<Saturated> {
    let k = steps.get(knee)?;
    let base = steps.iter().min_by_key(|s| s.load)?;
    let said = |resource, figures: String| {
        Some(Saturated {
            resource,
            load: k.load,
            figures,
        })
    };
    let cores = f64::from(k.cores.unwrap_or(0));
    if let Some(v) = quota_verdict(k, base) {
        return said(Some(Resource::CpuQuota), v);
    }
    // Under a quota, the server's CPU is full at its quota, not at its cores.
    let cores = match k.quota_cores {
        Some(q) if cores > 0.0 => q.min(cores),
        Some(q) => q,
        None => cores,
    };
    let server = fullness(k.cpu_cores, k.cpu_wait_cores, cores);
    let client = fullness(k.client_cpu_cores, k.client_wait_cores, k.client_cores);
    let server_words = cpu_words("server", k.cpu_cores, k.cpu_wait_cores, cores);
    let client_words = cpu_words(
        "vblast's own",
        k.client_cpu_cores,
        k.client_wait_cores,
        k.client_cores,
    );
    // The CPU that is fuller gave out first, when either is at its cores.
    match (server, client) {
        (Some(s), c) if s >= CPU_FULL && c.is_none_or(|c| s >= c) => {
            return said(Some(Resource::ServerCpu), server_words);
        }
        (_, Some(c)) if c >= CPU_FULL => return said(Some(Resource::Client), client_words),
        _ => {}
    }
    let cpu_room = server.is_none_or(|s| s < CPU_FULL);
    if let Some(v) = disk_verdict(k, base).filter(|_| cpu_room) {
        return said(Some(Resource::Disk), v);
    }
    if let Some(v) = raft_verdict(k, base).filter(|_| cpu_room) {
        return said(
            Some(Resource::RaftCommit),
            format!("{v} while {server_words}"),
        );
    }
    for (name, at, was) in [
        ("storage", k.storage_ms, base.storage_ms),
        ("barrier", k.barrier_ms, base.barrier_ms),
    ] {
        if let (Some(at), Some(was)) = (at, was)
            && cpu_room
            && at >= GREW * was.max(0.001)
            && k.handle_ms.is_none_or(|h| at >= STORAGE_SHARE * h)
        {
            return said(
                Some(Resource::Storage),
                format!(
                    "{name} time per request {was:.3} ms at {} grew to {at:.3} ms while {server_words}",
                    base.load
                ),
            );
        }
    }
    let below = steps
        .iter()
        .filter(|s| s.load < k.load)
        .max_by_key(|s| s.load);
    if let (Some(at), Some(was), Some(b)) = (k.in_flight, base.in_flight, below)
        && at >= GREW * was.max(1.0)
        && k.achieved <= FLAT * b.achieved
    {
        return said(
            Some(Resource::InFlight),
            format!(
                "requests in flight {was:.1} at {} piled up to {at:.1} while throughput stayed at {:.0} req/s ({:.0} at {})",
                base.load, k.achieved, b.achieved, b.load
            ),
        );
    }
    said(
        None,
        format!("no resource at its limit: {server_words}; {client_words}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(load: u64, achieved: f64) -> LoadEvidence {
        LoadEvidence {
            load,
            achieved,
            cpu_cores: Some(0.3),
            cpu_wait_cores: Some(0.0),
            cores: Some(2),
            quota_cores: None,
            throttled_s_per_s: None,
            storage_ms: Some(0.05),
            barrier_ms: Some(0.06),
            handle_ms: Some(0.2),
            in_flight: Some(1.0),
            client_cpu_cores: Some(0.2),
            client_wait_cores: Some(0.0),
            client_cores: 2.0,
            ..LoadEvidence::default()
        }
    }

    /// Issue 39 item 2: a raft node whose threads wait for the disk at the knee is disk
    /// bound; its commit time growing without that is raft's commit path.
    #[test]
    fn waiting_for_the_disk_and_raft_commits_are_named() {
        let raft = |load, achieved, commit, blocked| LoadEvidence {
            raft_commit_ms: Some(commit),
            io_blocked: Some(blocked),
            storage_ms: Some(commit),
            handle_ms: Some(commit * 1.5),
            write_bytes_per_s: Some(2.0 * 1024.0 * 1024.0),
            ..step(load, achieved)
        };
        let disk = [raft(10, 10.0, 2.0, 0.0), raft(40, 22.0, 40.0, 1.2)];
        let v = saturated(&disk, 1).expect("verdict");
        assert_eq!(v.resource, Some(Resource::Disk), "{}", v.figures);
        assert!(v.figures.contains("grew to 1.20"), "{}", v.figures);
        assert!(v.figures.contains("writes 2.00 MiB/s"), "{}", v.figures);
        let commit = [raft(10, 10.0, 2.0, 0.0), raft(40, 22.0, 40.0, 0.1)];
        let v = saturated(&commit, 1).expect("verdict");
        assert_eq!(v.resource, Some(Resource::RaftCommit), "{}", v.figures);
        // Block IO wait, when counted, says it in seconds per second.
        let mut k = raft(40, 22.0, 40.0, 0.0);
        k.blkio_s_per_s = Some(0.8);
        let v = saturated(&[raft(10, 10.0, 2.0, 0.0), k], 1).expect("verdict");
        assert!(v.figures.starts_with("block IO wait"), "{}", v.figures);
        // Behind a throttle the lowest step already waits most of the time: a thread
        // always waiting at the knee is the disk even though it did not double, and it is
        // named before raft's commit time, which grew because of it.
        let throttled = [raft(1, 1.6, 255.0, 0.78), raft(8, 2.7, 600.0, 1.27)];
        let v = saturated(&throttled, 1).expect("verdict");
        assert_eq!(v.resource, Some(Resource::Disk), "{}", v.figures);
        assert!(
            v.figures.contains("0.78 at 1 grew to 1.27"),
            "{}",
            v.figures
        );
        // Below a thread always waiting and not doubled: not the disk, raft's commit.
        let busy = [raft(1, 1.6, 255.0, 0.6), raft(8, 2.7, 600.0, 0.9)];
        assert_eq!(resource(&busy, 1), Some(Resource::RaftCommit));
        // A server at its cores is CPU bound before its disk.
        let mut k = raft(40, 22.0, 40.0, 1.2);
        k.cpu_cores = Some(1.9);
        assert_eq!(
            resource(&[raft(10, 10.0, 2.0, 0.0), k], 1),
            Some(Resource::ServerCpu)
        );
    }

    fn resource(steps: &[LoadEvidence], knee: usize) -> Option<Resource> {
        saturated(steps, knee).and_then(|s| s.resource)
    }

    #[test]
    fn a_server_at_its_cores_is_cpu_bound() {
        let mut knee = step(400, 380.0);
        knee.cpu_cores = Some(0.7);
        knee.cpu_wait_cores = Some(0.25);
        knee.cores = Some(1);
        let steps = [step(100, 100.0), step(200, 200.0), knee];
        let v = saturated(&steps, 2).expect("verdict");
        assert_eq!(v.resource, Some(Resource::ServerCpu));
        assert_eq!(v.load, 400);
        assert!(
            v.figures
                .contains("0.70 cores used + 0.25 waited for, of 1"),
            "{}",
            v.figures
        );
    }

    /// Issue 36 item 16: a server held by its cgroup's quota (half a core of two, 0.35
    /// used) is CPU-bound by its quota: its throttled time grew at the knee.
    #[test]
    fn a_quota_throttling_more_at_the_knee_is_the_cpu_quota() {
        let quota = |load, achieved, used, throttled| LoadEvidence {
            quota_cores: Some(0.5),
            cpu_cores: Some(used),
            throttled_s_per_s: Some(throttled),
            ..step(load, achieved)
        };
        let steps = [quota(100, 100.0, 0.05, 0.0), quota(1320, 1100.0, 0.35, 0.4)];
        let v = saturated(&steps, 1).expect("verdict");
        assert_eq!(v.resource, Some(Resource::CpuQuota), "{}", v.figures);
        assert!(v.figures.contains("quota 0.50"), "{}", v.figures);
        // Not throttled more than at the lowest step, and room under the quota: not it.
        let steps = [quota(100, 100.0, 0.05, 0.0), quota(1320, 1100.0, 0.2, 0.01)];
        assert_ne!(resource(&steps, 1), Some(Resource::CpuQuota));
        // Without a quota (none read), the same figures are not a quota's.
        let mut k = step(1320, 1100.0);
        k.cpu_cores = Some(0.35);
        k.throttled_s_per_s = Some(0.4);
        assert_eq!(resource(&[step(100, 100.0), k], 1), None);
        // Waiting for a CPU under a half-core quota: full at the quota, said as 0.50.
        let mut k = quota(210, 200.0, 0.04, 0.0);
        k.cpu_wait_cores = Some(1.04);
        let v = saturated(&[quota(100, 100.0, 0.05, 0.0), k], 1).expect("verdict");
        assert_eq!(v.resource, Some(Resource::ServerCpu), "{}", v.figures);
        assert!(v.figures.ends_with("waited for, of 0.50"), "{}", v.figures);
    }

    #[test]
    fn the_fuller_cpu_gave_out_first() {
        let mut knee = step(400, 380.0);
        knee.cpu_cores = Some(1.8);
        knee.client_cpu_cores = Some(1.95);
        assert_eq!(
            resource(&[step(100, 100.0), knee.clone()], 1),
            Some(Resource::Client)
        );
        knee.client_cpu_cores = Some(0.5);
        assert_eq!(
            resource(&[step(100, 100.0), knee], 1),
            Some(Resource::ServerCpu)
        );
    }

    #[test]
    fn storage_time_growing_with_cpu_room_is_storage_bound() {
        let mut knee = step(400, 300.0);
        knee.storage_ms = Some(4.0);
        knee.barrier_ms = Some(4.1);
        knee.handle_ms = Some(4.5);
        let v = saturated(&[step(100, 100.0), knee], 1).expect("verdict");
        assert_eq!(v.resource, Some(Resource::Storage));
        assert!(
            v.figures
                .starts_with("storage time per request 0.050 ms at 100 grew to 4.000 ms"),
            "{}",
            v.figures
        );
        // A server without a storage timer: the barrier's time says it.
        let mut knee = step(400, 300.0);
        knee.storage_ms = None;
        knee.barrier_ms = Some(1.0);
        knee.handle_ms = Some(1.3);
        assert_eq!(
            resource(&[step(100, 100.0), knee], 1),
            Some(Resource::Storage)
        );
    }

    /// Storage time that doubled from next to nothing is not what gave out: a kv-read
    /// sweep on a cached storage (OpenBao's physical cache) spent 0.000 ms per request in
    /// storage at its lowest step and a few misses' worth at the knee.
    #[test]
    fn a_small_storage_time_that_grew_is_not_storage_bound() {
        let mut base = step(100, 100.0);
        base.storage_ms = Some(0.0);
        base.barrier_ms = Some(0.01);
        let mut knee = step(400, 300.0);
        knee.storage_ms = Some(0.004);
        knee.barrier_ms = Some(0.03);
        knee.handle_ms = Some(0.3);
        assert_eq!(resource(&[base.clone(), knee.clone()], 1), None);
        // The same growth being most of each request's time is storage.
        knee.handle_ms = Some(0.012);
        assert_eq!(resource(&[base, knee], 1), Some(Resource::Storage));
    }

    #[test]
    fn in_flight_piling_up_with_flat_throughput() {
        let mut knee = step(400, 205.0);
        knee.in_flight = Some(30.0);
        let steps = [step(100, 100.0), step(200, 200.0), knee.clone()];
        assert_eq!(resource(&steps, 2), Some(Resource::InFlight));
        // Throughput still rising: not piling up.
        knee.achieved = 390.0;
        let steps = [step(100, 100.0), step(200, 200.0), knee];
        assert_eq!(resource(&steps, 2), None);
    }

    #[test]
    fn nothing_at_its_limit_is_said_so() {
        let steps = [step(100, 100.0), step(200, 200.0)];
        let v = saturated(&steps, 1).expect("verdict");
        assert_eq!(v.resource, None);
        assert!(
            v.figures.starts_with("no resource at its limit"),
            "{}",
            v.figures
        );
        // Steps without server figures: no CPU reading, still a line.
        let bare = LoadEvidence {
            load: 5,
            ..LoadEvidence::default()
        };
        assert_eq!(resource(&[bare], 0), None);
        assert!(saturated(&[], 0).is_none());
    }
}
