//! The profile's running counts, fed one audit line at a time, in bounded memory: per
//! mapped operation (requests, responses, errors, server time, audit bytes), the rate
//! curve, namespaces and mounts (at most 1024 and 512 kept by name, the rest summed as
//! `(other)`), distinct paths and accessors (exact, then estimated: `distinct`), the
//! requests still waiting for their response (at most 200,000: beyond, those older than
//! a minute are let go), and what was wrong with the input.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use hdrhistogram::Histogram;

use super::distinct::{DistinctCount, HashedMap, TopCounts, hash_of};
use super::entry::{AuditLine, AuditRequest, Side, format_time, parse_time, read_line};
use super::figures::*;
use super::mapping::{OpName, Routed, map, shape};

const MAX_NAMESPACES: usize = 1024;
const MAX_MOUNTS: usize = 512;
const MAX_PENDING: usize = 200_000;
const MAX_TOKENS: usize = 100_000;
/// The most callers (accessor and namespace) a profile keeps apart for a workload file and
/// a replay makes sessions for; those past it count with their namespace's requests
/// without a token.
pub const MAX_CALLERS: usize = 1000;
const EXACT_ACCESSORS: usize = 100_000;
const EXACT_LOGINS: usize = 200_000;
const EXACT_PATHS: usize = 4096;
const MAX_SHAPES: usize = 512;
/// Curve buckets kept (3 days of seconds); a longer log's buckets widen 60 times.
const MAX_BUCKETS: usize = 3 * 86_400;
/// Problems of one kind listed with their line; the rest counted.
const LISTED: usize = 10;
/// A step back in time beyond this is said (entries of concurrent requests are a few
/// milliseconds out of order as a matter of course).
const BACKWARDS_NS: i64 = 1_000_000_000;

/// One mapped operation's counts.
struct OpTally {
    name: String,
    requests: u64,
    responses: u64,
    errors: u64,
    server_us: Option<Histogram<u64>>,
    bytes: u64,
    entries: u64,
}

impl OpTally {
    /// An operation seen for the first time: nothing counted yet.
    fn new(name: String) -> OpTally {
        OpTally {
            name,
            requests: 0,
            responses: 0,
            errors: 0,
            server_us: None,
            bytes: 0,
            entries: 0,
        }
    }
}

struct MountTally {
    namespace: String,
    mount: String,
    mount_type: String,
    requests: u64,
    paths: DistinctCount,
    ops: Vec<u64>,
    /// A kv mount's request went to v2's API (`data/`, `metadata/`, `delete/`, `destroy/`).
    kv2: bool,
}

/// Requests per bucket of `step_s` seconds from `origin_s`.
struct RateCurve {
    origin_s: i64,
    step_s: i64,
    buckets: VecDeque<u64>,
}

/// Logins per calendar minute of their response's time, and the busiest minute so far. An
/// entry a little out of order (from the minute before) counts in the current one.
#[derive(Default, Debug)]
struct LoginMinutes {
    minute: Option<i64>,
    in_minute: u64,
    peak: u64,
}

impl LoginMinutes {
    fn add(&mut self, t_ns: i64) {
        let m = t_ns.div_euclid(60_000_000_000);
        if self.minute.is_none_or(|cur| m > cur) {
            self.minute = Some(m);
            self.in_minute = 0;
        }
        self.in_minute += 1;
        self.peak = self.peak.max(self.in_minute);
    }
}

impl RateCurve {
    fn add(&mut self, t_ns: i64) {
        let sec = t_ns.div_euclid(1_000_000_000);
        if self.buckets.is_empty() {
            self.origin_s = sec;
        }
        loop {
            let idx = (sec - self.origin_s).div_euclid(self.step_s);
            let len = self.buckets.len() as i64;
            let needed = if idx < 0 { len - idx } else { len.max(idx + 1) };
            if needed as usize > MAX_BUCKETS {
                self.widen();
                continue;
            }
            if idx < 0 {
                for _ in 0..-idx {
                    self.buckets.push_front(0);
                }
                self.origin_s += idx * self.step_s;
                self.buckets[0] += 1;
            } else {
                while self.buckets.len() as i64 <= idx {
                    self.buckets.push_back(0);
                }
                self.buckets[idx as usize] += 1;
            }
            return;
        }
    }

