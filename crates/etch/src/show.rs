//! `etch show`: the plain durable transcript of a session (E-CLI-07,
//! E-TERM-06), or its valid JSONL lines verbatim with `--json` (G1).
//!
//! The transcript itself is rendered by `etch_runtime::transcript`, which
//! `etch rpc`'s `export` writes too.

use std::fmt::Write as _;
use std::io::BufRead as _;
use std::path::Path;

use etch_session::{SessionStore, load_session};

use crate::exit::{self, Failure};
use crate::output::print_line;

/// Prints the session matching `prefix`, or the newest session: the
/// transcript, its JSONL lines (`json`) or its tree (`tree`).
pub fn show(
    session_dir: &Path,
    prefix: Option<&str>,
    json: bool,
    tree: bool,
) -> Result<(), Failure> {
    let (_, path) = crate::session_arg::pick(session_dir, prefix)?;
    let loaded = load_session(&path).map_err(|e| Failure::new(exit::FAILED, e))?;
    for warning in &loaded.warnings {
        diag!("etch: warning: {}: {warning}", path.display());
    }
    if tree {
        let mut text = crate::show_tree::render(&loaded);
        text.push_str(&children(session_dir, loaded.session_id()));
        crate::output::print_prose(&text);
        return Ok(());
    }
    if json {
        let bytes = std::fs::read(&path).map_err(|e| {
            Failure::new(
                exit::FAILED,
                anyhow::anyhow!("could not read {}: {e}", path.display()),
            )
        })?;
        let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        for event in &loaded.events {
            if let Some(line) = lines.get(event.line - 1) {
                print_line(&String::from_utf8_lossy(line));
            }
        }
        return Ok(());
    }
    crate::output::print_prose(&etch_runtime::transcript::render(&loaded));
    Ok(())
}

/// The child sessions of subagents that session `id` ran, one line each
/// (id, profile, the task call, the task), for the tree view; empty
/// when it ran none.
fn children(session_dir: &Path, id: &str) -> String {
    let store = SessionStore::new(session_dir);
    let Ok((rows, _)) = store.list() else {
        return String::new();
    };
    let mut out = String::new();
    for row in rows
        .iter()
        .filter(|r| r.parent_session_id.as_deref() == Some(id))
    {
        // Only the header is needed, not the whole child log.
        let header = std::fs::File::open(store.session_file(row))
            .ok()
            .and_then(|f| std::io::BufReader::new(f).lines().next())
            .and_then(Result::ok)
            .and_then(|line| serde_json::from_str::<serde_json::Value>(&line).ok())
            .map(|event| event["data"].clone())
            .unwrap_or_default();
        if out.is_empty() {
            out.push_str("subagent sessions:\n");
        }
        let _ = writeln!(
            out,
            "  {} {} (task call {}): {}  etch show {}",
            row.id,
            header["subagentProfile"].as_str().unwrap_or("?"),
            header["parentToolCallId"].as_str().unwrap_or("?"),
            row.title,
            row.id
        );
    }
    out
}
