//! Opening a session: the target and its TLS settings resolved, the token and namespace
//! checked, a cluster probed, the layout checked, then the operations set up (src/session/setup.rs)
//! or, in URL mode, the server reached; and the blocking clients every phase reaches the server
//! with.

use std::time::Duration;

use crate::config::scenario::{Scenario, Workload};
use crate::error::{Cause, Error, io_text};
use crate::net::target::Target;
use crate::net::tls;
use crate::session::cluster::ClusterRun;
use crate::session::setup::steps_of;
use crate::session::{Session, fixtures};
use crate::signals::Stop;
use crate::vault::client::{Client, Response};
use crate::vault::ops;
use crate::vault::progress::{Display, SetupLog};

/// The sampler reaches each node with a Vault client of its own.
impl crate::server_stats::NodeApi for Client {
    fn get(&mut self, path: &str, in_namespace: bool) -> Result<Response, Cause> {
        if in_namespace {
            self.request("GET", path, None)
        } else {
            self.request_root("GET", path, None)
        }
    }

    fn base(&self) -> String {
        Client::base(self)
    }
}

impl Session {
    /// Resolves the scenario's target, checks the server and sets every operation up. On
    /// any failure what was created so far is removed before the error is returned.
    /// The setup's long phases show their progress on a terminal (`open_showing`).
    pub fn open(scenario: &Scenario, stop: &Stop) -> Result<Session, Error> {
        Self::open_showing(scenario, stop, Display::new(false, false))
    }

    /// `open`, the setup's progress shown as `display` says (src/vault/progress.rs).
    pub fn open_showing(
        scenario: &Scenario,
        stop: &Stop,
        display: Display,
    ) -> Result<Session, Error> {
        let mut target = Target::parse(&scenario.address).map_err(Error::input)?;
        if !matches!(scenario.workload, Workload::Url(_)) {
            target.path = "/".into();
        }
        let tls = if target.is_tls() {
            Some(scenario.tls.clone().unwrap_or_default())
        } else {
            None
        };
        // Bad files and names are reported now, before anything is sent.
        let tls_config = match &tls {
            Some(opts) => Some((
                tls::client_config(opts).map_err(Error::input)?,
                tls::server_name(opts, &target.host).map_err(Error::input)?,
            )),
            None => None,
        };
        let token = scenario.token.0.clone();
        // Both go into request headers verbatim.
        if token.as_deref().is_some_and(has_control) {
            return Err(Error::input(
                "the token holds control characters (check VAULT_TOKEN, --token or --token-file)",
            ));
        }
        if scenario.namespace.as_deref().is_some_and(has_control) {
            return Err(Error::input("the namespace holds control characters"));
        }
        let mut cluster = None;
        if let Some(spec) = &scenario.cluster
            && matches!(scenario.workload, Workload::Vault(_))
        {
            let run = ClusterRun::probe(scenario, spec, &tls_config, stop)?;
            let active = run.route.active();
            target = run.targets[active].clone();
            cluster = Some(run);
        }
        let fd_limit = fd_limit();
        let mut session = Session {
            target,
            tls,
            tls_config,
            token,
            namespace: scenario.namespace.clone(),
            timeout: scenario.load.timeout,
            keep: scenario.keep,
            fd_limit,
            fixtures: Vec::new(),
            operations: Vec::new(),
            stop: stop.clone(),
            closed: false,
            naming: fixtures::naming(scenario),
            plan: scenario.fixtures.clone(),
            cluster,
            log: SetupLog::new(display),
            audit: None,
        };
        // The layout is checked now so that impossible loads are refused before setup.
        session.layout(&scenario.load)?;
        match &scenario.workload {
            Workload::Url(req) => {
                // The request first: a bad body file is reported whatever the server's state.
                let op = crate::session::url_request::operation(req, &session.target)
                    .map_err(Error::input)?;
                session.check_reachable()?;
                session.operations = vec![op];
            }
            Workload::Vault(choices) => {
                session.fixtures = ops::build(choices).map_err(Error::input)?;
                session.check_staleness_target()?;
                if let Err(e) = session.set_up(scenario.no_setup) {
                    // Whatever was created half-way goes now, before the error is shown.
                    session.close_reporting();
                    return Err(stop.signal().map_or(e, Error::Stopped));
                }
                session.wait_for_standbys();
                if let Err(e) = session.check_standby_reads() {
                    session.close_reporting();
                    return Err(e);
                }
                for (fixture, choice) in session.fixtures.iter().zip(choices) {
                    session
                        .operations
                        .extend(steps_of(fixture.as_ref(), choice));
                }
                if let Err(e) = session.enable_audit() {
                    session.close_reporting();
                    return Err(stop.signal().map_or(e, Error::Stopped));
                }
            }
        }
        Ok(session)
    }

