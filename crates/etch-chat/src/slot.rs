//! The chat's hold on a session: none until the first prompt (so a chat
//! opened and closed leaves no empty session behind, and the index titles
//! the session after what the user asked), then a [`Host`] serving it.
//! Host commands from the app go through here, and so do the slash
//! commands that need the session: status, context, a new or another
//! session, model and thinking changes, export, copy, skills.

use std::path::Path;
use std::time::Instant;

use etch_core::NoopObserver;
use etch_protocol::{Command, CommandBody, ThinkingLevel};
use etch_runtime::host::{Host, Sink};
use etch_runtime::report::{self, context as context_report};
use etch_runtime::{Context, Notice, Place, RunSettings, Session, Target};
use etch_session::load_session;

use crate::app::App;
use crate::app::picker::Pick;
use crate::render::blocks::{Block, Level};
use crate::slash::Slash;

/// Reads the configuration again (`/reload`): the place with the new
/// configuration and the warnings to show, or why it cannot be used.
pub type Reload = Box<dyn Fn() -> Result<(Place, Vec<String>), String> + Send>;

/// Everything the chat needs to open sessions.
pub struct Launch {
    /// Where it runs.
    pub place: Place,
    /// The run flags.
    pub settings: RunSettings,
    /// Tools and pinned prompt.
    pub context: Context,
    /// A session opened already (`etch resume`), if any.
    pub session: Option<Session>,
    /// Reads the configuration again.
    pub reload: Reload,
    /// The client chosen for `settings` at start, used by the first
    /// session (dropped when the settings change before it).
    pub selection: Option<etch_runtime::Selection>,
}

/// What a slash command's background work brings back later.
#[derive(Debug)]
pub enum Late {
    /// The models a provider's server offers, or why it could not say.
    Models {
        /// The provider asked.
        provider: String,
        /// The names, or the error's message.
        offered: Result<Vec<String>, String>,
    },
}

impl Late {
    /// Hands the result to the app.
    pub fn apply(self, app: &mut App) {
        match self {
            Self::Models { provider, offered } => app.offer_models(&provider, offered),
        }
    }
}

/// The session the chat drives, once there is one.
pub struct Slot {
    /// How to open sessions.
    launch: Launch,
    /// The host, once a session is open.
    host: Option<Host>,
    /// Where the host's output goes.
    sink: Sink,
    /// Where background work reports ([`Late`]); without it, none is
    /// started.
    late: Option<tokio::sync::mpsc::UnboundedSender<Late>>,
}

impl Slot {
    /// Asks the current client's server which models it offers, in the
    /// background: the `/model` picker is open at once and the list joins
    /// it when it comes (bounded in time by the provider).
    fn list_server_models(&self, app: &mut App) {
        let client = self.host.as_ref().map(Host::client).or_else(|| {
            self.launch
                .selection
                .as_ref()
                .map(|s| std::sync::Arc::clone(&s.client))
        });
        let (Some(client), Some(late)) = (client, self.late.clone()) else {
            return;
        };
        if client.provider() == "echo" {
            return;
        }
        app.set_picker_status(Pick::Model, "asking the server which models it offers…");
        tokio::spawn(async move {
            let offered = client.list_models().await.map_err(|e| e.to_string());
            let _ = late.send(Late::Models {
                provider: client.provider().to_owned(),
                offered,
            });
        });
    }

    /// A slot for `launch`, reporting to `sink`; an opened session gets
    /// its host at once.
    pub fn new(mut launch: Launch, sink: Sink) -> Self {
        let host = launch.session.take().map(|s| Host::new(s, sink.clone()));
        Self {
            launch,
            host,
            sink,
            late: None,
        }
    }

    /// Lets slash commands finish work in the background, reporting to
    /// `late` (the terminal chat listens; line mode does not).
    pub fn report_late(&mut self, late: tokio::sync::mpsc::UnboundedSender<Late>) {
        self.late = Some(late);
    }

    /// The host, when a session is open.
    pub fn host(&mut self) -> Option<&mut Host> {
        self.host.as_mut()
    }

    /// The place the chat runs in.
    pub fn place(&self) -> &Place {
        &self.launch.place
    }

