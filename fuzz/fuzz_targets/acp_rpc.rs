//! Fuzz target `acp_rpc`: see `etch_fuzz::acp`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::acp::check(data));
