//! Fuzz target `sse_responses`: see `etch_fuzz::sse`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::sse::check_responses(data));
