//! `etch export [PREFIX] [--format html|md|jsonl] [-o PATH]`: a session's
//! transcript as a file, the same three formats as the chat's `/export`.
//! HTML is the chat's self-contained page (everything from the session
//! escaped, no scripts), md the plain transcript `etch show` prints, and
//! jsonl the log itself. This module only picks the session, the format
//! and the target.

use std::path::{Path, PathBuf};

use etch_session::load_session;

use crate::exit::{self, Failure};

/// Runs `etch export`.
pub fn run(
    session_dir: &Path,
    cwd: &Path,
    prefix: Option<&str>,
    format: Option<&str>,
    output: Option<&Path>,
) -> Result<(), Failure> {
    let (row, file) = crate::session_arg::pick(session_dir, prefix)?;
    let format = format
        .or_else(|| output.and_then(etch_runtime::transcript::format_of))
        .unwrap_or("html");
    let failed = |what: String| Failure::new(exit::FAILED, anyhow::anyhow!(what));
    let bytes = if format == "jsonl" {
        std::fs::read(&file).map_err(|e| failed(format!("cannot read {}: {e}", file.display())))?
    } else {
        let loaded = load_session(&file).map_err(|e| Failure::new(exit::FAILED, e))?;
        for warning in &loaded.warnings {
            diag!("etch: warning: {}: {warning}", file.display());
        }
        if format == "md" {
            etch_runtime::transcript::render(&loaded).into_bytes()
        } else {
            etch_chat::export::html(&etch_runtime::projection::replay(&loaded)).into_bytes()
        }
    };
    if output == Some(Path::new("-")) {
        crate::output::print_bytes(&bytes);
        return Ok(());
    }
    let target: PathBuf = output.map_or_else(
        || cwd.join(format!("etch-{}.{format}", row.id)),
        |path| cwd.join(path),
    );
    std::fs::write(&target, &bytes).map_err(|e| {
        failed(format!(
            "cannot write the transcript to {}: {e}; pass another path with -o",
            target.display()
        ))
    })?;
    crate::output::print_line(&format!(
        "wrote the {format} transcript of {} to {}",
        row.id,
        etch_sanitize::visible(&target.display().to_string())
    ));
    Ok(())
}
