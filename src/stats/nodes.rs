//! What each node of a cluster answered (`NodeStats`), and the windows of unavailability
//! a failover leaves (`Window`, tracked per thread by `WindowTracker`, merged over threads
//! and processes). Which node a connection goes to is `net::route`.

use serde::{Deserialize, Serialize};

use crate::stats::Hist;

/// What one node answered.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NodeStats {
    /// The node's address (`http://10.0.0.1:8200`).
    pub addr: String,
    /// Requests sent to it that completed or failed.
    pub requests: u64,
    pub ok: u64,
    /// Answers 429 from a rate-limit quota.
    #[serde(default)]
    pub throttled: u64,
    /// Answers 307 (a standby redirecting).
    #[serde(default)]
    pub redirects: u64,
    /// `--follow-redirects`: its redirects that were followed, and the requests it answered
    /// after another node's redirect.
    #[serde(default)]
    pub followed: u64,
    #[serde(default)]
    pub hops: u64,
    /// Latency of its completed requests.
    pub latency: Hist,
    /// Seconds during which it was loaded (rates divide by it).
    #[serde(default)]
    pub elapsed_s: f64,
    /// What the node was before the run (`active`, `standby`, ...).
    #[serde(default)]
    pub role: String,
}

impl NodeStats {
    pub fn merge(&mut self, o: &NodeStats) {
        if self.addr.is_empty() {
            self.addr.clone_from(&o.addr);
        }
        if self.role.is_empty() {
            self.role.clone_from(&o.role);
        }
        self.requests += o.requests;
        self.ok += o.ok;
        self.throttled += o.throttled;
        self.redirects += o.redirects;
        self.followed += o.followed;
        self.hops += o.hops;
        self.latency.add(&o.latency);
        self.elapsed_s = self.elapsed_s.max(o.elapsed_s);
    }
}

/// Adds per-node figures by node index.
pub fn merge_nodes(a: &mut Vec<NodeStats>, b: &[NodeStats]) {
    if a.len() < b.len() {
        a.resize(b.len(), NodeStats::default());
    }
    for (x, y) in a.iter_mut().zip(b) {
        x.merge(y);
    }
}

/// A time in which requests failed: from the first failed request to the first success
/// after it (on the node that then answered). Seconds from the start of the measured run.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Window {
    pub start_s: f64,
    /// None: nothing succeeded again before the run ended.
    pub end_s: Option<f64>,
    /// Requests that failed in it.
    pub failed: u64,
    /// The node of the first success after it.
    pub node_after: Option<usize>,
    /// When the window's first failed request was sent (a request already in flight when
    /// an earlier window closed is a straggler of that window: see `merge_windows`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sent_s: Option<f64>,
}

impl Window {
    pub fn length_s(&self) -> Option<f64> {
        self.end_s.map(|e| e - self.start_s)
    }
}

/// Windows of several threads (or processes) as one list: overlapping windows are one
/// window (the earliest start, the latest end, their failures added). A window that
/// begins after another ended, with a request sent before that end (a request that was
/// in flight to the old node when the new one already answered), is a straggler of the
/// earlier window: its failures join it, and the earlier end stays.
pub fn merge_windows(a: &mut Vec<Window>, b: &[Window]) {
    a.extend_from_slice(b);
    a.sort_by(|x, y| x.start_s.total_cmp(&y.start_s));
    let mut out: Vec<Window> = Vec::with_capacity(a.len());
    for w in a.drain(..) {
        if let Some(last) = out.last_mut()
            && let Some(end) = last.end_s
            && w.start_s > end
            && w.first_sent_s.is_some_and(|s| s < end)
        {
            last.failed += w.failed;
            if w.end_s.is_none() {
                last.end_s = None;
                last.node_after = None;
            }
            continue;
        }
        if let Some(last) = out.last_mut()
            && last.end_s.is_none_or(|e| w.start_s <= e)
        {
            last.failed += w.failed;
            last.end_s = match (last.end_s, w.end_s) {
                (Some(x), Some(y)) if y > x => {
                    last.node_after = w.node_after;
                    Some(y)
                }
                (Some(x), Some(_)) => Some(x),
                _ => None,
            };
            continue;
        }
        out.push(w);
    }
    *a = out;
}

/// `--nodes each`: puts a step's results at second `at` of the run's timeline (its
/// seconds, blocks of time and windows move by `at`), and returns where the next step begins: the
/// second after this step's last, so that no second of the timeline mixes two nodes.
pub fn place_step(stats: &mut crate::stats::Stats, at: u64) -> u64 {
    let last = stats.timeline.last_second();
    if at > 0 {
        stats.timeline.shift(at);
        // Its blocks of time too: blocks of their own, after the earlier nodes'.
        stats.blocks = stats.blocks.shifted(at.saturating_mul(1000));
        for w in &mut stats.windows {
            w.start_s += at as f64;
            w.end_s = w.end_s.map(|e| e + at as f64);
            w.first_sent_s = w.first_sent_s.map(|e| e + at as f64);
        }
    }
    let seconds = (stats.elapsed_s.max(0.0).ceil() as u64).max(last.map_or(0, |l| l + 1));
    at + seconds
}

/// One thread's view: a failure opens a window, the next success closes it.
#[derive(Debug, Default)]
pub struct WindowTracker {
    /// The open window: its start, its failures, when its first failed request was sent.
    open: Option<(f64, u64, f64)>,
}

