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
    phase: Phase,
}

enum Phase {
    Handshake(Box<Handshake>),
    Open(Box<Records>),
    /// Between the two, or after the hand-over failed.
    Broken,
}

struct Handshake {
    conn: UnbufferedClientConnection,
    incoming: Vec<u8>,
    in_len: usize,
    outgoing: Vec<u8>,
    out_len: usize,
    out_sent: usize,
}

/// What the handshake loop does after rustls has looked at the bytes so far.
enum Step {
    Again,
    Read,
    Transmitted,
    Done,
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
            phase: Phase::Handshake(Box::new(Handshake {
                conn,
                incoming: vec![0; 16 * 1024 + 512],
                in_len: 0,
                outgoing: vec![0; 4096],
                out_len: 0,
                out_sent: 0,
            })),
        })
    }

    /// Drives the handshake; Ok(true) once it is complete and records flow.
    pub fn handshake(&mut self) -> io::Result<bool> {
        let h = match &mut self.phase {
            Phase::Handshake(h) => h,
            Phase::Open(_) => return Ok(true),
            Phase::Broken => return Err(invalid("TLS connection unusable")),
        };
        loop {
            // Whatever rustls asked to send goes out first.
            while h.out_sent < h.out_len {
                match self.tcp.write(&h.outgoing[h.out_sent..h.out_len]) {
                    Ok(n) => h.out_sent += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) => return Err(e),
                }
            }
            let status = h.conn.process_tls_records(&mut h.incoming[..h.in_len]);
            let discard = status.discard;
            let step = match status.state {
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
                Ok(ConnectionState::EncodeTlsData(mut enc)) => loop {
                    match enc.encode(&mut h.outgoing[h.out_len..]) {
                        Ok(n) => {
                            h.out_len += n;
                            break Step::Again;
                        }
                        Err(EncodeError::InsufficientSize(s)) => {
                            let need = h.out_len + s.required_size;
                            h.outgoing.resize(need.max(h.outgoing.len() * 2), 0);
                        }
                        Err(e) => return Err(io::Error::other(e.to_string())),
                    }
                },
                Ok(ConnectionState::TransmitTlsData(t)) => {
                    // Everything encoded was written above.
                    t.done();
                    Step::Transmitted
                }
                Ok(ConnectionState::BlockedHandshake) => Step::Read,
                Ok(ConnectionState::WriteTraffic(_)) => Step::Done,
                Ok(ConnectionState::PeerClosed) | Ok(ConnectionState::Closed) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "server closed the connection during the TLS handshake",
                    ));
                }
                Ok(other) => {
                    return Err(invalid(format!(
                        "unexpected TLS state during the handshake: {other:?}"
                    )));
                }
            };
            h.incoming.copy_within(discard..h.in_len, 0);
            h.in_len -= discard;
            match step {
                Step::Again => {}
                Step::Transmitted => {
                    h.out_len = 0;
                    h.out_sent = 0;
                }
                Step::Read => {
                    if h.in_len == h.incoming.len() {
                        h.incoming.resize(h.incoming.len() * 2, 0);
                    }
                    match self.tcp.read(&mut h.incoming[h.in_len..]) {
                        Ok(0) => {
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "server closed the connection during the TLS handshake",
                            ));
                        }
                        Ok(n) => h.in_len += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                        Err(e) => return Err(e),
                    }
                }
                Step::Done => break,
            }
        }
        // Hand the keys over to the record layer, with any bytes already read.
        let Phase::Handshake(h) = std::mem::replace(&mut self.phase, Phase::Broken) else {
            return Ok(true);
        };
        let h = *h;
        let resumed = h.conn.handshake_kind() == Some(HandshakeKind::Resumed);
        let (secrets, kernel) = h
            .conn
            .dangerous_into_kernel_connection()
            .map_err(|e| invalid(format!("TLS key hand-over failed: {e}")))?;
        let tls13 = kernel.protocol_version() == ProtocolVersion::TLSv1_3;
        let mut records = Records {
            kernel: Some(kernel),
            tls13,
            tx: Direction::new(secrets.tx.1, secrets.tx.0, tls13)?,
            rx: Direction::new(secrets.rx.1, secrets.rx.0, tls13)?,
            carry: Vec::new(),
            handshake: Vec::new(),
            out: Vec::new(),
            out_sent: 0,
            closed: false,
            resumed,
        };
        records.carry.extend_from_slice(&h.incoming[..h.in_len]);
        self.phase = Phase::Open(Box::new(records));
        Ok(true)
    }

    /// True when every sealed record has been written to the socket.
    pub fn all_sent(&self) -> bool {
        match &self.phase {
            Phase::Open(r) => r.out_sent == r.out.len(),
            Phase::Handshake(_) | Phase::Broken => true,
        }
    }

    pub fn resumed(&self) -> bool {
        matches!(&self.phase, Phase::Open(r) if r.resumed)
    }

    /// Reads and decrypts into `buf`: (plaintext bytes, socket drained).
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        match &mut self.phase {
            Phase::Open(r) => r.read(&mut self.tcp, buf),
            Phase::Handshake(_) => Err(io::ErrorKind::WouldBlock.into()),
            Phase::Broken => Err(invalid("TLS connection unusable")),
        }
    }

    /// Encrypts all of `data`; what the socket does not take now stays queued (`flush`).
    /// Fails once the server has sent close_notify: it will not answer on this connection
    /// (even when it leaves TCP open, waiting for ours), so a request must not go out on it.
    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match &mut self.phase {
            Phase::Open(r) => {
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
            Phase::Handshake(_) => Err(io::ErrorKind::WouldBlock.into()),
            Phase::Broken => Err(invalid("TLS connection unusable")),
        }
    }

    /// Writes queued records; Ok(true) when none is left.
    pub fn flush(&mut self) -> io::Result<bool> {
        match &mut self.phase {
            Phase::Open(r) => r.flush(&mut self.tcp),
            Phase::Handshake(_) | Phase::Broken => Ok(true),
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
    /// The start of a post-handshake message split across records.
    handshake: Vec<u8>,
    /// Sealed records not yet written, and how much of them was.
    out: Vec<u8>,
    out_sent: usize,
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
            let have = self.take_carry(buf)?;
            let space = buf.len() - have;
            let n = match tcp.read(&mut buf[have..]) {
                Ok(n) => n,
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
#[cfg_attr(not(test), allow(dead_code))] // called by the fuzz targets and the tests
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
            handshake: Vec::new(),
            out: Vec::new(),
            out_sent: 0,
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
            handshake: Vec::new(),
            out: Vec::new(),
            out_sent: 0,
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
