//! Byte streams to the server, plain TCP or TLS behind one interface, so the connection
//! state machine never knows which it drives. Non-blocking; registered once with mio.
//!
//! TLS has two engines: the in-place record layer (src/net/tlsio.rs, the default) and, as a
//! cross-check of it, rustls's own buffered `ClientConnection` (`--tls-engine rustls`).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mio::net::TcpStream;
use rustls::pki_types::ServerName;
use socket2::{Domain, Protocol, Socket, Type};

use crate::net::tlsio::TlsStream;

/// Shared TLS settings for every connection of a thread.
#[derive(Clone)]
pub struct TlsConnector {
    pub config: Arc<rustls::ClientConfig>,
    pub name: ServerName<'static>,
    /// rustls's own record layer instead of the in-place one (`--tls-engine rustls`).
    pub rustls_records: bool,
    /// Several nodes: each node's own server name (SNI and certificate check), by node
    /// index; empty: `name` for every connection.
    pub node_names: Vec<ServerName<'static>>,
}

impl TlsConnector {
    /// The server name a connection to node `node` presents and verifies.
    pub fn name_for(&self, node: usize) -> &ServerName<'static> {
        self.node_names.get(node).unwrap_or(&self.name)
    }
}

pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
    Rustls(Box<RustlsStream>),
}

/// What a handshake step achieved.
#[derive(Debug, PartialEq, Eq)]
pub enum Handshake {
    Done,
    /// Waiting for the socket: try again on the next readiness event.
    Pending,
}

/// Local ports handed out by the caller instead of the kernel. With tens of thousands of
/// connections to one server, the kernel's search for a free ephemeral port costs time in
/// proportion to the ports in use once half the range is taken (Linux tries the ports of one
/// parity first, then walks them all again for every connect: quadratic over a run); a thread
/// that owns a slice of the range and walks it costs nothing.
///
/// Ports that other sockets hold (other programs' connections, their `TIME_WAIT`s, this run's
/// own connections once the walk wraps) fail `bind` at once with `EADDRINUSE`, and the next
/// port is tried on the same socket; after `PORT_TRIES` such ports in a row the kernel
/// chooses instead (it may reuse a loopback `TIME_WAIT`, which `bind` may not).
#[derive(Clone, Debug)]
pub struct PortSlice {
    first: u16,
    len: u16,
    /// Per local address (one for the wildcard address): the offset of its next port.
    next: Vec<u16>,
    /// `--source-addrs`: local addresses taken round-robin, one per connection, each with
    /// every port of the slice (`src/net/source_addrs.rs`); empty: the wildcard address.
    addrs: Vec<std::net::IpAddr>,
    addr_next: usize,
    /// The last walk found no free port: the next one gives up sooner.
    crowded: bool,
}

/// Ports of the slice one connect tries before leaving the choice to the kernel.
const PORT_TRIES: u32 = 32;
/// The same when the last walk found none free (the slice is taken, most likely by this
/// run's own connections and other programs' `TIME_WAIT`s).
const PORT_TRIES_CROWDED: u32 = 4;

impl PortSlice {
    /// Slice `part` of `parts` of the ephemeral port range `lo..=hi`.
    pub fn new(lo: u16, hi: u16, part: usize, parts: usize) -> Option<PortSlice> {
        let total = (hi as usize).checked_sub(lo as usize)? + 1;
        let len = total / parts.max(1);
        if len == 0 {
            return None;
        }
        // Start at a varying place, so that runs side by side do not walk the same ports.
        let start = (std::process::id() as usize).wrapping_mul(2_654_435_761) % len;
        Some(PortSlice {
            first: lo + (len * part) as u16,
            len: len as u16,
            next: vec![start as u16],
            addrs: Vec::new(),
            addr_next: 0,
            crowded: false,
        })
    }

    /// The same slice over each of `addrs` in turn.
    pub fn with_addrs(mut self, addrs: &[std::net::IpAddr]) -> PortSlice {
        self.next = vec![self.next[0]; addrs.len().max(1)];
        self.addrs = addrs.to_vec();
        self
    }

