//! What an HTTP/2 run adds to its figures: the protocol's own events, counted per
//! connection and merged losslessly like the rest (`Stats::http2`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// HTTP/2 counts of a run (all zero and left out of the results file over HTTP/1.1).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct H2Figures {
    /// Streams asked for per connection (`-m`).
    pub streams_asked: u64,
    /// The fewest streams a connection was allowed (`-m` capped by the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS), and the server's limit as it said it (0: none).
    pub streams_allowed: u64,
    pub server_limit: u64,
    /// RST_STREAM frames received, by error code name.
    pub resets: BTreeMap<String, u64>,
    /// GOAWAY frames received, by error code name.
    pub goaways: BTreeMap<String, u64>,
    /// Requests sent again on a new connection (a GOAWAY left them unprocessed, or a
    /// REFUSED_STREAM).
    pub resent: u64,
    /// Connection errors this client detected (GOAWAY sent), by error code name.
    pub conn_errors: BTreeMap<String, u64>,
}

impl H2Figures {
    pub fn is_empty(&self) -> bool {
        self.streams_asked == 0
    }

    pub fn merge(&mut self, o: &H2Figures) {
        if o.is_empty() {
            return;
        }
        self.streams_allowed = if self.is_empty() {
            o.streams_allowed
        } else {
            self.streams_allowed.min(o.streams_allowed)
        };
        self.streams_asked = self.streams_asked.max(o.streams_asked);
        self.server_limit = self.server_limit.max(o.server_limit);
        for (a, b) in [
            (&mut self.resets, &o.resets),
            (&mut self.goaways, &o.goaways),
            (&mut self.conn_errors, &o.conn_errors),
        ] {
            for (k, n) in b {
                *a.entry(k.clone()).or_default() += n;
            }
        }
        self.resent += o.resent;
    }

    /// Counts one event of `code` into `map` (an allocation only the first time a code
    /// is seen).
    pub fn count(map: &mut BTreeMap<String, u64>, code: u32) {
        let name = crate::net::h2::frame::code_name(code);
        match map.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                map.insert(name.to_string(), 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_merge_by_code_and_keep_the_fewest_streams_allowed() {
        let mut a = H2Figures {
            streams_asked: 16,
            streams_allowed: 16,
            ..Default::default()
        };
        H2Figures::count(&mut a.resets, 7);
        let mut b = H2Figures {
            streams_asked: 16,
            streams_allowed: 4,
            server_limit: 4,
            resent: 2,
            ..Default::default()
        };
        H2Figures::count(&mut b.resets, 7);
        H2Figures::count(&mut b.goaways, 0);
        a.merge(&b);
        a.merge(&H2Figures::default());
        assert_eq!(a.streams_allowed, 4);
        assert_eq!(a.resets["REFUSED_STREAM"], 2);
        assert_eq!(a.goaways["NO_ERROR"], 1);
        assert_eq!(a.resent, 2);
    }
}
