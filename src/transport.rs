//! Byte streams to the server, plain TCP or TLS behind one interface, so the connection
//! state machine never knows which it drives. Non-blocking; registered once with mio.
//!
//! TLS has two engines: the in-place record layer (src/tlsio.rs, the default) and, as a
//! cross-check of it, rustls's own buffered `ClientConnection` (`--tls-engine rustls`).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mio::net::TcpStream;
use rustls::pki_types::ServerName;
use socket2::{Domain, Protocol, Socket, Type};

use crate::tlsio::TlsStream;

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
/// proportion to the ports in use (quadratic over a run); a thread that owns a slice of the
/// range and walks it costs nothing.
#[derive(Clone, Debug)]
pub struct PortSlice {
    first: u16,
    len: u16,
    next: u16,
    /// `--source-addrs`: local addresses taken round-robin, each with every port of the
    /// slice (`src/source_addrs.rs`); empty: the wildcard address.
    addrs: Vec<std::net::IpAddr>,
    addr_next: usize,
}

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
            next: start as u16,
            addrs: Vec::new(),
            addr_next: 0,
        })
    }

    /// The same slice over each of `addrs` in turn.
    pub fn with_addrs(mut self, addrs: &[std::net::IpAddr]) -> PortSlice {
        self.addrs = addrs.to_vec();
        self
    }

    /// The next local (address, port): the port moves on once every address has had it.
    fn take(&mut self) -> (Option<std::net::IpAddr>, u16) {
        let p = self.first + self.next;
        let ip = self.addrs.get(self.addr_next).copied();
        self.addr_next += 1;
        if self.addr_next >= self.addrs.len() {
            self.addr_next = 0;
            self.next = (self.next + 1) % self.len;
        }
        (ip, p)
    }
}

/// One line for an I/O error: its text without the "(os error N)" suffix.
pub fn io_error_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.split_once(" (os error") {
        Some((text, _)) => text.to_string(),
        None => s,
    }
}

fn is_port_clash(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EADDRINUSE) | Some(libc::EADDRNOTAVAIL)
    )
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
    let tcp = match ports {
        None => start_connect(addr, None)?,
        Some(ports) => {
            let mut tries = 0;
            loop {
                let (ip, port) = ports.take();
                match start_connect(addr, Some((ip, port))) {
                    Err(e) if is_port_clash(&e) && tries < 64 => tries += 1,
                    // Every port tried is taken (by other programs): let the kernel choose.
                    Err(e) if is_port_clash(&e) => {
                        break start_connect(addr, ip.map(|ip| (Some(ip), 0)))?;
                    }
                    other => break other?,
                }
            }
        }
    };
    Ok(match tls {
        None => Stream::Plain(tcp),
        Some(c) if c.rustls_records => Stream::Rustls(Box::new(RustlsStream {
            conn: rustls::ClientConnection::new(c.config.clone(), c.name_for(node).clone())
                .map_err(io::Error::other)?,
            tcp,
            closed: false,
        })),
        Some(c) => Stream::Tls(Box::new(TlsStream::new(
            tcp,
            c.config.clone(),
            c.name_for(node).clone(),
        )?)),
    })
}

fn start_connect(
    addr: SocketAddr,
    local: Option<(Option<std::net::IpAddr>, u16)>,
) -> io::Result<TcpStream> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    socket.set_tcp_nodelay(true)?;
    // Closing resets the connection instead of leaving it in TIME_WAIT: tens of thousands
    // of connections closed by the client would otherwise hold the local ports for a
    // minute and fail the next run.
    socket.set_linger(Some(Duration::ZERO))?;
    if let Some((ip, port)) = local {
        socket.set_reuse_address(true)?;
        let local: SocketAddr = match ip {
            Some(ip) => (ip, port).into(),
            None if addr.is_ipv4() => (std::net::Ipv4Addr::UNSPECIFIED, port).into(),
            None => (std::net::Ipv6Addr::UNSPECIFIED, port).into(),
        };
        socket.bind(&local.into())?;
    }
    match socket.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(TcpStream::from_std(socket.into()))
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

    /// After a writable event on a connecting socket: Ok(true) once connected.
    pub fn connected(&mut self) -> io::Result<bool> {
        let tcp = self.tcp();
        if let Some(e) = tcp.take_error()? {
            return Err(e);
        }
        match tcp.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
            Err(e) => Err(e),
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
                let n = s.read(buf)?;
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
}

/// A socket read that remembers whether it came back short (the socket is drained).
struct ShortRead<'a> {
    tcp: &'a mut TcpStream,
    short: bool,
}

impl Read for ShortRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.tcp.read(buf)?;
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
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}
