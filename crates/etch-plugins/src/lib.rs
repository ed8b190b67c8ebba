//! etch's plugin supervisor (E-PLUG in docs/requirements.md): plugins are
//! programs named in `[[plugins]]`, never discovered, started through
//! `sh -c` from the project directory in their own process group with a
//! sanitized environment (`env`), spoken to in JSONL-RPC 0.1.0 over
//! their stdio (`client`: one request at a time per process, bounded
//! frames, a timeout on start-up and on every call, protocol violations
//! fatal), and offered to the model as ordinary tools (`tool`). A
//! [`PluginSet`] starts every plugin concurrently in the background and
//! is a tool source for the registry: a plugin's tools appear once it
//! has answered `initialize`, in configuration order, and disappear when
//! it dies; what went wrong comes back as diagnostics.
//!
//! The wire types are `etch_protocol::plugin`. This crate must not know
//! the session log, the loop or how diagnostics are shown.

mod client;
mod env;
mod error;
mod process;
mod registry;
mod set;
mod tool;

pub use client::Client;
pub use env::plugin_env;
pub use error::{MCP_PREFIX, PluginError, who};
pub use registry::kill_all;
pub use set::{PluginSet, Status};
pub use tool::PluginTool;

/// Reads one stdout line of a plugin as the answer to request `id`
/// (`method`): whether it is that answer (`false`: a blank line), or why
/// not. Public for the fuzz targets; etch reads plugins through
/// [`Client`].
#[doc(hidden)]
pub fn read_answer_line(text: &str, id: &str, method: &str) -> Result<bool, String> {
    client::answer_of(text, id, method).map(|answer| answer.is_some())
}

/// Largest stdout frame (one JSON line) a plugin may send (E-PLUG-13).
pub const MAX_FRAME: usize = 4 << 20;

/// Most text of one result kept for the log and the model (E-PLUG-13:
/// the built-in tools' 64 KiB cap).
pub const MAX_RESULT: usize = 64 << 10;
