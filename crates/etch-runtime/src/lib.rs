//! etch's runtime: what every front end (the command line, `etch rpc`, the
//! terminal chat, subagents) shares to run a session, so that none of them
//! holds agent logic of its own.
//!
//! It resolves settings into typed values (no command-line parser types
//! below the binary) and returns notices as values: it never prints. This
//! first part is the provider factory and the bridge from the loop's
//! events to the protocol's owned events; the session handle with its
//! queues builds on them. It must not know how anything is drawn or
//! which front end asked.

pub mod events;
pub mod provider;
pub mod queue;

#[cfg(test)]
mod testkit;

pub use provider::{
    LABEL_API_KEY, NO_CREDENTIALS, PROVIDERS, ProviderFlags, Recorded, SelectError, Selection,
    model_change, select, select_for_session, thinking_change,
};
