//! Request templates: the bytes of a request built once per operation, with fixed-width
//! slots that are patched in place for each request (a secret's index, random hex), so the
//! length never changes and Content-Length is fixed at build time. Operations that send a
//! value captured from an earlier response on the same connection (a login's token) have
//! variable-length pieces: those requests are assembled per request into a buffer the
//! template keeps, with Content-Length computed each time, still without an allocation.

use serde::{Deserialize, Serialize};

pub use crate::capture::Captures;

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
    /// The next index in turn, 0..count, zero-padded as `Index`: the i-th request this
    /// process renders from the template (over all its threads) gets i mod count.
    Turn {
        count: u64,
    },
    /// One of these byte strings, all of the same length, in turn as `Turn` (pre-signed
    /// login tokens); items of another length than the first are left out.
    Pool {
        items: Vec<Vec<u8>>,
    },
    /// The value captured into this connection's slot (variable length).
    Captured {
        slot: u8,
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
    Index {
        count: u64,
    },
    Hex,
    Turn {
        count: u64,
    },
    /// `pools[pool]`: items of `width` bytes, one after another.
    Pool {
        pool: usize,
    },
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
struct PatchSlot {
    offset: usize,
    width: usize,
    kind: SlotKind,
}

/// What an operation sends, before it is rendered into bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestSpec {
    pub method: String,
    pub path: Vec<Piece>,
    /// Extra headers (name, value), after Host and the Vault headers.
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<Piece>>,
    /// Headers whose value is a captured value: (name, slot). An `X-Vault-Token` here
    /// replaces the run's token.
    #[serde(default)]
    pub captured_headers: Vec<(String, u8)>,
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
    slots: Vec<PatchSlot>,
    /// A HEAD request: its response has no body, whatever its headers say.
    head: bool,
    /// Where captured values go, in order of offset (empty: a fixed-length request).
    inserts: Vec<Insert>,
    /// Variable requests with a body: the digits of Content-Length in `bytes`, and the
    /// body's length without its captured values.
    length: Option<(usize, usize, usize)>,
    /// Where the body begins in `bytes`.
    #[serde(default)]
    body_at: usize,
    /// Variable requests are assembled here.
    #[serde(skip)]
    out: Vec<u8>,
    /// The items of `Pool` slots, each pool's items concatenated; shared by the template's
    /// clones (threads) and its other nodes' versions (`sharing_turns_with`), as a JWT pool
    /// may be large.
    #[serde(default, with = "shared_pools")]
    pools: std::sync::Arc<Vec<Vec<u8>>>,
    /// Requests rendered so far by this template and its clones (the threads' copies), for
    /// `Turn` and `Pool` slots; counted only when the template has such a slot.
    #[serde(skip)]
    turn: std::sync::Arc<std::sync::atomic::AtomicU64>,
    #[serde(default)]
    has_turns: bool,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Insert {
    offset: usize,
    slot: u8,
    in_body: bool,
}

fn push_pieces(
    out: &mut Vec<u8>,
    slots: &mut Vec<PatchSlot>,
    inserts: &mut Vec<Insert>,
    pools: &mut Vec<Vec<u8>>,
    pieces: &[Piece],
) {
    for p in pieces {
        match p {
            Piece::Captured { slot } => inserts.push(Insert {
                offset: out.len(),
                slot: *slot,
                in_body: false,
            }),
            Piece::Lit(b) => out.extend_from_slice(b),
            Piece::Index { count } => {
                let width = index_width(*count);
                slots.push(PatchSlot {
                    offset: out.len(),
                    width,
                    kind: SlotKind::Index {
                        count: (*count).max(1),
                    },
                });
                out.resize(out.len() + width, b'0');
            }
            Piece::Hex { width } => {
                slots.push(PatchSlot {
                    offset: out.len(),
                    width: *width,
                    kind: SlotKind::Hex,
                });
                out.resize(out.len() + width, b'0');
            }
            Piece::Turn { count } => {
                let width = index_width(*count);
                slots.push(PatchSlot {
                    offset: out.len(),
                    width,
                    kind: SlotKind::Turn {
                        count: (*count).max(1),
                    },
                });
                out.resize(out.len() + width, b'0');
            }
            Piece::Pool { items } => {
                let Some(first) = items.first() else {
                    continue;
                };
                let width = first.len();
                let joined: Vec<u8> = items
                    .iter()
                    .filter(|i| i.len() == width)
                    .flatten()
                    .copied()
                    .collect();
                out.extend_from_slice(first);
                if width > 0 {
                    slots.push(PatchSlot {
                        offset: out.len() - width,
                        width,
                        kind: SlotKind::Pool { pool: pools.len() },
                    });
                    pools.push(joined);
                }
            }
        }
    }
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// The request's headers: Host, the token and the namespace unless given, the given ones,
/// and `Connection: close` when asked (the captured ones come after). No User-Agent unless
/// a `-H` gives one: the server parses every header of every request, and nginx spent 4%
/// more instructions per request on vblast's User-Agent (docs/benchmarks.md); the setup
/// requests (`net::blocking`) still name vblast.
fn push_headers(out: &mut Vec<u8>, spec: &RequestSpec, common: &Common) {
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
    let captured_token = spec
        .captured_headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("x-vault-token"));
    if let Some(t) = &common.token
        && !has_header(h, "x-vault-token")
        && !captured_token
    {
        header("X-Vault-Token", t);
    }
    if let Some(ns) = &common.namespace
        && !has_header(h, "x-vault-namespace")
    {
        header("X-Vault-Namespace", ns);
    }
    for (n, v) in h {
        header(n, v);
    }
    if common.close && !has_header(h, "connection") {
        header("Connection", "close");
    }
}

impl Template {
    pub fn build(spec: &RequestSpec, common: &Common) -> Template {
        let mut out = Vec::with_capacity(256);
        let mut slots = Vec::new();
        let mut inserts = Vec::new();
        let mut pools = Vec::new();
        out.extend_from_slice(spec.method.as_bytes());
        out.push(b' ');
        push_pieces(&mut out, &mut slots, &mut inserts, &mut pools, &spec.path);
        out.extend_from_slice(b" HTTP/1.1\r\n");
        push_headers(&mut out, spec, common);
        for (name, slot) in &spec.captured_headers {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            inserts.push(Insert {
                offset: out.len(),
                slot: *slot,
                in_body: false,
            });
            out.extend_from_slice(b"\r\n");
        }
        let mut body = Vec::new();
        let mut body_slots = Vec::new();
        let mut body_inserts = Vec::new();
        if let Some(pieces) = &spec.body {
            push_pieces(
                &mut body,
                &mut body_slots,
                &mut body_inserts,
                &mut pools,
                pieces,
            );
        }
        let method_has_body = matches!(spec.method.as_str(), "POST" | "PUT" | "PATCH");
        let mut length = None;
        if (spec.body.is_some() || method_has_body) && !has_header(&spec.headers, "content-length")
        {
            let digits = body.len().to_string();
            out.extend_from_slice(b"Content-Length: ");
            let at = out.len();
            out.extend_from_slice(digits.as_bytes());
            out.extend_from_slice(b"\r\n");
            if !body_inserts.is_empty() {
                length = Some((at, at + digits.len(), body.len()));
            }
        }
        out.extend_from_slice(b"\r\n");
        let base = out.len();
        out.extend_from_slice(&body);
        slots.extend(body_slots.into_iter().map(|mut s| {
            s.offset += base;
            s
        }));
        inserts.extend(body_inserts.into_iter().map(|mut i| {
            i.offset += base;
            i.in_body = true;
            i
        }));
        let has_turns = slots
            .iter()
            .any(|s| matches!(s.kind, SlotKind::Turn { .. } | SlotKind::Pool { .. }));
        Template {
            out: Vec::with_capacity(if inserts.is_empty() {
                0
            } else {
                out.len() + 512
            }),
            body_at: base,
            bytes: out,
            slots,
            head: spec.method.eq_ignore_ascii_case("HEAD"),
            inserts,
            length,
            has_turns,
            pools: std::sync::Arc::new(pools),
            turn: Default::default(),
        }
    }

    /// This template (another node's version of the same request: another Host) taking
    /// its turns and pools from `other`, so that the i-th request of the operation gets
    /// turn i whichever node it goes to, and a pool is held once.
    pub fn sharing_turns_with(mut self, other: &Template) -> Template {
        debug_assert_eq!(self.pools, other.pools);
        self.turn = other.turn.clone();
        self.pools = other.pools.clone();
        self
    }

    /// The turn the next request rendered from this template takes (advancing the count
    /// its clones share); 0, without touching the count, when it has no turn or pool slot.
    #[inline]
    pub fn next_turn(&self) -> u64 {
        if self.has_turns {
            self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        } else {
            0
        }
    }

    /// Whether this request carries captured values (and so has a variable length).
    pub fn uses_captures(&self) -> bool {
        !self.inserts.is_empty()
    }

    /// Fills every slot and inserts this connection's captured values (an empty slot
    /// inserts nothing); returns the request bytes. (The engine takes the turn itself,
    /// `next_turn`, and keeps it for a re-send: `render_at`.)
    #[cfg(test)]
    pub fn render_with(&mut self, rng: &mut Rng, captures: &Captures) -> &[u8] {
        let turn = self.next_turn();
        self.render_at(rng, turn, captures)
    }

    /// As `render_with`, with the turn given (`next_turn`): a request sent again (after a
    /// redirect) is rendered with its saved generator state and turn, so it is the same
    /// request, with the same pool item.
    #[inline]
    pub fn render_at(&mut self, rng: &mut Rng, turn: u64, captures: &Captures) -> &[u8] {
        if self.inserts.is_empty() {
            return self.fill(rng, turn);
        }
        self.fill(rng, turn);
        let out = &mut self.out;
        out.clear();
        let mut pos = 0;
        let mut length_done = self.length.is_none();
        for ins in &self.inserts {
            if !length_done
                && let Some((start, end, fixed)) = self.length
                && ins.offset >= end
            {
                out.extend_from_slice(&self.bytes[pos..start]);
                let captured: usize = self
                    .inserts
                    .iter()
                    .filter(|i| i.in_body)
                    .map(|i| captures.get(i.slot).map_or(0, <[u8]>::len))
                    .sum();
                push_decimal(out, fixed + captured);
                pos = end;
                length_done = true;
            }
            out.extend_from_slice(&self.bytes[pos..ins.offset]);
            out.extend_from_slice(captures.get(ins.slot).unwrap_or(&[]));
            pos = ins.offset;
        }
        out.extend_from_slice(&self.bytes[pos..]);
        &self.out
    }

    /// The body length of the request last rendered with `captures` (vegeta's bytes out).
    #[inline]
    pub fn body_len(&self, captures: &Captures) -> u64 {
        let captured: usize = match self.length {
            Some(_) => self
                .inserts
                .iter()
                .filter(|i| i.in_body)
                .map(|i| captures.get(i.slot).map_or(0, <[u8]>::len))
                .sum(),
            None => 0,
        };
        (self.bytes.len() - self.body_at + captured) as u64
    }

    /// Whether the response to this request carries a body (not for HEAD).
    pub fn response_has_body(&self) -> bool {
        !self.head
    }

    /// Fills every slot with fresh values and returns the request bytes.
    #[inline]
    pub fn render(&mut self, rng: &mut Rng) -> &[u8] {
        let turn = self.next_turn();
        self.fill(rng, turn)
    }

    /// Fills every slot (`Turn` and `Pool` slots with `turn`) and returns the bytes.
    #[inline]
    fn fill(&mut self, rng: &mut Rng, turn: u64) -> &[u8] {
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
                SlotKind::Turn { count } => {
                    let mut v = turn % count;
                    for b in dst.iter_mut().rev() {
                        *b = b'0' + (v % 10) as u8;
                        v /= 10;
                    }
                }
                SlotKind::Pool { pool } => {
                    let items = &self.pools[pool];
                    let n = (items.len() / s.width) as u64;
                    let at = (turn % n.max(1)) as usize * s.width;
                    dst.copy_from_slice(&items[at..at + s.width]);
                }
            }
        }
        &self.bytes
    }
}

