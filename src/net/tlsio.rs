//! TLS for the load engine without an allocation per request.
//!
//! rustls runs the handshake (through its unbuffered API, so that the bytes read from the
//! socket stay in buffers vblast owns) and then hands over the traffic keys through its
//! kernel-TLS interface (`dangerous_into_kernel_connection`). From then on records are
//! sealed and opened here with ring's AEAD, in place: a request is encrypted into a buffer
//! the connection keeps, and a response is decrypted inside the event loop's read buffer,
//! so neither direction allocates or copies more than once. rustls keeps what it is good at
//! after the handshake: storing TLS 1.3 session tickets and deriving keys on a key update.

use std::io::{self, Read, Write};
use std::sync::Arc;

use mio::net::TcpStream;
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::client::{ClientConnectionData, UnbufferedClientConnection};
use rustls::kernel::KernelConnection;
use rustls::pki_types::ServerName;
use rustls::unbuffered::{ConnectionState, EncodeError};
use rustls::{ConnectionTrafficSecrets, HandshakeKind, ProtocolVersion};

/// Largest plaintext in one record.
const MAX_FRAGMENT: usize = 16 * 1024;
/// Largest record body accepted (plaintext, content type, padding and tag).
const MAX_RECORD: usize = MAX_FRAGMENT + 256;
const HEADER: usize = 5;
const TAG: usize = 16;
/// TLS 1.2 AES-GCM carries an explicit 8-byte nonce in each record.
const EXPLICIT_NONCE: usize = 8;
/// Records sealed with one key before the connection is re-opened: well inside AES-GCM's
/// confidentiality limit (2^24.5 records), which this layer does not renew itself.
const MAX_RECORDS_PER_KEY: u64 = 1 << 23;

const APPLICATION_DATA: u8 = 23;
const HANDSHAKE: u8 = 22;
const ALERT: u8 = 21;
const NEW_SESSION_TICKET: u8 = 4;
const KEY_UPDATE: u8 = 24;
/// Largest post-handshake message accepted (a session ticket with its extensions); a
/// message may span any number of records up to this size.
const MAX_HANDSHAKE_MESSAGE: usize = 64 * 1024;

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// A TLS connection over a non-blocking socket.
pub struct TlsStream {
    pub tcp: TcpStream,
    phase: TlsPhase,
}

enum TlsPhase {
    Handshake(Box<HandshakeBuffers>),
    Open(Box<Records>),
    /// Between the two, or after the hand-over failed.
    Broken,
}

/// The handshake's connection, until the keys are handed over. Its bytes pass through the
/// thread's scratch buffers (`Scratch`); a connection keeps only what is left between two
/// readiness events: the start of a record split across reads, or what the socket did not
/// take. Both are empty while it waits for the server, which is most of a handshake's life
/// when thousands are opened at once, so a handshake in flight holds rustls's state alone.
struct HandshakeBuffers {
    conn: UnbufferedClientConnection,
    /// Read, not yet taken by rustls.
    incoming: Vec<u8>,
    /// Encoded, not yet written.
    outgoing: Vec<u8>,
    /// Application data the server sent before the handshake was done here (an HTTP/2
    /// server's SETTINGS), as rustls decrypted it: the record layer's first read.
    early: Vec<u8>,
}

/// One thread's buffers for every handshake it drives, one at a time: the bytes read from
/// the socket (grown when a flight does not fit, then kept) and the records rustls encodes.
struct Scratch {
    incoming: Vec<u8>,
    in_len: usize,
    outgoing: Vec<u8>,
    out_len: usize,
    out_sent: usize,
}

/// Room for the server's first flight (hello, certificates, finished) in one read.
const SCRATCH_IN: usize = 16 * 1024 + 512;
/// Room for a client's flight (hello; certificate and finished under mutual TLS).
const SCRATCH_OUT: usize = 4096;

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch {
        incoming: vec![0; SCRATCH_IN],
        in_len: 0,
        outgoing: vec![0; SCRATCH_OUT],
        out_len: 0,
        out_sent: 0,
    });
}

impl Scratch {
    /// Takes a connection's kept bytes into the scratch buffers.
    fn load(&mut self, h: &mut HandshakeBuffers) {
        let inc = std::mem::take(&mut h.incoming);
        if self.incoming.len() < inc.len() {
            self.incoming.resize(inc.len().next_power_of_two(), 0);
        }
        self.incoming[..inc.len()].copy_from_slice(&inc);
        self.in_len = inc.len();
        let out = std::mem::take(&mut h.outgoing);
        if self.outgoing.len() < out.len() {
            self.outgoing.resize(out.len().next_power_of_two(), 0);
        }
        self.outgoing[..out.len()].copy_from_slice(&out);
        self.out_len = out.len();
        self.out_sent = 0;
    }

    /// Gives back to the connection what it must keep until its next event (allocated
    /// only when there is something to keep).
    fn store(&mut self, h: &mut HandshakeBuffers) {
        h.incoming = self.incoming[..self.in_len].to_vec();
        h.outgoing = self.outgoing[self.out_sent..self.out_len].to_vec();
        self.in_len = 0;
        self.out_len = 0;
        self.out_sent = 0;
    }
}

/// What the handshake loop does after rustls has looked at the bytes so far.
enum HandshakeStep {
    Again,
    Read,
    Transmitted,
    Done,
}

fn closed_in_handshake() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "server closed the connection during the TLS handshake",
    )
}