impl WindowTracker {
    /// A request sent at `sent_s` failed at `at_s`.
    #[inline]
    pub fn failed(&mut self, at_s: f64, sent_s: f64) {
        match &mut self.open {
            Some((_, n, _)) => *n += 1,
            None => self.open = Some((at_s, 1, sent_s)),
        }
    }

    /// A success at `at_s` on `node` of a request sent at `sent_s`: the window it closes,
    /// if one was open. Only a request sent after the window opened closes it: one already
    /// in flight (a node that fails some requests while it still finishes earlier ones, as
    /// a node being sealed does) says nothing about recovery.
    #[inline]
    pub fn ok(&mut self, at_s: f64, sent_s: f64, node: usize) -> Option<Window> {
        if self.open.is_some_and(|(start, _, _)| sent_s < start) {
            return None;
        }
        let (start, failed, first_sent) = self.open.take()?;
        Some(Window {
            start_s: start,
            end_s: Some(at_s),
            failed,
            node_after: Some(node),
            first_sent_s: Some(first_sent),
        })
    }

    /// The run ended: a window still open stays open.
    pub fn finish(&mut self) -> Option<Window> {
        let (start, failed, first_sent) = self.open.take()?;
        Some(Window {
            start_s: start,
            end_s: None,
            failed,
            node_after: None,
            first_sent_s: Some(first_sent),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: f64, e: Option<f64>, n: u64) -> Window {
        Window {
            start_s: s,
            end_s: e,
            failed: n,
            node_after: Some(1),
            first_sent_s: None,
        }
    }

    fn sent(mut w: Window, at: f64) -> Window {
        w.first_sent_s = Some(at);
        w
    }

    #[test]
    fn a_straggler_joins_the_window_it_was_sent_in() {
        // Sent at 2.9, before the first window ended (3.7), failed at 3.72: one window.
        let mut a = vec![sent(w(2.8, Some(3.7), 100), 2.8)];
        merge_windows(&mut a, &[sent(w(3.72, Some(3.74), 1), 2.9)]);
        assert_eq!(a, vec![sent(w(2.8, Some(3.7), 101), 2.8)]);
        // Sent after it ended: a window of its own.
        let mut b = vec![sent(w(2.8, Some(3.7), 100), 2.8)];
        merge_windows(&mut b, &[sent(w(3.72, Some(3.74), 1), 3.71)]);
        assert_eq!(b.len(), 2);
        // A straggler whose thread never succeeded again leaves the window open.
        let mut c = vec![sent(w(2.8, Some(3.7), 100), 2.8)];
        merge_windows(&mut c, &[sent(w(3.72, None, 1), 2.9)]);
        assert_eq!((c.len(), c[0].end_s, c[0].failed), (1, None, 101));
    }

    #[test]
    fn overlapping_windows_become_one() {
        let mut a = vec![w(1.0, Some(3.0), 5), w(10.0, Some(11.0), 1)];
        merge_windows(&mut a, &[w(2.0, Some(4.0), 7)]);
        assert_eq!(a, vec![w(1.0, Some(4.0), 12), w(10.0, Some(11.0), 1)]);
        let mut b = vec![w(1.0, None, 2)];
        merge_windows(&mut b, &[w(5.0, Some(6.0), 3)]);
        assert_eq!(b, vec![w(1.0, None, 5)]);
    }

    #[test]
    fn a_tracker_opens_on_failure_and_closes_on_success() {
        let mut t = WindowTracker::default();
        assert!(t.ok(0.5, 0.4, 0).is_none());
        t.failed(1.0, 0.95);
        t.failed(1.5, 1.2);
        // A request sent before the first failure does not end the window.
        assert!(t.ok(1.6, 0.9, 0).is_none());
        assert_eq!(t.ok(2.0, 1.0, 1), Some(sent(w(1.0, Some(2.0), 2), 0.95)));
        assert!(t.finish().is_none());
        t.failed(3.0, 2.9);
        assert_eq!(t.finish().map(|x| x.end_s), Some(None));
    }

    #[test]
    fn each_step_has_its_own_seconds() {
        let step = |secs: &[u64], elapsed: f64| {
            let mut s = crate::stats::Stats::new(1);
            for &x in secs {
                s.timeline.record(x, true, Some(10));
            }
            s.elapsed_s = elapsed;
            s
        };
        // A step of 0.3 s, one of 2.5 s, one whose last request fell in a second past
        // its elapsed time: each begins a new second.
        let mut a = step(&[0], 0.3);
        let mut b = step(&[0, 1, 2], 2.5);
        b.windows.push(w(1.0, Some(2.0), 1));
        let mut c = step(&[0, 1], 1.0);
        assert_eq!(place_step(&mut a, 0), 1);
        assert_eq!(place_step(&mut b, 1), 4);
        assert_eq!(place_step(&mut c, 4), 6);
        assert_eq!(b.windows, vec![w(2.0, Some(3.0), 1)]);
        a.merge(&b);
        a.merge(&c);
        let secs: Vec<u64> = a.timeline.seconds().iter().map(|(i, _)| *i).collect();
        assert_eq!(secs, vec![0, 1, 2, 3, 4, 5]);
        assert!(a.timeline.seconds().iter().all(|(_, s)| s.requests == 1));
    }
}
