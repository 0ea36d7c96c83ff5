//! Incremental HTTP/1.1 response parser: status line and headers through httparse, bodies
//! framed by Content-Length, chunked encoding or connection close. Bytes are consumed as
//! they arrive from any number of reads; nothing is copied unless a response head is split
//! across reads (then into a buffer the parser keeps for reuse).

/// Largest response head accepted.
pub const MAX_HEAD: usize = 64 * 1024;
/// Largest body kept when capturing (bodies that are only counted have no limit).
const MAX_CAPTURE: u64 = 256 * 1024 * 1024;
/// Bytes kept of a failed answer's body (status 400 and up) when not capturing: enough for
/// the first line of what the server said, for the report's failure lines.
pub const KEPT_OF_FAILED: usize = 512;
const MAX_HEADERS: usize = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// At the start of a chunk-size line: at least one hex digit must follow.
    SizeStart,
    /// Reading the hex size of a chunk.
    Size,
    /// Skipping a chunk extension up to the end of the size line.
    Ext,
    /// Expecting LF after CR on the size line.
    SizeLf,
    /// Inside chunk data.
    Data,
    /// Expecting CR after chunk data.
    DataCr,
    DataLf,
    /// At the start of a trailer line (an empty one ends the body).
    TrailerStart,
    TrailerLine,
    TrailerLf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ParseState {
    Head,
    Length,
    Chunked(Chunk),
    UntilClose,
}

