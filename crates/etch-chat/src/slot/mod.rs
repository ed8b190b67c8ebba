//! The chat's hold on a session: none until the first prompt (so a chat
//! opened and closed leaves no empty session behind, and the index titles
//! the session after what the user asked), then a handle of the runtime's
//! session service ([`SessionHandle`]) driving it. Commands from the app
//! go through here, and so do the slash
//! commands that need the session: status, context, a new or another
//! session, model and thinking changes, export, copy, skills (`slash`,
//! `pickers`),
//! and what a picker chose, resuming and exporting (`sessions`).

use etch_protocol::{Command, CommandBody};
use etch_runtime::host::Sink;
use etch_runtime::service::{SessionHandle, SessionService, Spec};
use etch_runtime::{Context, Place, RunSettings, Session};

use crate::app::App;
use crate::render::blocks::Level;

mod pickers;
mod sessions;
mod slash;

/// Reads the configuration again (`/reload`): the place with the new
/// configuration and the warnings to show, or why it cannot be used.
pub type Reload = Box<dyn Fn() -> Result<(Place, Vec<String>), String> + Send>;

/// Drives a session another process holds (`etch chat --attach`): given
/// the chat's sink, the handle its outputs come through.
pub type Attach = Box<dyn FnOnce(Sink) -> Box<dyn SessionHandle> + Send>;

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
    /// A served session to drive instead of a local one, with where it
    /// is served (said when the chat refuses to leave it).
    pub attach: Option<(Attach, String)>,
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
    /// Serves the chat's sessions.
    service: SessionService,
    /// The session, once one is open.
    handle: Option<Box<dyn SessionHandle>>,
    /// Where the session's output goes.
    sink: Sink,
    /// Where background work reports ([`Late`]); without it, none is
    /// started.
    late: Option<tokio::sync::mpsc::UnboundedSender<Late>>,
    /// The server of the attached session, when the chat drives one: it
    /// stays on it (no `/new`, `/resume` here).
    attached: Option<String>,
}

impl Slot {
    /// A slot for `launch`, reporting to `sink`; an opened session is
    /// served at once. Call it within a Tokio runtime.
    pub fn new(mut launch: Launch, sink: Sink) -> Self {
        let mut service = SessionService::new();
        let mut attached = None;
        let handle = match launch.attach.take() {
            Some((attach, server)) => {
                attached = Some(server);
                Some(attach(sink.clone()))
            }
            None => launch
                .session
                .take()
                .map(|s| Box::new(service.serve(s, sink.clone())) as Box<dyn SessionHandle>),
        };
        Self {
            launch,
            service,
            handle,
            sink,
            late: None,
            attached,
        }
    }

    /// Lets slash commands finish work in the background, reporting to
    /// `late` (the terminal chat listens; line mode does not).
    pub fn report_late(&mut self, late: tokio::sync::mpsc::UnboundedSender<Late>) {
        self.late = Some(late);
    }

    /// Why the session cannot go on, when it failed beyond repair.
    pub fn broken(&self) -> Option<String> {
        self.handle.as_ref().and_then(|h| h.broken())
    }

    /// The place the chat runs in.
    pub fn place(&self) -> &Place {
        &self.launch.place
    }

    /// Sends `command` to the session, opening a session first when there is
    /// none (titled after the prompt).
    pub async fn command(&mut self, app: &mut App, command: Command) {
        // Sent prompts are remembered for Up in later chats; a failure to
        // write that file costs nothing now.
        if let (
            CommandBody::Prompt { message, .. }
            | CommandBody::Steer { message, .. }
            | CommandBody::FollowUp { message, .. },
            Some(home),
        ) = (&command.body, self.launch.place.home.as_deref())
        {
            let project = etch_runtime::paths::project_root(&self.launch.place.cwd);
            let _ = crate::history::append(home, &project, message);
        }
        if self.handle.is_none() {
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
            let spec = Spec {
                place: self.launch.place.clone(),
                settings: self.launch.settings.clone(),
                context: self.launch.context.clone(),
            };
            let created = self
                .service
                .create(spec, self.launch.selection.take(), title, self.sink.clone())
                .await;
            match created {
                Ok((handle, notices)) => {
                    for notice in notices {
                        // The provider header was shown at start.
                        if notice.level == etch_protocol::NoticeLevel::Warning {
                            app.notice(Level::Warning, notice.message);
                        }
                    }
                    self.handle = Some(Box::new(handle));
                }
                Err(err) => {
                    app.notice(Level::Error, format!("could not start a session: {err}"));
                    app.output_refused(&command);
                    return;
                }
            }
        }
        if let Some(handle) = &self.handle {
            handle.send(command);
        }
    }

    /// Whether the chat drives a served session, which it does not leave:
    /// says so for `what` when it does.
    fn stays_attached(&self, app: &mut App, what: &str) -> bool {
        let Some(server) = &self.attached else {
            return false;
        };
        app.notice(
            Level::Info,
            format!(
                "{what} is for a chat of its own: this one drives a session served by {server} \
                 (quit, then run etch chat, or etch chat --attach with another session)"
            ),
        );
        true
    }

    /// Leaves the current session (`/new`, `/resume`): what is still
    /// queued goes back to the editor, and the next session is created
    /// with the model and effort this one had reached.
    async fn leave(&mut self, app: &mut App) {
        if let Some(handle) = self.handle.take() {
            // Through the service, which lets go of its own hold too.
            let closed = self.service.close(&handle.id()).await.unwrap_or_default();
            if let Some(settings) = closed.settings {
                self.launch.settings = settings;
                self.launch.selection = None;
            }
            app.restore_unsent(closed.unsent);
        }
    }

    /// The context tools and prompt (built at start, or by `/reload`).
    fn context(&self) -> &Context {
        &self.launch.context
    }

    /// Sends a host command on the app's behalf.
    async fn send(&mut self, app: &mut App, body: CommandBody, what: &str) {
        if let crate::app::Effect::Host(command) = app.host_command(body, what) {
            self.command(app, command).await;
        }
    }

    /// Stops the active run or command, if any; returns the queued texts
    /// that will not run.
    pub async fn close(&mut self) -> Vec<String> {
        if let Some(handle) = self.handle.take()
            && self.attached.is_some()
        {
            // The served session goes on; only this chat lets go of it.
            return handle.close().await.unsent;
        }
        self.service
            .close_all()
            .await
            .into_iter()
            .flat_map(|closed| closed.unsent)
            .collect()
    }
}
