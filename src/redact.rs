//! The one redaction policy: which keys and header names carry a secret, and how a JSON
//! value, a header list, a request body and a URL are shown without them. Results files,
//! scenario descriptions (`Scenario::redacted`) and messages all go through here, so one
//! list decides what is never printed or saved.
//!
//! A key is secret-bearing when, compared without case and with `-` taken as `_`, it is one
//! of `SECRET_KEYS` or ends with one of `SECRET_SUFFIXES` (`vault_token`, `db_password`);
//! counts and sizes such as `secrets` or `secret_size` stay. A header is secret-bearing when
//! its name is one of `SECRET_HEADERS` or a secret-bearing key. A URL's password (its
//! userinfo after the `:`, as in `postgres://user:PASS@host`) is replaced by `<redacted>`.

use std::borrow::Cow;

use serde_json::Value;

/// What a secret is replaced by where a value must stay (a URL's password).
pub const PLACEHOLDER: &str = "<redacted>";

/// Keys whose values are credentials, compared without case, `-` taken as `_`.
pub const SECRET_KEYS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passphrase",
    "secret_id",
    "private_key",
    "tls_certificate_key",
    "connection_url",
    "authorization",
    "proxy_authorization",
    "cookie",
    "set_cookie",
    "credentials",
];

/// Key endings that make a key a credential's (`vault_token`, `root_password`).
pub const SECRET_SUFFIXES: &[&str] = &[
    "_token",
    "_password",
    "_secret",
    "_secret_id",
    "_private_key",
    "_jwt",
];

/// Header names whose values are credentials (compared without case).
pub const SECRET_HEADERS: &[&str] = &[
    "x-vault-token",
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];

/// Whether an object key names a credential.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    SECRET_KEYS.contains(&k.as_str()) || SECRET_SUFFIXES.iter().any(|s| k.ends_with(s))
}

/// Whether a header (by name) carries a credential.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.trim();
    SECRET_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)) || is_secret_key(name)
}

/// Removes, recursively, every object key that names a credential, every header that
/// carries one from header lists (`[name, value]` pairs, or `{name, value}` objects), and
/// the password of every URL in a string value.
pub fn json(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !is_secret_key(k));
            for x in map.values_mut() {
                json(x);
            }
        }
        Value::Array(items) => {
            items.retain(|x| !is_secret_header_entry(x));
            for x in items.iter_mut() {
                json(x);
            }
        }
        Value::String(s) => {
            if let Cow::Owned(shown) = url(s) {
                *s = shown;
            }
        }
        _ => {}
    }
}

/// A `[name, value]` pair or a `{name, value}` object naming a secret-bearing header.
fn is_secret_header_entry(v: &Value) -> bool {
    let name = match v {
        Value::Array(pair) if pair.len() == 2 => pair[0].as_str(),
        Value::Object(o) if o.contains_key("value") => o.get("name").and_then(Value::as_str),
        _ => None,
    };
    name.is_some_and(is_secret_header)
}

/// A header list with the values of secret-bearing headers replaced by `<redacted>`.
pub fn headers(list: &mut [(String, String)]) {
    for (name, value) in list {
        if is_secret_header(name) {
            *value = PLACEHOLDER.into();
        }
    }
}

/// A request body as it may be shown: its size only (a body may hold anything, a
/// password included).
pub fn body(b: &str) -> String {
    format!("<{} bytes>", b.len())
}

/// `text` with the password of every URL in it (`scheme://user:PASS@host`) replaced by
/// `<redacted>`; borrowed when there is none.
pub fn url(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut rest = text;
    let mut done = 0;
    while let Some(at) = rest.find("://") {
        let start = at + 3;
        let authority_end = rest[start..]
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .map_or(rest.len(), |e| start + e);
        let authority = &rest[start..authority_end];
        if let Some(userinfo_end) = authority.rfind('@')
            && let Some(colon) = authority[..userinfo_end].find(':')
        {
            let base = text.len() - rest.len();
            out.push_str(&text[done..base + start + colon + 1]);
            out.push_str(PLACEHOLDER);
            done = base + start + userinfo_end;
        }
        rest = &rest[authority_end..];
    }
    if done == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[done..]);
    Cow::Owned(out)
}

/// `text` with each of the given secret values replaced by `<redacted>`: for a message
/// that quotes what a server or a file said, when the secrets are known.
pub fn values<'a>(text: &'a str, secrets: &[&str]) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(text);
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        if out.contains(s) {
            out = Cow::Owned(out.replace(s, PLACEHOLDER));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_and_headers_are_judged_by_one_list() {
        for k in [
            "token",
            "Client-Token",
            "vault_token",
            "password",
            "db_password",
            "secret_id",
            "PRIVATE-KEY",
            "connection_url",
            "passphrase",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in [
            "secrets",
            "secret_size",
            "username",
            "role_id",
            "client_key",
        ] {
            assert!(!is_secret_key(k), "{k}");
        }
        for h in [
            "X-Vault-Token",
            "authorization",
            "Cookie",
            " Proxy-Authorization",
        ] {
            assert!(is_secret_header(h), "{h}");
        }
        assert!(!is_secret_header("Accept"));
    }

    #[test]
    fn url_passwords_are_replaced_and_the_rest_kept() {
        assert_eq!(
            url("postgres://u:hunter2@db:5432/x"),
            "postgres://u:<redacted>@db:5432/x"
        );
        assert_eq!(
            url("at http://a:b@h/ and https://c:d@k?x"),
            "at http://a:<redacted>@h/ and https://c:<redacted>@k?x"
        );
        assert!(matches!(url("http://h:8200/v1"), Cow::Borrowed(_)));
        assert!(matches!(url("http://user@h/"), Cow::Borrowed(_)));
        assert_eq!(url("no url"), "no url");
    }

    #[test]
    fn json_loses_every_credential() {
        let mut v = json!({
            "address": "http://u:pw1@h:8200",
            "headers": [["X-Vault-Token", "hvs.D"], ["Accept", "a"]],
            "cfg": {"db_connection": {"password": "p", "username": "u", "connection_url": "x://u:p@h"}},
        });
        json(&mut v);
        assert_eq!(
            v,
            json!({
                "address": "http://u:<redacted>@h:8200",
                "headers": [["Accept", "a"]],
                "cfg": {"db_connection": {"username": "u"}},
            })
        );
        let mut h = vec![("Authorization".to_string(), "Bearer x".to_string())];
        headers(&mut h);
        assert_eq!(h[0].1, PLACEHOLDER);
        assert_eq!(body("{\"password\":\"x\"}"), "<16 bytes>");
        assert_eq!(values("a hvs.SECRET b", &["hvs.SECRET"]), "a <redacted> b");
    }
}