/// Outcome of feeding bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The response is not complete yet.
    More,
    /// The response is complete. `extra` is true when bytes followed it (which a client
    /// that never pipelines cannot have asked for).
    Done {
        status: u16,
        close: bool,
        extra: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError(pub &'static str);

#[derive(Debug)]
pub struct ResponseParser {
    state: Option<ParseState>,
    status: u16,
    close: bool,
    remaining: u64,
    head: Vec<u8>,
    /// Whether to keep the body (operations that read values from responses).
    capture: bool,
    /// The request was HEAD: whatever the headers say, no body follows.
    no_body: bool,
    body: Vec<u8>,
    /// Body bytes of the current response (whatever its framing), counted, never kept.
    body_len: u64,
    /// The first response's `Server` header, kept in place (no allocation): its length in
    /// `server`, and whether a first response head has been seen at all.
    server: [u8; SERVER_MAX],
    server_len: u8,
    server_seen: bool,
    /// A 429's rate-limit quota headers (`Retry-After`, `X-Ratelimit-*`), when it has any.
    quota: Option<Quota>,
    /// A 3xx answer's `Location`, copied in place (no allocation): its length in
    /// `location_len`, `LOCATION_UNUSABLE` when it was empty, repeated or too long.
    location: [u8; LOCATION_MAX],
    location_len: u16,
}

/// Longest `Location` kept (a Vault standby's is its active node's address and the path).
pub const LOCATION_MAX: usize = 256;
const LOCATION_UNUSABLE: u16 = u16::MAX;

/// What a rate-limit quota's 429 said: seconds to wait, the limit, what remains, seconds
/// to the reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quota {
    pub retry_after: u32,
    pub limit: u32,
    pub remaining: u32,
    pub reset: u32,
}

/// Longest `Server` header value kept (ab keeps its first response's, for its report).
pub const SERVER_MAX: usize = 128;

impl Default for ResponseParser {
    fn default() -> Self {
        ResponseParser {
            state: None,
            status: 0,
            close: false,
            remaining: 0,
            head: Vec::new(),
            capture: false,
            no_body: false,
            body: Vec::new(),
            body_len: 0,
            server: [0; SERVER_MAX],
            server_len: 0,
            server_seen: false,
            quota: None,
            location: [0; LOCATION_MAX],
            location_len: 0,
        }
    }
}

impl ResponseParser {
    pub fn new() -> ResponseParser {
        ResponseParser::default()
    }

    /// Body bytes of the last (or current) response, however it was framed.
    pub fn body_len(&self) -> u64 {
        self.body_len
    }

    /// The `Server` header of the first response this parser saw (empty when it had none).
    pub fn server(&self) -> Option<&str> {
        if !self.server_seen {
            return None;
        }
        Some(std::str::from_utf8(&self.server[..self.server_len as usize]).unwrap_or(""))
    }

    /// The last response was a 429 carrying a rate-limit quota's headers: what they said.
    pub fn quota(&self) -> Option<Quota> {
        self.quota
    }

    /// The last response was a 3xx: its `Location` header (None when it had none; empty
    /// when it was empty, repeated or longer than `LOCATION_MAX`).
    pub fn location(&self) -> Option<&[u8]> {
        match self.location_len {
            0 => None,
            LOCATION_UNUSABLE => Some(&[]),
            n => Some(&self.location[..n as usize]),
        }
    }

    /// Notes a 3xx's `Location` value.
    fn keep_location(&mut self, value: &[u8]) {
        let v = value.trim_ascii();
        if self.location_len != 0 || v.is_empty() || v.len() > LOCATION_MAX {
            self.location_len = LOCATION_UNUSABLE;
            return;
        }
        self.location[..v.len()].copy_from_slice(v);
        self.location_len = v.len() as u16;
    }

    /// Prepares for the next response: `capture` keeps its body, `no_body` says the request
    /// was HEAD (no body follows, whatever Content-Length says).
    pub fn reset(&mut self, capture: bool, no_body: bool) {
        self.state = Some(ParseState::Head);
        self.status = 0;
        self.close = false;
        self.remaining = 0;
        self.head.clear();
        self.capture = capture;
        self.no_body = no_body;
        self.body.clear();
        self.body_len = 0;
        self.quota = None;
        self.location_len = 0;
    }

    /// The captured body of the last response (when capturing; else the first
    /// `KEPT_OF_FAILED` bytes of a failed answer's).
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Hands the captured body over, leaving the parser empty.
    pub fn take_body(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.body)
    }

    /// Feeds received bytes.
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, ParseError> {
        let mut rest = data;
        // One head per pass: a 1xx interim response is followed by another head. (A loop,
        // not recursion: a read full of interim responses must not exhaust the stack.)
        while self.state == Some(ParseState::Head) {
            let used = if self.head.is_empty() {
                match self.parse_head(rest)? {
                    Some(n) => n,
                    None => {
                        self.head.extend_from_slice(rest);
                        return Ok(Progress::More);
                    }
                }
            } else {
                let before = self.head.len();
                self.head.extend_from_slice(rest);
                let buf = std::mem::take(&mut self.head);
                let parsed = self.parse_head(&buf);
                self.head = buf;
                match parsed? {
                    Some(n) => n - before,
                    // (parse_head refused a partial head past the limit.)
                    None => return Ok(Progress::More),
                }
            };
            rest = &rest[used..];
            if self.state == Some(ParseState::Head) {
                // A 1xx interim response: parse the next head from what is left.
                self.head.clear();
                if rest.is_empty() {
                    return Ok(Progress::More);
                }
            }
        }
        self.body_bytes(rest)
    }

    /// The server closed the connection: completes a body framed by close.
    pub fn eof(&mut self) -> Option<Progress> {
        match self.state {
            Some(ParseState::UntilClose) => {
                self.state = None;
                Some(Progress::Done {
                    status: self.status,
                    close: true,
                    extra: false,
                })
            }
            _ => None,
        }
    }

    /// Parses a complete head at the start of `buf`; returns its length, or None if partial.
    fn parse_head(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let n = match resp.parse(buf) {
            // The same limit whether the head came in one read or in many.
            Ok(httparse::Status::Complete(n)) if n > MAX_HEAD => {
                return Err(ParseError("response head too large"));
            }
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_HEAD {
                    return Err(ParseError("response head too large"));
                }
                return Ok(None);
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(ParseError("too many response headers"));
            }
            // An HTTP response never starts with a TLS alert or handshake record's first byte.
            Err(_) if matches!(buf.first(), Some(0x15 | 0x16)) => {
                return Err(ParseError(
                    "the server answered with TLS bytes: it speaks https, use an https:// address",
                ));
            }
            Err(_) => return Err(ParseError("malformed HTTP response")),
        };
        let status = resp.code.unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            // Interim response: the real one follows.
            return Ok(Some(n));
        }
        let mut close = resp.version == Some(0);
        let mut length = None;
        // Transfer-Encoding: present at all, and whether its last coding is chunked.
        let mut encoded = false;
        let mut chunked = false;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = content_length(h.value).ok_or(ParseError("bad Content-Length"))?;
                if length.is_some_and(|l| l != v) {
                    return Err(ParseError("conflicting Content-Length headers"));
                }
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                encoded = true;
                chunked = last_token_is(h.value, b"chunked");
            } else if !self.server_seen && h.name.eq_ignore_ascii_case("server") {
                let mut n = h.value.len().min(SERVER_MAX);
                // Cut on a character boundary.
                while n > 0 && std::str::from_utf8(&h.value[..n]).is_err() {
                    n -= 1;
                }
                self.server[..n].copy_from_slice(&h.value[..n]);
                self.server_len = n as u8;
            } else if status == 429 && quota_header(h.name, h.value, &mut self.quota) {
                // Counted in `quota`.
            } else if (300..400).contains(&status) && h.name.eq_ignore_ascii_case("location") {
                self.keep_location(h.value);
            } else if h.name.eq_ignore_ascii_case("connection") {
                if contains_token(h.value, b"close") {
                    close = true;
                } else if contains_token(h.value, b"keep-alive") {
                    close = false;
                }
            }
        }
        // RFC 9112 6.1 and 6.3: both framings on one response (a sign of request smuggling
        // or response splitting), or a transfer coding in HTTP/1.0, are faulty framing.
        if encoded && length.is_some() {
            return Err(ParseError(
                "both Content-Length and Transfer-Encoding in one response",
            ));
        }
        if encoded && resp.version == Some(0) {
            return Err(ParseError("Transfer-Encoding in an HTTP/1.0 response"));
        }
        self.server_seen = true;
        self.status = status;
        self.close = close;
        if self.capture && length.is_some_and(|l| l > MAX_CAPTURE) {
            return Err(ParseError("response body too large"));
        }
        self.state = Some(if self.no_body || status == 204 || status == 304 {
            self.remaining = 0;
            ParseState::Length
        } else if chunked {
            self.remaining = 0;
            ParseState::Chunked(Chunk::SizeStart)
        } else if let Some(len) = length {
            self.remaining = len;
            ParseState::Length
        } else {
            self.close = true;
            ParseState::UntilClose
        });
        Ok(Some(n))
    }

    fn keep(&mut self, bytes: &[u8]) -> Result<(), ParseError> {
        self.body_len += bytes.len() as u64;
        if self.capture {
            if (self.body.len() + bytes.len()) as u64 > MAX_CAPTURE {
                return Err(ParseError("response body too large"));
            }
            self.body.extend_from_slice(bytes);
        } else if self.status >= 400 && self.body.len() < KEPT_OF_FAILED {
            let n = bytes.len().min(KEPT_OF_FAILED - self.body.len());
            self.body.extend_from_slice(&bytes[..n]);
        }
        Ok(())
    }

    fn done(&mut self, extra: bool) -> Progress {
        self.state = None;
        Progress::Done {
            status: self.status,
            close: self.close,
            extra,
        }
    }

    /// The body's states in one match (length, chunk sizes, chunk data, trailers).
    // Over 100 lines, on purpose: this is the per-response hot path, one loop over the
    // parser's states that the compiler keeps inlined and branch-predictable; split into
    // functions per state it would pass the cursor and state back and forth per chunk.
    fn body_bytes(&mut self, mut data: &[u8]) -> Result<Progress, ParseError> {
        loop {
            match self.state {
                Some(ParseState::Length) => {
                    let take = (data.len() as u64).min(self.remaining) as usize;
                    self.keep(&data[..take])?;
                    self.remaining -= take as u64;
                    data = &data[take..];
                    if self.remaining == 0 {
                        return Ok(self.done(!data.is_empty()));
                    }
                    return Ok(Progress::More);
                }
                Some(ParseState::UntilClose) => {
                    self.keep(data)?;
                    return Ok(Progress::More);
                }
                Some(ParseState::Chunked(c)) => {
                    let Some((&b, rest)) = data.split_first() else {
                        return Ok(Progress::More);
                    };
                    let next = match c {
                        Chunk::Data => {
                            let take = (data.len() as u64).min(self.remaining) as usize;
                            self.keep(&data[..take])?;
                            self.remaining -= take as u64;
                            data = &data[take..];
                            if self.remaining == 0 {
                                self.state = Some(ParseState::Chunked(Chunk::DataCr));
                            }
                            continue;
                        }
                        Chunk::SizeStart | Chunk::Size => match b {
                            b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                                let d = u64::from((b as char).to_digit(16).unwrap_or(0));
                                self.remaining = self
                                    .remaining
                                    .checked_mul(16)
                                    .map(|r| r + d)
                                    .ok_or(ParseError("chunk size too large"))?;
                                Chunk::Size
                            }
                            // A chunk-size line needs at least one hex digit (RFC 9112 7.1).
                            _ if c == Chunk::SizeStart => {
                                return Err(ParseError("empty chunk size"));
                            }
                            b';' | b' ' | b'\t' => Chunk::Ext,
                            b'\r' => Chunk::SizeLf,
                            b'\n' => self.end_size_line()?,
                            _ => return Err(ParseError("malformed chunked body")),
                        },
                        Chunk::Ext => {
                            if b == b'\n' {
                                self.end_size_line()?
                            } else {
                                Chunk::Ext
                            }
                        }
                        Chunk::SizeLf => {
                            if b != b'\n' {
                                return Err(ParseError("malformed chunked body"));
                            }
                            self.end_size_line()?
                        }
                        Chunk::DataCr => match b {
                            b'\r' => Chunk::DataLf,
                            b'\n' => Chunk::SizeStart,
                            _ => return Err(ParseError("malformed chunked body")),
                        },
                        Chunk::DataLf => {
                            if b != b'\n' {
                                return Err(ParseError("malformed chunked body"));
                            }
                            Chunk::SizeStart
                        }
                        Chunk::TrailerStart => match b {
                            b'\r' => Chunk::TrailerLf,
                            b'\n' => {
                                return Ok(self.done(!rest.is_empty()));
                            }
                            _ => Chunk::TrailerLine,
                        },
                        Chunk::TrailerLine => {
                            if b == b'\n' {
                                Chunk::TrailerStart
                            } else {
                                Chunk::TrailerLine
                            }
                        }
                        Chunk::TrailerLf => {
                            if b != b'\n' {
                                return Err(ParseError("malformed chunked trailer"));
                            }
                            return Ok(self.done(!rest.is_empty()));
                        }
                    };
                    self.state = Some(ParseState::Chunked(next));
                    data = rest;
                }
                Some(ParseState::Head) | None => {
                    return Err(ParseError("data after the response"));
                }
            }
        }
    }

    fn end_size_line(&mut self) -> Result<Chunk, ParseError> {
        if self.remaining == 0 {
            return Ok(Chunk::TrailerStart);
        }
        if self.capture && self.body.len() as u64 + self.remaining > MAX_CAPTURE {
            return Err(ParseError("response body too large"));
        }
        Ok(Chunk::Data)
    }
}

