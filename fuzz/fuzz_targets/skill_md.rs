//! Fuzz target `skill_md`: see `etch_fuzz::skills`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::skills::check(data));
