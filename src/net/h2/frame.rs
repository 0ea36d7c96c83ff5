//! HTTP/2 frames (RFC 9113 §4, §6): the nine-byte frame header, the frame types, flags,
//! settings and error codes the client uses, and the small writers and readers of each
//! frame's payload. Pure byte work: no socket, no state beyond the bytes given.

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The length of a frame header.
pub const HEAD_LEN: usize = 9;
/// The largest frame payload either side may send until told otherwise.
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The flow-control window every stream and the connection start with.
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The largest window (RFC 9113 §6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Frame types.
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS and PING.
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// Settings identifiers (RFC 9113 §6.5.2).
pub mod setting {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// Error codes (RFC 9113 §7).
pub mod code {
    pub const NO_ERROR: u32 = 0x0;
    pub const PROTOCOL_ERROR: u32 = 0x1;
    pub const INTERNAL_ERROR: u32 = 0x2;
    pub const FLOW_CONTROL_ERROR: u32 = 0x3;
    pub const STREAM_CLOSED: u32 = 0x5;
    pub const FRAME_SIZE_ERROR: u32 = 0x6;
    pub const REFUSED_STREAM: u32 = 0x7;
    pub const CANCEL: u32 = 0x8;
    pub const COMPRESSION_ERROR: u32 = 0x9;
    pub const ENHANCE_YOUR_CALM: u32 = 0xb;
}

/// An error code's name, as RFC 9113 §7 writes it (`0x..` for one it does not define).
pub fn code_name(c: u32) -> &'static str {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES.get(c as usize).copied().unwrap_or("UNKNOWN_CODE")
}

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    /// Reads a frame header from the first nine bytes of `b` (None: fewer than nine).
    pub fn parse(b: &[u8]) -> Option<Head> {
        let h = b.get(..HEAD_LEN)?;
        Some(Head {
            len: (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & MAX_WINDOW,
        })
    }
}

/// Appends a frame header.
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = len as u32;
    out.extend_from_slice(&[(l >> 16) as u8, (l >> 8) as u8, l as u8, kind, flags]);
    out.extend_from_slice(&(stream & MAX_WINDOW).to_be_bytes());
}

/// Appends a SETTINGS frame with these (identifier, value) pairs.
pub fn put_settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    put_head(out, pairs.len() * 6, kind::SETTINGS, 0, 0);
    for (id, v) in pairs {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Appends the ACK of the peer's SETTINGS.
pub fn put_settings_ack(out: &mut Vec<u8>) {
    put_head(out, 0, kind::SETTINGS, flag::ACK, 0);
}

/// Appends a WINDOW_UPDATE of `increment` for `stream` (0: the connection).
pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & MAX_WINDOW).to_be_bytes());
}

/// Appends a PING (or, `ack`, its answer) carrying `data`.
pub fn put_ping(out: &mut Vec<u8>, ack: bool, data: &[u8; 8]) {
    put_head(out, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
    out.extend_from_slice(data);
}

/// Appends a GOAWAY naming `last` as the last stream processed.
pub fn put_goaway(out: &mut Vec<u8>, last: u32, error: u32) {
    put_head(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&(last & MAX_WINDOW).to_be_bytes());
    out.extend_from_slice(&error.to_be_bytes());
}

/// Appends an RST_STREAM.
pub fn put_rst(out: &mut Vec<u8>, stream: u32, error: u32) {
    put_head(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&error.to_be_bytes());
}

/// The payload of a DATA or HEADERS frame without its padding (RFC 9113 §6.1): None when
/// the pad length runs past the payload, a PROTOCOL_ERROR.
pub fn unpadded(flags: u8, payload: &[u8]) -> Option<&[u8]> {
    if flags & flag::PADDED == 0 {
        return Some(payload);
    }
    let (&pad, rest) = payload.split_first()?;
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|end| &rest[..end])
}

/// A four-byte big-endian value at `at` of `b` (the reserved top bit left as sent).
pub fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The (identifier, value) pairs of a SETTINGS payload (its length a multiple of six).
pub fn settings_pairs(p: &[u8]) -> impl Iterator<Item = (u16, u32)> + '_ {
    p.chunks_exact(6)
        .map(|c| (u16::from_be_bytes([c[0], c[1]]), be32(c, 2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_header_round_trips() {
        let mut out = Vec::new();
        put_head(
            &mut out,
            0x12_3456,
            kind::HEADERS,
            flag::END_HEADERS,
            0x8000_0005,
        );
        assert_eq!(out, [0x12, 0x34, 0x56, 1, 4, 0, 0, 0, 5]);
        let h = Head::parse(&out).unwrap();
        assert_eq!(
            h,
            Head {
                len: 0x12_3456,
                kind: kind::HEADERS,
                flags: flag::END_HEADERS,
                stream: 5
            }
        );
        assert_eq!(Head::parse(&out[..8]), None);
    }

    #[test]
    fn padding_is_stripped_and_bad_padding_refused() {
        assert_eq!(unpadded(0, b"abc"), Some(&b"abc"[..]));
        assert_eq!(unpadded(flag::PADDED, b"\x02abcXX"), Some(&b"abc"[..]));
        assert_eq!(unpadded(flag::PADDED, b"\x00"), Some(&b""[..]));
        assert_eq!(unpadded(flag::PADDED, b"\x05ab"), None);
        assert_eq!(unpadded(flag::PADDED, b""), None);
    }

    #[test]
    fn settings_and_control_frames_are_written_as_the_rfc_says() {
        let mut out = Vec::new();
        put_settings(
            &mut out,
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, 1 << 20),
            ],
        );
        assert_eq!(&out[..9], &[0, 0, 12, 4, 0, 0, 0, 0, 0]);
        let pairs: Vec<_> = settings_pairs(&out[9..]).collect();
        assert_eq!(pairs, [(2, 0), (4, 1 << 20)]);
        out.clear();
        put_window_update(&mut out, 3, 1000);
        assert_eq!(out, [0, 0, 4, 8, 0, 0, 0, 0, 3, 0, 0, 0x03, 0xe8]);
        out.clear();
        put_goaway(&mut out, 7, code::PROTOCOL_ERROR);
        assert_eq!(be32(&out, 9), 7);
        assert_eq!(be32(&out, 13), 1);
        assert_eq!(code_name(code::FLOW_CONTROL_ERROR), "FLOW_CONTROL_ERROR");
        assert_eq!(code_name(99), "UNKNOWN_CODE");
    }
}
