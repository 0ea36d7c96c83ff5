//! Fuzz target: TLS record opening in place (src/tlsio.rs): sealed, corrupted and split
//! records, or raw bytes; see `tlsio::fuzz::records_input` for the input layout.
#![no_main]

use vblast::net::tlsio;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tlsio::fuzz::records_input(data);
});
