//! One HTTP/2 client connection as a state machine over bytes (RFC 9113), with no socket:
//! `feed` takes what the server sent and leaves what to answer in `out` and what happened
//! in `events`; `start` opens a stream with a request's header block and body. The
//! engine (`src/engine/h2.rs`) moves the bytes and acts on the events.
//!
//! The connection's states are named (`ConnState`): the preface and SETTINGS sent, our
//! SETTINGS acknowledged, open (the server's SETTINGS seen, so its stream limit known),
//! going away (a GOAWAY received or sent, or stream ids used up: no new streams) and
//! closed. Each stream slot has its own (`StreamState`); a stream given up (`cancel`, its
//! request timed out) is reset with CANCEL while the connection goes on, and `ping` asks
//! whether the server still reads the connection at all. Flow control both ways: DATA is
//! sent only within the peer's windows (a body that does not fit waits for its
//! WINDOW_UPDATE), and WINDOW_UPDATEs are sent for the connection and each stream once
//! half of a window has been consumed, so that a large body (a 1 MiB KV value) never
//! stalls. PING is answered, CONTINUATION joined, padding stripped, trailers accepted,
//! RST_STREAM reported with its code, and a GOAWAY reports the streams above its last
//! stream id as refused (never processed: the engine sends them again on a new
//! connection) while those below it complete. A malformed frame, an oversized header
//! block or a window overflow is a connection error (`ConnError`): a GOAWAY with its
//! code is queued and the connection is closed.

use std::collections::VecDeque;

use super::frame::{self, Head, code, flag, kind, setting};
use crate::net::http::{LOCATION_MAX, Quota, quota_header};

/// The largest header block accepted (also sent as SETTINGS_MAX_HEADER_LIST_SIZE).
pub const MAX_BLOCK: usize = 64 * 1024;

/// The connection's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// The preface and our SETTINGS are written; the server's SETTINGS not seen yet.
    PrefaceSent,
    /// The server acknowledged our SETTINGS before sending its own.
    SettingsAcked,
    /// The server's SETTINGS seen: streams may be opened.
    Open,
    /// No new streams: those under way finish.
    GoingAway,
    /// Finished with (after a connection error).
    Closed,
}

/// A stream slot's state (RFC 9113 §5.1, as far as a client's request goes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamState {
    /// Free for a request.
    Idle,
    /// HEADERS sent, body still (partly) to send.
    Open,
    /// The whole request sent; the response under way.
    HalfClosedLocal,
    /// The response is complete, or the stream was reset: its body readable until the
    /// slot carries its next request.
    Closed,
}

/// What the connection came to while reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The server's first SETTINGS: `allowed()` now says how many streams may be open.
    Ready,
    /// A whole response on `slot` (trailers, if any, read too).
    Response { slot: usize, status: u16 },
    /// The server reset the stream on `slot`.
    Reset { slot: usize, code: u32 },
    /// A GOAWAY left the request on `slot` unprocessed: it may be sent again elsewhere.
    Refused { slot: usize },
    /// The server sent GOAWAY (`code`); streams at or below `last` go on.
    GoAway { last: u32, code: u32 },
}

/// A connection error: the GOAWAY `code` sent, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnError {
    pub code: u32,
    pub why: &'static str,
    /// The server answered the preface in HTTP/1.1: it does not speak h2c at all, so no
    /// connection to it will (`--http2-prior-knowledge` against an HTTP/1.1 server).
    pub http1: bool,
}

/// What a client connection asks of the server.
#[derive(Clone, Copy, Debug)]
pub struct Local {
    /// Streams this connection opens at most (`-m`).
    pub streams: usize,
    /// The receive window of each stream (SETTINGS_INITIAL_WINDOW_SIZE).
    pub window: u32,
    /// Read every response field, not only `:status`: a 429's rate-limit quota
    /// (`quota`) and a 3xx's `Location` (`location`), as cluster runs need them.
    pub headers: bool,
}

struct StreamSlot {
    state: StreamState,
    id: u32,
    send_window: i64,
    recv_window: i64,
    /// Received DATA not yet given back by a WINDOW_UPDATE.
    unacked: u32,
    /// Body bytes waiting for window, and how far they have been sent.
    unsent: Vec<u8>,
    unsent_at: usize,
    status: u16,
    keep_body: bool,
    body: Vec<u8>,
    body_len: u64,
    /// `Local::headers`: a 429's quota, and a 3xx's Location (`location_seen`; kept
    /// empty when it was empty, repeated or longer than `LOCATION_MAX`).
    quota: Option<Quota>,
    location: Vec<u8>,
    location_seen: bool,
}

