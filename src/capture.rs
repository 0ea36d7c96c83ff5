//! Values taken from responses for later requests on the same connection (a login's
//! `auth.client_token`, used as the next requests' token): where in the body a value is
//! found, and the per-connection slots that hold it. Neither allocates per request.

use serde::{Deserialize, Serialize};

/// What an operation keeps from a successful response.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Capture {
    pub slot: u8,
    /// JSON object keys from the top ("auth", "client_token"); the value is a string.
    pub path: Vec<String>,
}

impl Capture {
    /// "auth.client_token", for messages.
    pub fn describe(&self) -> String {
        self.path.join(".")
    }
}

/// Values captured from responses on one connection, by slot. Each slot's buffer is kept
/// for the connection's life, so storing a value of a similar length allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct Captures {
    values: Vec<Vec<u8>>,
}

impl Captures {
    /// Room for `slots` values of up to `typical` bytes each.
    pub fn with_slots(slots: usize, typical: usize) -> Captures {
        Captures {
            values: (0..slots).map(|_| Vec::with_capacity(typical)).collect(),
        }
    }

    pub fn get(&self, slot: u8) -> Option<&[u8]> {
        self.values
            .get(usize::from(slot))
            .filter(|v| !v.is_empty())
            .map(Vec::as_slice)
    }

    pub fn set(&mut self, slot: u8, value: &[u8]) {
        if let Some(v) = self.values.get_mut(usize::from(slot)) {
            v.clear();
            v.extend_from_slice(value);
        }
    }

    /// Empties one slot (its value was used up, e.g. a token revoked).
    pub fn clear_slot(&mut self, slot: u8) {
        if let Some(v) = self.values.get_mut(usize::from(slot)) {
            v.clear();
        }
    }

    pub fn clear(&mut self) {
        for v in &mut self.values {
            v.clear();
        }
    }
}

/// What a successful response must hold to count as a success (validation): a value at
/// `path`, and when `equals` is given, exactly those JSON bytes (`true`, `"aGk="`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Expect {
    pub path: Vec<String>,
    pub equals: Option<Vec<u8>>,
    /// The value must be a PEM certificate (a JSON string) that parses as X.509.
    #[serde(default)]
    pub certificate: bool,
    /// Further values that must be present (not null), each a path.
    #[serde(default)]
    pub also: Vec<Vec<String>>,
}

impl Expect {
    /// A value (not null) must be present at `path` ("data.ciphertext").
    pub fn present(path: &str) -> Expect {
        Expect {
            path: path.split('.').map(String::from).collect(),
            equals: None,
            certificate: false,
            also: Vec::new(),
        }
    }

    /// `present(path)` and every one of `more` present too.
    pub fn all_present(path: &str, more: &[&str]) -> Expect {
        Expect {
            also: more
                .iter()
                .map(|p| p.split('.').map(String::from).collect())
                .collect(),
            ..Expect::present(path)
        }
    }

    /// The value at `path` must be a PEM certificate that parses (X.509, x509-parser).
    pub fn certificate(path: &str) -> Expect {
        Expect {
            certificate: true,
            ..Expect::present(path)
        }
    }

    /// The value at `path` must be exactly the JSON text `json`.
    pub fn equals(path: &str, json: impl AsRef<[u8]>) -> Expect {
        Expect {
            equals: Some(json.as_ref().to_vec()),
            ..Expect::present(path)
        }
    }

    /// None when `body` meets the expectation, else why not (a static message per
    /// expectation, built only on failure).
    pub fn check(&self, body: &[u8]) -> Option<String> {
        match (find_value(body, &self.path), &self.equals) {
            (None, _) | (Some(b"null"), _) => {
                Some(format!("response has no {}", self.path.join(".")))
            }
            (Some(v), Some(want)) if v != want.as_slice() => Some(format!(
                "response {} differs from what was expected",
                self.path.join(".")
            )),
            (Some(v), _) if self.certificate && !pem_certificate_parses(v) => Some(format!(
                "response {} is not a certificate that parses",
                self.path.join(".")
            )),
            _ => self
                .also
                .iter()
                .find(|p| matches!(find_value(body, p), None | Some(b"null")))
                .map(|p| format!("response has no {}", p.join("."))),
        }
    }
}

