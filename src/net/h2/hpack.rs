//! HPACK decoding of response header blocks (RFC 7541), shaped for a load generator: the
//! block is walked field by field and the dynamic table kept in step (entries added,
//! evicted, resized), but a string is decoded only when it must be: one entering the
//! dynamic table (its size counts), or `:status`. A literal the server does not index is
//! skipped without decoding. Strings are read into two buffers the decoder keeps, and the
//! table's entries into one buffer of fixed size, so a response costs no allocation,
//! whatever the server indexes (nginx indexes `content-length`, Huffman-coded, in every
//! response; Go's server its fields once). Huffman strings are decoded by table
//! (`huffman`). Checked against RFC 7541 appendix C (C.2 to C.6) and fuzzed
//! (`fuzz`, `tools/fuzz.sh`: `fuzz/fuzz_targets/hpack.rs`).

use std::collections::VecDeque;

/// The dynamic table size this client allows (SETTINGS_HEADER_TABLE_SIZE, left default).
pub const TABLE_SIZE: usize = 4096;

/// RFC 7541 Appendix A.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// Why a header block cannot be decoded (a COMPRESSION_ERROR on the connection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HpackError {
    Truncated,
    Integer,
    Index,
    Huffman,
    TableSize,
}

/// A string as sent: its bytes and whether they are Huffman-coded.
#[derive(Clone, Copy)]
struct Raw<'a> {
    huffman: bool,
    bytes: &'a [u8],
}

/// A dynamic table entry: where its name and value are in `Hpack::bytes`.
#[derive(Clone, Copy)]
struct Entry {
    start: usize,
    name: usize,
    value: usize,
}

/// One connection's decoder: the dynamic table (newest first) and its size. The entries'
/// bytes live in one buffer of twice the table's size, appended at its end and moved to
/// its start when the end is reached (the live bytes never exceed the table size), so
/// that the table allocates nothing after it is made.
pub struct Hpack {
    table: VecDeque<Entry>,
    bytes: Vec<u8>,
    size: usize,
    max: usize,
    /// Huffman-decoded name and value of the field being read.
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for Hpack {
    fn default() -> Self {
        Hpack {
            table: VecDeque::with_capacity(TABLE_SIZE / 32),
            bytes: vec![0; 2 * TABLE_SIZE],
            size: 0,
            max: TABLE_SIZE,
            name: Vec::with_capacity(256),
            value: Vec::with_capacity(256),
        }
    }
}

/// An integer with an `n`-bit prefix at `b[at]`; returns it and where the next byte is.
fn int(b: &[u8], at: usize, n: u32) -> Result<(usize, usize), HpackError> {
    let first = *b.get(at).ok_or(HpackError::Truncated)?;
    let max = (1usize << n) - 1;
    let mut v = usize::from(first) & max;
    let mut at = at + 1;
    if v < max {
        return Ok((v, at));
    }
    let mut shift = 0;
    loop {
        let byte = *b.get(at).ok_or(HpackError::Truncated)?;
        at += 1;
        if shift > 28 {
            return Err(HpackError::Integer);
        }
        v += usize::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok((v, at));
        }
    }
}

/// A string literal at `b[at]`.
fn raw(b: &[u8], at: usize) -> Result<(Raw<'_>, usize), HpackError> {
    let huffman = b.get(at).ok_or(HpackError::Truncated)? & 0x80 != 0;
    let (len, at) = int(b, at, 7)?;
    let end = at.checked_add(len).ok_or(HpackError::Truncated)?;
    let bytes = b.get(at..end).ok_or(HpackError::Truncated)?;
    Ok((Raw { huffman, bytes }, end))
}

/// The text of a string into `into` (its bytes, or their Huffman decoding).
fn fill(r: Raw<'_>, into: &mut Vec<u8>) -> Result<(), HpackError> {
    into.clear();
    if !r.huffman {
        into.extend_from_slice(r.bytes);
        return Ok(());
    }
    super::huffman::decode(r.bytes, into).map_err(|_| HpackError::Huffman)
}