/// Drives rustls over the scratch buffers until the handshake is done (Ok(true)) or waits
/// for the socket (Ok(false)).
fn drive(
    tcp: &mut TcpStream,
    conn: &mut UnbufferedClientConnection,
    s: &mut Scratch,
    early: &mut Vec<u8>,
) -> io::Result<bool> {
    loop {
        // Whatever rustls asked to send goes out first.
        while s.out_sent < s.out_len {
            match tcp.write(&s.outgoing[s.out_sent..s.out_len]) {
                Ok(n) => s.out_sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        let status = conn.process_tls_records(&mut s.incoming[..s.in_len]);
        let discard = status.discard;
        let step = match status.state {
            Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            Ok(ConnectionState::EncodeTlsData(mut enc)) => loop {
                match enc.encode(&mut s.outgoing[s.out_len..]) {
                    Ok(n) => {
                        s.out_len += n;
                        break HandshakeStep::Again;
                    }
                    Err(EncodeError::InsufficientSize(e)) => {
                        let need = s.out_len + e.required_size;
                        s.outgoing.resize(need.max(s.outgoing.len() * 2), 0);
                    }
                    Err(e) => return Err(io::Error::other(e.to_string())),
                }
            },
            Ok(ConnectionState::TransmitTlsData(t)) => {
                // Everything encoded was written above.
                t.done();
                HandshakeStep::Transmitted
            }
            Ok(ConnectionState::BlockedHandshake) => HandshakeStep::Read,
            Ok(ConnectionState::WriteTraffic(_)) => HandshakeStep::Done,
            // The server spoke first (an HTTP/2 server's SETTINGS) in the flight that ends
            // the handshake: rustls has decrypted it already (and counted it in `discard`),
            // so its plaintext is kept for the record layer's first read.
            Ok(ConnectionState::ReadTraffic(mut r)) => {
                while let Some(record) = r.next_record() {
                    let record =
                        record.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    early.extend_from_slice(record.payload);
                }
                HandshakeStep::Again
            }
            Ok(ConnectionState::PeerClosed) | Ok(ConnectionState::Closed) => {
                return Err(closed_in_handshake());
            }
            Ok(other) => {
                return Err(invalid(format!(
                    "unexpected TLS state during the handshake: {other:?}"
                )));
            }
        };
        s.incoming.copy_within(discard..s.in_len, 0);
        s.in_len -= discard;
        match step {
            HandshakeStep::Again => {}
            HandshakeStep::Transmitted => {
                s.out_len = 0;
                s.out_sent = 0;
            }
            HandshakeStep::Read => {
                if s.in_len == s.incoming.len() {
                    s.incoming.resize(s.incoming.len() * 2, 0);
                }
                match tcp.read(&mut s.incoming[s.in_len..]) {
                    Ok(0) => return Err(closed_in_handshake()),
                    Ok(n) => s.in_len += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) => return Err(e),
                }
            }
            HandshakeStep::Done => return Ok(true),
        }
    }
}

impl TlsStream {
    pub fn new(
        tcp: TcpStream,
        config: Arc<rustls::ClientConfig>,
        name: ServerName<'static>,
    ) -> io::Result<TlsStream> {
        let conn = UnbufferedClientConnection::new(config, name).map_err(io::Error::other)?;
        Ok(TlsStream {
            tcp,
            phase: TlsPhase::Handshake(Box::new(HandshakeBuffers {
                conn,
                incoming: Vec::new(),
                outgoing: Vec::new(),
                early: Vec::new(),
            })),
        })
    }

    /// Drives the handshake; Ok(true) once it is complete and records flow.
    pub fn handshake(&mut self) -> io::Result<bool> {
        let h = match &mut self.phase {
            TlsPhase::Handshake(h) => h,
            TlsPhase::Open(_) => return Ok(true),
            TlsPhase::Broken => return Err(invalid("TLS connection unusable")),
        };
        let tcp = &mut self.tcp;
        let done = SCRATCH.with_borrow_mut(|s| {
            s.load(h);
            let done = drive(tcp, &mut h.conn, s, &mut h.early);
            s.store(h);
            done
        })?;
        if !done {
            return Ok(false);
        }
        // Hand the keys over to the record layer, with any bytes already read.
        let TlsPhase::Handshake(h) = std::mem::replace(&mut self.phase, TlsPhase::Broken) else {
            return Ok(true);
        };
        let h = *h;
        let resumed = h.conn.handshake_kind() == Some(HandshakeKind::Resumed);
        let (secrets, kernel) = h
            .conn
            .dangerous_into_kernel_connection()
            .map_err(|e| invalid(format!("TLS key hand-over failed: {e}")))?;
        let tls13 = kernel.protocol_version() == ProtocolVersion::TLSv1_3;
        let records = Records {
            kernel: Some(kernel),
            tls13,
            tx: Direction::new(secrets.tx.1, secrets.tx.0, tls13)?,
            rx: Direction::new(secrets.rx.1, secrets.rx.0, tls13)?,
            carry: h.incoming,
            early: h.early,
            handshake: Vec::new(),
            out: Vec::new(),
            out_sent: 0,
            sealed: 0,
            closed: false,
            resumed,
        };
        self.phase = TlsPhase::Open(Box::new(records));
        Ok(true)
    }

    /// Bytes of records sealed since the handshake ended, written or queued: where the
    /// last byte handed to `write` ends on the wire (counted from the open).
    pub fn sealed(&self) -> u64 {
        match &self.phase {
            TlsPhase::Open(r) => r.sealed,
            TlsPhase::Handshake(_) | TlsPhase::Broken => 0,
        }
    }

    /// True when every sealed record has been written to the socket.
    pub fn all_sent(&self) -> bool {
        match &self.phase {
            TlsPhase::Open(r) => r.out_sent == r.out.len(),
            TlsPhase::Handshake(_) | TlsPhase::Broken => true,
        }
    }

    pub fn resumed(&self) -> bool {
        matches!(&self.phase, TlsPhase::Open(r) if r.resumed)
    }

    /// Reads and decrypts into `buf`: (plaintext bytes, socket drained).
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        match &mut self.phase {
            TlsPhase::Open(r) => r.read(&mut self.tcp, buf),
            TlsPhase::Handshake(_) => Err(io::ErrorKind::WouldBlock.into()),
            TlsPhase::Broken => Err(invalid("TLS connection unusable")),
        }
    }

    /// Encrypts all of `data`; what the socket does not take now stays queued (`flush`).
    /// Fails once the server has sent close_notify: it will not answer on this connection
    /// (even when it leaves TCP open, waiting for ours), so a request must not go out on it.
    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match &mut self.phase {
            TlsPhase::Open(r) => {
                if r.closed {
                    return Err(io::Error::new(
                        io::ErrorKind::BrokenPipe,
                        "the server closed the TLS connection (close_notify)",
                    ));
                }
                r.seal(APPLICATION_DATA, data)?;
                r.flush(&mut self.tcp)?;
                Ok(data.len())
            }
            TlsPhase::Handshake(_) => Err(io::ErrorKind::WouldBlock.into()),
            TlsPhase::Broken => Err(invalid("TLS connection unusable")),
        }
    }

    /// Writes queued records; Ok(true) when none is left.
    pub fn flush(&mut self) -> io::Result<bool> {
        match &mut self.phase {
            TlsPhase::Open(r) => r.flush(&mut self.tcp),
            TlsPhase::Handshake(_) | TlsPhase::Broken => Ok(true),
        }
    }
}

/// One direction's key, fixed IV and record sequence number.
struct Direction {
    key: LessSafeKey,
    iv: [u8; 12],
    seq: u64,
    /// TLS 1.2 AES-GCM: explicit nonce in the record, salt in the first 4 IV bytes.
    explicit: bool,
}

impl Direction {
    fn new(secrets: ConnectionTrafficSecrets, seq: u64, tls13: bool) -> io::Result<Direction> {
        let (alg, key, iv, gcm) = match &secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&aead::AES_128_GCM, key, iv, true),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&aead::AES_256_GCM, key, iv, true),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (&aead::CHACHA20_POLY1305, key, iv, false)
            }
            _ => return Err(invalid("unsupported TLS cipher suite")),
        };
        let key = UnboundKey::new(alg, key.as_ref()).map_err(|_| invalid("bad TLS traffic key"))?;
        let mut fixed = [0u8; 12];
        fixed.copy_from_slice(iv.as_ref());
        Ok(Direction {
            key: LessSafeKey::new(key),
            iv: fixed,
            seq,
            explicit: gcm && !tls13,
        })
    }

    /// The per-record nonce: the IV with the sequence number XORed into its last 8 bytes.
    fn nonce(&self) -> [u8; 12] {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }
}

