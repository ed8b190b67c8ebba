//! Fuzz target `rpc_framing`: see `etch_fuzz::framing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::framing::check(data));
