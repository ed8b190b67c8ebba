//! Fuzz target `pi_import`: see `etch_fuzz::pi`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::pi::check(data));