    /// Buckets 60 times wider, aligned on their width.
    fn widen(&mut self) {
        let step = self.step_s * 60;
        let origin = self.origin_s.div_euclid(step) * step;
        let mut wide: VecDeque<u64> = VecDeque::new();
        for (i, n) in self.buckets.iter().enumerate() {
            let at = self.origin_s + i as i64 * self.step_s;
            let j = ((at - origin) / step) as usize;
            while wide.len() <= j {
                wide.push_back(0);
            }
            wide[j] += n;
        }
        self.origin_s = origin;
        self.step_s = step;
        self.buckets = wide;
    }
}

/// Kinds of problem, each listed up to `LISTED` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProblemKind {
    NotJson,
    Truncated,
    NotAudit,
    NoTime,
    Backwards,
    TooLong,
    Unreadable,
    Empty,
    OneSided,
}

/// The profile being counted.
pub struct ProfileTally {
    ops: Vec<OpTally>,
    unmapped: OpTally,
    shapes: TopCounts,
    paths: Option<TopCounts>,
    namespaces: HashedMap<u64, (String, u64)>,
    mounts: HashedMap<u64, MountTally>,
    accessors: DistinctCount,
    per_token: HashedMap<u64, u64>,
    per_token_full: bool,
    login_tokens: DistinctCount,
    logins: u64,
    login_minutes: LoginMinutes,
    token_requests: u64,
    logged_in_requests: u64,
    pending: HashedMap<u64, i64>,
    curve: RateCurve,
    first: Option<i64>,
    last: Option<i64>,
    /// The latest time of the file being read (for time going backwards).
    file_latest: Option<i64>,
    requests: u64,
    request_entries: u64,
    response_entries: u64,
    entries: u64,
    bytes: u64,
    problems: Vec<LogProblem>,
    problem_counts: HashedMap<ProblemKind, u64>,
    files: Vec<String>,
    /// `vblast replay`: each request entry's time, operation and caller, kept.
    kept: Option<Vec<KeptRequest>>,
    /// Request entries a replay did not keep, past `MAX_KEPT`.
    kept_past_bound: u64,
    /// Per (accessor hash, namespace hash): its place in `callers`.
    caller_index: HashedMap<(Option<u64>, u64), usize>,
    /// Per caller: its namespace, whether it had a token, its requests per operation
    /// (indexed as `ops`).
    callers: Vec<(String, bool, Vec<u64>)>,
    callers_folded: u64,
}

/// A request entry as a replay needs it (`vblast replay`): its time (ns since the epoch),
/// its operation (an index into `Kept::ops`, None: unmapped), its caller's accessor
/// as a hash (an identity key only, never shown), and its namespace's path as a hash
/// (`hash_of`; None: the root namespace), and its mount point under its namespace as a
/// hash (`hash_of("secret/")`; None: no mount), which a kv request's fixture is told by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptRequest {
    pub time_ns: i64,
    pub op: Option<u32>,
    pub accessor: Option<u64>,
    pub namespace: Option<u64>,
    pub mount: Option<u64>,
}

/// The most request entries a replay keeps (48 bytes each: some 1 GB at the bound);
/// the ones past it are counted in `Kept::past_bound`, not kept.
pub const MAX_KEPT: usize = 20_000_000;

/// The kept request entries and the names their `op` indexes.
#[derive(Clone, Debug, Default)]
pub struct Kept {
    pub ops: Vec<String>,
    pub requests: Vec<KeptRequest>,
    /// Request entries past `MAX_KEPT`, not kept.
    pub past_bound: u64,
}

/// The operation a line counts under: a mapped one's index, or the unmapped.
#[derive(Clone, Copy)]
enum OpSlot {
    Op(usize),
    Unmapped,
}

