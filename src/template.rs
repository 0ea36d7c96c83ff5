//! Request templates: the bytes of a request built once per operation, with fixed-width
//! slots that are patched in place for each request (a secret's index, random hex).
//! The length never changes, so Content-Length is fixed at build time.

use serde::{Deserialize, Serialize};

/// A piece of a path or body: literal bytes or a slot.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Piece {
    Lit(Vec<u8>),
    /// A uniformly random index in 0..count, zero-padded to the digits of count-1.
    Index {
        count: u64,
    },
    /// `width` random lowercase hex characters.
    Hex {
        width: usize,
    },
}

impl Piece {
    pub fn lit(s: impl AsRef<[u8]>) -> Piece {
        Piece::Lit(s.as_ref().to_vec())
    }
}

/// Digits needed to write every index below `count` (at least one).
pub fn index_width(count: u64) -> usize {
    let mut w = 1;
    let mut v = count.saturating_sub(1);
    while v >= 10 {
        v /= 10;
        w += 1;
    }
    w
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
enum SlotKind {
    Index { count: u64 },
    Hex,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Slot {
    offset: usize,
    width: usize,
    kind: SlotKind,
}

/// What an operation sends, before it is rendered into bytes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestSpec {
    pub method: String,
    pub path: Vec<Piece>,
    /// Extra headers (name, value), after Host and the Vault headers.
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<Piece>>,
}

/// Connection-level facts every template of a run shares.
#[derive(Clone, Debug, Default)]
pub struct Common {
    pub host: String,
    pub token: Option<String>,
    pub namespace: Option<String>,
    /// Ask the server to close after the response (`--no-keepalive`).
    pub close: bool,
}

/// A rendered request with its patch slots.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Template {
    bytes: Vec<u8>,
    slots: Vec<Slot>,
    /// A HEAD request: its response has no body, whatever its headers say.
    head: bool,
}

fn push_pieces(out: &mut Vec<u8>, slots: &mut Vec<Slot>, pieces: &[Piece]) {
    for p in pieces {
        match p {
            Piece::Lit(b) => out.extend_from_slice(b),
            Piece::Index { count } => {
                let width = index_width(*count);
                slots.push(Slot {
                    offset: out.len(),
                    width,
                    kind: SlotKind::Index {
                        count: (*count).max(1),
                    },
                });
                out.resize(out.len() + width, b'0');
            }
            Piece::Hex { width } => {
                slots.push(Slot {
                    offset: out.len(),
                    width: *width,
                    kind: SlotKind::Hex,
                });
                out.resize(out.len() + width, b'0');
            }
        }
    }
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
}

impl Template {
    pub fn build(spec: &RequestSpec, common: &Common) -> Template {
        let mut out = Vec::with_capacity(256);
        let mut slots = Vec::new();
        out.extend_from_slice(spec.method.as_bytes());
        out.push(b' ');
        push_pieces(&mut out, &mut slots, &spec.path);
        out.extend_from_slice(b" HTTP/1.1\r\n");
        let h = &spec.headers;
        let mut header = |name: &str, value: &str| {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        };
        if !has_header(h, "host") {
            header("Host", &common.host);
        }
        if let Some(t) = &common.token
            && !has_header(h, "x-vault-token")
        {
            header("X-Vault-Token", t);
        }
        if let Some(ns) = &common.namespace
            && !has_header(h, "x-vault-namespace")
        {
            header("X-Vault-Namespace", ns);
        }
        if !has_header(h, "user-agent") {
            header("User-Agent", concat!("vblast/", env!("CARGO_PKG_VERSION")));
        }
        for (n, v) in h {
            header(n, v);
        }
        if common.close && !has_header(h, "connection") {
            header("Connection", "close");
        }
        let mut body = Vec::new();
        let mut body_slots = Vec::new();
        if let Some(pieces) = &spec.body {
            push_pieces(&mut body, &mut body_slots, pieces);
        }
        let method_has_body = matches!(spec.method.as_str(), "POST" | "PUT" | "PATCH");
        if (spec.body.is_some() || method_has_body) && !has_header(h, "content-length") {
            header("Content-Length", &body.len().to_string());
        }
        out.extend_from_slice(b"\r\n");
        let base = out.len();
        out.extend_from_slice(&body);
        slots.extend(body_slots.into_iter().map(|mut s| {
            s.offset += base;
            s
        }));
        Template {
            bytes: out,
            slots,
            head: spec.method.eq_ignore_ascii_case("HEAD"),
        }
    }

