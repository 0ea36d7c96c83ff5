//! The connection state machine against frames written by the test itself, byte by byte
//! as a server would send them (an independent server is in tests/integration/http2.rs).

use super::*;

fn f(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    frame::put_head(&mut v, payload.len(), kind, flags, stream);
    v.extend_from_slice(payload);
    v
}

fn block(enc: &mut loona_hpack::Encoder<'_>, h: &[(&[u8], &[u8])]) -> Vec<u8> {
    enc.encode(h.iter().map(|(n, v)| (*n, *v)))
}

/// A connection whose server has sent its SETTINGS (`streams` allowed, if any).
fn open(m: usize, streams: Option<u32>, window: u32) -> H2Conn {
    let mut c = H2Conn::new(Local {
        streams: m,
        window,
        headers: false,
    });
    let mut p = Vec::new();
    if let Some(n) = streams {
        p.extend_from_slice(&setting::MAX_CONCURRENT_STREAMS.to_be_bytes());
        p.extend_from_slice(&n.to_be_bytes());
    }
    c.feed(&f(kind::SETTINGS, 0, 0, &p)).unwrap();
    assert_eq!(c.events.pop_front(), Some(Event::Ready));
    c.out.clear();
    c
}

/// The frames in `out` as (head, payload).
fn frames(out: &[u8]) -> Vec<(Head, Vec<u8>)> {
    let mut v = Vec::new();
    let mut at = 0;
    while let Some(h) = Head::parse(&out[at..]) {
        v.push((h, out[at + 9..at + 9 + h.len].to_vec()));
        at += 9 + h.len;
    }
    v
}

#[test]
fn the_preface_and_settings_then_the_servers_settings_acknowledged() {
    let mut c = H2Conn::new(Local {
        streams: 8,
        window: 1 << 20,
        headers: false,
    });
    assert!(c.out.starts_with(frame::PREFACE));
    let fs = frames(&c.out[frame::PREFACE.len()..]);
    assert_eq!(fs[0].0.kind, kind::SETTINGS);
    let pairs: Vec<_> = frame::settings_pairs(&fs[0].1).collect();
    assert!(pairs.contains(&(setting::ENABLE_PUSH, 0)));
    assert!(pairs.contains(&(setting::INITIAL_WINDOW_SIZE, 1 << 20)));
    // The connection window raised to 8 streams' worth.
    assert_eq!(fs[1].0.kind, kind::WINDOW_UPDATE);
    assert_eq!(frame::be32(&fs[1].1, 0), 8 * (1 << 20) - 65_535);
    assert_eq!(c.state(), ConnState::PrefaceSent);
    assert!(!c.can_start());
    c.out.clear();
    // Our SETTINGS acknowledged first, then the server's own with a limit of 3 streams.
    c.feed(&f(kind::SETTINGS, flag::ACK, 0, &[])).unwrap();
    assert_eq!(c.state(), ConnState::SettingsAcked);
    c.feed(&f(kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 3]))
        .unwrap();
    assert_eq!(c.state(), ConnState::Open);
    assert_eq!(c.events.pop_front(), Some(Event::Ready));
    assert_eq!(c.allowed(), 3);
    assert_eq!(c.server_limit(), Some(3));
    let fs = frames(&c.out);
    assert_eq!((fs[0].0.kind, fs[0].0.flags), (kind::SETTINGS, flag::ACK));
}

