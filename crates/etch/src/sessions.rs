//! `etch sessions`: the local index, newest first (E-CLI-06, G16).

use std::path::Path;

use etch_session::SessionStore;

use crate::exit::{self, Failure};
use crate::output::{print_line, print_prose_line};

/// Lists sessions as `{id}  {createdAt}  {title}` lines or a JSON array.
pub fn list(session_dir: &Path, json: bool) -> Result<(), Failure> {
    let store = SessionStore::new(session_dir);
    let (rows, warnings) = store.list().map_err(|e| Failure::new(exit::FAILED, e))?;
    for warning in warnings {
        diag!("etch: warning: {warning}");
    }
    if json {
        let text = serde_json::to_string(&rows).map_err(|e| {
            Failure::new(exit::FAILED, anyhow::anyhow!("could not encode rows: {e}"))
        })?;
        print_line(&text);
        return Ok(());
    }
    if rows.is_empty() {
        diag!("etch: no sessions in {}", session_dir.display());
    }
    for row in rows {
        let marker = if row.parent_session_id.is_some() {
            " (subagent)"
        } else {
            ""
        };
        // Titles come from prompts, and session files may come with a
        // cloned repository: one line each, nothing that acts on the
        // terminal.
        print_prose_line(&format!(
            "{}  {}  {}{marker}",
            row.id,
            row.created_at,
            row.title.replace(['\n', '\r'], " ")
        ));
    }
    Ok(())
}
