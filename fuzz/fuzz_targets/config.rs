//! Fuzz target `config`: see `etch_fuzz::config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::config::check(data));
