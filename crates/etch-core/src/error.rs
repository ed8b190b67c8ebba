//! How a run can fail, typed so callers pick the right exit code and message.

use std::path::PathBuf;

use etch_model::ModelError;
use etch_session::SessionError;

/// The round bound was exhausted (E-LOOP-04). Completed calls and results
/// remain in the log; the turn is not retried (E-LOOP-05).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "stopped after {limit} model/tool rounds without a final answer (the --max-tool-rounds limit); \
     every completed call is kept in {}; continue with: etch resume {session_id} -p \"continue\"",
    session_path.display()
)]
pub struct ToolRoundLimitError {
    /// The configured bound.
    pub limit: u32,
    /// Durable session id.
    pub session_id: String,
    /// Durable session file.
    pub session_path: PathBuf,
}

/// The loop's guard stopped a run going in circles: the same call with
/// the same result, or failed tool results, too many times in a row. Every
/// call and result stays in the log, with a `loop.guard` record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "stopped: {what}; every call is kept in {}; continue with a hint, e.g.: etch resume {session_id} -p \"that did not work; try another way\"",
    session_path.display()
)]
pub struct GuardStopError {
    /// What went in circles, naming the call.
    pub what: String,
    /// Durable session id.
    pub session_id: String,
    /// Durable session file.
    pub session_path: PathBuf,
}

/// A run that did not end with a final answer.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The round bound was hit.
    #[error(transparent)]
    ToolRoundLimit(#[from] ToolRoundLimitError),
    /// The guard stopped a run going in circles.
    #[error(transparent)]
    Guard(#[from] GuardStopError),
    /// The model pass failed (after the provider's own retries).
    #[error("model error from {provider}: {source}")]
    Model {
        /// Provider name.
        provider: String,
        /// The provider's typed error.
        #[source]
        source: ModelError,
    },
    /// The run was cancelled (SIGINT, ESC).
    #[error("cancelled")]
    Cancelled,
    /// A hook failed where its failure fails the run (G6): the prompt's
    /// admission, the turn's start or end, or the request build.
    #[error("{event} hook failed: {detail}")]
    Hook {
        /// The hook event, e.g. `TurnStart`.
        event: &'static str,
        /// What failed (exit code, timeout, bad output).
        detail: String,
    },
    /// A `UserPromptSubmit` hook refused the prompt: nothing was appended
    /// and no request was made.
    #[error("the prompt was blocked by a UserPromptSubmit hook{}; nothing was sent", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    PromptBlocked {
        /// What the hook said, if anything.
        reason: Option<String>,
    },
    /// The session log could not be written.
    #[error(transparent)]
    Session(#[from] SessionError),
}