/// Whether a JSON string holds a PEM CERTIFICATE block (its first) whose DER parses as
/// X.509. Decoded in buffers on the stack (certificates over 12 KiB of DER count as not
/// parsing).
pub fn pem_certificate_parses(json_string: &[u8]) -> bool {
    use base64::Engine as _;
    const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
    const END: &[u8] = b"-----END CERTIFICATE-----";
    let find = |hay: &[u8], needle: &[u8], from: usize| {
        hay.get(from..)?
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|p| p + from)
    };
    let Some(b) = find(json_string, BEGIN, 0) else {
        return false;
    };
    let Some(e) = find(json_string, END, b) else {
        return false;
    };
    let mut text = [0u8; 16384];
    let mut n = 0;
    let mut i = b + BEGIN.len();
    while i < e {
        let c = json_string[i];
        if c == b'\\' {
            i += 2; // an escape in the JSON string (\n, \r): layout only
            continue;
        }
        if !c.is_ascii_whitespace() {
            if n == text.len() {
                return false;
            }
            text[n] = c;
            n += 1;
        }
        i += 1;
    }
    let mut der = [0u8; 12288];
    match base64::engine::general_purpose::STANDARD.decode_slice(&text[..n], &mut der) {
        Ok(len) => {
            x509_parser::parse_x509_certificate(&der[..len]).is_ok_and(|(rest, _)| rest.is_empty())
        }
        Err(_) => false,
    }
}

/// The raw JSON text of the value at `path` in a JSON body (a string with its quotes).
pub fn find_value<'a>(body: &'a [u8], path: &[String]) -> Option<&'a [u8]> {
    let mut pos = skip_ws(body, 0);
    for key in path {
        if body.get(pos) != Some(&b'{') {
            return None;
        }
        pos = find_key(body, pos + 1, key.as_bytes())?;
    }
    let end = value_end(body, pos)?;
    (end > pos).then(|| &body[pos..end])
}

/// The string at `path` in a JSON body, as its raw bytes between the quotes (escapes are
/// left as they are: Vault's tokens and ids have none). Scans without building a tree:
/// each key is looked up, in order, inside the object that the previous key opened, at
/// that object's own level (keys of nested objects and text inside strings never match).
pub fn find_string<'a>(body: &'a [u8], path: &[String]) -> Option<&'a [u8]> {
    let mut pos = skip_ws(body, 0);
    for key in path {
        if body.get(pos) != Some(&b'{') {
            return None;
        }
        pos = find_key(body, pos + 1, key.as_bytes())?;
    }
    if body.get(pos) != Some(&b'"') {
        return None;
    }
    let end = string_end(body, pos + 1)?;
    Some(&body[pos + 1..end])
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Index of the closing quote of the string whose content starts at `i`.
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Index just after the value `v` starting at `i` (any JSON value).
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i + 1).map(|e| e + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => j = string_end(b, j + 1)?,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            Some(j)
        }
    }
}

