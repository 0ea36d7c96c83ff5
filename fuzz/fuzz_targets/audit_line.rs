//! Fuzz target: the audit log's fast line reader (src/profile/scan.rs) against serde_json:
//! any input is either declined (the profile then asks serde_json) or read exactly as
//! serde_json reads it, and never taken where serde_json refuses it; see
//! `profile::scan::agrees_with_serde`. Seeds: real OpenBao audit lines (HMAC'd values).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    vblast::profile::scan::agrees_with_serde(data);
});
