//! Latencies by block of time: for each block (100 ms at first) a coarse log-scale
//! histogram of the latencies of the responses that ended in it, so that the confidence
//! interval of a percentile can see how much the samples of one block of time move
//! together (`interval::of_blocked`, the design effect of batch means).
//!
//! The storage is one flat array allocated once (`Blocks::prepared`, 64 blocks of 512 bins
//! of `u32`, 128 KiB), so recording is an index computation: no allocation, lock or system
//! call. A run longer than 64 blocks doubles the block width in place (adjacent blocks
//! added), so a run always has between 32 and 64 blocks once it is longer than 3.2 s. The
//! bins are 16 per power of two (each about 4.4% wide), enough to count the samples of a
//! block above a threshold near a percentile.
//!
//! Blocks of one stretch of time (the threads, worker processes and shards of one run) add
//! block by block (`merge`); a measurement taken after another (a sweep step's repeat) is
//! appended after it (`append`): each repeat's blocks are blocks of their own.

use serde::{Deserialize, Serialize};

/// The narrowest block, milliseconds.
pub const BASE_MS: u64 = 100;
/// The most blocks kept (beyond it, the width doubles).
pub const CAPACITY: usize = 64;
/// Bins per power of two.
const SUB: usize = 16;
/// Bins in all: 32 powers of two of microseconds (beyond an hour).
pub const BINS: usize = 32 * SUB;

/// The bin of a latency of `us` microseconds: 16 per power of two.
#[inline]
pub fn bin(us: u64) -> usize {
    let v = us.clamp(1, crate::stats::MAX_US);
    let exp = 63 - v.leading_zeros() as usize;
    let sub = if exp >= 4 {
        (v >> (exp - 4)) as usize & (SUB - 1)
    } else {
        (v << (4 - exp)) as usize & (SUB - 1)
    };
    exp * SUB + sub
}

/// Latencies by block of time (see the module's doc).
#[derive(Clone, PartialEq, Eq)]
pub struct Blocks {
    /// The width of one block, milliseconds: `BASE_MS` times a power of two.
    width_ms: u64,
    /// Counts by block and bin, block `b`'s bins at `b * BINS..(b + 1) * BINS`; empty until
    /// prepared (then nothing is recorded).
    counts: Vec<u32>,
    /// Blocks in use: one past the last that holds a sample.
    used: usize,
}

impl Default for Blocks {
    fn default() -> Self {
        Blocks {
            width_ms: BASE_MS,
            counts: Vec::new(),
            used: 0,
        }
    }
}

impl std::fmt::Debug for Blocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Blocks {{ width_ms: {}, used: {}, samples: {} }}",
            self.width_ms,
            self.used,
            self.counts.iter().map(|&c| u64::from(c)).sum::<u64>()
        )
    }
}

/// One block's samples and those of them above a threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockCount {
    pub samples: u64,
    pub above: u64,
}

impl Blocks {
    /// Blocks with their storage allocated, ready to record.
    pub fn prepared() -> Blocks {
        Blocks {
            counts: vec![0; CAPACITY * BINS],
            ..Blocks::default()
        }
    }

    /// Whether no sample is kept.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// The width of one block, milliseconds.
    pub fn width_ms(&self) -> u64 {
        self.width_ms
    }

    /// Records a latency of `us` microseconds of a response that ended `since_ms`
    /// milliseconds after the measured start. Nothing when not prepared.
    #[inline]
    pub fn record(&mut self, since_ms: u64, us: u64) {
        if self.counts.is_empty() {
            return;
        }
        let mut b = since_ms / self.width_ms;
        while b >= CAPACITY as u64 {
            self.coarsen();
            b = since_ms / self.width_ms;
        }
        let b = b as usize;
        let i = b * BINS + bin(us);
        self.counts[i] = self.counts[i].saturating_add(1);
        if b >= self.used {
            self.used = b + 1;
        }
    }

