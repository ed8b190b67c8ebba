//! `etch status [--session PREFIX] [--json]`: the session's operational
//! counters (the seed's `/status`): age, events, turns, model calls, tool
//! calls and batches, compactions, message bytes, approximate model and
//! tool time, provider usage and transport metrics. Counting lives in
//! `etch_session::stats` and the text in `etch_runtime::report` (the
//! chat's `/status` shows the same); this module only prints.

use std::path::Path;

use etch_runtime::report::status_text as render;
use etch_session::{load_session, session_stats};

use crate::exit::{self, Failure};
use crate::output::print_line;
use crate::session_arg;

/// Prints the status of the session `prefix` names (default: the newest).
pub fn status(session_dir: &Path, prefix: Option<&str>, json: bool) -> Result<(), Failure> {
    let (_, path) = session_arg::pick(session_dir, prefix)?;
    let loaded = load_session(&path).map_err(|e| Failure::new(exit::FAILED, e))?;
    for warning in &loaded.warnings {
        diag!("etch: warning: {}: {warning}", path.display());
    }
    let stats = session_stats(&loaded);
    if json {
        let text = serde_json::to_string(&stats).map_err(|e| {
            Failure::new(
                exit::FAILED,
                anyhow::anyhow!("could not encode the status: {e}"),
            )
        })?;
        print_line(&text);
    } else {
        crate::output::print_prose(&render(&stats, &path));
    }
    Ok(())
}
