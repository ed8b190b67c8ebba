//! `index.jsonl`: one row per session, for listing and prefix resolution
//! (E-SES-18, G16).
//!
//! The index is a convenience, not a source of truth: rows are appended under
//! an exclusive file lock in a single write so concurrent etch processes never
//! interleave or lose rows, unreadable rows are skipped, and sessions whose
//! files exist without a row are still found by scanning the directory.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::SessionError;

/// File name of the index inside the session directory.
pub const INDEX_FILE: &str = "index.jsonl";

/// Longest title kept in an index row, in characters (G16).
const TITLE_CHARS: usize = 60;

/// One index row (G16).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexRow {
    /// Session id.
    pub id: String,
    /// Absolute path of the session file.
    pub path: String,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// Working directory of the session.
    pub cwd: String,
    /// Short title from the first prompt.
    pub title: String,
    /// Parent session of a subagent child (M2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
}

/// Derives a title: the first line of the prompt, whitespace collapsed,
/// at most 60 characters ending in `…` when cut.
pub fn title_from_prompt(prompt: &str) -> String {
    let first = prompt.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let collapsed = first.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= TITLE_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(TITLE_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// Appends one row to the index in `dir`, under an exclusive lock. A new
/// index is owner-only (0600), like the sessions it lists; an existing
/// one keeps its mode.
pub fn append_row(dir: &Path, row: &IndexRow) -> Result<(), SessionError> {
    let path = dir.join(INDEX_FILE);
    let io = |action, source| SessionError::Io {
        action,
        path: path.clone(),
        source,
    };
    let mut line = serde_json::to_vec(row).map_err(|source| SessionError::Encode {
        kind: "index row".into(),
        source,
    })?;
    line.push(b'\n');
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(crate::PRIVATE_FILE)
        .open(&path)
        .map_err(|e| io("open index", e))?;
    file.lock().map_err(|e| io("lock index", e))?;
    let result = file.write_all(&line).map_err(|e| io("append to index", e));
    // Closing the file releases the lock even if unlock fails.
    let _ = file.unlock();
    result
}

/// Reads the index rows of `dir`, skipping unreadable lines. A missing index
/// is an empty one.
pub fn read_rows(dir: &Path) -> Result<(Vec<IndexRow>, Vec<String>), SessionError> {
    let path = dir.join(INDEX_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(source) => {
            return Err(SessionError::Io {
                action: "read index",
                path,
                source,
            });
        }
    };
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<IndexRow>(raw) {
            Ok(row) => rows.push(row),
            Err(err) => warnings.push(format!(
                "{}:{}: unreadable index row skipped: {err}",
                path.display(),
                i + 1
            )),
        }
    }
    Ok((rows, warnings))
}

/// The session file path for an id inside `dir`.
pub fn session_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// G16: first non-empty line, collapsed whitespace, 60 chars with `…`.
    #[test]
    fn titles_are_collapsed_and_truncated() {
        assert_eq!(
            title_from_prompt("\n  fix   the\ttests \nmore"),
            "fix the tests"
        );
        let long = "x".repeat(100);
        let t = title_from_prompt(&long);
        assert_eq!(t.chars().count(), 60);
        assert!(t.ends_with('…'));
        assert_eq!(title_from_prompt(&"y".repeat(60)), "y".repeat(60));
    }

    /// Rows round-trip and a garbage row is skipped with a warning.
    #[test]
    fn rows_round_trip_and_garbage_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let row = IndexRow {
            id: "01A".into(),
            path: "/x/01A.jsonl".into(),
            created_at: "t".into(),
            cwd: "/x".into(),
            title: "hello".into(),
            parent_session_id: None,
        };
        append_row(dir.path(), &row).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(INDEX_FILE))
            .unwrap()
            .write_all(b"garbage\n")
            .unwrap();
        append_row(dir.path(), &row).unwrap();
        let (rows, warnings) = read_rows(dir.path()).unwrap();
        assert_eq!(rows, vec![row.clone(), row]);
        assert_eq!(warnings.len(), 1);
    }
}