#[test]
fn a_request_and_its_padded_continued_response_with_trailers() {
    let mut c = open(2, None, 65_535);
    let slot = c.start(b"\x82\x86\x84", b"", true).unwrap();
    let fs = frames(&c.out);
    assert_eq!(fs.len(), 1);
    assert_eq!(fs[0].0.kind, kind::HEADERS);
    assert_eq!(fs[0].0.flags, flag::END_HEADERS | flag::END_STREAM);
    assert_eq!(fs[0].0.stream, 1);
    let mut enc = loona_hpack::Encoder::new();
    let b = block(
        &mut enc,
        &[(b":status", b"200"), (b"content-type", b"application/json")],
    );
    let (a, rest) = b.split_at(3);
    // HEADERS padded, with a priority, then CONTINUATION; DATA padded; trailers.
    let mut head = vec![2u8, 0, 0, 0, 0, 16];
    head.extend_from_slice(a);
    head.extend_from_slice(&[0, 0]);
    let mut wire = f(kind::HEADERS, flag::PADDED | flag::PRIORITY, 1, &head);
    wire.extend(f(kind::CONTINUATION, flag::END_HEADERS, 1, rest));
    wire.extend(f(kind::DATA, flag::PADDED, 1, b"\x03{\"a\":1}PAD"));
    let t = block(&mut enc, &[(b"grpc-status", b"0")]);
    wire.extend(f(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &t,
    ));
    // Fed a byte at a time: frames split anywhere are joined.
    for byte in &wire {
        c.feed(std::slice::from_ref(byte)).unwrap();
    }
    assert_eq!(
        c.events.pop_front(),
        Some(Event::Response { slot, status: 200 })
    );
    assert_eq!(c.body(slot), b"{\"a\":1}");
    assert_eq!(c.active(), 0);
    assert!(c.can_start());
}

#[test]
fn rfc_7541_c_6_huffman_responses_decode_with_the_dynamic_table() {
    // RFC 7541 Appendix C.6.1 and C.6.2: Huffman-coded, the second indexing the first's
    // entries from the dynamic table.
    let first: &[u8] = &[
        0x48, 0x82, 0x64, 0x02, 0x58, 0x85, 0xae, 0xc3, 0x77, 0x1a, 0x4b, 0x61, 0x96, 0xd0, 0x7a,
        0xbe, 0x94, 0x10, 0x54, 0xd4, 0x44, 0xa8, 0x20, 0x05, 0x95, 0x04, 0x0b, 0x81, 0x66, 0xe0,
        0x82, 0xa6, 0x2d, 0x1b, 0xff, 0x6e, 0x91, 0x9d, 0x29, 0xad, 0x17, 0x18, 0x63, 0xc7, 0x8f,
        0x0b, 0x97, 0xc8, 0xe9, 0xae, 0x82, 0xae, 0x43, 0xd3,
    ];
    let second: &[u8] = &[0x48, 0x83, 0x64, 0x0e, 0xff, 0xc1, 0xc0, 0xbf];
    let mut c = open(2, None, 65_535);
    let a = c.start(b"\x82", b"", false).unwrap();
    c.feed(&f(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        first,
    ))
    .unwrap();
    assert_eq!(
        c.events.pop_front(),
        Some(Event::Response {
            slot: a,
            status: 302
        })
    );
    let b = c.start(b"\x82", b"", false).unwrap();
    c.feed(&f(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        3,
        second,
    ))
    .unwrap();
    assert_eq!(
        c.events.pop_front(),
        Some(Event::Response {
            slot: b,
            status: 307
        })
    );
}

#[test]
fn ping_is_answered_with_its_data() {
    let mut c = open(1, None, 65_535);
    c.feed(&f(kind::PING, 0, 0, b"12345678")).unwrap();
    let fs = frames(&c.out);
    assert_eq!((fs[0].0.kind, fs[0].0.flags), (kind::PING, flag::ACK));
    assert_eq!(fs[0].1, b"12345678");
    // An answer to our own PING is not answered again.
    c.out.clear();
    c.feed(&f(kind::PING, flag::ACK, 0, b"12345678")).unwrap();
    assert!(c.out.is_empty());
}

