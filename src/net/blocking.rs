//! A small blocking HTTP/1.1 keep-alive client, over plain TCP or TLS, for the calls made
//! around the load (setup, cleanup, the server's figures), never by the load engine: one
//! connection reused across calls, JSON bodies, the request's own headers given per call.
//! The Vault client (src/vault/client.rs) is built over it.
//!
//! The timeout bounds each request as a whole (connect, TLS handshake, write and every
//! read), so a server that trickles its answer cannot hold a call past it; a stop flag
//! (Ctrl-C) is checked between reads.

use crate::error::Cause;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

#[cfg(test)]
use crate::net::http::MAX_HEAD;
use crate::net::http::{Progress, ResponseParser};
use crate::net::target::Target;
use crate::signals::Stop;

const READ_CHUNK: usize = 16 * 1024;
/// Longest single wait on the socket: how often the deadline and the stop flag are looked at.
const SLICE: Duration = Duration::from_millis(100);

/// One HTTP answer.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Response {
    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// A one-line description of what went wrong: the JSON body's `errors` array (the
    /// form of the error answers of Vault and many JSON APIs) joined with "; ", or else a
    /// short prefix of the body.
    pub fn error_text(&self) -> String {
        if let Some(v) = self.json()
            && let Some(errors) = v.get("errors").and_then(|e| e.as_array())
        {
            let parts: Vec<String> = errors
                .iter()
                .map(|e| match e.as_str() {
                    Some(s) => one_line(s, 300),
                    None => one_line(&e.to_string(), 300),
                })
                .filter(|s| !s.is_empty())
                .collect();
            if parts.is_empty() {
                return "no error details".to_string();
            }
            return parts.join("; ");
        }
        if self.body.is_empty() {
            return "empty response body".to_string();
        }
        one_line(&String::from_utf8_lossy(&self.body), 200)
    }
}

/// Collapses whitespace and control characters to single spaces and caps the length.
pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            space = !out.is_empty();
            continue;
        }
        if count >= max_chars {
            out.push_str("...");
            break;
        }
        if space {
            out.push(' ');
            count += 1;
            space = false;
        }
        out.push(c);
        count += 1;
    }
    out
}

/// Formats a timeout the way people write them: "30s", "500ms", "1.5s".
pub(crate) fn fmt_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// The request was interrupted (the stop flag was raised).
#[derive(Debug)]
struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Stopped {}

fn is_stopped(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Stopped>())
}

/// A setup connection's socket: every read and write waits at most until the current
/// request's deadline, in slices, checking the stop flag between them.
struct Timed {
    sock: TcpStream,
    deadline: Option<Instant>,
    stop: Option<Stop>,
    /// The read and write timeouts last set on the socket: set again only when the slice
    /// changes (near a deadline), which spares two system calls per request (seeding
    /// sends thousands).
    read_set: Option<Duration>,
    write_set: Option<Duration>,
}

impl Timed {
    /// How long the next wait on the socket may last.
    fn slice(&self) -> io::Result<Duration> {
        if self.stop.as_ref().is_some_and(|s| s.is_set()) {
            return Err(io::Error::other(Stopped));
        }
        match self.deadline {
            None => Ok(SLICE),
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                Ok(left.min(SLICE))
            }
        }
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let slice = self.slice()?;
            if self.read_set != Some(slice) {
                self.sock.set_read_timeout(Some(slice))?;
                self.read_set = Some(slice);
            }
            match self.sock.read(buf) {
                Err(e) if is_timeout(&e) => {}
                other => return other,
            }
        }
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            let slice = self.slice()?;
            if self.write_set != Some(slice) {
                self.sock.set_write_timeout(Some(slice))?;
                self.write_set = Some(slice);
            }
            match self.sock.write(buf) {
                Err(e) if is_timeout(&e) => {}
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sock.flush()
    }
}

enum ClientConn {
    Plain(Timed),
    Tls(Box<StreamOwned<ClientConnection, Timed>>),
}