impl ProfileTally {
    /// An empty tally; `show_paths` keeps the most frequent unmapped whole paths too.
    pub fn new(show_paths: bool) -> ProfileTally {
        let op = |name: &str| OpTally::new(name.to_string());
        ProfileTally {
            ops: Vec::new(),
            unmapped: op("(unmapped)"),
            shapes: TopCounts::with_cap(MAX_SHAPES),
            paths: show_paths.then(|| TopCounts::with_cap(MAX_SHAPES)),
            namespaces: HashedMap::default(),
            mounts: HashedMap::default(),
            accessors: DistinctCount::with_cap(EXACT_ACCESSORS),
            per_token: HashedMap::default(),
            per_token_full: false,
            login_tokens: DistinctCount::with_cap(EXACT_LOGINS),
            logins: 0,
            login_minutes: LoginMinutes::default(),
            token_requests: 0,
            logged_in_requests: 0,
            pending: HashedMap::default(),
            curve: RateCurve {
                origin_s: 0,
                step_s: 1,
                buckets: VecDeque::new(),
            },
            first: None,
            last: None,
            file_latest: None,
            requests: 0,
            request_entries: 0,
            response_entries: 0,
            entries: 0,
            bytes: 0,
            caller_index: HashedMap::default(),
            callers: Vec::new(),
            callers_folded: 0,
            problems: Vec::new(),
            problem_counts: HashedMap::default(),
            files: Vec::new(),
            kept: None,
            kept_past_bound: 0,
        }
    }

    /// Also keeps each request entry with a time (`finish_keeping`), for a replay.
    pub fn keeping(mut self) -> ProfileTally {
        self.kept = Some(Vec::new());
        self
    }

    /// The figures, and the request entries `keeping` asked for (by their time).
    pub fn finish_keeping(mut self) -> (Profile, Kept) {
        let mut requests = self.kept.take().unwrap_or_default();
        requests.sort_by_key(|r| r.time_ns);
        let ops = self.ops.iter().map(|o| o.name.clone()).collect();
        let past_bound = self.kept_past_bound;
        (
            self.finish(),
            Kept {
                ops,
                requests,
                past_bound,
            },
        )
    }

    /// A new file begins (its name as shown).
    pub fn begin_file(&mut self, name: &str) {
        self.files.push(name.to_string());
        self.file_latest = None;
    }

    /// Records a problem at `line` of the current file (None: the whole file, or all).
    pub fn problem(&mut self, kind: ProblemKind, line: Option<u64>, what: String) {
        let n = self.problem_counts.entry(kind).or_insert(0);
        *n += 1;
        if *n as usize <= LISTED {
            let file = self.files.last().cloned().unwrap_or_default();
            self.problems.push(LogProblem { file, line, what });
        }
    }

    /// How many problems of each kind, for the summary lines past those listed.
    pub fn problem_count(&self, kind: ProblemKind) -> u64 {
        self.problem_counts.get(&kind).copied().unwrap_or(0)
    }

    /// One line of the current file: `line_no` 1-based; `unterminated` for a last line
    /// without its newline.
    pub fn line(&mut self, line_no: u64, text: &[u8], unterminated: bool) {
        self.bytes += text.len() as u64 + u64::from(!unterminated);
        if text.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let parsed: AuditLine = match read_line(text) {
            Ok(l) => l,
            Err(e) if unterminated => {
                let what = format!("the last line is cut short (a log still being written?): {e}");
                return self.problem(ProblemKind::Truncated, Some(line_no), what);
            }
            Err(e) => {
                let what = format!("not JSON: {e}");
                return self.problem(ProblemKind::NotJson, Some(line_no), what);
            }
        };
        let (Some(side), Some(req)) = (parsed.side(), parsed.request.as_ref()) else {
            let what = "not an audit entry (no \"type\" of request or response, or no \"request\")";
            return self.problem(ProblemKind::NotAudit, Some(line_no), what.into());
        };
        let time = parsed.time.as_deref().and_then(parse_time);
        match time {
            None => {
                let what = "no readable \"time\": left out of the rate and the server times";
                self.problem(ProblemKind::NoTime, Some(line_no), what.into());
            }
            Some(t) => self.clock(line_no, t),
        }
        self.entries += 1;
        let slot = self.slot(req);
        self.entry(slot, (side, req), time, &parsed, text.len() as u64 + 1);
    }