/// A Content-Length value: one or more ASCII digits (RFC 9110 8.6), no sign, no list.
/// A rate-limit quota header of a 429 (`Retry-After` in seconds, `X-Ratelimit-Limit`,
/// `-Remaining`, `-Reset`): noted in `quota`; returns whether it was one.
pub(crate) fn quota_header(name: &str, value: &[u8], quota: &mut Option<Quota>) -> bool {
    let n = std::str::from_utf8(value)
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let field = |q: &mut Quota| -> Option<()> {
        if name.eq_ignore_ascii_case("retry-after") {
            q.retry_after = n;
        } else if name.eq_ignore_ascii_case("x-ratelimit-limit") {
            q.limit = n;
        } else if name.eq_ignore_ascii_case("x-ratelimit-remaining") {
            q.remaining = n;
        } else if name.eq_ignore_ascii_case("x-ratelimit-reset") {
            q.reset = n;
        } else {
            return None;
        }
        Some(())
    };
    let mut q = quota.unwrap_or_default();
    if field(&mut q).is_none() {
        return false;
    }
    *quota = Some(q);
    true
}

fn content_length(value: &[u8]) -> Option<u64> {
    let v = value.trim_ascii();
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// Whether the last element of a comma-separated list is `token` (the final transfer
/// coding decides the framing: RFC 9112 6.3).
fn last_token_is(value: &[u8], token: &[u8]) -> bool {
    value
        .rsplit(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .find(|part| !part.is_empty())
        .is_some_and(|part| part.eq_ignore_ascii_case(token))
}

fn contains_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|part| part.trim_ascii().eq_ignore_ascii_case(token))
}