/// The buffers a block's strings are read into.
struct HpackScratch {
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Hpack {
    /// Entry `i` (1-based: the static table, then the dynamic one).
    fn entry(&self, i: usize) -> Result<(&[u8], &[u8]), HpackError> {
        match i {
            0 => Err(HpackError::Index),
            1..=61 => {
                let (n, v) = STATIC[i - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => self
                .table
                .get(i - 62)
                .map(|e| {
                    let name = &self.bytes[e.start..e.start + e.name];
                    let at = e.start + e.name;
                    (name, &self.bytes[at..at + e.value])
                })
                .ok_or(HpackError::Index),
        }
    }

    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            let Some(e) = self.table.pop_back() else {
                break;
            };
            self.size -= e.name + e.value + 32;
        }
    }

    /// Adds an entry (evicting as needed); an entry larger than the table empties it.
    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        self.evict_to(self.max.saturating_sub(size));
        if size > self.max {
            return;
        }
        let len = name.len() + value.len();
        let mut end = self.table.front().map_or(0, |e| e.start + e.name + e.value);
        if end + len > self.bytes.len() {
            // Move the live entries (at most the table size) to the start.
            let from = self.table.back().map_or(end, |e| e.start);
            self.bytes.copy_within(from..end, 0);
            for e in self.table.iter_mut() {
                e.start -= from;
            }
            end -= from;
        }
        self.bytes[end..end + name.len()].copy_from_slice(name);
        self.bytes[end + name.len()..end + len].copy_from_slice(value);
        self.table.push_front(Entry {
            start: end,
            name: name.len(),
            value: value.len(),
        });
        self.size += size;
    }

    /// Decodes `block`, handing every field to `on` when `all`, else only `:status`;
    /// the table is kept in step either way.
    pub fn decode(
        &mut self,
        block: &[u8],
        all: bool,
        on: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        // The scratch buffers are lent out for the block (given back, grown, at the end).
        let mut sc = HpackScratch {
            name: std::mem::take(&mut self.name),
            value: std::mem::take(&mut self.value),
        };
        let r = self.fields(block, all, on, &mut sc);
        self.name = sc.name;
        self.value = sc.value;
        r
    }

    fn fields(
        &mut self,
        block: &[u8],
        all: bool,
        on: &mut dyn FnMut(&[u8], &[u8]),
        sc: &mut HpackScratch,
    ) -> Result<(), HpackError> {
        let mut at = 0;
        let mut fields = false;
        while at < block.len() {
            let b = block[at];
            if b & 0x80 != 0 {
                let (i, next) = int(block, at, 7)?;
                let (n, v) = self.entry(i)?;
                if all || n == b":status" {
                    on(n, v);
                }
                at = next;
            } else if b & 0x40 != 0 {
                at = self.indexed_literal(block, at, on, sc)?;
            } else if b & 0x20 != 0 {
                // A table size update: only before the block's first field.
                let (size, next) = int(block, at, 5)?;
                if fields || size > TABLE_SIZE {
                    return Err(HpackError::TableSize);
                }
                self.max = size;
                self.evict_to(size);
                at = next;
                continue;
            } else {
                at = self.plain_literal(block, at, all, on, sc)?;
            }
            fields = true;
        }
        Ok(())
    }

    /// A literal with incremental indexing: decoded, and added to the table.
    fn indexed_literal(
        &mut self,
        block: &[u8],
        at: usize,
        on: &mut dyn FnMut(&[u8], &[u8]),
        sc: &mut HpackScratch,
    ) -> Result<usize, HpackError> {
        let (i, mut next) = int(block, at, 6)?;
        if i == 0 {
            let (r, n) = raw(block, next)?;
            next = n;
            fill(r, &mut sc.name)?;
        } else {
            let n = self.entry(i)?.0;
            sc.name.clear();
            sc.name.extend_from_slice(n);
        }
        let (r, next) = raw(block, next)?;
        fill(r, &mut sc.value)?;
        on(&sc.name, &sc.value);
        self.insert(&sc.name, &sc.value);
        Ok(next)
    }