#[test]
fn a_mebibyte_response_gets_window_updates_as_it_is_consumed() {
    let window = 65_535;
    let mut c = open(1, None, window);
    let slot = c.start(b"\x82", b"", true).unwrap();
    c.out.clear();
    let mut enc = loona_hpack::Encoder::new();
    c.feed(&f(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &block(&mut enc, &[(b":status", b"200")]),
    ))
    .unwrap();
    let chunk = vec![b'x'; 16_384];
    let total = 1 << 20;
    let (mut conn_credit, mut stream_credit) = (0u64, 0u64);
    for k in 0..total / chunk.len() {
        let last = (k + 1) * chunk.len() == total;
        let flags = if last { flag::END_STREAM } else { 0 };
        // Never beyond the windows the client gave back: else this is a FLOW_CONTROL_ERROR.
        c.feed(&f(kind::DATA, flags, 1, &chunk)).unwrap();
        for (h, p) in frames(&c.out) {
            assert_eq!(h.kind, kind::WINDOW_UPDATE);
            let inc = u64::from(frame::be32(&p, 0));
            if h.stream == 0 {
                conn_credit += inc;
            } else {
                stream_credit += inc;
            }
        }
        c.out.clear();
    }
    assert_eq!(
        c.events.pop_front(),
        Some(Event::Response { slot, status: 200 })
    );
    assert_eq!(c.body(slot).len(), total);
    assert!(
        conn_credit + u64::from(window) >= total as u64,
        "{conn_credit}"
    );
    assert!(
        stream_credit + u64::from(window) >= total as u64 - 16_384,
        "{stream_credit}"
    );
}

#[test]
fn a_body_larger_than_the_servers_window_waits_for_its_update() {
    let mut c = H2Conn::new(Local {
        streams: 1,
        window: 65_535,
        headers: false,
    });
    // The server's streams start with a 10-byte window.
    c.feed(&f(kind::SETTINGS, 0, 0, &[0, 4, 0, 0, 0, 10]))
        .unwrap();
    c.out.clear();
    let body = vec![b'b'; 25];
    c.start(b"\x83", &body, false).unwrap();
    let fs = frames(&c.out);
    assert_eq!(fs[0].0.flags, flag::END_HEADERS);
    assert_eq!(
        (fs[1].0.kind, fs[1].1.len(), fs[1].0.flags),
        (kind::DATA, 10, 0)
    );
    assert_eq!(fs.len(), 2);
    c.out.clear();
    c.feed(&f(kind::WINDOW_UPDATE, 0, 1, &100u32.to_be_bytes()))
        .unwrap();
    let fs = frames(&c.out);
    assert_eq!(
        (fs[0].0.kind, fs[0].1.len(), fs[0].0.flags),
        (kind::DATA, 15, flag::END_STREAM)
    );
}

#[test]
fn a_header_block_over_the_frame_size_goes_out_as_headers_and_continuation() {
    let mut c = open(1, None, 65_535);
    let big = vec![0u8; 40_000];
    c.start(&big, b"", false).unwrap();
    let fs = frames(&c.out);
    let kinds: Vec<_> = fs.iter().map(|(h, _)| (h.kind, h.flags)).collect();
    assert_eq!(
        kinds,
        [
            (kind::HEADERS, flag::END_STREAM),
            (kind::CONTINUATION, 0),
            (kind::CONTINUATION, flag::END_HEADERS)
        ]
    );
    assert_eq!(fs.iter().map(|(_, p)| p.len()).sum::<usize>(), 40_000);
}

#[test]
fn rst_stream_is_reported_with_its_code_and_frees_the_slot() {
    let mut c = open(1, None, 65_535);
    let slot = c.start(b"\x82", b"", false).unwrap();
    assert!(!c.can_start());
    c.feed(&f(
        kind::RST_STREAM,
        0,
        1,
        &code::REFUSED_STREAM.to_be_bytes(),
    ))
    .unwrap();
    assert_eq!(c.events.pop_front(), Some(Event::Reset { slot, code: 7 }));
    assert!(c.can_start());
    // A late frame of the reset stream is ignored.
    c.feed(&f(kind::DATA, 0, 1, b"late")).unwrap();
}

#[test]
fn goaway_refuses_the_streams_above_its_last_id_and_completes_the_rest() {
    let mut c = open(3, None, 65_535);
    let s: Vec<usize> = (0..3)
        .map(|_| c.start(b"\x82", b"", false).unwrap())
        .collect();
    let mut p = 3u32.to_be_bytes().to_vec();
    p.extend_from_slice(&code::NO_ERROR.to_be_bytes());
    c.feed(&f(kind::GOAWAY, 0, 0, &p)).unwrap();
    assert_eq!(c.state(), ConnState::GoingAway);
    assert_eq!(
        c.events.pop_front(),
        Some(Event::GoAway { last: 3, code: 0 })
    );
    assert_eq!(c.events.pop_front(), Some(Event::Refused { slot: s[2] }));
    assert!(!c.can_start() && !c.finished());
    let mut enc = loona_hpack::Encoder::new();
    for id in [1, 3] {
        let b = block(&mut enc, &[(b":status", b"204")]);
        c.feed(&f(
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            id,
            &b,
        ))
        .unwrap();
    }
    assert_eq!(c.events.len(), 2);
    assert!(c.finished());
}

