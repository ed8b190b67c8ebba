//! Why a compaction failed. Every failure leaves the session file unchanged
//! (P-COMP-09), and each message says so, because the user's next question is
//! whether their history was damaged.

use etch_model::ModelError;
use etch_session::SessionError;

/// A compaction that could not complete.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// The summarizer request failed: a provider error or a pass that ended
    /// with stop reason `error`. Its kind stays available, so an overflow of
    /// the summarizer itself can be told apart.
    #[error("the summary request failed: {0}; the session was not changed")]
    Model(#[source] ModelError),
    /// The model answered with no text at all.
    #[error("the summary request returned no text; the session was not changed")]
    Empty,
    /// The caller cancelled while the summary was being written.
    #[error("compaction was cancelled; the session was not changed")]
    Cancelled,
    /// A compaction hook failed (or answered what its event does not
    /// accept): a `PreCompact` or `PostCompact` hook (G6).
    #[error("{0}; no summary was appended")]
    Hook(String),
    /// The summary could not be appended to the session file.
    #[error("could not record the summary: {0}")]
    Session(#[from] SessionError),
}