impl ClientConn {
    /// Bounds everything the connection does from now on by `deadline`.
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        match self {
            ClientConn::Plain(t) => t.deadline = deadline,
            ClientConn::Tls(s) => s.sock.deadline = deadline,
        }
    }
}

impl Read for ClientConn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ClientConn::Plain(s) => s.read(buf),
            ClientConn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for ClientConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ClientConn::Plain(s) => s.write(buf),
            ClientConn::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            ClientConn::Plain(s) => s.flush(),
            ClientConn::Tls(s) => s.flush(),
        }
    }
}

/// Blocking keep-alive client: one connection, reused across calls.
pub struct BlockingClient {
    target: Target,
    tls: Option<Arc<ClientConfig>>,
    server_name: Option<ServerName<'static>>,
    timeout: Duration,
    stop: Option<Stop>,
    conn: Option<ClientConn>,
}

/// Headers are given per request, so nothing secret is kept to print.
impl std::fmt::Debug for BlockingClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingClient")
            .field("target", &self.target.base())
            .field("tls", &self.tls.is_some())
            .field("timeout", &self.timeout)
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

/// Why a request/response exchange failed.
#[derive(Debug)]
enum ExchangeError {
    /// Writing the request failed (on a reused connection: probably closed by the server).
    Write(io::Error),
    Read(ReadError),
}

impl BlockingClient {
    /// A client of `target`; over TLS with `tls` (the default settings when None) and
    /// `server_name` (the target's host when None). `timeout` bounds each request (zero:
    /// no bound).
    pub fn new(
        target: &Target,
        tls: Option<Arc<ClientConfig>>,
        server_name: Option<ServerName<'static>>,
        timeout: Duration,
    ) -> BlockingClient {
        BlockingClient {
            target: target.clone(),
            tls,
            server_name,
            timeout,
            stop: None,
            conn: None,
        }
    }

    /// A client with the same settings and a connection of its own.
    pub fn clone_fresh(&self) -> BlockingClient {
        BlockingClient {
            target: self.target.clone(),
            tls: self.tls.clone(),
            server_name: self.server_name.clone(),
            timeout: self.timeout,
            stop: self.stop.clone(),
            conn: None,
        }
    }

    /// The same settings with another bound on each request: for a call the server may
    /// take long to answer (queueing the revocation of thousands of leases).
    pub fn with_timeout(mut self, timeout: Duration) -> BlockingClient {
        self.timeout = timeout;
        self
    }

    /// Makes every request return "interrupted" soon after `stop` is raised (a signal).
    /// For setup calls only: cleanup after a first signal must still run.
    pub fn with_stop(mut self, stop: Stop) -> BlockingClient {
        self.stop = Some(stop);
        self
    }

    /// Base URL of the server, for messages ("http://127.0.0.1:8200").
    pub fn base(&self) -> String {
        self.target.base()
    }