    /// A literal without indexing (or never indexed): skipped unless it is wanted.
    fn plain_literal(
        &mut self,
        block: &[u8],
        at: usize,
        all: bool,
        on: &mut dyn FnMut(&[u8], &[u8]),
        sc: &mut HpackScratch,
    ) -> Result<usize, HpackError> {
        let (i, mut next) = int(block, at, 4)?;
        let mut wanted = all;
        if i == 0 {
            let (r, n) = raw(block, next)?;
            next = n;
            // A literal name is read only when it may be `:status` (7 bytes at most).
            if all || r.bytes.len() <= 7 {
                fill(r, &mut sc.name)?;
                wanted |= sc.name == b":status";
            }
        } else {
            let n = self.entry(i)?.0;
            wanted |= n == b":status";
            if wanted {
                sc.name.clear();
                sc.name.extend_from_slice(n);
            }
        }
        let (r, next) = raw(block, next)?;
        if wanted {
            fill(r, &mut sc.value)?;
            on(&sc.name, &sc.value);
        }
        Ok(next)
    }

    /// The table's invariants (for the fuzz target): its size is the sum of its entries'
    /// and within its limit, and every entry's bytes lie in the buffer.
    #[doc(hidden)]
    pub fn check(&self) {
        let sum: usize = self.table.iter().map(|e| e.name + e.value + 32).sum();
        assert_eq!(sum, self.size, "table size");
        assert!(
            self.size <= self.max && self.max <= TABLE_SIZE,
            "table over its limit"
        );
        assert!(self.table.len() <= TABLE_SIZE / 32);
        for e in &self.table {
            assert!(e.start + e.name + e.value <= self.bytes.len());
        }
    }

    /// Whether `other` holds the same entries in the same order (for the fuzz target).
    #[doc(hidden)]
    pub fn same_table(&self, other: &Hpack) -> bool {
        self.table.len() == other.table.len()
            && self.size == other.size
            && (62..62 + self.table.len()).all(|i| self.entry(i).ok() == other.entry(i).ok())
    }

