//! The workload file (`vblast profile --workload W.json`, issue 37): the recorded mix in
//! vblast's operation names with their shares (the operations vblast cannot run listed
//! apart, each with why), the rate curve, the fixture sizes (distinct paths per mount) and
//! the namespaces; versioned (`workload_version`), its layout in
//! docs/schema/workload.schema.json. Written from a `Profile`, read back and checked in
//! this one place (`read`), and turned into what a run takes (`WorkloadFile::plan`): a
//! weighted `--op` mix and a rate `Schedule` of steps, one per bucket of the curve, with
//! `--speed` and `--scale` applied; arrivals inside a bucket are spread evenly by the
//! schedule, never sent as a burst at its start.
//!
//! The curve's bucket: 1 s when the log spans at most `MAX_BUCKETS` seconds; otherwise
//! the fewest whole minutes per bucket that keep the curve within `MAX_BUCKETS` buckets (one
//! minute up to 16 h 40 min of log, two for a day).

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::schedule::{self, Schedule};
use crate::error::{Cause, Error};

use super::figures::Profile;
use super::kv_mounts::{EntryCounts, KvMount, KvMounts, MixEntry};
use std::collections::HashMap;

/// The version this vblast writes and reads.
pub const WORKLOAD_VERSION: u32 = 1;
/// Most buckets in a curve: one schedule step each (`schedule::MAX_STEPS`).
pub const MAX_BUCKETS: usize = schedule::MAX_STEPS;
/// How the bucket is chosen, as the file says it.
pub const BUCKET_RULE: &str = "1 s buckets when the log spans at most 1000 s; otherwise the fewest whole minutes per bucket that keep the curve within 1000 buckets";
/// Why a mapped operation is listed apart.
const NO_SUCH_OP: &str = "vblast has no such operation (vblast --list-ops): not run";

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    pub workload_version: u32,
    pub source: WorkloadSource,
    /// The operations vblast runs, most requests first; shares of all requests.
    pub mix: Vec<MixShare>,
    /// Mapped operations vblast cannot run, and the requests that mapped to none.
    pub not_run: NotRun,
    pub rate: WorkloadCurve,
    /// Distinct paths per mount: how many secrets a run seeds.
    pub fixtures: Vec<FixtureSize>,
    pub namespaces: Vec<NamespaceShare>,
    /// The log's callers (absent from files written before it: such a run has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callers: Option<WorkloadCallers>,
}

