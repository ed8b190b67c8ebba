//! The `etch` binary: process entry and top-level dispatch.
//!
//! This crate stays thin. It parses the command line, changes directory for
//! `-C` before anything else, builds a single-threaded Tokio runtime (tools
//! that need CPU use blocking threads of their own), dispatches to the
//! command modules, and turns their outcome into an exit code (G14). All agent
//! behaviour lives in the library crates.

/// Writes one diagnostic line to stderr, like `eprintln!`, with every
/// control character in it made visible: etch's messages quote paths,
/// commands, server replies and values from a project's files, and none
/// of those may act on the user's terminal.
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::output::eprint_line(&format!($($arg)*))
    };
}

mod acp_cmd;
mod auth_cmd;
mod chat_cmd;
mod cli;
mod compact_cmd;
mod config_cmd;
mod context_cmd;
mod exit;
mod export_cmd;
mod hooks_cmd;
mod hooks_import;
mod import_cmd;
mod markdown;
mod mcp_cmd;
mod outbox;
mod output;
mod plugins_cmd;
mod prompt_input;
mod provider;
mod rpc_cmd;
mod run;
mod serve_cmd;
mod session_arg;
mod sessions;
mod show;
mod show_tree;
mod status_cmd;
mod tool_cmd;
mod trust_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::exit::Failure;
use crate::run::Place;

fn main() -> ExitCode {
    // The sandbox helper confines this very process, so it must run
    // before anything starts a thread (Landlock and seccomp hold for
    // the calling thread only) and before the CLI is parsed.
    let mut args = std::env::args_os();
    let first = args.nth(1);
    if first.as_ref().is_some_and(|a| a == etch_sandbox::HELPER) {
        let rest: Vec<_> = args.collect();
        let error = etch_sandbox::main(&rest);
        diag!("etch: error: {error}");
        return ExitCode::from(exit::SANDBOX);
    }
    // A background process's guard blocks signals for the process, so
    // it too runs before any thread starts.
    if first.as_ref().is_some_and(|a| a == etch_process::GUARD) {
        let rest: Vec<_> = args.collect();
        let error = etch_process::guard::main(&rest);
        diag!("etch: error: background process guard: {error}");
        return ExitCode::from(exit::SANDBOX);
    }
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => ExitCode::from(exit::OK),
        Err(failure) => {
            if let Some(error) = failure.error {
                diag!("etch: error: {}", describe(&error));
            }
            ExitCode::from(failure.code)
        }
    }
}