impl StreamSlot {
    fn new(window: u32, headers: bool) -> StreamSlot {
        StreamSlot {
            state: StreamState::Idle,
            id: 0,
            send_window: i64::from(frame::DEFAULT_WINDOW),
            recv_window: i64::from(window),
            unacked: 0,
            unsent: Vec::new(),
            unsent_at: 0,
            status: 0,
            keep_body: false,
            body: Vec::new(),
            body_len: 0,
            quota: None,
            location: Vec::with_capacity(if headers { LOCATION_MAX } else { 0 }),
            location_seen: false,
        }
    }
}

/// What `Local::headers` reads of a response block beside its `:status`.
struct Fields {
    status: u16,
    quota: Option<Quota>,
    location_seen: bool,
}

pub struct H2Conn {
    state: ConnState,
    local: Local,
    slots: Vec<StreamSlot>,
    free: Vec<usize>,
    active: usize,
    next_id: u32,
    /// The server's settings.
    peer_streams: u32,
    peer_window: i64,
    peer_frame: usize,
    send_window: i64,
    recv_window: i64,
    conn_window: u32,
    unacked: u32,
    decoder: super::hpack::Hpack,
    /// Bytes of an incomplete frame, carried to the next `feed`.
    carry: Vec<u8>,
    /// A header block being joined from HEADERS and CONTINUATION frames.
    block: Vec<u8>,
    block_stream: u32,
    block_end: bool,
    in_block: bool,
    /// `Local::headers`: the Location of the block being decoded.
    location: Vec<u8>,
    /// A PING of ours not answered yet (`ping`).
    ping_out: bool,
    /// Frames to write to the server.
    pub out: Vec<u8>,
    /// What happened in the last `feed` (the caller drains it).
    pub events: VecDeque<Event>,
}

/// A stream id (odd, client-initiated) as the slot it names.
fn slot_of(slots: &[StreamSlot], id: u32) -> Option<usize> {
    slots.iter().position(|s| {
        s.id == id && matches!(s.state, StreamState::Open | StreamState::HalfClosedLocal)
    })
}

fn err(code: u32, why: &'static str) -> ConnError {
    ConnError {
        code,
        why,
        http1: false,
    }
}

