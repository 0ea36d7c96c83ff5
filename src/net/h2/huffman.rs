//! HPACK's Huffman code (RFC 7541 §5.2, appendix B) decoded by table, into a buffer the
//! caller reuses: no allocation and no hashing per string. The code table itself (257
//! lengths and codes, the RFC's data) comes from `httlib-huffman`; its own decoder
//! allocates per string, and `loona-hpack`'s hashes per bit (measured: two thirds of the
//! client's CPU against nginx, which Huffman-codes the values it indexes).
//!
//! The code is canonical (the codes of one length are consecutive, shorter codes sort
//! first: checked by a unit test), so a symbol is found from the next 9 bits in one
//! lookup when its code is at most 9 bits long (every letter, digit and common
//! punctuation), else by length from 10 to 30 bits. The end is checked as the RFC asks:
//! padding of at most 7 bits, all ones (the EOS code's first bits), and no EOS inside.

use std::sync::OnceLock;

/// The symbol of EOS (end of string): never part of a string.
const EOS: u16 = 256;
const FAST_BITS: u32 = 9;
const MAX_LEN: usize = 30;

/// Why a Huffman string cannot be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HuffmanError {
    /// The EOS symbol inside the string.
    Eos,
    /// Padding over 7 bits, or not the EOS code's leading ones.
    Padding,
}

struct Tables {
    /// By the next 9 bits: (symbol, length) of a code of at most 9 bits (length 0: longer).
    fast: [(u16, u8); 1 << FAST_BITS],
    /// By length: the first code, how many codes, where their symbols start in `symbols`.
    first: [u32; MAX_LEN + 1],
    count: [u32; MAX_LEN + 1],
    offset: [u32; MAX_LEN + 1],
    /// The symbols sorted by (length, code).
    symbols: [u16; 257],
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(build)
}

fn build() -> Tables {
    let code = &httlib_huffman::encoder::table::ENCODE_TABLE;
    let mut order: Vec<u16> = (0..=EOS).collect();
    order.sort_by_key(|&s| (code[s as usize].0, code[s as usize].1));
    let mut t = Tables {
        fast: [(0, 0); 1 << FAST_BITS],
        first: [0; MAX_LEN + 1],
        count: [0; MAX_LEN + 1],
        offset: [0; MAX_LEN + 1],
        symbols: [0; 257],
    };
    for (i, &s) in order.iter().enumerate() {
        let (len, c) = code[s as usize];
        let l = usize::from(len);
        if t.count[l] == 0 {
            t.first[l] = c;
            t.offset[l] = i as u32;
        }
        t.count[l] += 1;
        t.symbols[i] = s;
        if u32::from(len) <= FAST_BITS {
            let spare = FAST_BITS - u32::from(len);
            for low in 0..(1u32 << spare) {
                t.fast[((c << spare) | low) as usize] = (s, len);
            }
        }
    }
    t
}

/// The next 32 bits of `src` from bit `pos`, padded with ones past its end.
#[inline]
fn window(src: &[u8], pos: usize) -> u32 {
    let at = pos / 8;
    let mut w = 0u64;
    for k in 0..5 {
        w = (w << 8) | u64::from(src.get(at + k).copied().unwrap_or(0xff));
    }
    ((w << (pos % 8)) >> 8) as u32
}

/// The symbol whose code starts `w` (left-aligned), and its length.
#[inline]
fn symbol(t: &Tables, w: u32) -> (u16, usize) {
    let (s, len) = t.fast[(w >> (32 - FAST_BITS)) as usize];
    if len > 0 {
        return (s, usize::from(len));
    }
    for l in FAST_BITS as usize + 1..=MAX_LEN {
        let c = w >> (32 - l);
        let k = c.wrapping_sub(t.first[l]);
        if k < t.count[l] {
            return (t.symbols[(t.offset[l] + k) as usize], l);
        }
    }
    // Unreachable for a complete code: every 30-bit pattern starts some code.
    (EOS, MAX_LEN)
}

/// Appends the decoding of `src` to `out`.
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let t = tables();
    let total = src.len() * 8;
    let mut pos = 0;
    while pos < total {
        let w = window(src, pos);
        let (s, len) = symbol(t, w);
        let left = total - pos;
        if len > left {
            // What is left is padding: at most 7 bits, all ones.
            let ones = (1u32 << left) - 1;
            if left > 7 || w >> (32 - left) != ones {
                return Err(HuffmanError::Padding);
            }
            return Ok(());
        }
        if s == EOS {
            return Err(HuffmanError::Eos);
        }
        out.push(s as u8);
        pos += len;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_is_canonical_and_complete() {
        let code = &httlib_huffman::encoder::table::ENCODE_TABLE;
        let t = tables();
        // Consecutive codes within a length, and the next length starts where the
        // previous one ended (shifted): the canonical construction.
        let mut next = 0u32;
        for l in 1..=MAX_LEN {
            next <<= 1;
            if t.count[l] == 0 {
                continue;
            }
            assert_eq!(t.first[l], next, "length {l}");
            for k in 0..t.count[l] {
                let s = t.symbols[(t.offset[l] + k) as usize] as usize;
                assert_eq!(code[s], (l as u8, next + k));
            }
            next += t.count[l];
        }
        // Every 30-bit pattern is a code's prefix: the code is complete.
        assert_eq!(next, 1 << 30);
    }

    #[test]
    fn rfc_7541_strings_and_every_byte_round_trip() {
        let mut out = Vec::new();
        // C.4.1: "www.example.com".
        decode(
            &[
                0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
            ],
            &mut out,
        )
        .unwrap();
        assert_eq!(out, b"www.example.com");
        let all: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        for n in 0..all.len() {
            let mut enc = Vec::new();
            httlib_huffman::encode(&all[..n], &mut enc).unwrap();
            out.clear();
            decode(&enc, &mut out).unwrap();
            assert_eq!(out, &all[..n], "{n} bytes");
        }
    }

    #[test]
    fn bad_padding_and_eos_are_refused() {
        let mut out = Vec::new();
        // 'a' (00011) then three padding bits of zeros.
        assert_eq!(decode(&[0x18], &mut out), Err(HuffmanError::Padding));
        // A whole byte of ones: padding over 7 bits.
        assert_eq!(decode(&[0xff], &mut out), Err(HuffmanError::Padding));
        // EOS (30 ones) then two ones of padding.
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut out),
            Err(HuffmanError::Eos)
        );
        out.clear();
        // 'a' and five ones: fine.
        assert_eq!(decode(&[0x1f], &mut out), Ok(()));
        assert_eq!(out, b"a");
    }
}
