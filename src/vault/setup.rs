//! Checks before a run (server reachable, unsealed, token valid) and the KV fixture:
//! a mount to read from, seeded with secrets, removed afterwards when we created it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::Client;

/// Most threads used to seed secrets.
const SEED_THREADS: u64 = 16;
/// How long a fresh mount may take to become usable.
const MOUNT_READY_WAIT: Duration = Duration::from_secs(10);

/// Checks that the server answers, is initialised and unsealed, and accepts the token.
pub fn preflight(client: &mut Client) -> Result<(), String> {
    let base = client.base();
    // sys/health only exists in the root namespace.
    let r = client.request_root("GET", "/v1/sys/health", None)?;
    match r.status {
        200 | 429 | 472 | 473 => {}
        503 => {
            return Err(format!(
                "Vault at {base} is sealed (sys/health answered 503)"
            ));
        }
        501 => {
            return Err(format!(
                "Vault at {base} is not initialised (sys/health answered 501)"
            ));
        }
        s => {
            return Err(format!(
                "unexpected answer from {base}/v1/sys/health: HTTP {s}: {}",
                r.error_text()
            ));
        }
    }
    let r = client.request("GET", "/v1/auth/token/lookup-self", None)?;
    match r.status {
        200..=299 => Ok(()),
        403 | 401 if !client.has_token() => Err(format!(
            "no token given and {base} requires one ({} {}): set VAULT_TOKEN or --token",
            r.status,
            r.error_text()
        )),
        403 | 401 => Err(format!(
            "the token was rejected by {base} ({} {}): check VAULT_TOKEN or --token",
            r.status,
            r.error_text()
        )),
        404 if client.namespace().is_some() => Err(format!(
            "token lookup in namespace '{}' at {base} failed (404 {}): check VAULT_NAMESPACE or --namespace",
            client.namespace().unwrap_or(""),
            r.error_text()
        )),
        s => Err(format!(
            "token lookup at {base} failed: HTTP {s}: {}",
            r.error_text()
        )),
    }
}

/// What KV fixture a run needs.
#[derive(Clone, Debug)]
pub struct KvPlan {
    /// Existing mount to use; None creates a fresh one.
    pub mount: Option<String>,
    /// KV engine version, 1 or 2.
    pub version: u8,
    pub secrets: u64,
    pub secret_size: usize,
    /// Write the secrets before the run.
    pub seed: bool,
}

/// The KV fixture in place.
#[derive(Clone, Debug)]
pub struct KvSetup {
    /// Mount path without slashes at either end.
    pub mount: String,
    pub version: u8,
    /// Whether we created the mount (and so must remove it).
    pub created: bool,
    pub secrets: u64,
}

/// Name of secret `index` out of `count`: "s" and the index zero-padded to the width of
/// `count - 1` (count 1000 gives "s000".."s999").
pub fn secret_name(index: u64, count: u64) -> String {
    let max = count.saturating_sub(1);
    let width = max.checked_ilog10().map_or(1, |d| d as usize + 1);
    format!("s{index:0width$}")
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const VALUE_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A secret value of exactly `size` printable ASCII bytes that need no JSON escaping,
/// different for each index.
pub fn secret_value(size: usize, index: u64) -> String {
    let mut state = index ^ 0x5EED_0F5E_C2E7;
    let mut out = Vec::with_capacity(size);
    while out.len() < size {
        let mut word = splitmix64(&mut state);
        for _ in 0..10 {
            if out.len() == size {
                break;
            }
            out.push(VALUE_ALPHABET[(word & 63) as usize]);
            word >>= 6;
        }
    }
    // Only alphabet bytes were pushed, all ASCII.
    String::from_utf8(out).unwrap_or_default()
}

/// "vblast-" and 8 random lowercase hex digits.
pub fn random_mount_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let local = 0u8;
    let mut state = nanos
        ^ (u64::from(std::process::id()) << 32)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0xA24B_AED4_963E_E407)
        ^ (&local as *const u8 as u64);
    format!("vblast-{:08x}", splitmix64(&mut state) as u32)
}

