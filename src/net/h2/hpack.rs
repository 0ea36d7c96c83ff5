//! HPACK decoding of response header blocks (RFC 7541), shaped for a load generator: the
//! block is walked field by field and the dynamic table kept in step (entries added,
//! evicted, resized), but a string is decoded only when it must be: one entering the
//! dynamic table (its size counts), or `:status`. A literal the server does not index
//! (nginx sends every field so) is skipped without decoding, so a response costs no
//! allocation; Go's server indexes its fields, and once they are in the table its
//! responses are indices. Huffman strings are decoded by `huffman` into buffers reused
//! from field to field, and the table's entries live in one arena allocated with the
//! decoder, so a response costs no allocation either way (`loona-hpack`'s block decoder
//! built a Huffman hash table per string, and its Huffman decoder returns a new vector
//! per string: 18 allocations per nginx response under dhat). Checked against RFC 7541
//! appendix C (C.3, C.4, C.6) and fuzzed (`fuzz/fuzz_targets/hpack.rs`).

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

/// A dynamic table entry: where its name and value start in the arena (counted from the
/// arena's first byte ever, `Hpack::base`), and their lengths.
#[derive(Clone, Copy)]
struct Entry {
    at: usize,
    name: usize,
    value: usize,
}

/// The arena's room: twice the largest table, so that compacting it (once the newest
/// entry would not fit behind the live ones) always makes room.
const ARENA: usize = 2 * TABLE_SIZE;

/// One connection's decoder: the dynamic table (newest first), its size, and its
/// entries' bytes in one arena, allocated once: entries come and go without allocating.
pub struct Hpack {
    table: VecDeque<Entry>,
    size: usize,
    max: usize,
    arena: Vec<u8>,
    /// Where `arena[0]` is, counted as `Entry::at` counts.
    base: usize,
    /// A literal's name and value as decoded, reused from field to field.
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for Hpack {
    fn default() -> Self {
        Hpack {
            // Every entry costs at least 32 bytes of the table's size.
            table: VecDeque::with_capacity(TABLE_SIZE / 32 + 1),
            size: 0,
            max: TABLE_SIZE,
            arena: Vec::with_capacity(ARENA),
            base: 0,
            name: Vec::with_capacity(256),
            value: Vec::with_capacity(1024),
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

/// The text of a string, into `out` (cleared first; no allocation once it has the room).
fn text(r: Raw<'_>, out: &mut Vec<u8>) -> Result<(), HpackError> {
    out.clear();
    if r.huffman {
        super::huffman::decode(r.bytes, out).map_err(|_| HpackError::Huffman)
    } else {
        out.extend_from_slice(r.bytes);
        Ok(())
    }
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
            _ => {
                let e = self.table.get(i - 62).ok_or(HpackError::Index)?;
                let at = e.at - self.base;
                let name_end = at + e.name;
                Ok((
                    &self.arena[at..name_end],
                    &self.arena[name_end..name_end + e.value],
                ))
            }
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

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        self.evict_to(self.max.saturating_sub(size));
        if size > self.max {
            return;
        }
        if self.arena.len() + name.len() + value.len() > ARENA {
            // Compact: the live entries' bytes to the front (at most TABLE_SIZE of them).
            let live = self
                .table
                .back()
                .map_or(self.arena.len(), |e| e.at - self.base);
            self.arena.copy_within(live.., 0);
            self.arena.truncate(self.arena.len() - live);
            self.base += live;
        }
        let at = self.base + self.arena.len();
        self.arena.extend_from_slice(name);
        self.arena.extend_from_slice(value);
        self.table.push_front(Entry {
            at,
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
                at = self.indexed_literal(block, at, on)?;
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
                at = self.plain_literal(block, at, all, on)?;
            }
            fields = true;
        }
        Ok(())
    }

    /// A literal with incremental indexing: decoded, and added to the table. Its name
    /// and value are read into the reused buffers (taken out while the table changes).
    fn indexed_literal(
        &mut self,
        block: &[u8],
        at: usize,
        on: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize, HpackError> {
        let (mut name, mut value) = (
            std::mem::take(&mut self.name),
            std::mem::take(&mut self.value),
        );
        let read = self.read_literal(block, at, &mut name, &mut value);
        if read.is_ok() {
            on(&name, &value);
            self.insert(&name, &value);
        }
        (self.name, self.value) = (name, value);
        read
    }

    /// The name (indexed or literal) and value of a literal with incremental indexing.
    fn read_literal(
        &self,
        block: &[u8],
        at: usize,
        name: &mut Vec<u8>,
        value: &mut Vec<u8>,
    ) -> Result<usize, HpackError> {
        let (i, mut next) = int(block, at, 6)?;
        if i == 0 {
            let (r, n) = raw(block, next)?;
            next = n;
            text(r, name)?;
        } else {
            name.clear();
            name.extend_from_slice(self.entry(i)?.0);
        }
        let (r, next) = raw(block, next)?;
        text(r, value)?;
        Ok(next)
    }

    /// A literal without indexing (or never indexed): skipped unless it is wanted.
    fn plain_literal(
        &mut self,
        block: &[u8],
        at: usize,
        all: bool,
        on: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize, HpackError> {
        let (i, mut next) = int(block, at, 4)?;
        let mut named = false;
        let mut wanted = all;
        if i == 0 {
            let (r, n) = raw(block, next)?;
            next = n;
            // A literal name is read only when it may be `:status` (7 bytes at most).
            if all || r.bytes.len() <= 7 {
                text(r, &mut self.name)?;
                wanted |= self.name == b":status";
                named = true;
            }
        } else {
            wanted |= self.entry(i)?.0 == b":status";
        }
        let (r, next) = raw(block, next)?;
        if wanted {
            text(r, &mut self.value)?;
            if named {
                on(&self.name, &self.value);
            } else {
                on(self.entry(i)?.0, &self.value);
            }
        }
        Ok(next)
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
