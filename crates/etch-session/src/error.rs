//! Typed errors of the session log, each naming the file it concerns and what
//! to do about it.

use std::path::PathBuf;

/// A failure reading or writing session files.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A filesystem operation failed.
    #[error("could not {action} {}: {source}", path.display())]
    Io {
        /// What etch was doing, e.g. `append to`.
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not an etch session at all.
    #[error("{} is not a valid etch session: {reason}", path.display())]
    Invalid {
        /// The session file.
        path: PathBuf,
        /// Why it was rejected.
        reason: String,
    },
    /// Another process holds the session open for appending.
    #[error(
        "session {} is in use by another etch process; wait for it to finish and try again",
        path.display()
    )]
    Busy {
        /// The session file.
        path: PathBuf,
    },
    /// An event id that the session does not hold (navigation, forks).
    #[error("session {} has no event {id}; see etch show --tree for its ids", path.display())]
    UnknownEvent {
        /// The session file.
        path: PathBuf,
        /// The id asked for.
        id: String,
    },
    /// An event could not be serialized (a bug, reported rather than hidden).
    #[error("could not encode a {kind} event: {source}")]
    Encode {
        /// The event type being written.
        kind: String,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
}

/// A session prefix that does not name exactly one session (G23).
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The prefix was empty.
    #[error("a session prefix must not be empty; run 'etch sessions' to list ids")]
    Empty,
    /// No session matches.
    #[error("no session matches prefix \"{0}\"")]
    Unknown(String),
    /// More than one session matches.
    #[error("session prefix \"{prefix}\" is ambiguous: {}", ids.join(", "))]
    Ambiguous {
        /// The prefix as given.
        prefix: String,
        /// Every matching id.
        ids: Vec<String>,
    },
    /// The session directory could not be read.
    #[error(transparent)]
    Session(#[from] SessionError),
}
