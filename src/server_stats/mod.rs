//! Server-side evidence: what each Vault node did during a run, sampled beside the
//! client's figures. `sources` reads the server's telemetry, host and process; `sample`
//! is one look at one node; `sampler` takes them from a thread of its own; `timeline`
//! keeps each node's samples and the intervals between them (merged across shards by
//! node); `summary` is what they say beside the client's figures, and the report's lines;
//! `live` hands each node's latest interval to the Prometheus exporter. A node is reached
//! through `NodeApi`, which the session's Vault client implements (src/session/open.rs).

pub mod live;
pub mod pprof;
pub mod sample;
pub mod sampler;
pub mod sources;
pub mod summary;
pub mod timeline;
pub mod verdict;

use std::time::Duration;

use crate::error::Cause;
use crate::net::blocking::Response;

pub use sampler::Sampler;
pub use summary::{ClientSide, ServerSummary};
pub use timeline::ServerSamples;

/// How the sampler reaches one node's API: a GET of `path` (`/v1/sys/metrics`), within
/// the run's namespace or at the root, over a connection of its own; and the node's base
/// URL, for messages.
pub trait NodeApi: Send {
    fn get(&mut self, path: &str, in_namespace: bool) -> Result<Response, Cause>;
    fn base(&self) -> String;
}

/// How a run samples its nodes (`--server-interval`, `--server-pid`); no value means no
/// sampling (`--no-server-stats`, URL mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub interval: Duration,
    /// One process per node, in the nodes' order, read from /proc.
    pub pids: Vec<u32>,
    /// `--pprof-interval`: the first node's profiles (src/server_stats/pprof.rs).
    pub pprof: Option<pprof::Profiling>,
}

impl Settings {
    /// How long one look at a node may take: an interval, at least a second and at most
    /// ten, so that a node that stops answering holds the sampler no longer.
    pub fn timeout(&self) -> Duration {
        self.interval
            .clamp(Duration::from_secs(1), Duration::from_secs(10))
    }
}
