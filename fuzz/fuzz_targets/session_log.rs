//! Fuzz target `session_log`: see `etch_fuzz::session`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::session::check(data));