/// The callers of the mapped requests: one per recorded accessor and namespace, never
/// named, up to `bound`; the requests without a token apart, per namespace.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadCallers {
    /// The most callers kept apart (`profile::tally::MAX_CALLERS`).
    pub bound: u64,
    /// Requests of callers past the bound, counted with their namespace's requests
    /// without a token.
    pub folded_requests: u64,
    /// In the order the log first shows them.
    pub callers: Vec<CallerShare>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CallerShare {
    /// "root" or the namespace's path (`team-a/`).
    pub namespace: String,
    /// False: the requests the log shows without a token (logins), sent with the run's.
    pub token: bool,
    pub requests: u64,
    /// Of the mapped requests.
    pub share: f64,
    /// Its requests per operation.
    pub ops: Vec<CallerOp>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CallerOp {
    pub name: String,
    pub requests: u64,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSource {
    /// The logs profiled, in the order read.
    pub files: Vec<String>,
    pub first: Option<String>,
    pub last: Option<String>,
    /// Every request of the logs, run or not.
    pub requests: u64,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MixShare {
    pub name: String,
    pub requests: u64,
    /// Of all requests (`source.requests`).
    pub share: f64,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NotRun {
    pub note: String,
    pub operations: Vec<NotRunOp>,
    /// Requests no operation name was found for (`vblast profile` shows their shapes).
    pub unmapped_requests: u64,
    pub unmapped_share: f64,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NotRunOp {
    pub name: String,
    pub requests: u64,
    pub share: f64,
    pub why: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadCurve {
    /// Seconds per bucket.
    pub step_s: u64,
    /// How `step_s` was chosen (`BUCKET_RULE`).
    pub rule: String,
    /// The instant the first bucket starts (RFC 3339).
    pub start: Option<String>,
    /// Requests per bucket (all of them, run or not), from `start` on.
    pub requests: Vec<u64>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FixtureSize {
    pub namespace: String,
    pub mount: String,
    pub mount_type: String,
    pub distinct_paths: u64,
    pub estimated: bool,
    /// A kv mount's version (None: another engine). Absent from files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_version: Option<u8>,
    /// The mount's requests per operation: each kv mount's requests go to a kv fixture of
    /// its own. Absent from files written before it (their kv mounts share one size per
    /// namespace, the largest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<Vec<CallerOp>>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NamespaceShare {
    pub namespace: String,
    pub requests: u64,
}

/// The bucket for a curve of `len` buckets of `step_s` seconds (`BUCKET_RULE`): a whole
/// multiple of `step_s`.
pub fn bucket_for(step_s: u64, len: usize) -> u64 {
    let step_s = step_s.max(1);
    let span = step_s.saturating_mul(len as u64);
    let want = if span <= MAX_BUCKETS as u64 {
        1
    } else {
        60 * span.div_ceil(60 * MAX_BUCKETS as u64)
    };
    want.max(step_s).div_ceil(step_s) * step_s
}

/// `curve` of `step_s` buckets regrouped into buckets of `bucket` seconds (a multiple).
pub fn regroup(curve: &[u64], step_s: u64, bucket: u64) -> Vec<u64> {
    let k = (bucket / step_s.max(1)).max(1) as usize;
    curve.chunks(k).map(|c| c.iter().sum()).collect()
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Whether `listed` operations (and kv mounts) fit a run: a send carries its operation
/// in 16 bits (`Instants::ops`).
fn fits_a_run(listed: usize) -> Result<(), Cause> {
    if listed > usize::from(u16::MAX) {
        return Err(Cause::Said(format!(
            "the workload lists {listed} operations and kv mounts to run; at most {} fit a run",
            u16::MAX
        )));
    }
    Ok(())
}

impl WorkloadFile {
    /// The workload file of a profile.
    pub fn from_profile(p: &Profile) -> WorkloadFile {
        let (run, apart): (Vec<_>, Vec<_>) = p.operations.iter().partition(|o| o.vblast_op);
        let bucket = bucket_for(p.rate.step_s, p.rate.curve.len());
        WorkloadFile {
            workload_version: WORKLOAD_VERSION,
            source: WorkloadSource {
                files: p.files.clone(),
                first: p.span.first.clone(),
                last: p.span.last.clone(),
                requests: p.requests,
            },
            mix: run
                .iter()
                .map(|o| MixShare {
                    name: o.name.clone(),
                    requests: o.requests,
                    share: share(o.requests, p.requests),
                })
                .collect(),
            not_run: NotRun {
                note: "not run by `vblast run --workload`: the rate of the operations run is the curve times their share, so each keeps its recorded rate".into(),
                operations: apart
                    .iter()
                    .map(|o| NotRunOp {
                        name: o.name.clone(),
                        requests: o.requests,
                        share: share(o.requests, p.requests),
                        why: NO_SUCH_OP.into(),
                    })
                    .collect(),
                unmapped_requests: p.unmapped.requests,
                unmapped_share: p.unmapped.share,
            },
            rate: WorkloadCurve {
                step_s: bucket,
                rule: BUCKET_RULE.into(),
                start: p.rate.start.clone(),
                requests: regroup(&p.rate.curve, p.rate.step_s, bucket),
            },
            fixtures: p
                .mounts
                .iter()
                .map(|m| FixtureSize {
                    namespace: m.namespace.clone(),
                    mount: m.mount.clone(),
                    mount_type: m.mount_type.clone(),
                    distinct_paths: m.distinct_paths,
                    estimated: m.estimated,
                    kv_version: m.kv_version,
                    operations: Some(
                        m.operations
                            .iter()
                            .map(|o| CallerOp {
                                name: o.name.clone(),
                                requests: o.requests,
                            })
                            .collect(),
                    ),
                })
                .collect(),
            namespaces: p
                .namespaces
                .iter()
                .map(|n| NamespaceShare {
                    namespace: n.namespace.clone(),
                    requests: n.requests,
                })
                .collect(),
            callers: Some(callers_of(&p.callers)),
        }
    }

    /// Saves the file (pretty JSON).
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default() + "\n";
        std::fs::write(path, text).map_err(|e| {
            Error::output(Cause::io(
                format!("cannot write the workload file {}", path.display()),
                e,
            ))
        })
    }
}

/// A profile's callers as the file writes them.
fn callers_of(c: &super::figures::CallerProfile) -> WorkloadCallers {
    let total: u64 = c
        .callers
        .iter()
        .flat_map(|c| c.ops.iter().map(|o| o.1))
        .sum();
    WorkloadCallers {
        bound: super::tally::MAX_CALLERS as u64,
        folded_requests: c.folded_requests,
        callers: c
            .callers
            .iter()
            .map(|c| {
                let requests = c.ops.iter().map(|o| o.1).sum();
                CallerShare {
                    namespace: c.namespace.clone(),
                    token: c.token,
                    requests,
                    share: share(requests, total),
                    ops: c
                        .ops
                        .iter()
                        .map(|(name, requests)| CallerOp {
                            name: name.clone(),
                            requests: *requests,
                        })
                        .collect(),
                }
            })
            .collect(),
    }
}

/// Why a workload file is refused.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("cannot read the workload file {path}: {why}")]
    Unreadable { path: String, why: String },
    #[error("the workload file {path} is not a workload: {why}")]
    Malformed { path: String, why: String },
    #[error(
        "the workload file {path} is version {version}: this vblast reads version {WORKLOAD_VERSION} (write it again with this vblast's `vblast profile --workload`)"
    )]
    Version { path: String, version: String },
    #[error("the workload file {path}: {why}")]
    Refused { path: String, why: String },
}

impl From<WorkloadError> for Cause {
    fn from(e: WorkloadError) -> Cause {
        Cause::Said(e.to_string())
    }
}

/// Reads and checks a workload file: its version first, then its layout, then what a run
/// needs of it (a curve of at most `MAX_BUCKETS` buckets with requests in it, counts that
/// add up).
pub fn read(path: &Path) -> Result<WorkloadFile, WorkloadError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| WorkloadError::Unreadable {
        path: shown.clone(),
        why: crate::error::io_text(&e),
    })?;
    parse(&text, &shown)
}

/// `read`'s checks on a file's text; `path` names it in messages.
pub fn parse(text: &str, path: &str) -> Result<WorkloadFile, WorkloadError> {
    let malformed = |why: String| WorkloadError::Malformed {
        path: path.into(),
        why,
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| malformed(format!("not JSON ({e})")))?;
    match value.get("workload_version") {
        None => return Err(malformed("it has no workload_version".into())),
        Some(v) if v.as_u64() == Some(u64::from(WORKLOAD_VERSION)) => {}
        Some(v) => {
            return Err(WorkloadError::Version {
                path: path.into(),
                version: v.to_string(),
            });
        }
    }
    let file: WorkloadFile = serde_json::from_value(value).map_err(|e| malformed(e.to_string()))?;
    check(&file).map_err(|why| WorkloadError::Refused {
        path: path.into(),
        why,
    })?;
    Ok(file)
}

/// What a run needs of a file that parsed.
fn check(f: &WorkloadFile) -> Result<(), String> {
    let r = &f.rate;
    if r.step_s == 0 {
        return Err("rate.step_s is 0: a bucket lasts 1 s or more".into());
    }
    if r.requests.len() > MAX_BUCKETS {
        return Err(format!(
            "its curve has {} buckets, more than vblast paces (at most {MAX_BUCKETS})",
            r.requests.len()
        ));
    }
    let curve: u64 = r.requests.iter().sum();
    if curve == 0 {
        return Err("its rate curve holds no request".into());
    }
    if curve != f.source.requests {
        return Err(format!(
            "its rate curve holds {curve} requests, source.requests says {}",
            f.source.requests
        ));
    }
    if let Some(m) = f.mix.iter().find(|m| m.requests == 0) {
        return Err(format!("operation '{}' has no request in the mix", m.name));
    }
    let run: u64 = f.mix.iter().map(|m| m.requests).sum();
    if run > f.source.requests {
        return Err(format!(
            "its mix holds {run} requests, more than the {} of the log",
            f.source.requests
        ));
    }
    Ok(())
}

/// A positive factor (`--speed`, `--scale`), read once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Factor(f64);

impl Factor {
    pub const ONE: Factor = Factor(1.0);

    /// `text` as a factor above 0; `flag` names it in the message.
    pub fn parse(flag: &str, text: &str) -> Result<Factor, Cause> {
        let v: f64 = text.trim().parse().map_err(|_| {
            Cause::Said(format!(
                "{flag} {text}: give a number above 0 (e.g. {flag} 2)"
            ))
        })?;
        Factor::new(v).ok_or_else(|| {
            Cause::Said(format!(
                "{flag} {text}: must be above 0 (and finite): {}",
                if flag == "--speed" {
                    "--speed 10 runs ten seconds of the curve in one"
                } else {
                    "--scale 2 is twice the recorded rate at every instant"
                }
            ))
        })
    }

    pub fn new(v: f64) -> Option<Factor> {
        (v.is_finite() && v > 0.0).then_some(Factor(v))
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

/// A run of a workload file, as the run takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRun {
    /// The mix as `--op` writes it: `kv-read:300,kv-write:100`.
    pub mix: String,
    /// One step per bucket, trailing empty buckets left out.
    pub schedule: Schedule,
    /// The curve's length at `--speed`.
    pub duration: Duration,
    /// Requests the schedule places in `duration`.
    pub expected: u64,
    /// Kv mounts' largest count of distinct paths: the secrets to seed (None: no kv mount).
    pub secrets: Option<u64>,
    /// Per namespace of the log ("root", `team-a/`): its kv mounts' largest count of
    /// distinct paths, the secrets its own fixtures seed.
    pub secrets_in: Vec<(String, u64)>,
    /// The mix split by recorded kv mount (`KvMounts::entries`), each entry with its
    /// recorded requests, when the file has each mount's operations (None: a file
    /// written before them, whose kv fixtures take `secrets` and `secrets_in`).
    pub entries: Option<Vec<(MixEntry, u64)>>,
    /// The file's kv mounts (empty without `entries`).
    pub kv: KvMounts,
    /// The recorded callers, when the file has them and some sent with a token or in a
    /// namespace other than the root (None: every request goes with the run's token).
    /// Their operations index `entries` when there are, the mix otherwise.
    pub callers: Option<RunCallers>,
    /// What is not run, and what the run does not copy (namespaces), one line each.
    pub notes: Vec<String>,
}

impl RecordedRun {
    /// The entries of the mix the run sends (`entries`, else the mix's operations): the
    /// stride of a send's (session, operation) code.
    pub fn mix_len(&self) -> usize {
        self.entries
            .as_ref()
            .map_or_else(|| self.mix.split(',').count(), Vec::len)
    }
}

/// The callers of a run of a workload file: its sessions, and how many requests each
/// sent of each operation run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunCallers {
    /// Session c + 1 is `sessions[c]`: its namespace (None: the root) and whether it
    /// has a token of its own (false: the run's, in that namespace). Session 0 is the
    /// run's own token and namespace.
    pub sessions: Vec<(Option<String>, bool)>,
    /// (session, operation's place in the mix, recorded requests).
    pub pairs: Vec<(u32, u16, u64)>,
    /// Requests of callers past the file's bound, sent by their namespace's requests
    /// without a token.
    pub folded_requests: u64,
}

/// The most sends a run with callers places one by one (10 bytes each): a longer run
/// goes without sessions, with a note.
pub const MAX_SENDS: u64 = 20_000_000;

/// The requests of `e`'s operation that `namespace`'s recorded mount of `e` shows (0:
/// not a kv entry, or a mount the namespace did not show).
fn recorded_on(kv: &KvMounts, namespace: &str, e: &MixEntry) -> u64 {
    let Some(path) = &e.mount else { return 0 };
    kv.mounts
        .iter()
        .filter(|m| m.namespace == namespace && &m.mount == path)
        .flat_map(|m| m.ops.iter())
        .filter(|o| o.0 == e.op)
        .map(|o| o.1)
        .sum()
}

impl RunCallers {
    /// The file's callers for a mix run of `run` (its entries in the mix's order: an
    /// operation, on a recorded kv mount for a kv one split by mount, `kv`'s); None when
    /// every request went with no token in the root namespace. A caller's requests of a
    /// kv operation split by mount are dealt to the mounts of its namespace in turn, each
    /// up to the requests the mount recorded of it (what is left to its first), so that
    /// each mount's count and each caller's are the file's.
    fn of(c: &WorkloadCallers, run: &[MixEntry], kv: &KvMounts) -> Option<RunCallers> {
        let mut out = RunCallers {
            sessions: Vec::new(),
            pairs: Vec::new(),
            folded_requests: c.folded_requests,
        };
        let mut left: HashMap<(String, usize), u64> = HashMap::new();
        for caller in &c.callers {
            let namespace = (caller.namespace != "root").then(|| caller.namespace.clone());
            let mut ops: Vec<(u16, u64)> = Vec::new();
            for o in caller.ops.iter().filter(|o| o.requests > 0) {
                let at: Vec<usize> = (0..run.len()).filter(|&i| run[i].op == o.name).collect();
                let Some(&first) = at.first() else { continue };
                let mut n = o.requests;
                if at.len() > 1 {
                    for &i in &at {
                        let key = (caller.namespace.clone(), i);
                        let cap = left
                            .entry(key)
                            .or_insert_with(|| recorded_on(kv, &caller.namespace, &run[i]));
                        let take = n.min(*cap);
                        *cap -= take;
                        n -= take;
                        if take > 0 {
                            ops.push((i as u16, take));
                        }
                    }
                }
                if n > 0 {
                    ops.push((first as u16, n));
                }
            }
            if ops.is_empty() {
                continue;
            }
            // A send's session and operation share 16 bits (`Instants::ops`).
            let room = ((usize::from(u16::MAX) + 1) / run.len().max(1)).saturating_sub(1);
            let session = if namespace.is_none() && !caller.token {
                0
            } else if out.sessions.len() >= room {
                out.folded_requests += ops.iter().map(|o| o.1).sum::<u64>();
                0
            } else {
                out.sessions.push((namespace, caller.token));
                out.sessions.len() as u32
            };
            out.pairs
                .extend(ops.into_iter().map(|(op, n)| (session, op, n)));
        }
        (!out.sessions.is_empty()).then_some(out)
    }

    /// The recorded (session, operation) pairs as the engine takes them
    /// (`session * mix + op`), each as many times as its recorded requests (divided down
    /// alike to at most a million cards), shuffled once with a fixed seed (the same run
    /// sends the same).
    pub fn deck(&self, mix: usize) -> Vec<u16> {
        let total: u64 = self.pairs.iter().map(|p| p.2).sum();
        let div = total.div_ceil(1_000_000).max(1);
        let mut deck: Vec<u16> = Vec::new();
        for p in &self.pairs {
            let code = (p.0 as usize * mix + usize::from(p.1)) as u16;
            deck.extend(std::iter::repeat_n(code, (p.2 / div).max(1) as usize));
        }
        let mut rng = crate::template::Rng::new(37);
        for i in (1..deck.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            deck.swap(i, j);
        }
        deck
    }

    /// Each of `sends` sends' (session, operation): the deck dealt in turn, again from
    /// its top when it runs out.
    pub fn sends(&self, sends: u64, mix: usize) -> Vec<u16> {
        deal(&self.deck(mix), sends)
    }
}

/// `sends` cards of `deck`, in turn (0 for an empty deck).
pub fn deal(deck: &[u16], sends: u64) -> Vec<u16> {
    let len = deck.len().max(1) as u64;
    (0..sends)
        .map(|g| deck.get((g % len) as usize).copied().unwrap_or(0))
        .collect()
}

/// The intended instants (ns from the start) of a schedule of steps up to `until`, at
/// most `max`: as the engine places them (`Schedule::offset_of`), walked once.
pub fn step_instants(steps: &[(f64, Duration)], until: Duration, max: u64) -> Vec<u64> {
    let until = until.as_secs_f64();
    let mut out: Vec<u64> = Vec::new();
    let mut start = 0.0;
    let mut before = 0.0;
    for (i, &(rate, len)) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let len = if last {
            f64::INFINITY
        } else {
            len.as_secs_f64()
        };
        if rate > 0.0 {
            loop {
                let g = out.len() as f64;
                let dt = if g == 0.0 { 0.0 } else { (g - before) / rate };
                if dt < 0.0 || dt > len || start + dt >= until || out.len() as u64 >= max {
                    break;
                }
                out.push(((start + dt) * 1e9) as u64);
            }
        }
        if !last {
            before += rate * len;
            start += len;
        }
        if start >= until || out.len() as u64 >= max {
            break;
        }
    }
    out
}

/// The rate schedule of a curve (pure): bucket i of `step_s` seconds holding `counts[i]`
/// requests becomes a step of `step_s / speed` seconds at `counts[i] * factor * speed /
/// step_s` req/s, so that each bucket sends `counts[i] * factor` requests spread evenly over
/// it. Trailing empty buckets are left out (the last step's rate is held after it); None
/// when no bucket holds a request.
pub fn curve_schedule(counts: &[u64], step_s: u64, factor: f64, speed: f64) -> Option<Schedule> {
    let last = counts.iter().rposition(|&c| c > 0)?;
    let step = Duration::from_secs_f64(step_s as f64 / speed);
    let per = factor * speed / step_s as f64;
    Some(Schedule::Steps(
        counts[..=last]
            .iter()
            .map(|&c| (c as f64 * per, step))
            .collect(),
    ))
}

/// A curve's schedule repeated until it covers `cover` (a sweep's step: warm-up and
/// measurement) or holds `MAX_BUCKETS` steps; a schedule other than steps as it is.
pub fn repeated(schedule: &Schedule, cover: Duration) -> Schedule {
    let Schedule::Steps(steps) = schedule else {
        return schedule.clone();
    };
    let mut out = steps.clone();
    let mut span = schedule.span();
    while span < cover && out.len() + steps.len() <= MAX_BUCKETS && !steps.is_empty() {
        out.extend_from_slice(steps);
        span += schedule.span();
    }
    Schedule::Steps(out)
}

/// Weights for `--op` from request counts: the counts, divided down when the largest is
/// over a million (a weight is a u32; the picker's share is unchanged within 1e-6).
fn weights(counts: &[u64]) -> Vec<u64> {
    let max = counts.iter().copied().max().unwrap_or(1);
    let div = max.div_ceil(1_000_000).max(1);
    counts.iter().map(|c| (c / div).max(1)).collect()
}

impl WorkloadFile {
    /// The file's kv mounts, each with its requests per operation; None for a file
    /// written before fixtures had them.
    fn kv_mounts(&self) -> Option<KvMounts> {
        if self.fixtures.iter().any(|f| f.operations.is_none()) {
            return None;
        }
        Some(KvMounts {
            mounts: self
                .fixtures
                .iter()
                .filter_map(|f| {
                    KvMount::recorded(
                        &f.namespace,
                        &f.mount,
                        &f.mount_type,
                        f.kv_version,
                        f.distinct_paths,
                        (f.operations.iter().flatten()).map(|o| (o.name.as_str(), o.requests)),
                    )
                })
                .collect(),
        })
    }

    /// The mix `run` split by recorded kv mount (None: a file written before mounts had
    /// their operations), the file's kv mounts, and its callers over that mix.
    fn entries_and_callers(
        &self,
        run: &[&MixShare],
    ) -> (Option<EntryCounts>, KvMounts, Option<RunCallers>) {
        let kv = self.kv_mounts();
        let ops: Vec<(String, u64)> = run.iter().map(|m| (m.name.clone(), m.requests)).collect();
        let entries = kv.as_ref().map(|kv| kv.entries(&ops));
        let kv = kv.unwrap_or_default();
        let listed: Vec<MixEntry> = match &entries {
            Some(e) => e.iter().map(|e| e.0.clone()).collect(),
            None => ops
                .iter()
                .map(|o| MixEntry {
                    op: o.0.clone(),
                    mount: None,
                })
                .collect(),
        };
        let callers = self
            .callers
            .as_ref()
            .and_then(|c| RunCallers::of(c, &listed, &kv));
        (entries, kv, callers)
    }

    /// The kv mounts' largest count of distinct paths, overall (None: no kv mount) and
    /// per namespace.
    fn seeds(&self) -> (Option<u64>, Vec<(String, u64)>) {
        let kv = || self.fixtures.iter().filter(|f| f.mount_type == "kv");
        let secrets = kv().map(|f| f.distinct_paths).max().filter(|n| *n > 0);
        let mut secrets_in: Vec<(String, u64)> = Vec::new();
        for f in kv() {
            match secrets_in.iter_mut().find(|s| s.0 == f.namespace) {
                Some(s) => s.1 = s.1.max(f.distinct_paths),
                None => secrets_in.push((f.namespace.clone(), f.distinct_paths)),
            }
        }
        (secrets, secrets_in)
    }

    /// What `vblast run --workload` runs at `speed` and `scale`: the operations of the mix
    /// that vblast has (`known`), at the curve's rate times their share times `scale`, for
    /// the curve's length divided by `speed`. Operations it does not have are named in the
    /// notes; none left is an error.
    pub fn plan(
        &self,
        speed: Factor,
        scale: Factor,
        known: impl Fn(&str) -> bool,
    ) -> Result<RecordedRun, Cause> {
        let (run, unknown): (Vec<&MixShare>, Vec<&MixShare>) =
            self.mix.iter().partition(|m| known(&m.name));
        let mut notes = Vec::new();
        for m in &unknown {
            notes.push(format!(
                "operation '{}' of the workload ({} requests, {:.1}%) is not run: {NO_SUCH_OP}",
                m.name,
                m.requests,
                m.share * 100.0
            ));
        }
        let apart: Vec<&NotRunOp> = self.not_run.operations.iter().collect();
        if !apart.is_empty() || self.not_run.unmapped_requests > 0 {
            let names: Vec<String> = apart
                .iter()
                .map(|o| format!("{} ({:.1}%)", o.name, o.share * 100.0))
                .collect();
            let unmapped = (self.not_run.unmapped_requests > 0).then(|| {
                format!(
                    "unmapped requests ({:.1}%)",
                    self.not_run.unmapped_share * 100.0
                )
            });
            let all: Vec<String> = names.into_iter().chain(unmapped).collect();
            notes.push(format!(
                "not run, as the workload file lists apart: {}",
                all.join(", ")
            ));
        }
        if run.is_empty() {
            return Err(Cause::Said(format!(
                "no operation of the workload is one vblast runs{}",
                if notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", notes.join("; "))
                }
            )));
        }
        let counts: Vec<u64> = run.iter().map(|m| m.requests).collect();
        let run_requests: u64 = counts.iter().sum();
        let mix = run
            .iter()
            .zip(weights(&counts))
            .map(|(m, w)| format!("{}:{w}", m.name))
            .collect::<Vec<_>>()
            .join(",");
        let factor = share(run_requests, self.source.requests) * scale.get();
        let schedule =
            curve_schedule(&self.rate.requests, self.rate.step_s, factor, speed.get())
                .ok_or_else(|| Cause::Said("the workload's rate curve holds no request".into()))?;
        schedule.validate().map_err(|e| {
            Cause::Said(format!(
                "the workload's curve at --scale {} --speed {}: {e}",
                scale.get(),
                speed.get()
            ))
        })?;
        let duration = schedule.span();
        let expected = schedule.requests_before(duration);
        let (secrets, secrets_in) = self.seeds();
        let (entries, kv, callers) = self.entries_and_callers(&run);
        fits_a_run(entries.as_ref().map_or(run.len(), Vec::len))?;
        let named: Vec<&str> = self
            .namespaces
            .iter()
            .map(|n| n.namespace.as_str())
            .filter(|n| *n != "root")
            .collect();
        if callers.is_none() && !named.is_empty() {
            notes.push(format!(
                "the log's requests were in namespaces {} too: this run sends them all to --namespace (or the root)",
                named.join(", ")
            ));
        }
        Ok(RecordedRun {
            mix,
            schedule,
            duration,
            expected,
            secrets,
            secrets_in,
            entries,
            kv,
            callers,
            notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mix past what 16 bits name is one message, not operations that wrap.
    #[test]
    fn a_mix_past_sixteen_bits_is_refused() {
        assert!(fits_a_run(usize::from(u16::MAX)).is_ok());
        let Err(Cause::Said(m)) = fits_a_run(usize::from(u16::MAX) + 1) else {
            panic!("taken")
        };
        assert!(m.contains("65536 operations"), "{m}");
    }

    fn entries(names: &[&str]) -> Vec<MixEntry> {
        names
            .iter()
            .map(|n| MixEntry {
                op: n.to_string(),
                mount: None,
            })
            .collect()
    }

    fn sample() -> WorkloadFile {
        WorkloadFile {
            workload_version: WORKLOAD_VERSION,
            source: WorkloadSource {
                files: vec!["a.log".into()],
                first: None,
                last: None,
                requests: 100,
            },
            mix: vec![
                MixShare {
                    name: "kv-read".into(),
                    requests: 60,
                    share: 0.6,
                },
                MixShare {
                    name: "kv-write".into(),
                    requests: 20,
                    share: 0.2,
                },
            ],
            not_run: NotRun {
                note: String::new(),
                operations: vec![NotRunOp {
                    name: "sys-other".into(),
                    requests: 20,
                    share: 0.2,
                    why: NO_SUCH_OP.into(),
                }],
                unmapped_requests: 0,
                unmapped_share: 0.0,
            },
            rate: WorkloadCurve {
                step_s: 1,
                rule: BUCKET_RULE.into(),
                start: None,
                requests: vec![10, 0, 40, 50, 0, 0],
            },
            fixtures: vec![FixtureSize {
                namespace: "root".into(),
                mount: "secret/".into(),
                mount_type: "kv".into(),
                distinct_paths: 37,
                estimated: false,
                kv_version: None,
                operations: None,
            }],
            namespaces: vec![NamespaceShare {
                namespace: "root".into(),
                requests: 100,
            }],
            callers: None,
        }
    }

    #[test]
    fn instants_are_the_schedules_and_callers_keep_their_proportions() {
        let s = curve_schedule(&[10, 0, 40, 5], 1, 2.0, 10.0).unwrap();
        let Schedule::Steps(steps) = &s else {
            unreachable!()
        };
        let until = s.span();
        let got = step_instants(steps, until, u64::MAX);
        assert_eq!(got.len() as u64, s.requests_before(until));
        for (g, o) in got.iter().enumerate() {
            let want = s.offset_of(g as u64).unwrap().as_nanos() as i128;
            assert!((*o as i128 - want).abs() <= 1, "{g}: {o} against {want}");
        }
        assert_eq!(step_instants(steps, until, 7).len(), 7);
        // Caller 1 (team-a/, a token) read 3, caller 2 (root, none: the run's own) wrote 1.
        let c = WorkloadCallers {
            bound: 1000,
            folded_requests: 0,
            callers: vec![
                CallerShare {
                    namespace: "team-a/".into(),
                    token: true,
                    requests: 3,
                    share: 0.75,
                    ops: vec![CallerOp {
                        name: "kv-read".into(),
                        requests: 3,
                    }],
                },
                CallerShare {
                    namespace: "root".into(),
                    token: false,
                    requests: 1,
                    share: 0.25,
                    ops: vec![
                        CallerOp {
                            name: "kv-write".into(),
                            requests: 1,
                        },
                        CallerOp {
                            name: "sys-other".into(),
                            requests: 9,
                        },
                    ],
                },
            ],
        };
        let run = entries(&["kv-read", "kv-write"]);
        let r = RunCallers::of(&c, &run, &KvMounts::default()).unwrap();
        assert_eq!(r.sessions, [(Some("team-a/".to_string()), true)]);
        assert_eq!(r.pairs, [(1, 0, 3), (0, 1, 1)]);
        // Twice the deck: each (session, operation) twice its recorded count.
        let sends = r.sends(8, 2);
        let count = |code: u16| sends.iter().filter(|&&s| s == code).count();
        assert_eq!((count(2), count(1)), (6, 2), "{sends:?}");
        // Only the run's own token in the root: no callers to make.
        let mut only = c.clone();
        only.callers.remove(0);
        assert!(RunCallers::of(&only, &run, &KvMounts::default()).is_none());
        // A file written before callers were recorded still reads.
        let mut old: serde_json::Value = serde_json::to_value(sample()).unwrap();
        old.as_object_mut().unwrap().remove("callers");
        let text = old.to_string();
        assert!(parse(&text, "old.json").unwrap().callers.is_none());
    }

    /// Two kv mounts in the root and in team-a: each entry a mount, each caller's reads
    /// dealt to its namespace's mounts up to their recorded counts; a file written before
    /// mounts had operations (the sample) still plans, its kv fixtures unsplit.
    #[test]
    fn each_kv_mount_is_an_entry_and_old_files_still_run() {
        let old = sample().plan(Factor::ONE, Factor::ONE, |_| true).unwrap();
        assert_eq!((old.entries.as_ref(), old.secrets), (None, Some(37)));
        assert_eq!(old.mix_len(), 2);
        let fixture = |ns: &str, m: &str, v, n, reads| FixtureSize {
            namespace: ns.into(),
            mount: m.into(),
            mount_type: "kv".into(),
            distinct_paths: n,
            estimated: false,
            kv_version: Some(v),
            operations: Some(vec![CallerOp {
                name: "kv-read".into(),
                requests: reads,
            }]),
        };
        let mut f = sample();
        f.mix = vec![MixShare {
            name: "kv-read".into(),
            requests: 80,
            share: 0.8,
        }];
        f.fixtures = vec![
            fixture("root", "a/", 2, 7, 30),
            fixture("root", "b/", 1, 3, 20),
            fixture("team-a/", "a/", 2, 4, 25),
            fixture("team-a/", "b/", 1, 2, 5),
        ];
        let caller = |ns: &str, reads| CallerShare {
            namespace: ns.into(),
            token: true,
            requests: reads,
            share: 0.0,
            ops: vec![CallerOp {
                name: "kv-read".into(),
                requests: reads,
            }],
        };
        f.callers = Some(WorkloadCallers {
            bound: 1000,
            folded_requests: 0,
            callers: vec![
                caller("root", 40),
                caller("team-a/", 12),
                caller("root", 10),
                caller("team-a/", 18),
            ],
        });
        let p = f.plan(Factor::ONE, Factor::ONE, |_| true).unwrap();
        let e = p.entries.clone().unwrap();
        let named: Vec<(String, u64)> = e.iter().map(|(m, n)| (p.kv.label(m), *n)).collect();
        assert_eq!(
            named,
            [("kv-read@a".to_string(), 55), ("kv-read@b".to_string(), 25)]
        );
        assert_eq!(p.mix_len(), 2);
        let c = p.callers.unwrap();
        // (session, entry, requests): root's 40 fill a/'s 30 then 10 of b/; team-a's 12
        // go to its a/ (25), its 18 to a/'s last 13 and b/'s 5.
        assert_eq!(
            c.pairs,
            [
                (1, 0, 30),
                (1, 1, 10),
                (2, 0, 12),
                (3, 1, 10),
                (4, 0, 13),
                (4, 1, 5)
            ]
        );
        let fx = |ns| p.kv.fixture(&e[1].0, Some(ns)).unwrap();
        assert_eq!((fx("root").secrets, fx("root").version), (3, 1));
        assert_eq!(
            (fx("team-a/").secrets, fx("team-a/").group.as_str()),
            (2, "b/")
        );
    }

    #[test]
    fn the_bucket_rule() {
        assert_eq!(bucket_for(1, 1000), 1);
        assert_eq!(bucket_for(1, 1001), 60);
        assert_eq!(bucket_for(1, 60_000), 60);
        assert_eq!(bucket_for(1, 86_400), 120);
        assert_eq!(bucket_for(60, 100), 60);
        assert_eq!(bucket_for(3600, 100), 3600);
        assert_eq!(bucket_for(60, 5000), 300);
        assert_eq!(regroup(&[1, 2, 3, 4, 5], 1, 2), [3, 7, 5]);
        assert_eq!(regroup(&[1, 2], 60, 60), [1, 2]);
    }

    #[test]
    fn the_curve_is_a_schedule_of_evenly_spread_steps() {
        let d = Duration::from_secs_f64;
        // Twice the rate, ten times faster: bucket 0 (10 requests in 1 s) sends 20 in 0.1 s.
        let s = curve_schedule(&[10, 0, 40, 5, 0], 1, 2.0, 10.0).unwrap();
        assert_eq!(s.validate(), Ok(()));
        assert_eq!(s.span(), d(0.4));
        assert_eq!(s.requests_before(d(0.1)), 20);
        // The empty bucket pauses: request 20 is due as bucket 0 ends, the next in bucket 2.
        assert_eq!(s.requests_before(d(0.199)), 21);
        assert_eq!(s.requests_before(s.span()), 110);
        // Spread: within bucket 2 (80 requests over 0.1 s at 800/s), N(0.2503) = 60.24.
        assert_eq!(s.requests_before(d(0.2503)), 61);
        assert_eq!(s.rate_at(d(0.05)), 200.0);
        assert!(curve_schedule(&[0, 0], 1, 1.0, 1.0).is_none());
        // A sweep's step of 1 s over this 0.4 s curve: three times over.
        let r = repeated(&s, d(1.0));
        assert_eq!(r.span(), d(1.2));
        assert_eq!(r.requests_before(r.span()), 330);
        // Per-minute buckets at speed 60: a minute's requests in a second.
        let s = curve_schedule(&[120, 60], 60, 1.0, 60.0).unwrap();
        assert_eq!(s.span(), d(2.0));
        assert_eq!(s.requests_before(d(1.0)), 120);
        assert_eq!(s.requests_before(d(2.0)), 180);
    }

    #[test]
    fn a_plan_scales_the_share_run_and_says_what_is_not() {
        let f = sample();
        let known = |n: &str| n != "kv-write";
        let p = f.plan(Factor::ONE, Factor::ONE, known).unwrap();
        assert_eq!(p.mix, "kv-read:60");
        // Only kv-read runs: 60% of the curve's 100 requests.
        assert_eq!(p.expected, 60);
        assert_eq!(p.duration, Duration::from_secs(4));
        assert_eq!(p.secrets, Some(37));
        let said = p.notes.join("\n");
        assert!(said.contains("operation 'kv-write'") && said.contains("sys-other (20.0%)"));
        let p = f
            .plan(
                Factor::new(10.0).unwrap(),
                Factor::new(2.0).unwrap(),
                |_| true,
            )
            .unwrap();
        assert_eq!(p.mix, "kv-read:60,kv-write:20");
        assert_eq!(p.expected, 160);
        assert_eq!(p.duration, Duration::from_millis(400));
        let e = f.plan(Factor::ONE, Factor::ONE, |_| false).unwrap_err();
        assert!(
            e.to_string().contains("no operation of the workload"),
            "{e}"
        );
        assert!(e.to_string().contains("kv-read"), "{e}");
        assert_eq!(weights(&[3_000_000, 1_000_000, 1]), [1_000_000, 333_333, 1]);
    }

    #[test]
    fn files_are_read_back_and_bad_ones_refused() {
        let f = sample();
        let text = serde_json::to_string(&f).unwrap();
        assert_eq!(parse(&text, "w.json").unwrap(), f);
        let with = |key: &str, v: serde_json::Value| {
            let mut j: serde_json::Value = serde_json::from_str(&text).unwrap();
            j[key] = v;
            parse(&j.to_string(), "w.json").unwrap_err().to_string()
        };
        let e = with("workload_version", serde_json::json!(7));
        assert!(
            e.contains("is version 7: this vblast reads version 1"),
            "{e}"
        );
        let e = with("mix", serde_json::json!("kv-read"));
        assert!(e.contains("is not a workload"), "{e}");
        let e = with("extra", serde_json::json!(1));
        assert!(e.contains("unknown field"), "{e}");
        let e = with(
            "source",
            serde_json::json!({"files": [], "first": null, "last": null, "requests": 5}),
        );
        assert!(
            e.contains("holds 100 requests, source.requests says 5"),
            "{e}"
        );
        let e = parse("{ nope", "w.json").unwrap_err().to_string();
        assert!(e.contains("w.json is not a workload: not JSON"), "{e}");
        let e = parse("{}", "w.json").unwrap_err().to_string();
        assert!(e.contains("no workload_version"), "{e}");
        assert!(Factor::parse("--scale", "0").is_err());
        assert!(Factor::parse("--scale", "-2").is_err());
        assert!(Factor::parse("--speed", "inf").is_err());
        assert!(Factor::parse("--speed", "x").is_err());
        assert_eq!(Factor::parse("--scale", " 2.5").unwrap().get(), 2.5);
    }
}
