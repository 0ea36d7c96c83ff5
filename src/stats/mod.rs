//! Counters and HdrHistograms, one set per event-loop thread, merged losslessly at the end
//! (also across worker processes, through their serialized form); the confidence intervals
//! of their percentiles (`interval`), and the latencies by block of time those intervals
//! read for correlation (`blocks`).

pub mod blocks;
pub mod clock;
pub mod figures;
pub mod http2;
pub mod interval;
pub mod kept;
pub mod nodes;
pub mod phases;
pub mod staleness;
pub mod timeline;

pub use timeline::{Second, TIMELINE_MAX_SECONDS, Timeline};

use std::collections::BTreeMap;

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{
    Deserializer as HistReader, Serializer as _, V2DeflateSerializer, V2Serializer,
};
use serde::{Deserialize, Serialize};

/// Highest trackable value: one hour in microseconds.
pub const MAX_US: u64 = 3_600_000_000;

/// A latency histogram in microseconds, 1 us to 1 h, 3 significant digits.
#[derive(Clone, Debug)]
pub struct Hist(pub Histogram<u64>);

impl Default for Hist {
    fn default() -> Self {
        Hist(Histogram::new_with_bounds(1, MAX_US, 3).expect("valid histogram bounds"))
    }
}

impl Hist {
    /// Records one value, clamped into the trackable range.
    #[inline]
    pub fn record(&mut self, us: u64) {
        let v = us.clamp(1, MAX_US);
        // Cannot fail: the value is within bounds.
        let _ = self.0.record(v);
    }

    pub fn add(&mut self, other: &Hist) {
        // Same bounds everywhere, so adding cannot fail.
        let _ = self.0.add(&other.0);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn reset(&mut self) {
        self.0.reset();
    }

    pub fn to_base64(&self) -> String {
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.0, &mut buf)
            .expect("serializing into memory");
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    /// Appends a histogram in the form `to_base64` makes in the plain V2 form
    /// (`write_v2`'s), checked as `from_base64` would check it (no value beyond the
    /// range), without building a full-range histogram for it (reading a long timeline
    /// checks every second).
    pub fn base64_to_v2(text: &str, out: &mut Vec<u8>) -> Result<(), HistError> {
        let h = decode(text)?;
        check_range(&h)?;
        V2Serializer::new()
            .serialize(&h, out)
            .map_err(|e| HistError::Format(format!("{e:?}")))?;
        Ok(())
    }

    /// A histogram in the V2 form (`write_v2`'s) in the form `to_base64` makes, without
    /// building a full-range histogram for it.
    pub fn v2_to_base64(bytes: &[u8]) -> Result<String, HistError> {
        let h = read_v2(bytes)?;
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&h, &mut buf)
            .map_err(|e| HistError::Format(format!("{e:?}")))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(buf))
    }

    /// Adds a histogram in the V2 form (`write_v2`'s), without building a second
    /// full-range histogram for it.
    pub fn add_v2(&mut self, bytes: &[u8]) -> Result<(), HistError> {
        let h = read_v2(bytes)?;
        self.0
            .add(&h)
            .map_err(|e| HistError::Range(format!("{e:?}")))
    }

    /// The highest value the histograms hold (MAX_US, as HdrHistogram rounds it).
    fn default_high() -> u64 {
        use std::sync::OnceLock;
        static HIGH: OnceLock<u64> = OnceLock::new();
        // Not `high()`: a value recorded at MAX_US reads back as the top of its bucket.
        *HIGH.get_or_init(|| Hist::default().0.highest_equivalent(MAX_US))
    }

    pub fn from_base64(text: &str) -> Result<Hist, HistError> {
        Hist::from_read(decode(text)?)
    }

    /// Appends this histogram in HdrHistogram's plain V2 form (no deflate: what keeps
    /// these compresses many together, `timeline`).
    pub fn write_v2(&self, out: &mut Vec<u8>) {
        // Into memory: writing cannot fail.
        let _ = V2Serializer::new().serialize(&self.0, out);
    }

    /// A histogram in the V2 form, plain or deflated (HdrHistogram's reader tells them
    /// apart), checked as `from_base64` checks.
    pub fn from_v2(bytes: &[u8]) -> Result<Hist, HistError> {
        Hist::from_read(read_v2(bytes)?)
    }

    /// A histogram as read, into the full range.
    fn from_read(h: Histogram<u64>) -> Result<Hist, HistError> {
        let mut out = Hist::default();
        out.0
            .add(&h)
            .map_err(|e| HistError::Range(format!("{e:?}")))?;
        Ok(out)
    }
}

