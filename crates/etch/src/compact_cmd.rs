//! `etch compact --session PREFIX [--focus TEXT]` (E-CLI-08, E-CTX-15):
//! manual compaction with trigger `manual`, using the provider flags or the
//! session's recorded provider for the summary request.
//!
//! The compaction itself lives in `etch-compact`; this module opens the
//! session (holding its lock, so a running `etch` cannot append meanwhile),
//! picks the client, and reports what happened: a skip is not an error, a
//! failed summary is (and leaves the log untouched).

use etch_compact::{Outcome, Trigger};
use etch_session::SessionStore;

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::output::print_line;
use crate::provider;
use crate::run::{Place, compact_settings, watch_sigint};

/// Compacts the session `prefix` names.
pub async fn run(
    place: &Place,
    prefix: &str,
    focus: Option<&str>,
    args: &RunArgs,
) -> Result<(), Failure> {
    if args.prompt.is_some() || args.skill.is_some() {
        return Err(Failure::usage(
            "etch compact takes no prompt or skill; use --focus TEXT to steer the summary",
        ));
    }
    let store = SessionStore::new(&place.session_dir);
    let row = store
        .resolve(prefix)
        .map_err(|e| Failure::new(exit::USAGE, e))?;
    let (loaded, mut writer) = store
        .open(&row)
        .map_err(|e| Failure::new(exit::FAILED, e))?;
    for warning in &loaded.warnings {
        eprintln!("etch: warning: {}: {warning}", loaded.path.display());
    }
    let selection = provider::select(
        args,
        &place.config,
        Some((
            loaded.header.provider.as_str(),
            loaded.header.model.as_str(),
        )),
    )
    .await?;
    if let Some(notice) = &selection.notice {
        eprintln!("{notice}");
    }
    let cancel = tokio_util::sync::CancellationToken::new();
    let watcher = watch_sigint(cancel.clone())?;
    let outcome = etch_compact::compact(
        &loaded,
        &mut writer,
        selection.client.as_ref(),
        Trigger::Manual,
        focus,
        &compact_settings(&place.config),
        &cancel,
    )
    .await;
    watcher.abort();
    match outcome {
        Ok(Outcome::Compacted { data, event_id, .. }) => {
            print_line(&format!(
                "compacted session {}: ~{} -> ~{} estimated tokens (summary event {event_id}); the full history stays in {}",
                loaded.session_id(),
                data.tokens_before,
                data.tokens_after,
                loaded.path.display()
            ));
            Ok(())
        }
        Ok(Outcome::Skipped(skip)) => {
            print_line(&skip.to_string());
            Ok(())
        }
        Err(etch_compact::CompactError::Cancelled) => Err(Failure::new(
            exit::INTERRUPTED,
            anyhow::anyhow!("interrupted; the session was not changed"),
        )),
        Err(err) => Err(Failure::new(
            exit::FAILED,
            anyhow::anyhow!(
                "compaction of session {} failed: {err}",
                loaded.session_id()
            ),
        )),
    }
}