    /// The next connection's local address (by its index; none: the wildcard address).
    fn source(&mut self) -> (usize, Option<std::net::IpAddr>) {
        let a = self.addr_next;
        self.addr_next = (a + 1) % self.next.len();
        (a, self.addrs.get(a).copied())
    }

    /// The next port of the slice for local address `a`.
    fn port(&mut self, a: usize) -> u16 {
        let off = self.next[a];
        self.next[a] = (off + 1) % self.len;
        self.first + off
    }
}

/// Starts a non-blocking connect. The result shows on the first writable event.
pub fn connect(
    addr: SocketAddr,
    tls: Option<&TlsConnector>,
    ports: Option<&mut PortSlice>,
) -> io::Result<Stream> {
    connect_node(addr, tls, 0, ports)
}

/// `connect` to node `node` of several: TLS presents and verifies that node's own name.
pub fn connect_node(
    addr: SocketAddr,
    tls: Option<&TlsConnector>,
    node: usize,
    ports: Option<&mut PortSlice>,
) -> io::Result<Stream> {
    let tcp = TcpStream::from_std(start_connect(addr, ports)?.into());
    Ok(match tls {
        None => Stream::Plain(tcp),
        Some(c) if c.rustls_records => Stream::Rustls(Box::new(RustlsStream {
            conn: rustls::ClientConnection::new(c.config.clone(), c.name_for(node).clone())
                .map_err(io::Error::other)?,
            tcp,
            closed: false,
            wire_out: 0,
            tx_base: 0,
        })),
        Some(c) => Stream::Tls(Box::new(TlsStream::new(
            tcp,
            c.config.clone(),
            c.name_for(node).clone(),
        )?)),
    })
}

/// A TCP socket as every connection wants it, in three system calls: non-blocking and
/// close-on-exec from `socket` itself (`SOCK_NONBLOCK`; socket2 adds `SOCK_CLOEXEC`), no
/// delay, and a reset on close.
fn new_socket(addr: SocketAddr) -> io::Result<Socket> {
    let socket = Socket::new(
        Domain::for_address(addr),
        Type::from(libc::SOCK_STREAM | libc::SOCK_NONBLOCK),
        Some(Protocol::TCP),
    )?;
    socket.set_tcp_nodelay(true)?;
    // Closing resets the connection instead of leaving it in TIME_WAIT: tens of thousands
    // of connections closed by the client would otherwise hold the local ports for a
    // minute and fail the next run.
    socket.set_linger(Some(Duration::ZERO))?;
    Ok(socket)
}

/// `connect` on a non-blocking socket: in progress is success.
fn start(socket: &Socket, addr: SocketAddr) -> io::Result<()> {
    match socket.connect(&addr.into()) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(()),
        Err(e) => Err(e),
    }
}

fn local_addr(addr: SocketAddr, ip: Option<std::net::IpAddr>, port: u16) -> SocketAddr {
    match ip {
        Some(ip) => (ip, port).into(),
        None if addr.is_ipv4() => (std::net::Ipv4Addr::UNSPECIFIED, port).into(),
        None => (std::net::Ipv6Addr::UNSPECIFIED, port).into(),
    }
}

/// IP_BIND_ADDRESS_NO_PORT: a `bind` to an address with port 0 leaves the port to `connect`,
/// which may share it with connections to other servers (socket2 has no setter for it).
fn bind_address_no_port(socket: &Socket) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid descriptor, and a pointer to an int of the length given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn start_connect(addr: SocketAddr, ports: Option<&mut PortSlice>) -> io::Result<Socket> {
    let socket = new_socket(addr)?;
    let Some(ports) = ports else {
        start(&socket, addr)?;
        return Ok(socket);
    };
    let tries = if ports.crowded {
        PORT_TRIES_CROWDED
    } else {
        PORT_TRIES
    };
    let (a, ip) = ports.source();
    for _ in 0..tries {
        let port = ports.port(a);
        // No SO_REUSEADDR: a port held by any other socket (this run's own connections
        // included) fails here, cheaply, instead of at `connect` with a socket to throw away.
        match socket.bind(&local_addr(addr, ip, port).into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => continue,
            Err(e) => return Err(e),
        }
        ports.crowded = false;
        return match start(&socket, addr) {
            Ok(()) => Ok(socket),
            // The pair is bound but the connection's four-tuple is taken (by a socket that
            // shares the port): this socket is no use any more.
            Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => {
                kernel_port(new_socket(addr)?, addr, ip)
            }
            Err(e) => Err(e),
        };
    }
    ports.crowded = true;
    kernel_port(socket, addr, ip)
}

