//! Why a session could not be opened or changed, typed so a front end can
//! tell a request it should correct (a usage error) from one that could
//! not be served. Every message says what failed and what to do.

use etch_session::{ResolveError, SessionError};

use crate::provider::SelectError;

/// A session that could not be opened, switched or reconfigured.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The request is wrong: an unknown tool, skill or provider, a bad
    /// option.
    #[error("{0}")]
    Usage(String),
    /// The request is fine but cannot be served (no credentials, a skill
    /// file that cannot be read).
    #[error("{0}")]
    Failed(String),
    /// No session or more than one matches the id prefix.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The session log could not be read, written or locked.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A resumed session recorded an endpoint the user never chose (the
    /// URL); a front end on a terminal may ask and open it again with
    /// that URL as `--base-url`.
    #[error("{}", crate::endpoints::unfamiliar(.0))]
    UnfamiliarEndpoint(String),
}

impl OpenError {
    /// Whether the caller should correct its request (exit code 2 on the
    /// command line).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::Usage(_) | Self::Resolve(_) | Self::UnfamiliarEndpoint(_)
        )
    }

    /// The endpoint of an [`Self::UnfamiliarEndpoint`], for a front end
    /// that can ask the user.
    pub fn unfamiliar_endpoint(&self) -> Option<&str> {
        match self {
            Self::UnfamiliarEndpoint(url) => Some(url),
            _ => None,
        }
    }
}

impl From<SelectError> for OpenError {
    fn from(err: SelectError) -> Self {
        match err {
            SelectError::Usage(message) => Self::Usage(message),
            SelectError::Failed(message) => Self::Failed(message),
            SelectError::Unfamiliar(url) => Self::UnfamiliarEndpoint(url),
        }
    }
}

/// Something the user should know while a session opens or runs that is
/// not an error (a skipped instruction file, the provider header line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// How serious it is.
    pub level: etch_protocol::NoticeLevel,
    /// The text, saying what to do.
    pub message: String,
}

impl Notice {
    /// A line to show as it is (the provider header, a note).
    pub fn info(message: impl Into<String>) -> Self {
        Self {
            level: etch_protocol::NoticeLevel::Info,
            message: message.into(),
        }
    }

    /// A warning.
    pub fn warning(message: impl Into<String>) -> Self {
        Self {
            level: etch_protocol::NoticeLevel::Warning,
            message: message.into(),
        }
    }
}
