//! `--follow-redirects` in the engine: a 307/308 whose Location names a node of the target
//! (`src/net/redirect.rs` judges it) sends the same request again, on the same connection when
//! it names the same node, else on a second stream the connection keeps for the other node
//! (opened when first needed, kept alive, registered under `Token(i | HOP)`). While the
//! request is away, the connection's own stream is parked beside it; when the answer is
//! in, the two change places again. The request keeps its clock (its latency includes
//! every hop) and is counted once, for the node it was sent to.

use std::io;
use std::time::Instant;

use super::worker::EventLoop;
use crate::net::transport::Stream;

impl EventLoop<'_> {
    /// A 307/308 completed on connection `i` (`close`: its stream cannot carry more).
    /// Returns true when the request was sent on (or is being sent) to the Location's
    /// node; false when the redirect is the request's final answer (the reason noted).
    pub(super) fn follow(&mut self, i: usize, close: bool, now: Instant) -> bool {
        let Some(redirects) = self.core.redirects.as_ref() else {
            return false;
        };
        let c = &self.conns[i];
        let Some(req) = c.req else {
            return false;
        };
        let template = self.core.requests.get(c.link.node, req.op, req.caller);
        let location = c.parser.location().unwrap_or(&[]);
        let Some(node) = self.core.tally.follow(
            redirects,
            template,
            &c.captures,
            &req,
            location,
            c.link.node,
        ) else {
            return false;
        };
        if close {
            self.core.tally.stats.server_closes += 1;
        }
        let c = &mut self.conns[i];
        c.link.served += 1;
        if let Some(r) = c.req.as_mut() {
            r.hops += 1;
        }
        // (an answer before the whole request went out leaves the stream unusable)
        let reusable = !close && !c.request_unsent();
        c.pending.clear();
        if node == c.link.node {
            if reusable {
                self.write_request(i, now);
            } else {
                let hop = c.on_hop;
                self.connect_to(i, node, hop, now);
            }
            return true;
        }
        let current: Option<Stream> = if reusable { c.link.stream.take() } else { None };
        c.link.stream = None;
        let (current_node, current_served) = (c.link.node, c.link.served);
        let other = c.parked.take();
        let (other_node, other_served) = (c.parked_node, c.parked_served);
        if c.on_hop && node == other_node {
            // Back to the connection's own node: the hop's stream is parked.
            c.on_hop = false;
            c.parked = current;
            c.parked_node = current_node;
            c.parked_served = current_served;
            self.send_on(i, other, node, other_served, false, now);
        } else if c.on_hop {
            // A third node: the connection keeps one hop stream, now to that node.
            c.parked = other;
            c.parked_node = other_node;
            c.parked_served = other_served;
            self.connect_to(i, node, true, now);
        } else {
            // Away from the connection's own node, which is parked.
            c.on_hop = true;
            c.parked = current;
            c.parked_node = current_node;
            c.parked_served = current_served;
            let kept = other.filter(|_| other_node == node);
            self.send_on(i, kept, node, other_served, true, now);
        }
        true
    }

    /// Sends the request of `i` on `stream` (to `node`), or on a new one when there is none.
    fn send_on(
        &mut self,
        i: usize,
        stream: Option<Stream>,
        node: usize,
        served: u32,
        hop: bool,
        now: Instant,
    ) {
        match stream {
            Some(s) => {
                let c = &mut self.conns[i];
                c.link.stream = Some(s);
                c.link.node = node;
                c.link.served = served;
                self.write_request(i, now);
            }
            None => self.connect_to(i, node, hop, now),
        }
    }

    /// The answer to a hop is in: the connection's own stream takes its place again and
    /// the hop's is parked (dropped when `close` or when the request was not all sent).
    /// Returns true when the connection's own stream is gone (it must re-open).
    pub(super) fn end_hop(&mut self, i: usize, close: bool) -> bool {
        let c = &mut self.conns[i];
        let unsent = c.request_unsent();
        c.pending.clear();
        if close {
            self.core.tally.stats.server_closes += 1;
        }
        let hop = if close || unsent {
            None
        } else {
            c.link.stream.take()
        };
        let (hop_node, hop_served) = (c.link.node, c.link.served);
        c.link.stream = c.parked.take();
        c.link.node = c.parked_node;
        c.link.served = c.parked_served;
        c.parked = hop;
        c.parked_node = hop_node;
        c.parked_served = hop_served;
        c.on_hop = false;
        c.link.stream.is_none()
    }

    /// An event on the parked stream of `i`: the server closed it (or sent what nobody
    /// asked for), so it is dropped; the next hop opens a new one.
    pub(super) fn parked_event(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(s) = c.parked.as_mut() else {
            return;
        };
        match s.read(&mut self.core.buf) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            _ => {
                c.parked = None;
                self.core.tally.stats.server_closes += 1;
            }
        }
    }
}
