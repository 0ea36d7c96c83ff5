//! A tiny blocking HTTP/1.1 client (plain or TLS, trusting one CA) for checking a
//! server's state from a test: one request per connection, the response framed by
//! Content-Length, chunked encoding or EOF.

use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A parsed HTTP response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    /// Header (name, value) pairs in order; names as sent.
    pub headers: Vec<(String, String)>,
    /// Body, de-chunked.
    pub body: Vec<u8>,
    /// Whether the body was sent with `Transfer-Encoding: chunked`.
    pub chunked: bool,
}

impl HttpResponse {
    /// First header value with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

fn tls_config(ca_cert: Option<&Path>) -> io::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = ca_cert {
        let pem = fs::read(ca)?;
        for c in rustls_pemfile::certs(&mut &pem[..]) {
            roots
                .add(c?)
                .map_err(|e| io::Error::other(format!("bad CA cert {}: {e}", ca.display())))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
}

/// One blocking HTTP/1.1 request to `base` (`http://host:port` or
/// `https://host:port`; TLS trusts only `ca_cert`). The connection is
/// keep-alive style (no `Connection: close` sent) and is dropped afterwards;
/// the response is framed by Content-Length, chunked encoding, or EOF.
pub fn http_request(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    ca_cert: Option<&Path>,
) -> io::Result<HttpResponse> {
    let (tls, hostport) = if let Some(r) = base.strip_prefix("https://") {
        (true, r.trim_end_matches('/'))
    } else if let Some(r) = base.strip_prefix("http://") {
        (false, r.trim_end_matches('/'))
    } else {
        return Err(io::Error::other(format!("bad base URL {base}")));
    };
    let host = hostport
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(hostport)
        .trim_matches(|c| c == '[' || c == ']')
        .to_string();
    let tcp = TcpStream::connect(hostport)?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
    tcp.set_write_timeout(Some(Duration::from_secs(10)))?;
    tcp.set_nodelay(true)?;
    let mut stream: Box<dyn Stream> = if tls {
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|e| io::Error::other(format!("bad server name {host}: {e}")))?;
        let conn =
            rustls::ClientConnection::new(tls_config(ca_cert)?, name).map_err(io::Error::other)?;
        Box::new(rustls::StreamOwned::new(conn, tcp))
    } else {
        Box::new(tcp)
    };
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {hostport}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!("Content-Length: {}\r\n", b.len()));
    } else if matches!(method, "POST" | "PUT" | "PATCH") {
        req.push_str("Content-Length: 0\r\n");
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    if let Some(b) = body {
        bytes.extend_from_slice(b);
    }
    stream.write_all(&bytes)?;
    stream.flush()?;
    read_response(&mut BufReader::new(stream), method == "HEAD")
}

fn read_line(r: &mut impl BufRead) -> io::Result<String> {
    let mut line = String::new();
    let n = r.read_line(&mut line)?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed while reading response",
        ));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

fn read_response(r: &mut impl BufRead, head_only: bool) -> io::Result<HttpResponse> {
    let status_line = read_line(r)?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad status line {status_line:?}"),
        ));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad status code"))?;
    let mut headers = Vec::new();
    loop {
        let line = read_line(r)?;
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut resp = HttpResponse {
        status,
        headers,
        body: Vec::new(),
        chunked: false,
    };
    if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
        return Ok(resp);
    }
    let chunked = resp
        .header("Transfer-Encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        resp.chunked = true;
        loop {
            let size_line = read_line(r)?;
            let size_hex = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad chunk size {size_line:?}"),
                )
            })?;
            if size == 0 {
                // Trailers until empty line.
                while !read_line(r)?.is_empty() {}
                break;
            }
            let start = resp.body.len();
            resp.body.resize(start + size, 0);
            r.read_exact(&mut resp.body[start..])?;
            let crlf = read_line(r)?;
            if !crlf.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "missing CRLF after chunk",
                ));
            }
        }
    } else if let Some(cl) = resp.header("Content-Length") {
        let n: usize = cl
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad Content-Length"))?;
        resp.body.resize(n, 0);
        r.read_exact(&mut resp.body)?;
    } else {
        // Read until EOF; tolerate a TLS peer closing without close_notify.
        match r.read_to_end(&mut resp.body) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {}
            Err(e) => return Err(e),
        }
    }
    Ok(resp)
}

/// The text a `--metrics-listen` exporter at `addr` serves on `/metrics` (empty when it
/// does not answer).
pub fn scrape(addr: &str) -> String {
    http_request(
        &format!("http://{addr}"),
        "GET",
        "/metrics",
        &[],
        None,
        None,
    )
    .map(|r| r.text())
    .unwrap_or_default()
}
