//! Headless runs: `etch -p` and `etch resume PREFIX -p`.
//!
//! This is the bridge between the command line and the core: it picks the
//! client, opens or creates the session, wires SIGINT to the run's
//! cancellation token, and maps the outcome to output and an exit code.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use etch_config::Config;
use etch_core::{Agent, AgentConfig, CompactionPolicy, Observer, RunError, close_dangling_calls};
use etch_model::{Message, RequestOptions};
use etch_prompt::{Assembled, PromptInputs};
use etch_session::store::NewSession;
use etch_session::{SessionStore, SessionWriter, project_messages};
use etch_tool::ToolRegistry;
use etch_tools::builtin::{self, BuiltinOptions};
use tokio_util::sync::CancellationToken;

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::output::{self, JsonLines, Quiet, ResultLine};
use crate::paths;
use crate::prompt_input::Prompt;
use crate::provider;

/// Where a run happens and with which configuration.
#[derive(Debug, Clone)]
pub struct Place {
    /// Working directory.
    pub cwd: PathBuf,
    /// Session directory.
    pub session_dir: PathBuf,
    /// The user's home, for `~/.etch` files.
    pub home: Option<PathBuf>,
    /// The merged configuration (E-CFG-03).
    pub config: Config,
}

/// The active tools and the pinned prompt built for them.
pub struct Context {
    /// Active tools.
    pub tools: ToolRegistry,
    /// The assembled pinned layers, files and skills.
    pub assembled: Assembled,
}

/// Builds the active tools and the pinned prompt (G22), printing any
/// instruction-file or skill diagnostics as warnings: a bad file never
/// stops a run.
pub fn context(place: &Place, args: &RunArgs) -> Result<Context, Failure> {
    let tools = active_tools(args, &place.config)?;
    let assembled = assemble(place, &tools.names());
    for diagnostic in &assembled.diagnostics {
        eprintln!("etch: warning: {diagnostic}");
    }
    Ok(Context { tools, assembled })
}

/// The pinned prompt for `tools` in `place`, dated today (local time).
pub fn assemble(place: &Place, tools: &[&str]) -> Assembled {
    let date = chrono::Local::now().format("%Y-%m-%d").to_string();
    etch_prompt::assemble(&PromptInputs {
        cwd: &place.cwd,
        home: place.home.as_deref(),
        tools,
        prompt_text: place.config.prompt.text.as_deref(),
        date: &date,
    })
}

/// Expands `--skill NAME` into the prompt (P-SKILL-10): the skill's
/// instructions in a `<skill>` block, then the user's text.
fn with_skill(args: &RunArgs, assembled: &Assembled, prompt: String) -> Result<String, Failure> {
    let Some(name) = args.skill.as_deref() else {
        return Ok(prompt);
    };
    let Some(skill) = etch_prompt::find_skill(&assembled.skills, name) else {
        let known: Vec<&str> = assembled.skills.iter().map(|s| s.name.as_str()).collect();
        let listed = if known.is_empty() {
            "none found in .etch/skills, .agents/skills or ~/.etch/skills".to_owned()
        } else {
            known.join(", ")
        };
        return Err(Failure::usage(format!(
            "unknown skill \"{name}\"; available: {listed}"
        )));
    };
    let body = etch_prompt::load_skill_body(skill).map_err(|e| Failure::new(exit::FAILED, e))?;
    Ok(etch_prompt::expand_skill(skill, &body, &prompt))
}