/// Serde for the shared pools (serde's own `Arc` support needs its `rc` feature).
mod shared_pools {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::Arc;

    pub fn serialize<S: Serializer>(v: &Arc<Vec<Vec<u8>>>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<Vec<Vec<u8>>>, D::Error> {
        Vec::<Vec<u8>>::deserialize(d).map(Arc::new)
    }
}

/// Appends `v` in decimal without allocating.
fn push_decimal(out: &mut Vec<u8>, mut v: usize) {
    let mut digits = [0u8; 20];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend(digits[..n].iter().rev());
}

/// xorshift64*: a small, fast generator for picking secrets and operations (not for secrets).
/// Copy: a request that is sent again after a redirect re-renders from its saved state.
#[derive(Clone, Copy, Debug)]
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
            captured_headers: vec![],
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
            captured_headers: vec![],
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

    /// A GET carries only what the server needs (the request line, Host, the token): every
    /// header costs the server its parse on every request. A `-H` User-Agent is sent.
    #[test]
    fn a_get_carries_no_header_it_was_not_given() {
        let mut spec = RequestSpec {
            method: "GET".into(),
            path: vec![Piece::lit("/v1/secret/data/foo")],
            headers: vec![],
            body: None,
            captured_headers: vec![],
        };
        let text = Template::build(&spec, &common())
            .render(&mut Rng::new(1))
            .to_vec();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "GET /v1/secret/data/foo HTTP/1.1\r\nHost: 127.0.0.1:8200\r\nX-Vault-Token: root\r\n\r\n"
        );
        spec.headers = vec![("User-Agent".into(), "probe/1".into())];
        let text = Template::build(&spec, &common())
            .render(&mut Rng::new(1))
            .to_vec();
        assert!(
            String::from_utf8(text)
                .unwrap()
                .ends_with("\r\nUser-Agent: probe/1\r\n\r\n")
        );
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

#[cfg(test)]
mod capture_tests {
    use super::*;

