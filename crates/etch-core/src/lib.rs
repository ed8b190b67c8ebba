//! The agent loop: turns a prompt into model passes, tool executions and
//! session events.
//!
//! The loop follows the seed's eight steps (E-LOOP-01): the caller loads the
//! session branch and hands over its projected messages; each round builds a
//! request from the pinned system layers, the history and the tool specs,
//! streams one model pass, appends the answer and its metadata in canonical
//! order (E-SES-15), validates and runs the requested tools, scheduled by
//! conflict (C19), appends their results in the model's order, drains steering
//! and goes round again until the model stops, the round bound is hit
//! (`ToolRoundLimitError`) or the run is cancelled. Observers receive Pi's
//! lifecycle events in Pi's order and every durable line as it is appended.
//! Tool results never carry the secrets the caller names (a `Redactor`).
//!
//! This crate must not know which provider answers, how a tool works inside,
//! or how anything is rendered: it sees only `etch-model`, `etch-tool` and
//! `etch-session` types, plus `etch-compact` to summarize when the context
//! grows too large (threshold compaction, overflow recovery).

pub mod agent;
pub mod compaction;
pub mod error;
pub mod exec;
pub mod grounding;
pub mod guard;
pub mod inbox;
pub mod intercept;
pub mod observer;
pub mod pass;
pub mod recover;
pub mod redact;
pub mod switch;

pub use agent::{Agent, AgentConfig, Prompt, RunOutcome, SOURCE_GRACE, close_dangling_calls};
pub use compaction::{Compaction, CompactionPolicy, compact_session};
pub use error::{GuardStopError, RunError, ToolRoundLimitError};
pub use guard::GuardSettings;
pub use inbox::{Delivery, Inbox};
pub use intercept::{
    BeforeCompact, Intercept, InterceptFuture, Intercepted, Point, TurnEnd, Verdict,
};
pub use observer::{AgentEvent, CompactionResult, Delta, NoopObserver, Observer};
pub use redact::{REDACTED, Redactor};
pub use switch::{ClientSwitch, Switch};

/// Default bound on model/tool rounds per user turn (E-LOOP-02).
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 32;