/// The parser under a fuzzer (fuzz/, `tools/fuzz.sh`): one input is fed whole and again in
/// pieces of pseudo-random sizes; both must end the same way (same outcome, same body),
/// and nothing may panic. The unit tests replay the seed corpus through it.
#[doc(hidden)]
/// Called by the fuzz targets (fuzz/) and the tests.
pub mod fuzz {
    use super::{Progress, ResponseParser};

    /// How one response ended.
    #[derive(Debug, PartialEq, Eq)]
    pub enum Outcome {
        Done {
            status: u16,
            close: bool,
            extra: bool,
            body: Vec<u8>,
            /// A 3xx's Location as `location()` gave it.
            location: Option<Vec<u8>>,
        },
        Error(&'static str),
        Incomplete,
    }

    /// Feeds `data` in reads of the given sizes (the rest at once when they run out), with
    /// `flags` as in `response`; stops at the end of the response, as the engine does.
    pub(super) fn run(data: &[u8], flags: u8, sizes: &mut dyn Iterator<Item = usize>) -> Outcome {
        let mut p = ResponseParser::new();
        p.reset(flags & 1 != 0, flags & 2 != 0);
        let mut rest = data;
        while !rest.is_empty() {
            let n = sizes.next().unwrap_or(rest.len()).clamp(1, rest.len());
            let (piece, after) = rest.split_at(n);
            rest = after;
            match p.feed(piece) {
                Ok(Progress::More) => {}
                Ok(Progress::Done {
                    status,
                    close,
                    extra,
                }) => {
                    return Outcome::Done {
                        status,
                        close,
                        // Bytes in later reads follow the response just as well.
                        extra: extra || !rest.is_empty(),
                        body: p.take_body(),
                        location: p.location().map(<[u8]>::to_vec),
                    };
                }
                Err(e) => return Outcome::Error(e.0),
            }
        }
        match p.eof() {
            Some(Progress::Done { status, close, .. }) => Outcome::Done {
                status,
                close,
                extra: false,
                body: p.take_body(),
                location: p.location().map(<[u8]>::to_vec),
            },
            _ => Outcome::Incomplete,
        }
    }

    /// Byte 0: bit 0 keeps the body, bit 1 says the request was HEAD; byte 1 seeds the
    /// read sizes (1 to 32 bytes); the rest is what the server sent.
    pub fn response(input: &[u8]) -> Option<Outcome> {
        let [flags, seed, data @ ..] = input else {
            return None;
        };
        let whole = run(data, *flags, &mut std::iter::empty());
        let mut state = u32::from(*seed) | 0x100;
        let mut sizes = std::iter::from_fn(|| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            Some(1 + (state >> 16) as usize % 32)
        });
        let split = run(data, *flags, &mut sizes);
        assert_eq!(whole, split, "one read and many disagree");
        let mut bytewise = std::iter::repeat(1);
        assert_eq!(whole, run(data, *flags, &mut bytewise), "byte by byte");
        if let Outcome::Done { body, .. } = &whole {
            assert!(body.len() <= data.len());
        }
        Some(whole)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(p: &mut ResponseParser, data: &[u8], step: usize) -> Result<Progress, ParseError> {
        p.reset(true, false);
        let mut last = Progress::More;
        for chunk in data.chunks(step.max(1)) {
            last = p.feed(chunk)?;
        }
        Ok(last)
    }

    #[test]
    fn content_length_in_any_split() {
        let resp = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"bcd\"}";
        for step in 1..resp.len() + 1 {
            let mut p = ResponseParser::new();
            let r = feed_all(&mut p, resp, step).unwrap();
            assert_eq!(
                r,
                Progress::Done {
                    status: 200,
                    close: false,
                    extra: false
                },
                "step {step}"
            );
            assert_eq!(p.body(), b"{\"a\":\"bcd\"}");
        }
    }