    fn spec() -> RequestSpec {
        RequestSpec {
            method: "POST".into(),
            path: vec![Piece::lit("/v1/auth/token/lookup")],
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(vec![
                Piece::lit("{\"token\":\""),
                Piece::Captured { slot: 1 },
                Piece::lit("\",\"n\":\""),
                Piece::Index { count: 100 },
                Piece::lit("\"}"),
            ]),
            captured_headers: vec![("X-Vault-Token".into(), 0)],
        }
    }

    #[test]
    fn captured_values_go_in_with_their_own_length() {
        let common = Common {
            host: "h:1".into(),
            token: Some("root".into()),
            namespace: None,
            close: false,
        };
        let mut t = Template::build(&spec(), &common);
        assert!(t.uses_captures());
        let mut rng = Rng::new(3);
        let mut caps = Captures::with_slots(2, 64);
        let mut buffer = None;
        for (token, other) in [
            ("hvs.A", "x"),
            ("hvs.LONGER-TOKEN-VALUE", ""),
            ("t", "yyyyyyyyyyyy"),
        ] {
            caps.set(0, token.as_bytes());
            caps.set(1, other.as_bytes());
            let text = String::from_utf8(t.render_with(&mut rng, &caps).to_vec()).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(
                head.contains(&format!("\r\nX-Vault-Token: {token}\r\n")),
                "{head}"
            );
            assert!(
                !head.contains("root"),
                "the captured token replaces the run's: {head}"
            );
            assert!(
                head.contains(&format!("Content-Length: {}", body.len())),
                "{text}"
            );
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(v["token"], other);
            // The same buffer every time: no allocation per request.
            let ptr = t.out.as_ptr();
            assert!(buffer.is_none_or(|p| p == ptr));
            buffer = Some(ptr);
        }
        // An empty slot inserts nothing (the operation that fills it goes first).
        caps.clear();
        let text = String::from_utf8(t.render_with(&mut rng, &caps).to_vec()).unwrap();
        assert!(text.contains("Content-Length: 21\r\n"), "{text}");
    }

