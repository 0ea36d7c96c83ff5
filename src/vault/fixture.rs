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
//! Every run has a run id (`--run-id`, or one the session draws) and its fixtures' names
//! follow it in every mode: `Naming`, built once by the session from the scenario's
//! `FixturePlan` and handed to every operation's setup in its `SetupCtx`, draws them and
//! tells the session (`Naming::with_recorder`) each name as it is drawn, for the state file
//! `vblast cleanup` reads. There is no process-wide state.
//!
//! The supported operations are the KV family on a mount of vblast's own (kv-read,
//! kv-write, kv-list, kv-delete), approle-login, the transit family, pki-issue,
//! pki-sign, ssh-sign, the totp family, db-creds, userpass-login, cert-login, jwt-login,
//! login-read and the token family (each family's Join and Remove live in its file under
//! src/vault/ops/); others are refused with one message.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::config::fixtures::FixturePlan;
pub use crate::config::fixtures::Mode;
use crate::error::{Cause, Error};
use crate::signals::Stop;

/// How long a shard waits for shard 0 (or `vblast setup`) to have made the fixture.
pub const JOIN_WAIT: Duration = Duration::from_secs(120);

/// Told each thing a session makes as it is named: the run id, what was added (for the
/// line on stderr: "fixture vblast-…", "token accessor …"), and everything so far.
pub type Recorder = Box<dyn Fn(&str, &str, &Made) + Send + Sync>;

/// What a session made, as its state file names it for `vblast cleanup`: fixture names;
/// name prefixes, every object named with one being the run's (an identity run's numbered
/// auth paths, policies, entities and groups); the accessors of the tokens it made (a
/// token-create run's parent token, revoked by accessor with its children). An accessor
/// cannot authenticate: like a name it is no secret (the token itself is never saved).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Made {
    pub names: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<SecretsUnder>,
}

/// Secrets a run writes under a fresh prefix of a kv mount it did not make (`--mount`, the
/// cubbyhole): `count` secrets named as the kv family names them, at most.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SecretsUnder {
    pub mount: String,
    /// "vblast-xxxxxxxx/".
    pub prefix: String,
    pub version: u8,
    pub count: u64,
}

impl Made {
    /// Whether it names nothing.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
            && self.prefixes.is_empty()
            && self.tokens.is_empty()
            && self.secrets.is_empty()
    }

    /// How many things it names.
    pub fn len(&self) -> usize {
        self.names.len() + self.prefixes.len() + self.tokens.len() + self.secrets.len()
    }
}

/// The names of one session's fixtures: its run id, its mode, and what it drew so far.
pub struct Naming {
    run_id: String,
    mode: Mode,
    external: bool,
    /// How long a cleanup may wait for the server (`--cleanup-timeout`).
    cleanup_timeout: Duration,
    drawn: Mutex<Drawn>,
    recorder: Option<Recorder>,
}

/// The names drawn so far, and which operation of the session drew them.
#[derive(Default)]
struct Drawn {
    /// Names derived so far, per prefix (two fixtures with one prefix get different names).
    seen: HashMap<String, u32>,
    /// (operation's index, name) of every fixture name drawn, but by a shard (Join).
    names: Vec<(usize, String)>,
    /// (operation's index, prefix) of every name prefix claimed (`Naming::claim_prefix`).
    prefixes: Vec<(usize, String)>,
    /// Every prefix of a user's mount written under (`Naming::secrets_prefix`).
    secrets: Vec<SecretsUnder>,
    /// (operation's index, accessor) of every token recorded (`Naming::record_token`), in
    /// every mode: a shard's parent token is its own.
    tokens: Vec<(usize, String)>,
    /// Fixtures one operation made for others of the session to use too, by a key of
    /// the family's (`kv:secret/`: a recorded kv mount's fixture), each its name.
    shared: HashMap<String, String>,
    /// The operation whose setup is running.
    owner: usize,
}

