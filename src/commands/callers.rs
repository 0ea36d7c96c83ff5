//! The recorded callers of a run, set up and removed in one place for `vblast replay` and
//! `vblast run --workload`: their tokens and the namespaces the server lacks
//! (`replay::callers::SessionsMade`), then, in each namespace other than the run's, a
//! session of its own with its fixtures (sized by the caller's `for_namespace`), whose
//! requests that namespace's callers send. Everything made is removed by `remove`, and
//! on drop.

use std::time::Duration;

use crate::config::scenario::{OpChoice, Scenario};
use crate::config::schedule::Caller;
use crate::error::{Cause, Error};
use crate::profile::kv_mounts::{KvMounts, MixEntry};
use crate::replay::callers::{Server, Sessions, SessionsMade};
use crate::session::Session;
use crate::signals::Stop;
use crate::template::RequestSpec;

/// What a run's callers made on its server.
pub struct CallersMade {
    made: SessionsMade,
    /// One per namespace other than the run's, closed before `made` goes.
    fixtures: Vec<Session>,
}

/// What the engine takes of the callers: their tokens and namespaces (session 1 first) and
/// the requests of each other namespace's fixtures (`Instants::callers`, `request_sets`).
pub struct CallersSent {
    pub callers: Vec<Caller>,
    pub request_sets: Vec<Vec<RequestSpec>>,
}

impl CallersMade {
    /// Makes `sessions` for a run of `scenario` lasting `span`: a token per caller, the
    /// namespaces the server lacks, and in each other namespace the fixtures of the
    /// scenario `for_namespace` gives for it (given the log's namespace path, `team-a/`).
    /// Notes on stderr. What was made before a failure (or a signal) is removed.
    pub fn set_up(
        scenario: &Scenario,
        sessions: &Sessions,
        span: Duration,
        for_namespace: &dyn Fn(&str) -> Result<Scenario, Error>,
        stop: &Stop,
    ) -> Result<(CallersMade, CallersSent), Error> {
        let stopped = |e: Error| stop.signal().map_or(e, Error::Stopped);
        let made =
            SessionsMade::set_up(server(scenario)?, sessions, span, stop).map_err(stopped)?;
        for n in &made.notes {
            eprintln!("vblast: note: {n}");
        }
        let mut out = CallersMade {
            made,
            fixtures: Vec::new(),
        };
        let mut request_sets = Vec::new();
        for ns in out.made.other_namespaces() {
            // The log's own path of it, under the run's namespace.
            let recorded = scenario
                .namespace
                .as_deref()
                .map(|own| own.trim_matches('/').to_string() + "/")
                .and_then(|own| ns.strip_prefix(&own))
                .unwrap_or(&ns);
            let mut sc = for_namespace(recorded)?;
            sc.namespace = Some(ns.clone());
            sc.fixtures.audit_path = None;
            sc.fixtures.audit_log = None;
            sc.fixtures.run_id = None;
            match Session::open(&sc, stop) {
                Ok(s) => {
                    out.made.use_requests(&ns, request_sets.len());
                    request_sets.push(s.requests());
                    out.fixtures.push(s);
                }
                Err(e) => {
                    if let Err(c) = out.remove() {
                        eprintln!("vblast: {c}");
                    }
                    return Err(stopped(e).within(format!("the fixtures of namespace {ns}")));
                }
            }
        }
        let callers = out.made.callers();
        Ok((
            out,
            CallersSent {
                callers,
                request_sets,
            },
        ))
    }

    /// Closes each namespace's fixtures, then revokes the tokens and removes the
    /// namespaces made; the first failure, after trying all.
    pub fn remove(&mut self) -> Result<(), Error> {
        let mut first = Ok(());
        for s in &mut self.fixtures {
            if let Err(e) = s.close() {
                if first.is_ok() {
                    first = Err(e);
                } else {
                    eprintln!("vblast: {e}");
                }
            }
        }
        self.fixtures.clear();
        let made = self.made.remove();
        match (first, made) {
            (Err(e), Err(m)) => {
                eprintln!("vblast: {m}");
                Err(e)
            }
            (first, made) => first.and(made),
        }
    }
}

/// The operations of a mix of `entries` (each with its recorded requests, its weight) for
/// the fixtures of `namespace` ("root", `team-a/`; None: every namespace's requests in
/// one): each entry the choice of its operation in `base` (as the flags configured it),
/// a kv one set to its recorded mount's fixture there (`KvMounts::fixture`: its own
/// mount, shared by that mount's operations, its secrets and kv version, or `given`
/// secrets when `--secrets` was given) and named by its label (`kv-read@secret`).
pub fn kv_choices(
    base: &[OpChoice],
    entries: &[(MixEntry, u64)],
    kv: &KvMounts,
    namespace: Option<&str>,
    given: Option<u64>,
) -> Result<Vec<OpChoice>, Error> {
    let mut out = Vec::new();
    for (e, count) in entries {
        let Some(b) = base.iter().find(|b| b.name == e.op) else {
            continue;
        };
        let mut c = b.clone();
        c.weight = (*count).clamp(1, u64::from(u32::MAX)) as u32;
        if let Some(f) = kv.fixture(e, namespace) {
            let secrets = given.unwrap_or(f.secrets);
            c.config = crate::vault::ops::kv::on_mount(&c.config, &f.group, secrets, f.version)
                .map_err(|e: Cause| Error::input(e.within(format!("operation '{}'", c.name))))?;
            let label = kv.label(e);
            c.label = (label != c.name).then_some(label);
        }
        out.push(c);
    }
    Ok(out)
}

/// Where setup calls go: the scenario's server, TLS, token and namespace.
fn server(scenario: &Scenario) -> Result<Server, Error> {
    let target = crate::net::target::Target::parse(&scenario.address).map_err(Error::input)?;
    let tls = if target.is_tls() {
        let opts = scenario.tls.clone().unwrap_or_default();
        Some((
            crate::net::tls::client_config(&opts).map_err(Error::input)?,
            crate::net::tls::server_name(&opts, &target.host).map_err(Error::input)?,
        ))
    } else {
        None
    };
    Ok(Server {
        target,
        tls,
        token: scenario.token.0.clone(),
        namespace: scenario.namespace.clone(),
        timeout: scenario.load.timeout,
    })
}

impl Drop for CallersMade {
    /// Fixtures first, then tokens and namespaces (fields would drop the other way).
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            eprintln!("vblast: {e}");
        }
    }
}
