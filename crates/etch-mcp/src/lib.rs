//! etch's MCP bridge (E-PLUG-22 in docs/requirements.md: MCP sits behind
//! a bridge that speaks etch's native plugin protocol, so the kernel
//! never learns MCP and a server sees only the calls routed to it).
//!
//! One bridge process serves one configured server: etch starts it like
//! any plugin (its own binary, `etch mcp bridge SPEC`), and [`serve`]
//! connects to the server (a child process over stdio, or streamable
//! HTTP), lists its tools under provider-safe names
//! (`mcp__<server>__<tool>`, [`tool_name`]), answers the plugin
//! protocol's `initialize` with them and turns each `tool.execute` into
//! a `tools/call`. Errors name the server and say what to do.
//!
//! `rmcp` is used only in this crate: it renames types between minors,
//! so its churn stays here. This crate must not know the session log,
//! the loop or the configuration file; [`serve`] owns its process's
//! stdin and stdout, which carry the plugin protocol, and forwards the
//! server's stderr to its own.

mod bridge;
mod connect;
mod convert;
mod error;
mod names;
mod spec;

pub use bridge::serve;
pub use error::McpError;
pub use names::tool_name;
pub use spec::{ServerSpec, Transport};