/// Runs `prompt` in a new session.
pub async fn run_new(place: &Place, args: &RunArgs, prompt: Prompt) -> Result<(), Failure> {
    let Prompt {
        text: prompt,
        title,
    } = prompt;
    let cancel = CancellationToken::new();
    let watcher = watch_sigint(cancel.clone())?;
    let context = context(place, args)?;
    let prompt = with_skill(args, &context.assembled, prompt)?;
    let selection = provider::select(args, &place.config).await?;
    if let Some(notice) = &selection.notice {
        eprintln!("{notice}");
    }
    let store = SessionStore::new(&place.session_dir);
    let (writer, first) = store
        .create(&NewSession {
            cwd: place.cwd.to_string_lossy().into_owned(),
            provider: selection.client.provider().to_string(),
            model: selection.client.model().to_string(),
            openai_api: selection.client.api().map(str::to_string),
            base_url: selection.endpoint.clone(),
            etch_version: env!("CARGO_PKG_VERSION").to_string(),
            first_prompt: match &args.skill {
                Some(skill) if title.trim().is_empty() => format!("skill {skill}"),
                _ => title,
            },
        })
        .map_err(|e| Failure::new(exit::FAILED, e))?;
    let mut observer = make_observer(args.json);
    observer.durable_line(&first.line);
    let run = Run {
        selection,
        writer,
        history: Vec::new(),
        prompt,
        observer,
        context,
    };
    let result = execute(place, args, run, &cancel).await;
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
    let prompt = prompt.text;
    let cancel = CancellationToken::new();
    let watcher = watch_sigint(cancel.clone())?;
    let context = context(place, args)?;
    let prompt = with_skill(args, &context.assembled, prompt)?;
    let (loaded, mut writer) = crate::session_arg::open(&place.session_dir, prefix)?;
    let selection = provider::select_for_session(args, &place.config, &loaded).await?;
    let mut observer = make_observer(args.json);
    close_dangling_calls(&loaded, &mut writer, observer.as_mut())
        .map_err(|e| Failure::new(exit::FAILED, e))?;
    record_model_changes(args, &loaded, &selection, &mut writer, observer.as_mut())?;
    let projection = project_messages(&loaded);
    for warning in &projection.warnings {
        eprintln!("etch: warning: {}: {warning}", loaded.path.display());
    }
    let run = Run {
        selection,
        writer,
        history: projection.messages,
        prompt,
        observer,
        context,
    };
    let result = execute(place, args, run, &cancel).await;
    watcher.abort();
    result
}

/// Appends `model.change` and `thinking_level.change` when this run's
/// flags moved the session to another provider, model, endpoint or
/// reasoning effort, so that later runs (a plain `etch resume`) go on with
/// them.
fn record_model_changes(
    args: &RunArgs,
    loaded: &etch_session::LoadedSession,
    selection: &provider::Selection,
    writer: &mut SessionWriter,
    observer: &mut dyn Observer,
) -> Result<(), Failure> {
    let state = etch_session::model_state(loaded);
    let fail = |e: etch_session::SessionError| Failure::new(exit::FAILED, e);
    if let Some(change) = etch_runtime::model_change(&state, selection) {
        let appended = writer
            .append(etch_session::types::MODEL_CHANGE, &change)
            .map_err(fail)?;
        observer.durable_line(&appended.line);
    }
    if let Some(change) = etch_runtime::thinking_change(&state, &provider::flags(args)) {
        let appended = writer
            .append(etch_session::types::THINKING_LEVEL_CHANGE, &change)
            .map_err(fail)?;
        observer.durable_line(&appended.line);
    }
    Ok(())
}

/// Everything a run needs besides its options.
struct Run {
    /// The chosen model client.
    selection: provider::Selection,
    /// The session file.
    writer: SessionWriter,
    /// Projected history of the session so far.
    history: Vec<Message>,
    /// The new prompt.
    prompt: String,
    /// Output mode.
    observer: Box<dyn Observer>,
    /// Active tools and the pinned prompt.
    context: Context,
}

/// The observer for the output mode.
fn make_observer(json: bool) -> Box<dyn Observer> {
    if json {
        Box::new(JsonLines)
    } else {
        Box::new(Quiet)
    }
}

/// Runs the agent and reports the outcome.
async fn execute(
    place: &Place,
    args: &RunArgs,
    run: Run,
    cancel: &CancellationToken,
) -> Result<(), Failure> {
    let Run {
        selection,
        mut writer,
        mut history,
        prompt,
        mut observer,
        context,
    } = run;
    let Context { tools, assembled } = context;
    let compaction = compaction_policy(&place.config, &assembled, &tools);
    let config = AgentConfig {
        max_tool_rounds: args
            .max_tool_rounds
            .unwrap_or(place.config.session.max_tool_rounds),
        system: assembled.layers,
        cwd: place.cwd.clone(),
        temp_dir: paths::session_temp_dir(&place.cwd, writer.session_id()),
        options: RequestOptions {
            session_id: writer.session_id().to_string(),
            ..RequestOptions::default()
        },
        compaction: Some(compaction),
    };
    let agent = Agent::new(selection.client, tools, config);
    let result = agent
        .run(&mut writer, &mut history, prompt, observer.as_mut(), cancel)
        .await;
    paths::keep_state_out_of_git(&place.cwd);
    report(args.json, &writer, &result)
}

