//! `--clock kernel-tx`: each request's send tied to the kernel's TX stamp of its last
//! byte (`net::stamp::drain_tx`). A link counts the plaintext it hands its stream since
//! it opened (`Link::handed`); once a request's last byte is handed, the stream says where
//! that byte ends on the wire (`Stream::wire_end`: over TLS, the end of the records
//! carrying it), and the first stamp whose byte count covers that end is the request's
//! send (`SendTie`). A request whose stamp never comes, or whose end cannot be placed
//! (rustls's own record layer, an HTTP/2 body held back by flow control, a redirect's
//! hop), keeps the user-space send, counted apart.

use std::time::Instant;

use super::driver::Core;
use crate::net::stamp;

/// One request's place on the wire and, once drained, the kernel's stamp of it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SendTie {
    /// Where the request's last byte ends on the wire, counted from the open (wrapping).
    end: Option<u32>,
    /// The kernel's TX stamp covering it, in real-time nanoseconds.
    at: Option<i64>,
}

impl SendTie {
    /// A new request: nothing placed, nothing stamped.
    #[inline]
    pub(super) fn reset(&mut self) {
        *self = SendTie::default();
    }

    /// Its last byte ends at `wire_end` on the wire (None: it cannot be placed).
    #[inline]
    pub(super) fn place(&mut self, wire_end: Option<u64>) {
        self.end = wire_end.map(|e| e as u32);
        self.at = None;
    }

    pub(super) fn placed(&self) -> bool {
        self.end.is_some()
    }

    /// No stamp tied yet (a redirect's hop sent now cannot be tied: it is forgotten).
    pub(super) fn sent_unknown(&self) -> bool {
        self.at.is_none()
    }

    /// A TX stamp of the write whose last byte is the `count`th: the request's send if it
    /// is the first that covers the request's last byte.
    #[inline]
    pub(super) fn offer(&mut self, count: u32, ns: i64) {
        if self.at.is_none() && self.end.is_some_and(|e| stamp::covers(count, e)) {
            self.at = Some(ns);
        }
    }

    /// The send as an engine instant (None: no stamp tied; the user-space send stands).
    #[inline]
    pub(super) fn sent(&self, core: &mut Core<'_>) -> Option<Instant> {
        self.at.map(|ns| core.instant_of(ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_stamp_covering_the_last_byte_is_the_send() {
        let mut t = SendTie::default();
        // Nothing placed: no stamp ties.
        t.offer(100, 1);
        assert!(t.at.is_none());
        t.place(Some(300));
        // An earlier write's stamp (the request before), then the request's own.
        t.offer(200, 2);
        assert!(t.at.is_none());
        t.offer(300, 3);
        t.offer(400, 4);
        assert_eq!(t.at, Some(3));
        // Counts wrap at 4 GiB.
        t.place(Some(u64::from(u32::MAX) + 10));
        t.offer(u32::MAX - 5, 5);
        assert!(t.at.is_none());
        t.offer(20, 6);
        assert_eq!(t.at, Some(6));
        t.reset();
        assert!(!t.placed());
    }
}
