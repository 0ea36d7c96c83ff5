//! Fuzz target: the incremental HTTP/1.1 response parser (src/http.rs), fed whole and in
//! pieces; see `http::fuzz::response` for the input layout and the checks.
#![no_main]

use vblast::net::http;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = http::fuzz::response(data);
});