/// In the object whose members start at `i`, the start of `key`'s value.
fn find_key(b: &[u8], mut i: usize, key: &[u8]) -> Option<usize> {
    loop {
        i = skip_ws(b, i);
        match *b.get(i)? {
            b'}' => return None,
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let end = string_end(b, i + 1)?;
        let name = &b[i + 1..end];
        i = skip_ws(b, end + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        if name == key {
            return Some(i);
        }
        i = value_end(b, i)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        p.split('.').map(String::from).collect()
    }

    const LOGIN: &[u8] = br#"{"request_id":"1","data":{"client_token":"decoy"},"note":"\"auth\": {\"client_token\": \"x\"}","auth":{"policies":["a","b"],"metadata":{"client_token":"nested"},"client_token":"hvs.REAL","accessor":"acc"}}"#;

    #[test]
    fn finds_the_value_at_its_path_only() {
        assert_eq!(
            find_string(LOGIN, &path("auth.client_token")),
            Some(&b"hvs.REAL"[..])
        );
        assert_eq!(
            find_string(LOGIN, &path("data.client_token")),
            Some(&b"decoy"[..])
        );
        assert_eq!(
            find_string(LOGIN, &path("auth.accessor")),
            Some(&b"acc"[..])
        );
        assert_eq!(
            find_string(LOGIN, &path("auth.metadata.client_token")),
            Some(&b"nested"[..])
        );
        assert_eq!(
            find_string(LOGIN, &path("auth.policies")),
            None,
            "not a string"
        );
        assert_eq!(find_string(LOGIN, &path("auth.missing")), None);
        assert_eq!(
            find_string(LOGIN, &path("client_token")),
            None,
            "not at the top"
        );
        for bad in [
            &b""[..],
            b"[]",
            b"{",
            br#"{"auth":{"client_token":"unterminated"#,
            b"null",
        ] {
            assert_eq!(find_string(bad, &path("auth.client_token")), None);
        }
        assert_eq!(
            find_string(b" { \"a\" : { \"b\" : \"v\" } } ", &path("a.b")),
            Some(&b"v"[..])
        );
    }

    #[test]
    fn expectations_judge_values_at_their_path() {
        assert_eq!(
            find_value(LOGIN, &path("auth.policies")),
            Some(&br#"["a","b"]"#[..])
        );
        let body = br#"{"data":{"valid":true,"plaintext":"aGk=","n":null}}"#;
        assert_eq!(Expect::equals("data.valid", "true").check(body), None);
        assert_eq!(
            Expect::equals("data.plaintext", "\"aGk=\"").check(body),
            None
        );
        assert_eq!(Expect::present("data.plaintext").check(body), None);
        let differs = Expect::equals("data.plaintext", "\"aGo=\"")
            .check(body)
            .unwrap();
        assert!(differs.contains("data.plaintext differs"), "{differs}");
        assert!(Expect::equals("data.valid", "false").check(body).is_some());
        let missing = Expect::present("data.n").check(body).unwrap();
        assert_eq!(missing, "response has no data.n");
        assert!(Expect::present("data.gone").check(body).is_some());
        assert!(Expect::present("data.valid").check(b"").is_some());
    }

    #[test]
    fn slots_keep_their_buffers() {
        let mut c = Captures::with_slots(2, 16);
        assert_eq!(c.get(0), None);
        c.set(0, b"hvs.ONE");
        assert_eq!(c.get(0), Some(&b"hvs.ONE"[..]));
        let cap = c.values[0].capacity();
        c.set(0, b"hvs.TWO");
        assert_eq!(c.values[0].capacity(), cap);
        c.clear_slot(0);
        assert_eq!(c.get(0), None);
        assert_eq!(c.values[0].capacity(), cap);
        c.set(0, b"hvs.TWO");
        c.set(9, b"nowhere");
        assert_eq!(c.get(9), None);
        c.clear();
        assert_eq!(c.get(0), None);
    }
}

#[cfg(test)]
mod certificate_tests {
    use super::*;

    #[test]
    fn a_pem_certificate_in_a_json_string_parses_and_a_damaged_one_does_not() {
        let cert = rcgen::generate_simple_self_signed(vec!["h.vblast.test".into()])
            .unwrap()
            .cert
            .pem();
        let json = serde_json::to_string(&cert).unwrap();
        assert!(json.contains("\\n"));
        assert!(pem_certificate_parses(json.as_bytes()));
        let body = format!(r#"{{"data":{{"certificate":{json}}}}}"#);
        assert_eq!(
            Expect::certificate("data.certificate").check(body.as_bytes()),
            None
        );
        let damaged = json.replacen("MII", "MIJ", 1);
        assert!(!pem_certificate_parses(damaged.as_bytes()));
        let cut = format!("{}\"", &json[..json.len() / 2]);
        assert!(!pem_certificate_parses(cut.as_bytes()));
        let csr =
            r#""-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----""#;
        assert!(!pem_certificate_parses(csr.as_bytes()));
        let body = r#"{"data":{"certificate":"not a certificate"}}"#;
        assert_eq!(
            Expect::certificate("data.certificate").check(body.as_bytes()),
            Some("response data.certificate is not a certificate that parses".into())
        );
    }
}
