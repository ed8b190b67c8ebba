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
    /// An id suffix more than one event ends with.
    #[error(
        "\"{given}\" ends {count} event ids of session {}; give more of the id (etch show --tree prints their last 10 characters)",
        path.display()
    )]
    AmbiguousEvent {
        /// The session file.
        path: PathBuf,
        /// The id or suffix given.
        given: String,
        /// How many events it fits.
        count: usize,
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
    #[error("{}", ambiguous(prefix, candidates, *total))]
    Ambiguous {
        /// The prefix as given.
        prefix: String,
        /// The matching sessions, newest first, at most
        /// [`AMBIGUOUS_SHOWN`].
        candidates: Vec<crate::IndexRow>,
        /// How many matched.
        total: usize,
    },
    /// The session directory could not be read.
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// How many candidates an ambiguous prefix lists.
pub const AMBIGUOUS_SHOWN: usize = 10;

/// The message of an ambiguous prefix: the candidates one per line, with
/// their age and title, so the user can pick one.
fn ambiguous(prefix: &str, candidates: &[crate::IndexRow], total: usize) -> String {
    use std::fmt::Write as _;
    let shown = if total > candidates.len() {
        format!(" (the newest {} shown)", candidates.len())
    } else {
        String::new()
    };
    let mut text = format!(
        "session prefix \"{prefix}\" is ambiguous: {total} sessions match{shown}; give more of the id"
    );
    let now = chrono::Utc::now();
    for row in candidates {
        let age = chrono::DateTime::parse_from_rfc3339(&row.created_at)
            .map(|at| age(now.signed_duration_since(at)))
            .unwrap_or_default();
        let _ = write!(text, "\n  {}  {age:>8}  {}", row.id, row.title);
    }
    text
}

/// A duration as people say it: `40 s ago`, `5 min ago`, `3 h ago`, `2 d ago`.
fn age(elapsed: chrono::TimeDelta) -> String {
    let secs = elapsed.num_seconds().max(0);
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    }
}
