//! The staleness probe of `--op kv-staleness`, beside a step's load: round after round it
//! writes a new version of one KV v2 secret on the active node, then polls the same secret
//! on every standby at once (each asked to answer itself, `X-Vault-No-Request-Forwarding`)
//! until that version is visible there, and records the write's time and each standby's
//! delay (`stats::staleness`). Its own connections, off the event loops; the refusals of a
//! target it cannot measure are here too (`refusal`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::stats::staleness::{Staleness, StandbyStaleness};
use crate::vault::client::Client;

/// How long a standby is polled for one version before it counts as not seen.
pub const VISIBLE_WAIT: Duration = Duration::from_secs(5);
/// Pause between two rounds: the probe's own load stays small beside the run's.
const ROUND_PAUSE: Duration = Duration::from_millis(20);

/// A probe running in a thread of its own.
pub struct StalenessProbe {
    done: Arc<AtomicBool>,
    handle: Option<JoinHandle<Staleness>>,
}

/// Why `--op kv-staleness` cannot measure this target: a single node, or fewer than two
/// unsealed nodes. None when it can.
pub fn refusal(unsealed: Option<usize>) -> Option<Error> {
    match unsealed {
        None => Some(Error::input(
            "kv-staleness measures how far a standby's reads lag the active node's writes: it needs a cluster (several --address, or a comma-separated VAULT_ADDR, with --nodes all), not a single node",
        )),
        Some(n) if n < 2 => Some(Error::input(format!(
            "kv-staleness needs the active node and at least one unsealed standby; this cluster has {n} unsealed node{}",
            if n == 1 { "" } else { "s" }
        ))),
        Some(_) => None,
    }
}

/// The refusal of a standby that does not answer reads itself (it forwards them:
/// `disable_standby_reads`, or a server whose standbys serve no reads).
pub fn forwards_reads(addr: &str) -> Error {
    Error::input(format!(
        "kv-staleness: the standby {addr} does not answer reads itself (asked with X-Vault-No-Request-Forwarding, it did not serve the fixture): its reads are forwarded to the active node (disable_standby_reads?), so they are never stale and there is nothing to measure"
    ))
}

/// The version a KV v2 answer shows (`data.version` of a write, `data.metadata.version`
/// of a read).
fn version_of(v: &serde_json::Value) -> Option<u64> {
    v["data"]["version"]
        .as_u64()
        .or_else(|| v["data"]["metadata"]["version"].as_u64())
}

impl StalenessProbe {
    /// Starts the rounds: `active` writes `path` (`/v1/<mount>/data/<name>`), each of
    /// `standbys` (address, client) reads it.
    pub fn start(
        mut active: Client,
        standbys: Vec<(String, Client)>,
        path: String,
    ) -> StalenessProbe {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let handle = std::thread::Builder::new()
            .name("vblast-staleness".into())
            .spawn(move || {
                let mut out = Staleness {
                    standbys: standbys
                        .iter()
                        .map(|(addr, _)| StandbyStaleness {
                            addr: addr.clone(),
                            ..StandbyStaleness::default()
                        })
                        .collect(),
                    ..Staleness::default()
                };
                let mut clients: Vec<Client> = standbys.into_iter().map(|(_, c)| c).collect();
                let mut round = 0u64;
                // At least one round, however short the step.
                loop {
                    round += 1;
                    one_round(&mut active, &mut clients, &path, round, &mut out);
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(ROUND_PAUSE);
                }
                out
            })
            .ok();
        StalenessProbe { done, handle }
    }