/// Every port tried is held: the kernel chooses one when connecting (from `ip` when given).
fn kernel_port(
    socket: Socket,
    addr: SocketAddr,
    ip: Option<std::net::IpAddr>,
) -> io::Result<Socket> {
    if let Some(ip) = ip {
        // The source address without a port yet: `connect` picks one that is free for
        // this server address.
        bind_address_no_port(&socket)?;
        socket.bind(&SocketAddr::new(ip, 0).into())?;
    }
    start(&socket, addr)?;
    Ok(socket)
}

impl Stream {
    pub fn tcp(&mut self) -> &mut TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &mut t.tcp,
            Stream::Rustls(t) => &mut t.tcp,
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_) | Stream::Rustls(_))
    }

    /// Whether the finished TLS handshake resumed an earlier session (plain: false).
    pub fn resumed(&self) -> bool {
        match self {
            Stream::Plain(_) => false,
            Stream::Tls(t) => t.resumed(),
            Stream::Rustls(t) => t.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
        }
    }

    /// True when the stream holds no request bytes still to be written (plain streams
    /// never hold any: the engine keeps a short write's remainder itself).
    pub fn all_sent(&self) -> bool {
        match self {
            Stream::Plain(_) => true,
            Stream::Tls(t) => t.all_sent(),
            Stream::Rustls(t) => !t.conn.wants_write(),
        }
    }

    /// `--clock kernel-tx`, once the stream is open: the kernel stamps the last byte of
    /// each write from now on, its byte counts starting here (`stamp::enable_tx`).
    pub fn enable_tx(&mut self) -> io::Result<()> {
        if let Stream::Rustls(t) = self {
            t.tx_base = t.wire_out;
        }
        crate::net::stamp::enable_tx(self.tcp())
    }

    /// `--clock kernel-tx`: where the last write ends on the wire, counted from the open,
    /// given the plaintext `handed` to `write` since then: that itself over plain TCP (a
    /// write is one `send`); over TLS the end of the records sealed so far (the caller
    /// asks right after the write, so those it carried); with rustls's own record layer,
    /// the bytes it wrote, once it holds none back (None while it does: not placed).
    #[inline]
    pub fn wire_end(&self, handed: u64) -> Option<u64> {
        match self {
            Stream::Plain(_) => Some(handed),
            Stream::Tls(t) => Some(t.sealed()),
            Stream::Rustls(t) => (!t.conn.wants_write()).then(|| t.wire_out - t.tx_base),
        }
    }

    /// After a writable event on a connecting socket: Ok(true) once connected.
    pub fn connected(&mut self) -> io::Result<bool> {
        // One system call (SO_ERROR), where `peer_addr` would be a second: on Linux a
        // socket still connecting polls as nothing at all (tcp_poll in SYN_SENT reports
        // only an error), so the first event means connected or failed. Should an event
        // ever come early, nothing is lost: a write to a socket still connecting would
        // block (EAGAIN) and be finished on the next writable event.
        match self.tcp().take_error()? {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }

    /// Drives the TLS handshake as far as the socket allows (plain: nothing to do).
    pub fn handshake(&mut self) -> io::Result<Handshake> {
        match self {
            Stream::Plain(_) => Ok(Handshake::Done),
            Stream::Tls(t) => Ok(if t.handshake()? {
                Handshake::Done
            } else {
                Handshake::Pending
            }),
            Stream::Rustls(t) => Ok(if t.handshake()? {
                Handshake::Done
            } else {
                Handshake::Pending
            }),
        }
    }

    /// Reads response bytes. Returns (bytes, drained): `drained` is true when the socket has
    /// no more data now, so the caller need not read again until the next event.
    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        match self {
            Stream::Plain(s) => {
                let n = crate::net::stamp::read(s, buf)?;
                // A short read from a stream socket means its receive queue is empty
                // (epoll(7)), so an edge-triggered reader may wait for the next edge.
                Ok((n, n < buf.len() && n > 0))
            }
            Stream::Tls(t) => t.read(buf),
            Stream::Rustls(t) => t.read(buf),
        }
    }

    /// Writes request bytes; may write fewer than given.
    #[inline]
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
            Stream::Rustls(t) => t.write(buf),
        }
    }

    /// Pushes out TLS records still buffered (plain: nothing). Ok(true) when all are out.
    pub fn flush(&mut self) -> io::Result<bool> {
        match self {
            Stream::Plain(_) => Ok(true),
            Stream::Tls(t) => t.flush(),
            Stream::Rustls(t) => t.flush(),
        }
    }
}

