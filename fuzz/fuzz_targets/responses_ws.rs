//! Fuzz target `responses_ws`: see `etch_fuzz::sse`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::sse::check_responses_ws(data));
