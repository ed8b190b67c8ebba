//! etch's runtime: what every front end (the command line, `etch rpc`, the
//! terminal chat, subagents) shares to run a session, so that none of them
//! holds agent logic of its own.
//!
//! It takes settings as typed values (no command-line parser types below
//! the binary) and returns notices as values: it never prints. The parts:
//! where a session lives (`paths`, `settings`), what a run offers the model
//! (`context`), the provider factory (`provider`), the session handle
//! (`session`), the hooks that intercept its runs (`hooks`), its transcript (`transcript`) and status report
//! (`report`), its queues (`queue`), the bridge from the loop's events to
//! the protocol's owned events (`events`), and the host that accepts
//! protocol commands while a run is active (`host`). It must not know how
//! anything is drawn or which front end asked.

pub mod approval;
pub mod compaction;
pub mod context;
pub mod endpoints;
pub mod error;
pub mod events;
pub mod git;
pub mod hooks;
pub mod host;
pub mod images;
pub mod mcp;
pub mod paths;
pub mod projection;
pub mod provider;
pub mod queue;
pub mod report;
pub mod sandbox;
pub mod service;
pub mod session;
pub mod settings;
pub mod subagent;
pub mod transcript;

#[cfg(test)]
mod testkit;

pub use context::Context;
pub use error::{Notice, OpenError};
pub use session::{CompactFailure, NavigateError, Navigated, Session, Target};
pub use settings::{Place, RunSettings};

pub use provider::{
    LABEL_API_KEY, NO_CREDENTIALS, PROVIDERS, ProviderFlags, Recorded, SelectError, Selection,
    model_change, select, select_for_session, thinking_change,
};
