//! The session handle every front end drives: a session log open for
//! appending, the client it talks to, the tools and pinned prompt it
//! offers, and the projected history, with the operations on them (run a
//! prompt, switch model or reasoning effort, move the leaf, fork, compact,
//! run a shell command into the context).
//!
//! Opening resolves everything once from [`Place`] and [`RunSettings`];
//! what the user should know on the way (loader warnings, the provider
//! header, a switched endpoint) goes to a `notify` callback as [`Notice`]
//! values, and what is appended goes to the observer, so the command line
//! prints it, `etch rpc` sends it as events and the chat draws it. This
//! module never prints and must not know which front end drives it; the
//! queues and command handling of a long-lived session are in `host`.
//! Moving through the tree (navigate, fork, fresh) is `tree`; compaction,
//! shell commands and appended messages are `commands`.

use std::path::Path;
use std::sync::Arc;

use etch_core::{
    Agent, AgentConfig, GuardSettings, Observer, RunError, RunOutcome, close_dangling_calls,
};
use etch_model::{Message, RequestOptions};
use etch_session::store::NewSession;
use etch_session::writer::Appended;
use etch_session::{
    LoadedSession, SessionError, SessionStats, SessionStore, SessionWriter, load_session,
    project_messages, session_stats, types,
};
use tokio_util::sync::CancellationToken;

use crate::context::Context;
use crate::endpoints::KnownEndpoints;
use crate::error::{Notice, OpenError};
use crate::hooks::SessionHooks;
use crate::paths;
use crate::provider::{self, Selection};
use crate::settings::{Place, RunSettings};

mod commands;
mod processes;
pub(crate) use processes::exited_data;
mod tree;

pub use commands::CompactFailure;
pub use tree::{NavigateError, Navigated};

/// Where a subagent's child session comes from.
#[derive(Debug, Clone, Copy)]
pub struct ChildOf<'a> {
    /// The parent session's log as it is now.
    pub parent: &'a LoadedSession,
    /// The parent's assistant event holding the `task` call.
    pub before: &'a str,
    /// The call and profile.
    pub lineage: &'a etch_session::Lineage,
}