/// Compaction for a run (E-CTX-16, C22): threshold compaction as configured,
/// overflow recovery always; the pinned prompt and tool schemas are counted
/// when the log has no usage to measure the request by.
pub fn compaction_policy(
    config: &Config,
    assembled: &Assembled,
    tools: &ToolRegistry,
) -> CompactionPolicy {
    let auto = config.context.auto_compact;
    // Only the threshold check reads the pinned size; skip the work
    // otherwise, since every run starts here.
    let pinned_tokens = if auto {
        let schemas = serde_json::to_string(&tools.specs()).unwrap_or_default();
        etch_prompt::estimate::tokens(&assembled.prompt()) + etch_prompt::estimate::tokens(&schemas)
    } else {
        0
    };
    CompactionPolicy {
        auto,
        threshold_tokens: config.context.auto_compact_threshold_tokens,
        settings: compact_settings(config),
        pinned_tokens,
    }
}

/// What compaction keeps raw (`[context] keep_recent_tokens`, `[session]
/// keep_messages`), counted with the E-CTX-21 estimator.
pub fn compact_settings(config: &Config) -> etch_compact::Settings {
    etch_compact::Settings {
        keep_recent_tokens: config.context.keep_recent_tokens,
        keep_messages: usize::try_from(config.session.keep_messages).unwrap_or(usize::MAX),
        estimate: etch_prompt::estimate::tokens,
    }
}

/// The registry of active built-in tools: `--tools`, `--read-only`, or all
/// seven (C1); `bash` keeps credentials only when `[tools.bash]
/// inherit_credentials` says so (G18).
pub fn active_tools(args: &RunArgs, config: &Config) -> Result<ToolRegistry, Failure> {
    let names: Vec<&str> = match (&args.tools, args.read_only) {
        (Some(list), _) => list
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .collect(),
        (None, true) => builtin::READ_ONLY.to_vec(),
        (None, false) => builtin::ALL.to_vec(),
    };
    let options = BuiltinOptions {
        inherit_credentials: config.tools.bash_inherit_credentials,
    };
    builtin::registry(&names, &options).map_err(Failure::usage)
}

/// Cancels the run on the first SIGINT and exits on a second one.
///
/// The handler is installed before this returns (not when the task first
/// runs), so a Ctrl-C that arrives right after the prompt is appended still
/// takes the clean path instead of killing the process mid-write.
pub fn watch_sigint(cancel: CancellationToken) -> Result<tokio::task::JoinHandle<()>, Failure> {
    let mut interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| {
            Failure::new(
                exit::FAILED,
                anyhow::anyhow!("cannot watch for Ctrl-C: {e}"),
            )
        })?;
    Ok(tokio::spawn(async move {
        if interrupts.recv().await.is_some() {
            cancel.cancel();
            if interrupts.recv().await.is_some() {
                eprintln!("etch: interrupted twice; exiting without waiting for tools");
                std::process::exit(i32::from(exit::INTERRUPTED));
            }
        }
    }))
}

/// Prints the final answer or the error and picks the exit code.
fn report(
    json: bool,
    writer: &SessionWriter,
    result: &Result<etch_core::RunOutcome, RunError>,
) -> Result<(), Failure> {
    let path = writer.path().to_string_lossy().into_owned();
    let (code, text, error) = match result {
        Ok(outcome) => (exit::OK, outcome.final_text.as_str(), None),
        Err(RunError::Cancelled) => (exit::INTERRUPTED, "", Some(cancel_message(writer.path()))),
        Err(err) => (exit::FAILED, "", Some(err.to_string())),
    };
    if json {
        let line = ResultLine {
            kind: "result",
            ok: code == exit::OK,
            session_id: Some(writer.session_id()),
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
            eprintln!("etch: error: {error}");
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
                output::print_line(&crate::markdown::render(text));
            } else {
                output::print_line(text);
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