    /// Sends one request with `headers` (besides Host, User-Agent, Accept and the body's
    /// Content-Type and Content-Length) and reads the whole answer. `path` starts with "/"
    /// ("/v1/sys/health"). A reused connection found closed before any answer byte is
    /// re-opened once and the request resent.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Response, Cause> {
        let req = self.build_request(method, path, headers, body)?;
        let head = method.eq_ignore_ascii_case("HEAD");
        // One deadline for the whole request, a retry on a fresh connection included.
        let deadline = self.timeout_opt().map(|t| Instant::now() + t);
        if let Some(mut conn) = self.conn.take() {
            conn.set_deadline(deadline);
            match exchange(&mut conn, &req, head) {
                Ok((resp, keep)) => {
                    if keep {
                        self.conn = Some(conn);
                    }
                    return Ok(resp);
                }
                Err(ExchangeError::Write(e)) if !is_timeout(&e) && !is_stopped(&e) => {}
                Err(ExchangeError::Read(ReadError::ClosedEarly(_))) => {}
                Err(e) => return Err(self.describe(e)),
            }
        }
        let mut conn = self.connect(deadline)?;
        match exchange(&mut conn, &req, head) {
            Ok((resp, keep)) => {
                if keep {
                    self.conn = Some(conn);
                }
                Ok(resp)
            }
            Err(e) => Err(self.describe(e)),
        }
    }

    /// The request's bytes; a bad method, path or header value is refused (a header's
    /// value is never repeated in the message: it may be a secret).
    pub(crate) fn build_request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Vec<u8>, Cause> {
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(format!("invalid HTTP method '{}'", one_line(method, 20)).into());
        }
        if !path.starts_with('/') || path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!(
                "invalid request path '{}': it must start with '/' and contain no spaces or control characters",
                one_line(path, 200)
            )
            .into());
        }
        let bad = |v: &str| v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0);
        if let Some((name, _)) = headers.iter().find(|(n, v)| bad(n) || bad(v)) {
            return Err(format!(
                "the header {} contains line breaks or NUL characters",
                one_line(name, 40)
            )
            .into());
        }
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: vblast/{}\r\nAccept: application/json\r\n",
            self.target.host_header(),
            env!("CARGO_PKG_VERSION"),
        );
        for (name, value) in headers {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        // A body is JSON unless the caller's headers say what it is.
        let typed = headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
        match body {
            Some(b) => {
                if !typed {
                    head.push_str("Content-Type: application/json\r\n");
                }
                head.push_str(&format!("Content-Length: {}\r\n", b.len()));
            }
            None => {
                let m = method.to_ascii_uppercase();
                if m == "POST" || m == "PUT" || m == "PATCH" {
                    head.push_str("Content-Length: 0\r\n");
                }
            }
        }
        head.push_str("\r\n");
        let mut req = head.into_bytes();
        if let Some(b) = body {
            req.extend_from_slice(b);
        }
        Ok(req)
    }

    fn host_port(&self) -> String {
        if self.target.host.contains(':') {
            format!("[{}]:{}", self.target.host, self.target.port)
        } else {
            format!("{}:{}", self.target.host, self.target.port)
        }
    }

    fn timeout_opt(&self) -> Option<Duration> {
        if self.timeout.is_zero() {
            None
        } else {
            Some(self.timeout)
        }
    }

    fn connect(&self, deadline: Option<Instant>) -> Result<ClientConn, Cause> {
        let base = self.target.base();
        if self.stop.as_ref().is_some_and(|s| s.is_set()) {
            return Err("interrupted".into());
        }
        let mut last: Option<io::Error> = None;
        let mut sock = None;
        for addr in &self.target.addrs {
            let r = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => TcpStream::connect_timeout(addr, left),
                    _ => Err(io::ErrorKind::TimedOut.into()),
                },
                None => TcpStream::connect(addr),
            };
            match r {
                Ok(s) => {
                    sock = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let sock = match (sock, last) {
            (Some(s), _) => s,
            (None, Some(e)) if is_timeout(&e) => {
                return Err(format!(
                    "timed out after {} connecting to {base}",
                    fmt_duration(self.timeout)
                )
                .into());
            }
            (None, Some(e)) => {
                return Err(Cause::Io {
                    what: format!("cannot connect to {base}"),
                    source: e,
                });
            }
            (None, None) => return Err(format!("cannot connect to {base}: no address").into()),
        };
        let _ = sock.set_nodelay(true);
        let sock = Timed {
            sock,
            deadline,
            stop: self.stop.clone(),
            read_set: None,
            write_set: None,
        };
        if !self.target.is_tls() {
            return Ok(ClientConn::Plain(sock));
        }
        let config = match &self.tls {
            Some(c) => c.clone(),
            None => crate::net::tls::client_config(&crate::net::tls::TlsOptions::default())?,
        };
        let name = match &self.server_name {
            Some(n) => n.clone(),
            None => ServerName::try_from(self.target.host.clone())
                .map_err(|_| format!("'{}' is not a valid TLS server name", self.target.host))?,
        };
        let hp = self.host_port();
        let mut tls = ClientConnection::new(config, name).map_err(|e| Cause::Tls {
            what: format!("TLS setup for {hp} failed"),
            source: e,
        })?;
        let mut sock = sock;
        crate::net::tls::blocking_handshake(&mut tls, &mut sock, &hp).map_err(|e| {
            if sock.stop.as_ref().is_some_and(|s| s.is_set()) {
                "interrupted".to_string()
            } else if e.timed_out() {
                format!(
                    "timed out after {} during the TLS handshake with {hp}",
                    fmt_duration(self.timeout)
                )
            } else {
                e.to_string()
            }
        })?;
        Ok(ClientConn::Tls(Box::new(StreamOwned::new(tls, sock))))
    }

    fn describe(&self, e: ExchangeError) -> Cause {
        let base = self.target.base();
        let waited = fmt_duration(self.timeout);
        match e {
            ExchangeError::Write(e) | ExchangeError::Read(ReadError::Io(e)) if is_stopped(&e) => {
                "interrupted".into()
            }
            ExchangeError::Write(e) if is_timeout(&e) => {
                format!("timed out after {waited} sending a request to {base}").into()
            }
            ExchangeError::Write(e) => Cause::Io {
                what: format!("sending a request to {base} failed"),
                source: e,
            },
            ExchangeError::Read(ReadError::Timeout) => {
                format!("timed out after {waited} waiting for {base}").into()
            }
            ExchangeError::Read(ReadError::ClosedEarly(None)) => {
                format!("server at {base} closed the connection without answering").into()
            }
            ExchangeError::Read(ReadError::ClosedEarly(Some(e))) => Cause::Io {
                what: format!("server at {base} dropped the connection without answering"),
                source: e,
            },
            ExchangeError::Read(ReadError::Truncated) => {
                format!("server at {base} closed the connection in the middle of a response").into()
            }
            ExchangeError::Read(ReadError::NoCloseNotify) => format!(
                "server at {base} closed the connection without TLS close_notify: the response may be truncated"
            )
            .into(),
            ExchangeError::Read(ReadError::Malformed(what)) => {
                format!("server at {base} sent a malformed HTTP response ({what})").into()
            }
            ExchangeError::Read(ReadError::Io(e)) => Cause::Io {
                what: format!("reading the response from {base} failed"),
                source: e,
            },
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn exchange(
    conn: &mut ClientConn,
    req: &[u8],
    head: bool,
) -> Result<(Response, bool), ExchangeError> {
    conn.write_all(req)
        .and_then(|_| conn.flush())
        .map_err(ExchangeError::Write)?;
    let parsed = read_response(conn, head).map_err(ExchangeError::Read)?;
    Ok((
        Response {
            status: parsed.status,
            body: parsed.body,
        },
        parsed.keep_alive,
    ))
}

/// Why reading a response failed.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The peer closed or reset the connection before sending any byte.
    ClosedEarly(Option<io::Error>),
    /// The peer closed the connection part-way through the response.
    Truncated,
    /// A TLS peer closed without close_notify where that close would end the body: it
    /// cannot be told from a truncation.
    NoCloseNotify,
    Timeout,
    Malformed(String),
    Io(io::Error),
}

/// A complete response read off the wire.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub status: u16,
    pub body: Vec<u8>,
    /// Whether the connection can carry another request.
    pub keep_alive: bool,
}

/// Reads one complete HTTP/1.x response from `r` with the engine's parser (src/net/http.rs),
/// keeping its body. `head_request` says the request was HEAD (no body follows). Interim 1xx
/// responses are skipped.
pub(crate) fn read_response<R: Read>(r: &mut R, head_request: bool) -> Result<Parsed, ReadError> {
    let mut parser = ResponseParser::new();
    parser.reset(true, head_request);
    let mut buf = vec![0u8; READ_CHUNK];
    let mut total = 0usize;
    loop {
        let mut clean = true;
        let n = match r.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // TLS peers that close without close_notify.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                clean = false;
                0
            }
            Err(e) => {
                return Err(match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ReadError::Timeout,
                    io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
                        if total == 0 =>
                    {
                        ReadError::ClosedEarly(Some(e))
                    }
                    _ => ReadError::Io(e),
                });
            }
        };
        let progress = if n == 0 {
            match parser.eof() {
                Some(_) if !clean => return Err(ReadError::NoCloseNotify),
                Some(done) => done,
                None if total == 0 => return Err(ReadError::ClosedEarly(None)),
                None => return Err(ReadError::Truncated),
            }
        } else {
            total += n;
            parser
                .feed(&buf[..n])
                .map_err(|e| ReadError::Malformed(e.0.to_string()))?
        };
        if let Progress::Done {
            status,
            close,
            extra,
        } = progress
        {
            return Ok(Parsed {
                status,
                body: parser.take_body(),
                // Bytes beyond the response: do not trust the connection any further.
                keep_alive: !close && !extra,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out at most `step` bytes per read, to exercise buffering.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn parse(data: &[u8], head: bool) -> Result<Parsed, ReadError> {
        for step in [1, 3, 7, 4096] {
            let mut t = Trickle { data, step };
            let r = read_response(&mut t, head);
            if step < 4096 {
                // Same outcome whatever the read sizes.
                let mut s = data;
                let r2 = read_response(&mut s, head);
                assert_eq!(format!("{r:?}"), format!("{r2:?}"));
            } else {
                return r;
            }
        }
        unreachable!()
    }

    #[test]
    fn content_length_body() {
        let p = parse(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"bcd\"}",
            false,
        )
        .unwrap();
        assert_eq!(p.status, 200);
        assert_eq!(p.body, b"{\"a\":\"bcd\"}");
        assert!(p.keep_alive);
    }

    #[test]
    fn chunked_body_with_extensions_and_trailers() {
        let data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
            5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n";
        let p = parse(data, false).unwrap();
        assert_eq!(p.body, b"hello 0123456789");
        assert!(p.keep_alive);
    }

    #[test]
    fn chunked_body_truncated_or_bad() {
        let r = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
            false,
        );
        assert!(matches!(r, Err(ReadError::Truncated)), "{r:?}");
        let r = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            false,
        );
        assert!(matches!(r, Err(ReadError::Malformed(_))), "{r:?}");
        let r = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
            false,
        );
        assert!(matches!(r, Err(ReadError::Malformed(_))), "{r:?}");
        let r = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\nab",
            false,
        );
        assert!(matches!(r, Err(ReadError::Malformed(_))), "{r:?}");
        let r = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n",
            false,
        );
        assert!(matches!(r, Err(ReadError::Malformed(_))), "{r:?}");
    }

    #[test]
    fn connection_close_and_eof_bodies() {
        let p = parse(
            b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 32\r\n\r\n{\"errors\":[\"permission denied\"]}",
            false,
        )
        .unwrap();
        assert_eq!(p.status, 403);
        assert!(!p.keep_alive);
        let p = parse(b"HTTP/1.0 200 OK\r\n\r\nuntil the end", false).unwrap();
        assert_eq!(p.body, b"until the end");
        assert!(!p.keep_alive);
        let p = parse(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
            false,
        )
        .unwrap();
        assert!(p.keep_alive);
    }

    #[test]
    fn no_body_cases_and_interim_responses() {
        let p = parse(b"HTTP/1.1 204 No Content\r\n\r\n", false).unwrap();
        assert_eq!(p.status, 204);
        assert!(p.body.is_empty());
        assert!(p.keep_alive);
        let p = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", true).unwrap();
        assert!(p.body.is_empty());
        let p = parse(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            false,
        )
        .unwrap();
        assert_eq!((p.status, p.body.as_slice()), (200, &b"ok"[..]));
    }

    #[test]
    fn early_close_and_garbage() {
        assert!(matches!(
            parse(b"", false),
            Err(ReadError::ClosedEarly(None))
        ));
        assert!(matches!(
            parse(b"HTTP/1.1 200 OK\r\nContent-Le", false),
            Err(ReadError::Truncated)
        ));
        assert!(matches!(
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", false),
            Err(ReadError::Truncated)
        ));
        assert!(matches!(
            parse(b"SSH-2.0-OpenSSH_9.6\r\n\r\n", false),
            Err(ReadError::Malformed(_))
        ));
        assert!(matches!(
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false),
            Err(ReadError::Malformed(_))
        ));
        assert!(matches!(
            parse(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                false
            ),
            Err(ReadError::Malformed(_))
        ));
        // TLS bytes from an https server spoken to over http.
        assert!(matches!(
            parse(b"\x15\x03\x01\x00\x02\x02\x50", false),
            Err(ReadError::Malformed(_))
        ));
        // Endless head.
        let big = vec![b'a'; MAX_HEAD * 2];
        let mut data = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        data.extend_from_slice(&big);
        let mut s = data.as_slice();
        assert!(matches!(
            read_response(&mut s, false),
            Err(ReadError::Malformed(_))
        ));
    }

    #[test]
    fn never_panics_on_prefixes_and_mutations() {
        let good = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        for end in 0..good.len() {
            let mut s = &good[..end];
            let _ = read_response(&mut s, false);
        }
        for i in 0..good.len() {
            for b in [0u8, b'\n', b'\r', b':', b'0', b'f', 0xff] {
                let mut d = good.to_vec();
                d[i] = b;
                let mut s = d.as_slice();
                let _ = read_response(&mut s, false);
            }
        }
    }

    #[test]
    fn error_text_forms() {
        let r = Response {
            status: 400,
            body: br#"{"errors":["one","two\nlines"]}"#.to_vec(),
        };
        assert_eq!(r.error_text(), "one; two lines");
        let r = Response {
            status: 404,
            body: br#"{"errors":[]}"#.to_vec(),
        };
        assert_eq!(r.error_text(), "no error details");
        let r = Response {
            status: 502,
            body: b"<html>\n<b>Bad gateway</b></html>".to_vec(),
        };
        assert_eq!(r.error_text(), "<html> <b>Bad gateway</b></html>");
        let r = Response {
            status: 500,
            body: vec![b'x'; 1000],
        };
        assert_eq!(r.error_text().len(), 203);
        let r = Response {
            status: 500,
            body: vec![],
        };
        assert_eq!(r.error_text(), "empty response body");
        assert!(r.json().is_none());
    }

    #[test]
    fn durations() {
        assert_eq!(fmt_duration(Duration::from_secs(30)), "30s");
        assert_eq!(fmt_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(fmt_duration(Duration::from_millis(1500)), "1.5s");
    }

    fn target() -> Target {
        Target::parse("http://127.0.0.1:8200").unwrap()
    }

    #[test]
    fn request_building_refuses_bad_methods_paths_and_headers() {
        let c = BlockingClient::new(&target(), None, None, Duration::from_secs(5));
        let req = c
            .build_request("POST", "/v1/x", &[("X-A", "b")], Some(b"{}"))
            .unwrap();
        let text = String::from_utf8(req).unwrap();
        assert!(text.starts_with("POST /v1/x HTTP/1.1\r\nHost: 127.0.0.1:8200\r\n"));
        assert!(text.contains("Accept: application/json\r\nX-A: b\r\nContent-Type"));
        assert!(text.contains("Content-Type: application/json\r\nContent-Length: 2\r\n"));
        assert!(text.ends_with("\r\n\r\n{}"));
        let get = String::from_utf8(c.build_request("GET", "/v1/y", &[], None).unwrap()).unwrap();
        assert!(!get.contains("Content-Length"));
        let post = String::from_utf8(c.build_request("POST", "/v1/y", &[], None).unwrap()).unwrap();
        assert!(post.contains("Content-Length: 0\r\n"));
        assert!(c.build_request("GET", "/v1/a b", &[], None).is_err());
        assert!(c.build_request("GET", "v1/a", &[], None).is_err());
        assert!(c.build_request("G T", "/v1/a", &[], None).is_err());
        let e = c
            .build_request("GET", "/v1/a", &[("X-Secret", "zq9\r\nX: y")], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("X-Secret") && !e.contains("zq9"), "{e}");
    }

    #[test]
    fn keep_alive_reuse_and_reconnect_against_a_local_server() {
        use std::net::TcpListener;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            // First connection answers two requests, then closes without answering the third.
            let mut accepted = 0;
            for stream in listener.incoming().take(2) {
                let mut s = stream.unwrap();
                accepted += 1;
                let answers = if accepted == 1 { 2 } else { 1 };
                let mut buf = [0u8; 4096];
                for _ in 0..answers {
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        let n = s.read(&mut buf).unwrap();
                        if n == 0 {
                            return accepted;
                        }
                        got.extend_from_slice(&buf[..n]);
                    }
                    s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
                        .unwrap();
                }
            }
            accepted
        });
        let t = Target::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let mut c = BlockingClient::new(&t, None, None, Duration::from_secs(5));
        for _ in 0..3 {
            let r = c.request("GET", "/v1/sys/health", &[], None).unwrap();
            assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
        }
        drop(c);
        assert_eq!(server.join().unwrap(), 2);
    }

    #[test]
    fn connection_refused_names_the_address() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let t = Target::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let mut c = BlockingClient::new(&t, None, None, Duration::from_secs(2));
        let e = c
            .request("GET", "/v1/sys/health", &[], None)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("cannot connect to http://127.0.0.1:{port}: ")),
            "{e}"
        );
    }

    /// A local server that answers every connection with an endless response head, one
    /// byte every `gap`, for at most 10 s.
    fn trickle_server(gap: Duration) -> (Target, std::thread::JoinHandle<()>) {
        use std::net::TcpListener;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let end = std::time::Instant::now() + Duration::from_secs(10);
            let head = b"HTTP/1.1 200 OK\r\nX-Slow: ";
            if s.write_all(head).is_err() {
                return;
            }
            while std::time::Instant::now() < end {
                std::thread::sleep(gap);
                if s.write_all(b"a").is_err() {
                    return;
                }
            }
        });
        let t = Target::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        (t, server)
    }

    /// Issue 8, defect 10: the timeout bounds the whole request, not each read.
    #[test]
    fn timeout_bounds_a_trickled_response() {
        let (t, server) = trickle_server(Duration::from_millis(50));
        let mut c = BlockingClient::new(&t, None, None, Duration::from_millis(400));
        let e = c
            .request("GET", "/v1/sys/health", &[], None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!("timed out after 400ms waiting for {}", t.base()),
            "{e}"
        );
        drop(c);
        server.join().unwrap();
    }

    /// Issue 8, defect 10: a raised stop flag ends a request between reads.
    #[test]
    fn stop_flag_interrupts_a_request() {
        let (t, server) = trickle_server(Duration::from_millis(50));
        let stop = Stop::new();
        let mut c = BlockingClient::new(&t, None, None, Duration::ZERO).with_stop(stop.clone());
        let raiser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stop.request(crate::signals::Signal::Interrupt);
        });
        let e = c
            .request("GET", "/v1/sys/health", &[], None)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "interrupted");
        // Later requests do not even connect.
        assert_eq!(
            c.request("GET", "/v1/sys/health", &[], None)
                .unwrap_err()
                .to_string(),
            "interrupted"
        );
        raiser.join().unwrap();
        drop(c);
        server.join().unwrap();
    }
}
