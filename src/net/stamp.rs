//! The kernel's receive timestamps (`--clock kernel`): `SO_TIMESTAMPING` asked on a
//! socket (software RX stamps), and the socket read done by `recvmsg`, which keeps the
//! `SCM_TIMESTAMPING` control message: for TCP, the stamp of the last segment that read
//! took. The engine clears the stamp before it reads a connection and takes it after the
//! read that completed a response (over TLS, the read that carried the record completing
//! it; over HTTP/2, the read that held the frame ending the stream).
//!
//! Kernel stamps are `CLOCK_REALTIME`; the engine counts in `Instant` (`CLOCK_MONOTONIC`).
//! A stamp is carried over when it is taken: the monotonic instant now, less the time
//! the real-time clock says has passed since the stamp (two vDSO clock reads, no system
//! call).
//!
//! The stamp and whether reads ask for one are the event-loop thread's own (a thread owns
//! its connections outright, `src/engine/mod.rs`): no lock, no allocation (the control
//! buffer is on the stack), and with the user clock the read is the plain `read(2)` it
//! always was.
//!
//! `--clock kernel-tx` also takes each request's send from the kernel: its TX software
//! stamp of the last byte of the write that carried the request's last byte
//! (`enable_tx`: `SOF_TIMESTAMPING_TX_SOFTWARE | OPT_TSONLY | OPT_ID | OPT_ID_TCP`, set
//! when a connection opens, so that the kernel's byte count starts there). The kernel
//! queues one stamp per write on the socket's error queue, with the count of bytes sent
//! since the open through the write's last byte (`ee_data` + 1); `drain_tx` reads them, a
//! batch per `recvmmsg`, only when the event loop was told the queue is not empty
//! (`EPOLLERR`). The engine ties a stamp to the request whose last byte (on the wire: a
//! TLS record's end) that write carried.
//!
//! `VBLAST_TEST_REFUSE_TIMESTAMPING=1` makes `enable` fail as a kernel without
//! timestamping would, and `=tx` makes only `enable_tx` fail: test-only knobs, so the
//! suite can take the fallback paths.

use std::cell::Cell;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use serde::{Deserialize, Serialize};

use crate::error::Cause;

/// The clock that ends a request's latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// The event loop's own clock, read when it has read the response.
    User,
    /// The kernel's receive stamp of the segment that completed the response (the
    /// default: docs/benchmarks.md has its cost per request).
    #[default]
    Kernel,
    /// As `Kernel`, and the send is the kernel's TX stamp of the request's last byte
    /// (opt-in: it costs an error-queue read per request).
    #[serde(rename = "kernel-tx")]
    KernelTx,
}

impl Clock {
    pub fn name(self) -> &'static str {
        match self {
            Clock::User => "user",
            Clock::Kernel => "kernel",
            Clock::KernelTx => "kernel-tx",
        }
    }

    /// The kernel's receive stamps end the latencies (with or without its TX stamps).
    pub fn is_kernel(self) -> bool {
        matches!(self, Clock::Kernel | Clock::KernelTx)
    }
}

/// The test-only knob that makes `enable` refuse (see the module's comment).
pub const REFUSE_ENV: &str = "VBLAST_TEST_REFUSE_TIMESTAMPING";

thread_local! {
    /// Reads on this thread ask for the kernel's stamp.
    static ON: Cell<bool> = const { Cell::new(false) };
    /// The stamp of this thread's last stamped read since `clear`, in real-time
    /// nanoseconds (0: none).
    static LAST: Cell<i64> = const { Cell::new(0) };
}

/// Whether socket reads on this thread keep the kernel's stamp (set by each event-loop
/// thread before its first connection).
pub fn stamp_reads(on: bool) {
    ON.with(|c| c.set(on));
}

/// Asks the kernel to stamp every segment `fd` receives.
pub fn enable(fd: &impl AsRawFd) -> io::Result<()> {
    let flags = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
    set_timestamping(fd, flags, refused_for_test())
}

