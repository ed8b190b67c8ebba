//! Fuzz target `hook_output`: see `etch_fuzz::hooks`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::hooks::check(data));
