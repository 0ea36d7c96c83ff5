//! `--clock kernel-tx`: each request's send tied to the kernel's TX stamp of its last
//! byte (`net::stamp::drain_tx`). A link counts the plaintext it hands its stream since
//! it opened (`Link::handed`); once a write hands a request's last byte, the stream says
//! where that write ends on the wire (`Stream::wire_end`: over TLS, the end of the records
//! it carried), and the stamp whose byte count is that end, the stamp of that very write,
//! is the request's send (`SendTie`). Only that stamp ties: one lost or merged by the
//! kernel leaves the request untied rather than tied to another write. A request whose
//! stamp never comes, or whose end cannot be placed (an HTTP/2 body held back by flow
//! control, a redirect's hop, a write rustls's record layer left partly queued), keeps
//! the user-space send, counted apart.

use std::time::Instant;

use super::driver::Core;

/// One request's place on the wire and, once drained, the kernel's stamp of it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SendTie {
    /// Where the write carrying the request's last byte ends on the wire, counted from
    /// the open (wrapping).
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

    /// The write carrying its last byte ends at `wire_end` on the wire (None: it cannot
    /// be placed).
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

    /// A TX stamp of the write whose last byte is the `count`th: the request's send if
    /// that write carried the request's last byte.
    #[inline]
    pub(super) fn offer(&mut self, count: u32, ns: i64) {
        if self.at.is_none() && self.end == Some(count) {
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
    fn the_stamp_of_the_write_carrying_the_last_byte_is_the_send() {
        let mut t = SendTie::default();
        // Nothing placed: no stamp ties.
        t.offer(100, 1);
        assert!(t.at.is_none());
        t.place(Some(300));
        // An earlier write's stamp (the request before), a later one's (a stamp of its own
        // write lost: no tie to another), then its own.
        t.offer(200, 2);
        t.offer(400, 3);
        assert!(t.at.is_none());
        t.offer(300, 4);
        t.offer(300, 5);
        assert_eq!(t.at, Some(4));
        // Counts wrap at 4 GiB.
        t.place(Some(u64::from(u32::MAX) + 10));
        t.offer(9, 6);
        assert_eq!(t.at, Some(6));
        t.reset();
        assert!(!t.placed());
    }
}
