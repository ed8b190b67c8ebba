//! The `etch` binary: process entry and top-level dispatch.
//!
//! This crate stays thin. It parses the command line, changes directory for
//! `-C` before anything else, builds a single-threaded Tokio runtime (tools
//! that need CPU use blocking threads of their own), dispatches to the
//! command modules, and turns their outcome into an exit code (G14). All agent
//! behaviour lives in the library crates.

mod auth_cmd;
mod cli;
mod compact_cmd;
mod config_cmd;
mod context_cmd;
mod exit;
mod markdown;
mod output;
mod paths;
mod provider;
mod run;
mod session_arg;
mod sessions;
mod show;
mod status_cmd;
mod tool_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::exit::Failure;
use crate::run::Place;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => ExitCode::from(exit::OK),
        Err(failure) => {
            if let Some(error) = failure.error {
                eprintln!("etch: error: {error:#}");
            }
            ExitCode::from(failure.code)
        }
    }
}

/// Applies global options and runs the chosen command.
fn dispatch(cli: Cli) -> Result<(), Failure> {
    if let Some(dir) = &cli.global.workspace {
        std::env::set_current_dir(dir).map_err(|e| {
            Failure::usage(format!("cannot change to directory {}: {e}", dir.display()))
        })?;
    }
    let cwd: PathBuf = std::env::current_dir().map_err(|e| {
        Failure::new(
            exit::FAILED,
            anyhow::anyhow!("cannot read the current directory: {e}"),
        )
    })?;
    if let Some(command) = &cli.command {
        reject_run_options(&cli, command.name())?;
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let config = etch_config::load(&cwd, home.as_deref());
    if let Some(Command::Config(action)) = &cli.command {
        return config_cmd::run(action, config);
    }
    let runs_model = matches!(
        cli.command,
        None | Some(Command::Resume { .. } | Command::Compact { .. })
    );
    config_cmd::report(&config, runs_model)?;
    let session_dir = paths::session_dir(
        &cwd,
        cli.global.session_dir.as_deref(),
        &config.config.session.dir,
    );
    let place = Place {
        cwd,
        session_dir,
        home,
        config: config.config,
    };
    match cli.command {
        Some(Command::Sessions { json }) => sessions::list(&place.session_dir, json),
        Some(Command::Show { json, prefix }) => show::show(&place.session_dir, &prefix, json),
        Some(Command::Status { session, json }) => {
            status_cmd::status(&place.session_dir, session.as_deref(), json)
        }
        Some(Command::Context {
            action,
            session,
            json,
        }) => context_cmd::run(&place, session.as_deref(), action.as_ref(), json),
        Some(Command::Compact {
            session,
            focus,
            run,
        }) => runtime()?.block_on(compact_cmd::run(&place, &session, focus.as_deref(), &run)),
        Some(Command::Config(_)) => Ok(()),
        Some(Command::Auth(command)) => runtime()?.block_on(auth_cmd::run(command, None)),
        Some(Command::Tool(command)) => runtime()?.block_on(tool_cmd::run(&place.cwd, command)),
        Some(Command::Resume { prefix, run }) => {
            let prompt = run::prompt_text(run.prompt.clone())?;
            runtime()?.block_on(run::run_resume(&place, &prefix, &run, prompt))
        }
        None => {
            let text = cli.run.prompt.clone().or(cli.positional_prompt);
            let prompt = run::prompt_text(text)?;
            runtime()?.block_on(run::run_new(&place, &cli.run, prompt))
        }
    }
}

/// Run options written before a subcommand would be silently ignored; say so
/// instead (they go after the subcommand, e.g. `etch sessions --json`).
fn reject_run_options(cli: &Cli, command: &str) -> Result<(), Failure> {
    let run = &cli.run;
    let given = [
        (
            run.prompt.is_some() || cli.positional_prompt.is_some(),
            "a prompt",
        ),
        (run.json, "--json"),
        (run.provider.is_some(), "--provider"),
        (run.model.is_some(), "--model"),
        (
            run.base_url.is_some()
                || run.api_key.is_some()
                || run.openai_api.is_some()
                || run.openai_transport.is_some(),
            "--base-url/--api-key/--openai-api/--openai-transport",
        ),
        (
            run.reasoning_effort.is_some() || run.reasoning_summary.is_some(),
            "--reasoning-effort/--reasoning-summary",
        ),
        (run.skill.is_some(), "--skill"),
        (run.max_tool_rounds.is_some(), "--max-tool-rounds"),
        (run.tools.is_some() || run.read_only, "--tools/--read-only"),
    ];
    match given.iter().find(|(set, _)| *set) {
        Some((_, what)) => Err(Failure::usage(format!(
            "{what} cannot come before the {command} subcommand; put options after it \
             (see etch {command} --help)"
        ))),
        None => Ok(()),
    }
}

/// A current-thread runtime: starts in microseconds and keeps the process
/// small; concurrency inside a run is cooperative.
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Failure::new(
                exit::FAILED,
                anyhow::anyhow!("could not start the async runtime: {e}"),
            )
        })
}