/// Which existing session to open.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// An id prefix, resolved through the session index (G23: unknown or
    /// ambiguous prefixes are usage errors).
    Prefix(&'a str),
    /// A session file.
    Path(&'a Path),
}

/// An open session.
pub struct Session {
    /// Where it runs.
    place: Place,
    /// What the front end asked for (the provider flags follow
    /// `set_model` and `set_thinking_level`).
    settings: RunSettings,
    /// Tools and pinned prompt.
    context: Context,
    /// The model client.
    selection: Selection,
    /// The session file, locked while open.
    writer: SessionWriter,
    /// The projected history of the active branch.
    history: Vec<Message>,
    /// Lines appended while no observer was listening (the `SessionStart`
    /// hooks of a new session), handed to the next run's observer.
    unsent: Vec<String>,
    /// Where a front end offers another client during a run.
    switch: Arc<etch_core::ClientSwitch>,
}

impl Session {
    /// Starts a new session titled after `title` (the first prompt).
    /// Returns it with its `session.started` line.
    pub async fn create(
        place: Place,
        settings: RunSettings,
        context: Context,
        title: String,
        notify: &mut (dyn FnMut(Notice) + Send),
    ) -> Result<(Self, Appended), OpenError> {
        let selection = provider::select(&settings.provider, &place.config, None).await?;
        announce(&selection, &context.sandbox, notify);
        Self::create_selected(place, settings, context, selection, title).await
    }

    /// [`Self::create`] with the client already chosen (and announced)
    /// for `settings`: a front end that showed the provider before the
    /// first prompt does not build the client twice.
    pub async fn create_selected(
        place: Place,
        settings: RunSettings,
        context: Context,
        selection: Selection,
        title: String,
    ) -> Result<(Self, Appended), OpenError> {
        let store = SessionStore::new(&place.session_dir);
        let (writer, first) = store.create(&new_session(&place, &selection, title))?;
        remember_endpoint(&place, &selection);
        let mut session = Self {
            place,
            settings,
            context,
            selection,
            writer,
            history: Vec::new(),
            unsent: Vec::new(),
            switch: Arc::new(etch_core::ClientSwitch::new()),
        };
        session.started("new", None).await?;
        Ok((session, first))
    }

    /// Tells `tap` of every line this session (and a session it turns
    /// into by `fork` or `new_session`) appends from now on.
    pub fn set_tap(&mut self, tap: Option<etch_session::Tap>) {
        self.writer.set_tap(tap);
    }

    /// Creates the child session of a subagent `of` a parent file and its
    /// assistant event holding the `task` call: the child starts with the parent's model-visible
    /// history before that event (E-SUB-06, E-SUB-07) and is run like any
    /// session. A child runs no `SessionStart` hooks (it is part of the
    /// parent's turn); its tool calls run the configured tool hooks like
    /// any other.
    pub fn create_child(
        place: Place,
        settings: RunSettings,
        context: Context,
        selection: Selection,
        of: &ChildOf<'_>,
        title: String,
    ) -> Result<Self, OpenError> {
        let store = SessionStore::new(&place.session_dir);
        let (writer, _) = store.create_child(
            of.parent,
            of.before,
            &new_session(&place, &selection, title),
            of.lineage,
        )?;
        remember_endpoint(&place, &selection);
        let mut child = Self {
            place,
            settings,
            context,
            selection,
            writer,
            history: Vec::new(),
            unsent: Vec::new(),
            switch: Arc::new(etch_core::ClientSwitch::new()),
        };
        child.reproject()?;
        Ok(child)
    }

    /// Runs the `SessionStart` hooks for a session just created (`new`)
    /// or opened (`resume`); their records are appended (each line goes
    /// to `on_line`, or with none to the next run's observer), and a
    /// failure fails the opening before any model request (G6).
    async fn started(
        &mut self,
        reason: &str,
        on_line: Option<&mut (dyn FnMut(&str) + Send)>,
    ) -> Result<(), OpenError> {
        let mut unsent = Vec::new();
        let mut keep = |line: &str| unsent.push(line.to_owned());
        let on_line: &mut (dyn FnMut(&str) + Send) = match on_line {
            Some(on_line) => on_line,
            None => &mut keep,
        };
        let started = self.run_session_start(reason, on_line).await;
        self.unsent.extend(unsent);
        started
    }

    /// [`Self::started`] proper.
    async fn run_session_start(
        &mut self,
        reason: &str,
        on_line: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), OpenError> {
        if !self.context.hooks.has(etch_hooks::HookEvent::SessionStart) {
            return Ok(());
        }
        let answer = self.session_hooks().session_start(reason).await;
        for data in &answer.records {
            let appended = self.writer.append(types::HOOK_RUN, data)?;
            on_line(&appended.line);
        }
        match answer.verdict {
            etch_core::Verdict::Go(contexts) => {
                // A Claude Code hook's additionalContext: durable, and seen
                // by the model with the next prompt.
                for context in contexts {
                    let appended = self.append_user(context)?;
                    on_line(&appended.line);
                }
                Ok(())
            }
            etch_core::Verdict::Blocked(_) => Err(OpenError::Failed(
                "a SessionStart hook cannot block; it prepares or audits the session".to_owned(),
            )),
            etch_core::Verdict::Failed(detail) => Err(OpenError::Failed(format!(
                "SessionStart hook failed: {detail}; the session was not run ({})",
                self.writer.path().display()
            ))),
        }
    }

    /// Runs the `SubagentStart` or `SubagentStop` hooks of this child
    /// session, appending their records to it; `Err` says why a start
    /// was refused (blocked or failed). A stop never changes the result.
    pub async fn subagent_hooks(
        &mut self,
        run: crate::hooks::SubagentRun<'_>,
    ) -> Result<(), String> {
        let event = if run.end.is_some() {
            etch_hooks::HookEvent::SubagentStop
        } else {
            etch_hooks::HookEvent::SubagentStart
        };
        if !self.context.hooks.has(event) {
            return Ok(());
        }
        let answer = self.session_hooks().subagent(run).await;
        for data in &answer.records {
            self.writer
                .append(types::HOOK_RUN, data)
                .map_err(|e| e.to_string())?;
        }
        match (answer.verdict, run.end) {
            (_, Some(_)) | (etch_core::Verdict::Go(()), None) => Ok(()),
            (etch_core::Verdict::Blocked(reason), None) => Err(format!(
                "a SubagentStart hook blocked it: {}",
                reason.unwrap_or_else(|| "no reason given".to_owned())
            )),
            (etch_core::Verdict::Failed(detail), None) => {
                Err(format!("SubagentStart hook failed: {detail}"))
            }
        }
    }

    /// The hooks of this session, ready to run.
    fn session_hooks(&self) -> SessionHooks {
        SessionHooks::new(
            self.context.hooks.clone(),
            &self.place.cwd,
            self.writer.session_id(),
            self.writer.path(),
        )
    }

    /// Opens an existing session for appending: its log is loaded (what
    /// the loader skipped goes to `notify`), tool calls a crash left
    /// without results are closed, a provider, model, endpoint or effort
    /// other than the branch's is recorded (`model.change`,
    /// `thinking_level.change`), and the history is projected. Appended
    /// lines go to `observer`. A session another etch holds is an error.
    pub async fn open(
        place: Place,
        settings: RunSettings,
        context: Context,
        target: Target<'_>,
        notify: &mut (dyn FnMut(Notice) + Send),
        observer: &mut dyn Observer,
    ) -> Result<Self, OpenError> {
        Self::open_loaded(place, settings, context, target, notify, observer)
            .await
            .map(|(session, _)| session)
    }

    /// [`Self::open`], also returning the log as it was loaded (before
    /// what opening appended), so a front end that draws the transcript
    /// does not read a large file twice.
    pub async fn open_loaded(
        place: Place,
        settings: RunSettings,
        context: Context,
        target: Target<'_>,
        notify: &mut (dyn FnMut(Notice) + Send),
        observer: &mut dyn Observer,
    ) -> Result<(Self, LoadedSession), OpenError> {
        let path = match target {
            Target::Prefix(prefix) => {
                let store = SessionStore::new(&place.session_dir);
                let row = store.resolve(prefix)?;
                store.session_file(&row)
            }
            Target::Path(path) => path.to_path_buf(),
        };
        let loaded = load_session(&path)?;
        // A subagent's child comes back with its profile's tools and
        // instructions, not as an ordinary session (E-SUB-09).
        let (mut place, mut settings, mut context) = (place, settings, context);
        if let Some(name) = &loaded.header.subagent_profile {
            crate::subagent::resume_as_child(&mut place, &mut settings, &mut context, name)
                .map_err(OpenError::Failed)?;
        }
        let mut writer = SessionWriter::open(
            &path,
            loaded.session_id(),
            loaded.leaf().map(str::to_string),
        )?;
        warn_skipped(&loaded, notify);
        let known = KnownEndpoints::load(place.home.as_deref());
        let selection =
            provider::select_for_session(&settings.provider, &place.config, &loaded, &known)
                .await?;
        remember_endpoint(&place, &selection);
        announce(&selection, &context.sandbox, notify);
        close_dangling_calls(&loaded, &mut writer, observer)
            .map_err(|e| OpenError::Failed(e.to_string()))?;
        record_changes(&loaded, &selection, &settings, &mut writer, observer)?;
        let projection = project_messages(&loaded);
        for warning in &projection.warnings {
            notify(Notice::warning(format!("{}: {warning}", path.display())));
        }
        let mut session = Self {
            place,
            settings,
            context,
            selection,
            writer,
            history: projection.messages,
            unsent: Vec::new(),
            switch: Arc::new(etch_core::ClientSwitch::new()),
        };
        // Background processes of an earlier life died with it.
        processes::mark_lost(&loaded, &session.process_table());
        session
            .started(
                "resume",
                Some(&mut |line: &str| observer.durable_line(line)),
            )
            .await?;
        Ok((session, loaded))
    }

    /// Runs one prompt to completion in this session.
    pub async fn run(
        &mut self,
        prompt: impl Into<etch_core::Prompt>,
        observer: &mut dyn Observer,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        for line in self.unsent.drain(..) {
            observer.durable_line(&line);
        }
        let agent = self.agent();
        agent
            .run(
                &mut self.writer,
                &mut self.history,
                prompt,
                observer,
                cancel,
            )
            .await
    }

    /// The agent for the next run: this session's client, tools, pinned
    /// prompt, round bound and compaction policy.
    fn agent(&self) -> Agent {
        let config = &self.place.config;
        let session_id = self.writer.session_id().to_string();
        let (system, project) = self.context.assembled.split();
        let agent = Agent::new(
            Arc::clone(&self.selection.client),
            self.context.tools.clone(),
            AgentConfig {
                max_tool_rounds: self.settings.max_tool_rounds(config),
                system,
                cwd: self.place.cwd.clone(),
                temp_dir: paths::session_temp_dir(&self.place.cwd, &session_id),
                options: RequestOptions {
                    session_id,
                    no_vision: !config.provider.vision,
                    ..RequestOptions::default()
                },
                compaction: Some(self.context.compaction_policy(config)),
                guard: GuardSettings {
                    max_identical_calls: config.session.max_identical_calls,
                    tool_error_note_after: config.session.tool_error_note_after,
                    max_tool_errors: config.session.max_tool_errors,
                },
                grounding: config
                    .session
                    .grounding
                    .unwrap_or(self.context.tools.profile() == etch_tool::Profile::Compact),
                required_reply_tokens: crate::context::local_endpoint(&self.settings, config)
                    .then_some(crate::context::REQUIRED_REPLY_TOKENS),
            },
        );
        let inbox = processes::ProcessInbox::new(
            Arc::clone(&self.context.processes),
            self.writer.session_id(),
            config.process.wake_on_output,
        );
        let agent = agent
            .with_switch(Arc::clone(&self.switch))
            .with_redactor(self.redactor())
            .with_project_context(project)
            .with_inbox(Arc::new(inbox));
        if self.context.hooks.is_empty() {
            agent
        } else {
            agent.with_intercept(Arc::new(self.session_hooks()))
        }
    }

    /// The secrets no tool result of this session may carry (E-TOOL-22).
    fn redactor(&self) -> etch_core::Redactor {
        crate::context::redactor(
            crate::context::home_dir().as_deref(),
            self.settings.provider.api_key.as_deref(),
        )
    }

    /// Takes a newly read configuration and context (the chat's
    /// `/reload`: config, AGENTS.md, skills); the next run uses them. The
    /// client stays: a model change goes through [`Self::reconfigure`].
    pub fn reload(&mut self, place: Place, context: Context) {
        self.place = place;
        self.context = context;
    }

    /// Makes sure the project's `.etch/` keeps etch's state out of git
    /// (a run or a tool may have created it); a failure is a warning.
    pub fn tidy(&self) -> Option<Notice> {
        paths::keep_state_out_of_git(&self.place.cwd)
            .err()
            .map(|e| Notice::warning(e.to_string()))
    }

    /// Switches later requests to `flags` (a model, a reasoning effort),
    /// recording the change in the log; the old client stays when the new
    /// one cannot be built. Notes about the switch go to `notify`.
    pub async fn reconfigure(
        &mut self,
        flags: provider::ProviderFlags,
        notify: &mut (dyn FnMut(Notice) + Send),
        observer: &mut dyn Observer,
    ) -> Result<(), OpenError> {
        let loaded = self.load()?;
        let known = KnownEndpoints::load(self.place.home.as_deref());
        let selection =
            provider::select_for_session(&flags, &self.place.config, &loaded, &known).await?;
        remember_endpoint(&self.place, &selection);
        for note in &selection.notes {
            notify(Notice::info(note.clone()));
        }
        self.settings.provider = flags;
        record_changes(
            &loaded,
            &selection,
            &self.settings,
            &mut self.writer,
            observer,
        )?;
        self.selection = selection;
        Ok(())
    }

    /// The session's background processes (made on first use).
    pub fn process_table(&self) -> Arc<etch_process::Table> {
        let id = self.writer.session_id();
        self.context
            .processes
            .table(id, &paths::session_temp_dir(&self.place.cwd, id))
    }

    /// Logs the ends of background processes no run logged yet (they
    /// ended while the session was idle, or after a run's last request);
    /// returns the lines appended.
    ///
    /// # Errors
    /// When the log cannot be appended to.
    pub fn log_process_ends(&mut self) -> Result<Vec<String>, SessionError> {
        match self.context.processes.get(self.writer.session_id()) {
            Some(table) => self.log_ends_of(&table),
            None => Ok(Vec::new()),
        }
    }

    /// Logs the ends in `table` (this session's, closed) not logged yet.
    ///
    /// # Errors
    /// When the log cannot be appended to.
    pub fn log_ends_of(
        &mut self,
        table: &etch_process::Table,
    ) -> Result<Vec<String>, SessionError> {
        let mut lines = Vec::new();
        for (kind, data) in processes::unlogged_ends(table) {
            lines.push(self.writer.append(kind, &data)?.line);
        }
        Ok(lines)
    }

    /// The session's counters, read from its log.
    pub fn stats(&self) -> Result<SessionStats, SessionError> {
        Ok(session_stats(&self.load()?))
    }

    /// The session's log as it is on disk now.
    pub fn load(&self) -> Result<LoadedSession, SessionError> {
        load_session(self.writer.path())
    }

    /// Projects the history of the active branch again from the log.
    fn reproject(&mut self) -> Result<(), SessionError> {
        self.history = project_messages(&self.load()?).messages;
        Ok(())
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.writer.session_id()
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// The projected history of the active branch.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The model client and what it was chosen with.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// The settings, with the provider flags as last switched.
    pub fn settings(&self) -> &RunSettings {
        &self.settings
    }

    /// Where the session runs.
    pub fn place(&self) -> &Place {
        &self.place
    }

    /// Where another client can be offered while a run goes on: the run
    /// takes it before its next request (see [`etch_core::ClientSwitch`]).
    pub fn switch(&self) -> Arc<etch_core::ClientSwitch> {
        Arc::clone(&self.switch)
    }

    /// Takes `flags` and `selection` chosen while a run went on (the
    /// run logged the change when it took the client; `unlogged` are the
    /// records of an offer no request took, appended now).
    ///
    /// # Errors
    /// When the records cannot be appended.
    pub fn adopt(
        &mut self,
        flags: provider::ProviderFlags,
        selection: provider::Selection,
        unlogged: &[(&'static str, serde_json::Value)],
    ) -> Result<(), SessionError> {
        for (kind, data) in unlogged {
            self.writer.append(kind, data)?;
        }
        self.settings.provider = flags;
        self.selection = selection;
        Ok(())
    }

    /// The records that say `selection` with `flags` differs from what the
    /// branch of `loaded` used (`model.change`, `thinking_level.change`).
    pub fn change_records(
        loaded: &LoadedSession,
        selection: &provider::Selection,
        flags: &provider::ProviderFlags,
    ) -> Vec<(&'static str, serde_json::Value)> {
        let state = etch_session::model_state(loaded);
        let mut records = Vec::new();
        if let Some(change) = provider::model_change(&state, selection) {
            records.push((
                types::MODEL_CHANGE,
                serde_json::to_value(change).unwrap_or_default(),
            ));
        }
        if let Some(change) = provider::thinking_change(&state, flags) {
            records.push((
                types::THINKING_LEVEL_CHANGE,
                serde_json::to_value(change).unwrap_or_default(),
            ));
        }
        records
    }

    /// Turns threshold compaction on or off for later runs (Pi's
    /// `set_auto_compaction`), over `[context] auto_compact`.
    pub fn set_auto_compact(&mut self, on: bool) {
        self.place.config.context.auto_compact = on;
    }

    /// The active tools and pinned prompt.
    pub fn context(&self) -> &Context {
        &self.context
    }
}

/// The `session.started` fields of a new session run with `selection`.
fn new_session(place: &Place, selection: &Selection, title: String) -> NewSession {
    NewSession {
        cwd: place.cwd.to_string_lossy().into_owned(),
        provider: selection.client.provider().to_string(),
        model: selection.client.model().to_string(),
        openai_api: selection.client.api().map(str::to_string),
        base_url: selection.endpoint.clone(),
        etch_version: env!("CARGO_PKG_VERSION").to_string(),
        first_prompt: title,
    }
}

/// Passes the selection's notes, the sandbox's notice (the kernel
/// cannot confine commands), then the header line, to `notify`.
fn announce(
    selection: &Selection,
    sandbox: &crate::sandbox::Sandbox,
    notify: &mut dyn FnMut(Notice),
) {
    for note in &selection.notes {
        notify(Notice::info(note.clone()));
    }
    if let Some(notice) = sandbox.notice() {
        notify(Notice::warning(notice));
    }
    if let Some(header) = &selection.notice {
        notify(Notice::info(header.clone()));
    }
}

/// Passes what the loader skipped to `notify`, naming the file.
fn warn_skipped(loaded: &LoadedSession, notify: &mut dyn FnMut(Notice)) {
    for warning in &loaded.warnings {
        notify(Notice::warning(format!(
            "{}: {warning}",
            loaded.path.display()
        )));
    }
}

/// Appends `model.change` and `thinking_level.change` when `selection`
/// and `settings` moved the session to another provider, model, endpoint
/// or reasoning effort than its branch used, so that later runs (a plain
/// `etch resume`) go on with them.
fn record_changes(
    loaded: &LoadedSession,
    selection: &Selection,
    settings: &RunSettings,
    writer: &mut SessionWriter,
    observer: &mut dyn Observer,
) -> Result<(), SessionError> {
    let state = etch_session::model_state(loaded);
    if let Some(change) = provider::model_change(&state, selection) {
        let appended = writer.append(types::MODEL_CHANGE, &change)?;
        observer.durable_line(&appended.line);
    }
    if let Some(change) = provider::thinking_change(&state, &settings.provider) {
        let appended = writer.append(types::THINKING_LEVEL_CHANGE, &change)?;
        observer.durable_line(&appended.line);
    }
    Ok(())
}

/// The text of the first user message, to title a fork.
fn first_user_text(loaded: &LoadedSession) -> Option<String> {
    project_messages(loaded)
        .messages
        .iter()
        .find_map(|m| match m {
            Message::User { content } => Some(etch_model::content::joined_text(content)),
            _ => None,
        })
}

/// Keeps the endpoint `selection` goes to among those the user chose
/// (`crate::endpoints`): it passed the check of a resumed session, or a
/// flag or the configuration picked it. Failing to write the file only
/// means the user is asked again later, so it is not an error.
fn remember_endpoint(place: &Place, selection: &Selection) {
    if let Some(url) = selection
        .endpoint
        .as_deref()
        .filter(|url| !crate::endpoints::is_own_service(url))
    {
        let _ = KnownEndpoints::load(place.home.as_deref()).remember(url);
    }
}
