//! `etch context [--session PREFIX] [--json]` and `etch context dump [PATH]`
//! (the seed's `/context`, G12): what the next model request would contain,
//! layer by layer, in bytes and estimated tokens (E-CTX-21), and a plain-text
//! dump of the logical projection.
//!
//! It reads the same inputs a run would (configuration, instruction files,
//! skills, the session log) and never writes to the session. Prompt assembly,
//! projection and estimation live in their crates; this module measures and
//! prints.

use std::path::Path;

use etch_runtime::report::context as report;
use etch_session::{LoadedSession, load_session};

use crate::cli::ContextAction;
use crate::exit::{self, Failure};
use crate::output::print_line;
use crate::run::Place;
use crate::session_arg;
use etch_runtime::{Context, RunSettings};

/// Runs `etch context` or `etch context dump`.
pub async fn run(
    place: &Place,
    prefix: Option<&str>,
    action: Option<&ContextAction>,
    json: bool,
) -> Result<(), Failure> {
    let session = load(place, prefix)?;
    let mut context = offered(place).await?;
    let result = report_on(place, session.as_ref(), &mut context, action, json);
    context.plugins.shutdown().await;
    result
}

/// What a run with the default settings would offer: the same context the
/// runtime builds for `etch -p`, plugin and MCP tools included once they
/// have started (as long as a run's first request would wait for them).
/// When the project's commands may not run (not trusted), the built-ins
/// alone, with a note saying what is left out.
async fn offered(place: &Place) -> Result<Context, Failure> {
    match Context::build(place, &RunSettings::default()) {
        Ok(context) => {
            let _ = tokio::time::timeout(etch_core::SOURCE_GRACE, context.tools.settle()).await;
            Ok(context)
        }
        Err(err) => {
            diag!("etch: note: plugin and MCP tools are not counted: {err}");
            Context::inspect(place, &RunSettings::default()).map_err(crate::run::open_failure)
        }
    }
}

/// Measures `context` with `session` and prints the report or the dump.
fn report_on(
    place: &Place,
    session: Option<&LoadedSession>,
    context: &mut Context,
    action: Option<&ContextAction>,
    json: bool,
) -> Result<(), Failure> {
    // A subagent's child session is measured as it resumes: with its
    // profile's tools and instructions (E-SUB-09).
    let mut place = place.clone();
    if let Some(name) = session.and_then(|s| s.header.subagent_profile.clone()) {
        etch_runtime::subagent::resume_as_child(
            &mut place,
            &mut RunSettings::default(),
            context,
            &name,
        )
        .map_err(|why| Failure::new(exit::FAILED, anyhow::anyhow!(why)))?;
    }
    let place = &place;
    match action {
        Some(ContextAction::Dump { path }) => dump(place, session, context, path.as_deref()),
        None => {
            let report = report::measure(place, session, context);
            if json {
                let text = serde_json::to_string(&report).map_err(|e| {
                    Failure::new(
                        exit::FAILED,
                        anyhow::anyhow!("could not encode the report: {e}"),
                    )
                })?;
                print_line(&text);
            } else {
                crate::output::print_text(&report::render(&report));
            }
            Ok(())
        }
    }
}

/// The session to measure: the one `prefix` names, else the newest, else
/// none (a project without sessions still has a pinned prompt to show).
fn load(place: &Place, prefix: Option<&str>) -> Result<Option<LoadedSession>, Failure> {
    let picked = match session_arg::pick(&place.session_dir, prefix) {
        Ok((_, path)) => path,
        Err(failure) if prefix.is_none() && failure.code == exit::FAILED => return Ok(None),
        Err(failure) => return Err(failure),
    };
    let loaded = load_session(&picked).map_err(|e| Failure::new(exit::FAILED, e))?;
    Ok(Some(loaded))
}

/// Writes the G12 dump and says where (`-` prints it).
fn dump(
    place: &Place,
    session: Option<&LoadedSession>,
    context: &Context,
    path: Option<&Path>,
) -> Result<(), Failure> {
    let out = report::dump(session, context);
    if path.is_some_and(|p| p == Path::new("-")) {
        crate::output::print_prose(&out);
        return Ok(());
    }
    let target = report::dump_path(place, session.map(LoadedSession::session_id), path)
        .map_err(|e| Failure::new(exit::FAILED, anyhow::anyhow!(e)))?;
    std::fs::write(&target, out).map_err(|e| {
        Failure::new(
            exit::FAILED,
            anyhow::anyhow!("cannot write {}: {e}", target.display()),
        )
    })?;
    print_line(&format!("wrote context dump to {}", target.display()));
    Ok(())
}
