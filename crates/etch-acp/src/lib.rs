//! `etch acp`: the Agent Client Protocol (v1) over the editor's pipes,
//! one more front end on the runtime's session service
//! ([`SessionService`](etch_runtime::service::SessionService)).
//! Editors (Zed, JetBrains, Neovim, Emacs) start `etch acp` and speak
//! JSON-RPC 2.0 to it, one message per line: `initialize`, `session/new`
//! and `session/load`, `session/prompt` streamed as `session/update`
//! notifications and answered with a stop reason, `session/cancel`, the
//! model as a session configuration option. Tools named by `[acp] ask`
//! ask the editor with `session/request_permission` before they run.
//! Each ACP session is an ordinary etch session on disk.
//!
//! Modules: `rpc` (the JSON-RPC envelope), `server` (the connection:
//! methods, sessions, turns), `update` (events as updates), `toolcall`
//! (kinds, titles, locations, diffs), `replay` (`session/load`), `mcp`
//! (the editor's MCP servers as `[[mcp.servers]]` entries),
//! `permission` (the editor as the gated tools' approver). The wire types
//! are the protocol's own (`agent-client-protocol-schema`, used only
//! here). This crate must not know where its lines come from or go:
//! the binary owns stdin and stdout.

mod mcp;
mod mode;
mod permission;
mod replay;
mod rpc;
mod server;
mod toolcall;
mod update;

/// One JSON-RPC line read, public for the fuzz targets.
#[doc(hidden)]
pub use rpc::{Message as RpcMessage, parse as parse_rpc_line, response as rpc_response};
pub use server::{Input, Options, Out, PlaceFor, Served, serve};