/// `SO_TIMESTAMPING` set to `flags` on `fd`, unless the test-only knob `refused` it.
fn set_timestamping(fd: &impl AsRawFd, flags: libc::c_uint, refused: bool) -> io::Result<()> {
    if refused {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("refused by {REFUSE_ENV} (a test-only knob)"),
        ));
    }
    let flags = flags as libc::c_int;
    // SAFETY: a valid descriptor, and a pointer to an int of the length given.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            (&raw const flags).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn refused_for_test() -> bool {
    refuse_knob() == Some(Refuse::All)
}

/// What the test-only knob refuses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refuse {
    All,
    Tx,
}

fn refuse_knob() -> Option<Refuse> {
    static REFUSE: std::sync::OnceLock<Option<Refuse>> = std::sync::OnceLock::new();
    *REFUSE.get_or_init(|| match std::env::var_os(REFUSE_ENV) {
        Some(v) if v == "1" => Some(Refuse::All),
        Some(v) if v == "tx" => Some(Refuse::Tx),
        _ => None,
    })
}

/// The flags of `--clock kernel-tx`: receive stamps as `enable`, and a TX software stamp
/// of each write's last byte, on the error queue without the payload (`OPT_TSONLY`),
/// keyed by the bytes written since these flags were set (`OPT_ID_TCP`: counted from the
/// socket's write sequence, whatever the TCP state).
const TX_FLAGS: libc::c_uint = libc::SOF_TIMESTAMPING_RX_SOFTWARE
    | libc::SOF_TIMESTAMPING_SOFTWARE
    | libc::SOF_TIMESTAMPING_TX_SOFTWARE
    | libc::SOF_TIMESTAMPING_OPT_TSONLY
    | libc::SOF_TIMESTAMPING_OPT_ID
    | libc::SOF_TIMESTAMPING_OPT_ID_TCP;

/// Asks the kernel to stamp the last byte of every write on `fd` from now on (and what it
/// receives, as `enable`); the stamps' byte counts start here. A connected socket only.
pub fn enable_tx(fd: &impl AsRawFd) -> io::Result<()> {
    set_timestamping(fd, TX_FLAGS, refuse_knob().is_some())
}

/// Before a `--clock kernel-tx` run: whether a connected TCP socket here takes the TX
/// flags (Err: why not, said once by the engine; the run then takes its sends from the
/// user-space clock). A loopback connection made and dropped at once.
pub fn probe_tx() -> Result<(), Cause> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Cause::io("no loopback socket to try the TX stamps on", e))?;
    let tx = listener
        .local_addr()
        .and_then(std::net::TcpStream::connect)
        .map_err(|e| Cause::io("no loopback connection to try the TX stamps on", e))?;
    enable_tx(&tx).map_err(|e| Cause::io("the socket refused SO_TIMESTAMPING's TX stamps", e))
}

/// `SCM_TSTAMP_SND` (linux/errqueue.h): the stamp taken as the driver took the segment.
const SCM_TSTAMP_SND: u32 = 0;
/// Stamps read per `recvmmsg`.
const TX_BATCH: usize = 8;

/// Reads the TX stamps queued on `fd`'s error queue (a batch per `recvmmsg`, on the
/// stack), handing each to `tie` as (bytes sent through the stamped byte since
/// `enable_tx`, wrapping; the stamp in real-time nanoseconds). Returns how many it read.
pub fn drain_tx(fd: &impl AsRawFd, mut tie: impl FnMut(u32, i64)) -> usize {
    let mut read = 0;
    loop {
        let mut control = [[0u64; 16]; TX_BATCH];
        // SAFETY: an all-zero mmsghdr is valid; its control pointers are set below.
        let mut msgs: [libc::mmsghdr; TX_BATCH] = unsafe { std::mem::zeroed() };
        for (m, c) in msgs.iter_mut().zip(control.iter_mut()) {
            m.msg_hdr.msg_control = c.as_mut_ptr().cast();
            m.msg_hdr.msg_controllen = std::mem::size_of::<Control>() as _;
        }
        // SAFETY: the descriptor is open; every message's buffers live through the call
        // (no payload asked: the stamps come without it, OPT_TSONLY).
        let n = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                TX_BATCH as libc::c_uint,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n <= 0 {
            return read;
        }
        let n = n as usize;
        for m in &msgs[..n] {
            if let (Some(ns), Some(id)) = (stamp_of(&m.msg_hdr), tx_id_of(&m.msg_hdr)) {
                tie(id.wrapping_add(1), ns);
            }
        }
        read += n;
        if n < TX_BATCH {
            return read;
        }
    }
}

