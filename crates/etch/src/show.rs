//! `etch show`: the plain durable transcript of a session (E-CLI-07,
//! E-TERM-06), or its valid JSONL lines verbatim with `--json` (G1).
//!
//! The transcript itself is rendered by `etch_runtime::transcript`, which
//! `etch rpc`'s `export` writes too.

use std::path::Path;

use etch_session::load_session;

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
        eprintln!("etch: warning: {}: {warning}", path.display());
    }
    if tree {
        crate::output::print_text(&crate::show_tree::render(&loaded));
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
    crate::output::print_text(&etch_runtime::transcript::render(&loaded));
    Ok(())
}
