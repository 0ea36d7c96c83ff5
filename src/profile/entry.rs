//! One line of a file audit log, as the profile reads it: its `time` and `type`, the
//! request's id, operation, path, mount and namespace, the caller's HMAC'd accessor, and of
//! a response its error and the accessor of a token it made (a login). Fields are borrowed
//! from the line (copied only when the JSON escapes them); everything else is skipped.
//! HMAC'd values are read only to be hashed (`distinct::hash_of`), never kept as text.

use std::borrow::Cow;

use serde::Deserialize;

#[derive(Deserialize, Debug, Default)]
pub struct AuditLine<'a> {
    #[serde(borrow, default)]
    pub time: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub request: Option<AuditRequest<'a>>,
    #[serde(borrow, default)]
    pub response: Option<AuditResponse<'a>>,
    #[serde(borrow, default)]
    pub error: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Debug, Default)]
pub struct AuditRequest<'a> {
    #[serde(borrow, default)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub operation: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub path: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub mount_point: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub mount_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub client_token_accessor: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub namespace: Option<AuditNamespace<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub struct AuditNamespace<'a> {
    #[serde(borrow, default)]
    pub path: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Debug, Default)]
pub struct AuditResponse<'a> {
    #[serde(borrow, default)]
    pub auth: Option<AuditAuth<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub struct AuditAuth<'a> {
    #[serde(borrow, default)]
    pub accessor: Option<Cow<'a, str>>,
}

/// One line read: through the scanner (`scan`) when it recognises the line, else through
/// serde_json (whose error the profile reports).
pub fn read_line(text: &[u8]) -> Result<AuditLine<'_>, serde_json::Error> {
    match super::scan::audit_line(text) {
        Some(line) => Ok(line),
        None => serde_json::from_slice(text),
    }
}

/// Which side of a request a line records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Request,
    Response,
}

impl AuditLine<'_> {
    pub fn side(&self) -> Option<Side> {
        match self.kind.as_deref() {
            Some("request") => Some(Side::Request),
            Some("response") => Some(Side::Response),
            _ => None,
        }
    }
}

/// Nanoseconds since the Unix epoch of an RFC 3339 time as Vault writes it
/// (`2026-12-05T08:33:24.125727293Z`); other offsets and forms through humantime.
pub fn parse_time(text: &str) -> Option<i64> {
    fast_time(text.as_bytes()).or_else(|| {
        let t = humantime::parse_rfc3339_weak(text.trim_end_matches('Z')).ok()?;
        let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
        i64::try_from(d.as_nanos()).ok()
    })
}

fn digits(b: &[u8]) -> Option<i64> {
    let mut v = 0i64;
    for c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(c - b'0');
    }
    Some(v)
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` only.
fn fast_time(b: &[u8]) -> Option<i64> {
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    if b[16] != b':' || *b.last()? != b'Z' {
        return None;
    }
    let (y, mo, d) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (h, mi, s) = (
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let frac = &b[19..b.len() - 1];
    let nanos = match frac {
        [] => 0,
        [b'.', rest @ ..] if !rest.is_empty() && rest.len() <= 9 => {
            digits(rest)? * 10i64.pow(9 - rest.len() as u32)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi) * 60 * 1_000_000_000 + s * 1_000_000_000 + nanos)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// An instant (nanoseconds since the epoch) as RFC 3339, to the millisecond.
pub fn format_time(ns: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns.max(0) as u64);
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vault_times_parse_to_the_nanosecond() {
        let slow = |t: &str| {
            let t = humantime::parse_rfc3339(t).unwrap();
            t.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64
        };
        for t in [
            "2026-12-05T08:33:24.125727293Z",
            "2024-02-29T23:59:59Z",
            "1999-12-31T00:00:00.5Z",
            "2026-01-01T00:00:00.000001Z",
        ] {
            assert_eq!(parse_time(t), Some(slow(t)), "{t}");
        }
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(
            format_time(parse_time("2026-12-05T08:33:24.125727293Z").unwrap()),
            "2026-12-05T08:33:24.125Z"
        );
    }

    #[test]
    fn an_audit_line_is_read_without_its_hmac_fields() {
        let line = r#"{"time":"2026-12-05T08:33:27.3Z","type":"response","auth":{"client_token":"hmac-sha256:aa"},"request":{"id":"e9","operation":"update","mount_point":"auth/a/","mount_type":"approle","client_token_accessor":"hmac-sha256:ff","namespace":{"id":"root"},"path":"auth/a/login","data":{"role_id":"hmac-sha256:17"}},"response":{"auth":{"accessor":"hmac-sha256:1c","token_ttl":120}}}"#;
        let l: AuditLine = serde_json::from_str(line).unwrap();
        assert_eq!(l.side(), Some(Side::Response));
        let r = l.request.as_ref().unwrap();
        assert_eq!(r.path.as_deref(), Some("auth/a/login"));
        assert_eq!(r.namespace.as_ref().unwrap().path, None);
        assert_eq!(
            l.response.unwrap().auth.unwrap().accessor.as_deref(),
            Some("hmac-sha256:1c")
        );
    }
}
