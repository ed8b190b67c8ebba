//! Fuzz target `sse_chat`: see `etch_fuzz::sse`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::sse::check_chat(data));