    #[test]
    fn fixed_templates_render_as_before() {
        let mut s = spec();
        s.captured_headers.clear();
        s.body = Some(vec![Piece::lit("{}")]);
        let mut t = Template::build(&s, &Common::default());
        assert!(!t.uses_captures());
        let a = t.render(&mut Rng::new(1)).to_vec();
        let b = t
            .render_with(&mut Rng::new(1), &Captures::default())
            .to_vec();
        assert_eq!(a, b);
    }
}

#[cfg(test)]
mod turn_tests {
    use super::*;

    fn spec(path: Vec<Piece>, body: Option<Vec<Piece>>) -> RequestSpec {
        RequestSpec {
            method: "POST".into(),
            path,
            headers: vec![],
            body,
            captured_headers: vec![],
        }
    }

    #[test]
    fn turns_go_round_in_order_over_every_copy_of_a_template() {
        let s = spec(
            vec![Piece::lit("/v1/auth/u/login/u"), Piece::Turn { count: 12 }],
            Some(vec![
                Piece::lit("{\"jwt\":\""),
                Piece::Pool {
                    items: vec![b"aaa".to_vec(), b"bbb".to_vec(), b"ccc".to_vec()],
                },
                Piece::lit("\"}"),
            ]),
        );
        let mut a = Template::build(&s, &Common::default());
        let mut b = a.clone();
        let mut rng = Rng::new(3);
        let mut users = Vec::new();
        let mut tokens = Vec::new();
        for i in 0..30 {
            let t = if i % 3 == 0 { &mut b } else { &mut a };
            let text = String::from_utf8(t.render(&mut rng).to_vec()).unwrap();
            let at = text.find("/login/u").unwrap() + 8;
            users.push(text[at..at + 2].parse::<u64>().unwrap());
            assert!(text.contains("Content-Length: 13\r\n"), "{text}");
            let at = text.find("{\"jwt\":\"").unwrap() + 8;
            tokens.push(text[at..at + 3].to_string());
        }
        assert_eq!(users, (0..30).map(|i| i % 12).collect::<Vec<_>>());
        let want: Vec<String> = (0..30)
            .map(|i| ["aaa", "bbb", "ccc"][i % 3].to_string())
            .collect();
        assert_eq!(tokens, want);
    }

