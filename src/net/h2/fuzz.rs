//! The HPACK decoder and the connection's frame reader under a fuzzer: the cargo-fuzz
//! targets `fuzz/fuzz_targets/hpack.rs` and `h2_frames.rs` (`tools/fuzz.sh`), and a seeded
//! smoke in the unit tests (the seed corpus replayed, then mutated for a fixed number of
//! rounds). Every input must end without a panic, with the checks below holding.

use super::conn::{ConnError, Event, H2Conn, Local, MAX_BLOCK};
use super::frame;
use super::hpack::{Hpack, TABLE_SIZE};

/// A field as bytes.
type Field = (Vec<u8>, Vec<u8>);

/// One header block decoded by every field; None when it is refused.
fn all_fields(d: &mut Hpack, block: &[u8]) -> Option<Vec<Field>> {
    let mut v = Vec::new();
    d.decode(block, true, &mut |n, val| {
        v.push((n.to_vec(), val.to_vec()))
    })
    .ok()?;
    Some(v)
}

/// The `:status` a list of fields says, as `Hpack::status` reads it.
fn status_of(fields: &[Field]) -> u16 {
    let mut status = 0;
    for (n, v) in fields {
        if n == b":status" && v.len() == 3 && v.iter().all(u8::is_ascii_digit) {
            status = v.iter().fold(0, |a, &d| a * 10 + u16::from(d - b'0'));
        }
    }
    status
}

/// Byte 0 even: the rest is header blocks as `[length, bytes...]`, decoded in sequence
/// on one connection by every field (`all`), by `:status` only (as the connection
/// does), and by `loona-hpack`. The status-only walk accepts whatever the full one
/// accepts, with the same status and the same table; where `loona-hpack` accepts a
/// block too, it reads the same fields. Byte 0 odd: the rest is fields
/// (`[name length, name, value length, value]`, 8 to a block) that must come back as
/// they went: encoded by `loona-hpack` (its dynamic table, indexed references), and as
/// Huffman-coded literals, with and without indexing (`httlib-huffman`'s encoder).
pub fn hpack(input: &[u8]) {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        hpack_blocks(rest);
    } else {
        hpack_round_trip(mode, rest);
    }
}

fn hpack_blocks(mut rest: &[u8]) {
    let (mut full, mut status) = (Hpack::default(), Hpack::default());
    let mut other = loona_hpack::Decoder::new();
    other.set_max_allowed_table_size(TABLE_SIZE);
    let mut other_ok = true;
    while let Some((&len, after)) = rest.split_first() {
        let (block, after) = after.split_at(usize::from(len).min(after.len()));
        rest = after;
        let got = all_fields(&mut full, block);
        let st = status.status(block);
        full.check();
        status.check();
        let Some(fields) = got else {
            return;
        };
        assert_eq!(st, Ok(status_of(&fields)), "the status-only walk disagrees");
        assert!(full.same_table(&status), "the two walks' tables differ");
        if other_ok {
            let mut theirs = Vec::new();
            let r = other.decode_with_cb(block, |n, v| theirs.push((n.to_vec(), v.to_vec())));
            other_ok = r.is_ok();
            if other_ok {
                assert_eq!(fields, theirs, "loona-hpack reads other fields");
            }
        }
    }
}

/// Fields from `[name length, name, value length, value]...`.
fn parse_fields(mut rest: &[u8]) -> Vec<Field> {
    let mut v = Vec::new();
    while rest.len() >= 2 {
        let n = usize::from(rest[0]).min(rest.len() - 1);
        let name = rest[1..1 + n].to_vec();
        rest = &rest[1 + n..];
        let Some((&vl, after)) = rest.split_first() else {
            v.push((name, Vec::new()));
            break;
        };
        let vl = usize::from(vl).min(after.len());
        v.push((name, after[..vl].to_vec()));
        rest = &after[vl..];
    }
    v
}

/// A string literal as RFC 7541 §5.2 writes it: Huffman-coded when `huffman`.
fn put_string(out: &mut Vec<u8>, s: &[u8], huffman: bool) {
    let mut enc = Vec::new();
    let (flag, bytes) = if huffman {
        httlib_huffman::encode(s, &mut enc).expect("every byte has a code");
        (0x80, &enc[..])
    } else {
        (0, s)
    };
    put_int(out, flag, 7, bytes.len());
    out.extend_from_slice(bytes);
}

