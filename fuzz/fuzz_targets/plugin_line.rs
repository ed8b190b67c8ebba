//! Fuzz target `plugin_line`: see `etch_fuzz::plugin`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::plugin::check(data));
