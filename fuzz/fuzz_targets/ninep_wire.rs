//! Fuzz target `ninep_wire`: see `etch_fuzz::ninep`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::ninep::check(data));
