#![no_main]
//! See `netproto_tests::fuzz::delta_snapshot` for the input format and the invariants.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = netproto_tests::fuzz::delta_snapshot(data);
});