#[test]
fn malformed_frames_and_overflows_close_with_the_right_goaway_code() {
    let cases: Vec<(Vec<u8>, u32)> = vec![
        (f(kind::PING, 0, 0, b"1234567"), code::FRAME_SIZE_ERROR),
        (f(kind::DATA, 0, 0, b"x"), code::PROTOCOL_ERROR),
        (f(kind::SETTINGS, 0, 0, b"12345"), code::FRAME_SIZE_ERROR),
        (
            f(kind::WINDOW_UPDATE, 0, 0, &0u32.to_be_bytes()),
            code::PROTOCOL_ERROR,
        ),
        (
            f(kind::WINDOW_UPDATE, 0, 0, &frame::MAX_WINDOW.to_be_bytes()),
            code::FLOW_CONTROL_ERROR,
        ),
        (
            f(kind::CONTINUATION, flag::END_HEADERS, 1, b""),
            code::PROTOCOL_ERROR,
        ),
        (
            f(kind::PUSH_PROMISE, 0, 1, &[0, 0, 0, 2]),
            code::PROTOCOL_ERROR,
        ),
        (
            f(
                kind::HEADERS,
                flag::END_HEADERS,
                1,
                &[0xff, 0xff, 0xff, 0x0f],
            ),
            code::COMPRESSION_ERROR,
        ),
        (
            f(kind::DATA, 0, 1, &vec![0; 20_000]),
            code::FRAME_SIZE_ERROR,
        ),
    ];
    for (wire, want) in cases {
        let mut c = open(1, None, 65_535);
        c.start(b"\x82", b"", false).unwrap();
        c.out.clear();
        let e = c.feed(&wire).unwrap_err();
        assert_eq!(e.code, want, "{}", e.why);
        assert_eq!(c.state(), ConnState::Closed);
        let fs = frames(&c.out);
        assert_eq!(fs.last().unwrap().0.kind, kind::GOAWAY);
        assert_eq!(frame::be32(&fs.last().unwrap().1, 4), want);
    }
    // A header block over 64 KiB, in CONTINUATION frames.
    let mut c = open(1, None, 65_535);
    c.start(b"\x82", b"", false).unwrap();
    c.feed(&f(kind::HEADERS, 0, 1, &[0x40; 16_000])).unwrap();
    let mut r = Ok(());
    for _ in 0..5 {
        r = c.feed(&f(kind::CONTINUATION, 0, 1, &[0x40; 16_000]));
        if r.is_err() {
            break;
        }
    }
    assert_eq!(r.unwrap_err().code, code::ENHANCE_YOUR_CALM);
    // DATA beyond the stream window the client gave.
    let mut c = open(1, None, 100);
    c.start(b"\x82", b"", false).unwrap();
    let mut enc = loona_hpack::Encoder::new();
    c.feed(&f(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &block(&mut enc, &[(b":status", b"200")]),
    ))
    .unwrap();
    assert_eq!(
        c.feed(&f(kind::DATA, 0, 1, &[0; 101])).unwrap_err().code,
        code::FLOW_CONTROL_ERROR
    );
}