fn put_int(out: &mut Vec<u8>, first: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    v -= max;
    while v >= 0x80 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn hpack_round_trip(mode: u8, rest: &[u8]) {
    let fields = parse_fields(rest);
    let mut enc = loona_hpack::Encoder::new();
    let (mut d, mut huff) = (Hpack::default(), Hpack::default());
    for (k, chunk) in fields.chunks(8).enumerate() {
        let block = enc.encode(chunk.iter().map(|(n, v)| (&n[..], &v[..])));
        assert_eq!(
            all_fields(&mut d, &block).as_deref(),
            Some(chunk),
            "loona's block"
        );
        d.check();
        // The same fields as Huffman-coded literals; every other block indexed.
        let indexed = (usize::from(mode >> 1) + k) % 2 == 0;
        let mut block = Vec::new();
        for (n, v) in chunk {
            block.push(if indexed { 0x40 } else { 0x00 });
            put_string(&mut block, n, true);
            put_string(&mut block, v, v.len() % 2 == 0);
        }
        assert_eq!(
            all_fields(&mut huff, &block).as_deref(),
            Some(chunk),
            "Huffman"
        );
        huff.check();
        assert_eq!(huff.status(&block), Ok(status_of(chunk)));
    }
}

/// What the connection did, step by step, for comparing two feedings.
#[derive(Debug, PartialEq, Eq)]
enum FeedStep {
    Event(Event),
    Failed(ConnError),
    Out(Vec<u8>),
}

/// One connection driven by the input: its requests under way, what it did.
struct Driver {
    conn: H2Conn,
    under_way: Vec<bool>,
    steps: Vec<FeedStep>,
    closed: bool,
}

const REQUEST: &[u8] = b"POST /v1/kv/data/s001 HTTP/1.1\r\nHost: 127.0.0.1:8200\r\nX-Vault-Token: root\r\nContent-Length: 0\r\n\r\n";

impl Driver {
    fn new(local: Local) -> Driver {
        Driver {
            conn: H2Conn::new(local),
            under_way: vec![false; local.streams],
            steps: Vec::new(),
            closed: false,
        }
    }

    fn start(&mut self, body: &[u8], keep: bool) {
        let mut block = Vec::new();
        super::request::encode(&mut block, REQUEST, true).expect("a request");
        let could = self.conn.can_start();
        match self.conn.start(&block, body, keep) {
            Some(slot) => {
                assert!(could && !self.under_way[slot], "a slot given twice");
                self.under_way[slot] = true;
            }
            None => assert!(!could, "a stream refused though one could start"),
        }
        self.drain(0);
    }

    fn cancel(&mut self, slot: usize) {
        assert_eq!(self.conn.cancel(slot), self.under_way[slot]);
        self.under_way[slot] = false;
        self.drain(0);
    }

    /// Feeds `data` in pieces of the given sizes (the rest at once when they run out).
    fn feed(&mut self, data: &[u8], sizes: &mut dyn Iterator<Item = usize>) {
        let mut rest = data;
        while !rest.is_empty() && !self.closed {
            let n = sizes.next().unwrap_or(rest.len()).clamp(1, rest.len());
            let (piece, after) = rest.split_at(n);
            rest = after;
            let fed = self.conn.feed(piece);
            // (the events of the frames before a failing one come first)
            self.events();
            if let Err(e) = fed {
                self.steps.push(FeedStep::Failed(e));
                assert_eq!(self.conn.state(), super::ConnState::Closed);
                self.closed = true;
            }
        }
        self.drain(data.len());
    }

    fn events(&mut self) {
        while let Some(ev) = self.conn.events.pop_front() {
            match ev {
                Event::Response { slot, status } => {
                    assert!(status < 1000 && !(100..200).contains(&status));
                    self.settle(slot);
                }
                Event::Reset { slot, .. } | Event::Refused { slot } => self.settle(slot),
                Event::Ready | Event::GoAway { .. } => {}
            }
            self.steps.push(FeedStep::Event(ev));
        }
    }

    fn settle(&mut self, slot: usize) {
        assert!(self.under_way[slot], "an event for a stream not under way");
        self.under_way[slot] = false;
    }

    /// What the connection wrote after `fed` bytes came in: bounded by them.
    fn drain(&mut self, fed: usize) {
        let out = std::mem::take(&mut self.conn.out);
        // Answers (ACKs, WINDOW_UPDATEs, RST_STREAMs, a GOAWAY) and request bytes: a
        // few times what came in, plus what requests wait to send.
        assert!(out.len() <= 4 * fed + 64 * 1024, "{} bytes out", out.len());
        self.steps.push(FeedStep::Out(out));
        let n = self.under_way.iter().filter(|&&u| u).count();
        assert_eq!(self.conn.active(), n, "streams open");
        let held = frame::HEAD_LEN + frame::DEFAULT_MAX_FRAME + MAX_BLOCK;
        assert!(
            self.conn.buffered() <= held,
            "{} bytes held",
            self.conn.buffered()
        );
    }
}

/// Byte 0: streams (1 to 8; bit 7 a 64 KiB window), byte 1 seeds the read sizes, then
/// commands: `0b..00` starts a stream (next byte: its body, 16 bytes per unit; bit 2
/// keeps the response body), `0b..11` cancels one (next byte: the slot), otherwise the
/// next two bytes are the length of server bytes fed next. Fed whole and in pieces of
/// pseudo-random sizes, the connection must do the same; every event must name a
/// stream under way, what it writes and holds stays bounded.
pub fn frames(input: &[u8]) {
    let [m, seed, rest @ ..] = input else {
        return;
    };
    let streams = 1 + usize::from(m & 7);
    let window = if m & 0x80 != 0 {
        frame::DEFAULT_WINDOW
    } else {
        super::STREAM_WINDOW
    };
    let local = Local {
        streams,
        window,
        headers: *seed & 1 == 0,
    };
    let (mut whole, mut split) = (Driver::new(local), Driver::new(local));
    let mut state = u32::from(*seed) | 0x100;
    let mut sizes = std::iter::from_fn(move || {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        Some(1 + (state >> 16) as usize % 64)
    });
    let body = [b'x'; 255 * 16];
    let mut at = 0;
    while at < rest.len() && !whole.closed {
        let op = rest[at];
        let arg = rest.get(at + 1).copied().unwrap_or(0);
        at += 2;
        match op & 3 {
            0 => {
                let b = &body[..usize::from(arg) * 16];
                whole.start(b, op & 4 != 0);
                split.start(b, op & 4 != 0);
            }
            3 => {
                whole.cancel(usize::from(arg) % streams);
                split.cancel(usize::from(arg) % streams);
            }
            _ => {
                let len = usize::from(arg) << 8 | usize::from(rest.get(at).copied().unwrap_or(0));
                at += 1;
                let data = rest.get(at..).unwrap_or(&[]);
                let data = &data[..len.min(data.len())];
                at += data.len();
                whole.feed(data, &mut std::iter::empty());
                split.feed(data, &mut sizes);
            }
        }
        assert_eq!(whole.steps, split.steps, "one read and many disagree");
        whole.steps.clear();
        split.steps.clear();
    }
}

/// A small seeded generator for the smoke run (xorshift64*).
#[derive(Clone)]
pub struct Mutator(u64);

impl Mutator {
    pub fn new(seed: u64) -> Mutator {
        Mutator(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// `input` with a few random edits: bytes flipped, set, inserted, removed, or a span
    /// copied from `other`.
    pub fn mutate(&mut self, input: &[u8], other: &[u8]) -> Vec<u8> {
        let mut v = input.to_vec();
        for _ in 0..1 + self.below(4) {
            let at = self.below(v.len() + 1);
            match self.below(6) {
                0 if at < v.len() => v[at] ^= 1 << self.below(8),
                1 if at < v.len() => v[at] = self.next() as u8,
                2 => v.insert(at, self.next() as u8),
                3 if at < v.len() => {
                    v.remove(at);
                }
                4 if !other.is_empty() => {
                    let from = self.below(other.len());
                    let n = self.below(other.len() - from + 1).min(64);
                    v.splice(at..at, other[from..from + n].iter().copied());
                }
                _ if at < v.len() => v[at] = [0, 0x7f, 0x80, 0xff][self.below(4)],
                _ => v.push(self.next() as u8),
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn seeds(target: &str) -> Vec<Vec<u8>> {
        let dir = format!("{}/fuzz/seeds/{target}", env!("CARGO_MANIFEST_DIR"));
        let mut v: Vec<Vec<u8>> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        v.sort();
        assert!(v.len() >= 4, "{dir} holds {} seeds", v.len());
        v
    }

    /// Every seed, then `rounds` mutations of them (a fixed seed: the same inputs on
    /// every run), stopping early past `budget` so that a slow machine stays quick.
    fn smoke(target: &str, run: fn(&[u8]), rounds: usize, budget: Duration) {
        let corpus = seeds(target);
        for s in &corpus {
            run(s);
        }
        let mut m = Mutator::new(0x5eed_0000 + target.len() as u64);
        let start = Instant::now();
        let mut last = corpus[0].clone();
        for k in 0..rounds {
            if k % 256 == 0 && start.elapsed() > budget {
                break;
            }
            let base = if k % 3 == 0 {
                &last
            } else {
                &corpus[m.below(corpus.len())]
            };
            let other = &corpus[m.below(corpus.len())];
            let input = m.mutate(base, other);
            run(&input);
            last = input;
        }
    }

    #[test]
    fn hpack_seeds_and_a_seeded_mutation_smoke() {
        smoke("hpack", hpack, 20_000, Duration::from_secs(3));
    }

    #[test]
    fn h2_frames_seeds_and_a_seeded_mutation_smoke() {
        smoke("h2_frames", frames, 20_000, Duration::from_secs(3));
    }

    #[test]
    fn round_trips_of_chosen_fields() {
        // Odd mode: fields encoded by loona-hpack and as Huffman literals come back.
        let mut input = vec![1u8];
        for (n, v) in [
            (&b":status"[..], &b"200"[..]),
            (b"content-length", b"147"),
            (b"date", b"Wed, 02 Dec 2026 17:00:00 GMT"),
            (b"x-\xff\x00", b"\x00\x01\xfe"),
            (b"content-length", b"147"),
            (b"", b""),
        ] {
            input.push(n.len() as u8);
            input.extend_from_slice(n);
            input.push(v.len() as u8);
            input.extend_from_slice(v);
        }
        hpack(&input);
        input[0] = 3;
        hpack(&input);
    }
}
