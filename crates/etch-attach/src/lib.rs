//! The remote implementation of the runtime's [`SessionHandle`]: a
//! session that `etch serve` holds, driven over its HTTP API. Commands
//! go out as `POST /v1/sessions/{id}/commands` and their responses come
//! back to the sink; the session's live events come from its event
//! stream; the typed questions (replay, tree, fork points, status) are
//! answered from its log, fetched whole and projected here exactly as a
//! local handle projects its own. A front end (the chat) cannot tell it
//! from a local handle, and the server stays the one writer: a prompt
//! from here is queued there like any other client's.
//!
//! - `target`: the URL and token a user gives (`etch chat --attach URL`).
//! - `remote`: [`attach`], the handle, and its event stream.
//! - `frames`: server-sent events read frame by frame.
//!
//! This crate must not know how a terminal draws anything, or how the
//! server keeps its sessions.
//!
//! [`SessionHandle`]: etch_runtime::service::SessionHandle

mod error;
mod frames;
mod remote;
mod target;

pub use error::AttachError;
pub use remote::{Attached, Remote, attach};
pub use target::Target;
