//! `etch compact --session PREFIX [--focus TEXT]` (E-CLI-08, E-CTX-15):
//! manual compaction with trigger `manual`, using the provider flags or the
//! session's recorded provider for the summary request.
//!
//! The compaction itself lives in `etch-compact` (with the compaction
//! hooks around it in `etch-core`); this module opens the
//! session (holding its lock, so a running `etch` cannot append meanwhile),
//! picks the client, and reports what happened: a skip is not an error, a
//! failed summary is (and leaves the log untouched).

use etch_compact::Outcome;

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::output::print_line;
use crate::provider;
use crate::run::{Place, watch_sigint};
use crate::session_arg;
use etch_runtime::hooks::SessionHooks;

/// Compacts the session `prefix` names.
pub async fn run(
    place: &Place,
    prefix: &str,
    focus: Option<&str>,
    force: bool,
    args: &RunArgs,
) -> Result<(), Failure> {
    /// Run options that only a model turn uses.
    const RUN_ONLY: [&str; 7] = [
        "-p/--prompt",
        "--image",
        "--skill",
        "--json",
        "--tools",
        "--read-only",
        "--max-tool-rounds",
    ];
    if let Some(what) = args.given().into_iter().find(|f| RUN_ONLY.contains(f)) {
        return Err(Failure::usage(format!(
            "etch compact does not take {what}; it accepts the provider flags and --focus TEXT to steer the summary"
        )));
    }
    let hooks = etch_runtime::hooks::load(place).map_err(crate::run::open_failure)?;
    let (loaded, mut writer) = session_arg::open(&place.session_dir, prefix)?;
    let selection = provider::select_for_session(args, place, &loaded).await?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let watcher = watch_sigint(cancel.clone())?;
    // The compaction hooks (PreCompact, PostCompact) run here as in a
    // session's own compactions.
    let hooks = (!hooks.is_empty())
        .then(|| SessionHooks::new(hooks, &place.cwd, loaded.session_id(), &loaded.path));
    let outcome = etch_runtime::compaction::manual(
        &loaded,
        &mut writer,
        &etch_runtime::compaction::Manual {
            client: selection.client.as_ref(),
            config: &place.config,
            hooks: hooks.as_ref(),
            focus,
            // Asked for explicitly (a focus, or --force): even a short
            // session.
            force: force || focus.is_some(),
        },
        &cancel,
        &mut |_| {},
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