    #[test]
    fn a_request_rendered_again_at_its_turn_is_the_same_and_nodes_share_turns() {
        let s = spec(
            vec![Piece::lit("/v1/auth/u/login/u"), Piece::Turn { count: 50 }],
            Some(vec![Piece::Pool {
                items: vec![b"aaa".to_vec(), b"bbb".to_vec(), b"ccc".to_vec()],
            }]),
        );
        let host = |h: &str| Common {
            host: h.into(),
            ..Common::default()
        };
        let mut a = Template::build(&s, &host("n1:1"));
        let mut b = Template::build(&s, &host("n2:2")).sharing_turns_with(&a);
        assert!(std::sync::Arc::ptr_eq(&a.pools, &b.pools));
        let caps = Captures::default();
        let mut rng = Rng::new(5);
        let turn = a.next_turn();
        let first = a.render_at(&mut rng.clone(), turn, &caps).to_vec();
        // Judged, then re-sent to another node: the same turn, the same pool item.
        let again = a.render_at(&mut rng.clone(), turn, &caps).to_vec();
        let hop = b.render_at(&mut rng, turn, &caps).to_vec();
        assert_eq!(first, again);
        let text = |r: &[u8]| String::from_utf8(r.to_vec()).unwrap();
        assert_eq!(text(&hop), text(&first).replace("Host: n1:1", "Host: n2:2"));
        assert!(text(&first).ends_with("aaa"), "{}", text(&first));
        // Neither rendering took a turn: the next request (on either node) takes turn 1.
        assert_eq!(b.next_turn(), 1);
        assert!(text(b.render(&mut rng)).ends_with("ccc"));
        assert_eq!(a.next_turn(), 3);
    }

    #[test]
    fn pool_items_of_another_length_are_left_out() {
        let s = spec(
            vec![Piece::lit("/")],
            Some(vec![Piece::Pool {
                items: vec![b"xy".to_vec(), b"toolong".to_vec(), b"zw".to_vec()],
            }]),
        );
        let mut t = Template::build(&s, &Common::default());
        let mut rng = Rng::new(1);
        let got: Vec<String> = (0..4)
            .map(|_| {
                let r = t.render(&mut rng);
                String::from_utf8(r[r.len() - 2..].to_vec()).unwrap()
            })
            .collect();
        assert_eq!(got, ["xy", "zw", "xy", "zw"]);
    }
}
