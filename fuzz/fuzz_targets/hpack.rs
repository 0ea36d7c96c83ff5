//! Fuzz target: the HPACK decoder (src/net/h2/hpack.rs) over sequences of header blocks,
//! against `loona-hpack`'s, and round trips of fields; see `net::h2::fuzz::hpack` for the
//! input layout and the checks.
#![no_main]

use vblast::net::h2::fuzz;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::hpack(data);
});