    /// Sends `command` to the host, opening a session first when there is
    /// none (titled after the prompt).
    pub async fn command(&mut self, app: &mut App, command: Command) {
        // Sent prompts are remembered for Up in later chats; a failure to
        // write that file costs nothing now.
        if let (
            CommandBody::Prompt { message, .. }
            | CommandBody::Steer { message }
            | CommandBody::FollowUp { message },
            Some(home),
        ) = (&command.body, self.launch.place.home.as_deref())
        {
            let project = etch_runtime::paths::project_root(&self.launch.place.cwd);
            let _ = crate::history::append(home, &project, message);
        }
        if self.host.is_none() {
            let title = match &command.body {
                CommandBody::Prompt { message, .. } => message.clone(),
                CommandBody::Bash { command, .. } => format!("!{command}"),
                // Before the first prompt, a model or effort change is a
                // setting for the session to come.
                CommandBody::SetModel { provider, model_id } => {
                    let current = app.footer.provider.clone();
                    self.launch
                        .settings
                        .provider
                        .switch_model(provider, model_id, &current);
                    self.launch.selection = None;
                    app.set_model(provider, model_id);
                    app.output_refused(&command);
                    app.notice(Level::Info, format!("model: {model_id} ({provider}; the session starts with your next prompt)"));
                    return;
                }
                CommandBody::SetThinkingLevel { level } => {
                    let name = serde_json::to_value(level)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned));
                    self.launch
                        .settings
                        .provider
                        .reasoning_effort
                        .clone_from(&name);
                    self.launch.selection = None;
                    app.footer.thinking.clone_from(&name);
                    app.output_refused(&command);
                    app.notice(
                        Level::Info,
                        format!(
                            "thinking: {} (the session starts with your next prompt)",
                            name.unwrap_or_default()
                        ),
                    );
                    return;
                }
                _ => {
                    app.output_refused(&command);
                    if !matches!(command.body, CommandBody::Abort) {
                        app.notice(
                            Level::Info,
                            "there is no session yet: it starts with your first prompt",
                        );
                    }
                    return;
                }
            };
            let mut notices = Vec::new();
            let (place, settings, context) = (
                self.launch.place.clone(),
                self.launch.settings.clone(),
                self.launch.context.clone(),
            );
            let created = match self.launch.selection.take() {
                Some(selection) => {
                    Session::create_selected(place, settings, context, selection, title).await
                }
                None => {
                    Session::create(place, settings, context, title, &mut |n: Notice| {
                        notices.push(n);
                    })
                    .await
                }
            };
            for notice in notices {
                // The provider header was shown at start.
                if notice.level == etch_protocol::NoticeLevel::Warning {
                    app.notice(Level::Warning, notice.message);
                }
            }
            match created {
                Ok((session, _)) => self.host = Some(Host::new(session, self.sink.clone())),
                Err(err) => {
                    app.notice(Level::Error, format!("could not start a session: {err}"));
                    app.output_refused(&command);
                    return;
                }
            }
        }
        if let Some(host) = &mut self.host {
            host.handle(command).await;
        }
    }

    /// Carries out a slash command that needs the session.
    pub async fn slash(&mut self, app: &mut App, command: Slash, now: Instant) {
        match command {
            Slash::Status => match app.session_file() {
                Some(path) => match load_session(path) {
                    Ok(loaded) => {
                        let stats = etch_session::session_stats(&loaded);
                        app.push(Block::Output(
                            report::status_text(&stats, path).trim_end().to_owned(),
                        ));
                    }
                    Err(err) => app.notice(
                        Level::Error,
                        format!("cannot read {}: {err}", path.display()),
                    ),
                },
                None => app.notice(
                    Level::Info,
                    "no session yet: it starts with your first prompt",
                ),
            },
            Slash::Context | Slash::ContextDump(_) => self.context_report(app, &command),
            Slash::New => {
                self.leave(app).await;
                app.new_session();
            }
            Slash::Resume(Some(prefix)) => self.resume(app, Target::Prefix(&prefix)).await,
            Slash::Resume(None) => {
                let store = etch_session::SessionStore::new(&self.launch.place.session_dir);
                let choices = crate::choices::sessions(&store, app.session());
                if choices.is_empty() {
                    app.notice(Level::Info, "no sessions yet");
                } else {
                    app.open_picker(
                        Pick::Resume,
                        "resume which session? (type to filter, Enter to open, Esc to close)",
                        choices,
                        0,
                    );
                }
            }
            Slash::Model(Some(spec)) => {
                let (provider, model) = match spec.split_once('/') {
                    Some((p, m)) if etch_runtime::PROVIDERS.contains(&p) => {
                        (p.to_owned(), m.to_owned())
                    }
                    _ => (app.footer.provider.clone(), spec.clone()),
                };
                self.send(
                    app,
                    CommandBody::SetModel {
                        provider,
                        model_id: model,
                    },
                    "",
                )
                .await;
            }
            Slash::Model(None) => {
                let store = etch_session::SessionStore::new(&self.launch.place.session_dir);
                let config = &self.launch.place.config.provider;
                let configured = config.name.as_deref().zip(config.model.as_deref());
                let choices = crate::choices::models(
                    &store,
                    (&app.footer.provider, &app.footer.model),
                    configured,
                );
                app.open_picker(
                    Pick::Model,
                    "switch to which model? (type a name to filter or to use it; Enter)",
                    choices,
                    0,
                );
                self.list_server_models(app);
            }
            Slash::Thinking(Some(level)) => {
                match serde_json::from_value::<ThinkingLevel>(serde_json::Value::String(
                    level.clone(),
                )) {
                    Ok(level) => {
                        self.send(app, CommandBody::SetThinkingLevel { level }, "")
                            .await;
                    }
                    Err(_) => app.notice(
                        Level::Warning,
                        format!(
                            "unknown thinking level \"{level}\": use one of {}",
                            etch_config::REASONING_EFFORTS.join(", ")
                        ),
                    ),
                }
            }
            Slash::Thinking(None) => {
                let settings = self
                    .host
                    .as_ref()
                    .and_then(Host::session)
                    .map_or(&self.launch.settings, Session::settings);
                let level = settings
                    .provider
                    .reasoning_effort
                    .clone()
                    .unwrap_or_else(|| "the provider's default".into());
                // `off` first: it is the one to reach for.
                let mut levels = vec!["off"];
                levels.extend(
                    etch_config::REASONING_EFFORTS
                        .iter()
                        .filter(|l| **l != "off"),
                );
                app.push(Block::Output(format!(
                    "thinking: {level}\nchange with /thinking {}",
                    levels.join("|")
                )));
            }
            Slash::Export { format, path } => self.export(app, &format, path.as_deref()).await,
            Slash::Copy => app.copy_last(&self.launch.place),
            Slash::Skill { name, text } => match self.context().expand_skill(&name, &text) {
                Ok(expanded) => {
                    let typed = format!("/skill:{name} {text}").trim_end().to_owned();
                    app.show_prompt_as(&expanded, typed);
                    let effect = app.send_prompt(expanded, now);
                    if let crate::app::Effect::Host(command) = effect {
                        Box::pin(self.command(app, command)).await;
                    }
                }
                Err(err) => app.notice(Level::Warning, err.to_string()),
            },
            Slash::Reload => self.reload(app),
            Slash::Fork | Slash::Tree => {
                let Some(loaded) = Self::loaded(app) else {
                    return;
                };
                if command == Slash::Fork {
                    let choices = crate::choices::prompts(&loaded);
                    if choices.is_empty() {
                        app.notice(Level::Info, "there is no prompt to fork from yet");
                    } else {
                        app.open_picker(
                            Pick::Fork,
                            "fork a new session before which prompt? (Enter; Esc to close)",
                            choices,
                            0,
                        );
                    }
                } else {
                    let (choices, selected) = crate::choices::tree(&loaded);
                    if choices.is_empty() {
                        app.notice(Level::Info, "the session has no messages yet");
                    } else {
                        app.open_picker(
                            Pick::Tree,
                            "move to which point? (● active branch; Enter: go there, Tab: go and summarize the branch left; Esc)",
                            choices,
                            selected,
                        );
                    }
                }
            }
            Slash::Name(title) => match app.session().map(str::to_owned) {
                Some(id) => {
                    let store = etch_session::SessionStore::new(&self.launch.place.session_dir);
                    match store.rename(&id, &title) {
                        Ok(row) => app.notice(
                            Level::Info,
                            format!("session {id} is now named \"{}\"", row.title),
                        ),
                        Err(err) => {
                            app.notice(
                                Level::Error,
                                format!("could not rename the session: {err}"),
                            );
                        }
                    }
                }
                None => app.notice(
                    Level::Info,
                    "no session yet: it starts with your first prompt",
                ),
            },
            Slash::Help
            | Slash::Hotkeys
            | Slash::Quit
            | Slash::Compact(_)
            | Slash::Unknown(_)
            | Slash::Usage(_) => {}
        }
    }

    /// Leaves the current session (`/new`, `/resume`): what is still
    /// queued goes back to the editor, and the next session is created
    /// with the model and effort this one had reached.
    async fn leave(&mut self, app: &mut App) {
        if let Some(mut host) = self.host.take() {
            let unsent = host.abort_and_settle().await;
            if let Some(session) = host.session() {
                self.launch.settings = session.settings().clone();
                self.launch.selection = None;
            }
            app.restore_unsent(unsent);
        }
    }

    /// `/reload`: configuration, instruction files and skills read again;
    /// the next run uses them (the model stays: `/model` changes it).
    fn reload(&mut self, app: &mut App) {
        let (place, warnings) = match (self.launch.reload)() {
            Ok(read) => read,
            Err(why) => {
                app.notice(
                    Level::Error,
                    format!("the configuration was not reloaded: {why}"),
                );
                return;
            }
        };
        let context = match Context::build(&place, &self.launch.settings) {
            Ok(context) => context,
            Err(err) => {
                app.notice(Level::Error, format!("the context was not reloaded: {err}"));
                return;
            }
        };
        for warning in warnings.iter().chain(&context.assembled.diagnostics) {
            app.notice(Level::Warning, warning.clone());
        }
        let skills: Vec<String> = context
            .assembled
            .skills
            .iter()
            .map(|s| s.name.clone())
            .collect();
        let summary = format!(
            "reloaded: {} instruction file(s), {} skill(s), {} tool(s)",
            context.assembled.instruction_files.len(),
            skills.len(),
            context.tools.specs().len()
        );
        if let Some(session) = self.host.as_mut().and_then(Host::session_mut) {
            session.reload(place.clone(), context.clone());
        }
        self.launch.place = place;
        self.launch.context = context;
        self.launch.selection = None;
        app.set_skills(skills);
        app.notice(Level::Info, summary);
    }

    /// A picker's choice.
    pub async fn picked(
        &mut self,
        app: &mut App,
        pick: Pick,
        value: String,
        alternate: bool,
        now: Instant,
    ) {
        match pick {
            Pick::Resume => self.resume(app, Target::Path(Path::new(&value))).await,
            Pick::Model => Box::pin(self.slash(app, Slash::Model(Some(value)), now)).await,
            // The picker sends the stop itself (a host command).
            Pick::Subagent => {}
            Pick::Fork => {
                let effect = app.fork(value);
                if let crate::app::Effect::Host(command) = effect {
                    self.command(app, command).await;
                }
            }
            Pick::Tree => {
                let Some(loaded) = Self::loaded(app) else {
                    return;
                };
                // A prompt is gone back to from before it, with its text in
                // the editor to change and send again (a new branch).
                let Some(event) = loaded.events.iter().find(|e| e.id == value) else {
                    app.notice(Level::Warning, "that point is no longer in the session");
                    return;
                };
                let mut target = value.clone();
                if event.kind == etch_session::types::MESSAGE_USER
                    && let Some(parent) = &event.parent_id
                {
                    target.clone_from(parent);
                    if let Ok(data) = event.parse_data::<etch_session::event::UserData>() {
                        app.set_draft(&etch_model::content::joined_text(&data.content));
                    }
                }
                let effect = app.navigate(target, alternate, now);
                if let crate::app::Effect::Host(command) = effect {
                    self.command(app, command).await;
                }
            }
        }
    }

    /// The session's log, loaded, or a notice saying why not.
    fn loaded(app: &mut App) -> Option<etch_session::LoadedSession> {
        let Some(path) = app.session_file().map(Path::to_path_buf) else {
            app.notice(
                Level::Info,
                "no session yet: it starts with your first prompt",
            );
            return None;
        };
        match load_session(&path) {
            Ok(loaded) => Some(loaded),
            Err(err) => {
                app.notice(
                    Level::Error,
                    format!("cannot read {}: {err}", path.display()),
                );
                None
            }
        }
    }

    /// The context tools and prompt: the open session's, else the one
    /// built at start.
    fn context(&self) -> &Context {
        self.host
            .as_ref()
            .and_then(Host::session)
            .map_or(&self.launch.context, Session::context)
    }

    /// Sends a host command on the app's behalf.
    async fn send(&mut self, app: &mut App, body: CommandBody, what: &str) {
        if let crate::app::Effect::Host(command) = app.host_command(body, what) {
            self.command(app, command).await;
        }
    }

    /// `/context` and `/context dump [path]`.
    fn context_report(&self, app: &mut App, command: &Slash) {
        let loaded = match app.session_file() {
            Some(path) => match load_session(path) {
                Ok(loaded) => Some(loaded),
                Err(err) => {
                    app.notice(
                        Level::Error,
                        format!("cannot read {}: {err}", path.display()),
                    );
                    return;
                }
            },
            None => None,
        };
        let context = self.context();
        let place = &self.launch.place;
        if let Slash::ContextDump(path) = command {
            let text = context_report::dump(loaded.as_ref(), context);
            let target =
                context_report::dump_path(place, app.session(), path.as_deref().map(Path::new));
            match target.and_then(|t| {
                std::fs::write(&t, text)
                    .map(|()| t.clone())
                    .map_err(|e| format!("cannot write {}: {e}", t.display()))
            }) {
                Ok(target) => app.notice(
                    Level::Info,
                    format!("wrote context dump to {}", target.display()),
                ),
                Err(err) => app.notice(Level::Error, err),
            }
        } else {
            let report = context_report::measure(place, loaded.as_ref(), context);
            app.push(Block::Output(
                context_report::render(&report).trim_end().to_owned(),
            ));
        }
    }

    /// `/resume`: the session `target` names replaces the current one.
    async fn resume(&mut self, app: &mut App, target: Target<'_>) {
        let wanted = match target {
            Target::Path(path) => Some(path.to_path_buf()),
            Target::Prefix(prefix) => {
                etch_session::SessionStore::new(&self.launch.place.session_dir)
                    .resolve(prefix)
                    .ok()
                    .map(|row| std::path::PathBuf::from(row.path))
            }
        };
        let Some(wanted) = wanted.filter(|w| w.is_file()) else {
            app.notice(Level::Warning, "no such session: see /resume for the list");
            return;
        };
        if let Some(current) = app.session_file()
            && paths_match(&wanted, current)
        {
            app.notice(Level::Info, "that is the session already open");
            return;
        }
        let previous = app.session_file().map(Path::to_path_buf);
        // The open session's lock must go before another can be opened
        // (a session is held by one etch at a time).
        self.leave(app).await;
        let mut notices = Vec::new();
        let opened = Session::open_loaded(
            self.launch.place.clone(),
            self.launch.settings.clone(),
            self.launch.context.clone(),
            target,
            &mut |n: Notice| notices.push(n),
            &mut NoopObserver,
        )
        .await;
        match opened {
            Ok((session, loaded)) => {
                let replay = Some(crate::replay::replay(&loaded, &app.footer.prices));
                app.resumed(session.id(), session.path(), replay);
                let client = &session.selection().client;
                app.set_model(client.provider(), client.model());
                self.host = Some(Host::new(session, self.sink.clone()));
            }
            Err(err) => {
                app.notice(Level::Warning, err.to_string());
                // Back to where the user was, when there was a session.
                match previous {
                    Some(previous) if previous != wanted => {
                        Box::pin(self.resume(app, Target::Path(&previous))).await;
                    }
                    _ => app.new_session(),
                }
            }
        }
        for notice in notices {
            if notice.level == etch_protocol::NoticeLevel::Warning {
                app.notice(Level::Warning, notice.message);
            }
        }
    }

    /// `/export [html|md|jsonl] [path]`.
    async fn export(&mut self, app: &mut App, format: &str, path: Option<&str>) {
        let (Some(id), Some(file)) = (
            app.session().map(str::to_owned),
            app.session_file().map(Path::to_path_buf),
        ) else {
            app.notice(
                Level::Info,
                "no session yet: it starts with your first prompt",
            );
            return;
        };
        let target = path.map_or_else(
            || self.launch.place.cwd.join(format!("etch-{id}.{format}")),
            |p| self.launch.place.cwd.join(p),
        );
        let written = match format {
            "jsonl" => std::fs::copy(&file, &target)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            "md" => {
                self.send(
                    app,
                    CommandBody::Export {
                        output_path: Some(target.to_string_lossy().into_owned()),
                        format: Some("md".to_owned()),
                    },
                    "wrote the transcript to",
                )
                .await;
                return;
            }
            _ => match load_session(&file) {
                Ok(loaded) => {
                    std::fs::write(&target, crate::export::html(&loaded)).map_err(|e| e.to_string())
                }
                Err(err) => Err(err.to_string()),
            },
        };
        match written {
            Ok(()) => app.notice(
                Level::Info,
                format!("wrote the transcript to {}", target.display()),
            ),
            Err(err) => app.notice(
                Level::Error,
                format!("cannot write {}: {err}", target.display()),
            ),
        }
    }

    /// Stops the active run or command, if any; returns the queued texts
    /// that will not run.
    pub async fn close(&mut self) -> Vec<String> {
        match &mut self.host {
            Some(host) => host.abort_and_settle().await,
            None => Vec::new(),
        }
    }
}

/// Whether two paths name the same file.
fn paths_match(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
