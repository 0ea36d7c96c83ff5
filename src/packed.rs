//! A log of records kept compressed, for what a long run keeps a record of every second
//! (each thread's closed seconds, each node's server samples): records are appended, as
//! bytes, to an open chunk; a chunk that has grown to `CHUNK` bytes is compressed into one
//! exactly sized allocation, and the open buffer is reused. A run's memory then grows by
//! the compressed size of what it keeps, a chunk at a time, never by a small allocation
//! per record, which also leaves nothing for the allocator to fragment around.
//!
//! Read back in order, one chunk decompressed at a time. The log does not know what its
//! records mean; each keeper encodes and decodes its own.
//!
//! lz4_flex does the compression (LZ4 blocks), chosen over deflate for its working set:
//! an 8 KiB table per call, where a deflate compressor (flate2) takes a few hundred KiB
//! that the allocator then keeps. Measured (docs/benchmarks.md, chaos soak, 2026-12-05):
//! the deflate version's first sealed chunk put a step of about 300 KiB into each
//! event-loop thread's arena, more than the data it kept in ten minutes. Similar records one after another (a node's samples differ in a
//! few digits) still compress several times over.

/// Bytes of records gathered before they are compressed together.
pub const CHUNK: usize = 16 * 1024;

/// Records, in the order they came, compressed a chunk at a time.
#[derive(Clone, Default)]
pub struct Packed {
    /// Full chunks, compressed (LZ4, their length first); each holds whole records.
    chunks: Vec<Box<[u8]>>,
    /// Records not yet compressed, each a LEB128 length and its bytes.
    open: Vec<u8>,
    /// Records in all.
    len: usize,
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Packed {{ records: {}, chunks: {}, bytes: {} }}",
            self.len,
            self.chunks.len(),
            self.kept_bytes()
        )
    }
}

impl Packed {
    /// Appends one record.
    pub fn push(&mut self, record: &[u8]) {
        if self.open.capacity() == 0 {
            self.open.reserve_exact(CHUNK + CHUNK / 4);
        }
        put_u64(&mut self.open, record.len() as u64);
        self.open.extend_from_slice(record);
        self.len += 1;
        if self.open.len() >= CHUNK {
            self.seal();
        }
    }

    /// Records kept.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held for the records: the compressed chunks and the open one.
    pub fn kept_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum::<usize>() + self.open.capacity()
    }

    /// Compresses the open chunk into an allocation of exactly its size (the open
    /// buffer is kept for the next).
    fn seal(&mut self) {
        if self.open.is_empty() {
            return;
        }
        let done = lz4_flex::block::compress_prepend_size(&self.open);
        self.chunks.push(Box::from(done.as_slice()));
        self.open.clear();
    }

    /// Calls `f` with each record in order, decompressing one chunk at a time.
    pub fn for_each(&self, mut f: impl FnMut(&[u8])) {
        for c in &self.chunks {
            // Chunks this log compressed itself in memory decompress without error.
            if let Ok(buf) = lz4_flex::block::decompress_size_prepended(c) {
                split(&buf, &mut f);
            }
        }
        split(&self.open, &mut f);
    }
}

/// Appends `n` in LEB128: seven bits a byte, low first, the high bit on all but the last
/// (a record's length; keepers use it for their own numbers too).
pub fn put_u64(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Takes a number `put_u64` wrote off the front of `buf`; None when `buf` ends first or
/// the number runs past 64 bits.
pub fn take_u64(buf: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for (i, &b) in buf.iter().enumerate() {
        if i >= 10 {
            return None;
        }
        n |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *buf = &buf[i + 1..];
            return Some(n);
        }
    }
    None
}

/// Takes `n` bytes off the front of `buf`, `n` being a number `put_u64` wrote there first.
pub fn take_bytes<'a>(buf: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = usize::try_from(take_u64(buf)?).ok()?;
    let (bytes, rest) = (buf.get(..n)?, buf.get(n..)?);
    *buf = rest;
    Some(bytes)
}

/// The records of one chunk; a truncated tail (none is ever written) ends the chunk.
fn split(mut buf: &[u8], f: &mut impl FnMut(&[u8])) {
    while !buf.is_empty() {
        let Some(record) = take_bytes(&mut buf) else {
            return;
        };
        f(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Packed {
        /// Every record, in order, each copied out.
        fn records(&self) -> Vec<Vec<u8>> {
            let mut out = Vec::with_capacity(self.len);
            self.for_each(|r| out.push(r.to_vec()));
            out
        }
    }

    #[test]
    fn records_come_back_in_order_across_chunks() {
        let mut p = Packed::default();
        let made: Vec<Vec<u8>> = (0..5_000u32)
            .map(|i| {
                let n = (i as usize * 37) % 300;
                (0..n).map(|j| (i as usize + j) as u8).collect()
            })
            .collect();
        for r in &made {
            p.push(r);
        }
        assert_eq!(p.len(), 5_000);
        assert!(p.chunks.len() > 10, "{p:?}");
        assert_eq!(p.records(), made);
    }

    #[test]
    fn empty_records_and_long_ones_keep_their_bounds() {
        let mut p = Packed::default();
        let long = vec![7u8; 3 * CHUNK];
        p.push(&[]);
        p.push(&long);
        p.push(&[]);
        p.push(b"x");
        assert_eq!(p.records(), vec![vec![], long, vec![], b"x".to_vec()]);
    }

    #[test]
    fn similar_records_are_kept_in_much_less_than_their_size() {
        let mut p = Packed::default();
        let mut raw = 0;
        for i in 0..2_000u64 {
            let r = format!(
                r#"{{"at_ms":{},"in_flight":{},"goroutines":{},"alloc_bytes":{}}}"#,
                1_700_000_000_000 + i * 1000,
                i % 7,
                40 + i % 3,
                20_000_000 + (i * 7919) % 100_000
            );
            raw += r.len();
            p.push(r.as_bytes());
        }
        assert!(p.kept_bytes() * 2 < raw, "{} of {raw}", p.kept_bytes());
    }

    #[test]
    fn numbers_round_trip_and_bad_ones_are_refused() {
        let mut out = Vec::new();
        for n in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            out.clear();
            put_u64(&mut out, n);
            let mut b = out.as_slice();
            assert_eq!(take_u64(&mut b), Some(n));
            assert!(b.is_empty());
        }
        assert_eq!(take_u64(&mut &[0x80u8, 0x80][..]), None);
        assert_eq!(take_u64(&mut &[0xffu8; 11][..]), None);
        assert_eq!(take_bytes(&mut &[5u8, 1, 2][..]), None);
    }

    #[test]
    fn an_empty_log_has_no_records() {
        let p = Packed::default();
        assert!(p.is_empty());
        assert!(p.records().is_empty());
        assert_eq!(p.kept_bytes(), 0);
    }
}
