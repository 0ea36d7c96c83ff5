//! Fuzz target: TLS record opening in place (src/tlsio.rs): sealed, corrupted and split
//! records, or raw bytes; see `tlsio::fuzz::records_input` for the input layout.
#![no_main]

// Until vblast has a library target, the module is compiled in here; then:
// `use vblast::tlsio;`
#[path = "../../src/tlsio.rs"]
#[allow(dead_code)]
mod tlsio;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tlsio::fuzz::records_input(data);
});