    /// A response cut in two at every byte offset (the engine's partial reads) is the
    /// same response as in one read: Content-Length, chunked, and close-delimited.
    #[test]
    fn a_response_split_at_every_offset_is_the_same_response() {
        let cases: [(&[u8], &[u8]); 2] = [
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"a\":\"bcd\"}",
                b"{\"a\":\"bcd\"}",
            ),
            (
                b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"e\"\r\n3\r\n:1}\r\n0\r\n\r\n",
                b"{\"e\":1}",
            ),
        ];
        for (resp, body) in cases {
            for at in 0..=resp.len() {
                let mut p = ResponseParser::new();
                p.reset(true, false);
                let (a, b) = resp.split_at(at);
                let first = p.feed(a).unwrap();
                if at < resp.len() {
                    assert_eq!(first, Progress::More, "cut at {at}");
                    let last = p.feed(b).unwrap();
                    assert!(
                        matches!(
                            last,
                            Progress::Done {
                                close: false,
                                extra: false,
                                ..
                            }
                        ),
                        "cut at {at}: {last:?}"
                    );
                } else {
                    assert!(matches!(first, Progress::Done { .. }), "{first:?}");
                }
                assert_eq!(p.body(), body, "cut at {at}");
                assert_eq!(p.body_len(), body.len() as u64, "cut at {at}");
            }
        }
        // Close-delimited: the body is what came before the server closed.
        let resp = b"HTTP/1.0 200 OK\r\n\r\nabc";
        for at in 0..=resp.len() {
            let mut p = ResponseParser::new();
            p.reset(true, false);
            let (a, b) = resp.split_at(at);
            assert_eq!(p.feed(a).unwrap(), Progress::More);
            assert_eq!(p.feed(b).unwrap(), Progress::More);
            assert!(matches!(p.eof(), Some(Progress::Done { close: true, .. })));
            assert_eq!(p.body(), b"abc", "cut at {at}");
        }
    }

    /// A server that closes mid-response (after any prefix of a framed response) gives no
    /// response: the engine counts a read error, never a short answer.
    #[test]
    fn a_server_close_mid_response_is_no_response() {
        let resp: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let chunked: &[u8] =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        for r in [resp, chunked] {
            for at in 0..r.len() {
                let mut p = ResponseParser::new();
                p.reset(true, false);
                assert_eq!(p.feed(&r[..at]).unwrap(), Progress::More, "cut at {at}");
                assert_eq!(p.eof(), None, "closed at {at}");
            }
        }
    }

    #[test]
    fn body_length_and_first_server_header() {
        let mut p = ResponseParser::new();
        assert_eq!(p.server(), None);
        let chunked = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n";
        p.reset(false, false);
        assert!(matches!(p.feed(chunked), Ok(Progress::Done { .. })));
        assert_eq!(p.body_len(), 9);
        assert_eq!(p.server(), Some("nginx/1.22.1"));
        // Later responses neither replace the first Server nor carry the last body length.
        let plain = b"HTTP/1.1 200 OK\r\nServer: other\r\nContent-Length: 3\r\n\r\nabc";
        p.reset(false, false);
        assert!(matches!(p.feed(plain), Ok(Progress::Done { .. })));
        assert_eq!(p.body_len(), 3);
        assert_eq!(p.server(), Some("nginx/1.22.1"));
        // A first response without Server: seen, empty.
        let mut q = ResponseParser::new();
        q.reset(false, true);
        assert!(matches!(q.feed(plain), Ok(Progress::Done { .. })));
        assert_eq!(q.body_len(), 0, "HEAD: no body");
        assert_eq!(q.server(), Some("other"));
        let mut r = ResponseParser::new();
        r.reset(false, false);
        let _ = r.feed(b"HTTP/1.1 204 No Content\r\n\r\n");
        assert_eq!(r.server(), Some(""));
    }

