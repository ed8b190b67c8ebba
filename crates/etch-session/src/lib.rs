//! The session log: etch's durable source of truth.
//!
//! A session is one append-only JSONL file. Its first line is a
//! `session.started` event; every line is an envelope
//! `{"type","id","parentId","time","data"}` with ULID ids and a `parentId`
//! chain that forms a tree whose current leaf is the last valid event. This
//! crate owns writing events (one `write` per line on an `O_APPEND` file),
//! loading files that may be torn or hand-edited, projecting the active branch
//! into model messages, and the `index.jsonl` used for listing and prefix
//! resolution, and the images a session refers to, kept beside its log
//! (`assets`). What it creates is private to the user: files 0600,
//! directories 0700.
//!
//! It must not know about providers, tools, prompts or the terminal: it
//! stores what the core hands it and projects it back as
//! [`etch_model::Message`]s.

pub mod assets;
pub mod error;
pub mod event;
pub mod gitignore;
pub mod holder;
pub mod id;
pub mod index;
pub mod loader;
pub mod model_state;
pub mod navigate;
pub mod projection;
pub mod stats;
pub mod store;
pub mod tree;
pub mod writer;

#[cfg(test)]
mod testlines;

/// The mode of files etch creates for sessions (a session, the index):
/// readable and writable by their owner only, since they hold prompts,
/// answers and tool output. The umask may only narrow it.
pub const PRIVATE_FILE: u32 = 0o600;

/// The mode of a session directory etch creates: its owner's only.
pub const PRIVATE_DIR: u32 = 0o700;

pub use assets::Assets;
pub use error::{ResolveError, SessionError};
pub use event::{
    ApprovalData, AssistantData, BranchSummaryData, Event, GroundingData, GuardData, HookRunData,
    ImportedFrom, PluginDiagnosticData, ProcessExitedData, ProcessStartedData, ProcessUpdateData,
    ReasoningData, ResponseData, SessionStarted, SummaryData, ToolData, UserData, types,
};
pub use index::IndexRow;
pub use loader::{LoadWarning, LoadedSession, load_session, parse_session};
pub use model_state::{ModelState, model_state};
pub use navigate::navigate;
pub use projection::{dangling_tool_calls, project_messages, project_messages_at, project_path};
pub use stats::{SessionStats, session_stats};
pub use store::{Lineage, SessionStore, Unpublished};
pub use writer::{SessionWriter, Tap};