    /// The span, and time going backwards within a file.
    fn clock(&mut self, line_no: u64, t: i64) {
        if let Some(latest) = self.file_latest
            && t < latest - BACKWARDS_NS
        {
            let what = format!(
                "time goes backwards by {:.3} s ({} after {}); counted at its own time",
                (latest - t) as f64 / 1e9,
                format_time(t),
                format_time(latest)
            );
            self.problem(ProblemKind::Backwards, Some(line_no), what);
        }
        self.file_latest = Some(self.file_latest.map_or(t, |l| l.max(t)));
        self.first = Some(self.first.map_or(t, |f| f.min(t)));
        self.last = Some(self.last.map_or(t, |l| l.max(t)));
    }

    fn slot(&mut self, req: &AuditRequest) -> OpSlot {
        let routed = Routed {
            mount_type: req.mount_type.as_deref().unwrap_or(""),
            mount_point: mount_in_namespace(req),
            path: req.path.as_deref().unwrap_or(""),
            operation: req.operation.as_deref().unwrap_or(""),
        };
        match map(&routed) {
            Some(name) => OpSlot::Op(self.op_index(name)),
            None => OpSlot::Unmapped,
        }
    }

    fn op_index(&mut self, name: OpName) -> usize {
        let found = self.ops.iter().position(|o| {
            o.name.len() == name.stem.len() + name.suffix.len()
                && o.name.starts_with(name.stem)
                && o.name.ends_with(name.suffix)
        });
        found.unwrap_or_else(|| {
            self.ops.push(OpTally::new(name.text()));
            self.ops.len() - 1
        })
    }

    fn op_mut(&mut self, slot: OpSlot) -> &mut OpTally {
        match slot {
            OpSlot::Op(i) => &mut self.ops[i],
            OpSlot::Unmapped => &mut self.unmapped,
        }
    }

    /// A parsed entry: its request counted once (at its request entry, or at its response
    /// when the request entry is not in the logs), its response's error and server time.
    fn entry(
        &mut self,
        slot: OpSlot,
        (side, req): (Side, &AuditRequest),
        time: Option<i64>,
        l: &AuditLine,
        len: u64,
    ) {
        let op = self.op_mut(slot);
        op.bytes += len;
        op.entries += 1;
        let id = req.id.as_deref().filter(|i| !i.is_empty()).map(hash_of);
        match side {
            Side::Request => {
                self.request_entries += 1;
                self.count_request(slot, time, req);
                if let Some(kept) = self.kept.as_ref()
                    && time.is_some()
                    && kept.len() >= MAX_KEPT
                {
                    self.kept_past_bound += 1;
                } else if let (Some(kept), Some(time_ns)) = (self.kept.as_mut(), time) {
                    kept.push(KeptRequest {
                        time_ns,
                        op: match slot {
                            OpSlot::Op(i) => Some(i as u32),
                            OpSlot::Unmapped => None,
                        },
                        accessor: req
                            .client_token_accessor
                            .as_deref()
                            .filter(|a| !a.is_empty())
                            .map(hash_of),
                        namespace: req
                            .namespace
                            .as_ref()
                            .and_then(|n| n.path.as_deref())
                            .filter(|p| !p.is_empty())
                            .map(hash_of),
                        mount: Some(mount_in_namespace(req))
                            .filter(|m| !m.is_empty())
                            .map(hash_of),
                    });
                }
                if let (Some(id), Some(t)) = (id, time) {
                    self.wait_for(id, t);
                }
            }
            Side::Response => {
                self.response_entries += 1;
                let asked = id.and_then(|id| self.pending.remove(&id));
                if asked.is_none() {
                    self.count_request(slot, time, req);
                }
                self.response(slot, l, time, asked.zip(time));
            }
        }
    }

