//! Fixtures shared by the shards of one run, set up once and removed once: `vblast setup
//! --run-id ID` creates them, every shard (`--shard I/N --run-id ID`) uses them, and
//! `vblast cleanup --run-id ID` removes them.
//!
//! No file and no message carries anything secret between the steps: the names of what
//! setup creates (the mount `vblast-xxxxxxxx`, the auth path `vblast-approle-xxxxxxxx`) are
//! derived from the run id (SHA-256 of the run id, the name's prefix and its occurrence), so
//! every shard and the cleanup step compute them from the flags they are given. Credentials
//! are never shared: each shard makes its own (an AppRole secret_id) at its start and
//! destroys it at its end; the tokens its logins make go with the auth path at cleanup.
//! A shard waits (bounded, `JOIN_WAIT`) for the fixture to be readable before its run, so a
//! Kubernetes setup Job may still be running when the shards' pods start.
//!
//! The supported operations are the KV family on a mount of vblast's own (kv-read,
//! kv-write, kv-list, kv-delete), approle-login, the transit family, pki-issue,
//! pki-sign, ssh-sign, the totp family, db-creds, userpass-login, cert-login and the
//! token family (each family's Join and Remove live in its file under src/vault/ops/);
//! others are refused with one message.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::cli::RunArgs;
use crate::error::{Ending, Error};
use crate::scenario::Workload;
use crate::session::Session;
use crate::signals::Stop;

/// What this process does with the shared fixtures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Not shared: this run creates its own fixture and removes it (the default).
    Own,
    /// `vblast setup`: create the shared fixture and keep it.
    Create,
    /// A shard: use the fixture `vblast setup` made; only per-shard credentials are its own.
    Join,
    /// `vblast cleanup`: remove the shared fixture.
    Remove,
}

/// Operations whose fixture can be shared by the shards of a run.
pub const SHARED_OPS: &[&str] = &[
    "kv-read",
    "kv-write",
    "kv-list",
    "kv-delete",
    "approle-login",
    "transit-encrypt",
    "transit-decrypt",
    "transit-sign",
    "transit-verify",
    "transit-hmac",
    "pki-issue",
    "pki-sign",
    "ssh-sign",
    "totp-generate",
    "totp-read",
    "totp-create",
    "db-creds",
    "userpass-login",
    "cert-login",
    "token-create",
    "token-lookup",
    "token-renew",
    "token-revoke",
];

/// How long a shard waits for `vblast setup` to have made the fixture.
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
    let text = format!("vblast-fixture\n{}\n{prefix}\n{n}", s.run_id);
    *n += 1;
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let hex: String = digest.as_ref()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(format!("{prefix}{hex}"))
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
        if ready().map_err(Error::Setup)? {
            return Ok(());
        }
        if let Some(s) = stop.signal() {
            return Err(Error::Stopped(s));
        }
        if Instant::now() > deadline {
            return Err(Error::Setup(format!(
                "{what} is not there after {} s: run `vblast setup` with this run's --run-id and operation flags first",
                JOIN_WAIT.as_secs()
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
    if let Some(name) =
        op_names(op).find(|n| !SHARED_OPS.contains(n) && !crate::shard::NO_FIXTURE_OPS.contains(n))
    {
        return Err(format!(
            "{context} with {name}: its fixture cannot be shared by shards (shared: {}); set the data up once and run the shards with --no-setup (and --mount), or use URL mode",
            SHARED_OPS.join(", ")
        ));
    }
    Ok(())
}

/// A shard of a Vault-mode run that sets nothing up itself joins the shared fixture.
pub fn join_if_sharded(args: &RunArgs) {
    let sharded = args.shard.shard.is_some_and(|s| !s.is_whole());
    let op = args.op.as_deref().or(args.scenario.as_deref());
    if let (true, Some(op), false, Some(id)) = (sharded, op, args.no_setup, &args.shard.run_id)
        && op_names(op).any(|n| !crate::shard::NO_FIXTURE_OPS.contains(&n))
    {
        enter(Mode::Join, id);
    }
}

/// `vblast setup` (`remove` false) and `vblast cleanup` (`remove` true).
pub fn command(args: &RunArgs, stop: &Stop, remove: bool) -> Ending {
    let name = if remove { "cleanup" } else { "setup" };
    let Some(run_id) = args.shard.run_id.clone() else {
        return Ending::Failed(Error::Input(format!(
            "vblast {name} needs --run-id (the one the shards are given)"
        )));
    };
    let Some(op) = args.op.as_deref() else {
        return Ending::Failed(Error::Input(format!(
            "vblast {name} needs --op (the operations and flags the shards run)"
        )));
    };
    if args.no_setup || args.url.is_some() || args.shard.shard.is_some() {
        return Ending::Failed(Error::Input(format!(
            "vblast {name} takes the run's Vault flags without --no-setup, --shard or a URL"
        )));
    }
    if let Err(e) = check_ops(op, &format!("vblast {name}")).and_then(|_| args.validate()) {
        return Ending::Failed(Error::Input(e));
    }
    let mut scenario = match args.scenario() {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    if !matches!(scenario.workload, Workload::Vault(_)) {
        return Ending::Failed(Error::Input(format!("vblast {name} needs --op")));
    }
    enter(if remove { Mode::Remove } else { Mode::Create }, &run_id);
    // Setup keeps what it made (the shards use it); cleanup removes it on close.
    scenario.keep = !remove;
    let mut session = match Session::open(&scenario, stop) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    let what: Vec<String> = session.created().into_iter().map(|c| c.what).collect();
    match session.close() {
        Ok(()) if remove => {
            for w in &what {
                eprintln!("vblast: removed {w}");
            }
            Ending::Ok
        }
        Ok(()) => Ending::Ok,
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
        let e = check_ops("kv-read,jwt-login", "--shard 1/2").unwrap_err();
        assert!(e.contains("jwt-login") && e.contains("--shard 1/2"), "{e}");
    }
}