    /// Doubles the block width: blocks 2i and 2i + 1 become block i.
    fn coarsen(&mut self) {
        if self.width_ms >= BASE_MS << 40 {
            return;
        }
        if !self.counts.is_empty() {
            // Block b is written after blocks 2b and 2b + 1 are read, and before either is.
            for b in 0..CAPACITY {
                for k in 0..BINS {
                    let at = |j: usize| j * BINS + k;
                    let first = if 2 * b < CAPACITY {
                        self.counts[at(2 * b)]
                    } else {
                        0
                    };
                    let second = if 2 * b + 1 < CAPACITY {
                        self.counts[at(2 * b + 1)]
                    } else {
                        0
                    };
                    self.counts[at(b)] = first.saturating_add(second);
                }
            }
        }
        self.width_ms *= 2;
        self.used = self.used.div_ceil(2);
    }

    /// Widens the blocks to at least `width_ms` (a power-of-two multiple of this width).
    fn widen_to(&mut self, width_ms: u64) {
        while self.width_ms < width_ms && self.width_ms < BASE_MS << 40 {
            self.coarsen();
        }
    }

    /// Allocates the storage if there is none (before adding samples to it).
    fn ensure(&mut self) {
        if self.counts.is_empty() {
            self.counts = vec![0; CAPACITY * BINS];
        }
    }

    /// Adds `other`'s samples block by block, `offset_ms` later than they were recorded
    /// (0 for the threads of one run; a shard's clock offset): the same stretch of time.
    pub fn merge_at(&mut self, other: &Blocks, offset_ms: u64) {
        if other.is_empty() {
            return;
        }
        self.ensure();
        let mut other = other.clone();
        let width = self.width_ms.max(other.width_ms);
        self.widen_to(width);
        other.widen_to(width);
        // Room for the other's last block once moved.
        let last = |s: &Blocks, o: &Blocks| offset_ms / s.width_ms + o.used as u64;
        while last(&*self, &other) > CAPACITY as u64 && self.width_ms < BASE_MS << 40 {
            self.coarsen();
            other.widen_to(self.width_ms);
        }
        let shift = (offset_ms / self.width_ms) as usize;
        for b in 0..other.used {
            let to = b + shift;
            if to >= CAPACITY {
                break;
            }
            for k in 0..BINS {
                let c = other.counts[b * BINS + k];
                if c > 0 {
                    let i = to * BINS + k;
                    self.counts[i] = self.counts[i].saturating_add(c);
                }
            }
            if other.counts[b * BINS..(b + 1) * BINS]
                .iter()
                .any(|&c| c > 0)
            {
                self.used = self.used.max(to + 1);
            }
        }
    }

    /// These samples `offset_ms` later (a shard's clock offset, a later node's step).
    pub fn shifted(&self, offset_ms: u64) -> Blocks {
        let mut out = Blocks::default();
        out.merge_at(self, offset_ms);
        out
    }

    /// Adds `other`'s samples block by block (the same stretch of time).
    pub fn merge(&mut self, other: &Blocks) {
        self.merge_at(other, 0);
    }

    /// Appends `other`'s blocks after this one's (a measurement taken after this one).
    pub fn append(&mut self, other: &Blocks) {
        let width = self.width_ms.max(other.width_ms);
        self.widen_to(width);
        let offset = self.used as u64 * self.width_ms;
        self.merge_at(other, offset);
    }

    /// How many blocks hold a sample.
    pub fn held(&self) -> usize {
        (0..self.used)
            .filter(|b| self.counts[b * BINS..(b + 1) * BINS].iter().any(|&c| c > 0))
            .count()
    }

    /// Each block that holds a sample: its samples and those above bin `threshold` (in
    /// the bins past it).
    pub fn above(&self, threshold: usize) -> Vec<BlockCount> {
        (0..self.used)
            .map(|b| {
                let row = &self.counts[b * BINS..(b + 1) * BINS];
                BlockCount {
                    samples: row.iter().map(|&c| u64::from(c)).sum(),
                    above: row.iter().skip(threshold + 1).map(|&c| u64::from(c)).sum(),
                }
            })
            .filter(|c| c.samples > 0)
            .collect()
    }
}

/// The blocks on the wire: the width, and each block in use as its non-zero bins,
/// "bin:count" separated by spaces ("" for an empty block).
#[derive(Serialize, Deserialize)]
struct BlocksWire {
    width_ms: u64,
    blocks: Vec<String>,
}