    fn wait_for(&mut self, id: u64, t: i64) {
        if self.pending.len() >= MAX_PENDING {
            self.pending.retain(|_, at| *at >= t - 60 * 1_000_000_000);
        }
        if self.pending.len() < MAX_PENDING {
            self.pending.insert(id, t);
        }
    }

    fn response(
        &mut self,
        slot: OpSlot,
        l: &AuditLine,
        time: Option<i64>,
        times: Option<(i64, i64)>,
    ) {
        let login = matches!(slot, OpSlot::Op(i) if self.ops[i].name.ends_with("-login"));
        let made = l
            .response
            .as_ref()
            .and_then(|r| r.auth.as_ref())
            .and_then(|a| a.accessor.as_deref())
            .filter(|a| !a.is_empty());
        if let (true, Some(accessor)) = (login, made) {
            self.logins += 1;
            self.login_tokens.insert(hash_of(accessor));
            if let Some(t) = time {
                self.login_minutes.add(t);
            }
        }
        let op = self.op_mut(slot);
        op.responses += 1;
        if l.error.as_deref().is_some_and(|e| !e.is_empty()) {
            op.errors += 1;
        }
        if let Some((asked, answered)) = times {
            let us = ((answered - asked) / 1000).clamp(1, 3_600_000_000) as u64;
            let h = op.server_us.get_or_insert_with(|| {
                Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("valid bounds")
            });
            let _ = h.record(us);
        }
    }

    fn count_request(&mut self, slot: OpSlot, time: Option<i64>, req: &AuditRequest) {
        self.requests += 1;
        self.op_mut(slot).requests += 1;
        if let Some(t) = time {
            self.curve.add(t);
        }
        let namespace = req
            .namespace
            .as_ref()
            .and_then(|n| n.path.as_deref())
            .filter(|p| !p.is_empty())
            .unwrap_or("root");
        let namespace_hash = hash_of(namespace);
        self.count_namespace(namespace, namespace_hash);
        let mount = mount_in_namespace(req);
        let path = req.path.as_deref().unwrap_or("");
        if !mount.is_empty() {
            let kind = req.mount_type.as_deref().unwrap_or("");
            self.count_mount(namespace, mount, kind, path, slot);
        }
        if let OpSlot::Unmapped = slot {
            self.shapes.add(&shape(mount, path));
            if let Some(paths) = &mut self.paths {
                paths.add(path);
            }
        }
        let accessor = req
            .client_token_accessor
            .as_deref()
            .filter(|a| !a.is_empty())
            .map(hash_of);
        if let Some(h) = accessor {
            self.count_token(h);
        }
        if let OpSlot::Op(i) = slot {
            self.count_caller(accessor, (namespace, namespace_hash), i);
        }
    }

    /// A mapped request of `accessor` in `namespace`: its caller's count of `op`. Callers
    /// past `MAX_CALLERS` count with their namespace's requests without a token (those
    /// past `MAX_CALLERS` and `MAX_NAMESPACES` more with the root's).
    /// `namespace` with its `hash_of`.
    fn count_caller(&mut self, accessor: Option<u64>, (namespace, hash): (&str, u64), op: usize) {
        let key = (accessor, hash);
        let at = match self.caller_index.get(&key) {
            Some(&at) => at,
            None => {
                let room = match (accessor, namespace) {
                    (Some(_), _) => MAX_CALLERS,
                    (None, "root") => usize::MAX,
                    (None, _) => MAX_CALLERS + MAX_NAMESPACES,
                };
                if self.callers.len() < room {
                    self.callers
                        .push((namespace.to_string(), accessor.is_some(), Vec::new()));
                    self.caller_index.insert(key, self.callers.len() - 1);
                    self.callers.len() - 1
                } else {
                    self.callers_folded += 1;
                    let ns = if accessor.is_some() {
                        (namespace, hash)
                    } else {
                        ("root", hash_of("root"))
                    };
                    return self.count_caller(None, ns, op);
                }
            }
        };
        let ops = &mut self.callers[at].2;
        if ops.len() <= op {
            ops.resize(op + 1, 0);
        }
        ops[op] += 1;
    }