/// A histogram of a results file that cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum HistError {
    #[error("bad histogram encoding: {0}")]
    Encoding(#[from] base64::DecodeError),
    /// The V2 decoder's own error (its Debug text: it has no Display).
    #[error("bad histogram: {0}")]
    Format(String),
    #[error("bad histogram range: {0}")]
    Range(String),
}

/// A histogram read back holds no value beyond the range every `Hist` has.
fn check_range(h: &Histogram<u64>) -> Result<(), HistError> {
    if !h.is_empty() && h.max() > Hist::default_high() {
        return Err(HistError::Range(format!(
            "a value of {} us is beyond {MAX_US} us",
            h.max()
        )));
    }
    Ok(())
}

/// A histogram in the form `to_base64` makes, as HdrHistogram reads it.
fn decode(text: &str) -> Result<Histogram<u64>, HistError> {
    read_v2(&base64::engine::general_purpose::STANDARD.decode(text)?)
}

/// A histogram in the V2 form, plain or deflated (HdrHistogram's reader tells them
/// apart), as HdrHistogram reads it.
fn read_v2(mut bytes: &[u8]) -> Result<Histogram<u64>, HistError> {
    HistReader::new()
        .deserialize(&mut bytes)
        .map_err(|e| HistError::Format(format!("{e:?}")))
}

impl Serialize for Hist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_base64())
    }
}

impl<'de> Deserialize<'de> for Hist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Hist::from_base64(&text).map_err(serde::de::Error::custom)
    }
}

/// Per-operation results.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OpStats {
    /// Requests that completed or failed (every request counted once).
    pub requests: u64,
    /// Requests answered with a success status.
    pub ok: u64,
    /// Corrected latency: completion minus intended start (= actual start in the closed model).
    pub latency: Hist,
    /// Service time: completion minus the moment the request's first byte was written.
    pub service: Hist,
    /// Body bytes of the responses, as vegeta counts `bytes_in` (older files lack it).
    #[serde(default)]
    pub body_in: u64,
    /// Body bytes of the requests sent, as vegeta counts `bytes_out`.
    #[serde(default)]
    pub body_out: u64,
    /// Responses by status code; 0 for a request that got no response (vegeta's code 0).
    #[serde(default)]
    pub status: StatusTally,
    /// This operation's failure messages with their counts (at most `MAX_MESSAGES`).
    #[serde(default)]
    pub messages: BTreeMap<String, u64>,
}

impl OpStats {
    pub fn merge(&mut self, o: &OpStats) {
        self.requests += o.requests;
        self.ok += o.ok;
        self.latency.add(&o.latency);
        self.service.add(&o.service);
        self.body_in += o.body_in;
        self.body_out += o.body_out;
        for (code, n) in o.status.iter() {
            self.status.add(code, n);
        }
        for (m, n) in &o.messages {
            note_in(&mut self.messages, m, *n);
        }
    }
}

/// Distinct status codes one operation keeps, each with its count, without allocating
/// (a request's answer is counted on the hot path). Codes beyond these are not kept per
/// operation (the run-wide `Stats::status` stays exact).
const TALLY_CODES: usize = 12;

/// Responses of one operation by status code, held in place; serialized as a map.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "BTreeMap<u16, u64>", into = "BTreeMap<u16, u64>")]
pub struct StatusTally {
    codes: [(u16, u64); TALLY_CODES],
    used: u8,
}

impl StatusTally {
    /// Counts `n` answers of `code`; a code past the first `TALLY_CODES` distinct ones is
    /// not kept per operation.
    #[inline]
    pub fn add(&mut self, code: u16, n: u64) {
        let used = usize::from(self.used);
        if let Some(slot) = self.codes[..used].iter_mut().find(|(c, _)| *c == code) {
            slot.1 += n;
        } else if used < TALLY_CODES {
            self.codes[used] = (code, n);
            self.used += 1;
        }
    }

    /// Each code with its count, in the order first seen.
    pub fn iter(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.codes[..usize::from(self.used)].iter().copied()
    }
}

impl From<BTreeMap<u16, u64>> for StatusTally {
    fn from(m: BTreeMap<u16, u64>) -> Self {
        let mut t = StatusTally::default();
        for (code, n) in m {
            t.add(code, n);
        }
        t
    }
}