fn normalize_mount(m: &str) -> String {
    m.trim().trim_matches('/').to_string()
}

/// The sys/mounts entry for `mount` (keys are "name/"; newer servers also nest them under
/// "data").
fn find_mount<'a>(list: &'a Value, mount: &str) -> Option<&'a Value> {
    let key = format!("{mount}/");
    list.get("data")
        .and_then(|d| d.get(&key))
        .or_else(|| list.get(&key))
}

/// (type, kv version) from a mount entry; a kv mount without a version option is v1.
fn mount_kind(entry: &Value) -> (String, u8) {
    let kind = entry
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    let version = match entry.get("options").and_then(|o| o.get("version")) {
        Some(Value::String(s)) => s.trim().parse().unwrap_or(1),
        Some(Value::Number(n)) => n.as_u64().map_or(1, |v| v.min(255) as u8),
        _ => 1,
    };
    (kind, version)
}

/// Looks an existing mount up: via sys/mounts, or, when the token may not list mounts,
/// via sys/internal/ui/mounts/<mount> (open to any token that can use the mount).
fn describe_existing(client: &mut Client, mount: &str) -> Result<(String, u8), String> {
    let base = client.base();
    let place = match client.namespace() {
        Some(ns) => format!("{base} (namespace '{ns}')"),
        None => base.clone(),
    };
    let missing = || format!("mount '{mount}' does not exist on {place}");
    let r = client.request("GET", "/v1/sys/mounts", None)?;
    if r.status == 200 {
        let list = r
            .json()
            .ok_or_else(|| format!("{base}/v1/sys/mounts answered with something not JSON"))?;
        return find_mount(&list, mount).map(mount_kind).ok_or_else(missing);
    }
    if r.status != 403 {
        return Err(format!(
            "listing mounts on {base} failed: HTTP {}: {}",
            r.status,
            r.error_text()
        ));
    }
    let listing_error = r.error_text();
    let r = client.request("GET", &format!("/v1/sys/internal/ui/mounts/{mount}"), None)?;
    if r.status == 200 {
        let v = r.json().unwrap_or(Value::Null);
        let data = v.get("data").unwrap_or(&Value::Null);
        let path = data.get("path").and_then(Value::as_str).unwrap_or("");
        if normalize_mount(path) == mount {
            return Ok(mount_kind(data));
        }
        return Err(missing());
    }
    if r.status == 404 || r.status == 400 {
        return Err(missing());
    }
    Err(format!(
        "cannot check mount '{mount}' on {base}: the token may not list mounts ({listing_error})"
    ))
}

fn data_path(mount: &str, version: u8, name: &str) -> String {
    if version == 2 {
        format!("/v1/{mount}/data/{name}")
    } else {
        format!("/v1/{mount}/{name}")
    }
}

fn write_body(version: u8, value: &str) -> String {
    if version == 2 {
        format!("{{\"data\":{{\"value\":\"{value}\"}}}}")
    } else {
        format!("{{\"value\":\"{value}\"}}")
    }
}

