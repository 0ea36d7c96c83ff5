//! Fixtures shared by the shards of one run, set up once and removed once. By default
//! shard 0 of a sharded run does both (`src/session/fixtures/rendezvous.rs`: it sets the fixture
//! up, runs its own share, waits for the other shards to end, then removes it); with
//! `--external-setup` on every shard, `vblast setup --run-id ID` creates it before the
//! shards and `vblast cleanup --run-id ID` removes it after them.
//!
//! No file and no message carries anything secret between the steps: the names of what
//! setup creates (the mount `vblast-xxxxxxxx`, the auth path `vblast-approle-xxxxxxxx`) are
//! derived from the run id (SHA-256 of the run id, the name's prefix and its occurrence), so
//! every shard and the cleanup step compute them from the flags they are given. Credentials
//! are never shared: each shard makes its own (an AppRole secret_id; for jwt-login a key
//! pair in memory and an auth path of its own trusting it) at its start and removes it at
//! its end; the tokens its logins make go with the auth path at cleanup.
//! A shard waits (bounded, `JOIN_WAIT`) for the fixture to be readable before its run, so a
//! Kubernetes setup Job may still be running when the shards' pods start.
//!
//! The supported operations are the KV family on a mount of vblast's own (kv-read,
//! kv-write, kv-list, kv-delete), approle-login, the transit family, pki-issue,
//! pki-sign, ssh-sign, the totp family, db-creds, userpass-login, cert-login, jwt-login,
//! login-read and the token family (each family's Join and Remove live in its file under
//! src/vault/ops/); others are refused with one message.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::signals::Stop;

/// What this process does with the shared fixtures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Not shared: this run creates its own fixture and removes it (the default).
    Own,
    /// `vblast setup`: create the shared fixture and keep it.
    Create,
    /// A shard: use the fixture shard 0 (or `vblast setup`) made; only per-shard
    /// credentials are its own.
    Join,
    /// `vblast cleanup`: remove the shared fixture.
    Remove,
}

/// How long a shard waits for shard 0 (or `vblast setup`) to have made the fixture.
pub const JOIN_WAIT: Duration = Duration::from_secs(120);

struct Shared {
    mode: Mode,
    run_id: String,
    /// Names derived so far, per prefix (two fixtures with one prefix get different names).
    seen: HashMap<String, u32>,
}

static SHARED: Mutex<Option<Shared>> = Mutex::new(None);

/// Enters a shared mode for this process (before the session is opened).
pub fn enter(mode: Mode, run_id: &str) {
    if let Ok(mut s) = SHARED.lock() {
        *s = Some(Shared {
            mode,
            run_id: run_id.to_string(),
            seen: HashMap::new(),
        });
    }
}

/// The mode of this process.
pub fn mode() -> Mode {
    SHARED
        .lock()
        .ok()
        .and_then(|s| s.as_ref().map(|s| s.mode))
        .unwrap_or(Mode::Own)
}

/// In a shared mode, the name of the next fixture with `prefix`: the prefix and 8 hex
/// digits of SHA-256 over the run id, the prefix and how many such names came before.
pub fn derived_name(prefix: &str) -> Option<String> {
    // Only fixture names; salts and passwords stay random.
    if !prefix.starts_with("vblast-") {
        return None;
    }
    let mut guard = SHARED.lock().ok()?;
    let s = guard.as_mut()?;
    let n = s.seen.entry(prefix.to_string()).or_insert(0);
    let name = name_of(&s.run_id, prefix, *n);
    *n += 1;
    Some(name)
}

/// The `n`th fixture name with `prefix` of run `run_id` (what `derived_name` gives).
pub fn name_of(run_id: &str, prefix: &str, n: u32) -> String {
    let text = format!("vblast-fixture\n{run_id}\n{prefix}\n{n}");
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let hex: String = digest.as_ref()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{prefix}{hex}")
}

/// Waits until `ready` says the fixture is there (Ok(true)), bounded by `JOIN_WAIT` and
/// a signal; `what` names it in the message.
pub fn wait_for(
    what: &str,
    stop: &Stop,
    mut ready: impl FnMut() -> Result<bool, String>,
) -> Result<(), Error> {
    let deadline = Instant::now() + JOIN_WAIT;
    loop {
        if ready().map_err(Error::setup)? {
            return Ok(());
        }
        if let Some(s) = stop.signal() {
            return Err(Error::Stopped(s));
        }
        if Instant::now() > deadline {
            return Err(Error::setup(format!(
                "{what} is not there after {} s: it comes from shard 0 (or, with --external-setup, from `vblast setup`) given this run's --run-id and the same operation flags; {}",
                JOIN_WAIT.as_secs(),
                if external_setup() {
                    "this shard has --external-setup: run `vblast setup` first, or start every shard without --external-setup (then shard 0 sets the fixture up)"
                } else {
                    "check that every shard has the same operation flags"
                }
            )));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The operation names of a `--op` (or `--scenario`) text.
pub fn op_names(op: &str) -> impl Iterator<Item = &str> {
    crate::config::mix::names(op)
}

/// Refuses operations whose fixture cannot be shared, naming the first.
pub fn check_ops(op: &str, context: &str) -> Result<(), String> {
    use crate::vault::ops::{Fixture, fixture_of};
    if let Some(name) =
        op_names(op).find(|n| !matches!(fixture_of(n), Some(Fixture::Shared | Fixture::None)))
    {
        return Err(format!(
            "{context} with {name}: its fixture cannot be shared by shards (shared: {}); set the data up once and run the shards with --no-setup (and --mount), or use URL mode",
            crate::vault::ops::shared_names().join(", ")
        ));
    }
    Ok(())
}

/// Marks this process as joining a fixture `vblast setup` made (`--external-setup`), for
/// the messages of a wait that times out.
pub fn set_external_setup(on: bool) {
    EXTERNAL.store(on, std::sync::atomic::Ordering::Relaxed);
}

fn external_setup() -> bool {
    EXTERNAL.load(std::sync::atomic::Ordering::Relaxed)
}

static EXTERNAL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_run_id_and_differ_per_fixture() {
        enter(Mode::Join, "run-a");
        let a1 = derived_name("vblast-").unwrap();
        let a2 = derived_name("vblast-").unwrap();
        let p = derived_name("vblast-approle-").unwrap();
        enter(Mode::Remove, "run-a");
        assert_eq!(derived_name("vblast-").unwrap(), a1);
        assert_eq!(derived_name("vblast-").unwrap(), a2);
        assert_eq!(derived_name("vblast-approle-").unwrap(), p);
        enter(Mode::Create, "run-b");
        assert_ne!(derived_name("vblast-").unwrap(), a1);
        assert_ne!(a1, a2);
        assert!(
            a1.starts_with("vblast-") && a1.len() == "vblast-".len() + 8,
            "{a1}"
        );
        assert!(p.starts_with("vblast-approle-"), "{p}");
        *SHARED.lock().unwrap() = None;
        assert_eq!(mode(), Mode::Own);
        assert!(derived_name("vblast-").is_none());
    }

    #[test]
    fn only_shareable_fixtures_are_accepted() {
        assert!(check_ops("kv-read:80,kv-write:20", "x").is_ok());
        assert!(check_ops("approle-login,sys-health", "x").is_ok());
        assert!(check_ops("jwt-login", "x").is_ok());
        assert!(check_ops("login-read", "x").is_ok());
        let e = check_ops("kv-read,cubbyhole-read", "--shard 1/2").unwrap_err();
        assert!(
            e.contains("cubbyhole-read") && e.contains("--shard 1/2"),
            "{e}"
        );
    }
}