impl std::fmt::Debug for Naming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Naming")
            .field("run_id", &self.run_id)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Naming {
    /// The naming of a session run under `plan`: its run id (a fresh one when the plan
    /// has none) and mode.
    pub fn new(plan: &FixturePlan) -> Naming {
        Naming {
            run_id: plan
                .run_id
                .clone()
                .unwrap_or_else(|| format!("{}{}", fresh_name(""), fresh_name(""))),
            mode: plan.mode,
            external: plan.external,
            cleanup_timeout: plan.cleanup_timeout,
            drawn: Mutex::new(Drawn::default()),
            recorder: None,
        }
    }

    /// A run of its own with a fresh run id (tests, and sessions without a plan).
    pub fn own() -> Naming {
        Naming::new(&FixturePlan::default())
    }

    /// Tells `recorder` each fixture name this session creates (Own and Create modes), as
    /// it is drawn.
    pub fn with_recorder(mut self, recorder: Recorder) -> Naming {
        self.recorder = Some(recorder);
        self
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// What this session does with the fixture.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Whether the fixture comes from `vblast setup` (`--external-setup`).
    pub fn external(&self) -> bool {
        self.external
    }

    /// How long the removal of a fixture may wait for the server (`--cleanup-timeout`):
    /// an operation whose removal is slow (a database's leases) keeps it from setup.
    pub fn cleanup_timeout(&self) -> Duration {
        self.cleanup_timeout
    }

    /// The name of the next fixture with `prefix`: the prefix and 8 hex digits of SHA-256
    /// over the run id, the prefix and how many such names came before. A prefix that
    /// does not start with "vblast-" (a salt) gets 8 random hex digits.
    pub fn random_name(&self, prefix: &str) -> String {
        if !prefix.starts_with("vblast-") {
            return fresh_name(prefix);
        }
        let mut d = self.drawn();
        let n = d.seen.entry(prefix.to_string()).or_insert(0);
        let name = name_of(&self.run_id, prefix, *n);
        *n += 1;
        // A shard's names are the shared fixture's, not its own to remove.
        if self.mode != Mode::Join {
            let owner = d.owner;
            d.names.push((owner, name.clone()));
        }
        self.tell(&d, &format!("fixture {name}"));
        name
    }

    /// Tells the recorder (Own and Create modes) that `what` was added to `d`.
    fn tell(&self, d: &Drawn, what: &str) {
        if matches!(self.mode, Mode::Own | Mode::Create) {
            self.record(d, what);
        }
    }

    /// Tells the recorder that `what` was added to `d`, whatever the mode.
    fn record(&self, d: &Drawn, what: &str) {
        if let Some(r) = &self.recorder {
            r(&self.run_id, what, &d.made());
        }
    }

    /// The next name with `prefix` (as `random_name` draws it, from the same count) that
    /// is no object itself but the base of others: the name and '-' are claimed
    /// (`claim_prefix`), not named. The shards' own auth paths of a jwt-login or
    /// login-read run (`vblast-jwt-xxxxxxxx-yyyyyyyy`) are under it.
    pub fn random_prefix(&self, prefix: &str) -> String {
        let name = self.draw(prefix);
        self.claim_prefix(&format!("{name}-"));
        name
    }

    /// The next name with `prefix`, counted as `random_name` counts, recorded nowhere.
    fn draw(&self, prefix: &str) -> String {
        let mut d = self.drawn();
        let n = d.seen.entry(prefix.to_string()).or_insert(0);
        let name = name_of(&self.run_id, prefix, *n);
        *n += 1;
        name
    }

    /// The fresh prefix ("vblast-xxxxxxxx/", drawn as `random_name("vblast-")` draws) under
    /// which a run writes up to `count` secrets in `mount`, a kv mount (of `version`) it
    /// did not make: named as such, not as a fixture (there is no object by that name),
    /// so that `vblast cleanup` deletes those secrets (not in Join mode).
    pub fn secrets_prefix(&self, mount: &str, version: u8, count: u64) -> String {
        let prefix = format!("{}/", self.draw("vblast-"));
        if self.mode != Mode::Join {
            let mut d = self.drawn();
            d.secrets.push(SecretsUnder {
                mount: mount.to_string(),
                prefix: prefix.clone(),
                version,
                count,
            });
            self.tell(&d, &format!("secrets under {mount}/{prefix}"));
        }
        prefix
    }

    /// Claims every object whose name starts with `prefix` (a name this session drew,
    /// and '-') for this run: an operation that makes numbered objects under a drawn
    /// name (identity: `vblast-id-xxxxxxxx-entity-N`, `…-policy-N`, `…-1`) names them
    /// all to `vblast cleanup` at once (not in Join mode).
    pub fn claim_prefix(&self, prefix: &str) {
        let mut d = self.drawn();
        if self.mode == Mode::Join {
            return;
        }
        let owner = d.owner;
        d.prefixes.push((owner, prefix.to_string()));
        self.tell(&d, &format!("fixtures {prefix}*"));
    }

    /// The fixture another operation of this session made under `key` (`share`), if any.
    pub fn shared(&self, key: &str) -> Option<String> {
        self.drawn().shared.get(key).cloned()
    }

    /// Names `name`, a fixture the running operation made (and removes), as the one the
    /// session's later operations with `key` use instead of making their own.
    pub fn share(&self, key: &str, name: &str) {
        self.drawn()
            .shared
            .insert(key.to_string(), name.to_string());
    }

    /// The names drawn so far (a panic elsewhere while holding them leaves them as they
    /// were: they are still what was made).
    fn drawn(&self) -> MutexGuard<'_, Drawn> {
        self.drawn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the accessor of a token this session made (a parent token whose
    /// revocation revokes its children), as soon as the server has answered with it.
    pub fn record_token(&self, accessor: &str) {
        let mut d = self.drawn();
        let owner = d.owner;
        d.tokens.push((owner, accessor.to_string()));
        let what =
            format!("token accessor {accessor} (a parent token: its child tokens go with it)");
        // A shard's token is its own: told in Join mode too (its own state file).
        if self.mode == Mode::Join {
            self.record(&d, &what);
        } else {
            self.tell(&d, &what);
        }
    }

    /// The accessors of the tokens the operation at `index` recorded.
    pub fn tokens_of(&self, index: usize) -> Vec<String> {
        owned_by(&self.drawn().tokens, index)
    }

    /// The accessors of every token recorded.
    pub fn tokens(&self) -> Vec<String> {
        let d = self.drawn();
        d.tokens.iter().map(|(_, t)| t.clone()).collect()
    }

    /// Names drawn from now on belong to the operation at `index` of the session.
    pub fn set_owner(&self, index: usize) {
        self.drawn().owner = index;
    }

    /// The fixture names the operation at `index` drew (not in Join mode).
    pub fn names_of(&self, index: usize) -> Vec<String> {
        owned_by(&self.drawn().names, index)
    }

    /// Every name, prefix and token this session drew, claimed or recorded.
    pub fn made(&self) -> Made {
        self.drawn().made()
    }

    /// Every fixture name drawn (not in Join mode).
    pub fn names(&self) -> Vec<String> {
        let d = self.drawn();
        d.names.iter().map(|(_, n)| n.clone()).collect()
    }

    /// Waits until `ready` says the fixture is there (Ok(true)), bounded by `JOIN_WAIT` and
    /// a signal; `what` names it in the message.
    pub fn wait_for(
        &self,
        what: &str,
        stop: &Stop,
        mut ready: impl FnMut() -> Result<bool, Cause>,
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
                    if self.external {
                        "this shard has --external-setup: run `vblast setup` first, or start every shard without --external-setup (then shard 0 sets the fixture up)"
                    } else {
                        "check that every shard has the same operation flags"
                    }
                )));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// The second halves of the `(owner, value)` pairs whose owner is `index`.
fn owned_by(list: &[(usize, String)], index: usize) -> Vec<String> {
    list.iter()
        .filter(|(o, _)| *o == index)
        .map(|(_, v)| v.clone())
        .collect()
}

impl Drawn {
    /// Everything drawn, claimed and recorded so far.
    fn made(&self) -> Made {
        let all = |v: &[(usize, String)]| v.iter().map(|(_, n)| n.clone()).collect();
        Made {
            names: all(&self.names),
            prefixes: all(&self.prefixes),
            tokens: all(&self.tokens),
            secrets: self.secrets.clone(),
        }
    }
}

/// `prefix` and 8 random lowercase hex digits (salts, passwords, a shard's own names).
pub fn fresh_name(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut z = nanos
        ^ (u64::from(std::process::id()) << 32)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0xA24B_AED4_963E_E407);
    // splitmix64's finaliser.
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    format!("{prefix}{:08x}", z as u32)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn naming(mode: Mode, run_id: &str) -> Naming {
        Naming::new(&FixturePlan {
            run_id: Some(run_id.into()),
            mode,
            ..FixturePlan::default()
        })
    }

    #[test]
    fn names_follow_the_run_id_and_differ_per_fixture() {
        let join = naming(Mode::Join, "run-a");
        let a1 = join.random_name("vblast-");
        let a2 = join.random_name("vblast-");
        let p = join.random_name("vblast-approle-");
        let remove = naming(Mode::Remove, "run-a");
        assert_eq!(remove.random_name("vblast-"), a1);
        assert_eq!(remove.random_name("vblast-"), a2);
        assert_eq!(remove.random_name("vblast-approle-"), p);
        assert_ne!(naming(Mode::Create, "run-b").random_name("vblast-"), a1);
        assert_ne!(a1, a2);
        assert!(
            a1.starts_with("vblast-") && a1.len() == "vblast-".len() + 8,
            "{a1}"
        );
        assert!(p.starts_with("vblast-approle-"), "{p}");
        // A run of its own given the run id names its fixtures as its cleanup will.
        assert_eq!(naming(Mode::Own, "run-a").random_name("vblast-"), a1);
        // Salts stay random.
        assert_ne!(join.random_name(""), join.random_name(""));
    }

    #[test]
    fn own_runs_without_a_run_id_draw_one_and_record_what_they_name() {
        let (a, b) = (Naming::own(), Naming::own());
        assert_ne!(a.run_id(), b.run_id());
        assert_eq!(a.run_id().len(), 16);
        let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let a = a.with_recorder(Box::new(move |_, what, all| {
            s2.lock().unwrap().push((what.to_string(), all.len()));
        }));
        a.set_owner(1);
        let m = a.random_name("vblast-");
        a.set_owner(2);
        let q = a.random_name("vblast-read-");
        a.random_name("");
        assert_eq!(a.names_of(1), vec![m.clone()]);
        assert_eq!(a.names(), vec![m.clone(), q.clone()]);
        a.claim_prefix(&format!("{q}-"));
        a.record_token("acc1");
        assert_eq!(a.tokens_of(2), vec!["acc1".to_string()]);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                (format!("fixture {m}"), 1),
                (format!("fixture {q}"), 2),
                (format!("fixtures {q}-*"), 3),
                (
                    "token accessor acc1 (a parent token: its child tokens go with it)".into(),
                    4
                )
            ]
        );
        // A base drawn as a prefix counts as `random_name` counts, and is no name.
        let (r, j) = (naming(Mode::Create, "p"), naming(Mode::Join, "p"));
        assert_eq!(r.random_name("vblast-jwt-"), j.random_name("vblast-jwt-"));
        let base = r.random_prefix("vblast-jwt-");
        assert_eq!(base, j.random_name("vblast-jwt-"));
        assert_eq!(r.names().len(), 1);
        assert_eq!(
            r.drawn.lock().unwrap().made().prefixes,
            vec![format!("{base}-")]
        );
        // A shard's and a cleanup's names are not theirs to record.
        let j = naming(Mode::Join, "x");
        j.random_name("vblast-");
        assert!(j.names().is_empty());
    }
}