    /// Ends the rounds (after the one under way) and gives what they measured.
    pub fn stop(mut self) -> Staleness {
        self.done.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for StalenessProbe {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// One write on the active node, then every standby polled at once until it shows the
/// written version (or `VISIBLE_WAIT` passes).
fn one_round(
    active: &mut Client,
    standbys: &mut [Client],
    path: &str,
    round: u64,
    out: &mut Staleness,
) {
    let body = format!("{{\"data\":{{\"round\":\"{round}\"}}}}");
    let sent = Instant::now();
    let answer = active.request("POST", path, Some(body.as_bytes()));
    out.requests += u64::from(answer.is_ok());
    let version = match answer {
        Ok(r) if r.status == 200 => r.json().as_ref().and_then(version_of),
        _ => None,
    };
    let Some(version) = version else {
        out.write_errors += 1;
        return;
    };
    let written = Instant::now();
    out.write
        .record(written.duration_since(sent).as_micros() as u64);
    let delays: Vec<(Option<u64>, u64)> = std::thread::scope(|s| {
        let hs: Vec<_> = standbys
            .iter_mut()
            .map(|c| s.spawn(move || poll(c, path, version, written)))
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or((None, 0)))
            .collect()
    });
    for (st, (d, sent)) in out.standbys.iter_mut().zip(delays) {
        out.requests += sent;
        match d {
            Some(us) => st.delay.record(us),
            None => st.not_seen += 1,
        }
    }
}

/// Reads `path` on a standby until it shows `version`: the microseconds since `written`
/// (or None after `VISIBLE_WAIT`), and the reads the server answered.
fn poll(c: &mut Client, path: &str, version: u64, written: Instant) -> (Option<u64>, u64) {
    let mut answered = 0;
    loop {
        let r = c.request("GET", path, None);
        answered += u64::from(r.is_ok());
        if let Ok(r) = r
            && r.status == 200
            && r.json().as_ref().and_then(version_of) >= Some(version)
        {
            return (Some(written.elapsed().as_micros() as u64), answered);
        }
        if written.elapsed() > VISIBLE_WAIT {
            return (None, answered);
        }
        std::thread::yield_now();
    }
}

/// What a standby, asked with `X-Vault-No-Request-Forwarding` for a read of `path`, did.
#[derive(Clone, Copy, Debug, PartialEq)]
enum StandbyRead {
    /// It answered itself: 200, or KV's own 404 of a secret not written yet (no `errors`).
    Served,
    /// A redirect: it sends its reads to the active node (`disable_standby_reads = true`),
    /// or it has not loaded the fixture's new mount yet.
    Redirected,
    /// Anything else: a standby that has not loaded the fixture's new mount yet answers
    /// "no handler for route" until it does; an error.
    NotYet,
}

/// How long a standby is given to serve the fixture's first read itself (a PostgreSQL HA
/// standby learns of a new mount from the shared storage, a moment after its creation).
const STANDBY_READY_WAIT: Duration = Duration::from_secs(15);

fn standby_read(c: &mut Client, path: &str) -> StandbyRead {
    match c.request("GET", path, None) {
        Ok(r) if r.status == 200 => StandbyRead::Served,
        Ok(r) if (300..400).contains(&r.status) => StandbyRead::Redirected,
        Ok(r)
            if r.status == 404
                && r.json()
                    .and_then(|v| {
                        v.get("errors")
                            .and_then(|e| e.as_array())
                            .map(Vec::is_empty)
                    })
                    .unwrap_or(true) =>
        {
            StandbyRead::Served
        }
        _ => StandbyRead::NotYet,
    }
}

impl crate::session::Session {
    /// The secret of `--op kv-staleness`, when the run has one.
    fn staleness_path(&self) -> Option<String> {
        self.fixtures.iter().find_map(|f| f.staleness_path())
    }

    /// Before setup: refuses kv-staleness against a single node or a cluster without an
    /// unsealed standby.
    pub(super) fn check_staleness_target(&self) -> Result<(), Error> {
        if self.staleness_path().is_none() {
            return Ok(());
        }
        match refusal(self.cluster.as_ref().map(|c| c.view.unsealed().len())) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// After setup: refuses a standby that does not answer a read of the probe's secret
    /// itself (`standby_read`) within `STANDBY_READY_WAIT` (a Ctrl-C ends that wait).
    pub(super) fn check_standby_reads(&self) -> Result<(), Error> {
        let Some(path) = self.staleness_path() else {
            return Ok(());
        };
        let until = Instant::now() + STANDBY_READY_WAIT;
        for t in self.standbys() {
            let mut client = self.client_for(&t, self.timeout).without_forwarding();
            loop {
                match standby_read(&mut client, &path) {
                    StandbyRead::Served => break,
                    // A standby that has not loaded the new mount redirects too: only
                    // answers to the end of the wait say it forwards its reads.
                    StandbyRead::NotYet | StandbyRead::Redirected if Instant::now() < until => {
                        if let Some(s) = self.stop.signal() {
                            return Err(Error::Stopped(s));
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    StandbyRead::Redirected | StandbyRead::NotYet => {
                        return Err(forwards_reads(&t.base()));
                    }
                }
            }
        }
        Ok(())
    }

    /// The unsealed nodes other than the active one.
    fn standbys(&self) -> Vec<crate::net::target::Target> {
        let Some(c) = self.cluster.as_ref() else {
            return Vec::new();
        };
        let active = c.route.active();
        c.view
            .unsealed()
            .into_iter()
            .filter(|&i| i != active)
            .map(|i| c.targets[i].clone())
            .collect()
    }

    /// The probe beside a step, when the run measures staleness.
    pub(super) fn start_staleness(&self) -> Option<StalenessProbe> {
        let path = self.staleness_path()?;
        let c = self.cluster.as_ref()?;
        let timeout = self.timeout.min(VISIBLE_WAIT);
        let active = self.client_for(&c.active_target(), timeout);
        let standbys = self
            .standbys()
            .into_iter()
            .map(|t| {
                let client = self.client_for(&t, timeout).without_forwarding();
                (t.base(), client)
            })
            .collect();
        Some(StalenessProbe::start(active, standbys, path))
    }
}
