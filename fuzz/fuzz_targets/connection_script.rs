#![no_main]
//! See `netproto_tests::fuzz::connection_script` for the input format and the invariants.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = netproto_tests::fuzz::connection_script(data);
});
