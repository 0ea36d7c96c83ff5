//! HTTP/2 on the wire (RFC 9113), for the load engine's HTTP/2 connections
//! (`src/engine/h2.rs`): `frame` the frame codec, `conn` one client connection as a
//! state machine over bytes (preface, SETTINGS, flow control, streams, GOAWAY), and
//! `request` requests as header blocks, from the HTTP/1.1 bytes of a request template,
//! what does not change per request encoded once.
//!
//! HPACK decoding uses the `loona-hpack` crate (the maintained fork of `hpack`, by the
//! authors of the loona HTTP/2 server): it decodes the dynamic table and Huffman-coded
//! strings, as Go's server (OpenBao, Vault) and nginx send them, and passes the RFC 7541
//! appendix C vectors (`conn_tests.rs` runs C.6). `hpack` itself has had no release since
//! 2016, and `httlib-hpack` decodes into owned vectors per field. Requests are encoded by
//! `request` itself: literals that never touch the dynamic table, which is a few lines of
//! RFC 7541 §5 and §6.2 and keeps the block the same on every connection.

pub mod conn;
pub mod frame;
pub mod request;

pub use conn::{ConnError, ConnState, Event, H2Conn, Local, StreamState};