impl From<StatusTally> for BTreeMap<u16, u64> {
    fn from(t: StatusTally) -> Self {
        t.iter().collect()
    }
}

/// Adds `n` of `message` to `messages`, keeping at most `MAX_MESSAGES` distinct ones; the
/// rest are counted under `OTHER_MESSAGES`, so that the counts always sum to the failures
/// (no allocation when the message, or the overflow, is already known).
fn note_in(messages: &mut BTreeMap<String, u64>, message: &str, n: u64) {
    if let Some(c) = messages.get_mut(message) {
        *c += n;
    } else if messages.len() < MAX_MESSAGES {
        messages.insert(message.to_string(), n);
    } else if let Some(c) = messages.get_mut(OTHER_MESSAGES) {
        *c += n;
    } else {
        messages.insert(OTHER_MESSAGES.to_string(), n);
    }
}

/// The message under which failures beyond the `MAX_MESSAGES` distinct ones are counted.
pub const OTHER_MESSAGES: &str = "other failures (more distinct messages than are kept)";

/// The message of a request that failed on its answer's status: `HTTP 503` (the report
/// adds what the status means and what the server said), written into `buf` without
/// allocating.
#[inline]
pub fn status_message(status: u16, buf: &mut [u8; 8]) -> &str {
    let s = status.min(999);
    buf[..5].copy_from_slice(b"HTTP ");
    buf[5] = b'0' + (s / 100) as u8;
    buf[6] = b'0' + (s / 10 % 10) as u8;
    buf[7] = b'0' + (s % 10) as u8;
    std::str::from_utf8(&buf[..]).unwrap_or("HTTP")
}

/// The message of a 429 from a rate-limit quota (throttled: a failure, but no error).
pub const THROTTLED_MESSAGE: &str = "HTTP 429 throttled by a rate-limit quota";

/// The status a failure message names (`status_message`'s form, or the throttled one's),
/// for the reports that list statuses their own way.
pub fn message_status(message: &str) -> Option<u16> {
    let rest = message.strip_prefix("HTTP ")?;
    let code = rest.get(..3)?;
    let tail = &rest[3..];
    if !code.bytes().all(|b| b.is_ascii_digit()) || !(tail.is_empty() || tail.starts_with(' ')) {
        return None;
    }
    code.parse().ok()
}

/// Failed requests, by kind.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Errors {
    /// Could not open a connection (refused, unreachable, TLS handshake failed, connect timeout).
    pub connect: u64,
    /// The response was lost or malformed (reset, EOF mid-response, non-HTTP bytes).
    pub read: u64,
    /// The request could not be written.
    pub write: u64,
    /// No complete response within --timeout.
    pub timeout: u64,
    /// A response arrived with a status the operation does not count as success.
    pub status: u64,
}

impl Errors {
    pub fn merge(&mut self, o: &Errors) {
        self.connect += o.connect;
        self.read += o.read;
        self.write += o.write;
        self.timeout += o.timeout;
        self.status += o.status;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Connect,
    Read,
    Write,
    Timeout,
}

/// Connections that failed while no request of theirs failed with them (a connect
/// refused while re-opening after the server went away, an HTTP/2 connection error
/// before any stream): by kind, with their messages, counted apart from the failed
/// requests so that those's kinds and messages each sum to the requests that failed.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ConnectionFailures {
    /// Every such failure (the kinds sum to it, and so do the messages).
    pub total: u64,
    /// Could not open the connection (refused, unreachable, TLS handshake failed).
    pub connect: u64,
    /// The connection was lost or spoke garbage (reset, EOF, a protocol error).
    pub read: u64,
    /// Nothing could be written to it.
    pub write: u64,
    /// It did not answer in time.
    pub timeout: u64,
    /// Their messages with their counts (at most `MAX_MESSAGES` distinct ones, the rest
    /// under `OTHER_MESSAGES`).
    pub messages: BTreeMap<String, u64>,
}

impl ConnectionFailures {
    /// Counts `n` failures of `kind` with `message` (no allocation once it is known).
    pub fn count(&mut self, kind: ErrorKind, message: &str, n: u64) {
        self.total += n;
        match kind {
            ErrorKind::Connect => self.connect += n,
            ErrorKind::Read => self.read += n,
            ErrorKind::Write => self.write += n,
            ErrorKind::Timeout => self.timeout += n,
        }
        note_in(&mut self.messages, message, n);
    }

