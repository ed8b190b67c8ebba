//! Fuzz target `rpc_command`: see `etch_fuzz::rpc`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| etch_fuzz::rpc::check(data));
