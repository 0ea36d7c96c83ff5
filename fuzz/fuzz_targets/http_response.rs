//! Fuzz target: the incremental HTTP/1.1 response parser (src/http.rs), fed whole and in
//! pieces; see `http::fuzz::response` for the input layout and the checks.
#![no_main]

// Until vblast has a library target, the module is compiled in here; then:
// `use vblast::http;`
#[path = "../../src/http.rs"]
#[allow(dead_code)]
mod http;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = http::fuzz::response(data);
});
