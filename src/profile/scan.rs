//! The fast path for one audit line: a small scanner that walks the line's top-level
//! object and the few nested ones the profile reads (`request`, `request.namespace`,
//! `response`, `response.auth`), takes the wanted strings as slices of the line, and skips
//! every other value without building anything. It gives an `AuditLine` equal to what
//! serde_json gives, or declines (None) and the caller parses the line with serde_json,
//! so the profile's figures and its "not JSON" verdicts (with their messages) never change.
//!
//! It declines whenever in doubt: a byte below 0x20 (a control character, which serde
//! refuses in a string; a tab, CR or newline between tokens, which serde would allow, is
//! declined too: only spaces are taken as whitespace), a string that is not UTF-8 (each
//! non-ASCII character is checked where it stands), a top level that is not an object, a key with an
//! escape, a known key twice (serde's "duplicate field"), a wanted value of another type
//! than string/null (or object/null), nesting past 100, a lone surrogate escape, and any
//! syntax error. What it accepts, serde_json accepts: skipped strings have their escapes
//! checked (`\uXXXX` with four hex digits, surrogates only in pairs), numbers follow the
//! JSON grammar (no leading zero, digits after `.` and `e`), literals are exact, and
//! nothing but spaces follows the object. A wanted string with escapes is decoded by
//! serde_json itself (the string alone), so the decoding is serde's.
//!
//! Why hand-written: an OpenBao audit line is ~1-1.6 KB of mostly HMAC'd strings the
//! profile never reads; serde_json, even into `IgnoredAny`, walks every skipped string
//! byte by byte for escapes and validates it (`skip_to_escape`, `ignore_str`,
//! `from_utf8` were 20% of the profile's time), and matches every field name. The
//! crates with a lazy, path-driven extraction were looked at: sonic-rs's `get_many` with
//! a `PointerTree` returns raw slices, but its checked form has its own notion of valid
//! JSON and of duplicate keys (not serde_json's, which the verdicts here must match), its
//! unchecked form assumes valid input, and its through-serde path gave no gain here. This
//! file is ~300 lines of safe Rust (strings scanned eight bytes at a time), fuzzed against serde_json
//! (fuzz/fuzz_targets/audit_line.rs) and tested on real and mutated lines.

use std::borrow::Cow;

use super::entry::{AuditAuth, AuditLine, AuditNamespace, AuditRequest, AuditResponse};

/// Deeper than this, the scanner declines (serde_json's own limit is 128).
const MAX_DEPTH: u32 = 100;

/// The line as serde_json would read it, or None: ask serde_json.
pub fn audit_line(text: &[u8]) -> Option<AuditLine<'_>> {
    let mut sc = Scanner {
        b: text,
        i: 0,
        depth: 0,
    };
    sc.spaces();
    let mut line = AuditLine::default();
    sc.top(&mut line)?;
    sc.spaces();
    (sc.i == text.len()).then_some(line)
}

/// A position in the line and how deep in it.
struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    depth: u32,
}