    /// The callers as a profile gives them (operations by name, in the log's order).
    fn caller_profile(&self) -> CallerProfile {
        CallerProfile {
            callers: self
                .callers
                .iter()
                .map(|(namespace, token, ops)| CallerFigures {
                    namespace: namespace.clone(),
                    token: *token,
                    ops: ops
                        .iter()
                        .enumerate()
                        .filter(|(_, n)| **n > 0)
                        .map(|(i, n)| (self.ops[i].name.clone(), *n))
                        .collect(),
                })
                .collect(),
            folded_requests: self.callers_folded,
        }
    }

    /// `namespace`, whose `hash_of` is `key`.
    fn count_namespace(&mut self, namespace: &str, key: u64) {
        let full = self.namespaces.len() >= MAX_NAMESPACES;
        let key = if full && !self.namespaces.contains_key(&key) {
            hash_of("(other)")
        } else {
            key
        };
        let name = if full { "(other)" } else { namespace };
        self.namespaces
            .entry(key)
            .or_insert_with(|| (name.to_string(), 0))
            .1 += 1;
    }

    fn count_mount(&mut self, ns: &str, mount: &str, kind: &str, path: &str, slot: OpSlot) {
        let mut h = std::hash::DefaultHasher::new();
        (ns, mount).hash(&mut h);
        let mut key = h.finish();
        let full = self.mounts.len() >= MAX_MOUNTS && !self.mounts.contains_key(&key);
        if full {
            key = 0;
        }
        let ops = self.ops.len();
        let m = self.mounts.entry(key).or_insert_with(|| MountTally {
            namespace: if full { "(other)" } else { ns }.to_string(),
            mount: if full { "(other)" } else { mount }.to_string(),
            mount_type: if full { "" } else { kind }.to_string(),
            requests: 0,
            paths: DistinctCount::with_cap(EXACT_PATHS),
            ops: vec![0; ops],
            kv2: false,
        });
        m.requests += 1;
        if !m.kv2 && kind == "kv" {
            let first = path.strip_prefix(mount).unwrap_or(path).split('/').next();
            m.kv2 = matches!(first, Some("data" | "metadata" | "delete" | "destroy"));
        }
        m.paths.insert(hash_of(path));
        if let OpSlot::Op(i) = slot {
            if m.ops.len() <= i {
                m.ops.resize(i + 1, 0);
            }
            m.ops[i] += 1;
        }
    }

    fn count_token(&mut self, h: u64) {
        self.token_requests += 1;
        self.accessors.insert(h);
        if self.login_tokens.contains(h) == Some(true) {
            self.logged_in_requests += 1;
        }
        if let Some(n) = self.per_token.get_mut(&h) {
            *n += 1;
        } else if self.per_token.len() < MAX_TOKENS {
            self.per_token.insert(h, 1);
        } else {
            self.per_token_full = true;
        }
    }