impl H2Conn {
    /// A new connection: the preface, our SETTINGS and the connection window's update are
    /// queued in `out`.
    pub fn new(local: Local) -> H2Conn {
        let streams = local.streams.max(1);
        let conn_window = (u64::from(local.window) * streams as u64).clamp(
            u64::from(frame::DEFAULT_WINDOW),
            u64::from(frame::MAX_WINDOW),
        ) as u32;
        let mut out = Vec::with_capacity(16 * 1024);
        out.extend_from_slice(frame::PREFACE);
        frame::put_settings(
            &mut out,
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, local.window),
                (setting::MAX_HEADER_LIST_SIZE, MAX_BLOCK as u32),
            ],
        );
        if conn_window > frame::DEFAULT_WINDOW {
            frame::put_window_update(&mut out, 0, conn_window - frame::DEFAULT_WINDOW);
        }
        H2Conn {
            state: ConnState::PrefaceSent,
            local,
            slots: (0..streams)
                .map(|_| StreamSlot::new(local.window, local.headers))
                .collect(),
            free: (0..streams).rev().collect(),
            active: 0,
            next_id: 1,
            peer_streams: u32::MAX,
            peer_window: i64::from(frame::DEFAULT_WINDOW),
            peer_frame: frame::DEFAULT_MAX_FRAME,
            send_window: i64::from(frame::DEFAULT_WINDOW),
            recv_window: i64::from(conn_window),
            conn_window,
            unacked: 0,
            decoder: super::hpack::Hpack::default(),
            carry: Vec::with_capacity(frame::DEFAULT_MAX_FRAME + frame::HEAD_LEN),
            block: Vec::with_capacity(4096),
            block_stream: 0,
            block_end: false,
            in_block: false,
            location: Vec::with_capacity(if local.headers { LOCATION_MAX } else { 0 }),
            ping_out: false,
            out,
            events: VecDeque::with_capacity(2 * streams + 4),
        }
    }

    pub fn state(&self) -> ConnState {
        self.state
    }

    /// Streams open now.
    pub fn active(&self) -> usize {
        self.active
    }

    /// Streams this connection may have open at once: `-m`, capped by the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub fn allowed(&self) -> usize {
        self.slots.len().min(self.peer_streams as usize)
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (None: it set none).
    pub fn server_limit(&self) -> Option<u32> {
        (self.peer_streams != u32::MAX).then_some(self.peer_streams)
    }

    /// A new stream may be opened now.
    pub fn can_start(&self) -> bool {
        self.state == ConnState::Open && self.active < self.allowed() && !self.free.is_empty()
    }

    /// Going away (or closed) with nothing left under way: the connection is done.
    pub fn finished(&self) -> bool {
        matches!(self.state, ConnState::GoingAway | ConnState::Closed) && self.active == 0
    }

    /// The body of the response on `slot` (when its request asked to keep it).
    pub fn body(&self, slot: usize) -> &[u8] {
        &self.slots[slot].body
    }

    /// The rate-limit quota of a 429 on `slot` (`Local::headers`).
    pub fn quota(&self, slot: usize) -> Option<Quota> {
        self.slots[slot].quota
    }

    /// The `Location` of a 3xx on `slot` (`Local::headers`): None when it had none, empty
    /// when it was empty, repeated or longer than `LOCATION_MAX` (as `ResponseParser`).
    pub fn location(&self, slot: usize) -> Option<&[u8]> {
        let s = &self.slots[slot];
        s.location_seen.then_some(&s.location[..])
    }

    /// The body length of the response on `slot`.
    pub fn body_len(&self, slot: usize) -> u64 {
        self.slots[slot].body_len
    }

    /// The stream id on `slot`.
    pub fn stream_id(&self, slot: usize) -> u32 {
        self.slots[slot].id
    }

    /// Gives up the stream on `slot` (its request timed out): RST_STREAM CANCEL is queued
    /// and the slot freed; what the server still sends on it is read and dropped (the
    /// connection window and the HPACK table kept in step). False: nothing was under way.
    pub fn cancel(&mut self, slot: usize) -> bool {
        let Some(s) = self.slots.get(slot) else {
            return false;
        };
        if !matches!(s.state, StreamState::Open | StreamState::HalfClosedLocal) {
            return false;
        }
        frame::put_rst(&mut self.out, s.id, code::CANCEL);
        self.close_slot(slot);
        true
    }

    /// Queues a PING, unless one is still unanswered: whether the server still reads this
    /// connection (`ping_unanswered` until its ACK comes).
    pub fn ping(&mut self) {
        if !self.ping_out {
            self.ping_out = true;
            frame::put_ping(&mut self.out, false, b"vblast\0\0");
        }
    }

    /// Our PING has not been answered yet.
    pub fn ping_unanswered(&self) -> bool {
        self.ping_out
    }

    /// Bytes held between reads: an incomplete frame and a header block being joined
    /// (bounded by a frame and `MAX_BLOCK`; the fuzz target checks it).
    pub fn buffered(&self) -> usize {
        self.carry.len() + self.block.len()
    }

    /// Opens a stream carrying a request: its encoded header `block` and `body`; keeps the
    /// response body when `keep_body`. Returns the slot (None: no stream may be opened).
    pub fn start(&mut self, block: &[u8], body: &[u8], keep_body: bool) -> Option<usize> {
        if !self.can_start() {
            return None;
        }
        let slot = self.free.pop()?;
        let id = self.next_id;
        self.next_id += 2;
        if self.next_id > frame::MAX_WINDOW - 2 {
            // Stream ids used up: this connection ends once its streams are done.
            self.state = ConnState::GoingAway;
        }
        self.active += 1;
        let s = &mut self.slots[slot];
        s.state = if body.is_empty() {
            StreamState::HalfClosedLocal
        } else {
            StreamState::Open
        };
        s.id = id;
        s.send_window = self.peer_window;
        s.recv_window = i64::from(self.local.window);
        s.unacked = 0;
        s.unsent.clear();
        s.unsent_at = 0;
        s.status = 0;
        s.quota = None;
        s.location.clear();
        s.location_seen = false;
        s.keep_body = keep_body;
        s.body.clear();
        s.body_len = 0;
        self.put_block(id, block, body.is_empty());
        if !body.is_empty() {
            let sent = self.send_data(slot, body);
            let s = &mut self.slots[slot];
            if sent < body.len() {
                s.unsent.extend_from_slice(&body[sent..]);
            }
        }
        Some(slot)
    }

    /// Whether all of `slot`'s request is in `out` (its body not held back by flow
    /// control): where its last byte lies is then known (`--clock kernel-tx`).
    pub fn all_queued(&self, slot: usize) -> bool {
        self.slots.get(slot).is_some_and(|s| s.unsent.is_empty())
    }

    /// HEADERS (and CONTINUATION frames when the block exceeds the server's frame size).
    fn put_block(&mut self, id: u32, block: &[u8], end_stream: bool) {
        let max = self.peer_frame;
        let end = if end_stream { flag::END_STREAM } else { 0 };
        let mut chunks = block.chunks(max).peekable();
        let first = chunks.next().unwrap_or(&[]);
        let last = chunks.peek().is_none();
        let flags = end | if last { flag::END_HEADERS } else { 0 };
        frame::put_head(&mut self.out, first.len(), kind::HEADERS, flags, id);
        self.out.extend_from_slice(first);
        while let Some(c) = chunks.next() {
            let flags = if chunks.peek().is_none() {
                flag::END_HEADERS
            } else {
                0
            };
            frame::put_head(&mut self.out, c.len(), kind::CONTINUATION, flags, id);
            self.out.extend_from_slice(c);
        }
    }

    /// Sends as much of `data` (the rest of `slot`'s body) as the windows allow, the last
    /// frame ending the stream; returns the bytes sent.
    fn send_data(&mut self, slot: usize, data: &[u8]) -> usize {
        let mut sent = 0;
        let id = self.slots[slot].id;
        while sent < data.len() {
            let room = self.send_window.min(self.slots[slot].send_window);
            if room <= 0 {
                break;
            }
            let n = (data.len() - sent).min(room as usize).min(self.peer_frame);
            let last = sent + n == data.len();
            let flags = if last { flag::END_STREAM } else { 0 };
            frame::put_head(&mut self.out, n, kind::DATA, flags, id);
            self.out.extend_from_slice(&data[sent..sent + n]);
            self.send_window -= n as i64;
            self.slots[slot].send_window -= n as i64;
            sent += n;
        }
        if sent == data.len() {
            self.slots[slot].state = StreamState::HalfClosedLocal;
        }
        sent
    }

    /// Bodies that waited for window: as much more of each as now fits.
    fn send_waiting(&mut self) {
        for slot in 0..self.slots.len() {
            let s = &mut self.slots[slot];
            if s.state != StreamState::Open || s.unsent_at >= s.unsent.len() {
                continue;
            }
            let rest = std::mem::take(&mut s.unsent);
            let at = s.unsent_at;
            let sent = self.send_data(slot, &rest[at..]);
            let s = &mut self.slots[slot];
            s.unsent = rest;
            s.unsent_at += sent;
        }
    }

    /// Ends the stream on `slot` (its response complete, or reset).
    fn close_slot(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        if matches!(s.state, StreamState::Open | StreamState::HalfClosedLocal) {
            s.state = StreamState::Closed;
            self.active -= 1;
            self.free.push(slot);
        }
    }

    /// Takes the server's bytes: frames answered in `out`, events in `events`. A
    /// connection error queues its GOAWAY and closes the connection.
    pub fn feed(&mut self, input: &[u8]) -> Result<(), ConnError> {
        let r = if self.carry.is_empty() {
            self.frames(input).map(|used| {
                self.carry.extend_from_slice(&input[used..]);
            })
        } else {
            let mut buf = std::mem::take(&mut self.carry);
            buf.extend_from_slice(input);
            let r = self.frames(&buf).map(|used| {
                buf.drain(..used);
            });
            self.carry = buf;
            r
        };
        if let Err(e) = r {
            // (the server opened no streams: 0 is the last one processed)
            frame::put_goaway(&mut self.out, 0, e.code);
            self.state = ConnState::Closed;
        }
        r
    }

    /// Handles every whole frame of `b`; returns the bytes used.
    fn frames(&mut self, b: &[u8]) -> Result<usize, ConnError> {
        if matches!(
            self.state,
            ConnState::PrefaceSent | ConnState::SettingsAcked
        ) && b.starts_with(b"HTTP/1.")
        {
            // (a server's first frame is SETTINGS, whose head never starts so)
            return Err(ConnError {
                code: code::PROTOCOL_ERROR,
                why: "the server answered in HTTP/1.1",
                http1: true,
            });
        }
        let mut at = 0;
        while let Some(h) = Head::parse(&b[at..]) {
            if h.len > frame::DEFAULT_MAX_FRAME {
                return Err(err(
                    code::FRAME_SIZE_ERROR,
                    "a frame larger than SETTINGS_MAX_FRAME_SIZE",
                ));
            }
            let end = at + frame::HEAD_LEN + h.len;
            if end > b.len() {
                break;
            }
            self.frame(h, &b[at + frame::HEAD_LEN..end])?;
            at = end;
        }
        Ok(at)
    }

    fn frame(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if self.in_block && (h.kind != kind::CONTINUATION || h.stream != self.block_stream) {
            return Err(err(code::PROTOCOL_ERROR, "a header block interrupted"));
        }
        match h.kind {
            kind::DATA => self.on_data(h, p),
            kind::HEADERS => self.on_headers(h, p),
            kind::CONTINUATION => self.on_continuation(h, p),
            kind::RST_STREAM => self.on_rst(h, p),
            kind::SETTINGS => self.on_settings(h, p),
            kind::PUSH_PROMISE => Err(err(code::PROTOCOL_ERROR, "PUSH_PROMISE with push disabled")),
            kind::PING => self.on_ping(h, p),
            kind::GOAWAY => self.on_goaway(h, p),
            kind::WINDOW_UPDATE => self.on_window_update(h, p),
            // PRIORITY and unknown types are ignored (RFC 9113 §5.5).
            _ => Ok(()),
        }
    }

    fn on_data(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if h.stream == 0 {
            return Err(err(code::PROTOCOL_ERROR, "DATA on stream 0"));
        }
        let data = frame::unpadded(h.flags, p)
            .ok_or(err(code::PROTOCOL_ERROR, "DATA padding past the frame"))?;
        // Padding counts against the windows too.
        let n = p.len() as u32;
        self.recv_window -= i64::from(n);
        if self.recv_window < 0 {
            return Err(err(
                code::FLOW_CONTROL_ERROR,
                "DATA beyond the connection window",
            ));
        }
        self.unacked += n;
        if self.unacked >= self.conn_window / 2 {
            frame::put_window_update(&mut self.out, 0, self.unacked);
            self.recv_window += i64::from(self.unacked);
            self.unacked = 0;
        }
        let Some(slot) = slot_of(&self.slots, h.stream) else {
            // A stream already reset or finished: its window matters no more.
            return Ok(());
        };
        let s = &mut self.slots[slot];
        s.recv_window -= i64::from(n);
        if s.recv_window < 0 {
            return Err(err(
                code::FLOW_CONTROL_ERROR,
                "DATA beyond the stream window",
            ));
        }
        if s.status == 0 {
            return Err(err(
                code::PROTOCOL_ERROR,
                "DATA before the response headers",
            ));
        }
        s.body_len += data.len() as u64;
        if s.keep_body {
            s.body.extend_from_slice(data);
        }
        if h.flags & flag::END_STREAM != 0 {
            self.end_stream(slot);
            return Ok(());
        }
        s.unacked += n;
        if s.unacked >= self.local.window / 2 {
            frame::put_window_update(&mut self.out, h.stream, s.unacked);
            s.recv_window += i64::from(s.unacked);
            s.unacked = 0;
        }
        Ok(())
    }

    /// The server ended the stream on `slot`: its response is complete.
    fn end_stream(&mut self, slot: usize) {
        let s = &self.slots[slot];
        let (id, status) = (s.id, s.status);
        if s.state == StreamState::Open {
            // Answered before the whole body was sent: the rest is not wanted.
            frame::put_rst(&mut self.out, id, code::NO_ERROR);
        }
        self.close_slot(slot);
        self.events.push_back(Event::Response { slot, status });
    }

    fn on_headers(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if h.stream == 0 {
            return Err(err(code::PROTOCOL_ERROR, "HEADERS on stream 0"));
        }
        let mut b = frame::unpadded(h.flags, p)
            .ok_or(err(code::PROTOCOL_ERROR, "HEADERS padding past the frame"))?;
        if h.flags & flag::PRIORITY != 0 {
            b = b.get(5..).ok_or(err(
                code::FRAME_SIZE_ERROR,
                "HEADERS too short for its priority",
            ))?;
        }
        self.block.clear();
        self.block.extend_from_slice(b);
        self.block_stream = h.stream;
        self.block_end = h.flags & flag::END_STREAM != 0;
        self.in_block = h.flags & flag::END_HEADERS == 0;
        if self.in_block {
            Ok(())
        } else {
            self.on_block()
        }
    }

    fn on_continuation(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if !self.in_block {
            return Err(err(code::PROTOCOL_ERROR, "CONTINUATION without HEADERS"));
        }
        if self.block.len() + p.len() > MAX_BLOCK {
            return Err(err(code::ENHANCE_YOUR_CALM, "a header block over 64 KiB"));
        }
        self.block.extend_from_slice(p);
        self.in_block = h.flags & flag::END_HEADERS == 0;
        if self.in_block {
            Ok(())
        } else {
            self.on_block()
        }
    }

    /// A whole header block: decoded (always: the dynamic table must stay in step), and
    /// the stream's status taken, or its trailers accepted.
    fn on_block(&mut self) -> Result<(), ConnError> {
        let fields = if self.local.headers {
            self.block_fields()
        } else {
            self.decoder.status(&self.block).map(|status| Fields {
                status,
                quota: None,
                location_seen: false,
            })
        };
        let fields = fields.map_err(|_| {
            err(
                code::COMPRESSION_ERROR,
                "a header block HPACK cannot decode",
            )
        })?;
        let status = fields.status;
        let Some(slot) = slot_of(&self.slots, self.block_stream) else {
            return Ok(());
        };
        let s = &mut self.slots[slot];
        if s.status == 0 {
            if (100..200).contains(&status) {
                // An interim response: the final one follows.
                return Ok(());
            }
            if status == 0 {
                return Err(err(
                    code::PROTOCOL_ERROR,
                    "response headers without :status",
                ));
            }
            s.status = status;
            s.quota = fields.quota.filter(|_| status == 429);
            s.location_seen = fields.location_seen && (300..400).contains(&status);
            if s.location_seen {
                s.location.clear();
                s.location.extend_from_slice(&self.location);
            }
        } else if !self.block_end {
            return Err(err(code::PROTOCOL_ERROR, "trailers without END_STREAM"));
        }
        if self.block_end {
            self.end_stream(slot);
        }
        Ok(())
    }

    /// Every field of the block: its `:status`, a rate-limit quota's fields and its
    /// `Location` (into `self.location`), the table kept in step.
    fn block_fields(&mut self) -> Result<Fields, super::hpack::HpackError> {
        let mut f = Fields {
            status: 0,
            quota: None,
            location_seen: false,
        };
        let location = &mut self.location;
        location.clear();
        let mut unusable = false;
        self.decoder.decode(&self.block, true, &mut |n, v| {
            if n == b":status" && v.len() == 3 && v.iter().all(u8::is_ascii_digit) {
                f.status = v.iter().fold(0, |a, &d| a * 10 + u16::from(d - b'0'));
            } else if n == b"location" {
                let v = v.trim_ascii();
                unusable |= f.location_seen || v.is_empty() || v.len() > LOCATION_MAX;
                f.location_seen = true;
                if !unusable {
                    location.extend_from_slice(v);
                }
            } else if matches!(n.first(), Some(b'r' | b'x'))
                && let Ok(name) = std::str::from_utf8(n)
            {
                quota_header(name, v, &mut f.quota);
            }
        })?;
        if unusable {
            self.location.clear();
        }
        Ok(f)
    }

    fn on_rst(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if p.len() != 4 {
            return Err(err(code::FRAME_SIZE_ERROR, "RST_STREAM not 4 bytes"));
        }
        if h.stream == 0 {
            return Err(err(code::PROTOCOL_ERROR, "RST_STREAM on stream 0"));
        }
        if let Some(slot) = slot_of(&self.slots, h.stream) {
            self.close_slot(slot);
            let c = frame::be32(p, 0);
            self.events.push_back(Event::Reset { slot, code: c });
        }
        Ok(())
    }

    fn on_settings(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if h.stream != 0 {
            return Err(err(code::PROTOCOL_ERROR, "SETTINGS on a stream"));
        }
        if h.flags & flag::ACK != 0 {
            if !p.is_empty() {
                return Err(err(code::FRAME_SIZE_ERROR, "SETTINGS ACK with a payload"));
            }
            if self.state == ConnState::PrefaceSent {
                self.state = ConnState::SettingsAcked;
            }
            return Ok(());
        }
        if !p.len().is_multiple_of(6) {
            return Err(err(
                code::FRAME_SIZE_ERROR,
                "SETTINGS not a multiple of 6 bytes",
            ));
        }
        for (id, v) in frame::settings_pairs(p) {
            self.setting(id, v)?;
        }
        frame::put_settings_ack(&mut self.out);
        if matches!(
            self.state,
            ConnState::PrefaceSent | ConnState::SettingsAcked
        ) {
            self.state = ConnState::Open;
            self.events.push_back(Event::Ready);
        }
        self.send_waiting();
        Ok(())
    }

    fn setting(&mut self, id: u16, v: u32) -> Result<(), ConnError> {
        match id {
            setting::MAX_CONCURRENT_STREAMS => self.peer_streams = v,
            setting::INITIAL_WINDOW_SIZE => {
                if v > frame::MAX_WINDOW {
                    return Err(err(
                        code::FLOW_CONTROL_ERROR,
                        "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1",
                    ));
                }
                // Open streams' windows move by the change (RFC 9113 §6.9.2).
                let delta = i64::from(v) - self.peer_window;
                self.peer_window = i64::from(v);
                for s in &mut self.slots {
                    s.send_window += delta;
                }
            }
            setting::MAX_FRAME_SIZE => {
                if !(frame::DEFAULT_MAX_FRAME as u32..=0xff_ffff).contains(&v) {
                    return Err(err(
                        code::PROTOCOL_ERROR,
                        "SETTINGS_MAX_FRAME_SIZE out of range",
                    ));
                }
                self.peer_frame = v as usize;
            }
            setting::ENABLE_PUSH if v > 1 => {
                return Err(err(code::PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH not 0 or 1"));
            }
            // Our encoder never indexes, so the server's table size does not matter.
            _ => {}
        }
        Ok(())
    }

    fn on_ping(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if p.len() != 8 {
            return Err(err(code::FRAME_SIZE_ERROR, "PING not 8 bytes"));
        }
        if h.stream != 0 {
            return Err(err(code::PROTOCOL_ERROR, "PING on a stream"));
        }
        if h.flags & flag::ACK == 0 {
            let mut data = [0u8; 8];
            data.copy_from_slice(p);
            frame::put_ping(&mut self.out, true, &data);
        } else {
            self.ping_out = false;
        }
        Ok(())
    }

    fn on_goaway(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if p.len() < 8 {
            return Err(err(code::FRAME_SIZE_ERROR, "GOAWAY under 8 bytes"));
        }
        if h.stream != 0 {
            return Err(err(code::PROTOCOL_ERROR, "GOAWAY on a stream"));
        }
        let last = frame::be32(p, 0) & frame::MAX_WINDOW;
        let c = frame::be32(p, 4);
        self.state = ConnState::GoingAway;
        self.events.push_back(Event::GoAway { last, code: c });
        for slot in 0..self.slots.len() {
            let s = &self.slots[slot];
            if s.id > last && matches!(s.state, StreamState::Open | StreamState::HalfClosedLocal) {
                self.close_slot(slot);
                self.events.push_back(Event::Refused { slot });
            }
        }
        Ok(())
    }

    fn on_window_update(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if p.len() != 4 {
            return Err(err(code::FRAME_SIZE_ERROR, "WINDOW_UPDATE not 4 bytes"));
        }
        let inc = i64::from(frame::be32(p, 0) & frame::MAX_WINDOW);
        if inc == 0 {
            return Err(err(code::PROTOCOL_ERROR, "WINDOW_UPDATE of 0"));
        }
        let max = i64::from(frame::MAX_WINDOW);
        if h.stream == 0 {
            self.send_window += inc;
            if self.send_window > max {
                return Err(err(
                    code::FLOW_CONTROL_ERROR,
                    "connection window over 2^31-1",
                ));
            }
        } else if let Some(slot) = slot_of(&self.slots, h.stream) {
            let s = &mut self.slots[slot];
            s.send_window += inc;
            if s.send_window > max {
                return Err(err(code::FLOW_CONTROL_ERROR, "stream window over 2^31-1"));
            }
        }
        self.send_waiting();
        Ok(())
    }
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
