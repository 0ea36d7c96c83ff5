//! How stale a standby's reads are (`--op kv-staleness`): per round, the time to write a
//! new version on the active node, and per standby the time from that write's answer to
//! the first read on the standby that shows it, each into a histogram of its own
//! (microseconds, as every latency here). The probe that measures them is
//! `session::staleness`; the report's lines are `report::staleness`.

use serde::{Deserialize, Serialize};

use crate::stats::Hist;

/// The staleness of one run (merged over the steps of `--nodes each`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Staleness {
    /// The writes of new versions on the active node.
    pub write: Hist,
    /// Writes that failed (no version to wait for).
    #[serde(default)]
    pub write_errors: u64,
    /// Every request the probe sent that the server answered (writes and polls): the
    /// server counts them beside the load's (the accounting adds them to the client's).
    #[serde(default)]
    pub requests: u64,
    pub standbys: Vec<StandbyStaleness>,
}

/// One standby's delays.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StandbyStaleness {
    /// The standby's address.
    pub addr: String,
    /// From the write's answer to the first read showing its version.
    pub delay: Hist,
    /// Versions not seen within the probe's bound (`session::staleness::VISIBLE_WAIT`).
    #[serde(default)]
    pub not_seen: u64,
}

impl Staleness {
    pub fn merge(&mut self, o: &Staleness) {
        self.write.add(&o.write);
        self.write_errors += o.write_errors;
        self.requests += o.requests;
        for s in &o.standbys {
            match self.standbys.iter_mut().find(|m| m.addr == s.addr) {
                Some(m) => {
                    m.delay.add(&s.delay);
                    m.not_seen += s.not_seen;
                }
                None => self.standbys.push(s.clone()),
            }
        }
    }
}
