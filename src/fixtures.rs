//! Fixtures shared by the shards of one run, set up once and removed once. By default
//! shard 0 of a sharded run does both (`src/fixtures/rendezvous.rs`: it sets the fixture
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

pub mod rendezvous;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::cli::RunArgs;
use crate::error::{Ending, Error};
use crate::scenario::{Scenario, Workload};
use crate::session::Session;
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
fn op_names(op: &str) -> impl Iterator<Item = &str> {
    op.split(',')
        .map(|x| x.split(':').next().unwrap_or("").trim())
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

/// The run id under which a shard of a Vault-mode run shares a fixture: a sharded run
/// (N > 1) of an operation that makes one, without --no-setup, given `--run-id`.
pub fn shared_run_id(args: &RunArgs) -> Option<&str> {
    let sharded = args.shard.shard.is_some_and(|s| !s.is_whole());
    let op = args.op.as_deref().or(args.scenario.as_deref())?;
    if !sharded || args.no_setup || args.url.is_some() {
        return None;
    }
    let id = args.shard.run_id.as_deref()?;
    op_names(op)
        .any(|n| crate::vault::ops::fixture_of(n) != Some(crate::vault::ops::Fixture::None))
        .then_some(id)
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

/// Opens and closes one session of the shared fixture in `mode` (Create keeps what it
/// made, Remove removes it) and returns what the session held, for messages.
pub fn shared_session(
    scenario: &Scenario,
    stop: &Stop,
    mode: Mode,
    run_id: &str,
) -> Result<Vec<String>, Error> {
    enter(mode, run_id);
    let mut scenario = scenario.clone();
    // A setup failing half-way removes what it made; cleanup removes the fixture on close.
    scenario.keep = false;
    let mut session = Session::open(&scenario, stop)?;
    // A complete setup keeps the fixture (the shards use it).
    session.set_keep(mode == Mode::Create);
    let what: Vec<String> = session.created().into_iter().map(|c| c.what).collect();
    session.close()?;
    Ok(what)
}

/// `vblast setup` (`remove` false) and `vblast cleanup` (`remove` true).
pub fn command(args: &RunArgs, stop: &Stop, remove: bool) -> Ending {
    let name = if remove { "cleanup" } else { "setup" };
    let Some(run_id) = args.shard.run_id.clone() else {
        return Ending::Failed(Error::input(format!(
            "vblast {name} needs --run-id (the one the shards are given)"
        )));
    };
    let Some(op) = args.op.as_deref() else {
        return Ending::Failed(Error::input(format!(
            "vblast {name} needs --op (the operations and flags the shards run)"
        )));
    };
    if args.no_setup || args.url.is_some() || args.shard.shard.is_some() {
        return Ending::Failed(Error::input(format!(
            "vblast {name} takes the run's Vault flags without --no-setup, --shard or a URL"
        )));
    }
    if let Err(e) = check_ops(op, &format!("vblast {name}")).and_then(|_| args.validate()) {
        return Ending::Failed(Error::input(e));
    }
    let scenario = match args.scenario() {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    if !matches!(scenario.workload, Workload::Vault(_)) {
        return Ending::Failed(Error::input(format!("vblast {name} needs --op")));
    }
    let mode = if remove { Mode::Remove } else { Mode::Create };
    match shared_session(&scenario, stop, mode, &run_id) {
        Ok(what) if remove => {
            for w in &what {
                eprintln!("vblast: removed {w}");
            }
            // What a shard 0 that was killed left of the shards' rendezvous.
            match rendezvous::remove_leftover(&scenario, &run_id) {
                Ok(Some(m)) => {
                    eprintln!("vblast: removed {m}");
                    Ending::Ok
                }
                Ok(None) => Ending::Ok,
                Err(e) => Ending::Failed(e),
            }
        }
        Ok(_) => Ending::Ok,
        Err(e) => Ending::Failed(e),
    }
}

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