    /// A client per node (a cluster's every node, or the one target), each with a
    /// connection of its own: for the server sampler (src/server_stats/).
    pub fn node_clients(&self, timeout: Duration) -> Vec<Client> {
        match &self.cluster {
            Some(c) => c
                .targets
                .iter()
                .map(|t| self.client_for(t, timeout))
                .collect(),
            None => vec![self.client(timeout)],
        }
    }

    /// A setup client with its own connection.
    pub(super) fn client(&self, timeout: Duration) -> Client {
        self.client_for(&self.target, timeout)
    }

    /// A client of node `target` with the run's token and TLS settings.
    pub(super) fn client_for(&self, target: &Target, timeout: Duration) -> Client {
        let (config, name) = match &self.tls_config {
            // The node set up on is reached under its own name (a cluster's active node
            // need not be the first address).
            Some((c, n)) => (
                Some(c.clone()),
                Some(
                    self.tls
                        .as_ref()
                        .and_then(|o| tls::server_name(o, &target.host).ok())
                        .unwrap_or_else(|| n.clone()),
                ),
            ),
            None => (None, None),
        };
        Client::new(
            target,
            config,
            name,
            self.token.clone(),
            self.namespace.clone(),
            timeout,
        )
    }

    /// URL mode and --no-setup: the server must at least accept a connection (and a TLS
    /// handshake) before the run starts.
    pub(super) fn check_reachable(&self) -> Result<(), Error> {
        use std::net::TcpStream;
        let addr = self.target.addr();
        let base = self.target.base();
        let limit = self.timeout.min(Duration::from_secs(10));
        let tcp = TcpStream::connect_timeout(&addr, limit).map_err(|e| {
            Error::unreachable(format!("cannot connect to {base}: {}", io_text(&e)))
        })?;
        if let Some((config, name)) = &self.tls_config {
            let _ = tcp.set_read_timeout(Some(limit));
            let _ = tcp.set_write_timeout(Some(limit));
            let mut conn = rustls::ClientConnection::new(config.clone(), name.clone())
                .map_err(|e| Error::unreachable(format!("TLS setup failed: {e}")))?;
            let mut tcp = tcp;
            let host_port = base.rsplit("://").next().unwrap_or(&base);
            tls::blocking_handshake(&mut conn, &mut tcp, host_port).map_err(Error::unreachable)?;
        }
        Ok(())
    }
}

fn has_control(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_control())
}

/// The descriptors a process may hold, raised to its hard limit. For tests and
/// experiments, `VBLAST_PROCESS_FDS` pretends a process may hold fewer, so that small runs
/// are spread over worker processes too.
fn fd_limit() -> u64 {
    let limit = crate::sys::raise_nofile();
    match std::env::var("VBLAST_PROCESS_FDS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(n) => limit.min(n),
        None => limit,
    }
}

#[cfg(test)]
mod tests {
    use super::has_control;

    #[test]
    fn control_characters_are_found_anywhere() {
        assert!(!has_control("hvs.abc-DEF_123"));
        assert!(!has_control(""));
        assert!(has_control("hvs.abc\n"));
        assert!(has_control("a\rb"));
        assert!(has_control("\0"));
        assert!(has_control("ns\t1"));
    }
}
