//! Fuzz target `serve_body`: see `etch_fuzz::serve`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::serve::check(data));
