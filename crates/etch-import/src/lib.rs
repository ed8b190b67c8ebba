//! Importing other agents' sessions into etch's log, so their users
//! switch without losing their history.
//!
//! `pi` reads Pi's session files (v1 to v3) as a stream and writes each as
//! an etch session with the same tree and what the model saw, in the
//! wording Pi sends it, images moved to the session's assets.
//!
//! This crate must not know about the command line, providers or the
//! loop: it reads files and writes sessions through `etch-session`.

pub mod pi;

use std::path::PathBuf;

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file could not be read.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The file is not a Pi session.
    #[error("{path} is not a Pi session file: {reason}")]
    NotPi {
        /// The file.
        path: PathBuf,
        /// Why not.
        reason: String,
    },
    /// The etch session could not be written.
    #[error(transparent)]
    Session(#[from] etch_session::SessionError),
}