    /// The `:status` of a response header block (0: none), the table kept in step.
    pub fn status(&mut self, block: &[u8]) -> Result<u16, HpackError> {
        let mut status = 0u16;
        // Only `:status` sets it: literals entering the table (`content-length: 147`)
        // are handed over too.
        self.decode(block, false, &mut |n, v| {
            if n == b":status" && v.len() == 3 && v.iter().all(u8::is_ascii_digit) {
                status = v.iter().fold(0, |a, &d| a * 10 + u16::from(d - b'0'));
            }
        })?;
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn all(d: &mut Hpack, block: &[u8]) -> Vec<(String, String)> {
        let mut v = Vec::new();
        d.decode(block, true, &mut |n, val| {
            v.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(val).into_owned(),
            ))
        })
        .unwrap();
        v
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    /// RFC 7541 C.3 (without Huffman) and C.4 (with): three requests on one connection,
    /// the later ones indexing the earlier ones' entries.
    #[test]
    fn rfc_7541_c3_and_c4_request_sequences() {
        let seqs = [
            [
                "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                "8286 84be 5808 6e6f 2d63 6163 6865",
                "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
            ],
            [
                "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                "8286 84be 5886 a8eb 1064 9cbf",
                "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
            ],
        ];
        for seq in seqs {
            let mut d = Hpack::default();
            let auth = (":authority", "www.example.com");
            assert_eq!(
                all(&mut d, &hex(seq[0])),
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":path", "/"),
                    auth
                ])
            );
            assert_eq!(
                all(&mut d, &hex(seq[1])),
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":path", "/"),
                    auth,
                    ("cache-control", "no-cache")
                ])
            );
            assert_eq!(
                all(&mut d, &hex(seq[2])),
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "https"),
                    (":path", "/index.html"),
                    auth,
                    ("custom-key", "custom-value")
                ])
            );
            // 57 + 53 + 54 bytes of entries.
            assert_eq!(d.size, 164);
        }
    }

    /// RFC 7541 C.2: each kind of field representation on its own, and what it leaves in
    /// the dynamic table.
    #[test]
    fn rfc_7541_c2_field_representations() {
        let cases = [
            (
                "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
                ("custom-key", "custom-header"),
                55,
            ),
            (
                "040c 2f73 616d 706c 652f 7061 7468",
                (":path", "/sample/path"),
                0,
            ),
            (
                "1008 7061 7373 776f 7264 0673 6563 7265 74",
                ("password", "secret"),
                0,
            ),
            ("82", (":method", "GET"), 0),
        ];
        for (block, field, size) in cases {
            let mut d = Hpack::default();
            assert_eq!(all(&mut d, &hex(block)), pairs(&[field]), "{block}");
            assert_eq!(d.size, size, "{block}");
        }
    }

    /// RFC 7541 C.5 (without Huffman) and C.6 (with): three responses on one connection
    /// whose table holds 256 bytes, so that the later ones evict the earlier entries.
    #[test]
    fn rfc_7541_c5_and_c6_response_sequences_with_evictions() {
        let seqs = [
            [
                "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
                 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
                 6c65 2e63 6f6d",
                "4803 3330 37c1 c0bf",
                "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
                 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
                 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
                 3d31",
            ],
            [
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
                "4883 640e ffc1 c0bf",
                "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
            ],
        ];
        let date1 = ("date", "Mon, 21 Oct 2013 20:13:21 GMT");
        let cc = ("cache-control", "private");
        let loc = ("location", "https://www.example.com");
        for seq in seqs {
            let mut d = Hpack {
                max: 256,
                ..Hpack::default()
            };
            let first = all(&mut d, &hex(seq[0]));
            assert_eq!(first, pairs(&[(":status", "302"), cc, date1, loc]));
            assert_eq!((d.table.len(), d.size), (4, 222));
            // `:status: 302` is evicted to make room for `:status: 307`.
            let second = all(&mut d, &hex(seq[1]));
            assert_eq!(second, pairs(&[(":status", "307"), cc, date1, loc]));
            assert_eq!((d.table.len(), d.size), (4, 222));
            let third = all(&mut d, &hex(seq[2]));
            assert_eq!(
                third,
                pairs(&[
                    (":status", "200"),
                    cc,
                    ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                    loc,
                    ("content-encoding", "gzip"),
                    (
                        "set-cookie",
                        "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
                    ),
                ])
            );
            assert_eq!((d.table.len(), d.size), (3, 215));
            d.check();
        }
    }

    #[test]
    fn literals_not_indexed_are_skipped_unless_they_are_the_status() {
        let mut d = Hpack::default();
        // :status 404 as a literal without indexing (name index 8), a custom literal.
        let mut b = vec![0x08, 3];
        b.extend_from_slice(b"404");
        b.extend_from_slice(&[0x00, 1, b'x', 1, b'y']);
        assert_eq!(d.status(&b), Ok(404));
        assert_eq!(d.status(&[0x88]), Ok(200));
        assert_eq!(d.status(&[0x80]), Err(HpackError::Index));
        assert_eq!(d.status(&[0xbe]), Err(HpackError::Index));
        assert_eq!(d.status(&[0x08, 5, b'1']), Err(HpackError::Truncated));
        assert_eq!(
            d.status(&[0x88, 0x3f, 0xe1, 0x1f]),
            Err(HpackError::TableSize)
        );
        assert_eq!(
            d.status(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
            Err(HpackError::Integer)
        );
    }

    #[test]
    fn an_indexed_literal_of_three_digits_is_not_the_status() {
        // nginx: `:status: 200` indexed, then `content-length: 147` with incremental
        // indexing (name index 28), the value raw.
        let mut d = Hpack::default();
        assert_eq!(d.status(&[0x88, 0x5c, 0x03, b'1', b'4', b'7']), Ok(200));
        // The next block's `content-length` from the table (index 62) is not the status.
        assert_eq!(d.status(&[0x89, 0xbe]), Ok(204));
    }

    #[test]
    fn a_table_size_update_evicts() {
        let mut d = Hpack::default();
        all(
            &mut d,
            &hex("400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"),
        );
        assert_eq!(d.table.len(), 1);
        d.status(&[0x20]).unwrap_or_default();
        assert_eq!((d.table.len(), d.size), (0, 0));
    }
}
