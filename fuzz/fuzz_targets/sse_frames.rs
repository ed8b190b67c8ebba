//! Fuzz target `sse_frames`: see `etch_fuzz::sse`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::sse::check_frames(data));