    pub fn merge(&mut self, o: &ConnectionFailures) {
        self.total += o.total;
        self.connect += o.connect;
        self.read += o.read;
        self.write += o.write;
        self.timeout += o.timeout;
        for (m, n) in &o.messages {
            note_in(&mut self.messages, m, *n);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The kinds that happened, as `connect 36, read 2` (wrk's socket errors' words).
    pub fn kinds(&self) -> String {
        [
            ("connect", self.connect),
            ("read", self.read),
            ("write", self.write),
            ("timeout", self.timeout),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// Everything one event-loop thread (or one worker process, or a whole run) measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Stats {
    pub ops: Vec<OpStats>,
    /// Responses by status code.
    pub status: BTreeMap<u16, u64>,
    pub errors: Errors,
    /// Time to open a TCP connection.
    pub connect: Hist,
    /// TLS handshake time.
    pub tls: Hist,
    /// https: time to open a connection, TCP connect and TLS handshake together, one per
    /// connection opened (ab's "Connect" over TLS).
    #[serde(default)]
    pub connect_tls: Hist,
    /// Time from the request's first byte written to the response's first byte read.
    pub ttfb: Hist,
    /// Open model: requests sent more than `LATE_US` after their intended start.
    pub late: u64,
    /// Open model: largest lag between intended and actual start, in microseconds.
    pub max_lag_us: u64,
    /// Open model: measured requests the schedule placed in the run's window that were
    /// never sent (the run ended or was stopped while they waited for a connection), so
    /// that the schedule's requests = those sent + these (older files lack it).
    #[serde(default)]
    pub not_sent: u64,
    /// Open model: the `not_sent` requests, each as having waited from its intended start
    /// until the run ended (`Pacer::unsent_waits`): a figure of its own beside the sent
    /// requests' latency (older files lack it).
    #[serde(default, skip_serializing_if = "Hist::is_empty")]
    pub unsent: Hist,
    pub connections_opened: u64,
    /// TLS handshakes that resumed an earlier session (the rest were full handshakes).
    #[serde(default)]
    pub tls_resumed: u64,
    /// Keep-alive connections the server closed (re-opened transparently).
    pub server_closes: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Measured wall time of this source, seconds (merging takes the largest).
    pub elapsed_s: f64,
    pub timeline: Timeline,
    /// The latencies by block of time (`blocks.rs`), for intervals that see correlated
    /// samples; absent from older results files (their intervals are order statistics).
    #[serde(default, skip_serializing_if = "blocks::Blocks::is_empty")]
    pub blocks: blocks::Blocks,
    /// The failed requests' messages with their counts, one per failed request (at most
    /// `MAX_MESSAGES` distinct ones, the rest under `OTHER_MESSAGES`).
    pub messages: BTreeMap<String, u64>,
    /// Connections that failed with no request failing with them, apart from the failed
    /// requests (older files lack it).
    #[serde(default, skip_serializing_if = "ConnectionFailures::is_empty")]
    pub connection_failures: ConnectionFailures,
    /// What the run says about itself that is no failure (`--http2-fallback`: the run is
    /// HTTP/1.1), each once, listed apart from the failures' messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The `Server` header of the first measured response (ab's "Server Software").
    #[serde(default)]
    pub server: Option<String>,
    /// Body length of the first measured response (ab's "Document Length").
    #[serde(default)]
    pub doc_length: Option<u64>,
    /// Measured responses by body length (at most `MAX_LENGTHS` distinct lengths).
    #[serde(default)]
    pub body_lengths: BTreeMap<u64, u64>,
    /// Measured responses whose body length did not fit in `body_lengths`.
    #[serde(default)]
    pub other_lengths: u64,
    /// Body bytes of the measured responses (ab's "HTML transferred").
    #[serde(default)]
    pub body_bytes: u64,
    /// Measured responses after which the connection stayed open (ab's "Keep-Alive requests").
    #[serde(default)]
    pub kept_alive: u64,
    /// Time from a request's first byte written to its response's first byte, every
    /// measured request (ab's "Waiting").
    #[serde(default)]
    pub waiting: Hist,
    /// Several nodes as one target: what each node answered (by node index).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<crate::stats::nodes::NodeStats>,
    /// Several nodes as one target: the windows in which requests failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<crate::stats::nodes::Window>,
    /// Answers 429 from a rate-limit quota (with `Retry-After` or `X-Ratelimit-*`
    /// headers): failed, but not counted in `errors`.
    #[serde(default)]
    pub throttled: u64,
    /// Largest `Retry-After` seen on a throttled answer, seconds.
    #[serde(default)]
    pub retry_after_s: u64,
    /// Answers 307 (a standby redirecting the request).
    #[serde(default)]
    pub redirects: u64,
    /// `--follow-redirects`: redirects followed (each one a hop of its request).
    #[serde(default)]
    pub followed: u64,
    /// Largest `X-Ratelimit-Limit` seen on a throttled answer.
    #[serde(default)]
    pub ratelimit_limit: u64,
    /// An HTTP/2 run's own counts (`src/stats/http2.rs`).
    #[serde(
        default,
        skip_serializing_if = "crate::stats::http2::H2Figures::is_empty"
    )]
    pub http2: crate::stats::http2::H2Figures,
    /// What the server said with each failed status: the first line of the first such
    /// answer's body, redacted (`failed_answer`; at most `MAX_LENGTHS` statuses).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed_answers: BTreeMap<u16, String>,
    /// `--op kv-staleness`: how far the standbys' reads lagged the active node's writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staleness: Option<crate::stats::staleness::Staleness>,
    /// `--clock kernel`: the figures the kernel's clock ended (`clock.rs`); None with
    /// the user-space clock alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<clock::ClockFigures>,
}

/// Distinct response body lengths counted one by one; more fall into `other_lengths`.
pub const MAX_LENGTHS: usize = 16;

/// Distinct failure messages kept.
pub const MAX_MESSAGES: usize = 16;

impl Stats {
    pub fn new(op_count: usize) -> Stats {
        Stats {
            ops: vec![OpStats::default(); op_count],
            blocks: blocks::Blocks::prepared(),
            ..Default::default()
        }
    }

    pub fn requests(&self) -> u64 {
        self.ops.iter().map(|o| o.requests).sum()
    }

    pub fn ok(&self) -> u64 {
        self.ops.iter().map(|o| o.ok).sum()
    }

    /// Adds another source's results to this one. Lossless: counts add, histograms add.
    pub fn merge(&mut self, o: &Stats) {
        if self.ops.len() < o.ops.len() {
            self.ops.resize(o.ops.len(), OpStats::default());
        }
        for (a, b) in self.ops.iter_mut().zip(&o.ops) {
            a.merge(b);
        }
        for (code, n) in &o.status {
            *self.status.entry(*code).or_default() += n;
        }
        self.errors.merge(&o.errors);
        self.connect.add(&o.connect);
        self.tls.add(&o.tls);
        self.connect_tls.add(&o.connect_tls);
        self.ttfb.add(&o.ttfb);
        self.late += o.late;
        self.max_lag_us = self.max_lag_us.max(o.max_lag_us);
        self.not_sent += o.not_sent;
        self.unsent.add(&o.unsent);
        self.connections_opened += o.connections_opened;
        self.tls_resumed += o.tls_resumed;
        self.server_closes += o.server_closes;
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.elapsed_s = self.elapsed_s.max(o.elapsed_s);
        self.timeline.merge(&o.timeline);
        self.blocks.merge(&o.blocks);
        for (m, n) in &o.messages {
            self.note(m, *n);
        }
        self.connection_failures.merge(&o.connection_failures);
        for n in &o.notes {
            self.say(n);
        }
        if self.server.is_none() {
            self.server.clone_from(&o.server);
        }
        if self.doc_length.is_none() {
            self.doc_length = o.doc_length;
        }
        for (len, n) in &o.body_lengths {
            self.count_length(*len, *n);
        }
        self.other_lengths += o.other_lengths;
        self.body_bytes += o.body_bytes;
        self.kept_alive += o.kept_alive;
        self.waiting.add(&o.waiting);
        crate::stats::nodes::merge_nodes(&mut self.nodes, &o.nodes);
        if let Some(st) = &o.staleness {
            self.staleness
                .get_or_insert_with(Default::default)
                .merge(st);
        }
        if let Some(c) = &o.clock {
            match &mut self.clock {
                Some(mine) => mine.merge(c),
                None => self.clock = Some(c.clone()),
            }
        }
        crate::stats::nodes::merge_windows(&mut self.windows, &o.windows);
        self.throttled += o.throttled;
        self.retry_after_s = self.retry_after_s.max(o.retry_after_s);
        self.redirects += o.redirects;
        self.followed += o.followed;
        self.ratelimit_limit = self.ratelimit_limit.max(o.ratelimit_limit);
        self.http2.merge(&o.http2);
        for (code, text) in &o.failed_answers {
            if self.failed_answers.len() < MAX_LENGTHS && !self.failed_answers.contains_key(code) {
                self.failed_answers.insert(*code, text.clone());
            }
        }
    }

    /// A note about the run that is no failure, kept once (merging keeps it once too).
    pub fn say(&mut self, note: &str) {
        if !self.notes.iter().any(|n| n == note) {
            self.notes.push(note.to_string());
        }
    }

    /// Open model, at the end of a thread's run: the requests the schedule placed that were
    /// never sent, each given as how long it had waited when the run ended
    /// (`Pacer::unsent_waits`): counted in `not_sent`, their waits in `unsent`.
    pub fn note_unsent(&mut self, waits: impl Iterator<Item = std::time::Duration>) {
        for w in waits {
            self.not_sent += 1;
            self.unsent
                .record(u64::try_from(w.as_micros()).unwrap_or(MAX_US));
        }
    }

    /// A measured answer that failed on its status: the first line of its body is kept,
    /// once per status (no allocation after that).
    #[inline]
    pub fn note_failed_answer(&mut self, status: u16, body: &[u8]) {
        if self.failed_answers.len() < MAX_LENGTHS && !self.failed_answers.contains_key(&status) {
            self.failed_answers.insert(status, failed_answer(body));
        }
    }

    /// Counts one measured response's body (no allocation once its length is known).
    #[inline]
    pub fn count_body(&mut self, len: u64, kept_alive: bool) {
        self.body_bytes += len;
        self.kept_alive += u64::from(kept_alive);
        if self.doc_length.is_none() {
            self.doc_length = Some(len);
        }
        self.count_length(len, 1);
    }

    fn count_length(&mut self, len: u64, n: u64) {
        if let Some(c) = self.body_lengths.get_mut(&len) {
            *c += n;
        } else if self.body_lengths.len() < MAX_LENGTHS {
            self.body_lengths.insert(len, n);
        } else {
            self.other_lengths += n;
        }
    }

    /// Responses whose body length differs from the first one's (ab's "Length" failures).
    pub fn length_mismatches(&self) -> u64 {
        let same = self
            .doc_length
            .and_then(|d| self.body_lengths.get(&d))
            .copied()
            .unwrap_or(0);
        self.body_lengths.values().sum::<u64>() + self.other_lengths - same
    }

    /// Counts a failed request's message (no allocation when the message is already
    /// known); a connection that failed no request is counted in `connection_failures`.
    pub fn note(&mut self, message: &str, n: u64) {
        note_in(&mut self.messages, message, n);
    }

    /// As `note`, and kept for operation `op` too (vault-benchmark's per-test Error Set).
    pub fn note_op(&mut self, op: usize, message: &str) {
        note_in(&mut self.messages, message, 1);
        if let Some(o) = self.ops.get_mut(op) {
            note_in(&mut o.messages, message, 1);
        }
    }

    pub fn count_error(&mut self, kind: ErrorKind) {
        let e = &mut self.errors;
        match kind {
            ErrorKind::Connect => e.connect += 1,
            ErrorKind::Read => e.read += 1,
            ErrorKind::Write => e.write += 1,
            ErrorKind::Timeout => e.timeout += 1,
        }
    }
}

/// The first non-empty line of a failed answer's body, whitespace collapsed, at most 200
/// characters, with anything shaped like a Vault token (`hvs.`, `hvb.`, `hvr.`, `s.`, `b.`
/// or `r.` and 20 more characters) replaced by `<redacted>`; "empty body" when it has none.
pub fn failed_answer(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return "empty body".into();
    };
    let mut out = String::new();
    let mut word = String::new();
    let token_like = |w: &str| {
        ["hvs.", "hvb.", "hvr.", "s.", "b.", "r."]
            .iter()
            .any(|p| w.len() >= p.len() + 20 && w.starts_with(p))
    };
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(if token_like(word) { "<redacted>" } else { word });
        word.clear();
    };
    for ch in line.chars().take(200) {
        if ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-') {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            out.push(if ch.is_whitespace() || ch.is_control() {
                ' '
            } else {
                ch
            });
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Lag past the intended start beyond which a request counts as late (open model).
pub const LATE_US: u64 = 10_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_answer_is_its_first_line_redacted() {
        let body = b"\n  {\"errors\":[\"bad token hvs.CAESIAbcdefghijklmnopqrstuvwxyz\"]}\nmore";
        assert_eq!(
            failed_answer(body),
            "{\"errors\":[\"bad token <redacted>\"]}"
        );
        assert_eq!(failed_answer(b""), "empty body");
        assert_eq!(failed_answer(b"<html>\r\n<body>"), "<html>");
        assert_eq!(failed_answer("x".repeat(300).as_bytes()).len(), 200);
        let mut s = Stats::new(1);
        s.note_failed_answer(404, b"first");
        s.note_failed_answer(404, b"second");
        assert_eq!(s.failed_answers[&404], "first");
    }

    #[test]
    fn timeline_histograms_are_checked_without_full_decoding() {
        let check = |text: &str| Hist::base64_to_v2(text, &mut Vec::new());
        let mut h = Hist::default();
        h.record(1234);
        assert!(check(&h.to_base64()).is_ok());
        assert!(check("AAAA").is_err());
        // The highest value vblast records (anything longer is clamped to it) passes.
        let mut top = Hist::default();
        top.record(u64::MAX);
        assert!(check(&top.to_base64()).is_ok());
        assert!(Hist::from_base64(&top.to_base64()).is_ok());
        // A histogram of a wider range, holding a value beyond vblast's: refused, as
        // `from_base64` refuses it.
        let mut wide = Hist(Histogram::new_with_bounds(1, MAX_US * 1000, 3).unwrap());
        wide.0.record(MAX_US * 100).unwrap();
        let text = wide.to_base64();
        assert!(Hist::from_base64(&text).is_err());
        let e = check(&text).unwrap_err().to_string();
        assert!(e.contains("range"), "{e}");
    }

    #[test]
    fn a_histogram_is_empty_until_it_records_and_again_after_a_reset() {
        let mut h = Hist::default();
        assert!(h.is_empty());
        h.record(0);
        assert!(!h.is_empty(), "0 us is recorded as 1 us, not dropped");
        h.reset();
        assert!(h.is_empty());
    }

    #[test]
    fn errors_merge_adds_every_kind() {
        let mut a = Errors {
            connect: 1,
            read: 2,
            write: 3,
            timeout: 4,
            status: 5,
        };
        let b = Errors {
            connect: 10,
            read: 20,
            write: 30,
            timeout: 40,
            status: 50,
        };
        a.merge(&b);
        let sum = Errors {
            connect: 11,
            read: 22,
            write: 33,
            timeout: 44,
            status: 55,
        };
        assert_eq!(a, sum);
    }

    #[test]
    fn merge_is_lossless() {
        let mut a = Stats::new(2);
        let mut b = Stats::new(2);
        for v in 1..=1000u64 {
            a.ops[0].latency.record(v);
            b.ops[0].latency.record(v * 1000);
        }
        a.ops[0].requests = 1000;
        b.ops[0].requests = 1000;
        b.ops[1].ok = 3;
        a.status.insert(200, 5);
        b.status.insert(200, 7);
        b.status.insert(503, 1);
        a.timeline.record(0, true, Some(10));
        b.timeline.record(0, false, Some(20));
        b.timeline.record(3, true, Some(30));
        // Through the wire format, as worker processes send it.
        let wire = serde_json::to_string(&b).unwrap();
        let b2: Stats = serde_json::from_str(&wire).unwrap();
        a.merge(&b2);
        assert_eq!(a.ops[0].requests, 2000);
        assert_eq!(a.ops[0].latency.0.len(), 2000);
        assert_eq!(a.ops[1].ok, 3);
        assert_eq!(a.status[&200], 12);
        assert_eq!(a.status[&503], 1);
        let max = a.ops[0].latency.0.max();
        assert!(a.ops[0].latency.0.equivalent(max, 1_000_000));
        let secs = a.timeline.seconds();
        assert_eq!(secs.len(), 2);
        assert_eq!(secs[0].1.requests, 2);
        assert_eq!(secs[0].1.errors, 1);
        assert_eq!(secs[1].0, 3);
    }

    #[test]
    fn messages_beyond_the_kept_ones_still_sum_to_their_failures() {
        let mut a = Stats::new(1);
        for i in 0..MAX_MESSAGES + 4 {
            a.note_op(0, &format!("failure {i}"));
        }
        let sum = |m: &BTreeMap<String, u64>| m.values().sum::<u64>();
        assert_eq!(sum(&a.messages), MAX_MESSAGES as u64 + 4);
        assert_eq!(a.messages.len(), MAX_MESSAGES + 1);
        assert_eq!(a.messages[OTHER_MESSAGES], 4);
        assert_eq!(sum(&a.ops[0].messages), MAX_MESSAGES as u64 + 4);
        // Merged (through the wire, as worker processes send them): still every one.
        let wire: Stats = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        let mut b = Stats::new(1);
        b.note_op(0, "another one");
        b.merge(&wire);
        assert_eq!(sum(&b.messages), MAX_MESSAGES as u64 + 5);
        assert_eq!(sum(&b.ops[0].messages), MAX_MESSAGES as u64 + 5);
        assert!(b.messages.len() <= MAX_MESSAGES + 1);
    }

    #[test]
    fn connection_failures_count_by_kind_apart_and_merge() {
        let mut a = Stats::new(1);
        a.connection_failures
            .count(ErrorKind::Connect, "connect failed: Connection refused", 1);
        a.connection_failures
            .count(ErrorKind::Connect, "connect failed: Connection refused", 35);
        let mut b = Stats::new(1);
        b.connection_failures
            .count(ErrorKind::Read, "HTTP/2 connection error: GOAWAY", 2);
        let wire: Stats = serde_json::from_str(&serde_json::to_string(&b).unwrap()).unwrap();
        a.merge(&wire);
        let c = &a.connection_failures;
        assert_eq!(
            (c.total, c.connect, c.read, c.write, c.timeout),
            (38, 36, 2, 0, 0)
        );
        assert_eq!(c.messages.values().sum::<u64>(), c.total);
        assert_eq!(c.kinds(), "connect 36, read 2");
        // Apart from the failed requests: none failed, no error, no message.
        assert_eq!(a.requests(), 0);
        assert_eq!(a.errors, Errors::default());
        assert!(a.messages.is_empty());
        // Left out of the results file when there were none; an older file without the
        // key reads as none.
        let none = serde_json::to_string(&Stats::new(1)).unwrap();
        assert!(!none.contains("connection_failures"), "{none}");
        let back: Stats = serde_json::from_str(&none).unwrap();
        assert!(back.connection_failures.is_empty());
    }

    #[test]
    fn a_failed_status_message_names_its_status() {
        let mut buf = [0; 8];
        assert_eq!(status_message(503, &mut buf), "HTTP 503");
        assert_eq!(status_message(7, &mut buf), "HTTP 007");
        assert_eq!(message_status("HTTP 503"), Some(503));
        assert_eq!(message_status(THROTTLED_MESSAGE), Some(429));
        assert_eq!(message_status("HTTP/2 stream reset"), None);
        assert_eq!(message_status("HTTP 5034"), None);
        assert_eq!(message_status("read failed"), None);
    }

    #[test]
    fn body_lengths_merge_against_the_first_document() {
        let mut a = Stats::new(1);
        let mut b = Stats::new(1);
        a.count_body(10, true);
        a.count_body(10, true);
        a.count_body(11, false);
        b.count_body(11, true);
        b.count_body(12, true);
        for len in 100..100 + MAX_LENGTHS as u64 + 3 {
            b.count_body(len, false);
        }
        let wire = serde_json::to_string(&b).unwrap();
        let b2: Stats = serde_json::from_str(&wire).unwrap();
        assert_eq!(b2.length_mismatches(), b.length_mismatches());
        a.merge(&b2);
        assert_eq!(a.doc_length, Some(10));
        // Everything but the two 10-byte bodies differs from the first document.
        let all = 5 + MAX_LENGTHS as u64 + 3;
        assert_eq!(a.length_mismatches(), all - 2);
        assert_eq!(a.kept_alive, 4);
        assert_eq!(
            a.body_bytes,
            10 + 10 + 11 + 11 + 12 + (100..119).sum::<u64>()
        );
        // An older results file without these keys still reads.
        let old: Stats = serde_json::from_str(r#"{"ops":[],"status":{},"errors":{"connect":0,"read":0,"write":0,"timeout":0,"status":0},"connect":"HISTOGRAM","tls":"HISTOGRAM","ttfb":"HISTOGRAM","late":0,"max_lag_us":0,"connections_opened":0,"server_closes":0,"bytes_sent":0,"bytes_received":0,"elapsed_s":0.0,"timeline":[],"messages":{}}"#.replace("HISTOGRAM", &Hist::default().to_base64()).as_str()).unwrap();
        assert_eq!(old.doc_length, None);
        assert_eq!(old.length_mismatches(), 0);
    }
}
