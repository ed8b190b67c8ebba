//! `etch` on a terminal with no prompt, `etch chat` and `etch resume
//! PREFIX` without a prompt: the interactive chat (E-CHAT-01). This
//! module opens what the chat needs (the context, the provider header, a
//! resumed session and its replay) and maps how the chat ended to an exit
//! code; the chat itself is `etch_chat`.

use std::io::IsTerminal;
use std::path::Path;

use etch_chat::app::{Footer, Start};
use etch_chat::render::blocks::{Block, Level};
use etch_chat::run::Ended;
use etch_chat::slot::Launch;
use etch_protocol::NoticeLevel;
use etch_runtime::{Context, Notice, Session, Target};

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::run::{Place, open_failure, settings};

/// Asks on the terminal, before the chat takes it over, whether to go on
/// against the unfamiliar endpoint `url` that `err` refused; only a typed
/// `y` or `yes` says yes.
fn confirm(err: &etch_runtime::OpenError, url: &str) -> bool {
    diag!("etch: {err}");
    eprint!(
        "Continue this session against {}? [y/N] ",
        etch_sanitize::visible(url)
    );
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Whether a run without a prompt should open the chat: stdin and stdout
/// are terminals.
pub fn wanted() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Runs the chat, on the session `prefix` names or a new one.
pub async fn run(place: &Place, prefix: Option<&str>, args: &RunArgs) -> Result<(), Failure> {
    /// Run options that make no sense for a chat.
    const NOT_FOR_CHAT: [&str; 3] = ["--json", "--skill", "--image"];
    if let Some(what) = args.given().into_iter().find(|f| NOT_FOR_CHAT.contains(f)) {
        return Err(Failure::usage(format!(
            "the chat does not take {what}: use -p \"…\" for a headless run (inside the chat, /skill:NAME loads a skill and a pasted image path attaches the image)"
        )));
    }
    if !wanted() {
        return Err(Failure::usage(
            "the chat needs a terminal on stdin and stdout; for a headless run give the prompt with -p \"…\" or pipe it in",
        ));
    }
    let mut settings = settings(args);
    let context = Context::build(place, &settings).map_err(open_failure)?;
    // The sandbox's probe (a helper process) runs while the session and
    // the provider are opened.
    let sandbox = {
        let sandbox = std::sync::Arc::clone(&context.sandbox);
        std::thread::spawn(move || sandbox.labels())
    };
    let plugins = std::sync::Arc::clone(&context.plugins);
    let mut notices: Vec<Notice> = context
        .assembled
        .diagnostics
        .iter()
        .map(|d| Notice::warning(d.clone()))
        .collect();
    let mut log = None;
    let mut chosen = None;
    let api;
    let auth;
    let (session, provider, model, header) = if let Some(prefix) = prefix {
        let (session, loaded) = loop {
            let opened = Session::open_loaded(
                place.clone(),
                settings.clone(),
                context.clone(),
                Target::Prefix(prefix),
                &mut |n: Notice| notices.push(n),
                &mut etch_core::NoopObserver,
            )
            .await;
            match opened {
                Ok(opened) => break opened,
                // On a terminal the user can say yes to a recorded
                // endpoint they never chose; saying so is naming it.
                Err(err) => match err.unfamiliar_endpoint().map(str::to_owned) {
                    Some(url) if settings.provider.base_url.is_none() && confirm(&err, &url) => {
                        settings.provider.base_url = Some(url);
                    }
                    _ => return Err(open_failure(err)),
                },
            }
        };
        let selection = session.selection();
        let client = &selection.client;
        let (provider, model) = (client.provider().to_owned(), client.model().to_owned());
        api = client.api().map(str::to_owned);
        auth = selection.auth.clone();
        // The header line is shown as the chat's header, not again as a
        // notice.
        let header = selection.notice.clone();
        if let Some(at) = notices
            .iter()
            .position(|n| Some(&n.message) == header.as_ref())
        {
            notices.remove(at);
        }
        log = Some(loaded);
        (Some(session), provider, model, header)
    } else {
        let selection = etch_runtime::select(&settings.provider, &place.config, None)
            .await
            .map_err(|e| open_failure(e.into()))?;
        notices.extend(selection.notes.iter().cloned().map(Notice::info));
        let client = &selection.client;
        api = client.api().map(str::to_owned);
        auth = selection.auth.clone();
        let picked = (
            None,
            client.provider().to_owned(),
            client.model().to_owned(),
            selection.notice.clone(),
        );
        // The first prompt's session uses this client: it is not built
        // twice.
        chosen = Some(selection);
        picked
    };
    let header = header.map_or_else(
        || {
            if provider == "echo" {
                "the offline echo model (it answers with your prompt)".to_owned()
            } else {
                format!("{provider} · {model}")
            }
        },
        |h| h.trim_start_matches("etch: ").to_owned(),
    );
    let auth = auth.unwrap_or_default();
    let cwd = home_relative(&place.cwd);
    let thinking = thinking(&settings, &place.config, &provider, api.as_deref());
    let (sandbox_label, sandbox_words) = sandbox.join().unwrap_or_else(|_| {
        (
            "sandbox ?".to_owned(),
            "unknown (its probe failed)".to_owned(),
        )
    });
    let mut start = Start {
        header: vec![
            format!("etch {} · {header}", env!("CARGO_PKG_VERSION")),
            format!("{cwd} · /help for commands · Ctrl-D to quit"),
            format!(
                "sandbox: {sandbox_words} · approvals: {}",
                place.config.approval.policy
            ),
        ],
        footer: Footer {
            sandbox: sandbox_label,
            provider,
            model,
            cwd,
            auth,
            budget: place.config.context.auto_compact_threshold_tokens,
            branch: etch_runtime::git::branch(&place.cwd),
            thinking,
            openai_api: api,
            prices: prices(&place.config),
            ..Footer::default()
        },
        skills: skill_names(&context),
        cwd: place.cwd.clone(),
        image_max_edge: place.config.tools.read_image_max_edge,
        // Up brings back prompts of earlier chats, this project's nearest.
        history: place.home.as_deref().map_or_else(Vec::new, |home| {
            etch_chat::history::load(home, &etch_runtime::paths::project_root(&place.cwd))
        }),
        ..Start::default()
    };
    for notice in notices {
        let level = match notice.level {
            NoticeLevel::Warning => Level::Warning,
            NoticeLevel::Info => Level::Info,
        };
        start.replay.push(Block::Notice(level, notice.message));
    }
    if let Some(session) = &session {
        start.session = Some(session.id().to_owned());
        start.session_file = Some(session.path().to_path_buf());
        if let Some(loaded) = &log {
            replay_into(&mut start, loaded);
        }
    }
    let base = place.clone();
    let reload = Box::new(move || {
        let (reloaded, warnings) = Place::load(&base.cwd, base.home.as_deref(), None)
            .map_err(|errors| format!("{} (see etch config check)", errors.join("; ")))?;
        // The session directory stays the one the chat started with.
        let place = Place {
            config: reloaded.config,
            ..base.clone()
        };
        Ok((place, warnings))
    });
    let launch = Launch {
        place: place.clone(),
        settings,
        context,
        session,
        reload,
        selection: chosen,
        attach: None,
    };
    drive(launch, start, &plugins).await
}

/// Runs the chat `launch` and `start` describe; how it ended as an exit.
async fn drive(
    launch: Launch,
    start: Start,
    plugins: &etch_plugins::PluginSet,
) -> Result<(), Failure> {
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    let outcome = if dumb {
        Box::pin(etch_chat::line::run(launch, start)).await
    } else {
        Box::pin(etch_chat::run::run(launch, start, color)).await
    };
    plugins.shutdown().await;
    let outcome = outcome.map_err(|e| Failure::new(exit::FAILED, anyhow::anyhow!(e)))?;
    match outcome.ended {
        Ended::Quit => Ok(()),
        Ended::Signal(_) | Ended::TerminalClosed => Err(Failure::silent(exit::INTERRUPTED)),
        Ended::Failed(why) => Err(Failure::new(exit::FAILED, anyhow::anyhow!(why))),
    }
}

/// `etch chat --attach URL`: the chat on a session `etch serve` holds,
/// through the remote handle; the server runs it, this chat draws it.
pub async fn attach(place: &Place, url: &str, args: &RunArgs) -> Result<(), Failure> {
    /// Run options that belong to the server, not to an attached chat.
    const NOT_FOR_ATTACH: [&str; 2] = ["--json", "--skill"];
    if let Some(what) = args
        .given()
        .into_iter()
        .find(|f| NOT_FOR_ATTACH.contains(f))
    {
        return Err(Failure::usage(format!(
            "etch chat --attach does not take {what}"
        )));
    }
    let token = std::env::var("ETCH_SERVE_TOKEN").ok();
    let target =
        etch_attach::Target::parse(url, token).map_err(|e| Failure::usage(e.to_string()))?;
    if !wanted() {
        return Err(Failure::usage(
            "the chat needs a terminal on stdin and stdout; to drive a served session from a \
             script, use its HTTP API (GET /openapi.json)",
        ));
    }
    let attached = etch_attach::attach(&target)
        .await
        .map_err(|e| Failure::new(exit::FAILED, anyhow::Error::new(e)))?;
    let settings = settings(args);
    // Skills and the context report are the local project's, looked at,
    // not run: the server runs the session's tools, hooks and plugins,
    // so none of them start here.
    let context = Context::inspect(place, &settings).map_err(open_failure)?;
    let plugins = std::sync::Arc::clone(&context.plugins);
    let cwd = home_relative(&place.cwd);
    let prices = prices(&place.config);
    let mut start = Start {
        header: vec![
            format!(
                "etch {} · attached to session {} at {}",
                env!("CARGO_PKG_VERSION"),
                attached.id,
                target.base
            ),
            format!(
                "{} · {} · /help for commands · Ctrl-D to let go (the session stays served)",
                attached.provider, attached.model
            ),
        ],
        footer: Footer {
            provider: attached.provider.clone(),
            model: attached.model.clone(),
            cwd,
            budget: place.config.context.auto_compact_threshold_tokens,
            branch: etch_runtime::git::branch(&place.cwd),
            thinking: attached.thinking.clone(),
            prices,
            ..Footer::default()
        },
        skills: skill_names(&context),
        cwd: place.cwd.clone(),
        image_max_edge: place.config.tools.read_image_max_edge,
        ..Start::default()
    };
    start.session = Some(attached.id.clone());
    start.session_file = Some(attached.file.clone());
    replay_into(&mut start, &attached.log);
    let base = place.clone();
    let reload = Box::new(move || Ok((base.clone(), Vec::new())));
    let server = format!("etch serve at {}", target.base);
    let launch = Launch {
        place: place.clone(),
        settings,
        context,
        session: None,
        reload,
        selection: None,
        attach: Some((
            Box::new(move |sink| {
                Box::new(attached.serve(sink)) as Box<dyn etch_runtime::service::SessionHandle>
            }),
            server,
        )),
    };
    drive(launch, start, &plugins).await
}

/// The session `loaded` told again at the start of the chat: its
/// blocks, its prompts for Up, its counters.
fn replay_into(start: &mut Start, loaded: &etch_session::LoadedSession) {
    let replay = etch_chat::replay::replay(
        &etch_runtime::projection::replay_in(
            loaded,
            etch_chat::replay::scope(&start.footer.prices),
        ),
        &start.footer.prices,
    );
    start.replay.extend(replay.blocks);
    start.history.extend(replay.history);
    start.footer.counters = replay.counters;
}

/// The names of the skills `context` offers (`/skill:NAME`).
fn skill_names(context: &Context) -> Vec<String> {
    context
        .assembled
        .skills
        .iter()
        .map(|s| s.name.clone())
        .collect()
}

/// The reasoning effort the footer names: one asked for (a flag, a
/// resumed session's), else the effort the Responses API is sent by
/// default; other APIs send none unless asked.
fn thinking(
    settings: &etch_runtime::RunSettings,
    config: &etch_config::Config,
    provider: &str,
    api: Option<&str>,
) -> Option<String> {
    settings.provider.reasoning_effort.clone().or_else(|| {
        (provider == "openai" && api == Some("responses"))
            .then(|| config.openai.reasoning_effort.clone())
    })
}

/// The configured `[[prices]]`, as the footer prices requests.
fn prices(config: &etch_config::Config) -> Vec<(String, etch_chat::app::Price)> {
    config
        .prices
        .iter()
        .map(|p| {
            let price = etch_chat::app::Price {
                input: p.input,
                output: p.output,
                cached_input: p.cached_input,
            };
            (p.model.clone(), price)
        })
        .collect()
}

/// `path` with the home directory written `~`.
fn home_relative(path: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty())
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return if rest.as_os_str().is_empty() {
            "~".to_owned()
        } else {
            format!("~/{}", rest.display())
        };
    }
    path.display().to_string()
}