/// The error and its causes joined with ": ", leaving out a cause whose
/// text the message already holds (many library errors put their source
/// into their own message; printing both said the OS error twice).
fn describe(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// Applies global options and runs the chosen command.
fn dispatch(cli: Cli) -> Result<(), Failure> {
    let json_run = match &cli.command {
        None => cli.run.json,
        Some(Command::Resume { run, .. }) => run.json || cli.run.json,
        Some(_) => false,
    };
    let result = dispatch_command(cli);
    // A `--json` run that failed before its session existed has printed no
    // result line yet (those that had a session print their own and come
    // back silent).
    if json_run
        && let Err(Failure {
            error: Some(error), ..
        }) = &result
    {
        output::print_setup_failure(&describe(error));
    }
    result
}

/// Runs the command `cli` names.
fn dispatch_command(cli: Cli) -> Result<(), Failure> {
    let Cli {
        global,
        run: outer,
        positional_prompt,
        command,
    } = cli;
    if let Some(dir) = &global.workspace {
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
    // The MCP bridge is etch started by etch as a plugin: it reads no
    // configuration, everything it needs is in its argument.
    if let Some(Command::Mcp(mcp_cmd::McpCommand::Bridge { spec })) = &command {
        return runtime()?.block_on(mcp_cmd::bridge(spec));
    }
    let command = if let Some(command) = command {
        Some(cli::absorb_outer(command, &outer, &positional_prompt)?)
    } else {
        cli::reject_mistyped_command(outer.prompt.as_deref(), &positional_prompt)?;
        None
    };
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let mut config = etch_config::load(&cwd, home.as_deref());
    // What a project may not decide untrusted is held back before any
    // command reads the configuration.
    let gate_warnings = config.gate_project(home.as_deref());
    if let Some(Command::Config(action)) = &command {
        return config_cmd::run(action, config, &cwd, home.as_deref());
    }
    let runs_model = matches!(
        command,
        None | Some(
            Command::Resume { .. }
                | Command::Compact { .. }
                | Command::Rpc { .. }
                | Command::Serve { .. }
                | Command::Acp { .. }
                | Command::Chat { .. }
        )
    );
    config_cmd::report(&config, runs_model)?;
    // `etch trust` lists the held-back settings itself.
    if !matches!(command, Some(Command::Trust { .. })) {
        for warning in &gate_warnings {
            diag!("etch: warning: {warning}");
        }
    }
    let place = Place::new(
        &cwd,
        home.as_deref(),
        global.session_dir.as_deref(),
        config.config,
    );
    match command {
        Some(Command::Sessions { json }) => sessions::list(&place.session_dir, json),
        Some(Command::Show { json, tree, prefix }) => {
            show::show(&place.session_dir, prefix.as_deref(), json, tree)
        }
        Some(Command::Export {
            prefix,
            format,
            output,
        }) => export_cmd::run(
            &place.session_dir,
            &place.cwd,
            prefix.as_deref(),
            format.as_deref(),
            output.as_deref(),
        ),
        Some(Command::Import(command)) => import_cmd::run(&place, &command),
        Some(Command::Status { session, json }) => {
            status_cmd::status(&place, session.as_deref(), json)
        }
        Some(Command::Context {
            action,
            session,
            json,
        }) => runtime()?.block_on(context_cmd::run(
            &place,
            session.as_deref(),
            action.as_ref(),
            json,
        )),
        Some(Command::Compact {
            session,
            focus,
            force,
            run,
        }) => runtime()?.block_on(compact_cmd::run(
            &place,
            &session,
            focus.as_deref(),
            force,
            &run,
        )),
        Some(Command::Config(_)) => Ok(()),
        Some(Command::Chat {
            attach: Some(url),
            run,
            ..
        }) => runtime()?.block_on(chat_cmd::attach(&place, &url, &run)),
        Some(Command::Chat { session, run, .. }) => {
            runtime()?.block_on(chat_cmd::run(&place, session.as_deref(), &run))
        }
        Some(Command::Acp { run }) => {
            runtime()?.block_on(acp_cmd::run(&place, global.session_dir.as_deref(), &run))
        }
        Some(Command::Serve {
            listen,
            nine_p,
            roots,
            insecure_remote,
            run,
        }) => server_runtime()?.block_on(serve_cmd::run(
            &place,
            home.as_deref(),
            global.session_dir.as_deref(),
            &serve_cmd::Listen {
                addr: &listen,
                nine_p: nine_p.as_deref(),
                roots: &roots,
                insecure_remote,
            },
            &run,
        )),
        Some(Command::Rpc { session, run }) => {
            runtime()?.block_on(rpc_cmd::run(&place, session.as_deref(), &run))
        }
        Some(Command::Auth(command)) => runtime()?.block_on(auth_cmd::run(command, None)),
        Some(Command::Tool(command)) => runtime()?.block_on(tool_cmd::run(&place.cwd, command)),
        Some(Command::Hooks(command)) => runtime()?.block_on(hooks_cmd::run(&place, command)),
        Some(Command::Plugins(command)) => runtime()?.block_on(plugins_cmd::run(&place, command)),
        Some(Command::Mcp(command)) => runtime()?.block_on(mcp_cmd::run(&place, command)),
        Some(Command::Trust { yes }) => trust_cmd::run(&place, yes),
        Some(Command::Resume {
            last,
            prefix,
            mut words,
            run,
        }) => {
            let prefix = if last {
                // With --last, a word where the prefix would be starts the
                // prompt, unless it names a session: then the user meant
                // that session, and guessing either way would be wrong.
                if let Some(first) = prefix {
                    if session_arg::names_a_session(&place.session_dir, &first) {
                        return Err(Failure::usage(format!(
                            "etch resume --last continues the newest session, but \"{first}\" names a session too; \
                             drop --last to continue that one, or give the prompt with -p"
                        )));
                    }
                    words.insert(0, first);
                }
                session_arg::pick(&place.session_dir, None)?.0.id
            } else {
                prefix.ok_or_else(|| {
                    Failure::usage(
                        "etch resume needs a session: give an id PREFIX (see etch sessions) or --last",
                    )
                })?
            };
            let typed = cli::joined_prompt(run.prompt.clone(), &words);
            if typed.is_none() && !run.json && chat_cmd::wanted() {
                return runtime()?.block_on(chat_cmd::run(&place, Some(&prefix), &run));
            }
            let prompt =
                prompt_input::read(typed, place.config.context.auto_compact_threshold_tokens)?;
            runtime()?.block_on(run::run_resume(&place, &prefix, &run, prompt))
        }
        None => {
            let text = cli::joined_prompt(outer.prompt.clone(), &positional_prompt);
            if text.is_none() && !outer.json && outer.skill.is_none() && chat_cmd::wanted() {
                return runtime()?.block_on(chat_cmd::run(&place, None, &outer));
            }
            let prompt =
                prompt_input::read(text, place.config.context.auto_compact_threshold_tokens)?;
            runtime()?.block_on(run::run_new(&place, &outer, prompt))
        }
    }
}

/// The runtime of `etch serve`: a worker per core, since many sessions
/// run at once there and a burst of them (a hundred prompts at once)
/// should not queue behind one thread.
fn server_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    built(tokio::runtime::Builder::new_multi_thread())
}

/// A current-thread runtime: starts in microseconds and keeps the process
/// small; concurrency inside a run is cooperative.
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    built(tokio::runtime::Builder::new_current_thread())
}

/// The runtime `builder` makes, with timers and I/O.
fn built(mut builder: tokio::runtime::Builder) -> Result<tokio::runtime::Runtime, Failure> {
    builder.enable_all().build().map_err(|e| {
        Failure::new(
            exit::FAILED,
            anyhow::anyhow!("could not start the async runtime: {e}"),
        )
    })
}
