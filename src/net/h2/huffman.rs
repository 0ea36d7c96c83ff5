//! HPACK's Huffman code (RFC 7541 §5.2, appendix B), decoded into a buffer the caller
//! reuses, so a response's strings cost no allocation. The code is canonical: the codes
//! follow from the symbols' code lengths alone (appendix B), so only the lengths are
//! written here and the decoding tables are built from them at compile time.

/// Code length in bits of each symbol, 0..=255 and EOS (256): RFC 7541 appendix B.
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

const EOS: u16 = 256;
const LONGEST: usize = 30;

/// The canonical code's decoding tables: per length, the first code and how many codes
/// there are, and the symbols in code order.
struct Canonical {
    first: [u32; LONGEST + 1],
    count: [u16; LONGEST + 1],
    start: [u16; LONGEST + 1],
    symbols: [u16; 257],
}

const fn canonical() -> Canonical {
    let mut c = Canonical {
        first: [0; LONGEST + 1],
        count: [0; LONGEST + 1],
        start: [0; LONGEST + 1],
        symbols: [0; 257],
    };
    let (mut code, mut placed, mut len) = (0u32, 0usize, 1usize);
    while len <= LONGEST {
        c.first[len] = code;
        c.start[len] = placed as u16;
        let mut s = 0;
        while s < 257 {
            if LENGTHS[s] as usize == len {
                c.symbols[placed] = s as u16;
                placed += 1;
                c.count[len] += 1;
                code += 1;
            }
            s += 1;
        }
        code <<= 1;
        len += 1;
    }
    c
}

static CODE: Canonical = canonical();

/// Why a Huffman string is not one (RFC 7541 §5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HuffmanError {
    /// The EOS symbol inside the string.
    Eos,
    /// Padding longer than 7 bits, or not the most significant bits of EOS.
    Padding,
}

/// Appends the decoding of `src` to `out` (no allocation once `out` has the room).
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let (mut code, mut len, mut ones) = (0u32, 0usize, true);
    for &byte in src {
        for bit in (0..8).rev() {
            let b = u32::from(byte >> bit) & 1;
            code = (code << 1) | b;
            len += 1;
            ones &= b == 1;
            let i = code.wrapping_sub(CODE.first[len]);
            if i < u32::from(CODE.count[len]) {
                let sym = CODE.symbols[usize::from(CODE.start[len]) + i as usize];
                if sym == EOS {
                    return Err(HuffmanError::Eos);
                }
                out.push(sym as u8);
                (code, len, ones) = (0, 0, true);
            } else if len == LONGEST {
                // Every 30-bit code is a symbol's: a longer run is not a code.
                return Err(HuffmanError::Padding);
            }
        }
    }
    if len > 7 || !ones {
        return Err(HuffmanError::Padding);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes with the canonical codes (the tables inverted), for the round trip.
    fn encode(text: &[u8]) -> Vec<u8> {
        let mut codes = [(0u32, 0usize); 257];
        for len in 1..=LONGEST {
            for k in 0..usize::from(CODE.count[len]) {
                let sym = CODE.symbols[usize::from(CODE.start[len]) + k];
                codes[usize::from(sym)] = (CODE.first[len] + k as u32, len);
            }
        }
        let (mut acc, mut bits, mut out) = (0u64, 0usize, Vec::new());
        for &c in text {
            let (code, len) = codes[usize::from(c)];
            acc = (acc << len) | u64::from(code);
            bits += len;
            while bits >= 8 {
                out.push((acc >> (bits - 8)) as u8);
                bits -= 8;
            }
        }
        if bits > 0 {
            let pad = 8 - bits;
            out.push((((acc << pad) | ((1 << pad) - 1)) & 0xff) as u8);
        }
        out
    }

    #[test]
    fn every_octet_round_trips_and_matches_loona_hpacks_decoder() {
        let all: Vec<u8> = (0..=255u8)
            .chain(b"www.example.com".iter().copied())
            .collect();
        let enc = encode(&all);
        let mut out = Vec::new();
        decode(&enc, &mut out).unwrap();
        assert_eq!(out, all);
        let theirs = loona_hpack::huffman::HuffmanDecoder::new()
            .decode(&enc)
            .unwrap();
        assert_eq!(theirs, all);
        for one in 0..=255u8 {
            let mut out = Vec::new();
            decode(&encode(&[one]), &mut out).unwrap();
            assert_eq!(out, [one]);
        }
    }

    #[test]
    fn rfc_7541_c4_strings_and_bad_padding() {
        // C.4.1: "www.example.com".
        let enc = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        let mut out = Vec::new();
        decode(&enc, &mut out).unwrap();
        assert_eq!(out, b"www.example.com");
        // "no-cache" (C.4.2), then its padding cleared: not EOS's bits.
        let mut enc = vec![0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf];
        out.clear();
        decode(&enc, &mut out).unwrap();
        assert_eq!(out, b"no-cache");
        *enc.last_mut().unwrap() = 0xbe;
        assert_eq!(decode(&enc, &mut out), Err(HuffmanError::Padding));
        // A whole byte of padding, and EOS itself (30 ones).
        assert_eq!(decode(&[0xff], &mut out), Err(HuffmanError::Padding));
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xfc], &mut out),
            Err(HuffmanError::Eos)
        );
    }
}
