//! Bounded counting for the profile: how many distinct values (paths, accessors) a log
//! holds, exactly up to a cap and then estimated by a HyperLogLog; and the most frequent
//! keys (path shapes) in a bounded table (space-saving: a full table gives its least
//! counted slot to a new key). Values are kept as 64-bit hashes, never as text, so no
//! accessor or path is held, let alone printed.
//!
//! Why a HyperLogLog of its own rather than a crate: `hyperloglogplus` (0.4.1, MIT, the
//! maintained one on crates.io) was looked at. It hashes every value again through its
//! own `BuildHasher`, where the profile already holds one 64-bit hash per value (the same
//! hash the exact set keeps, so that switching from exact to estimated re-inserts the
//! hashes as they are); its `count` takes `&mut self`; and its sparse representation is a
//! second memory bound to reason about. What is here is the dense estimator with the
//! small-range (linear counting) correction: 4 KiB per count, a few dozen lines, unit-tested
//! within 6% at 50,000 values. Swapping it for the crate stays a change local to this file.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A value's 64-bit hash (SipHash with fixed keys: the same in every run).
pub fn hash_of(value: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// The hasher of the maps and sets keyed by `hash_of`'s values (already SipHash'd, so
/// well spread): one rotate, xor and multiply per word instead of SipHash again. Results
/// do not depend on it (nothing is read in a map's order).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rehash(u64);

impl Hasher for Rehash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(23) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// A map keyed by hashes (or small values), hashed by `Rehash`.
pub type HashedMap<K, V> = HashMap<K, V, BuildHasherDefault<Rehash>>;

/// HyperLogLog registers: 2^12 of them, a standard error of 1.04/sqrt(4096) = 1.6%.
const HLL_BITS: u32 = 12;
const HLL_REGISTERS: usize = 1 << HLL_BITS;

/// Distinct values, exact while at most `cap` were seen, then a HyperLogLog estimate
/// (4 KiB, 1.6% standard error).
#[derive(Clone, Debug)]
pub enum DistinctCount {
    Exact {
        seen: HashSet<u64, BuildHasherDefault<Rehash>>,
        cap: usize,
    },
    Estimated(Box<[u8; HLL_REGISTERS]>),
}

impl DistinctCount {
    /// Exact up to `cap` distinct values.
    pub fn with_cap(cap: usize) -> DistinctCount {
        DistinctCount::Exact {
            seen: HashSet::default(),
            cap,
        }
    }

    /// Counts the value whose hash is `h`.
    pub fn insert(&mut self, h: u64) {
        match self {
            DistinctCount::Exact { seen, cap } => {
                seen.insert(h);
                if seen.len() > *cap {
                    let mut regs = Box::new([0u8; HLL_REGISTERS]);
                    for v in seen.iter() {
                        hll_add(&mut regs, *v);
                    }
                    *self = DistinctCount::Estimated(regs);
                }
            }
            DistinctCount::Estimated(regs) => hll_add(regs, h),
        }
    }

    /// Whether the value was seen; None once estimated (membership is not kept).
    pub fn contains(&self, h: u64) -> Option<bool> {
        match self {
            DistinctCount::Exact { seen, .. } => Some(seen.contains(&h)),
            DistinctCount::Estimated(_) => None,
        }
    }

    /// The count, and whether it is an estimate.
    pub fn count(&self) -> (u64, bool) {
        match self {
            DistinctCount::Exact { seen, .. } => (seen.len() as u64, false),
            DistinctCount::Estimated(regs) => (hll_estimate(regs), true),
        }
    }
}

fn hll_add(regs: &mut [u8; HLL_REGISTERS], h: u64) {
    // Mix once more: DefaultHasher's low bits are good, but the index and the rank must
    // come from independent-looking bits.
    let h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let index = (h >> (64 - HLL_BITS)) as usize;
    let rest = (h << HLL_BITS) | (1 << (HLL_BITS - 1));
    let rank = rest.leading_zeros() as u8 + 1;
    if regs[index] < rank {
        regs[index] = rank;
    }
}

fn hll_estimate(regs: &[u8; HLL_REGISTERS]) -> u64 {
    let m = HLL_REGISTERS as f64;
    let alpha = 0.7213 / (1.0 + 1.079 / m);
    let sum: f64 = regs.iter().map(|r| 2f64.powi(-(*r as i32))).sum();
    let raw = alpha * m * m / sum;
    let zeros = regs.iter().filter(|r| **r == 0).count();
    if raw <= 2.5 * m && zeros > 0 {
        // Small range: linear counting.
        (m * (m / zeros as f64).ln()).round() as u64
    } else {
        raw.round() as u64
    }
}

/// The most frequent keys, at most `cap` kept (space-saving: a key arriving at a full
/// table takes the least counted slot, with that slot's count plus one, so a kept
/// count may exceed the truth by at most the evicted count, marked as `over`).
#[derive(Clone, Debug)]
pub struct TopCounts {
    counts: HashMap<String, (u64, u64)>,
    cap: usize,
}

impl TopCounts {
    pub fn with_cap(cap: usize) -> TopCounts {
        TopCounts {
            counts: HashMap::new(),
            cap,
        }
    }

    /// Counts one occurrence of `key`.
    pub fn add(&mut self, key: &str) {
        if let Some(c) = self.counts.get_mut(key) {
            c.0 += 1;
            return;
        }
        if self.counts.len() < self.cap {
            self.counts.insert(key.to_string(), (1, 0));
            return;
        }
        let least = self
            .counts
            .iter()
            .min_by_key(|(_, c)| c.0)
            .map(|(k, c)| (k.clone(), c.0));
        if let Some((k, n)) = least {
            self.counts.remove(&k);
            self.counts.insert(key.to_string(), (n + 1, n));
        }
    }

    /// The `n` most counted keys, most first (ties by key), with their counts and the
    /// most each count may be over.
    pub fn top(&self, n: usize) -> Vec<(String, u64, u64)> {
        let mut all: Vec<(String, u64, u64)> = self
            .counts
            .iter()
            .map(|(k, c)| (k.clone(), c.0, c.1))
            .collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all.truncate(n);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_up_to_the_cap_then_estimated_within_a_few_percent() {
        let mut d = DistinctCount::with_cap(1000);
        for i in 0..1000 {
            d.insert(hash_of(&format!("p{i}")));
            d.insert(hash_of(&format!("p{i}")));
        }
        assert_eq!(d.count(), (1000, false));
        assert_eq!(d.contains(hash_of("p3")), Some(true));
        for i in 0..50_000 {
            d.insert(hash_of(&format!("p{i}")));
        }
        let (n, estimated) = d.count();
        assert!(estimated);
        assert!((n as f64 - 50_000.0).abs() < 50_000.0 * 0.06, "{n}");
        assert_eq!(d.contains(hash_of("p3")), None);
    }

    #[test]
    fn the_most_frequent_keys_stay_in_a_full_table() {
        let mut t = TopCounts::with_cap(4);
        for i in 0..100 {
            t.add("a");
            if i % 2 == 0 {
                t.add("b");
            }
            t.add(&format!("rare{i}"));
        }
        let top = t.top(2);
        assert_eq!(top[0].0, "a");
        assert_eq!(top[0].1, 100);
        assert_eq!(top[1].0, "b");
    }
}
