//! What each fuzz target asserts about one input. The cargo-fuzz
//! targets in `fuzz/` (nightly, run by `bench/fuzz.sh`) call these; the
//! stable test `tests/replay.rs` runs every seed and every input a
//! fuzzer ever crashed on (`fuzz/regressions/TARGET/`) through them, so
//! CI replays them with no fuzzer.
//!
//! Each check takes arbitrary bytes and panics only when etch breaks a
//! promise: a parser panicking on hostile input, or more than "no
//! panic" where it can be said: a session log that loads loads again
//! the same from what it loaded; a stream decoder fed the same bytes in
//! any chunking yields the same events; a configuration that loads
//! clean loads again the same from its effective TOML.
//!
//! This crate must not know how inputs are found or mutated.

// A broken promise is a panic: that is how a fuzzer learns of it.
#![allow(clippy::panic)]

pub mod acp;
pub mod chunks;
pub mod config;
pub mod framing;
pub mod hooks;
pub mod ninep;
pub mod pi;
pub mod plugin;
pub mod rpc;
pub mod scratch;
pub mod serve;
pub mod session;
pub mod skills;
pub mod sse;

/// A check: one input, panicking when a promise is broken.
pub type Check = fn(&[u8]);

/// Every target by name (the names of `fuzz/fuzz_targets/*.rs` and of
/// the seed and regression directories).
pub const TARGETS: [(&str, Check); 16] = [
    ("session_log", session::check),
    ("sse_chat", sse::check_chat),
    ("sse_responses", sse::check_responses),
    ("sse_anthropic", sse::check_anthropic),
    ("ninep_wire", ninep::check),
    ("acp_rpc", acp::check),
    ("rpc_command", rpc::check),
    ("config", config::check),
    ("pi_import", pi::check),
    ("sse_frames", sse::check_frames),
    ("hook_output", hooks::check),
    ("skill_md", skills::check),
    ("responses_ws", sse::check_responses_ws),
    ("plugin_line", plugin::check),
    ("rpc_framing", framing::check),
    ("serve_body", serve::check),
];
