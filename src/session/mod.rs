//! A session owns everything vblast does to a server around the load, in four phases,
//! a file each: `open` (the target and its TLS settings resolved, the checks), `setup`
//! (the fixtures each operation creates, once), `step` (any number of load steps over
//! them, which the sweep and `vblast run` call), and `close` (their removal, guaranteed on
//! every exit path: success, failure, a signal, or a setup that failed half-way; run on
//! drop too). This file holds the session's state and what it tells its callers.

mod close;
pub mod cluster;
pub mod fixtures;
pub mod live;
pub mod one_step;
mod open;
mod setup;
pub use setup::row_names;
pub mod shard;
pub mod staleness;
mod step;
pub mod url_request;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustls::pki_types::ServerName;

use crate::config::fixtures::FixturePlan;
use crate::net::target::Target;
use crate::net::tls::TlsOptions;
use crate::orchestrate::{Layout, Measured};
use crate::session::cluster::{ClusterRun, ClusterView};
use crate::signals::Stop;
use crate::vault::fixture::Naming;
use crate::vault::ops::{Created, VaultOp};
use crate::vault::progress::SetupLog;
use crate::workload::Operation;

/// What one load step measured.
#[derive(Debug)]
pub struct StepResult {
    pub outcome: Measured,
    pub layout: Layout,
    /// Wall-clock time the step started (after setup).
    pub started_at: SystemTime,
    /// The nodes' samples over the step (`session::one_step` fills them in).
    pub server_samples: Option<crate::server_stats::ServerSamples>,
}

pub struct Session {
    target: Target,
    tls: Option<TlsOptions>,
    tls_config: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    token: Option<String>,
    namespace: Option<String>,
    /// Per-request timeout of setup calls (the run's --timeout).
    timeout: Duration,
    keep: bool,
    fd_limit: u64,
    fixtures: Vec<Box<dyn VaultOp>>,
    operations: Vec<Operation>,
    stop: Stop,
    closed: bool,
    /// The names of the session's fixtures (its run id, its mode).
    naming: Naming,
    /// Where the run's state file is, and how long cleanup waits for the server.
    plan: FixturePlan,
    /// Several nodes of one HA cluster as the target.
    cluster: Option<ClusterRun>,
    /// The setup's progress and its phases' times.
    log: SetupLog,
    /// `--audit-path`, `--audit-log`: the audit log counted after the run.
    audit: Option<crate::vault::audit::CountedLog>,
}

impl Session {
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The requests of the operations, in the order of `op_names` (a replay's other
    /// namespaces send their own fixtures' requests: `replay::callers`).
    pub fn requests(&self) -> Vec<crate::template::RequestSpec> {
        self.operations.iter().map(|o| o.request.clone()).collect()
    }

    /// Names of the operations, in the order of the results' per-operation rows.
    pub fn op_names(&self) -> Vec<String> {
        self.operations.iter().map(|o| o.name.clone()).collect()
    }

    /// Keeps what the session created at `close` (or removes it): a shared fixture's setup
    /// opens with `keep` false, so that a setup failing half-way removes what it made, and
    /// keeps the fixture once it is complete (src/session/fixtures.rs).
    pub fn set_keep(&mut self, keep: bool) {
        self.keep = keep;
    }

    /// The fixture names the session drew (none for a shard: its names are the shared
    /// fixture's).
    pub fn fixture_names(&self) -> Vec<String> {
        self.naming.names()
    }

    /// The names, prefixes and tokens of the session's fixtures (`Naming::made`).
    pub fn fixture_made(&self) -> crate::vault::fixture::Made {
        self.naming.made()
    }

    /// The setup's phases so far, each with its count and time.
    pub fn setup_phases(&self) -> Vec<crate::stats::phases::SetupPhase> {
        self.log.phases()
    }

    /// The run id that names the session's fixtures.
    pub fn run_id(&self) -> &str {
        self.naming.run_id()
    }

    /// What is on the server because of this session.
    pub fn created(&self) -> Vec<Created> {
        self.fixtures.iter().flat_map(|f| f.created()).collect()
    }

    /// The cluster's nodes as they answered before the run (a cluster target only).
    pub fn cluster_view(&self) -> Option<&ClusterView> {
        self.cluster.as_ref().map(|c| &c.view)
    }
}