#[test]
fn a_cancelled_stream_is_reset_and_what_follows_on_it_is_dropped() {
    let mut c = open(2, None, 65_535);
    let a = c.start(b"\x82", b"", false).unwrap();
    let b = c.start(b"\x82", b"", false).unwrap();
    c.out.clear();
    assert!(c.cancel(a));
    assert!(!c.cancel(a), "a slot not under way");
    let fs = frames(&c.out);
    assert_eq!(fs.len(), 1);
    assert_eq!((fs[0].0.kind, fs[0].0.stream), (kind::RST_STREAM, 1));
    assert_eq!(frame::be32(&fs[0].1, 0), code::CANCEL);
    assert_eq!(c.active(), 1);
    // The server's late answer on stream 1 is read and dropped (its DATA still counts
    // against the connection window); stream 3's answer goes through.
    c.feed(&f(kind::HEADERS, flag::END_HEADERS, 1, &[0x88]))
        .unwrap();
    c.feed(&f(kind::DATA, flag::END_STREAM, 1, b"late"))
        .unwrap();
    c.feed(&f(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        3,
        &[0x88],
    ))
    .unwrap();
    assert_eq!(
        c.events.pop_front(),
        Some(Event::Response {
            slot: b,
            status: 200
        })
    );
    assert!(c.events.is_empty());
    // The freed slots carry the next streams.
    let next = c.start(b"\x82", b"", false).unwrap();
    assert_eq!(c.stream_id(next), 5);
    assert_eq!(c.active(), 1);
}

#[test]
fn a_ping_of_ours_is_sent_once_until_its_ack() {
    let mut c = open(1, None, 65_535);
    c.ping();
    assert!(c.ping_unanswered());
    let n = c.out.len();
    c.ping();
    assert_eq!(c.out.len(), n, "one PING at a time");
    let fs = frames(&c.out);
    assert_eq!((fs[0].0.kind, fs[0].0.flags), (kind::PING, 0));
    c.feed(&f(kind::PING, flag::ACK, 0, &fs[0].1)).unwrap();
    assert!(!c.ping_unanswered());
}

#[test]
fn with_headers_a_429s_quota_and_a_307s_location_are_kept_per_stream() {
    let mut c = H2Conn::new(Local {
        streams: 2,
        window: 65_535,
        headers: true,
    });
    c.feed(&f(kind::SETTINGS, 0, 0, &[])).unwrap();
    assert_eq!(c.events.pop_front(), Some(Event::Ready));
    let a = c.start(b"\x82\x86\x84", b"", false).unwrap();
    let b = c.start(b"\x82\x86\x84", b"", false).unwrap();
    let mut enc = loona_hpack::Encoder::new();
    let quota: &[(&[u8], &[u8])] = &[
        (b":status", b"429"),
        (b"retry-after", b"3"),
        (b"x-ratelimit-limit", b"10"),
    ];
    // The 307 first, on stream 3; then the 429 on stream 1, twice indexed by the table.
    let loc = block(
        &mut enc,
        &[(b":status", b"307"), (b"location", b"https://n2:8200/v1/x")],
    );
    let mut wire = f(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 3, &loc);
    wire.extend(f(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &block(&mut enc, quota),
    ));
    c.feed(&wire).unwrap();
    assert_eq!(c.location(b), Some(&b"https://n2:8200/v1/x"[..]));
    assert_eq!(c.quota(b), None);
    let q = c.quota(a).unwrap();
    assert_eq!((q.retry_after, q.limit), (3, 10));
    assert_eq!(c.location(a), None);
    // The same fields again on new streams: indexed references read as well.
    let a2 = c.start(b"\x82\x86\x84", b"", false).unwrap();
    c.feed(&f(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        5,
        &block(&mut enc, quota),
    ))
    .unwrap();
    assert_eq!(c.quota(a2).map(|q| q.retry_after), Some(3));
    // Without `headers`, only :status is read.
    let mut d = open(1, None, 65_535);
    let s = d.start(b"\x82\x86\x84", b"", false).unwrap();
    let mut enc = loona_hpack::Encoder::new();
    d.feed(&f(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &block(&mut enc, quota),
    ))
    .unwrap();
    assert_eq!(
        d.events.pop_front(),
        Some(Event::Response {
            slot: s,
            status: 429
        })
    );
    assert_eq!(d.quota(s), None);
}

