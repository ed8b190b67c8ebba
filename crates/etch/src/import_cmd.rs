//! `etch import pi [PATH...] [--force] [--dry-run]`: Pi's session files
//! (by default Pi's directory for this project) imported as etch
//! sessions, a line per file saying what it became and what could not
//! be read. This module only picks the files and prints the outcomes.

use std::path::{Path, PathBuf};

use etch_import::pi;
use etch_session::SessionStore;

use crate::exit::{self, Failure};
use crate::run::Place;

/// The agents `etch import` reads.
#[derive(Debug, clap::Subcommand)]
pub enum ImportCommand {
    /// Import Pi sessions: each file becomes an etch session with the same
    /// tree, messages, tool results, compactions, branch summaries,
    /// labels and name; images move to the session's assets. Pi's files
    /// are only read; a file already imported is skipped.
    #[command(
        after_help = "Examples:\n  etch import pi\n  etch import pi --dry-run\n  \
                            etch import pi ~/.pi/agent/sessions/--home-me-app--/2026-01-02T03-04-05-000Z_abc.jsonl\n\n\
                            Without PATH, the sessions of this project in Pi's directory\n\
                            ($PI_CODING_AGENT_DIR, else ~/.pi/agent)/sessions/--<project path>--/ are imported."
    )]
    Pi {
        /// Pi session files, or directories of them.
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Import again files already imported (as new sessions).
        #[arg(long)]
        force: bool,
        /// Only say what would be imported.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Runs `etch import`.
pub fn run(place: &Place, command: &ImportCommand) -> Result<(), Failure> {
    let ImportCommand::Pi {
        paths,
        force,
        dry_run,
    } = command;
    let paths = if paths.is_empty() {
        let home = place.home.clone().ok_or_else(|| {
            Failure::usage("no home directory to find Pi's sessions in; name the files or directories to import")
        })?;
        let agent_dir = std::env::var_os("PI_CODING_AGENT_DIR").map(PathBuf::from);
        let dir = pi::default_dir(agent_dir.as_deref(), &home, &place.cwd);
        if !dir.is_dir() {
            return Err(Failure::usage(format!(
                "Pi has no sessions for {} (no directory {}); name the files or directories to import",
                place.cwd.display(),
                dir.display()
            )));
        }
        vec![dir]
    } else {
        paths.iter().map(|p| place.cwd.join(p)).collect()
    };
    let files = pi::session_files(&paths).map_err(|e| Failure::usage(e.to_string()))?;
    if files.is_empty() {
        return Err(Failure::usage("no .jsonl files to import there"));
    }
    let store = SessionStore::new(&place.session_dir);
    let mut already = pi::imported(&store).map_err(|e| Failure::new(exit::FAILED, e))?;
    let options = pi::Options {
        force: *force,
        dry_run: *dry_run,
        etch_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let mut failed = 0;
    for file in &files {
        match pi::import_file(file, &store, &already, &options) {
            Ok(outcome) => {
                report(&outcome, *dry_run);
                if let Some(id) = &outcome.session_id {
                    already.insert(outcome.pi_id.clone(), id.clone());
                }
            }
            Err(err) => {
                failed += 1;
                diag!("etch: {err}");
            }
        }
    }
    if failed > 0 {
        return Err(Failure::new(
            exit::FAILED,
            anyhow::anyhow!("{failed} of {} files could not be imported", files.len()),
        ));
    }
    Ok(())
}

/// Prints what became of one file.
fn report(outcome: &pi::Outcome, dry_run: bool) {
    let file = shown(&outcome.path);
    let counts: Vec<String> = outcome
        .counts
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    let what = format!(
        "{} entries ({}), {} images, format v{}",
        outcome.entries(),
        counts.join(", "),
        outcome.images,
        outcome.version
    );
    let line = match (&outcome.session_id, outcome.skipped, dry_run) {
        (Some(id), true, _) => {
            format!("skipped {file}: already imported as {id} (--force imports it again)")
        }
        (_, _, true) => format!("would import {file}: {what}"),
        (Some(id), false, false) => format!("imported {file} as {id}: {what}"),
        (None, _, false) => format!("imported {file}: {what}"),
    };
    crate::output::print_line(&line);
    for problem in &outcome.problems {
        // Problems quote the file (ids, types): its controls shown, not
        // sent to the terminal.
        diag!("etch: warning: {file}: {}", etch_sanitize::visible(problem));
    }
}

/// A path for a message, its controls made visible.
fn shown(path: &Path) -> String {
    etch_sanitize::visible(&path.display().to_string()).into_owned()
}