    /// Whether the response to this request carries a body (not for HEAD).
    pub fn response_has_body(&self) -> bool {
        !self.head
    }

    /// Fills every slot with fresh values and returns the request bytes.
    #[inline]
    pub fn render(&mut self, rng: &mut Rng) -> &[u8] {
        for s in &self.slots {
            let dst = &mut self.bytes[s.offset..s.offset + s.width];
            match s.kind {
                SlotKind::Index { count } => {
                    let mut v = rng.below(count);
                    for b in dst.iter_mut().rev() {
                        *b = b'0' + (v % 10) as u8;
                        v /= 10;
                    }
                }
                SlotKind::Hex => {
                    let mut bits = 0u64;
                    for (i, b) in dst.iter_mut().enumerate() {
                        if i % 16 == 0 {
                            bits = rng.next_u64();
                        }
                        *b = b"0123456789abcdef"[(bits & 15) as usize];
                        bits >>= 4;
                    }
                }
            }
        }
        &self.bytes
    }
}

/// xorshift64*: a small, fast generator for picking secrets and operations (not for secrets).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Seeded from the clock, the process id and `salt`.
    pub fn seeded(salt: u64) -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Rng::new(
            t ^ (u64::from(std::process::id()) << 32) ^ salt.wrapping_mul(0xA24B_AED4_963E_E407),
        )
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in 0..n (n > 0), by multiply-shift.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common() -> Common {
        Common {
            host: "127.0.0.1:8200".into(),
            token: Some("root".into()),
            namespace: None,
            close: false,
        }
    }

    #[test]
    fn renders_a_get_and_patches_the_index() {
        let spec = RequestSpec {
            method: "GET".into(),
            path: vec![Piece::lit("/v1/kv/data/s"), Piece::Index { count: 1000 }],
            headers: vec![],
            body: None,
        };
        let mut t = Template::build(&spec, &common());
        let mut rng = Rng::new(7);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2000 {
            let text = String::from_utf8(t.render(&mut rng).to_vec()).unwrap();
            assert!(text.starts_with("GET /v1/kv/data/s"));
            assert!(text.contains("\r\nX-Vault-Token: root\r\n"));
            assert!(text.ends_with("\r\n\r\n"));
            assert!(!text.contains("Content-Length"));
            let idx: u64 = text[17..20].parse().unwrap();
            assert!(idx < 1000);
            seen.insert(idx);
        }
        assert!(seen.len() > 800, "indices are spread: {}", seen.len());
    }

    #[test]
    fn body_slots_keep_content_length_right() {
        let spec = RequestSpec {
            method: "POST".into(),
            path: vec![Piece::lit("/v1/kv/data/s"), Piece::Index { count: 10 }],
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(vec![
                Piece::lit("{\"data\":{\"value\":\""),
                Piece::Hex { width: 40 },
                Piece::lit("\"}}"),
            ]),
        };
        let mut c = common();
        c.close = true;
        let mut t = Template::build(&spec, &c);
        let text = String::from_utf8(t.render(&mut Rng::new(1)).to_vec()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("Content-Length: 61"), "{head}");
        assert!(head.contains("Connection: close"));
        assert_eq!(body.len(), 61);
        assert!(serde_json::from_str::<serde_json::Value>(body).is_ok());
    }

    #[test]
    fn widths_and_ranges() {
        assert_eq!(index_width(1), 1);
        assert_eq!(index_width(10), 1);
        assert_eq!(index_width(11), 2);
        assert_eq!(index_width(1000), 3);
        assert_eq!(index_width(1001), 4);
        let mut r = Rng::new(3);
        assert!((0..10_000).all(|_| r.below(7) < 7));
    }
}
