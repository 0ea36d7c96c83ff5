//! The workload an audit log shows, as plain values: what `vblast profile` prints (text,
//! JSON with docs/schema/profile.schema.json, the page), and what a workload file will be
//! written from (the mix per operation and per mount, the rate curve, the distinct paths
//! per mount, the namespaces). No HMAC'd value, token or accessor is in it; paths only as
//! shapes unless `paths` was asked for.

use serde::Serialize;

/// The version of the JSON document (`profile_version`).
pub const PROFILE_VERSION: u32 = 1;

#[derive(Serialize, Debug, Clone)]
pub struct Profile {
    pub profile_version: u32,
    /// The logs read, in the order read (by their first entry's time).
    pub files: Vec<String>,
    pub span: LogSpan,
    /// Requests: each request entry, and each response whose request entry is not in
    /// the logs.
    pub requests: u64,
    pub rate: RateProfile,
    /// Mapped operations, most requests first.
    pub operations: Vec<OpProfile>,
    pub unmapped: UnmappedProfile,
    pub namespaces: Vec<NamespaceProfile>,
    pub mounts: Vec<MountProfile>,
    pub tokens: TokenProfile,
    pub audit: AuditVolume,
    /// What was wrong in the input, each with its file and line.
    pub problems: Vec<LogProblem>,
    /// The callers of the mapped requests, per namespace (what a workload file records
    /// of them); not in the profile's JSON.
    #[serde(skip)]
    pub callers: CallerProfile,
}

/// The recorded callers (one per accessor and namespace, never named; the requests
/// without a token apart, per namespace), up to `tally::MAX_CALLERS`: those past it are
/// counted with their namespace's requests without a token.
#[derive(Debug, Clone, Default)]
pub struct CallerProfile {
    /// In the order the log first shows them.
    pub callers: Vec<CallerFigures>,
    /// Requests of callers past the bound.
    pub folded_requests: u64,
}

/// One recorded caller in one namespace: its mapped requests per operation.
#[derive(Debug, Clone, PartialEq)]
pub struct CallerFigures {
    /// "root" or the namespace's path (`team-a/`).
    pub namespace: String,
    /// False: the requests the log shows without a token (logins), and those folded.
    pub token: bool,
    /// (operation, requests), in the order the log first shows them.
    pub ops: Vec<(String, u64)>,
}

#[derive(Serialize, Debug, Clone)]
pub struct LogSpan {
    /// The first and last entry's time (RFC 3339), None for a log without any.
    pub first: Option<String>,
    pub last: Option<String>,
    pub seconds: f64,
}

#[derive(Serialize, Debug, Clone)]
pub struct RateProfile {
    /// Requests per second over the span.
    pub mean: f64,
    /// The busiest bucket's requests per second (the busiest second when `step_s` is 1).
    pub peak: f64,
    /// The 99th percentile of the buckets' requests per second.
    pub p99: f64,
    /// The curve's bucket: 1 s, or 60 s (3600 s...) for logs longer than 3 days.
    pub step_s: u64,
    /// The instant the first bucket starts (RFC 3339).
    pub start: Option<String>,
    /// Requests per bucket, from `start` on.
    pub curve: Vec<u64>,
}

#[derive(Serialize, Debug, Clone)]
pub struct OpProfile {
    /// vblast's name (`kv-read`, `approle-login`, `aws-creds`, `sys-other`).
    pub name: String,
    /// Whether vblast has this operation (`vblast --list-ops`).
    pub vblast_op: bool,
    pub requests: u64,
    /// Of all requests.
    pub share: f64,
    pub responses: u64,
    /// Responses with an `error`.
    pub errors: u64,
    /// errors / responses; None without responses.
    pub error_ratio: Option<f64>,
    /// The server's time per request (response time minus request time, paired by the
    /// request id), in milliseconds; None when no pair was seen.
    pub server_ms: Option<ServerTimes>,
    pub audit_bytes: u64,
    pub audit_entries: u64,
    pub bytes_per_request: f64,
    pub entries_per_request: f64,
}

#[derive(Serialize, Debug, Clone)]
pub struct ServerTimes {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Serialize, Debug, Clone)]
pub struct UnmappedProfile {
    pub requests: u64,
    pub share: f64,
    /// The most frequent path shapes (`secret/config`, `transit/keys/<path>`).
    pub shapes: Vec<PathCount>,
    /// The most frequent whole paths: only with `--show-paths`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<PathCount>>,
}

#[derive(Serialize, Debug, Clone)]
pub struct PathCount {
    pub path: String,
    pub requests: u64,
    /// The count may be over by this much (the bounded table gave it a slot late).
    pub over_by: u64,
}

#[derive(Serialize, Debug, Clone)]
pub struct NamespaceProfile {
    /// The namespace's path (`team-a/`), `root` for the root namespace.
    pub namespace: String,
    pub requests: u64,
}

#[derive(Serialize, Debug, Clone)]
pub struct MountProfile {
    pub namespace: String,
    /// The mount point (`secret/`, `auth/approle/`).
    pub mount: String,
    pub mount_type: String,
    pub requests: u64,
    /// Distinct request paths on the mount: what a replay's seeding must make.
    pub distinct_paths: u64,
    /// Whether `distinct_paths` is a HyperLogLog estimate (over 4096 on one mount).
    pub estimated: bool,
    /// A kv mount's version, told by its paths (2 when a request went to v2's `data/`,
    /// `metadata/`, `delete/` or `destroy/`; `generic` is 1); None for other engines.
    pub kv_version: Option<u8>,
    /// Requests per mapped operation on this mount.
    pub operations: Vec<OpCount>,
}

#[derive(Serialize, Debug, Clone)]
pub struct OpCount {
    pub name: String,
    pub requests: u64,
}

#[derive(Serialize, Debug, Clone)]
pub struct TokenProfile {
    /// Distinct client token accessors (counted by hash; never shown).
    pub distinct_accessors: u64,
    pub accessors_estimated: bool,
    /// Requests that carried a token.
    pub requests_with_token: u64,
    /// Requests per token; None once over the tokens kept exactly (100,000).
    pub requests_per_token: Option<PerToken>,
    /// Successful logins (a login operation's response with a token).
    pub logins: u64,
    pub logins_per_minute: f64,
    /// Logins in the busiest calendar minute.
    pub peak_logins_per_minute: u64,
    /// Requests made by a token that logged in inside the span.
    pub logged_in_requests: u64,
    /// Of the requests that carried a token.
    pub logged_in_share: f64,
    /// False once over the logins kept exactly (200,000): later ones are not recognised,
    /// and the share is a lower bound.
    pub logged_in_exact: bool,
}

#[derive(Serialize, Debug, Clone)]
pub struct PerToken {
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

#[derive(Serialize, Debug, Clone)]
pub struct AuditVolume {
    /// Bytes of the logs (uncompressed), and their entries.
    pub bytes: u64,
    pub entries: u64,
    pub bytes_per_request: f64,
    pub entries_per_request: f64,
    /// At the log's mean rate.
    pub bytes_per_day: f64,
    pub entries_per_day: f64,
}

#[derive(Serialize, Debug, Clone)]
pub struct LogProblem {
    pub file: String,
    /// 1-based; None for what concerns a whole file or all of them.
    pub line: Option<u64>,
    pub what: String,
}
