//! What a saved scenario must not keep: keys that name a credential and headers that
//! carry one, removed before a scenario is written or shown.

use serde_json::Value;

/// Removes, recursively, every object key that names a credential (token, secret,
/// password, ...: compared without case, `-` taken as `_`), and from header lists
/// (`[name, value]` pairs, or `{name, value}` objects) every header that carries one
/// (X-Vault-Token, Authorization, Cookie, ...). Counts and sizes such as `secrets` or
/// `secret_size` stay. Free-form strings (a request body) are not looked into: a scenario
/// must keep credentials under keys, not inside text.
pub fn redact(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !sensitive_key(k));
            for x in map.values_mut() {
                redact(x);
            }
        }
        Value::Array(items) => {
            items.retain(|x| !sensitive_header(x));
            for x in items.iter_mut() {
                redact(x);
            }
        }
        _ => {}
    }
}

fn sensitive_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    const EXACT: &[&str] = &[
        "token",
        "secret",
        "password",
        "passphrase",
        "secret_id",
        "private_key",
        "authorization",
        "proxy_authorization",
        "cookie",
        "set_cookie",
        "credentials",
    ];
    const SUFFIX: &[&str] = &[
        "_token",
        "_password",
        "_secret",
        "_secret_id",
        "_private_key",
    ];
    EXACT.contains(&k.as_str()) || SUFFIX.iter().any(|s| k.ends_with(s))
}

/// A header given as `["Name", "value"]` or `{"name": "Name", "value": "..."}` whose name
/// is sensitive.
fn sensitive_header(v: &Value) -> bool {
    let name = match v {
        Value::Array(pair) if pair.len() == 2 => pair[0].as_str(),
        Value::Object(m) if m.contains_key("value") => m.get("name").and_then(Value::as_str),
        _ => None,
    };
    name.is_some_and(sensitive_key)
}
