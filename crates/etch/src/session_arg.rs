//! Which session a command works on: the one a `--session PREFIX` names, or
//! the newest one when no prefix is given (`etch status`, `etch context`,
//! `etch compact`).

use std::path::{Path, PathBuf};

use etch_session::{IndexRow, SessionStore};

use crate::exit::{self, Failure};

/// The session file for `prefix`, or the newest session's file. An unknown
/// or ambiguous prefix is a usage error (G23); no sessions at all is a
/// failure that says where etch looked.
pub fn pick(session_dir: &Path, prefix: Option<&str>) -> Result<(IndexRow, PathBuf), Failure> {
    let store = SessionStore::new(session_dir);
    let row = if let Some(prefix) = prefix {
        store
            .resolve(prefix)
            .map_err(|e| Failure::new(exit::USAGE, e))?
    } else {
        let (rows, _) = store.list().map_err(|e| Failure::new(exit::FAILED, e))?;
        rows.into_iter().next().ok_or_else(|| {
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
