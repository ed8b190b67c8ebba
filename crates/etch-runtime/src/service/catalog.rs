//! The stored sessions of a directory, for front ends that must not know
//! how sessions are stored: the list (`/resume`), a prefix, a whole id or
//! "the last one" resolved to a file, a new name, and the models recent
//! sessions ran with (`/model`). Only this crate and `etch-session` know
//! that a session is `<dir>/<id>.jsonl`.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use etch_protocol::SessionSummary;
use etch_session::{ResolveError, SessionError, SessionStore};

/// The sessions in `dir`, newest first (an unreadable index lists none).
pub fn sessions(dir: &Path) -> Vec<SessionSummary> {
    let rows = SessionStore::new(dir)
        .list()
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    rows.into_iter()
        .map(|row| SessionSummary {
            id: row.id,
            path: row.path,
            created_at: row.created_at,
            cwd: row.cwd,
            title: row.title,
            parent: row.parent_session_id,
        })
        .collect()
}

/// The file of the session whose id starts with `prefix` (or whose id's
/// last 10 characters do).
pub fn resolve(dir: &Path, prefix: &str) -> Result<PathBuf, ResolveError> {
    let store = SessionStore::new(dir);
    let row = store.resolve(prefix)?;
    Ok(store.session_file(&row))
}

/// The file of the session with exactly the id `id` in `dir`, when there
/// is one (an id is letters and digits: nothing else names a file).
pub fn file_of(dir: &Path, id: &str) -> Option<PathBuf> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    Some(etch_session::index::session_path(dir, id)).filter(|file| file.is_file())
}

/// The `get_messages` answer for the session stored in `file`, read
/// from the log alone (for a session no handle serves, such as one
/// another process holds): `{"messages": [...]}` at the leaf.
pub fn messages(file: &Path) -> Result<serde_json::Value, String> {
    let loaded = etch_session::load_session(file).map_err(|e| e.to_string())?;
    Ok(messages_of(
        &etch_session::project_messages(&loaded).messages,
    ))
}

/// The `get_messages` answer for `history`.
pub(crate) fn messages_of(history: &[etch_model::Message]) -> serde_json::Value {
    let messages: Vec<_> = history
        .iter()
        .filter_map(crate::events::wire_message)
        .collect();
    serde_json::json!({ "messages": messages })
}

/// The file of the top-level session written to most recently.
pub fn last(dir: &Path) -> Result<Option<PathBuf>, SessionError> {
    let store = SessionStore::new(dir);
    Ok(store.last()?.map(|row| store.session_file(&row)))
}

/// Names session `id` `title`; returns the name as stored.
pub fn rename(dir: &Path, id: &str, title: &str) -> Result<String, SessionError> {
    SessionStore::new(dir)
        .rename(id, title)
        .map(|row| row.title)
}

/// The provider and model each of the `recent` newest sessions started
/// with (from each file's first line only: a long log is not read for a
/// picker).
pub fn models_used(dir: &Path, recent: usize) -> Vec<(String, String)> {
    sessions(dir)
        .iter()
        .take(recent)
        .filter_map(|s| started_with(Path::new(&s.path)))
        .collect()
}

/// The provider and model a session file started with.
fn started_with(path: &Path) -> Option<(String, String)> {
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file)
        .take(1 << 20)
        .read_line(&mut first)
        .ok()?;
    let event: serde_json::Value = serde_json::from_str(&first).ok()?;
    let data = event.get("data")?;
    let text = |key: &str| {
        data.get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    Some((text("provider")?, text("model")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(dir: &Path, model: &str, title: &str) -> String {
        crate::testkit::new_log(dir, model, title)
            .session_id()
            .to_owned()
    }

    #[test]
    fn lists_resolves_names_and_reads_models() {
        let dir = tempfile::tempdir().unwrap();
        let a = create(dir.path(), "m1", "first");
        let b = create(dir.path(), "m2", "second");
        let listed: Vec<String> = sessions(dir.path()).into_iter().map(|s| s.id).collect();
        assert_eq!(listed.len(), 2);
        assert!(listed.contains(&a) && listed.contains(&b));
        let file = resolve(dir.path(), &a[..20]).unwrap();
        assert_eq!(file_of(dir.path(), &a), Some(file));
        assert_eq!(file_of(dir.path(), "../etc/passwd"), None);
        assert_eq!(file_of(dir.path(), "01NOSUCHSESSION"), None);
        assert!(resolve(dir.path(), "zz").is_err());
        assert_eq!(rename(dir.path(), &a, "renamed").unwrap(), "renamed");
        assert!(sessions(dir.path()).iter().any(|s| s.title == "renamed"));
        let mut models = models_used(dir.path(), 10);
        models.sort();
        assert_eq!(
            models,
            vec![("echo".into(), "m1".into()), ("echo".into(), "m2".into())]
        );
        assert!(last(dir.path()).unwrap().is_some());
    }
}
