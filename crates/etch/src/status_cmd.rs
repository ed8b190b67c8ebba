//! `etch status [--session PREFIX] [--json]`: the sandbox commands run
//! in here (mode, enforcement, Landlock ABI) and the session's operational
//! counters (the seed's `/status`): age, events, turns, model calls, tool
//! calls and batches, compactions, message bytes, approximate model and
//! tool time, provider usage and transport metrics. Counting lives in
//! `etch_session::stats` and the text in `etch_runtime::report` (the
//! chat's `/status` shows the same); this module only prints.

use etch_runtime::report::status_text as render;
use etch_runtime::sandbox::Sandbox;
use etch_runtime::settings::Place;
use etch_session::{load_session, session_stats};

use crate::exit::{self, Failure};
use crate::output::print_line;
use crate::session_arg;

/// Prints the status of the session `prefix` names (default: the newest),
/// and the sandbox commands run in here.
pub fn status(place: &Place, prefix: Option<&str>, json: bool) -> Result<(), Failure> {
    let (report, described) = Sandbox::for_place(place).status();
    let (_, path) = session_arg::pick(&place.session_dir, prefix)?;
    let loaded = load_session(&path).map_err(|e| Failure::new(exit::FAILED, e))?;
    for warning in &loaded.warnings {
        diag!("etch: warning: {}: {warning}", path.display());
    }
    let stats = session_stats(&loaded);
    if json {
        let mut value = serde_json::to_value(&stats).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.insert(
                "sandbox".into(),
                serde_json::json!({
                    "mode": report.mode,
                    "enforcement": report.enforcement(),
                    "abi": report.abi,
                    "description": described,
                }),
            );
        }
        let text = serde_json::to_string(&value).map_err(|e| {
            Failure::new(
                exit::FAILED,
                anyhow::anyhow!("could not encode the status: {e}"),
            )
        })?;
        print_line(&text);
    } else {
        let mut text = render(&stats, &path);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("sandbox      ");
        text.push_str(&described);
        text.push('\n');
        crate::output::print_prose(&text);
    }
    Ok(())
}
