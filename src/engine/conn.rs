//! One HTTP/1.1 connection's state machine: its link (`link.rs`: socket and transport
//! phase; open, it is free or busy) and the request it carries. The connection's own
//! steps (writing a request, reading a response, noticing a timeout) touch only the
//! connection and return an `Exchange`; the worker (the one owner of statistics, the
//! pacer and the idle list) acts on it in `settle`, as wrk's small handlers do.

use std::io;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};

use super::link::{Link, LinkPhase};
use super::sendtie::SendTie;
use crate::error::io_text;
use crate::net::http::{Progress, ResponseParser};
use crate::net::transport::Stream;
use crate::stats::ErrorKind;
use crate::template::{Captures, Rng};

/// Marks the token of a connection's hop stream (a redirect followed to another node).
pub(super) const HOP: usize = 1 << (usize::BITS - 2);

#[derive(Clone, Copy, Debug)]
pub(super) struct Req {
    pub(super) op: usize,
    /// Its caller's templates (`driver::Requests`; 0: the run's token and namespace).
    pub(super) caller: u16,
    pub(super) intended: Instant,
    pub(super) sent: Instant,
    pub(super) measured: bool,
    /// Already re-sent once on a fresh connection after a stale keep-alive one failed.
    pub(super) resent: bool,
    /// Response bytes have begun to arrive.
    pub(super) started: bool,
    /// Redirects followed so far (`--follow-redirects`).
    pub(super) hops: u8,
    /// The generator's state when the request was first rendered: a request sent again
    /// after a redirect is rendered from it, so it is the same request.
    pub(super) rng: Rng,
    /// Its turn (`Template::next_turn`), kept for the same reason: the same pool item.
    pub(super) turn: u64,
}

pub(super) struct Conn {
    /// Its socket and transport phase (`link.rs`); open, it is free for a request or
    /// busy with `req`.
    pub(super) link: Link,
    pub(super) req: Option<Req>,
    /// Has carried a request (of this run).
    pub(super) started: bool,
    /// Unwritten request bytes after a short write.
    pub(super) pending: BytesMut,
    pub(super) parser: ResponseParser,
    /// Values captured from this connection's responses (empty when no operation captures).
    pub(super) captures: Captures,
    /// `--follow-redirects` (src/engine/hop.rs): the connection's other stream, kept
    /// alive, and its node: the hop's to another node while `stream` is the connection's
    /// own, the connection's own while `stream` carries a request to another node
    /// (`on_hop`). A hop stream is registered under `Token(i | HOP)`.
    pub(super) parked: Option<Stream>,
    pub(super) parked_node: usize,
    pub(super) parked_served: u32,
    pub(super) on_hop: bool,
    /// `--clock kernel-tx`: the request's last byte on the wire and its TX stamp.
    pub(super) tie: SendTie,
}

/// What a step on one connection came to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Exchange {
    /// Nothing final yet: more response bytes to come, or a write to finish.
    Pending,
    /// The whole response is in; `close`: the connection cannot carry another request.
    Done { status: u16, close: bool },
    /// The request failed; the connection is finished with.
    Failed { kind: ErrorKind, msg: String },
    /// A reused keep-alive connection turned out closed before the request reached the
    /// server: the request goes out once more on a fresh connection.
    Resend,
}

/// What reading from a connection came to, with what the worker counts.
#[derive(Debug)]
pub(super) struct Received {
    pub(super) outcome: Exchange,
    pub(super) bytes: u64,
    /// When the first bytes of this request's response arrived, if they came in this
    /// call: the clock read right after the read that delivered them (one vDSO clock
    /// read per response, no syscall), not the event loop's wake-up time.
    pub(super) first_byte: Option<Instant>,
    /// The server sent bytes after the response that nobody asked for.
    pub(super) extra: bool,
}

impl Conn {
    pub(super) fn new(now: Instant, captures: Captures) -> Conn {
        Conn {
            link: Link::new(now),
            req: None,
            started: false,
            pending: BytesMut::new(),
            parser: ResponseParser::new(),
            captures,
            parked: None,
            parked_node: 0,
            parked_served: 0,
            on_hop: false,
            tie: SendTie::default(),
        }
    }

    /// The node this connection belongs to (its own stream's, also while on a hop).
    pub(super) fn home(&self) -> usize {
        if self.on_hop {
            self.parked_node
        } else {
            self.link.node
        }
    }