/// A TX stamp's key (`ee_data`: the stamped byte's offset since `enable_tx`), from the
/// `sock_extended_err` of an error-queue message, when it is a software send stamp.
fn tx_id_of(msg: &libc::msghdr) -> Option<u32> {
    // SAFETY: `msg` was filled by recvmmsg; the CMSG_* walk stays inside its control buffer.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let (level, kind) = ((*c).cmsg_level, (*c).cmsg_type);
            if (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR)
            {
                let e: libc::sock_extended_err =
                    std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                let ours = e.ee_errno == libc::ENOMSG as u32
                    && e.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING
                    && e.ee_info == SCM_TSTAMP_SND;
                return ours.then_some(e.ee_data);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// How long a run waits, at most, for the kernel to start stamping (`wait_for_stamps`),
/// counted from the probe's start: past it the run goes on, and the responses that arrive
/// before the kernel stamps are counted as unstamped.
pub const PROBE_BOUND: Duration = Duration::from_secs(2);

/// The probe's state: started at (None: not yet), and whether a byte came in stamped.
struct StampProbe {
    started: Mutex<Option<(Instant, bool)>>,
    done: Condvar,
}

static PROBE: StampProbe = StampProbe {
    started: Mutex::new(None),
    done: Condvar::new(),
};

/// Before the run: whether a TCP socket here takes `SO_TIMESTAMPING` (Err: why not, said
/// once by the engine; the run then uses the user-space clock). Returns at once.
///
/// The socket that took it is kept open for the process's life: the kernel turns its
/// receive stamps on for everyone while a socket asks, but only some time after the first
/// one does (from a worker of its own, which a busy machine may run late). A thread of its
/// own then sends a byte over loopback until it arrives stamped, while the engine
/// connects; `wait_for_stamps` waits for whatever of that is left.
pub fn probe() -> Result<(), Cause> {
    static HELD: std::sync::OnceLock<socket2::Socket> = std::sync::OnceLock::new();
    if HELD.get().is_some() {
        return Ok(());
    }
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .map_err(|e| Cause::io("no socket to try SO_TIMESTAMPING on", e))?;
    enable(&socket).map_err(|e| Cause::io("the socket refused SO_TIMESTAMPING", e))?;
    if HELD.set(socket).is_err() {
        // Another thread's probe got there first and runs.
        return Ok(());
    }
    *lock_probe() = Some((Instant::now(), false));
    let spawned = std::thread::Builder::new()
        .name("stamp-probe".into())
        .spawn(|| {
            let stamped = wait_until_stamped(PROBE_BOUND);
            if let Some(p) = lock_probe().as_mut() {
                p.1 = stamped;
            }
            PROBE.done.notify_all();
        });
    if spawned.is_err() {
        // No thread: no wait either (the first responses may go unstamped, counted).
        *lock_probe() = None;
    }
    Ok(())
}

fn lock_probe() -> std::sync::MutexGuard<'static, Option<(Instant, bool)>> {
    PROBE
        .started
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits until the probe has seen a byte stamped, at most until `PROBE_BOUND` after the
/// probe started (at once when it has, or was never started). Each event-loop thread
/// calls it once its connections are open, before the start gate: the connects overlap
/// the kernel's switch-on, and only what is left of it delays the start.
pub fn wait_for_stamps() {
    let mut p = lock_probe();
    while let Some((started, false)) = *p {
        let left = (started + PROBE_BOUND).saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        p = PROBE
            .done
            .wait_timeout(p, left)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
}

/// Sends a byte over loopback until it arrives stamped, at most for `bound`: whether one
/// did. Any failure on the way ends it (false: the run goes on, unstamped responses
/// counted apart).
fn wait_until_stamped(bound: Duration) -> bool {
    let deadline = Instant::now() + bound;
    let Ok(listener) = std::net::TcpListener::bind("127.0.0.1:0") else {
        return false;
    };
    let Ok(mut tx) = listener.local_addr().and_then(std::net::TcpStream::connect) else {
        return false;
    };
    let Ok((rx, _)) = listener.accept() else {
        return false;
    };
    if enable(&rx).is_err() || rx.set_read_timeout(Some(bound)).is_err() {
        return false;
    }
    while Instant::now() < deadline {
        if std::io::Write::write_all(&mut tx, b"x").is_err() {
            return false;
        }
        match recv_stamped(rx.as_raw_fd(), &mut [0u8; 1]) {
            Ok((1, Some(_))) => return true,
            Ok((1, None)) => std::thread::sleep(Duration::from_millis(2)),
            _ => return false,
        }
    }
    false
}

/// Forgets the last stamp: the next `taken` is that of a read made after this.
#[inline]
pub fn clear() {
    LAST.with(|c| c.set(0));
}

/// The stamp of the last stamped read since `clear`, in real-time nanoseconds.
#[inline]
pub fn taken_ns() -> Option<i64> {
    let ns = LAST.with(Cell::get);
    (ns != 0).then_some(ns)
}

/// The stamp of the last stamped read since `clear`, as an engine instant (the clocks'
/// moment read now: the engine reads it once per wake instead, `Moment`).
#[cfg(test)]
fn taken() -> Option<Instant> {
    taken_ns().map(|ns| Moment::now().instant(ns))
}

/// One moment on both clocks, which carries real-time stamps over to the monotonic clock
/// (their difference holds until the real-time clock is stepped: an event loop reads one
/// per wake, not one per response).
#[derive(Clone, Copy, Debug)]
pub struct Moment {
    now: Instant,
    now_real: i64,
}

impl Moment {
    /// The moment now (`same_moment`).
    pub fn now() -> Moment {
        let (now, now_real) = same_moment();
        Moment { now, now_real }
    }

    /// Real-time `ns` as an engine instant.
    #[inline]
    pub fn instant(&self, ns: i64) -> Instant {
        to_instant(ns, self.now, self.now_real)
    }
}

/// The same moment on both clocks: the monotonic clock read between two real-time reads
/// (their midpoint), again if the thread was preempted between them (the carry would be
/// off by as long), at most three times.
fn same_moment() -> (Instant, i64) {
    let mut best = (Instant::now(), realtime_ns(), i64::MAX);
    for _ in 0..3 {
        let before = realtime_ns();
        let now = Instant::now();
        let after = realtime_ns();
        let gap = after - before;
        if gap < best.2 {
            best = (now, before + gap / 2, gap);
        }
        if gap < 20_000 {
            break;
        }
    }
    (best.0, best.1)
}

/// Real-time `ns` carried over to the monotonic clock, given the same moment `now` on
/// both (`now_real` on the real-time clock). A stamp the real-time clock puts after now
/// (it stepped back) is now.
fn to_instant(ns: i64, now: Instant, now_real: i64) -> Instant {
    let ago = now_real.saturating_sub(ns).max(0) as u64;
    now.checked_sub(Duration::from_nanos(ago)).unwrap_or(now)
}

fn realtime_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    nanos(&ts)
}

/// A timespec in nanoseconds (its fields are narrower than i64 on some targets).
#[allow(clippy::unnecessary_cast)]
fn nanos(ts: &libc::timespec) -> i64 {
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

/// Reads from `tcp`: `read(2)`, or (stamps on) `recvmsg(2)` keeping the kernel's stamp of
/// the last segment read.
#[inline]
pub fn read(tcp: &mut TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    if !ON.with(Cell::get) {
        return tcp.read(buf);
    }
    let (n, stamp) = recv_stamped(tcp.as_raw_fd(), buf)?;
    if let Some(ns) = stamp {
        LAST.with(|c| c.set(ns));
    }
    Ok(n)
}

/// Room for one `SCM_TIMESTAMPING` message (three timespecs), 8-byte aligned.
type Control = [u64; 16];

/// `recvmsg` into `buf`: the bytes read, and the kernel's stamp of the last segment read.
fn recv_stamped(fd: libc::c_int, buf: &mut [u8]) -> io::Result<(usize, Option<i64>)> {
    let mut control: Control = [0; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is valid; its pointers are set below to live buffers.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of::<Control>() as _;
    // SAFETY: the descriptor is open; the message's buffers live through the call.
    let n = unsafe { libc::recvmsg(fd, &raw mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize, stamp_of(&msg)))
}

/// The software stamp in `msg`'s control messages, in real-time nanoseconds.
fn stamp_of(msg: &libc::msghdr) -> Option<i64> {
    // SAFETY: `msg` was filled by recvmsg; the CMSG_* walk stays inside its control buffer.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPING {
                // [software, deprecated, hardware]: the first is the software stamp.
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                let ns = nanos(&ts);
                return (ns != 0).then_some(ns);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_real_time_stamp_becomes_the_instant_it_names() {
        let now = Instant::now();
        let t = to_instant(1_000_000_000, now, 1_000_250_000);
        assert_eq!(now - t, Duration::from_micros(250));
        // A stamp after now (the real-time clock stepped back): now.
        assert_eq!(to_instant(2_000, now, 1_000), now);
    }

    #[test]
    fn tx_stamps_count_the_bytes_written_since_they_were_asked_for() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, _) = listener.accept().unwrap();
        // Bytes before the ask are not counted.
        client.write_all(b"before").unwrap();
        if enable_tx(&client).is_err() {
            // A kernel without OPT_ID_TCP (before 6.2): the engine falls back, said once.
            return;
        }
        client.write_all(b"12345").unwrap();
        client.write_all(b"678").unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut got = Vec::new();
        while got.len() < 2 {
            drain_tx(&client, |count, ns| got.push((count, ns)));
            assert!(Instant::now() < deadline, "TX stamps {got:?} within 30 s");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Each write's stamp counts the bytes through its last one: 5, then 8.
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [5, 8]);
        assert!(got[0].1 <= got[1].1 && got[1].1 <= realtime_ns(), "{got:?}");
    }

    #[test]
    fn a_stamped_read_keeps_the_kernel_stamp_and_clear_forgets_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        // (the kernel turns its stamps on a while after the first socket asks: the probe's
        // socket asks from now on)
        probe().unwrap();
        wait_for_stamps();
        enable(&client).unwrap();
        let mut tcp = TcpStream::from_std(client);
        stamp_reads(true);
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut buf = [0u8; 64];
        // One segment written and read: the real-time clock before the write, and the
        // read's stamp (None: the read carried none).
        let mut exchange = |msg: &[u8]| {
            clear();
            let before = realtime_ns();
            server.write_all(msg).unwrap();
            let n = loop {
                match read(&mut tcp, &mut buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        assert!(Instant::now() < deadline, "nothing read");
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(e) => panic!("{e}"),
                }
            };
            assert_eq!(&buf[..n], msg);
            let after = realtime_ns();
            (before, taken().map(|_| LAST.with(Cell::get)), after)
        };
        // Until the kernel stamps (at once on most machines; bounded by the deadline).
        let (before, at, after) = loop {
            if let (b, Some(at), a) = exchange(b"hello") {
                break (b, at, a);
            }
            assert!(Instant::now() < deadline, "no stamp within 30 s");
            std::thread::sleep(Duration::from_millis(10));
        };
        // On the real-time clock, between the write and the read.
        assert!(before <= at && at <= after, "{before} {at} {after}");
        // Monotonic: a later segment's stamp is no earlier than the one before it.
        let (_, later, _) = exchange(b"again");
        let later = later.expect("a second stamp");
        assert!(later >= at, "{later} before {at}");
        clear();
        assert!(taken().is_none());
        stamp_reads(false);
    }
}
