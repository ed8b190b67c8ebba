//! Which session a command works on: the one a `--session PREFIX` names, or
//! the top-level session last written to when no prefix is given (`etch
//! status`, `etch context`, `etch show`, `etch resume --last`),
//! and opening a named session for appending (`etch resume`, `etch
//! compact`).

use std::path::{Path, PathBuf};

use etch_session::{IndexRow, LoadedSession, SessionStore, SessionWriter};

use crate::exit::{self, Failure};

/// The session file for `prefix`, or that of the top-level session last
/// written to. An unknown
/// or ambiguous prefix is a usage error (G23); no sessions at all is a
/// failure that says where etch looked.
pub fn pick(session_dir: &Path, prefix: Option<&str>) -> Result<(IndexRow, PathBuf), Failure> {
    let store = SessionStore::new(session_dir);
    let row = if let Some(prefix) = prefix {
        store
            .resolve(prefix)
            .map_err(|e| Failure::new(exit::USAGE, e))?
    } else {
        // The session last written to, never a subagent's child.
        let last = store.last().map_err(|e| Failure::new(exit::FAILED, e))?;
        last.ok_or_else(|| {
            Failure::new(
                exit::FAILED,
                anyhow::anyhow!(
                    "no sessions in {}; start one with etch -p \"…\" or pass --session-dir",
                    session_dir.display()
                ),
            )
        })?
    };
    let path = store.session_file(&row);
    Ok((row, path))
}

/// Whether `word` looks like a session id prefix (four or more characters
/// of the id alphabet) and one session matches it.
pub fn names_a_session(session_dir: &Path, word: &str) -> bool {
    word.len() >= 4
        && word.chars().all(|c| c.is_ascii_alphanumeric())
        && SessionStore::new(session_dir).resolve(word).is_ok()
}

/// Opens the session `prefix` names for appending (taking its lock), and
/// prints what the loader had to skip. An unknown or ambiguous prefix is a
/// usage error (G23); a session in use by another etch is a failure.
pub fn open(session_dir: &Path, prefix: &str) -> Result<(LoadedSession, SessionWriter), Failure> {
    let store = SessionStore::new(session_dir);
    let row = store
        .resolve(prefix)
        .map_err(|e| Failure::new(exit::USAGE, e))?;
    let (loaded, writer) = store
        .open(&row)
        .map_err(|e| Failure::new(exit::FAILED, e))?;
    for warning in &loaded.warnings {
        diag!("etch: warning: {}: {warning}", loaded.path.display());
    }
    Ok((loaded, writer))
}