    /// Open and carrying a request (being written or awaiting its response).
    pub(super) fn busy(&self) -> bool {
        self.link.phase == LinkPhase::Open && self.req.is_some()
    }

    /// Writes a rendered request; returns the bytes written and the outcome.
    pub(super) fn write(&mut self, bytes: &[u8]) -> (u64, Exchange) {
        let Some(stream) = self.link.stream.as_mut() else {
            return (0, Exchange::Pending);
        };
        match stream.write(bytes).and_then(|n| stream.flush().map(|_| n)) {
            Ok(n) => {
                self.link.handed += n as u64;
                if n < bytes.len() {
                    self.pending.clear();
                    self.pending.extend_from_slice(&bytes[n..]);
                }
                (n as u64, Exchange::Pending)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.pending.clear();
                self.pending.extend_from_slice(bytes);
                (0, Exchange::Pending)
            }
            Err(e) => (0, self.write_failed(&e)),
        }
    }

    /// Continues a short write when the socket becomes writable again.
    pub(super) fn continue_write(&mut self) -> (u64, Exchange) {
        let Some(stream) = self.link.stream.as_mut() else {
            return (0, Exchange::Pending);
        };
        if self.pending.is_empty() {
            return match stream.flush() {
                Ok(_) => (0, Exchange::Pending),
                Err(e) => (0, self.write_failed(&e)),
            };
        }
        match stream
            .write(&self.pending)
            .and_then(|n| stream.flush().map(|_| n))
        {
            Ok(n) => {
                self.link.handed += n as u64;
                self.pending.advance(n);
                (n as u64, Exchange::Pending)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => (0, Exchange::Pending),
            Err(e) => (0, self.write_failed(&e)),
        }
    }

    /// A write failed: on a reused keep-alive connection the server most likely closed it
    /// between responses, so the request goes out once more on a fresh connection.
    fn write_failed(&mut self, e: &io::Error) -> Exchange {
        let reused = self.link.served > 0;
        match self.req.as_mut() {
            Some(r) if reused && !r.resent => {
                r.resent = true;
                Exchange::Resend
            }
            _ => Exchange::Failed {
                kind: ErrorKind::Write,
                msg: format!("write failed: {}", io_text(e)),
            },
        }
    }

    /// Reads what the socket holds and feeds the response parser.
    pub(super) fn read(&mut self, buf: &mut [u8], peer_closed: bool) -> Received {
        let mut r = Received {
            outcome: Exchange::Pending,
            bytes: 0,
            first_byte: None,
            extra: false,
        };
        loop {
            let Some(stream) = self.link.stream.as_mut() else {
                return r;
            };
            // TLS without close_notify: an end that cannot complete a close-delimited body.
            let (read, clean) = match stream.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => (Ok((0, true)), false),
                other => (other, true),
            };
            match read {
                Ok((0, _)) => {
                    r.outcome = match self.parser.eof() {
                        Some(Progress::Done { status, .. }) if clean => Exchange::Done {
                            status,
                            close: true,
                        },
                        Some(_) => Exchange::Failed {
                            kind: ErrorKind::Read,
                            msg: "server closed the connection without TLS close_notify: the response may be truncated".into(),
                        },
                        _ => self.closed_early(peer_closed),
                    };
                    return r;
                }
                Ok((n, drained)) => {
                    r.bytes += n as u64;
                    if let Some(req) = self.req.as_mut()
                        && !req.started
                    {
                        req.started = true;
                        r.first_byte = Some(Instant::now());
                    }
                    match self.parser.feed(&buf[..n]) {
                        Ok(Progress::More) => {
                            if drained && !peer_closed {
                                return r;
                            }
                        }
                        Ok(Progress::Done {
                            status,
                            close,
                            extra,
                        }) => {
                            r.extra = extra;
                            r.outcome = Exchange::Done {
                                status,
                                close: close || extra || peer_closed,
                            };
                            return r;
                        }
                        Err(e) => {
                            r.outcome = Exchange::Failed {
                                kind: ErrorKind::Read,
                                msg: format!("bad response: {}", e.0),
                            };
                            return r;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let msg = if e.kind() == io::ErrorKind::InvalidData {
                        format!("TLS error: {}", io_text(&e))
                    } else {
                        format!("read failed: {}", io_text(&e))
                    };
                    r.outcome = Exchange::Failed {
                        kind: ErrorKind::Read,
                        msg,
                    };
                    return r;
                }
            }
        }
    }

    /// The server closed the connection before the response was complete.
    fn closed_early(&mut self, peer_closed: bool) -> Exchange {
        let reused = self.link.served > 0;
        let started = self.req.is_some_and(|r| r.started);
        match self.req.as_mut() {
            // A keep-alive connection that the server had already closed: the request
            // never reached it.
            Some(r) if !started && reused && !r.resent && peer_closed => {
                r.resent = true;
                Exchange::Resend
            }
            _ => Exchange::Failed {
                kind: ErrorKind::Read,
                msg: if started {
                    "server closed the connection mid-response"
                } else {
                    "server closed the connection without responding"
                }
                .into(),
            },
        }
    }

    /// `--clock kernel-tx`: once the request's last byte is handed to the stream (none of
    /// it pending), where it ends on the wire. Not for a redirect's hop, nor on a
    /// connection that has had one (its two streams count apart).
    pub(super) fn place_tie(&mut self) {
        if self.tie.placed()
            || !self.pending.is_empty()
            || self.parked.is_some()
            || self.req.is_none_or(|r| r.hops > 0)
        {
            return;
        }
        let end = self
            .link
            .stream
            .as_ref()
            .and_then(|s| s.wire_end(self.link.handed));
        self.tie.place(end);
    }

    /// `--clock kernel-tx`: the TX stamps queued on the stream (its error queue), each
    /// offered to the request's tie; how many were read.
    pub(super) fn drain_tx(&mut self) -> usize {
        let tie = &mut self.tie;
        match self.link.stream.as_mut() {
            Some(s) => crate::net::stamp::drain_tx(s.tcp(), |count, ns| tie.offer(count, ns)),
            None => 0,
        }
    }

    /// The server answered before reading the whole request (a 413, say): the rest of it
    /// would reach the server as the start of the next one, so the connection must go.
    pub(super) fn request_unsent(&self) -> bool {
        !self.pending.is_empty() || self.link.stream.as_ref().is_some_and(|s| !s.all_sent())
    }

    /// The request has waited `timeout` for its response.
    pub(super) fn timed_out(&self, now: Instant, timeout: Duration) -> Option<Exchange> {
        let r = self.req?;
        (self.busy() && now.saturating_duration_since(r.sent) >= timeout).then(|| {
            Exchange::Failed {
                kind: ErrorKind::Timeout,
                msg: format!(
                    "no response within {}",
                    crate::config::units::show_duration(timeout)
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    //! The connection's own steps against a peer socket held by the test itself: no
    //! server process, every byte chosen by the test.

    use super::*;
    use crate::net::transport;
    use std::io::{Read as _, Write as _};
    use std::net::{TcpListener, TcpStream};

    /// A connected `Conn` carrying a request, and the test's end of the socket.
    fn pair(served: u32) -> (Conn, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let now = Instant::now();
        let mut c = Conn::new(now, Captures::default());
        c.link.stream =
            Some(transport::connect(listener.local_addr().unwrap(), None, None).unwrap());
        let (peer, _) = listener.accept().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !c.link.stream.as_mut().unwrap().connected().unwrap_or(false) {
            assert!(Instant::now() < deadline, "no connection");
            std::thread::sleep(Duration::from_millis(1));
        }
        c.link.phase = LinkPhase::Open;
        c.link.served = served;
        c.req = Some(Req {
            op: 0,
            caller: 0,
            intended: now,
            sent: now,
            measured: true,
            resent: false,
            started: false,
            hops: 0,
            rng: Rng::new(1),
            turn: 0,
        });
        c.parser.reset(false, false);
        (c, peer)
    }

    /// Reads until the outcome is final or `limit` passes.
    fn read_until_final(c: &mut Conn, peer_closed: bool) -> Received {
        let mut buf = vec![0u8; 4096];
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let r = c.read(&mut buf, peer_closed);
            if r.outcome != Exchange::Pending || Instant::now() > deadline {
                return r;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";

    #[test]
    fn a_whole_response_is_done_and_counted() {
        let (mut c, mut peer) = pair(0);
        peer.write_all(OK).unwrap();
        let r = read_until_final(&mut c, false);
        assert_eq!(
            r.outcome,
            Exchange::Done {
                status: 200,
                close: false
            }
        );
        assert_eq!(r.bytes, OK.len() as u64);
        assert!(r.first_byte.is_some() && !r.extra);
        assert!(!c.request_unsent());
        // Bytes after the response: done, but the connection must close.
        let (mut c, mut peer) = pair(0);
        peer.write_all(&[OK, b"HTTP/1.1 200"].concat()).unwrap();
        let r = read_until_final(&mut c, false);
        assert!(r.extra);
        assert_eq!(
            r.outcome,
            Exchange::Done {
                status: 200,
                close: true
            }
        );
    }

    #[test]
    fn a_stale_keep_alive_connection_resends_once_then_fails() {
        // Reused (served > 0), closed by the server before any response byte: resend.
        let (mut c, peer) = pair(3);
        drop(peer);
        let r = read_until_final(&mut c, true);
        assert_eq!(r.outcome, Exchange::Resend);
        assert!(c.req.unwrap().resent);
        // The same again on the re-sent request: now it is a failure.
        let (mut c2, peer) = pair(3);
        c2.req.as_mut().unwrap().resent = true;
        drop(peer);
        let r = read_until_final(&mut c2, true);
        assert!(
            matches!(&r.outcome, Exchange::Failed { kind: ErrorKind::Read, msg } if msg.contains("without responding")),
            "{r:?}"
        );
        // A fresh connection closed without a response is a failure at once.
        let (mut c3, peer) = pair(0);
        drop(peer);
        let r = read_until_final(&mut c3, true);
        assert!(
            matches!(
                r.outcome,
                Exchange::Failed {
                    kind: ErrorKind::Read,
                    ..
                }
            ),
            "{r:?}"
        );
        // Closed mid-response: a failure, never a resend.
        let (mut c4, mut peer) = pair(3);
        peer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}")
            .unwrap();
        drop(peer);
        let r = read_until_final(&mut c4, true);
        assert!(
            matches!(&r.outcome, Exchange::Failed { msg, .. } if msg.contains("mid-response")),
            "{r:?}"
        );
    }

    #[test]
    fn a_write_to_a_reused_closed_connection_resends() {
        // The first write may still be accepted by the kernel; the reset shows on a later one.
        let write_to_closed = |served| {
            let (mut c, peer) = pair(served);
            drop(peer);
            std::thread::sleep(Duration::from_millis(20));
            let mut outcome = Exchange::Pending;
            for _ in 0..100 {
                outcome = c.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").1;
                if outcome != Exchange::Pending {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            outcome
        };
        assert_eq!(write_to_closed(1), Exchange::Resend);
        // Not reused: the same failure is a write error.
        let outcome = write_to_closed(0);
        assert!(
            matches!(
                outcome,
                Exchange::Failed {
                    kind: ErrorKind::Write,
                    ..
                }
            ),
            "{outcome:?}"
        );
    }

    #[test]
    fn an_early_answer_leaves_the_request_unsent() {
        let (mut c, mut peer) = pair(0);
        // A large request the peer never reads: the kernel buffers fill, the rest waits.
        let big = vec![b'x'; 16 << 20];
        let (n, outcome) = c.write(&big);
        assert_eq!(outcome, Exchange::Pending);
        assert!(n < big.len() as u64, "the whole 16 MiB went out at once");
        assert!(c.request_unsent());
        peer.write_all(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        let r = read_until_final(&mut c, false);
        assert_eq!(
            r.outcome,
            Exchange::Done {
                status: 413,
                close: false
            }
        );
        // The worker re-opens such a connection instead of reusing it.
        assert!(c.request_unsent());
        let mut sink = [0u8; 16];
        let _ = peer.set_nonblocking(true);
        let _ = peer.read(&mut sink);
    }

    #[test]
    fn a_request_times_out_only_after_the_timeout() {
        let (c, _peer) = pair(0);
        let sent = c.req.unwrap().sent;
        let timeout = Duration::from_secs(2);
        assert_eq!(
            c.timed_out(sent + Duration::from_millis(1999), timeout),
            None
        );
        assert!(matches!(
            c.timed_out(sent + timeout, timeout),
            Some(Exchange::Failed { kind: ErrorKind::Timeout, msg }) if msg == "no response within 2s"
        ));
        // Not busy (connecting, with its request): no request timeout.
        let mut idle = c;
        idle.link.phase = LinkPhase::Connecting;
        assert_eq!(idle.timed_out(sent + timeout, timeout), None);
    }
}
