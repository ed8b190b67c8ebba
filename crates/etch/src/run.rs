//! Headless runs: `etch -p` and `etch resume PREFIX -p`.
//!
//! This is the bridge between the command line and the runtime's
//! [`Session`]: it turns the flags into settings, prints the notices the
//! runtime returns, wires SIGINT to the run's cancellation token, and maps
//! the outcome to output and an exit code.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use etch_core::{Observer, RunError};
use etch_protocol::NoticeLevel;
use etch_runtime::approval::{PolicyApprover, Rules, Unattended};
use etch_runtime::{Context, Notice, OpenError, RunSettings, Session, Target};
use etch_tool::Approver;
use tokio_util::sync::CancellationToken;

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::output::{self, JsonLines, Quiet, ResultLine};
use crate::prompt_input::Prompt;
use crate::provider;

pub use etch_runtime::Place;

/// The runtime's settings for the run flags of `args`.
pub fn settings(args: &RunArgs) -> RunSettings {
    RunSettings {
        provider: provider::flags(args),
        tools: args.tools.clone(),
        read_only: args.read_only,
        max_tool_rounds: args.max_tool_rounds,
    }
}

/// Shows a notice on stderr: warnings with etch's prefix, other lines
/// (the provider header, notes that carry their own prefix) as they are.
// By value: this is the runtime's `notify` callback, which hands notices over.
#[allow(clippy::needless_pass_by_value)]
pub fn print_notice(notice: Notice) {
    match notice.level {
        NoticeLevel::Warning => diag!("etch: warning: {}", notice.message),
        NoticeLevel::Info => diag!("{}", notice.message),
    }
}

/// The exit code and message of a session that could not be opened.
pub fn open_failure(err: OpenError) -> Failure {
    if let OpenError::Session(etch_session::SessionError::Busy { path }) = &err
        && let Some(who) = etch_session::holder::read(path)
    {
        // Only the holder writes a session; say where it is, so the user
        // goes there instead of waiting for a lock that stays taken.
        return Failure::usage(format!(
            "session {} is served by {who}; send its prompts there (or attach a chat to it), \
             or stop that server to resume it here",
            path.display()
        ));
    }
    if err.is_usage() {
        Failure::usage(err.to_string())
    } else {
        Failure::new(exit::FAILED, err)
    }
}

/// Builds the tools and pinned prompt for `args`, showing the assembly's
/// diagnostics as warnings (a bad file never stops a run), and expands
/// `--skill NAME` into the prompt (P-SKILL-10).
fn context(place: &Place, args: &RunArgs, prompt: String) -> Result<(Context, String), Failure> {
    // No one can be asked during a -p run: the policy's questions are
    // answered by the flags (refused unless --approve-all; a command
    // outside the sandbox only with --allow-unsandboxed).
    let asker = Arc::new(Unattended {
        approve_all: args.approve_all,
        allow_unsandboxed: args.allow_unsandboxed,
    });
    let approver: Arc<dyn Approver> = Arc::new(PolicyApprover::new(
        Rules::new(&place.config.approval),
        asker,
    ));
    let context =
        Context::build_gated(place, &settings(args), Some(&approver)).map_err(open_failure)?;
    for diagnostic in &context.assembled.diagnostics {
        print_notice(Notice::warning(diagnostic.clone()));
    }
    let prompt = match args.skill.as_deref() {
        Some(name) => context.expand_skill(name, &prompt).map_err(open_failure)?,
        None => prompt,
    };
    Ok((context, prompt))
}

/// The images of `--image`, read and made fit before anything starts: a
/// bad file is a usage error naming it, not a run without it.
fn attachments(place: &Place, args: &RunArgs) -> Result<Vec<etch_model::Image>, Failure> {
    etch_runtime::images::check_count(args.images.len())
        .map_err(|e| Failure::usage(format!("--image: {e}")))?;
    let edge = place.config.tools.read_image_max_edge;
    args.images
        .iter()
        .map(|path| {
            let shown = path.display().to_string();
            etch_runtime::images::from_file(&place.cwd.join(path), &shown, edge)
                .map(|prepared| prepared.image)
                .map_err(|e| Failure::usage(format!("--image: {e}")))
        })
        .collect()
}

/// Runs `prompt` in a new session.
pub async fn run_new(place: &Place, args: &RunArgs, prompt: Prompt) -> Result<(), Failure> {
    let Prompt {
        text: prompt,
        title,
    } = prompt;
    let images = attachments(place, args)?;
    let cancel = CancellationToken::new();
    let watcher = watch_sigint(cancel.clone())?;
    let (context, prompt) = context(place, args, prompt)?;
    let title = match &args.skill {
        Some(skill) if title.trim().is_empty() => format!("skill {skill}"),
        _ => title,
    };
    let (session, first) = Session::create(
        place.clone(),
        settings(args),
        context,
        title,
        &mut print_notice,
    )
    .await
    .map_err(open_failure)?;
    let mut observer = make_observer(args.json);
    observer.durable_line(&first.line);
    let prompt = etch_core::Prompt {
        text: prompt,
        images,
    };
    let result = execute(args, session, prompt, observer, &cancel).await;
    watcher.abort();
    result
}

