//! Requests as HTTP/2 header blocks, from the HTTP/1.1 bytes a request template renders
//! (`src/template.rs`): the request line becomes `:method`, `:scheme`, `:path`, `Host`
//! becomes `:authority`, header names are lower-cased and the connection-specific ones
//! (`Connection`, `Keep-Alive`, `Transfer-Encoding`, `Upgrade`, `Proxy-Connection`) left
//! out (RFC 9113 §8.2.2); the body goes in DATA frames.
//!
//! Encoded with HPACK literals that never touch the dynamic table (RFC 7541 §6.2.2, and
//! "never indexed", §6.2.3, for `x-vault-token`), without Huffman coding: the block then
//! means the same on every connection, so what does not change per request is encoded
//! once (`Prepared`), and a request costs the copy of that block with its path spliced
//! in. A request with captured values (a token from a login) has a variable length and
//! is encoded whole per request into the connection's buffer, still without allocating.

/// The static table indices used (RFC 7541 Appendix A).
const AUTHORITY: usize = 1;
const METHOD_GET: usize = 2;
const METHOD_POST: usize = 3;
const METHOD: usize = 2;
const PATH: usize = 4;
const SCHEME_HTTP: usize = 6;
const SCHEME_HTTPS: usize = 7;

/// Appends an HPACK integer with an `n`-bit prefix whose high bits are `first`.
fn put_int(out: &mut Vec<u8>, first: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// Appends a string literal without Huffman coding.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// A literal field with a static-table name: never indexed when `secret`.
fn put_indexed_name(out: &mut Vec<u8>, index: usize, value: &[u8]) {
    put_int(out, 0x00, 4, index);
    put_str(out, value);
}

/// A literal field with a literal name (lower-cased as it is copied).
fn put_literal(out: &mut Vec<u8>, name: &[u8], value: &[u8], secret: bool) {
    out.push(if secret { 0x10 } else { 0x00 });
    put_int(out, 0, 7, name.len());
    out.extend(name.iter().map(u8::to_ascii_lowercase));
    put_str(out, value);
}

/// A header HTTP/2 forbids (or carries otherwise: Host).
fn dropped(name: &[u8]) -> bool {
    const NAMES: [&[u8]; 6] = [
        b"host",
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
    ];
    NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Where the parts of a rendered HTTP/1.1 request lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLayout {
    pub method: (usize, usize),
    pub path: (usize, usize),
    /// The header lines (after the request line, before the blank line).
    pub headers: (usize, usize),
    /// Where the body starts.
    pub body: usize,
}

/// Finds the parts of a rendered request (None: not a request line and headers).
pub fn layout(req: &[u8]) -> Option<RequestLayout> {
    let sp = req.iter().position(|&b| b == b' ')?;
    let eol = find(req, b"\r\n")?;
    let line = &req[..eol];
    let sp2 = line.iter().rposition(|&b| b == b' ')?;
    if sp2 <= sp {
        return None;
    }
    let end = find(req, b"\r\n\r\n")?;
    Some(RequestLayout {
        method: (0, sp),
        path: (sp + 1, sp2),
        headers: (eol + 2, end + 2),
        body: end + 4,
    })
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// Each header line of `lines` as (name, value), the value's spaces trimmed.
fn header_lines(lines: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    lines.split(|&b| b == b'\n').filter_map(|l| {
        let l = l.strip_suffix(b"\r").unwrap_or(l);
        let colon = l.iter().position(|&b| b == b':')?;
        Some((&l[..colon], l[colon + 1..].trim_ascii()))
    })
}

/// The pseudo-headers before `:path`: method, scheme and authority (from Host).
fn put_pseudo(out: &mut Vec<u8>, req: &[u8], at: &RequestLayout, https: bool) {
    match &req[at.method.0..at.method.1] {
        b"GET" => put_int(out, 0x80, 7, METHOD_GET),
        b"POST" => put_int(out, 0x80, 7, METHOD_POST),
        m => put_indexed_name(out, METHOD, m),
    }
    put_int(out, 0x80, 7, if https { SCHEME_HTTPS } else { SCHEME_HTTP });
    let lines = &req[at.headers.0..at.headers.1];
    if let Some((_, host)) = header_lines(lines).find(|(n, _)| n.eq_ignore_ascii_case(b"host")) {
        put_indexed_name(out, AUTHORITY, host);
    }
}

/// The regular headers, in order.
fn put_regular(out: &mut Vec<u8>, req: &[u8], at: &RequestLayout) {
    for (name, value) in header_lines(&req[at.headers.0..at.headers.1]) {
        if !dropped(name) {
            put_literal(
                out,
                name,
                value,
                name.eq_ignore_ascii_case(b"x-vault-token"),
            );
        }
    }
}

/// Encodes the whole header block of the rendered request `req` onto `out`; returns
/// where its body starts (None: `req` is not a request).
pub fn encode(out: &mut Vec<u8>, req: &[u8], https: bool) -> Option<usize> {
    let at = layout(req)?;
    put_pseudo(out, req, &at, https);
    put_indexed_name(out, PATH, &req[at.path.0..at.path.1]);
    put_regular(out, req, &at);
    Some(at.body)
}

/// A template's header block encoded once: everything but `:path`, which is copied from
/// each rendered request (its slots change, its length does not).
#[derive(Clone, Debug)]
pub struct Prepared {
    before_path: Vec<u8>,
    after_path: Vec<u8>,
    path: (usize, usize),
    body: usize,
}

impl Prepared {
    /// From one rendering of a fixed-length template (None: `req` is not a request).
    pub fn new(req: &[u8], https: bool) -> Option<Prepared> {
        let at = layout(req)?;
        let mut before_path = Vec::new();
        put_pseudo(&mut before_path, req, &at, https);
        let mut after_path = Vec::new();
        put_regular(&mut after_path, req, &at);
        Some(Prepared {
            before_path,
            after_path,
            path: at.path,
            body: at.body,
        })
    }

    /// The block of this rendering of the template onto `out`; returns where its body
    /// starts.
    #[inline]
    pub fn encode(&self, out: &mut Vec<u8>, req: &[u8]) -> usize {
        out.extend_from_slice(&self.before_path);
        put_indexed_name(out, PATH, &req[self.path.0..self.path.1]);
        out.extend_from_slice(&self.after_path);
        self.body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a block with the crate the connection decodes responses with.
    fn decode(block: &[u8]) -> Vec<(String, String)> {
        let mut d = loona_hpack::Decoder::new();
        let mut v = Vec::new();
        d.decode_with_cb(block, |n, val| {
            v.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(val.to_vec()).unwrap(),
            ))
        })
        .unwrap();
        v
    }

    const REQ: &[u8] = b"POST /v1/kv/data/s007 HTTP/1.1\r\nHost: 127.0.0.1:8200\r\nX-Vault-Token: root\r\nUser-Agent: vblast/0\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}";

    #[test]
    fn a_request_becomes_pseudo_headers_then_lowercase_headers() {
        let mut out = Vec::new();
        let body = encode(&mut out, REQ, true).unwrap();
        assert_eq!(&REQ[body..], b"{}");
        let got = decode(&out);
        let want: Vec<(String, String)> = [
            (":method", "POST"),
            (":scheme", "https"),
            (":authority", "127.0.0.1:8200"),
            (":path", "/v1/kv/data/s007"),
            ("x-vault-token", "root"),
            ("user-agent", "vblast/0"),
            ("content-length", "2"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(got, want);
        // The token is sent "never indexed" (0x10 and a literal name).
        assert!(find(&out, b"\x10\x0dx-vault-token").is_some());
    }

    #[test]
    fn a_prepared_block_equals_the_whole_encoding_with_the_path_spliced() {
        let p = Prepared::new(REQ, false).unwrap();
        let mut other = REQ.to_vec();
        other[20] = b'9'; // s009
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let body = p.encode(&mut a, &other);
        encode(&mut b, &other, false).unwrap();
        assert_eq!(a, b);
        assert_eq!(&other[body..], b"{}");
        assert!(decode(&a).contains(&(":path".into(), "/v1/kv/data/s009".into())));
    }

    #[test]
    fn long_values_use_multi_byte_integers_and_other_methods_a_literal() {
        let path = format!("/{}", "a".repeat(300));
        let req = format!("DELETE {path} HTTP/1.1\r\nHost: h\r\n\r\n");
        let mut out = Vec::new();
        encode(&mut out, req.as_bytes(), false).unwrap();
        let got = decode(&out);
        assert_eq!(got[0], (":method".into(), "DELETE".into()));
        assert_eq!(got[3], (":path".into(), path));
        assert!(layout(b"nonsense").is_none());
    }
}