impl Serialize for Blocks {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let blocks = (0..self.used)
            .map(|b| {
                let row = &self.counts[b * BINS..(b + 1) * BINS];
                row.iter()
                    .enumerate()
                    .filter(|(_, c)| **c > 0)
                    .map(|(k, c)| format!("{k}:{c}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        BlocksWire {
            width_ms: self.width_ms,
            blocks,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Blocks {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Blocks, D::Error> {
        use serde::de::Error as _;
        let w = BlocksWire::deserialize(d)?;
        let ok_width = w.width_ms >= BASE_MS
            && w.width_ms.is_multiple_of(BASE_MS)
            && (w.width_ms / BASE_MS).is_power_of_two();
        if !ok_width {
            return Err(D::Error::custom(format!(
                "blocks: width {} ms is not 100 ms times a power of two",
                w.width_ms
            )));
        }
        if w.blocks.len() > CAPACITY {
            return Err(D::Error::custom(format!(
                "blocks: {} blocks, more than {CAPACITY}",
                w.blocks.len()
            )));
        }
        let mut out = Blocks {
            width_ms: w.width_ms,
            ..Blocks::prepared()
        };
        for (b, text) in w.blocks.iter().enumerate() {
            for cell in text.split_whitespace() {
                let bad = || D::Error::custom(format!("blocks: '{cell}' is not BIN:COUNT"));
                let (k, c) = cell.split_once(':').ok_or_else(bad)?;
                let k: usize = k.parse().map_err(|_| bad())?;
                let c: u32 = c.parse().map_err(|_| bad())?;
                if k >= BINS {
                    return Err(bad());
                }
                out.counts[b * BINS + k] = c;
                if c > 0 {
                    out.used = b + 1;
                }
            }
        }
        if out.used == 0 {
            return Ok(Blocks::default());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_grow_by_about_4_percent_and_keep_order() {
        assert_eq!(bin(1), 0);
        assert_eq!(bin(16), 4 * SUB);
        assert_eq!(bin(17), 4 * SUB + 1);
        assert!(bin(crate::stats::MAX_US) < BINS);
        let mut last = 0;
        for us in (1..5_000_000u64).step_by(997) {
            let b = bin(us);
            assert!(b >= last);
            last = b;
        }
        // Two values 5% apart above 1 ms never share a bin.
        assert_ne!(bin(1000), bin(1050));
    }

    #[test]
    fn long_runs_widen_the_blocks_and_merges_line_up() {
        let mut a = Blocks::prepared();
        for ms in 0..20_000u64 {
            a.record(ms, 1000 + ms % 7);
        }
        // 20 s: 200 ms blocks would be 100, so 400 ms: 50 blocks.
        assert_eq!(a.width_ms(), 400);
        let counts = a.above(0);
        assert_eq!(counts.len(), 50);
        assert!(counts.iter().all(|c| c.samples == 400));
        // Two threads of one run add block by block.
        let mut b = Blocks::prepared();
        for ms in 0..1_000u64 {
            b.record(ms, 5000);
        }
        let mut m = a.clone();
        m.merge(&b);
        let counts = m.above(bin(2000));
        assert_eq!(counts.len(), 50);
        assert_eq!(counts[0].samples, 800);
        assert_eq!(counts[0].above, 400);
        assert_eq!(counts[3].above, 0);
        // A repeat comes after: its blocks are blocks of their own.
        let mut r = b.clone();
        r.append(&b);
        let counts = r.above(bin(2000));
        assert_eq!(counts.len(), 20);
        assert!(counts.iter().all(|c| c.samples == 100 && c.above == 100));
    }

    #[test]
    fn the_wire_form_reads_back_and_bad_forms_are_refused() {
        let mut a = Blocks::prepared();
        for ms in (0..3_000u64).step_by(3) {
            a.record(ms, 100 + ms);
        }
        let text = serde_json::to_string(&a).unwrap();
        let back: Blocks = serde_json::from_str(&text).unwrap();
        assert_eq!(back, a);
        let empty: Blocks = serde_json::from_str(r#"{"width_ms":100,"blocks":[]}"#).unwrap();
        assert!(empty.is_empty());
        for bad in [
            r#"{"width_ms":150,"blocks":[]}"#,
            r#"{"width_ms":100,"blocks":["600:1"]}"#,
            r#"{"width_ms":100,"blocks":["x"]}"#,
        ] {
            assert!(serde_json::from_str::<Blocks>(bad).is_err(), "{bad}");
        }
    }
}