/// A response (HEADERS, then DATA in two frames) cut in two at every byte offset, as
/// partial reads deliver it: nothing is reported until its last byte, then the one
/// response with its whole body.
#[test]
fn a_response_split_at_every_byte_offset_is_one_response() {
    let mut enc = loona_hpack::Encoder::new();
    let b = block(&mut enc, &[(b":status", b"200")]);
    let mut wire = f(kind::HEADERS, flag::END_HEADERS, 1, &b);
    wire.extend(f(kind::DATA, 0, 1, b"{\"a\""));
    wire.extend(f(kind::DATA, flag::END_STREAM, 1, b":1}"));
    for at in 0..=wire.len() {
        let mut c = open(1, None, 65_535);
        let slot = c.start(b"\x82", b"", true).unwrap();
        let (a, rest) = wire.split_at(at);
        c.feed(a).unwrap();
        if at < wire.len() {
            assert!(c.events.is_empty(), "cut at {at}: {:?}", c.events);
            assert_eq!(c.active(), 1, "cut at {at}");
        }
        c.feed(rest).unwrap();
        assert_eq!(
            c.events.pop_front(),
            Some(Event::Response { slot, status: 200 }),
            "cut at {at}"
        );
        assert_eq!(c.body(slot), b"{\"a\":1}", "cut at {at}");
        assert_eq!(c.body_len(slot), 7, "cut at {at}");
        assert!(c.can_start());
    }
}

/// A server that closes mid-response: whatever prefix of the response came, the stream
/// is still under way and nothing was reported, so the engine fails it as a read error
/// (the connection's end is the driver's to see, src/engine/h2.rs).
#[test]
fn a_close_mid_response_leaves_the_stream_unanswered() {
    let mut enc = loona_hpack::Encoder::new();
    let b = block(&mut enc, &[(b":status", b"200")]);
    let mut wire = f(kind::HEADERS, flag::END_HEADERS, 1, &b);
    wire.extend(f(kind::DATA, flag::END_STREAM, 1, b"hello"));
    for at in 0..wire.len() {
        let mut c = open(1, None, 65_535);
        c.start(b"\x82", b"", true).unwrap();
        c.feed(&wire[..at]).unwrap();
        assert!(c.events.is_empty(), "cut at {at}");
        assert_eq!(c.active(), 1, "cut at {at}");
        assert!(!c.finished());
    }
}

/// An RST_STREAM and a GOAWAY arriving in the same read as another stream's response:
/// each reported, in order, and the response completed.
#[test]
fn a_reset_a_response_and_a_goaway_in_one_read() {
    let mut c = open(3, None, 65_535);
    let s: Vec<usize> = (0..3)
        .map(|_| c.start(b"\x82", b"", false).unwrap())
        .collect();
    let mut enc = loona_hpack::Encoder::new();
    let b = block(&mut enc, &[(b":status", b"200")]);
    let mut wire = f(kind::RST_STREAM, 0, 1, &code::INTERNAL_ERROR.to_be_bytes());
    wire.extend(f(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        3,
        &b,
    ));
    let mut g = 3u32.to_be_bytes().to_vec();
    g.extend_from_slice(&code::NO_ERROR.to_be_bytes());
    wire.extend(f(kind::GOAWAY, 0, 0, &g));
    c.feed(&wire).unwrap();
    let got: Vec<Event> = c.events.drain(..).collect();
    assert_eq!(
        got,
        [
            Event::Reset {
                slot: s[0],
                code: code::INTERNAL_ERROR
            },
            Event::Response {
                slot: s[1],
                status: 200
            },
            Event::GoAway { last: 3, code: 0 },
            Event::Refused { slot: s[2] },
        ]
    );
    assert!(c.finished());
}

/// `--http2-prior-knowledge` against an HTTP/1.1 server: its answer to the preface (a
/// 400, in HTTP/1.1) is one connection error that says so, not a frame of 4 MiB.
#[test]
fn an_http1_answer_to_the_preface_is_said_as_such() {
    let mut c = H2Conn::new(Local {
        streams: 1,
        window: 65_535,
        headers: false,
    });
    let e = c
        .feed(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        .unwrap_err();
    assert!(e.http1, "{e:?}");
    assert_eq!(c.state(), ConnState::Closed);
    // Once the server's SETTINGS came, the same bytes are a frame like any other.
    let mut c = open(1, None, 65_535);
    let e = c.feed(b"HTTP/1.1 400 Bad Request\r\n\r\n").unwrap_err();
    assert!(!e.http1);
}
