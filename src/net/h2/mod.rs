//! HTTP/2 on the wire (RFC 9113), for the load engine's HTTP/2 connections
//! (`src/engine/h2.rs`): `frame` the frame codec, `conn` one client connection as a
//! state machine over bytes (preface, SETTINGS, flow control, streams, GOAWAY), and
//! `request` requests as header blocks, from the HTTP/1.1 bytes of a request template,
//! what does not change per request encoded once.
//!
//! HPACK: the crates looked at were `hpack` (no release since 2016), its maintained fork
//! `loona-hpack` (fluke-hpack's successor, by the loona server's authors) and
//! `httlib-hpack` (decodes into owned vectors per field). `loona-hpack` decodes the
//! dynamic table and Huffman strings as Go's server (OpenBao, Vault) and nginx send them,
//! but its block decoder builds a Huffman hash table per string (~200 allocations per
//! response), and its Huffman decoder, built once, still hashes per bit (two thirds of
//! the client's CPU against nginx, measured with perf). So `hpack` walks the blocks itself
//! (RFC 7541 appendix C vectors and a fuzz target, `fuzz`) and `huffman` decodes strings
//! by table, from `httlib-huffman`'s copy of the RFC's code table (that crate's own
//! decoder allocates per string). Requests are encoded by
//! `request` itself: literals that never touch the dynamic table, which is a few lines of
//! RFC 7541 §5 and §6.2 and keeps the block the same on every connection.
//! `Http2Options` is what a run asks for, as the commands parse it.

pub mod conn;
pub mod frame;
#[doc(hidden)]
pub mod fuzz;
pub mod hpack;
pub mod huffman;
pub mod request;

pub use conn::{ConnError, ConnState, Event, H2Conn, Local, StreamState};

/// How a run speaks HTTP/2 (`--http2`, `--http2-prior-knowledge`, `--streams`, or a
/// vault-benchmark file against https://), parsed once by the commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Http2Options {
    /// h2c on plain TCP without asking (prior knowledge); else `h2` by ALPN over TLS.
    pub prior_knowledge: bool,
    /// Concurrent streams per connection asked for (`--streams`, at least 1).
    pub streams: u32,
    /// What the run does when a TLS server does not offer `h2`.
    pub without_h2: WithoutH2,
}

/// What a run asking for `h2` by ALPN does when the server chooses something else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WithoutH2 {
    /// `--http2`: exit 2, naming the server's choice.
    Refuse,
    /// `--http2-fallback`: HTTP/1.1 over the same number of connections, with a note.
    Http1,
    /// A vault-benchmark file's run: HTTP/1.1 over these connections (one per worker), as
    /// vault-benchmark's Go client falls back, with a note.
    Http1Over { connections: u64 },
}

impl Http2Options {
    /// The protocol a run speaks, as the report header and the results file name it.
    pub fn name(h2: Option<Http2Options>) -> String {
        match h2 {
            None => "HTTP/1.1",
            Some(h) if h.prior_knowledge => "HTTP/2 (h2c)",
            Some(_) => "HTTP/2 (h2)",
        }
        .into()
    }

    /// The connections of the HTTP/1.1 run this one falls back to, from its `connections`.
    pub fn connections_without_h2(&self, connections: u64) -> u64 {
        match self.without_h2 {
            WithoutH2::Http1Over { connections: n } => n,
            WithoutH2::Refuse | WithoutH2::Http1 => connections,
        }
    }

    /// What a run that asked `asked` spoke: None (HTTP/1.1) when it fell back, which its
    /// figures show by carrying no HTTP/2 counts (`has_h2_figures` false).
    pub fn spoken(asked: Option<Http2Options>, has_h2_figures: bool) -> Option<Http2Options> {
        asked.filter(|_| has_h2_figures)
    }
}

/// What a run asks of its connections beside HTTP/2, as `H2Refusal::of` reads it.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunShape {
    /// The address is https://.
    pub tls: bool,
    pub keepalive: bool,
    /// A shard of a run spread over several processes or machines (`--shard`).
    pub shard: bool,
}

/// Why a run cannot go over vblast's HTTP/2: one place for the engine (which refuses),
/// the commands (which refuse before anything is sent) and a vault-benchmark file's run
/// (which goes on over HTTP/1.1 with a note, `feature`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum H2Refusal {
    /// `--http2` (ALPN) to an http:// address.
    AlpnNeedsTls,
    /// `--http2-prior-knowledge` (h2c) to an https:// address.
    PriorKnowledgeNeedsPlain,
    NoKeepalive,
    Shard,
}

impl H2Refusal {
    /// The first thing in `shape` that `h2` cannot do, if any. The protocol pairs
    /// (ALPN over TLS, h2c over TCP) come first, then what vblast's HTTP/2 does not do yet.
    pub fn of(h2: &Http2Options, shape: &RunShape) -> Option<H2Refusal> {
        if !h2.prior_knowledge && !shape.tls {
            Some(H2Refusal::AlpnNeedsTls)
        } else if h2.prior_knowledge && shape.tls {
            Some(H2Refusal::PriorKnowledgeNeedsPlain)
        } else {
            H2Refusal::not_yet(shape)
        }
    }

    /// What vblast's HTTP/2 does not do (yet) of `shape`, whatever the protocol pair.
    pub fn not_yet(shape: &RunShape) -> Option<H2Refusal> {
        if !shape.keepalive {
            Some(H2Refusal::NoKeepalive)
        } else if shape.shard {
            Some(H2Refusal::Shard)
        } else {
            None
        }
    }

    /// The feature in words, for a note ("vblast's HTTP/2 does not do {feature} yet").
    pub fn feature(self) -> &'static str {
        match self {
            H2Refusal::AlpnNeedsTls => "ALPN over plain TCP",
            H2Refusal::PriorKnowledgeNeedsPlain => "h2c over TLS",
            H2Refusal::NoKeepalive => "--no-keepalive",
            H2Refusal::Shard => "shards",
        }
    }

    /// The refusal in one sentence, for exit 2.
    pub fn message(self) -> &'static str {
        match self {
            H2Refusal::AlpnNeedsTls => {
                "--http2 negotiates h2 by ALPN over TLS: use an https:// address, or --http2-prior-knowledge for h2c on http://"
            }
            H2Refusal::PriorKnowledgeNeedsPlain => {
                "--http2-prior-knowledge speaks h2c on http://: over https:// use --http2 (ALPN)"
            }
            H2Refusal::NoKeepalive => {
                "HTTP/2 multiplexes requests over kept-alive connections: --no-keepalive does not apply"
            }
            H2Refusal::Shard => {
                "HTTP/2 runs do not support shards (--shard) yet (docs/http2.md): run them over HTTP/1.1"
            }
        }
    }
}

/// The receive window of each stream: 1 MiB, so that a 1 MiB KV value needs one round of
/// WINDOW_UPDATEs at most.
pub const STREAM_WINDOW: u32 = 1 << 20;