/// Polls a read until the fresh mount answers like a working KV engine: 200, or 404 with
/// no error message (a secret that simply does not exist yet).
fn wait_until_usable(client: &mut Client, setup: &KvSetup) -> Result<(), String> {
    let base = client.base();
    let path = data_path(&setup.mount, setup.version, &secret_name(0, 1));
    let start = Instant::now();
    loop {
        let r = client.request("GET", &path, None)?;
        let ready = match r.status {
            200 => true,
            404 => r
                .json()
                .and_then(|v| v.get("errors").and_then(Value::as_array).map(Vec::is_empty))
                .unwrap_or(true),
            _ => false,
        };
        if ready {
            return Ok(());
        }
        if start.elapsed() >= MOUNT_READY_WAIT {
            return Err(format!(
                "new mount '{}' on {base} did not become usable within {}s: HTTP {}: {}",
                setup.mount,
                MOUNT_READY_WAIT.as_secs(),
                r.status,
                r.error_text()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes secrets `0..setup.secrets` with up to 16 threads, each on its own connection.
fn seed(
    make_client: &(dyn Fn() -> Client + Sync),
    setup: &KvSetup,
    size: usize,
) -> Result<(), String> {
    let count = setup.secrets;
    if count == 0 {
        return Ok(());
    }
    let threads = count.min(SEED_THREADS);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (failed, first_error) = (&failed, &first_error);
            let start = count * t / threads;
            let end = count * (t + 1) / threads;
            scope.spawn(move || {
                let mut client = make_client();
                let base = client.base();
                for i in start..end {
                    if failed.load(Ordering::Relaxed) {
                        return;
                    }
                    let name = secret_name(i, count);
                    let body = write_body(setup.version, &secret_value(size, i));
                    let path = data_path(&setup.mount, setup.version, &name);
                    let err = match client.request("POST", &path, Some(body.as_bytes())) {
                        Ok(r) if (200..300).contains(&r.status) => continue,
                        Ok(r) => format!(
                            "writing secret '{}/{name}' to {base} failed: HTTP {}: {}",
                            setup.mount,
                            r.status,
                            r.error_text()
                        ),
                        Err(e) => format!("writing secret '{}/{name}' failed: {e}", setup.mount),
                    };
                    failed.store(true, Ordering::Relaxed);
                    if let Ok(mut slot) = first_error.lock()
                        && slot.is_none()
                    {
                        *slot = Some(err);
                    }
                    return;
                }
            });
        }
    });
    match first_error.into_inner() {
        Ok(None) => Ok(()),
        Ok(Some(e)) => Err(e),
        Err(_) => Err("seeding secrets failed: a seeding thread panicked".to_string()),
    }
}

/// Sets up the KV fixture: checks the given mount (or creates a fresh one and waits until it
/// works), then seeds the secrets if asked. A mount created here is removed again when a
/// later step fails.
pub fn prepare_kv(
    make_client: &(dyn Fn() -> Client + Sync),
    plan: &KvPlan,
) -> Result<KvSetup, String> {
    if plan.version != 1 && plan.version != 2 {
        return Err(format!(
            "kv version {} is not supported (use 1 or 2)",
            plan.version
        ));
    }
    let mut client = make_client();
    let base = client.base();
    let setup = match &plan.mount {
        Some(m) => {
            let mount = normalize_mount(m);
            if mount.is_empty() {
                return Err("the mount name is empty".to_string());
            }
            let (kind, version) = describe_existing(&mut client, &mount)?;
            if kind != "kv" && kind != "generic" {
                return Err(format!(
                    "mount '{mount}' on {base} is a '{kind}' secrets engine, not kv"
                ));
            }
            let version = if kind == "generic" { 1 } else { version };
            if version != plan.version {
                return Err(format!(
                    "mount '{mount}' on {base} is kv version {version}, but kv version {} was asked for: pass --kv-version {version}",
                    plan.version
                ));
            }
            KvSetup {
                mount,
                version,
                created: false,
                secrets: plan.secrets,
            }
        }
        None => {
            let mount = random_mount_name();
            let body = format!(
                "{{\"type\":\"kv\",\"description\":\"vblast load test (temporary)\",\"options\":{{\"version\":\"{}\"}}}}",
                plan.version
            );
            let r = client.request(
                "POST",
                &format!("/v1/sys/mounts/{mount}"),
                Some(body.as_bytes()),
            )?;
            if !(200..300).contains(&r.status) {
                return Err(format!(
                    "cannot create kv mount '{mount}' on {base}: HTTP {}: {}",
                    r.status,
                    r.error_text()
                ));
            }
            KvSetup {
                mount,
                version: plan.version,
                created: true,
                secrets: plan.secrets,
            }
        }
    };
    let result = if setup.created {
        wait_until_usable(&mut client, &setup)
    } else {
        Ok(())
    }
    .and_then(|()| {
        if plan.seed {
            seed(make_client, &setup, plan.secret_size)
        } else {
            Ok(())
        }
    });
    match result {
        Ok(()) => Ok(setup),
        Err(e) if setup.created => match cleanup_kv(&mut client, &setup) {
            Ok(()) => Err(e),
            Err(c) => Err(format!("{e} (and removing the mount again failed: {c})")),
        },
        Err(e) => Err(e),
    }
}

/// Removes the mount when we created it.
pub fn cleanup_kv(client: &mut Client, setup: &KvSetup) -> Result<(), String> {
    if !setup.created {
        return Ok(());
    }
    let r = client
        .request("DELETE", &format!("/v1/sys/mounts/{}", setup.mount), None)
        .map_err(|e| format!("cannot remove mount '{}': {e}", setup.mount))?;
    if (200..300).contains(&r.status) {
        Ok(())
    } else {
        Err(format!(
            "cannot remove mount '{}' from {}: HTTP {}: {}",
            setup.mount,
            client.base(),
            r.status,
            r.error_text()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn secret_names_are_padded_to_the_largest_index() {
        assert_eq!(secret_name(0, 1000), "s000");
        assert_eq!(secret_name(999, 1000), "s999");
        assert_eq!(secret_name(7, 1001), "s0007");
        assert_eq!(secret_name(0, 1), "s0");
        assert_eq!(secret_name(0, 0), "s0");
        assert_eq!(secret_name(9, 10), "s9");
        assert_eq!(secret_name(10, 11), "s10");
        assert_eq!(secret_name(5, 11), "s05");
        assert_eq!(secret_name(u64::MAX - 1, u64::MAX).len(), 21);
    }

    #[test]
    fn secret_values_have_the_exact_size_and_need_no_escaping() {
        for size in [0, 1, 9, 10, 11, 64, 1000, 4097] {
            for index in [0, 1, 2, 999, u64::MAX] {
                let v = secret_value(size, index);
                assert_eq!(v.len(), size);
                assert!(
                    v.bytes()
                        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
                );
                let json = format!("\"{v}\"");
                assert_eq!(serde_json::from_str::<String>(&json).unwrap(), v);
            }
        }
        let distinct: HashSet<String> = (0..1000).map(|i| secret_value(16, i)).collect();
        assert_eq!(distinct.len(), 1000);
        assert_eq!(secret_value(32, 5), secret_value(32, 5));
    }

    #[test]
    fn mount_names_look_right_and_differ() {
        let names: HashSet<String> = (0..100).map(|_| random_mount_name()).collect();
        assert_eq!(names.len(), 100);
        for n in names {
            assert_eq!(n.len(), 15);
            let hex = n.strip_prefix("vblast-").unwrap();
            assert!(
                hex.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            );
        }
    }

    #[test]
    fn mount_listing_layouts() {
        let flat: Value = serde_json::from_str(
            r#"{"secret/":{"type":"kv","options":{"version":"2"}},"old/":{"type":"kv","options":null},
                "gen/":{"type":"generic"},"request_id":"x"}"#,
        )
        .unwrap();
        assert_eq!(
            find_mount(&flat, "secret").map(mount_kind),
            Some(("kv".into(), 2))
        );
        assert_eq!(
            find_mount(&flat, "old").map(mount_kind),
            Some(("kv".into(), 1))
        );
        assert_eq!(
            find_mount(&flat, "gen").map(mount_kind),
            Some(("generic".into(), 1))
        );
        assert!(find_mount(&flat, "nope").is_none());
        let nested: Value =
            serde_json::from_str(r#"{"data":{"a/b/":{"type":"kv","options":{"version":"1"}}}}"#)
                .unwrap();
        assert_eq!(
            find_mount(&nested, "a/b").map(mount_kind),
            Some(("kv".into(), 1))
        );
        assert_eq!(normalize_mount(" /secret/ "), "secret");
    }

    #[test]
    fn write_bodies_are_valid_json() {
        let v: Value = serde_json::from_str(&write_body(2, &secret_value(20, 3))).unwrap();
        assert_eq!(v["data"]["value"].as_str().unwrap().len(), 20);
        let v: Value = serde_json::from_str(&write_body(1, &secret_value(20, 3))).unwrap();
        assert_eq!(v["value"].as_str().unwrap().len(), 20);
        assert_eq!(data_path("kv", 2, "s1"), "/v1/kv/data/s1");
        assert_eq!(data_path("kv", 1, "s1"), "/v1/kv/s1");
    }
}
