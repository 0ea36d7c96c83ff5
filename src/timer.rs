//! Precise wake-ups for the open model. epoll's timeout has millisecond resolution, which
//! would send requests up to a millisecond after their intended start and bias corrected
//! latency upwards; a timerfd in the same event loop wakes it to the microsecond.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

pub struct Timer {
    fd: OwnedFd,
    /// When the timer will fire, if armed.
    armed: Option<Instant>,
}

impl Timer {
    pub fn new(registry: &Registry, token: Token) -> io::Result<Timer> {
        // SAFETY: plain syscall; the result is checked before use.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(Timer { fd, armed: None })
    }

    /// Makes sure the loop wakes by `at`. An earlier wake-up already armed is kept (the
    /// loop re-arms after it), so a busy loop does not pay a syscall per request.
    pub fn wake_by(&mut self, at: Instant, now: Instant) {
        if at <= now || self.armed.is_some_and(|a| a <= at) {
            return;
        }
        let d = at - now;
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                // At least 1 ns: a zero value would disarm the timer.
                tv_nsec: (d.subsec_nanos() as libc::c_long).max(1),
            },
        };
        // SAFETY: valid descriptor and struct; a failure only costs precision.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc == 0 {
            self.armed = Some(at);
        }
    }

    /// The timer fired: clears it.
    pub fn fired(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a local buffer.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        self.armed = None;
    }
}