    /// The figures: the whole input read.
    pub fn finish(mut self) -> Profile {
        self.one_sided();
        self.more_problems();
        let span_s = match (self.first, self.last) {
            (Some(f), Some(l)) => (l - f) as f64 / 1e9,
            _ => 0.0,
        };
        let per_s = |n: u64| n as f64 / span_s.max(1.0);
        let requests = self.requests;
        let share = |n: u64| {
            if requests == 0 {
                0.0
            } else {
                n as f64 / requests as f64
            }
        };
        let mut operations: Vec<OpProfile> =
            self.ops.iter().map(|o| op_profile(o, requests)).collect();
        operations.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then_with(|| a.name.cmp(&b.name))
        });
        let names: Vec<String> = self.ops.iter().map(|o| o.name.clone()).collect();
        Profile {
            profile_version: PROFILE_VERSION,
            files: self.files.clone(),
            span: LogSpan {
                first: self.first.map(format_time),
                last: self.last.map(format_time),
                seconds: span_s,
            },
            requests,
            rate: self.rate(span_s),
            operations,
            unmapped: UnmappedProfile {
                requests: self.unmapped.requests,
                share: share(self.unmapped.requests),
                shapes: counts(self.shapes.top(20)),
                paths: self.paths.as_ref().map(|p| counts(p.top(20))),
            },
            namespaces: self.namespace_profiles(),
            mounts: self.mount_profiles(&names),
            tokens: self.token_profile(span_s),
            audit: AuditVolume {
                bytes: self.bytes,
                entries: self.entries,
                bytes_per_request: self.bytes as f64 / requests.max(1) as f64,
                entries_per_request: self.entries as f64 / requests.max(1) as f64,
                bytes_per_day: per_s(self.bytes) * 86_400.0,
                entries_per_day: per_s(self.entries) * 86_400.0,
            },
            callers: self.caller_profile(),
            problems: self.problems,
        }
    }

    /// A log of only requests, or only responses, is said once.
    fn one_sided(&mut self) {
        let what = match (self.request_entries, self.response_entries) {
            (0, r) if r > 0 => {
                "only responses, no request entries: each response counted as its request; no server time"
            }
            (q, 0) if q > 0 => {
                "only requests, no response entries: no error ratio and no server time"
            }
            _ => return,
        };
        self.files.push("(all)".into());
        self.problem(ProblemKind::OneSided, None, what.into());
        self.files.pop();
    }

    /// One line per kind of problem for those past the `LISTED` first.
    fn more_problems(&mut self) {
        let mut kinds: Vec<(ProblemKind, u64)> = self
            .problem_counts
            .iter()
            .filter(|(_, n)| **n as usize > LISTED)
            .map(|(k, n)| (*k, *n))
            .collect();
        kinds.sort_by_key(|(k, _)| format!("{k:?}"));
        for (kind, n) in kinds {
            self.problems.push(LogProblem {
                file: "(all)".into(),
                line: None,
                what: format!(
                    "{} more of the kind {kind:?} (the first {LISTED} are listed)",
                    n - LISTED as u64
                ),
            });
        }
    }

    fn rate(&self, span_s: f64) -> RateProfile {
        let step = self.curve.step_s as f64;
        let mut sorted: Vec<u64> = self.curve.buckets.iter().copied().collect();
        sorted.sort_unstable();
        let p99 = sorted
            .get(((sorted.len() as f64 * 0.99).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0);
        RateProfile {
            mean: self.requests as f64 / span_s.max(1.0),
            peak: sorted.last().copied().unwrap_or(0) as f64 / step,
            p99: p99 as f64 / step,
            step_s: self.curve.step_s as u64,
            start: (!self.curve.buckets.is_empty())
                .then(|| format_time(self.curve.origin_s * 1_000_000_000)),
            curve: self.curve.buckets.iter().copied().collect(),
        }
    }

    fn namespace_profiles(&self) -> Vec<NamespaceProfile> {
        let mut all: Vec<NamespaceProfile> = self
            .namespaces
            .values()
            .map(|(n, c)| NamespaceProfile {
                namespace: n.clone(),
                requests: *c,
            })
            .collect();
        all.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then_with(|| a.namespace.cmp(&b.namespace))
        });
        all
    }

    fn mount_profiles(&self, names: &[String]) -> Vec<MountProfile> {
        let mut all: Vec<MountProfile> = self
            .mounts
            .values()
            .map(|m| {
                let (distinct, estimated) = m.paths.count();
                MountProfile {
                    namespace: m.namespace.clone(),
                    mount: m.mount.clone(),
                    mount_type: m.mount_type.clone(),
                    requests: m.requests,
                    distinct_paths: distinct,
                    estimated,
                    kv_version: match m.mount_type.as_str() {
                        "kv" => Some(if m.kv2 { 2 } else { 1 }),
                        "generic" => Some(1),
                        _ => None,
                    },
                    operations: m
                        .ops
                        .iter()
                        .enumerate()
                        .filter(|(_, n)| **n > 0)
                        .map(|(i, n)| OpCount {
                            name: names[i].clone(),
                            requests: *n,
                        })
                        .collect(),
                }
            })
            .collect();
        all.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then_with(|| (&a.namespace, &a.mount).cmp(&(&b.namespace, &b.mount)))
        });
        all
    }

    fn token_profile(&self, span_s: f64) -> TokenProfile {
        let (distinct, estimated) = self.accessors.count();
        let per_token = (!self.per_token_full && !self.per_token.is_empty()).then(|| {
            let mut n: Vec<u64> = self.per_token.values().copied().collect();
            n.sort_unstable();
            let at = |q: f64| n[((n.len() as f64 * q).ceil() as usize).clamp(1, n.len()) - 1];
            PerToken {
                mean: n.iter().sum::<u64>() as f64 / n.len() as f64,
                p50: at(0.5),
                p99: at(0.99),
                max: n[n.len() - 1],
            }
        });
        TokenProfile {
            distinct_accessors: distinct,
            accessors_estimated: estimated,
            requests_with_token: self.token_requests,
            requests_per_token: per_token,
            logins: self.logins,
            logins_per_minute: self.logins as f64 / (span_s.max(1.0) / 60.0),
            peak_logins_per_minute: self.login_minutes.peak,
            logged_in_requests: self.logged_in_requests,
            logged_in_share: self.logged_in_requests as f64 / self.token_requests.max(1) as f64,
            logged_in_exact: self.login_tokens.contains(0).is_some(),
        }
    }
}

