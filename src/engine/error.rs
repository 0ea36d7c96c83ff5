//! Why the engine could not run (or went on no more): its own small error type, turned
//! into the crate's `Cause` (an io failure keeps its io error).

use crate::error::{Cause, io_text};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot create event loop: {}", io_text(.0))]
    EventLoop(std::io::Error),
    #[error("cannot create a timer: {}", io_text(.0))]
    Timer(std::io::Error),
    #[error("event loop failed: {}", io_text(.0))]
    Poll(std::io::Error),
    #[error("an event-loop thread panicked")]
    Panicked,
    #[error("https target without TLS settings")]
    NoTlsSettings,
    /// The TLS settings could not be turned into a client configuration.
    #[error("{0}")]
    Tls(Cause),
    #[error("a held run needs keep-alive connections")]
    HeldWithoutKeepalive,
    #[error("a held run cannot change between the open and the closed model")]
    HeldModelChanged,
    /// `--http2` against a TLS server that does not offer h2 by ALPN.
    #[error(
        "--http2: the server at {addr} does not offer h2 by ALPN (it chose {chosen}); add --http2-fallback to run over HTTP/1.1"
    )]
    NoH2 { addr: String, chosen: String },
    /// `--http2-prior-knowledge` against a server that answered the preface in HTTP/1.1.
    #[error(
        "--http2-prior-knowledge: the server at {addr} does not speak h2c (it answered the HTTP/2 preface in HTTP/1.1); run without --http2-prior-knowledge, or use --http2 over https"
    )]
    NoH2c { addr: String },
    /// Something HTTP/2 runs do not do yet (docs/http2.md).
    #[error("{0}")]
    Http2Unsupported(&'static str),
}

impl From<EngineError> for Cause {
    fn from(e: EngineError) -> Cause {
        match e {
            EngineError::EventLoop(source) => Cause::io("cannot create event loop", source),
            EngineError::Timer(source) => Cause::io("cannot create a timer", source),
            EngineError::Poll(source) => Cause::io("event loop failed", source),
            EngineError::Tls(c) => c,
            other => Cause::Said(other.to_string()),
        }
    }
}