impl<'a> Scanner<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.b
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.i).copied()
    }

    fn spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.i += 1;
        }
    }

    /// The next byte (spaces skipped before it) must be `c`.
    fn eat(&mut self, c: u8) -> Option<()> {
        self.spaces();
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// An object's members: `member` is called at each value, with its key (one without
    /// escapes), and must consume the value.
    fn members(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.enter()?;
        self.spaces();
        if self.peek()? == b'}' {
            self.i += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            self.spaces();
            let (from, to, escaped) = self.string()?;
            if escaped {
                return None;
            }
            let key = &self.bytes()[from..to];
            self.eat(b':')?;
            self.spaces();
            member(self, key)?;
            self.spaces();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// The top-level object.
    fn top(&mut self, l: &mut AuditLine<'a>) -> Option<()> {
        let mut seen = 0u8;
        self.members(|sc, key| {
            let bit = match key {
                b"time" => 1,
                b"type" => 2,
                b"request" => 4,
                b"response" => 8,
                b"error" => 16,
                _ => return sc.skip(),
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match bit {
                1 => l.time = sc.text()?,
                2 => l.kind = sc.text()?,
                4 => sc.nested(&mut l.request, Self::request)?,
                8 => sc.nested(&mut l.response, Self::response)?,
                _ => l.error = sc.text()?,
            }
            Some(())
        })
    }

    fn request(&mut self, r: &mut AuditRequest<'a>) -> Option<()> {
        let mut seen = 0u8;
        self.members(|sc, key| {
            let bit = match key {
                b"id" => 1,
                b"operation" => 2,
                b"path" => 4,
                b"mount_point" => 8,
                b"mount_type" => 16,
                b"client_token_accessor" => 32,
                b"namespace" => 64,
                _ => return sc.skip(),
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match bit {
                1 => r.id = sc.text()?,
                2 => r.operation = sc.text()?,
                4 => r.path = sc.text()?,
                8 => r.mount_point = sc.text()?,
                16 => r.mount_type = sc.text()?,
                32 => r.client_token_accessor = sc.text()?,
                _ => sc.nested(&mut r.namespace, Self::namespace)?,
            }
            Some(())
        })
    }

    fn namespace(&mut self, n: &mut AuditNamespace<'a>) -> Option<()> {
        let mut seen = false;
        self.members(|sc, key| match key {
            b"path" if !seen => {
                seen = true;
                n.path = sc.text()?;
                Some(())
            }
            b"path" => None,
            _ => sc.skip(),
        })
    }

    fn response(&mut self, r: &mut AuditResponse<'a>) -> Option<()> {
        let mut seen = false;
        self.members(|sc, key| match key {
            b"auth" if !seen => {
                seen = true;
                sc.nested(&mut r.auth, Self::auth)?;
                Some(())
            }
            b"auth" => None,
            _ => sc.skip(),
        })
    }

    fn auth(&mut self, a: &mut AuditAuth<'a>) -> Option<()> {
        let mut seen = false;
        self.members(|sc, key| match key {
            b"accessor" if !seen => {
                seen = true;
                a.accessor = sc.text()?;
                Some(())
            }
            b"accessor" => None,
            _ => sc.skip(),
        })
    }

    /// A wanted object (read into `slot`) or null (an array, which serde would read as a
    /// struct too, declines).
    fn nested<T: Default>(
        &mut self,
        slot: &mut Option<T>,
        object: fn(&mut Self, &mut T) -> Option<()>,
    ) -> Option<()> {
        match self.peek()? {
            b'n' => self.literal("null"),
            b'{' => object(self, slot.insert(T::default())),
            _ => None,
        }
    }

    /// A wanted string or null.
    fn text(&mut self) -> Option<Option<Cow<'a, str>>> {
        match self.peek()? {
            b'n' => self.literal("null").map(|()| None),
            b'"' => {
                let (from, to, escaped) = self.string()?;
                let quoted = std::str::from_utf8(&self.b[from - 1..=to]).ok()?;
                if !escaped {
                    return Some(Some(Cow::Borrowed(&quoted[1..quoted.len() - 1])));
                }
                let decoded: String = serde_json::from_str(quoted).ok()?;
                Some(Some(Cow::Owned(decoded)))
            }
            _ => None,
        }
    }

    /// A string at `"`: its content's range and whether it holds an escape.
    #[inline(always)]
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        if self.peek()? != b'"' {
            return None;
        }
        let b = self.bytes();
        let from = self.i + 1;
        let mut j = from;
        let mut escaped = false;
        loop {
            let k = special(b, j)?;
            match b[k] {
                b'"' => {
                    self.i = k + 1;
                    return Some((from, k, escaped));
                }
                b'\\' => {
                    escaped = true;
                    j = escape_end(b, k + 1)?;
                }
                0x80.. => j = utf8_end(b, k)?,
                _ => return None,
            }
        }
    }

    /// Any value, checked as serde_json checks it, built into nothing.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.members(|sc, _| sc.skip()),
            b'[' => self.array(),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn array(&mut self) -> Option<()> {
        self.i += 1;
        self.enter()?;
        self.spaces();
        if self.peek()? == b']' {
            self.i += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            self.spaces();
            self.skip()?;
            self.spaces();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        let end = self.i + word.len();
        (self.bytes().get(self.i..end)? == word.as_bytes()).then(|| self.i = end)
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Option<()> {
        let b = self.bytes();
        let mut i = self.i;
        if b[i] == b'-' {
            i += 1;
        }
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => i = digits_end(b, i),
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            let end = digits_end(b, i + 1);
            if end == i + 1 {
                return None;
            }
            i = end;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let end = digits_end(b, i);
            if end == i {
                return None;
            }
            i = end;
        }
        self.i = i;
        Some(())
    }
}

/// The first `"`, `\\`, control character (below 0x20) or non-ASCII byte at or after `j`,
/// eight bytes at a time (the lowest flagged byte of each test is exact: a false flag only
/// ever sits above a true one).
#[inline(always)]
fn special(b: &[u8], mut j: usize) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(LO) & !x & HI;
    while let Some(word) = b.get(j..j + 8) {
        let x = u64::from_le_bytes(word.try_into().ok()?);
        let m = zero(x ^ (LO * u64::from(b'"')))
            | zero(x ^ (LO * u64::from(b'\\')))
            | (x.wrapping_sub(LO * 0x20) & !x & HI)
            | (x & HI);
        if m != 0 {
            return Some(j + (m.trailing_zeros() / 8) as usize);
        }
        j += 8;
    }
    b[j..]
        .iter()
        .position(|c| matches!(c, b'"' | b'\\' | 0..0x20 | 0x80..))
        .map(|k| j + k)
}

/// Past the UTF-8 character whose first byte (not ASCII) is at `k`; None when it is not
/// one (serde_json refuses a line that is not UTF-8 in a string).
#[cold]
fn utf8_end(b: &[u8], k: usize) -> Option<usize> {
    let width = match b[k] {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return None,
    };
    let end = k + width;
    std::str::from_utf8(b.get(k..end)?).ok()?;
    Some(end)
}

fn digits_end(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// Past the escape whose letter is at `j` (after the backslash); None for one serde_json
/// might refuse (an unknown letter, bad hex, a surrogate not in a pair).
#[cold]
fn escape_end(b: &[u8], j: usize) -> Option<usize> {
    match *b.get(j)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(j + 1),
        b'u' => {
            let v = hex4(b, j + 1)?;
            match v {
                0xD800..=0xDBFF => {
                    if b.get(j + 5..j + 7)? != b"\\u" {
                        return None;
                    }
                    let low = hex4(b, j + 7)?;
                    (0xDC00..=0xDFFF).contains(&low).then_some(j + 11)
                }
                0xDC00..=0xDFFF => None,
                _ => Some(j + 5),
            }
        }
        _ => None,
    }
}

fn hex4(b: &[u8], at: usize) -> Option<u16> {
    let h = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
    if !h.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(h, 16).ok()
}

/// Whether the scanner took `text`, after checking it against serde_json: panics when it
/// took a line serde_json refuses or read it differently. For the tests and the fuzz
/// target (fuzz/fuzz_targets/audit_line.rs).
pub fn agrees_with_serde(text: &[u8]) -> bool {
    let slow: Result<AuditLine, _> = serde_json::from_slice(text);
    let Some(fast) = audit_line(text) else {
        return false;
    };
    match slow {
        Ok(slow) => assert_eq!(
            format!("{fast:?}"),
            format!("{slow:?}"),
            "read differently: {}",
            String::from_utf8_lossy(text)
        ),
        Err(e) => panic!(
            "took a line serde_json refuses ({e}): {}",
            String::from_utf8_lossy(text)
        ),
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real OpenBao audit lines (HMAC'd values only): the fuzz target's seeds.
    fn real_lines() -> Vec<Vec<u8>> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/audit_line");
        let mut lines: Vec<Vec<u8>> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        lines.sort();
        assert!(lines.len() >= 30, "{}", lines.len());
        lines
    }

    /// A small deterministic generator (xorshift), for the mutations.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    const VALUES: &[&str] = &[
        "null",
        "true",
        "false",
        "0",
        "-12",
        "3.25e+2",
        "-0.5E-3",
        "1e9",
        "{}",
        "[]",
        r#"{"a":[1,{"b":null,"c":"d"}],"e":{"f":{}}}"#,
        r#"[{"x":"y"},[],["z",2,false]]"#,
        r#""plain""#,
        r#""q\"uo\\te\/d\b\f\n\r\t""#,
        r#""\u00e9t\u00C9""#,
        r#""\ud83d\ude00 smile""#,
        "\"caf\u{e9} \u{1f600}\"",
        r#""""#,
    ];

    const BAD: &[&str] = &[
        "01",
        "1.",
        "-",
        "1e",
        ".5",
        "+1",
        "tru",
        "nul",
        "True",
        "NaN",
        r#""\x""#,
        r#""\u12g4""#,
        r#""\ud83d""#,
        r#""\ude00""#,
        r#""\ud83dx""#,
        "\"a\tb\"",
        "\"a\u{1}\"",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\"}",
        "[",
        "{",
        "\"open",
    ];

    #[test]
    fn every_real_line_is_taken_and_read_as_serde_reads_it() {
        for line in real_lines() {
            assert!(
                agrees_with_serde(&line),
                "declined: {}",
                String::from_utf8_lossy(&line)
            );
        }
    }

    #[test]
    fn every_prefix_and_every_one_byte_change_agrees_or_declines() {
        let swaps: &[u8] = b"\"\\{}[]:, 0-e.n\t\x01\xff\xc3a";
        for line in real_lines().iter().take(8) {
            for cut in 0..line.len() {
                agrees_with_serde(&line[..cut]);
                let mut gone = line.clone();
                gone.remove(cut);
                agrees_with_serde(&gone);
                for &c in swaps {
                    let mut changed = line.clone();
                    changed[cut] = c;
                    agrees_with_serde(&changed);
                }
            }
        }
    }

    /// The value of each `"key":` replaced by good and bad values, in every position.
    #[test]
    fn values_of_every_kind_in_every_position_agree() {
        let mut taken = 0;
        for line in real_lines().iter().take(6) {
            let text = String::from_utf8(line.clone()).unwrap();
            let keys: Vec<usize> = text.match_indices("\":").map(|(i, _)| i + 2).collect();
            for &at in &keys {
                let mut sc = Scanner {
                    b: text.as_bytes(),
                    i: at,
                    depth: 0,
                };
                if sc.skip().is_none() {
                    continue;
                }
                for v in VALUES.iter().chain(BAD) {
                    let changed = format!("{}{v}{}", &text[..at], &text[sc.i..]);
                    taken += usize::from(agrees_with_serde(changed.as_bytes()));
                }
            }
        }
        assert!(taken > 1000, "{taken}");
    }

    #[test]
    fn whitespace_orders_duplicates_and_depth_agree_or_decline() {
        let line = String::from_utf8(real_lines()[3].clone()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        // Keys sorted (another order), pretty (newlines: declined), spaced (taken).
        assert!(agrees_with_serde(value.to_string().as_bytes()));
        agrees_with_serde(serde_json::to_string_pretty(&value).unwrap().as_bytes());
        let spaced = line.replace(':', " : ").replace(',', " , ");
        assert!(agrees_with_serde(format!("  {spaced}  ").as_bytes()));
        for key in ["time", "type", "request", "response", "error", "other"] {
            let dup = format!("{},\"{key}\":null}}", &line[..line.len() - 1]);
            agrees_with_serde(dup.as_bytes());
        }
        for inner in ["id", "path", "namespace", "operation"] {
            let dup = line.replacen(
                "\"request\":{",
                &format!("\"request\":{{\"{inner}\":null,"),
                1,
            );
            agrees_with_serde(dup.as_bytes());
        }
        for depth in [50, 99, 127, 128, 129, 200] {
            let deep = format!("{}{}{}", "[".repeat(depth), 1, "]".repeat(depth));
            let nested = format!("{{\"x\":{deep},{}", &line[1..]);
            agrees_with_serde(nested.as_bytes());
        }
        for other in ["[]", "[1]", "null", "\"x\"", "1", "", "{}", "{} x", "{}}"] {
            agrees_with_serde(other.as_bytes());
        }
    }

    #[test]
    fn random_splices_agree_or_decline() {
        let lines = real_lines();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let pieces: Vec<&str> = VALUES.iter().chain(BAD).copied().collect();
        for _ in 0..20_000 {
            let mut line = lines[rng.below(lines.len())].clone();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(line.len() + 1);
                let piece = pieces[rng.below(pieces.len())].as_bytes();
                match rng.below(3) {
                    0 => drop(line.splice(at..at, piece.iter().copied())),
                    1 => line.truncate(at),
                    _ => {
                        let end = (at + rng.below(40)).min(line.len());
                        drop(line.splice(at..end, piece.iter().copied()));
                    }
                }
            }
            agrees_with_serde(&line);
        }
    }

    #[test]
    fn utf8_in_strings_is_checked_where_it_stands() {
        let line = String::from_utf8(real_lines()[0].clone()).unwrap();
        let at = line.find("\"type\"").unwrap();
        let bad: &[&[u8]] = &[
            b"\xC3\xA9",
            b"\xE2\x82\xAC",
            b"\xF0\x9F\x98\x80",
            b"\xC3",
            b"\xE2\x82",
            b"\xC0\xAF",
            b"\xED\xA0\x80",
            b"\xF4\x90\x80\x80",
            b"\xFF",
            b"\x80",
        ];
        for (i, seq) in bad.iter().enumerate() {
            for wrap in [&b"\"k"[..], b"\"x"] {
                let mut changed = line.as_bytes()[..at].to_vec();
                changed.extend_from_slice(wrap);
                changed.extend_from_slice(seq);
                changed.extend_from_slice(b"y\":\"v\",");
                changed.extend_from_slice(&line.as_bytes()[at..]);
                let taken = agrees_with_serde(&changed);
                assert_eq!(taken, i < 3, "{i}");
            }
        }
    }

    #[test]
    fn escaped_wanted_strings_are_decoded_as_serde_decodes_them() {
        let line = r#"{"time":"2026-12-05T08:33:27.3Z","type":"req\u0075est","request":{"path":"a\/b\u00e9\ud83d\ude00","namespace":{"path":"ns\"1\\/"}},"error":"1 error:\n\t* x"}"#;
        assert!(agrees_with_serde(line.as_bytes()));
        let l = audit_line(line.as_bytes()).unwrap();
        assert_eq!(l.kind.as_deref(), Some("request"));
        let r = l.request.unwrap();
        assert_eq!(r.path.as_deref(), Some("a/b\u{e9}\u{1f600}"));
        assert_eq!(r.namespace.unwrap().path.as_deref(), Some("ns\"1\\/"));
    }
}
