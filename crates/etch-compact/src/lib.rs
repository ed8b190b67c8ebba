//! Compaction of a session: summarizing the older prefix of the active branch
//! into a `context.summary` event (E-CTX-14..21, C22, C23, G24).
//!
//! The work comes in three steps, each usable on its own:
//!
//! 1. [`plan`] reads a loaded session and decides what to keep raw and what
//!    to summarize: the cut point (never a tool result, never a failed pass),
//!    the previous summary to update, the file lists and the token estimates.
//!    It refuses with a [`Skip`] when there is nothing worth compacting.
//! 2. [`summarize`] sends the summarizer request (a separate call with no
//!    tools) to the model client and returns the summary text.
//! 3. [`compact`] runs both and appends the `context.summary` event; on any
//!    failure the session file is left unchanged.
//!
//! [`estimate_context`] is the context-size estimate of C22 that the loop
//! compares with the automatic compaction threshold.
//!
//! This crate owns the cut-point rule, the summarizer prompt and the shape of
//! the summary data. It must not know which provider answers, how tokens are
//! counted (the estimator is handed in through [`Settings`]), how the summary
//! is projected back (that is `etch-session`'s job), or when compaction is
//! triggered (that is the loop's and the command line's business).

mod compact;
mod error;
mod files;
mod plan;
mod prompt;
mod serialize;
mod settings;
mod skip;
mod spent;
mod summarize;
mod tokens;
mod window;

#[cfg(test)]
mod test_support;

pub use compact::{Outcome, compact, finish};
pub use error::CompactError;
pub use plan::{Plan, plan};
pub use serialize::serialize;
pub use settings::{
    DEFAULT_KEEP_MESSAGES, DEFAULT_KEEP_RECENT_TOKENS, Estimator, Settings, Trigger,
};
pub use skip::{Budget, Skip};
pub use spent::{PURPOSE_BRANCH_SUMMARY, PURPOSE_COMPACTION, Spent, is_marked};
pub use summarize::{summarize, summarize_counted};
pub use tokens::{estimate_context, estimate_request, message_tokens};