    #[test]
    fn a_quota_429_says_what_to_wait() {
        let mut p = ResponseParser::new();
        p.reset(false, false);
        let r = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nX-Ratelimit-Limit: 5\r\nX-Ratelimit-Remaining: 0\r\nX-Ratelimit-Reset: 1\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(p.feed(r), Ok(Progress::Done { .. })));
        let q = Quota {
            retry_after: 2,
            limit: 5,
            remaining: 0,
            reset: 1,
        };
        assert_eq!(p.quota(), Some(q));
        p.reset(false, false);
        let bare = b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(p.feed(bare), Ok(Progress::Done { .. })));
        assert_eq!(p.quota(), None);
        p.reset(false, false);
        let ok = b"HTTP/1.1 200 OK\r\nRetry-After: 2\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(p.feed(ok), Ok(Progress::Done { .. })));
        assert_eq!(p.quota(), None);
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let resp = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: 1\r\n\r\n";
        for step in 1..resp.len() + 1 {
            let mut p = ResponseParser::new();
            let r = feed_all(&mut p, resp, step).unwrap();
            assert_eq!(
                r,
                Progress::Done {
                    status: 404,
                    close: true,
                    extra: false
                },
                "step {step}"
            );
            assert_eq!(p.body(), b"Wikipedia in\r\n\r\nchunks.");
        }
    }

    #[test]
    fn close_delimited_and_no_body_statuses() {
        let mut p = ResponseParser::new();
        assert_eq!(
            feed_all(&mut p, b"HTTP/1.0 200 OK\r\n\r\nhello", 3).unwrap(),
            Progress::More
        );
        assert_eq!(
            p.eof(),
            Some(Progress::Done {
                status: 200,
                close: true,
                extra: false
            })
        );
        assert_eq!(p.body(), b"hello");
        let r = feed_all(&mut p, b"HTTP/1.1 204 No Content\r\n\r\n", 100).unwrap();
        assert_eq!(
            r,
            Progress::Done {
                status: 204,
                close: false,
                extra: false
            }
        );
        let r = feed_all(
            &mut p,
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            7,
        )
        .unwrap();
        assert_eq!(
            r,
            Progress::Done {
                status: 200,
                close: false,
                extra: false
            }
        );
    }

    #[test]
    fn garbage_and_extra_bytes() {
        let mut p = ResponseParser::new();
        assert!(feed_all(&mut p, b"hello there\r\n\r\n", 100).is_err());
        let r = feed_all(
            &mut p,
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxy",
            100,
        )
        .unwrap();
        assert_eq!(
            r,
            Progress::Done {
                status: 200,
                close: false,
                extra: true
            }
        );
        assert!(
            feed_all(
                &mut p,
                b"HTTP/1.1 200 OK\r\nContent-Length: zz\r\n\r\n",
                100
            )
            .is_err()
        );
        assert!(
            feed_all(
                &mut p,
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                100
            )
            .is_err()
        );
        // An endless head is refused, not buffered forever.
        p.reset(false, false);
        let mut res = Ok(Progress::More);
        let junk = [b'a'; 1024];
        let _ = p.feed(b"HTTP/1.1 200 OK\r\nX: ");
        for _ in 0..100 {
            res = p.feed(&junk);
            if res.is_err() {
                break;
            }
        }
        assert!(res.is_err());
    }

    fn err(data: &[u8]) -> &'static str {
        let mut p = ResponseParser::new();
        for step in [1, 2, 5, data.len()] {
            let e = feed_all(&mut p, data, step).expect_err("a parse error");
            let again = feed_all(&mut p, data, data.len()).expect_err("a parse error");
            assert_eq!(e, again, "step {step}");
        }
        feed_all(&mut p, data, data.len()).unwrap_err().0
    }

    /// Issue 8, defect 13: lenient framing is an error, never a success.
    #[test]
    fn lenient_framing_is_refused() {
        // An empty chunk-size line (no hex digit), at the first chunk and after one.
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        for body in [
            "\r\n\r\n",
            "\n\n",
            ";x=1\r\n\r\n",
            " 5\r\nhello\r\n0\r\n\r\n",
        ] {
            let e = err(format!("{head}{body}").as_bytes());
            assert_eq!(e, "empty chunk size", "{body:?}");
        }
        let e = err(format!("{head}2\r\nok\r\n\r\n0\r\n\r\n").as_bytes());
        assert_eq!(e, "empty chunk size");
        // A signed, listed or empty Content-Length.
        for v in ["+2", "-2", "2, 2", "", "0x2", "2 2"] {
            let e = err(format!("HTTP/1.1 200 OK\r\nContent-Length: {v}\r\n\r\nok").as_bytes());
            assert_eq!(e, "bad Content-Length", "{v:?}");
        }
        // Both framings on one response, in either order (RFC 9112 6.3).
        for r in [
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nok",
        ] {
            assert_eq!(
                err(r.as_bytes()),
                "both Content-Length and Transfer-Encoding in one response"
            );
        }
        assert_eq!(
            err(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"),
            "Transfer-Encoding in an HTTP/1.0 response"
        );
    }

    /// The final transfer coding decides the framing: chunked last means chunked,
    /// anything else means the body ends with the connection.
    #[test]
    fn final_transfer_coding_decides() {
        let mut p = ResponseParser::new();
        let done = |close| Progress::Done {
            status: 200,
            close,
            extra: false,
        };
        for te in [
            "gzip, chunked",
            "Chunked",
            "chunked ,",
            "gzip\r\nTransfer-Encoding: chunked",
        ] {
            let r =
                format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: {te}\r\n\r\n2\r\nok\r\n0\r\n\r\n");
            assert_eq!(feed_all(&mut p, r.as_bytes(), 3), Ok(done(false)), "{te:?}");
            assert_eq!(p.body(), b"ok");
        }
        for te in [
            "chunked, gzip",
            "gzip",
            "chunked\r\nTransfer-Encoding: gzip",
        ] {
            let r = format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: {te}\r\n\r\n2\r\nok\r\n");
            assert_eq!(
                feed_all(&mut p, r.as_bytes(), 3),
                Ok(Progress::More),
                "{te:?}"
            );
            assert_eq!(p.eof(), Some(done(true)));
            assert_eq!(p.body(), b"2\r\nok\r\n");
        }
    }

    /// Every seed of the fuzz corpus (and every crash the fuzzer found, kept there) goes
    /// through the fuzz harness's checks.
    #[test]
    fn fuzz_seeds_replay() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/http_response");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            fuzz::response(&std::fs::read(&path).unwrap());
            n += 1;
        }
        assert!(n >= 20, "{n} seeds in {dir}");
    }

    /// A read full of interim (1xx) responses is parsed in a loop: on a small stack, as
    /// deep recursion would overflow an engine thread's.
    #[test]
    fn many_interim_responses_in_one_read() {
        let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
        let mut data = interim.repeat(64 * 1024 / interim.len());
        data.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        let r = std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(move || {
                let mut p = ResponseParser::new();
                p.reset(false, false);
                p.feed(&data)
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(
            r,
            Ok(Progress::Done {
                status: 200,
                close: false,
                extra: false
            })
        );
    }

    /// The head limit holds whether the head arrives in one read or in many.
    #[test]
    fn head_limit_in_one_read() {
        let mut head = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        head.extend(std::iter::repeat_n(b'a', MAX_HEAD));
        head.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
        let mut p = ResponseParser::new();
        for step in [head.len(), 1000] {
            let r = feed_all(&mut p, &head, step);
            assert_eq!(r, Err(ParseError("response head too large")), "step {step}");
        }
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        let mut just = ok[..17].to_vec();
        just.extend_from_slice(b"X: ");
        let pad = MAX_HEAD - ok.len() - 5;
        just.extend(std::iter::repeat_n(b'a', pad));
        just.extend_from_slice(b"\r\n");
        just.extend_from_slice(&ok[17..]);
        assert_eq!(just.len(), MAX_HEAD);
        for step in [just.len(), 1000] {
            assert!(feed_all(&mut p, &just, step).is_ok(), "step {step}");
        }
    }

    const OK_200: Progress = Progress::Done {
        status: 200,
        close: false,
        extra: false,
    };
    const TOO_LARGE_HEAD: ParseError = ParseError("response head too large");
    const TOO_LARGE_BODY: ParseError = ParseError("response body too large");

    /// The head limits at their edges (cargo-mutants found them untested).
    #[test]
    fn head_and_header_limits_at_their_edges() {
        let mut p = ResponseParser::new();
        let big = format!(
            "HTTP/1.1 200 OK\r\nX: {}\r\nContent-Length: 0\r\n\r\n",
            "a".repeat(60_000)
        );
        for step in [big.len(), 1000] {
            assert_eq!(feed_all(&mut p, big.as_bytes(), step), Ok(OK_200));
        }
        // A partial head of exactly MAX_HEAD bytes is waited on; a byte more is refused,
        // in one read or two.
        let mut partial = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        partial.resize(MAX_HEAD, b'a');
        p.reset(false, false);
        assert_eq!(p.feed(&partial), Ok(Progress::More));
        assert_eq!(p.feed(b"a"), Err(TOO_LARGE_HEAD));
        p.reset(false, false);
        assert_eq!(p.feed(&partial[..10]), Ok(Progress::More));
        assert_eq!(p.feed(&partial[10..]), Ok(Progress::More));
        assert_eq!(p.feed(b"a"), Err(TOO_LARGE_HEAD));
        partial.push(b'a');
        p.reset(false, false);
        assert_eq!(p.feed(&partial), Err(TOO_LARGE_HEAD));
        // 100 headers are fine, 101 are too many.
        let head = |n: usize| {
            let mut h = "HTTP/1.1 200 OK\r\n".to_string();
            for i in 1..n {
                h.push_str(&format!("X-{i}: v\r\n"));
            }
            h + "Content-Length: 0\r\n\r\n"
        };
        assert_eq!(feed_all(&mut p, head(100).as_bytes(), 7), Ok(OK_200));
        assert_eq!(
            feed_all(&mut p, head(101).as_bytes(), 7),
            Err(ParseError("too many response headers"))
        );
        // Garbage and TLS bytes get their own messages.
        assert_eq!(
            feed_all(&mut p, b"hello there\r\n\r\n", 100),
            Err(ParseError("malformed HTTP response"))
        );
        for tls in [
            &b"\x15\x03\x03\x00\x02\x02\x28"[..],
            b"\x16\x03\x01\x00\x05",
        ] {
            let e = feed_all(&mut p, tls, 100).unwrap_err();
            assert!(e.0.contains("use an https:// address"), "{e:?}");
        }
    }

    /// The capture limit at its edges, for every framing; counting alone has none.
    #[test]
    fn capture_limits_at_their_edges() {
        let mut p = ResponseParser::new();
        let cl = |n: u64| format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n");
        p.reset(true, false);
        assert_eq!(p.feed(cl(0x1000_0000).as_bytes()), Ok(Progress::More));
        p.reset(true, false);
        assert_eq!(p.feed(cl(0x1000_0001).as_bytes()), Err(TOO_LARGE_BODY));
        p.reset(false, false);
        assert_eq!(p.feed(cl(u64::MAX).as_bytes()), Ok(Progress::More));
        // Chunk sizes: exactly the limit, one more, and the limit with bytes already kept.
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (body, ok) in [
            ("10000000\r\n", true),
            ("10000001\r\n", false),
            ("2\r\nok\r\nffffffe\r\n", true),
            ("2\r\nok\r\nfffffff\r\n", false),
            ("2\r\nok\r\nfffffff;x\n", false),
        ] {
            p.reset(true, false);
            let r = p.feed(format!("{chunked}{body}").as_bytes());
            let want = if ok {
                Ok(Progress::More)
            } else {
                Err(TOO_LARGE_BODY)
            };
            assert_eq!(r, want, "{body:?}");
        }
        p.reset(false, false);
        let r = p.feed(format!("{chunked}ffffffffffffffff\r\n").as_bytes());
        assert_eq!(r, Ok(Progress::More));
        p.reset(false, false);
        let r = p.feed(format!("{chunked}10000000000000000\r\n").as_bytes());
        assert_eq!(r, Err(ParseError("chunk size too large")));
        // A close-delimited body: exactly the limit is kept, a byte more is refused.
        p.reset(true, false);
        assert_eq!(p.feed(b"HTTP/1.0 200 OK\r\n\r\n"), Ok(Progress::More));
        let mib = vec![7u8; 1 << 20];
        for _ in 0..256 {
            assert_eq!(p.feed(&mib), Ok(Progress::More));
        }
        assert_eq!(p.body().len(), 1 << 28);
        assert_eq!(p.feed(b"x"), Err(TOO_LARGE_BODY));
    }

    /// Bare LF ends chunk-size lines, chunk data and trailers (RFC 9112 2.2 allows it), and
    /// bytes after a chunked body are noticed whichever line end closed it.
    #[test]
    fn chunked_line_ends_and_extra_bytes() {
        let mut p = ResponseParser::new();
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (body, extra) in [
            ("2\nok\n3;e=1\nabc\n0\nX: 1\n\n", false),
            ("2\nok\n3;e=1\nabc\n0\nX: 1\n\nzz", true),
            ("2\r\nok\r\n3\r\nabc\r\n0\r\n\r\n", false),
            ("2\r\nok\r\n3\r\nabc\r\n0\r\n\r\nz", true),
        ] {
            let r = format!("{head}{body}");
            let want = Progress::Done {
                status: 200,
                close: false,
                extra,
            };
            assert_eq!(
                feed_all(&mut p, r.as_bytes(), r.len()),
                Ok(want),
                "{body:?}"
            );
            assert_eq!(p.body(), b"okabc", "{body:?}");
        }
        for bad in ["2\r\nok\rx", "2\r\nok\r\n0\r\n\rx", "2\rx"] {
            let r = format!("{head}{bad}");
            assert!(feed_all(&mut p, r.as_bytes(), 1).is_err(), "{bad:?}");
        }
    }

    /// A 3xx's Location is kept in place, whatever the reads; other statuses keep none.
    #[test]
    fn a_redirect_keeps_its_location() {
        let resp = b"HTTP/1.1 307 Temporary Redirect\r\nLOCATION:  http://127.0.0.1:8200/v1/x?y=1 \r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}";
        for step in 1..resp.len() + 1 {
            let mut p = ResponseParser::new();
            let r = feed_all(&mut p, resp, step).unwrap();
            assert_eq!(
                r,
                Progress::Done {
                    status: 307,
                    close: true,
                    extra: false
                },
                "step {step}"
            );
            assert_eq!(
                p.location(),
                Some(&b"http://127.0.0.1:8200/v1/x?y=1"[..]),
                "step {step}"
            );
        }
        let with = |status: u16, headers: &str| {
            let mut p = ResponseParser::new();
            let r = format!("HTTP/1.1 {status} X\r\n{headers}Content-Length: 0\r\n\r\n");
            assert!(matches!(
                feed_all(&mut p, r.as_bytes(), 5),
                Ok(Progress::Done { .. })
            ));
            p.location().map(<[u8]>::to_vec)
        };
        let at = "Location: /a\r\n";
        // Every 3xx, and nothing else.
        assert_eq!(with(300, at), Some(b"/a".to_vec()));
        assert_eq!(with(308, at), Some(b"/a".to_vec()));
        assert_eq!(with(399, at), Some(b"/a".to_vec()));
        assert_eq!(with(299, at), None);
        assert_eq!(with(400, at), None);
        assert_eq!(with(307, ""), None);
        // Empty, repeated (even the same twice) or too long: present but unusable.
        assert_eq!(with(307, "Location: \r\n"), Some(Vec::new()));
        assert_eq!(
            with(307, "Location: /a\r\nLocation: /a\r\n"),
            Some(Vec::new())
        );
        let edge = format!("/{}", "a".repeat(LOCATION_MAX - 1));
        assert_eq!(
            with(307, &format!("Location: {edge}\r\n")),
            Some(edge.clone().into_bytes())
        );
        assert_eq!(
            with(307, &format!("Location: {edge}a\r\n")),
            Some(Vec::new())
        );
        // Each response starts afresh; an interim response before it changes nothing.
        let mut p = ResponseParser::new();
        feed_all(
            &mut p,
            b"HTTP/1.1 307 X\r\nLocation: /a\r\nContent-Length: 0\r\n\r\n",
            9,
        )
        .unwrap();
        assert_eq!(p.location(), Some(&b"/a"[..]));
        feed_all(&mut p, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 9).unwrap();
        assert_eq!(p.location(), None);
        feed_all(&mut p, b"HTTP/1.1 100 Continue\r\nLocation: /c\r\n\r\nHTTP/1.1 308 X\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n", 4).unwrap();
        assert_eq!(p.location(), Some(&b"/b"[..]));
        // The fuzz harness reports it, the same in one read and in many.
        let mut input = vec![0, 3];
        input.extend_from_slice(resp);
        assert!(matches!(
            fuzz::response(&input),
            Some(fuzz::Outcome::Done { status: 307, location: Some(l), .. }) if l == b"http://127.0.0.1:8200/v1/x?y=1"
        ));
    }

    /// The fuzz harness itself: flags, read sizes and the end of a close-delimited body.
    #[test]
    fn fuzz_harness_reports_what_the_parser_saw() {
        use fuzz::{Outcome, run};
        let done = |close, extra, body: &[u8]| Outcome::Done {
            status: 200,
            close,
            extra,
            body: body.to_vec(),
            location: None,
        };
        let cl = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let mut input = vec![1, 9];
        input.extend_from_slice(cl);
        assert_eq!(fuzz::response(&input), Some(done(false, false, b"ok")));
        assert_eq!(fuzz::response(&[1]), None);
        assert_eq!(run(cl, 0, &mut std::iter::empty()), done(false, false, b""));
        // HEAD: the two bytes are not a body but bytes after the response.
        assert_eq!(
            run(cl, 2, &mut std::iter::repeat(3)),
            done(false, true, b"")
        );
        assert_eq!(
            run(cl, 3, &mut std::iter::repeat(3)),
            done(false, true, b"")
        );
        let until_close = b"HTTP/1.0 200 OK\r\n\r\nabc";
        assert_eq!(
            run(until_close, 1, &mut std::iter::repeat(2)),
            done(true, false, b"abc")
        );
        assert_eq!(
            run(b"HTTP/1.1 200", 1, &mut std::iter::empty()),
            Outcome::Incomplete
        );
        assert_eq!(
            run(b"junk\r\n\r\n", 1, &mut std::iter::empty()),
            Outcome::Error("malformed HTTP response")
        );
    }
}