/// The TLS 1.2 additional data: sequence number, type, version, plaintext length.
fn tls12_aad(seq: u64, typ: u8, len: usize) -> [u8; 13] {
    let mut a = [0u8; 13];
    a[..8].copy_from_slice(&seq.to_be_bytes());
    a[8] = typ;
    a[9] = 3;
    a[10] = 3;
    a[11..].copy_from_slice(&(len as u16).to_be_bytes());
    a
}

struct Records {
    /// rustls's view of the connection after the handshake (tickets, key updates).
    kernel: Option<KernelConnection<ClientConnectionData>>,
    tls13: bool,
    tx: Direction,
    rx: Direction,
    /// Bytes of an incomplete record, carried to the next read.
    carry: Vec<u8>,
    /// Plaintext received during the handshake, handed out before anything read later.
    early: Vec<u8>,
    /// The start of a post-handshake message split across records.
    handshake: Vec<u8>,
    /// Sealed records not yet written, and how much of them was.
    out: Vec<u8>,
    out_sent: usize,
    /// Bytes of records sealed since the handshake (`--clock kernel-tx`: where a
    /// request's last byte ends on the wire, `TlsStream::sealed`).
    sealed: u64,
    /// The server sent close_notify.
    closed: bool,
    resumed: bool,
}