/// Continues the session matching `prefix` with `prompt`.
pub async fn run_resume(
    place: &Place,
    prefix: &str,
    args: &RunArgs,
    prompt: Prompt,
) -> Result<(), Failure> {
    let images = attachments(place, args)?;
    let cancel = CancellationToken::new();
    let watcher = watch_sigint(cancel.clone())?;
    let (context, prompt) = context(place, args, prompt.text)?;
    let prompt = etch_core::Prompt {
        text: prompt,
        images,
    };
    let mut observer = make_observer(args.json);
    let session = Session::open(
        place.clone(),
        settings(args),
        context,
        Target::Prefix(prefix),
        &mut print_notice,
        observer.as_mut(),
    )
    .await
    .map_err(open_failure)?;
    let result = execute(args, session, prompt, observer, &cancel).await;
    watcher.abort();
    result
}

/// The observer for the output mode.
fn make_observer(json: bool) -> Box<dyn Observer> {
    if json {
        Box::new(JsonLines)
    } else {
        Box::new(Quiet::new(std::io::stderr().is_terminal()))
    }
}

/// Runs the prompt and reports the outcome.
async fn execute(
    args: &RunArgs,
    mut session: Session,
    prompt: etch_core::Prompt,
    mut observer: Box<dyn Observer>,
    cancel: &CancellationToken,
) -> Result<(), Failure> {
    let result = session.run(prompt, observer.as_mut(), cancel).await;
    // Background processes end with the run: -p has nothing after it.
    let processes = std::sync::Arc::clone(&session.context().processes);
    if let Some(table) = processes.close(session.id()).await
        && let Ok(lines) = session.log_ends_of(&table)
    {
        for line in lines {
            observer.durable_line(&line);
        }
    }
    session.context().plugins.shutdown().await;
    if let Some(notice) = session.tidy() {
        print_notice(notice);
    }
    report(args.json, &session, &result)
}

/// The stream of SIGINTs (Ctrl-C), from now on.
pub fn interrupts() -> Result<tokio::signal::unix::Signal, Failure> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).map_err(|e| {
        Failure::new(
            exit::FAILED,
            anyhow::anyhow!("cannot watch for Ctrl-C: {e}"),
        )
    })
}

/// Cancels the run on the first SIGINT and exits on a second one.
///
/// The handler is installed before this returns (not when the task first
/// runs), so a Ctrl-C that arrives right after the prompt is appended still
/// takes the clean path instead of killing the process mid-write.
pub fn watch_sigint(cancel: CancellationToken) -> Result<tokio::task::JoinHandle<()>, Failure> {
    let mut interrupts = interrupts()?;
    Ok(tokio::spawn(async move {
        if interrupts.recv().await.is_some() {
            cancel.cancel();
            if interrupts.recv().await.is_some() {
                diag!("etch: interrupted twice; exiting without waiting for tools");
                // Plugins run in their own process groups and never saw
                // the Ctrl-C; exit skips the destructors that stop them.
                etch_plugins::kill_all();
                std::process::exit(i32::from(exit::INTERRUPTED));
            }
        }
    }))
}

/// Prints the final answer or the error and picks the exit code.
fn report(
    json: bool,
    session: &Session,
    result: &Result<etch_core::RunOutcome, RunError>,
) -> Result<(), Failure> {
    let path = session.path().to_string_lossy().into_owned();
    let (code, text, error) = match result {
        Ok(outcome) => (exit::OK, outcome.final_text.as_str(), None),
        Err(RunError::Cancelled) => (exit::INTERRUPTED, "", Some(cancel_message(session.path()))),
        Err(err) => (exit::FAILED, "", Some(err.to_string())),
    };
    if json {
        let line = ResultLine {
            kind: "result",
            ok: code == exit::OK,
            session_id: Some(session.id()),
            session_path: Some(&path),
            text,
            error: error.as_deref(),
        };
        let encoded = serde_json::to_string(&line).map_err(|e| {
            Failure::new(
                exit::FAILED,
                anyhow::anyhow!("could not encode result: {e}"),
            )
        })?;
        output::print_line(&encoded);
        if let Some(error) = &error {
            diag!("etch: error: {error}");
        }
        return if code == exit::OK {
            Ok(())
        } else {
            Err(Failure::silent(code))
        };
    }
    match error {
        None => {
            if std::io::stdout().is_terminal() {
                output::print_prose_line(&crate::markdown::render(text));
            } else {
                output::print_prose_line(text);
            }
            Ok(())
        }
        Some(message) => Err(Failure::new(code, anyhow::anyhow!(message))),
    }
}

/// What to say when a run was interrupted.
fn cancel_message(path: &Path) -> String {
    format!("interrupted; the session log is intact: {}", path.display())
}