/// The request's mount point under its namespace: the audit entry's `mount_point` is the
/// whole path (`team-a/secret/`), its `path` is the namespace's own (`secret/data/x`).
fn mount_in_namespace<'a>(req: &'a AuditRequest) -> &'a str {
    let mount = req.mount_point.as_deref().unwrap_or("");
    let namespace = req
        .namespace
        .as_ref()
        .and_then(|n| n.path.as_deref())
        .unwrap_or("");
    if namespace.is_empty() {
        return mount;
    }
    mount.strip_prefix(namespace).unwrap_or(mount)
}

fn op_profile(o: &OpTally, requests: u64) -> OpProfile {
    let ms = |us: u64| us as f64 / 1000.0;
    OpProfile {
        name: o.name.clone(),
        vblast_op: crate::vault::ops::find(&o.name).is_some(),
        requests: o.requests,
        share: o.requests as f64 / requests.max(1) as f64,
        responses: o.responses,
        errors: o.errors,
        error_ratio: (o.responses > 0).then(|| o.errors as f64 / o.responses as f64),
        server_ms: o.server_us.as_ref().map(|h| ServerTimes {
            count: h.len(),
            mean: h.mean() / 1000.0,
            p50: ms(h.value_at_quantile(0.5)),
            p90: ms(h.value_at_quantile(0.9)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        }),
        audit_bytes: o.bytes,
        audit_entries: o.entries,
        bytes_per_request: o.bytes as f64 / o.requests.max(1) as f64,
        entries_per_request: o.entries as f64 / o.requests.max(1) as f64,
    }
}

fn counts(top: Vec<(String, u64, u64)>) -> Vec<PathCount> {
    top.into_iter()
        .map(|(path, requests, over_by)| PathCount {
            path,
            requests,
            over_by,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_minute_of_logins() {
        let mut m = LoginMinutes::default();
        let min = 60_000_000_000i64;
        for t in [0, 1, min - 1, min, min + 5, 2 * min + 1, min + 7, 3 * min] {
            m.add(t);
        }
        // Minute 0: 3; minute 1: 2; minute 2: 1 and the late entry of minute 1: 2.
        assert_eq!(m.peak, 3);
        assert_eq!(LoginMinutes::default().peak, 0);
    }
}