impl Records {
    /// Seals `data` as records of type `typ` onto the output queue.
    fn seal(&mut self, typ: u8, data: &[u8]) -> io::Result<()> {
        if self.out_sent == self.out.len() {
            self.out.clear();
            self.out_sent = 0;
        }
        let before = self.out.len();
        for chunk in data.chunks(MAX_FRAGMENT) {
            let tx = &mut self.tx;
            if tx.seq >= MAX_RECORDS_PER_KEY {
                return Err(invalid("TLS record limit for this key reached"));
            }
            let nonce = tx.nonce();
            let (body_len, aad_12);
            if self.tls13 {
                body_len = chunk.len() + 1 + TAG;
                aad_12 = None;
            } else {
                body_len = chunk.len() + TAG + if tx.explicit { EXPLICIT_NONCE } else { 0 };
                aad_12 = Some(tls12_aad(tx.seq, typ, chunk.len()));
            }
            let outer = if self.tls13 { APPLICATION_DATA } else { typ };
            let header = [outer, 3, 3, (body_len >> 8) as u8, body_len as u8];
            self.out.extend_from_slice(&header);
            if tx.explicit {
                self.out.extend_from_slice(&nonce[4..]);
            }
            let start = self.out.len();
            self.out.extend_from_slice(chunk);
            if self.tls13 {
                self.out.push(typ);
            }
            let aad = match &aad_12 {
                Some(a) => Aad::from(&a[..]),
                None => Aad::from(&header[..]),
            };
            let tag = tx
                .key
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(nonce),
                    aad,
                    &mut self.out[start..],
                )
                .map_err(|_| invalid("TLS encryption failed"))?;
            self.out.extend_from_slice(tag.as_ref());
            tx.seq += 1;
        }
        self.sealed += (self.out.len() - before) as u64;
        Ok(())
    }

    fn flush(&mut self, tcp: &mut TcpStream) -> io::Result<bool> {
        while self.out_sent < self.out.len() {
            match tcp.write(&self.out[self.out_sent..]) {
                Ok(n) => self.out_sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    fn read(&mut self, tcp: &mut TcpStream, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        loop {
            if self.closed {
                return Ok((0, true));
            }
            if !self.early.is_empty() {
                // Not drained: the caller reads again, for what the socket holds.
                let n = self.early.len().min(buf.len());
                buf[..n].copy_from_slice(&self.early[..n]);
                self.early.drain(..n);
                return Ok((n, false));
            }
            let have = self.take_carry(buf)?;
            let space = buf.len() - have;
            // (stamps on: this read's kernel stamp is that of the records it completes)
            let n = match crate::net::stamp::read(tcp, &mut buf[have..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && have > 0 => {
                    // Whole records may be carried (the handshake read them with its last
                    // flight): opened now, as no readiness event will bring them again.
                    let plain = self.received(buf, have)?;
                    if plain > 0 {
                        return Ok((plain, true));
                    }
                    return Err(e);
                }
                Err(e) => {
                    self.carry.extend_from_slice(&buf[..have]);
                    return Err(e);
                }
            };
            if n == 0 {
                if have > 0 {
                    return Err(invalid("connection closed in the middle of a TLS record"));
                }
                // Without close_notify, the end of the stream is not authenticated: an
                // attacker (or a crash) cutting a response short looks the same.
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection without TLS close_notify",
                ));
            }
            let drained = n < space;
            let plain = self.received(buf, have + n)?;
            // A key update we must answer was queued: send it now.
            self.flush(tcp)?;
            if plain > 0 || self.closed {
                // After close_notify the caller must read once more to see the end of the
                // stream (Ok(0)), even when the server leaves TCP open and no event follows.
                return Ok((plain, drained && !self.closed));
            }
            if drained {
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
    }

    /// Puts the carried bytes of an incomplete record at the start of `buf`; returns
    /// how many.
    fn take_carry(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let have = self.carry.len();
        if have > buf.len() {
            return Err(invalid("TLS record larger than the read buffer"));
        }
        buf[..have].copy_from_slice(&self.carry);
        self.carry.clear();
        Ok(have)
    }

    /// Opens the records in the first `have` bytes of `buf` (carried and newly read) and
    /// carries the incomplete rest; returns the plaintext bytes now at the start of `buf`.
    fn received(&mut self, buf: &mut [u8], have: usize) -> io::Result<usize> {
        let (plain, used) = self.open_records(&mut buf[..have])?;
        self.carry.extend_from_slice(&buf[used..have]);
        Ok(plain)
    }

    /// Opens the complete records at the start of `buf` in place and moves their plaintext
    /// to the front. Returns (plaintext bytes, bytes of `buf` consumed).
    fn open_records(&mut self, buf: &mut [u8]) -> io::Result<(usize, usize)> {
        let mut at = 0;
        let mut plain = 0;
        while buf.len() - at >= HEADER && !self.closed {
            let outer = buf[at];
            let len = usize::from(u16::from_be_bytes([buf[at + 3], buf[at + 4]]));
            if buf[at + 1] != 3 {
                return Err(invalid(format!(
                    "not a TLS record (bytes {:02x} {:02x})",
                    buf[at],
                    buf[at + 1]
                )));
            }
            if len > MAX_RECORD {
                return Err(invalid("oversized TLS record"));
            }
            if buf.len() - at < HEADER + len {
                break;
            }
            let record = at..at + HEADER + len;
            at = record.end;
            let (typ, range) = self.open(outer, &mut buf[record.clone()])?;
            let range = record.start + range.start..record.start + range.end;
            if typ != HANDSHAKE && !self.handshake.is_empty() {
                // RFC 8446 5.1: the fragments of a handshake message are not interleaved
                // with other records.
                return Err(invalid("a TLS handshake message was interrupted"));
            }
            match typ {
                APPLICATION_DATA => {
                    let n = range.len();
                    buf.copy_within(range, plain);
                    plain += n;
                }
                HANDSHAKE => self.handshake_message(&buf[range])?,
                ALERT => {
                    let alert = &buf[range];
                    if alert.len() == 2 && alert[1] == 0 {
                        self.closed = true;
                    } else {
                        let desc = alert.get(1).copied().unwrap_or(0);
                        return Err(invalid(format!("the server sent TLS alert {desc}")));
                    }
                }
                other => return Err(invalid(format!("unexpected TLS record type {other}"))),
            }
        }
        Ok((plain, at))
    }

    /// Decrypts one whole record in place: (content type, plaintext range within it).
    fn open(&mut self, outer: u8, record: &mut [u8]) -> io::Result<(u8, std::ops::Range<usize>)> {
        let rx = &mut self.rx;
        let (header, body) = record.split_at_mut(HEADER);
        let fail = || invalid("a TLS record failed to decrypt");
        let result = if self.tls13 {
            if outer != APPLICATION_DATA {
                return Err(invalid(format!("unexpected TLS 1.3 record type {outer}")));
            }
            let nonce = Nonce::assume_unique_for_key(rx.nonce());
            let plain = rx
                .key
                .open_in_place(nonce, Aad::from(&header[..]), body)
                .map_err(|_| fail())?;
            // Inner plaintext: content, type, zero padding.
            let end = plain.iter().rposition(|&b| b != 0).ok_or_else(fail)?;
            (plain[end], HEADER..HEADER + end)
        } else {
            let skip = if rx.explicit { EXPLICIT_NONCE } else { 0 };
            if body.len() < skip + TAG {
                return Err(fail());
            }
            let nonce = if rx.explicit {
                let mut n = [0u8; 12];
                n[..4].copy_from_slice(&rx.iv[..4]);
                n[4..].copy_from_slice(&body[..EXPLICIT_NONCE]);
                n
            } else {
                rx.nonce()
            };
            let aad = tls12_aad(rx.seq, outer, body.len() - skip - TAG);
            let plain = rx
                .key
                .open_within(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(aad),
                    body,
                    skip..,
                )
                .map_err(|_| fail())?;
            (outer, HEADER..HEADER + plain.len())
        };
        rx.seq += 1;
        Ok(result)
    }

    /// Post-handshake messages: TLS 1.3 session tickets are stored for resumption, key
    /// updates renew the keys (and are answered when the server asks). A message may be
    /// split over several records: its start is kept until the rest arrives.
    fn handshake_message(&mut self, fragment: &[u8]) -> io::Result<()> {
        if !self.tls13 {
            // TLS 1.2 renegotiation requests are ignored, as the RFC allows.
            return Ok(());
        }
        let mut pending = std::mem::take(&mut self.handshake);
        let whole = if pending.is_empty() {
            fragment
        } else {
            pending.extend_from_slice(fragment);
            &pending[..]
        };
        let used = self.handshake_messages(whole)?;
        let rest = &whole[used..];
        if !rest.is_empty() {
            // Keeps the partial message; a key update cannot be followed by one (below), so
            // the rest is still under the keys it was sent with.
            let mut kept = Vec::with_capacity(rest.len());
            kept.extend_from_slice(rest);
            self.handshake = kept;
        }
        Ok(())
    }

    /// Handles the complete messages at the start of `msgs`; returns the bytes they took.
    fn handshake_messages(&mut self, msgs: &[u8]) -> io::Result<usize> {
        let mut at = 0;
        while msgs.len() - at >= 4 {
            let typ = msgs[at];
            let len = u32::from_be_bytes([0, msgs[at + 1], msgs[at + 2], msgs[at + 3]]) as usize;
            if len > MAX_HANDSHAKE_MESSAGE {
                return Err(invalid("oversized TLS handshake message"));
            }
            let Some(payload) = msgs.get(at + 4..at + 4 + len) else {
                break;
            };
            at += 4 + len;
            if typ == KEY_UPDATE && at < msgs.len() {
                // RFC 8446 5.1: handshake messages must not span a key change.
                return Err(invalid("TLS data after a key update in the same record"));
            }
            let Some(kernel) = self.kernel.as_mut() else {
                continue;
            };
            match typ {
                NEW_SESSION_TICKET => {
                    // A ticket rustls cannot use is no reason to drop the connection.
                    let _ = kernel.handle_new_session_ticket(payload);
                }
                KEY_UPDATE => {
                    let (seq, secrets) = kernel
                        .update_rx_secret()
                        .map_err(|e| invalid(format!("TLS key update failed: {e}")))?;
                    self.rx = Direction::new(secrets, seq, true)?;
                    if payload.first() == Some(&1) {
                        // update_requested: answer with our own update, then switch.
                        self.seal(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 0])?;
                        let kernel = self
                            .kernel
                            .as_mut()
                            .ok_or_else(|| invalid("no TLS state"))?;
                        let (seq, secrets) = kernel
                            .update_tx_secret()
                            .map_err(|e| invalid(format!("TLS key update failed: {e}")))?;
                        self.tx = Direction::new(secrets, seq, true)?;
                    }
                }
                _ => {}
            }
        }
        Ok(at)
    }
}

/// The record layer under a fuzzer (fuzz/, `tools/fuzz.sh`), without a socket: a sender
/// seals records the input describes, optionally corrupts them, and a receiver opens the
/// wire delivered in the pieces the input chooses, through the same carry and open steps
/// as a socket read. Nothing may panic; a stream of intact application-data records must
/// come out exactly as it went in. The unit tests replay the seed corpus through it.
#[doc(hidden)]
/// Called by the fuzz targets (fuzz/) and the tests.
pub mod fuzz {
    use super::*;

    /// The engine's read buffer size.
    const READ_BUF: usize = 64 * 1024;

    fn records(suite: u8, tls13: bool) -> Records {
        let (alg, gcm): (&'static aead::Algorithm, bool) = match suite % 3 {
            0 => (&aead::AES_128_GCM, true),
            1 => (&aead::AES_256_GCM, true),
            _ => (&aead::CHACHA20_POLY1305, false),
        };
        let key = vec![0x5a; alg.key_len()];
        Records {
            kernel: None,
            tls13,
            tx: Direction {
                key: LessSafeKey::new(UnboundKey::new(alg, &key).expect("key length")),
                iv: [3; 12],
                seq: 0,
                explicit: gcm && !tls13,
            },
            rx: Direction {
                key: LessSafeKey::new(UnboundKey::new(alg, &key).expect("key length")),
                iv: [3; 12],
                seq: 0,
                explicit: gcm && !tls13,
            },
            carry: Vec::new(),
            early: Vec::new(),
            handshake: Vec::new(),
            out: Vec::new(),
            out_sent: 0,
            sealed: 0,
            closed: false,
            resumed: false,
        }
    }

    /// Delivers `wire` to `rx` in the given pieces, as socket reads into the engine's
    /// buffer would; returns the plaintext, or the error that ended the connection.
    fn deliver(rx: &mut Records, wire: &[u8], cuts: &[usize]) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; READ_BUF];
        let mut plain = Vec::new();
        let mut at = 0;
        let mut cuts = cuts.iter().copied().filter(|&c| c > 0 && c < wire.len());
        while at < wire.len() && !rx.closed {
            let end = cuts.find(|&c| c > at).unwrap_or(wire.len());
            while at < end && !rx.closed {
                let have = rx.take_carry(&mut buf)?;
                let n = (end - at).min(buf.len() - have);
                buf[have..have + n].copy_from_slice(&wire[at..at + n]);
                at += n;
                let got = rx.received(&mut buf, have + n)?;
                plain.extend_from_slice(&buf[..got]);
            }
        }
        Ok(plain)
    }

    /// Byte 0: bits 0-1 the cipher suite, bit 2 TLS 1.3, bit 7 raw mode (the rest of the
    /// input is the wire itself, cut every 1 + byte 1 bytes). Otherwise records follow, each
    /// as [type, length, flags, payload...]: flags bit 0 repeats the payload 64 times (a large
    /// record), bit 1 flips one bit of the sealed record (at the offset in the next byte),
    /// bit 2 cuts the wire after the record, bit 3 cuts it inside the record (next byte).
    pub fn records_input(input: &[u8]) {
        let [mode, rest @ ..] = input else {
            return;
        };
        let tls13 = mode & 4 != 0;
        let mut rx = records(mode & 3, tls13);
        if mode & 0x80 != 0 {
            let step = 1 + usize::from(rest.first().copied().unwrap_or(0));
            let cuts: Vec<usize> = (1..rest.len() / step + 1).map(|k| k * step).collect();
            let _ = deliver(&mut rx, rest, &cuts);
            return;
        }
        let mut tx = records(mode & 3, tls13);
        let mut wire = Vec::new();
        let mut cuts = Vec::new();
        let mut sent = Vec::new();
        let mut clean = true;
        let mut data = rest;
        while let [typ, len, flags, more @ ..] = data {
            let take = usize::from(*len).min(more.len());
            let (payload, after) = more.split_at(take);
            data = after;
            let payload = if flags & 1 != 0 {
                payload.repeat(64)
            } else {
                payload.to_vec()
            };
            let mut next_byte = || {
                let (b, after) = data.split_first().map_or((0, data), |(b, a)| (*b, a));
                data = after;
                usize::from(b)
            };
            tx.out.clear();
            tx.out_sent = 0;
            if tx.seal(*typ, &payload).is_err() {
                return;
            }
            let start = wire.len();
            wire.extend_from_slice(&tx.out);
            if flags & 2 != 0 && !tx.out.is_empty() {
                let at = start + next_byte() * 7 % tx.out.len();
                wire[at] ^= 1 << (next_byte() % 8);
                clean = false;
            }
            if flags & 4 != 0 {
                cuts.push(wire.len());
            }
            if flags & 8 != 0 {
                let inside = next_byte() * 31 % (wire.len() - start).max(1);
                cuts.push(start + inside);
            }
            if *typ != APPLICATION_DATA {
                clean = false;
            }
            sent.extend_from_slice(&payload);
        }
        cuts.sort_unstable();
        let got = deliver(&mut rx, &wire, &cuts);
        if clean {
            match got {
                Ok(plain) => assert!(plain == sent, "application data changed on the way"),
                Err(e) => panic!("intact records refused: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(alg: &'static aead::Algorithm, key: &[u8], tls13: bool) -> Direction {
        Direction {
            key: LessSafeKey::new(UnboundKey::new(alg, key).unwrap()),
            iv: [7; 12],
            seq: 5,
            explicit: !tls13 && alg != &aead::CHACHA20_POLY1305,
        }
    }

    /// A sender and a receiver sharing one key, as the two ends of a connection would.
    fn pair(alg: &'static aead::Algorithm, tls13: bool) -> (Records, Records) {
        let key = vec![9u8; alg.key_len()];
        let make = || Records {
            kernel: None,
            tls13,
            tx: dir(alg, &key, tls13),
            rx: dir(alg, &key, tls13),
            carry: Vec::new(),
            early: Vec::new(),
            handshake: Vec::new(),
            out: Vec::new(),
            out_sent: 0,
            sealed: 0,
            closed: false,
            resumed: false,
        };
        (make(), make())
    }

    #[test]
    fn records_round_trip_for_every_suite_and_version() {
        for alg in [
            &aead::AES_128_GCM,
            &aead::AES_256_GCM,
            &aead::CHACHA20_POLY1305,
        ] {
            for tls13 in [true, false] {
                let (mut a, mut b) = pair(alg, tls13);
                let small = b"GET / HTTP/1.1\r\n\r\n".to_vec();
                let big: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
                a.seal(APPLICATION_DATA, &small).unwrap();
                a.seal(APPLICATION_DATA, &big).unwrap();
                // 1 + 3 records went out, each with its own sequence number.
                assert_eq!(a.tx.seq, 5 + 4);
                let mut wire = a.out.clone();
                // Fed in two parts: the first ends inside a record.
                let cut = wire.len() / 2;
                let (plain1, used1) = b.open_records(&mut wire[..cut]).unwrap();
                assert!(used1 < cut);
                let mut got = wire[..plain1].to_vec();
                let mut rest = wire[used1..].to_vec();
                let (plain2, used2) = b.open_records(&mut rest).unwrap();
                assert_eq!(used2, rest.len());
                got.extend_from_slice(&rest[..plain2]);
                let mut want = small.clone();
                want.extend_from_slice(&big);
                assert_eq!(got, want, "{alg:?} tls13={tls13}");
            }
        }
    }

    #[test]
    fn tampering_and_alerts() {
        let (mut a, mut b) = pair(&aead::AES_128_GCM, true);
        a.seal(APPLICATION_DATA, b"hello").unwrap();
        let mut wire = a.out.clone();
        let last = wire.len() - 1;
        wire[last] ^= 1;
        assert!(b.open_records(&mut wire).is_err());

        let (mut a, mut b) = pair(&aead::AES_128_GCM, true);
        a.seal(ALERT, &[1, 0]).unwrap();
        let mut wire = a.out.clone();
        assert_eq!(b.open_records(&mut wire).unwrap().0, 0);
        assert!(b.closed);

        let (mut a, mut b) = pair(&aead::AES_256_GCM, false);
        a.seal(ALERT, &[2, 40]).unwrap();
        let mut wire = a.out.clone();
        let e = b.open_records(&mut wire).unwrap_err();
        assert!(e.to_string().contains("alert 40"), "{e}");

        let (_, mut b) = pair(&aead::AES_128_GCM, true);
        let mut junk = b"HTTP/1.1 400 Bad Request\r\n".to_vec();
        assert!(b.open_records(&mut junk).is_err());
    }

    /// Issue 8, defect 7: a post-handshake message split over several records is put back
    /// together (here a 60-byte ticket in 7-byte pieces, then data), not refused.
    #[test]
    fn handshake_messages_span_records() {
        let (mut a, mut b) = pair(&aead::AES_128_GCM, true);
        let mut ticket = vec![NEW_SESSION_TICKET, 0, 0, 56];
        ticket.extend((0..56u8).map(|i| i.wrapping_mul(7)));
        for piece in ticket.chunks(7) {
            a.seal(HANDSHAKE, piece).unwrap();
        }
        a.seal(APPLICATION_DATA, b"HTTP/1.1 200 OK\r\n").unwrap();
        let mut wire = a.out.clone();
        let (plain, used) = b.open_records(&mut wire).unwrap();
        assert_eq!(used, wire.len());
        assert_eq!(&wire[..plain], b"HTTP/1.1 200 OK\r\n");
        assert!(b.handshake.is_empty());
        // Two messages in one record, the second split over the next one.
        let (mut a, mut b) = pair(&aead::CHACHA20_POLY1305, true);
        let mut two = ticket.clone();
        two.extend_from_slice(&ticket[..10]);
        a.seal(HANDSHAKE, &two).unwrap();
        let mut wire = a.out.clone();
        b.open_records(&mut wire).unwrap();
        assert_eq!(b.handshake.len(), 10);
        a.out.clear();
        a.seal(HANDSHAKE, &ticket[10..]).unwrap();
        let mut wire = a.out.clone();
        b.open_records(&mut wire).unwrap();
        assert!(b.handshake.is_empty());
    }

    #[test]
    fn bad_post_handshake_sequences() {
        // Data in the middle of a split message.
        let (mut a, mut b) = pair(&aead::AES_128_GCM, true);
        a.seal(HANDSHAKE, &[NEW_SESSION_TICKET, 0, 0, 9, 1])
            .unwrap();
        a.seal(APPLICATION_DATA, b"x").unwrap();
        let e = b.open_records(&mut a.out.clone()).unwrap_err();
        assert!(e.to_string().contains("interrupted"), "{e}");
        // Anything after a key update in its record.
        let (mut a, mut b) = pair(&aead::AES_128_GCM, true);
        a.seal(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 0, NEW_SESSION_TICKET])
            .unwrap();
        let e = b.open_records(&mut a.out.clone()).unwrap_err();
        assert!(e.to_string().contains("key update"), "{e}");
        // A message larger than any ticket, announced in its first bytes.
        let (mut a, mut b) = pair(&aead::AES_128_GCM, true);
        a.seal(HANDSHAKE, &[NEW_SESSION_TICKET, 1, 0, 1]).unwrap();
        let e = b.open_records(&mut a.out.clone()).unwrap_err();
        assert!(e.to_string().contains("oversized"), "{e}");
    }

    /// The per-key record limit: the record at the limit is refused, with a clear error,
    /// before anything is sealed with a worn key (also in the middle of a long write).
    #[test]
    fn records_per_key_limit() {
        let (mut a, mut b) = pair(&aead::AES_128_GCM, true);
        a.tx.seq = MAX_RECORDS_PER_KEY - 1;
        b.rx.seq = MAX_RECORDS_PER_KEY - 1;
        a.seal(APPLICATION_DATA, b"last").unwrap();
        let mut wire = a.out.clone();
        assert_eq!(b.open_records(&mut wire).unwrap().0, 4);
        let sent = a.out.len();
        let e = a.seal(APPLICATION_DATA, b"one too many").unwrap_err();
        assert!(e.to_string().contains("record limit"), "{e}");
        assert_eq!(a.out.len(), sent, "a record was sealed past the limit");
        assert_eq!(a.tx.seq, MAX_RECORDS_PER_KEY);

        // A write of two records with one left: the second is refused.
        let (mut a, _) = pair(&aead::CHACHA20_POLY1305, false);
        a.tx.seq = MAX_RECORDS_PER_KEY - 1;
        let e = a
            .seal(APPLICATION_DATA, &[0u8; MAX_FRAGMENT + 1])
            .unwrap_err();
        assert!(e.to_string().contains("record limit"), "{e}");
        assert_eq!(a.tx.seq, MAX_RECORDS_PER_KEY);
    }

    /// Known answers: records built by another implementation from the RFCs (see
    /// tools/tls-vectors.py), so that a wrong nonce or additional data cannot pass as it
    /// would in a round trip through this module's own code.
    mod known_answers {
        use super::super::*;

        const REQUEST: &[u8] = b"GET /v1/secret/data/s042 HTTP/1.1\r\nHost: 127.0.0.1:8200\r\n\r\n";
        const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";

        // Generated by tools/tls-vectors.py (pyca/cryptography); do not edit by hand.
        const IV: &str = "a0a1a2a3a4a5a6a7a8a9aaab";
        const SEQ: u64 = 0x123456;
        /// (what, algorithm, key, TLS 1.3, record of REQUEST sealed at SEQ)
        const SEALED: &[(&str, &aead::Algorithm, &str, bool, &str)] = &[
            (
                "TLS 1.3 AES_128_GCM",
                &aead::AES_128_GCM,
                "000102030405060708090a0b0c0d0e0f",
                true,
                "170303004c6e4c3b82c597260391e4a35b9a65c78f3be27a74c7809db1e302ed436902650f55e30270c833ad603f124deade1be39d6e33083d7f355d8a6ec4725d17df9f27c8d4ebdce70c285b095fe3ce",
            ),
            (
                "TLS 1.3 AES_256_GCM",
                &aead::AES_256_GCM,
                "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
                true,
                "170303004c7a3950d8fb3ea494e9ffa7de4001286564379ef3012b00ce5aeb2329abf33cc4e79321e7315662ff694782fdb6855b2a2c5d814a5a8a9b7f6602e2cfb54abdaf4fee7d09ad26a3762618867c",
            ),
            (
                "TLS 1.3 CHACHA20_POLY1305",
                &aead::CHACHA20_POLY1305,
                "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
                true,
                "170303004cf01866cfed616f3e2c387e1eb2994c35a696273aab0ca2685a0de092019937dfd6aec874157b78363f435f67da134e3c2ec8d1a6099e8a9803bc3f3c0f633660789236b7040b11a5f14a438f",
            ),
            (
                "TLS 1.2 AES_128_GCM",
                &aead::AES_128_GCM,
                "000102030405060708090a0b0c0d0e0f",
                false,
                "1703030053a4a5a6a7a8bb9efd6e4c3b82c597260391e4a35b9a65c78f3be27a74c7809db1e302ed436902650f55e30270c833ad603f124deade1be39d6e33083d7f355d8a6ec47250c7eb84a382ea497d81f88307ef6b43",
            ),
            (
                "TLS 1.2 AES_256_GCM",
                &aead::AES_256_GCM,
                "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
                false,
                "1703030053a4a5a6a7a8bb9efd7a3950d8fb3ea494e9ffa7de4001286564379ef3012b00ce5aeb2329abf33cc4e79321e7315662ff694782fdb6855b2a2c5d814a5a8a9b7f6602e29c61fd5039800072055a9a8de34c0eac",
            ),
            (
                "TLS 1.2 CHACHA20_POLY1305",
                &aead::CHACHA20_POLY1305,
                "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
                false,
                "170303004bf01866cfed616f3e2c387e1eb2994c35a696273aab0ca2685a0de092019937dfd6aec874157b78363f435f67da134e3c2ec8d1a6099e8a9803bc3f0029cad549a6eefbb2e0075be5c61a47",
            ),
        ];
        /// (what, algorithm, key, TLS 1.3, length and SHA-256 of 20000 bytes (i % 251) sealed from SEQ)
        const SEALED_BIG: &[(&str, &aead::Algorithm, &str, bool, usize, &str)] = &[
            (
                "TLS 1.3 AES_128_GCM",
                &aead::AES_128_GCM,
                "000102030405060708090a0b0c0d0e0f",
                true,
                20044,
                "9bd051a6088848aa1c3da2465ad63662db66f463038ff5bc63165e8f2b0a0316",
            ),
            (
                "TLS 1.2 AES_256_GCM",
                &aead::AES_256_GCM,
                "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
                false,
                20058,
                "3a60796d3b8bed86a35bb76eb329166384409cf820cce294346b10df0e50541a",
            ),
            (
                "TLS 1.2 CHACHA20_POLY1305",
                &aead::CHACHA20_POLY1305,
                "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
                false,
                20042,
                "fbb9942b3ae2adab5e8007cf1a8ae4122d290957558d0a10ea3a38d1746fea88",
            ),
        ];
        const OPEN_SEQ: u64 = 0xabcde0f1;
        /// Records a server could send at OPEN_SEQ: (what, algorithm, key, TLS 1.3, record).
        const RECEIVED: &[(&str, &aead::Algorithm, &str, bool, &str)] = &[
            (
                "TLS 1.3 AES_128_GCM, 7 bytes of padding",
                &aead::AES_128_GCM,
                "000102030405060708090a0b0c0d0e0f",
                true,
                "17030300405c1c2193d32a16e8b8c2cc77d7f2e68c3f4a1155e491acaac1e686f65664766128c63a91620440d2f3d445431895591f1835b873a0aff2021c594e0e2f791e56",
            ),
            (
                "TLS 1.3 CHACHA20_POLY1305",
                &aead::CHACHA20_POLY1305,
                "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
                true,
                "1703030039a04f31c42697665df2780551fd1da35918bd86ff869a3fb849ce8bdeec53db76de4443665fa49b20babcca2f61f687feaebce75f943eedca16",
            ),
            (
                "TLS 1.2 AES_128_GCM, explicit nonce unrelated to the sequence number",
                &aead::AES_128_GCM,
                "000102030405060708090a0b0c0d0e0f",
                false,
                "1703030040f0f1f2f3f4f5f6f726f79cb8ee06e8df19b5a96543d438a1bc7ed2b9fbf04db4049f274a03fae8d05a18967cded89a700e39c479e7f99d7b16cc7c9997645be6",
            ),
            (
                "TLS 1.2 CHACHA20_POLY1305",
                &aead::CHACHA20_POLY1305,
                "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
                false,
                "1703030038a04f31c42697665df2780551fd1da35918bd86ff869a3fb849ce8bdeec53db76de4443665fa49b20e69f59d092ff68c284ed8e9a652c74d6",
            ),
        ];
        /// close_notify at OPEN_SEQ, TLS 1.3 AES_256_GCM (inner type alert, 3 bytes of padding).
        const CLOSE_NOTIFY: &str = "1703030016ec9c935d290bba456e4a05743c6a334a8126f5e1c2ee";

        fn hex(s: &str) -> Vec<u8> {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        }

        fn to_hex(b: &[u8]) -> String {
            b.iter().map(|x| format!("{x:02x}")).collect()
        }

        /// Both directions keyed with `key`, the vectors' IV and sequence number `seq`.
        fn keyed(alg: &'static aead::Algorithm, key: &[u8], tls13: bool, seq: u64) -> Records {
            let dir = || Direction {
                key: LessSafeKey::new(UnboundKey::new(alg, key).unwrap()),
                iv: hex(IV).try_into().unwrap(),
                seq,
                explicit: !tls13 && alg != &aead::CHACHA20_POLY1305,
            };
            Records {
                kernel: None,
                tls13,
                tx: dir(),
                rx: dir(),
                carry: Vec::new(),
                early: Vec::new(),
                handshake: Vec::new(),
                out: Vec::new(),
                out_sent: 0,
                sealed: 0,
                closed: false,
                resumed: false,
            }
        }

        #[test]
        fn sealed_records_are_the_known_answers() {
            for &(what, alg, key, tls13, wire) in SEALED {
                let mut r = keyed(alg, &hex(key), tls13, SEQ);
                r.seal(APPLICATION_DATA, REQUEST).unwrap();
                assert_eq!(to_hex(&r.out), wire, "{what}");
                assert_eq!(r.tx.seq, SEQ + 1, "{what}");
            }
            let big: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
            for &(what, alg, key, tls13, len, sha256) in SEALED_BIG {
                let mut r = keyed(alg, &hex(key), tls13, SEQ);
                r.seal(APPLICATION_DATA, &big).unwrap();
                assert_eq!(r.out.len(), len, "{what}");
                let digest = ring::digest::digest(&ring::digest::SHA256, &r.out);
                assert_eq!(to_hex(digest.as_ref()), sha256, "{what}");
                assert_eq!(r.tx.seq, SEQ + 2, "{what}: two records");
            }
        }

        #[test]
        fn known_records_open() {
            for &(what, alg, key, tls13, wire) in SEALED {
                let mut r = keyed(alg, &hex(key), tls13, SEQ);
                let mut buf = hex(wire);
                let (plain, used) = r.open_records(&mut buf).unwrap();
                assert_eq!(used, buf.len(), "{what}");
                assert_eq!(&buf[..plain], REQUEST, "{what}");
                assert_eq!(r.rx.seq, SEQ + 1, "{what}");
            }
            for &(what, alg, key, tls13, wire) in RECEIVED {
                let mut r = keyed(alg, &hex(key), tls13, OPEN_SEQ);
                let mut buf = hex(wire);
                let (plain, used) = r.open_records(&mut buf).unwrap();
                assert_eq!(used, buf.len(), "{what}");
                assert_eq!(&buf[..plain], RESPONSE, "{what}");
                assert_eq!(r.rx.seq, OPEN_SEQ + 1, "{what}");
                // The sequence number is part of every record's nonce or additional data: a
                // receiver one record out of step must refuse it.
                let mut r = keyed(alg, &hex(key), tls13, OPEN_SEQ + 1);
                let mut buf = hex(wire);
                assert!(
                    r.open_records(&mut buf).is_err(),
                    "{what}: opened out of step"
                );
            }
            let key: Vec<u8> = (0x20..0x40).collect();
            let mut r = keyed(&aead::AES_256_GCM, &key, true, OPEN_SEQ);
            let mut buf = hex(CLOSE_NOTIFY);
            assert_eq!(r.open_records(&mut buf).unwrap(), (0, buf.len()));
            assert!(r.closed, "close_notify not seen");
        }
    }

    /// Post-handshake messages from a real TLS 1.3 peer: a rustls server in this process,
    /// over loopback TCP, sends session tickets and key updates that ask for ours in return
    /// (nginx cannot be made to send key updates). Requests and responses must keep flowing
    /// under the new keys in both directions, through responses of several records.
    mod key_update {
        use super::super::*;
        use std::net::TcpListener;
        use std::time::{Duration, Instant};

        const ROUNDS: usize = 4;
        /// Rounds before whose response the server updates its keys and asks for ours.
        const UPDATES: [usize; 2] = [0, 2];

        fn body(round: usize) -> String {
            if round == 2 {
                "x".repeat(40_000)
            } else {
                format!("hello {round}")
            }
        }

        fn server_config(suite: rustls::SupportedCipherSuite) -> Arc<rustls::ServerConfig> {
            let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
            let key = rustls::pki_types::PrivateKeyDer::Pkcs8(
                rustls::pki_types::PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()),
            );
            let mut provider = rustls::crypto::ring::default_provider();
            provider.cipher_suites = vec![suite];
            let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
                .with_protocol_versions(&[&rustls::version::TLS13])
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![ck.cert.der().clone()], key)
                .unwrap();
            Arc::new(cfg)
        }

        /// The server: answers ROUNDS requests, updating its keys before the UPDATES
        /// responses; returns the requests it could read.
        fn serve(
            listener: TcpListener,
            cfg: Arc<rustls::ServerConfig>,
        ) -> Result<Vec<String>, String> {
            listener.set_nonblocking(true).unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut sock = loop {
                match listener.accept() {
                    Ok((s, _)) => break s,
                    Err(_) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(e) => return Err(format!("accept: {e}")),
                }
            };
            sock.set_nonblocking(false).unwrap();
            sock.set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            sock.set_write_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut conn = rustls::ServerConnection::new(cfg).map_err(|e| e.to_string())?;
            let mut requests = Vec::new();
            for round in 0..ROUNDS {
                let mut req = Vec::new();
                while !req.ends_with(b"\r\n\r\n") {
                    let mut buf = [0u8; 4096];
                    let n = rustls::Stream::new(&mut conn, &mut sock)
                        .read(&mut buf)
                        .map_err(|e| format!("round {round}: reading the request: {e}"))?;
                    if n == 0 {
                        return Err(format!("round {round}: the client closed"));
                    }
                    req.extend_from_slice(&buf[..n]);
                }
                requests.push(String::from_utf8_lossy(&req).into_owned());
                if UPDATES.contains(&round) {
                    conn.refresh_traffic_keys().map_err(|e| e.to_string())?;
                }
                let body = body(round);
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                rustls::Stream::new(&mut conn, &mut sock)
                    .write_all(resp.as_bytes())
                    .map_err(|e| format!("round {round}: writing the response: {e}"))?;
            }
            Ok(requests)
        }

        /// The whole response is in `resp` (a head with Content-Length, and that many bytes).
        fn complete(resp: &[u8]) -> bool {
            let Some(end) = resp.windows(4).position(|w| w == b"\r\n\r\n") else {
                return false;
            };
            let head = String::from_utf8_lossy(&resp[..end]);
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            resp.len() >= end + 4 + len
        }

        #[test]
        fn server_key_updates_are_followed_and_answered() {
            let opts = crate::net::tls::TlsOptions {
                insecure: true,
                resume: true,
                ..Default::default()
            };
            let mut client = (*crate::net::tls::client_config(&opts).unwrap()).clone();
            client.enable_secret_extraction = true;
            let client = Arc::new(client);
            for suite in [
                rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
                rustls::crypto::ring::cipher_suite::TLS13_AES_256_GCM_SHA384,
                rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
            ] {
                let what = format!("{:?}", suite.suite());
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let cfg = server_config(suite);
                let server = std::thread::spawn(move || serve(listener, cfg));

                let sock = std::net::TcpStream::connect(addr).unwrap();
                sock.set_nonblocking(true).unwrap();
                let name = ServerName::try_from("localhost").unwrap();
                let mut tls =
                    TlsStream::new(TcpStream::from_std(sock), client.clone(), name).unwrap();
                let deadline = Instant::now() + Duration::from_secs(20);
                let wait = |step: &str| {
                    assert!(Instant::now() < deadline, "{what}: timed out: {step}");
                    std::thread::sleep(Duration::from_millis(1));
                };
                while !tls.handshake().unwrap() {
                    wait("handshake");
                }
                let mut buf = vec![0u8; 64 * 1024];
                for round in 0..ROUNDS {
                    let req = format!("GET /r{round} HTTP/1.1\r\nHost: localhost\r\n\r\n");
                    assert_eq!(tls.write(req.as_bytes()).unwrap(), req.len());
                    while !tls.flush().unwrap() {
                        wait("write");
                    }
                    let mut resp = Vec::new();
                    while !complete(&resp) {
                        match tls.read(&mut buf) {
                            Ok((0, _)) => panic!("{what}: round {round}: connection closed"),
                            Ok((n, _)) => resp.extend_from_slice(&buf[..n]),
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait("read"),
                            Err(e) => panic!("{what}: round {round}: {e}"),
                        }
                    }
                    let text = String::from_utf8(resp).unwrap();
                    assert!(
                        text.ends_with(&body(round)),
                        "{what}: round {round}: {text:.80}"
                    );
                }
                // Our keys were renewed after the last update: one request since then,
                // sealed under the new key from sequence number 0.
                let TlsPhase::Open(r) = &tls.phase else {
                    panic!("{what}: not open")
                };
                assert_eq!(r.tx.seq, 1, "{what}: client keys not renewed");
                // The response of round 2 (three records) and round 3 under the new key.
                assert_eq!(r.rx.seq, 4, "{what}: server keys not followed");
                let requests = server
                    .join()
                    .unwrap()
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(requests.len(), ROUNDS, "{what}");
                for (round, req) in requests.iter().enumerate() {
                    assert!(req.starts_with(&format!("GET /r{round} ")), "{what}: {req}");
                }
            }
        }
    }

    /// Every seed of the fuzz corpus (and every crash the fuzzer found, kept there) goes
    /// through the fuzz harness's checks.
    #[test]
    fn fuzz_seeds_replay() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/tls_records");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            fuzz::records_input(&std::fs::read(&path).unwrap());
            n += 1;
        }
        assert!(n >= 20, "{n} seeds in {dir}");
    }
}
