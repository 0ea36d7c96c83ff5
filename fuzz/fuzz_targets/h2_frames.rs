//! Fuzz target: the HTTP/2 connection's frame reader (src/net/h2/conn.rs) fed server
//! bytes whole and in pieces, between streams started and cancelled; see
//! `net::h2::fuzz::frames` for the input layout and the checks.
#![no_main]

use vblast::net::h2::fuzz;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::frames(data);
});