/// The cross-check TLS engine: rustls's `ClientConnection`, which buffers and copies
/// records itself, behind the same calls as the in-place engine (`TlsStream`), with the
/// same meaning for close_notify (the end of the stream; no writes after it) and for a
/// close without it (an `UnexpectedEof` error).
pub struct RustlsStream {
    tcp: TcpStream,
    conn: rustls::ClientConnection,
    /// The server sent close_notify.
    closed: bool,
    /// Bytes written to the socket, and (`--clock kernel-tx`) how many of them before the
    /// TX stamps' counts started (`Stream::enable_tx`).
    wire_out: u64,
    tx_base: u64,
}

/// A socket read that remembers whether it came back short (the socket is drained).
struct ShortRead<'a> {
    tcp: &'a mut TcpStream,
    short: bool,
}

impl Read for ShortRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = crate::net::stamp::read(self.tcp, buf)?;
        self.short = n > 0 && n < buf.len();
        Ok(n)
    }
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl RustlsStream {
    fn handshake(&mut self) -> io::Result<bool> {
        loop {
            if !self.flush()? {
                return Ok(false);
            }
            if !self.conn.is_handshaking() {
                return Ok(true);
            }
            match self.conn.read_tls(&mut self.tcp) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "server closed the connection during the TLS handshake",
                    ));
                }
                Ok(_) => {
                    self.conn.process_new_packets().map_err(tls_error)?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
    }

    /// Plaintext already decrypted, up to `buf`'s size.
    fn take_plain(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match self.conn.reader().read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // An error after some plaintext is reported on the next call.
                Err(_) if n > 0 => break,
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        loop {
            let n = self.take_plain(buf)?;
            if n > 0 {
                // More may be buffered (a full buffer), or the end after it: read again.
                return Ok((n, false));
            }
            if self.closed {
                return Ok((0, true));
            }
            let mut sock = ShortRead {
                tcp: &mut self.tcp,
                short: false,
            };
            // Ok(0), the end of the stream, is recorded by rustls, whose reader then tells
            // close_notify (Ok(0)) from a bare close (UnexpectedEof).
            self.conn.read_tls(&mut sock)?;
            let drained = sock.short;
            let state = self.conn.process_new_packets().map_err(tls_error)?;
            if state.peer_has_closed() {
                self.closed = true;
            }
            // A key update to answer.
            self.flush()?;
            let n = self.take_plain(buf)?;
            if n > 0 || self.closed {
                return Ok((n, drained && !self.closed && n < buf.len()));
            }
            if drained {
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
    }

    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the server closed the TLS connection (close_notify)",
            ));
        }
        self.conn.writer().write_all(data)?;
        self.flush()?;
        Ok(data.len())
    }

    /// Writes queued TLS data; Ok(true) when none is left.
    fn flush(&mut self) -> io::Result<bool> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.tcp) {
                Ok(n) => self.wire_out += n as u64,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    //! Local ports against sockets the test itself holds: which port each connection gets
    //! when ports of its slice are taken, and that it still connects when all of them are.

    use super::*;
    use std::net::{IpAddr, Ipv4Addr, TcpListener};

    /// `n` consecutive ports that are free now, below the ephemeral range (where no other
    /// program's connection takes them meanwhile).
    fn free_run(n: u16) -> u16 {
        let seed = (std::process::id() as u64).wrapping_mul(2_654_435_761)
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos() as u64)
                .unwrap_or(0);
        for k in 0..500u64 {
            let base = 20_000 + ((seed + k * 7919) % 11_000) as u16;
            if (base..base + n).all(|p| TcpListener::bind(("0.0.0.0", p)).is_ok()) {
                return base;
            }
        }
        panic!("no {n} consecutive free ports in 20000-31000");
    }

    /// A socket bound to `port` on 127.0.0.1 (no SO_REUSEADDR), as another program's
    /// connection or TIME_WAIT holds a port.
    fn hold(port: u16) -> Socket {
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        s.bind(&SocketAddr::from(([127, 0, 0, 1], port)).into())
            .unwrap();
        s
    }

    fn slice(first: u16, len: u16, addrs: &[IpAddr]) -> PortSlice {
        PortSlice {
            first,
            len,
            next: vec![0; addrs.len().max(1)],
            addrs: addrs.to_vec(),
            addr_next: 0,
            crowded: false,
        }
    }

    /// Connects through `ports` and waits for the server to accept; returns the local
    /// address the connection has.
    fn open(server: &TcpListener, ports: &mut PortSlice) -> (Stream, SocketAddr) {
        let mut s = connect(server.local_addr().unwrap(), None, Some(ports)).unwrap();
        let (_peer, from) = server.accept().unwrap();
        assert_eq!(s.tcp().local_addr().unwrap(), from);
        assert!(s.connected().unwrap());
        (s, from)
    }

    #[test]
    fn held_ports_are_skipped() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let b = free_run(8);
        let _held = [hold(b), hold(b + 1), hold(b + 3)];
        let mut ports = slice(b, 8, &[]);
        let (_s1, a1) = open(&server, &mut ports);
        let (_s2, a2) = open(&server, &mut ports);
        let (_s3, a3) = open(&server, &mut ports);
        assert_eq!([a1.port(), a2.port(), a3.port()], [b + 2, b + 4, b + 5]);
        assert!(!ports.crowded);
    }

    #[test]
    fn a_taken_slice_leaves_the_port_to_the_kernel() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let b = free_run(4);
        let _held: Vec<Socket> = (b..b + 4).map(hold).collect();
        let mut ports = slice(b, 4, &[]);
        let (_s1, a1) = open(&server, &mut ports);
        assert!(!(b..b + 4).contains(&a1.port()), "{a1}");
        assert!(ports.crowded);
        // This run's own connections hold the ports of the slice as well: two ports, three
        // connections to one server, every one of them open.
        let b = free_run(2);
        let mut ports = slice(b, 2, &[]);
        let (_s1, a1) = open(&server, &mut ports);
        let (_s2, a2) = open(&server, &mut ports);
        let (_s3, a3) = open(&server, &mut ports);
        assert_eq!([a1.port(), a2.port()], [b, b + 1]);
        assert!(!(b..b + 2).contains(&a3.port()), "{a3}");
    }

    #[test]
    fn source_addresses_hold_when_the_kernel_chooses_the_port() {
        let server = TcpListener::bind("0.0.0.0:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let to = SocketAddr::from(([127, 0, 0, 1], port));
        let b = free_run(2);
        let _held = [hold(b), hold(b + 1)];
        let src = [
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)),
        ];
        // Free on 127.0.0.2 and .3 (a port is held per address): the walk binds them.
        let mut ports = slice(b, 2, &src);
        let mut s = connect(to, None, Some(&mut ports)).unwrap();
        let (_p, from) = server.accept().unwrap();
        assert_eq!(from, SocketAddr::new(src[0], b));
        assert_eq!(s.tcp().local_addr().unwrap(), from);
        // Every pair of the slice taken: the kernel picks the port, the address stays.
        let _more = [
            hold_on(src[1], b),
            hold_on(src[0], b + 1),
            hold_on(src[1], b + 1),
        ];
        for want in [src[1], src[0]] {
            let _s = connect(to, None, Some(&mut ports)).unwrap();
            let (_p, from) = server.accept().unwrap();
            assert_eq!(from.ip(), want);
            assert!(!(b..b + 2).contains(&from.port()), "{from}");
        }
    }

    fn hold_on(ip: IpAddr, port: u16) -> Socket {
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        s.bind(&SocketAddr::new(ip, port).into()).unwrap();
        s
    }
}
