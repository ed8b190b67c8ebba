//! The host of a long-lived session: it accepts protocol [`Command`]s at
//! any time, runs prompts on a task of their own so commands keep being
//! answered while a run is active, and reports every response and event
//! to one sink, tagged with the id of the command that caused it.
//!
//! While a run is active the [`Session`] belongs to the run's task; the
//! host answers from what it knows without it (the queues, a snapshot of
//! the model, the log on disk) and refuses what would change the session
//! under the run (switching, forking, compacting) with an error saying to
//! wait for `agent_end` or abort. Text that arrives while a run is active
//! is queued (steering or follow-up); nothing queued is ever dropped: what
//! is still pending when a run ends starts the next run. This module must
//! not know how commands arrive or where output goes (`etch rpc` reads
//! stdin and writes stdout; the chat will draw).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use etch_core::{NoopObserver, RunError, RunOutcome};
use etch_protocol::{
    Command, CommandBody, CompactionOutcome, Event, EventBody, QueueMode, Response,
    StreamingBehavior, ThinkingLevel, WireMessage,
};
use etch_session::{load_session, project_messages};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::Notice;
use crate::events::{EventBridge, wire_message};
use crate::queue::{QueuedRun, Queues};
use crate::session::{CompactFailure, Session, Target};

/// One line of output: a response or an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// The answer to a command.
    Response(Response),
    /// Something that happened.
    Event(Event),
}

impl Output {
    /// The JSON line for this output (no newline).
    pub fn to_line(&self) -> String {
        let encoded = match self {
            Self::Response(response) => serde_json::to_string(response),
            Self::Event(event) => serde_json::to_string(event),
        };
        // Both are plain data (strings, numbers, JSON values): encoding
        // cannot fail, but a line must come out whatever happens.
        encoded.unwrap_or_else(|e| {
            json!({"type": "notice", "level": "warning", "message": format!("could not encode an output line: {e}")})
                .to_string()
        })
    }
}

/// Where outputs go; called from the host and from the run's task.
pub type Sink = Arc<dyn Fn(Output) + Send + Sync>;

/// The error for commands that need the session while a run holds it.
const BUSY: &str = "a run is active; wait for agent_end or send abort first";

/// A run in progress.
struct Running {
    /// The id of the command that started it.
    command_id: Option<String>,
    /// Cancels it.
    cancel: CancellationToken,
    /// The task; it hands the session back with the outcome.
    task: JoinHandle<(Session, Result<RunOutcome, RunError>)>,
    /// Ids of `abort` commands to answer once the run has ended.
    aborts: Vec<Option<String>>,
}

/// What the host knows about the session while a run holds it.
#[derive(Debug, Clone)]
struct Snapshot {
    /// Session id.
    id: String,
    /// Session file.
    path: PathBuf,
    /// Provider name.
    provider: String,
    /// Model name.
    model: String,
    /// Reasoning effort asked for, if any.
    thinking: Option<String>,
    /// Messages in the history when the run started.
    messages: usize,
    /// Whether threshold compaction is on.
    auto_compact: bool,
}

impl Snapshot {
    /// The snapshot of `session` now.
    fn of(session: &Session) -> Self {
        let client = &session.selection().client;
        Self {
            id: session.id().to_owned(),
            path: session.path().to_path_buf(),
            provider: client.provider().to_owned(),
            model: client.model().to_owned(),
            thinking: session.settings().provider.reasoning_effort.clone(),
            messages: session.history().len(),
            auto_compact: session.place().config.context.auto_compact,
        }
    }
}

/// A session accepting commands.
pub struct Host {
    /// The session, when no run holds it.
    session: Option<Session>,
    /// The active run, if any.
    running: Option<Running>,
    /// What is known about the session while a run holds it.
    snapshot: Snapshot,
    /// Pending steering and follow-up texts.
    queues: Arc<Mutex<Queues>>,
    /// Where outputs go.
    sink: Sink,
    /// Signalled when a run's task has finished (see [`Host::run_ended`]).
    ended: Arc<Notify>,
}

impl Host {
    /// A host for `session`, reporting to `sink`. It announces the session
    /// with a `session_info` event.
    pub fn new(session: Session, sink: Sink) -> Self {
        let host = Self {
            snapshot: Snapshot::of(&session),
            session: Some(session),
            running: None,
            queues: Arc::default(),
            sink,
            ended: Arc::new(Notify::new()),
        };
        host.emit(None, host.session_info());
        host
    }

    /// Notified when the active run's task has finished, so a front end
    /// can wait for it beside its input without borrowing the host, then
    /// call [`Host::settle`] (a notification may be left over from a run
    /// already settled; `settle` then returns at once).
    pub fn run_ended(&self) -> Arc<Notify> {
        Arc::clone(&self.ended)
    }

    /// Whether a run is active.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// The session file (the current one, also while a run holds it).
    pub fn session_path(&self) -> &std::path::Path {
        &self.snapshot.path
    }

    /// Handles one command: answers it at once, or for `abort` once the
    /// run has ended.
    pub async fn handle(&mut self, command: Command) {
        let Command { id, body } = command;
        let name = body.name();
        let answer = match body {
            CommandBody::Prompt {
                message,
                streaming_behavior,
            } => return self.prompt(id, name, message, streaming_behavior),
            CommandBody::Steer { message } => {
                return self.prompt(id, name, message, Some(StreamingBehavior::Steer));
            }
            CommandBody::FollowUp { message } => {
                return self.prompt(id, name, message, Some(StreamingBehavior::FollowUp));
            }
            CommandBody::Abort => match &mut self.running {
                Some(running) => {
                    running.cancel.cancel();
                    running.aborts.push(id);
                    return;
                }
                None => Err("no run is active; there is nothing to abort".to_owned()),
            },
            CommandBody::SetSteeringMode { mode } => {
                self.with_queues(|q| q.set_steering_mode(mode));
                Ok(Some(json!({ "mode": mode })))
            }
            CommandBody::SetFollowUpMode { mode } => {
                self.with_queues(|q| q.set_follow_up_mode(mode));
                Ok(Some(json!({ "mode": mode })))
            }
            CommandBody::GetState => Ok(Some(self.state())),
            CommandBody::GetMessages => self.messages().map(Some),
            CommandBody::GetSessionStats => load_session(&self.snapshot.path)
                .map_err(|e| e.to_string())
                .and_then(|loaded| {
                    serde_json::to_value(etch_session::session_stats(&loaded))
                        .map_err(|e| e.to_string())
                })
                .map(Some),
            CommandBody::Export { output_path } => self.export(output_path.as_deref()),
            body => match self.session.take() {
                None => Err(BUSY.to_owned()),
                Some(session) => {
                    let (session, answer) = self.idle_command(session, id.clone(), body).await;
                    self.snapshot = Snapshot::of(&session);
                    self.session = Some(session);
                    answer
                }
            },
        };
        self.respond(id, name, answer);
    }

    /// Sends the response to a command.
    fn respond(&self, id: Option<String>, name: &str, answer: Result<Option<Value>, String>) {
        let response = match answer {
            Ok(data) => Response::ok(id, name, data),
            Err(error) => Response::err(id, name, error),
        };
        (self.sink)(Output::Response(response));
    }

    /// Sends an event tagged with `id`.
    fn emit(&self, id: Option<String>, body: EventBody) {
        (self.sink)(Output::Event(Event { id, body }));
    }

    /// Changes the queues and announces them.
    fn with_queues(&self, change: impl FnOnce(&mut Queues)) -> EventBody {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut queues);
        queues.update_event()
    }

    /// A prompt, steering or follow-up text (the command `name`): queued
    /// while a run is active (per `behavior`; a plain prompt is refused
    /// then), else acknowledged and run.
    fn prompt(
        &mut self,
        id: Option<String>,
        name: &str,
        message: String,
        behavior: Option<StreamingBehavior>,
    ) {
        if message.trim().is_empty() {
            let error = "the text is empty; send some text in \"message\"".to_owned();
            return self.respond(id, name, Err(error));
        }
        if self.running.is_none() {
            // Answer before the run's first event, so a client sees the
            // acknowledgement first.
            self.respond(id.clone(), name, Ok(None));
            return self.start(id, message);
        }
        let (update, queued) = match behavior {
            Some(StreamingBehavior::Steer) => (self.with_queues(|q| q.steer(message)), "steer"),
            Some(StreamingBehavior::FollowUp) => {
                (self.with_queues(|q| q.follow_up(message)), "followUp")
            }
            None => {
                let error = format!(
                    "{BUSY}, or send the prompt with \"streamingBehavior\": \"steer\" (admitted after the current tool batch) or \"followUp\" (run when this run ends)"
                );
                return self.respond(id, name, Err(error));
            }
        };
        self.respond(id.clone(), name, Ok(Some(json!({ "queued": queued }))));
        self.emit(id, update);
    }

    /// Starts a run of `prompt` on its own task.
    fn start(&mut self, id: Option<String>, prompt: String) {
        let Some(mut session) = self.session.take() else {
            return;
        };
        self.snapshot = Snapshot::of(&session);
        let cancel = CancellationToken::new();
        let sink = Arc::clone(&self.sink);
        let bridge = EventBridge::new(
            id.clone(),
            Box::new(move |event| sink(Output::Event(event))),
        );
        let mut observer = QueuedRun::new(bridge, Arc::clone(&self.queues));
        let token = cancel.clone();
        let ended = Arc::clone(&self.ended);
        let task = tokio::spawn(async move {
            let result = session.run(prompt, &mut observer, &token).await;
            ended.notify_one();
            (session, result)
        });
        self.running = Some(Running {
            command_id: id,
            cancel,
            task,
            aborts: Vec::new(),
        });
    }

    /// Waits until the active run ends and takes the session back: a run
    /// that failed gets a second response to its prompt, aborts are
    /// answered, and text still queued starts the next run. Returns at
    /// once when no run is active.
    pub async fn settle(&mut self) {
        let Some(running) = self.running.as_mut() else {
            return;
        };
        let joined = (&mut running.task).await;
        let Some(running) = self.running.take() else {
            return;
        };
        let (session, result) = match joined {
            Ok(done) => done,
            Err(err) => {
                // The run's task panicked: the session (and its lock) went
                // with it. Say so; the log holds everything appended.
                let message = format!(
                    "the run stopped unexpectedly ({err}); the session log is intact: {}; reopen it with switch_session",
                    self.snapshot.path.display()
                );
                self.respond(running.command_id, "prompt", Err(message));
                return;
            }
        };
        if let Some(notice) = session.tidy() {
            self.notice(None, &notice);
        }
        self.snapshot = Snapshot::of(&session);
        self.session = Some(session);
        let cancelled = matches!(result, Err(RunError::Cancelled));
        if let Err(err) = &result
            && !cancelled
        {
            self.respond(running.command_id.clone(), "prompt", Err(err.to_string()));
        }
        for abort in running.aborts {
            self.respond(abort, "abort", Ok(None));
        }
        // Text queued after the run's last look at the queues is not lost:
        // it runs next, unless the user aborted (then it waits for them).
        if !cancelled {
            let mut texts = Vec::new();
            let update = self.with_queues(|q| texts = q.take_all());
            if !texts.is_empty() {
                self.emit(running.command_id.clone(), update);
                self.start(running.command_id, texts.join("\n\n"));
            }
        }
    }

    /// Cancels the active run, if any, and waits for it to end.
    pub async fn abort_and_settle(&mut self) {
        if let Some(running) = &self.running {
            running.cancel.cancel();
        }
        while self.running.is_some() {
            self.settle().await;
            // A run started from the queues after an abort would be a
            // surprise; `settle` does not start one after cancellation,
            // but cancel anything that did start.
            if let Some(running) = &self.running {
                running.cancel.cancel();
            }
        }
    }

    /// Sends a notice event.
    fn notice(&self, id: Option<String>, notice: &Notice) {
        self.emit(
            id,
            EventBody::Notice {
                level: notice.level,
                message: notice.message.clone(),
            },
        );
    }

    /// The `session_info` event for the current session.
    fn session_info(&self) -> EventBody {
        EventBody::SessionInfo {
            session_id: self.snapshot.id.clone(),
            session_file: self.snapshot.path.to_string_lossy().into_owned(),
            name: None,
        }
    }

    /// The answer to `get_state`.
    fn state(&self) -> Value {
        let queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let (steering, follow_up) = match queues.update_event() {
            EventBody::QueueUpdate {
                steering,
                follow_up,
            } => (steering, follow_up),
            _ => (Vec::new(), Vec::new()),
        };
        let modes = (queues.steering_mode(), queues.follow_up_mode());
        drop(queues);
        let s = &self.snapshot;
        let messages = self
            .session
            .as_ref()
            .map_or(s.messages, |session| session.history().len());
        json!({
            "provider": s.provider,
            "model": s.model,
            "thinkingLevel": s.thinking,
            "isStreaming": self.running.is_some(),
            "isCompacting": false,
            "steeringMode": mode_name(modes.0),
            "followUpMode": mode_name(modes.1),
            "sessionId": s.id,
            "sessionFile": s.path,
            "messageCount": messages,
            "pendingMessageCount": steering.len() + follow_up.len(),
            "autoCompactionEnabled": s.auto_compact,
            "steering": steering,
            "followUp": follow_up,
        })
    }

    /// The messages of the active branch in the wire shape: the session's
    /// history when idle, the log's projection while a run appends to it.
    fn messages(&self) -> Result<Value, String> {
        let wire = |messages: &[etch_model::Message]| -> Vec<WireMessage> {
            messages.iter().filter_map(wire_message).collect()
        };
        let messages = if let Some(session) = &self.session {
            wire(session.history())
        } else {
            let loaded = load_session(&self.snapshot.path).map_err(|e| e.to_string())?;
            wire(&project_messages(&loaded).messages)
        };
        Ok(json!({ "messages": messages }))
    }

    /// Writes the transcript to `output_path`, or beside the session file.
    fn export(&self, output_path: Option<&str>) -> Result<Option<Value>, String> {
        let loaded = load_session(&self.snapshot.path).map_err(|e| e.to_string())?;
        let text = crate::transcript::render(&loaded);
        let path = match output_path {
            Some(path) => PathBuf::from(path),
            None => self.snapshot.path.with_extension("txt"),
        };
        std::fs::write(&path, text).map_err(|e| {
            format!(
                "cannot write the transcript to {}: {e}; pass another outputPath",
                path.display()
            )
        })?;
        Ok(Some(json!({ "path": path })))
    }

    /// Commands that need the session itself (so only when idle). Returns
    /// the session to keep (another one after fork, new_session and
    /// switch_session) with the answer.
    async fn idle_command(
        &mut self,
        mut session: Session,
        id: Option<String>,
        body: CommandBody,
    ) -> (Session, Result<Option<Value>, String>) {
        let answer = match body {
            CommandBody::Compact {
                custom_instructions,
            } => {
                self.compact(&mut session, id.clone(), custom_instructions)
                    .await
            }
            CommandBody::SetModel { provider, model_id } => {
                let mut flags = session.settings().provider.clone();
                if flags.provider.as_deref() != Some(provider.as_str())
                    && session.selection().client.provider() != provider
                {
                    // Another provider: the endpoint, key and API shape
                    // given for the old one do not carry over.
                    flags.base_url = None;
                    flags.api_key = None;
                    flags.openai_api = None;
                    flags.openai_transport = None;
                }
                flags.provider = Some(provider);
                flags.model = Some(model_id);
                self.reconfigure(&mut session, id.clone(), flags).await
            }
            CommandBody::SetThinkingLevel { level } => {
                let mut flags = session.settings().provider.clone();
                flags.reasoning_effort = Some(level_name(level).to_owned());
                self.reconfigure(&mut session, id.clone(), flags).await
            }
            CommandBody::Navigate {
                entry_id,
                summarize,
            } => session
                .navigate(&entry_id, summarize, &CancellationToken::new())
                .await
                .map(|done| {
                    Some(json!({
                        "entryId": entry_id,
                        "navigateEventId": done.event_id,
                        "summary": done.summary,
                    }))
                })
                .map_err(|e| e.to_string()),
            CommandBody::Fork { entry_id } => match session.fork(&entry_id) {
                Ok((forked, _)) => {
                    let text = fork_text(&session, &entry_id);
                    session = forked;
                    Ok(Some(json!({
                        "sessionId": session.id(),
                        "sessionFile": session.path(),
                        "text": text,
                    })))
                }
                Err(err) => Err(err.to_string()),
            },
            CommandBody::NewSession { parent_session } => {
                let title = parent_session.map_or_else(
                    || "new session".to_owned(),
                    |parent| format!("new session after {parent}"),
                );
                match session.fresh(title) {
                    Ok((fresh, _)) => {
                        session = fresh;
                        Ok(Some(
                            json!({ "sessionId": session.id(), "sessionFile": session.path() }),
                        ))
                    }
                    Err(err) => Err(err.to_string()),
                }
            }
            CommandBody::SwitchSession { session_path } => {
                let path = PathBuf::from(&session_path);
                if path == session.path() {
                    Ok(Some(
                        json!({ "sessionId": session.id(), "sessionFile": session.path() }),
                    ))
                } else {
                    match self.switch(&session, id.clone(), &path).await {
                        Ok(other) => {
                            session = other;
                            Ok(Some(
                                json!({ "sessionId": session.id(), "sessionFile": session.path() }),
                            ))
                        }
                        Err(err) => Err(err),
                    }
                }
            }
            CommandBody::Bash { command } => {
                let cancel = CancellationToken::new();
                match session.bash(&command, &cancel).await {
                    Ok((output, failed)) => {
                        Ok(Some(json!({ "output": output, "isError": failed })))
                    }
                    Err(err) => Err(err.to_string()),
                }
            }
            other => Err(format!(
                "{} is answered elsewhere; this is a bug in etch",
                other.name()
            )),
        };
        let switched = session.id() != self.snapshot.id;
        self.snapshot = Snapshot::of(&session);
        if switched {
            self.emit(id, self.session_info());
        }
        (session, answer)
    }

    /// Opens the session file at `path` with the current session's
    /// settings; the current session stays open when that fails.
    async fn switch(
        &self,
        current: &Session,
        id: Option<String>,
        path: &std::path::Path,
    ) -> Result<Session, String> {
        if !path.is_file() {
            return Err(format!(
                "no session file at {}; pass the sessionFile of a session (see etch sessions)",
                path.display()
            ));
        }
        let mut notices = Vec::new();
        let opened = Session::open(
            current.place().clone(),
            current.settings().clone(),
            current.context().clone(),
            Target::Path(path),
            &mut |notice| notices.push(notice),
            &mut NoopObserver,
        )
        .await;
        for notice in &notices {
            self.notice(id.clone(), notice);
        }
        opened.map_err(|e| e.to_string())
    }

    /// Switches the client (model or reasoning effort), announcing it.
    async fn reconfigure(
        &self,
        session: &mut Session,
        id: Option<String>,
        flags: crate::provider::ProviderFlags,
    ) -> Result<Option<Value>, String> {
        let mut notices = Vec::new();
        let result = session
            .reconfigure(flags, &mut |n| notices.push(n), &mut NoopObserver)
            .await;
        for notice in &notices {
            self.notice(id.clone(), notice);
        }
        result.map_err(|e| e.to_string())?;
        let client = &session.selection().client;
        self.emit(
            id.clone(),
            EventBody::ModelChanged {
                provider: client.provider().to_owned(),
                model: client.model().to_owned(),
            },
        );
        let level = session.settings().provider.reasoning_effort.clone();
        if let Some(level) = level.as_deref().and_then(level_from_name) {
            self.emit(id, EventBody::ThinkingLevelChanged { level });
        }
        Ok(Some(json!({
            "provider": client.provider(),
            "model": client.model(),
            "thinkingLevel": level,
        })))
    }

    /// Manual compaction with its start and end events.
    async fn compact(
        &self,
        session: &mut Session,
        id: Option<String>,
        focus: Option<String>,
    ) -> Result<Option<Value>, String> {
        let reason = "manual".to_owned();
        self.emit(
            id.clone(),
            EventBody::CompactionStart {
                reason: reason.clone(),
            },
        );
        let result = session
            .compact(focus.as_deref(), &CancellationToken::new())
            .await;
        let (outcome, answer) = match result {
            Ok(etch_compact::Outcome::Compacted { data, event_id, .. }) => (
                CompactionOutcome::Compacted {
                    tokens_before: data.tokens_before,
                    tokens_after: data.tokens_after,
                },
                Ok(Some(json!({
                    "summary": data.summary,
                    "tokensBefore": data.tokens_before,
                    "tokensAfter": data.tokens_after,
                    "summaryEventId": event_id,
                }))),
            ),
            Ok(etch_compact::Outcome::Skipped(skip)) => (
                CompactionOutcome::Skipped {
                    reason: skip.to_string(),
                },
                Ok(Some(json!({ "skipped": skip.to_string() }))),
            ),
            Err(err) => {
                let why = match &err {
                    CompactFailure::Compact(e) => format!("{e}; the log was not changed"),
                    CompactFailure::Session(e) => e.to_string(),
                };
                (
                    CompactionOutcome::Failed {
                        reason: why.clone(),
                    },
                    Err(why),
                )
            }
        };
        self.emit(id, EventBody::CompactionEnd { reason, outcome });
        answer
    }
}

/// The wire name of a queue mode.
fn mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::All => "all",
        QueueMode::OneAtATime => "one-at-a-time",
    }
}

/// The reasoning effort name of a thinking level.
fn level_name(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Off => "off",
        ThinkingLevel::None => "none",
        ThinkingLevel::Minimal => "minimal",
        ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High => "high",
        ThinkingLevel::Xhigh => "xhigh",
    }
}

/// The thinking level of a reasoning effort name, if it is one.
fn level_from_name(name: &str) -> Option<ThinkingLevel> {
    serde_json::from_value(Value::String(name.to_owned())).ok()
}

/// The text of the user message `entry_id` names, so a client can put it
/// back into the editor after forking before it (Pi's fork).
fn fork_text(session: &Session, entry_id: &str) -> Option<String> {
    let loaded = session.load().ok()?;
    let event = loaded.events.iter().find(|e| e.id == entry_id)?;
    let data = event.parse_data::<etch_session::UserData>().ok()?;
    let text: String = data
        .content
        .iter()
        .filter_map(|part| match part {
            etch_model::ContentPart::Text { text } => Some(text.as_str()),
            etch_model::ContentPart::ToolCall(_) => None,
        })
        .collect();
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command line.
    fn command(id: &str, body: serde_json::Value) -> Command {
        let mut value = body;
        value["id"] = json!(id);
        serde_json::from_value(value).unwrap()
    }

    /// A sink collecting outputs.
    fn collector() -> (Sink, Arc<Mutex<Vec<Output>>>) {
        let seen: Arc<Mutex<Vec<Output>>> = Arc::default();
        let sink = Arc::clone(&seen);
        (Arc::new(move |o| sink.lock().unwrap().push(o)), seen)
    }

    /// Text queued after the run took its last look at the queues (the
    /// run's task has finished, the host has not taken the session back)
    /// is not lost: settling starts the next run with it, tagged with the
    /// first prompt's id. The barrier is the host's own end-of-run signal.
    #[test]
    fn text_queued_after_the_last_look_runs_next() {
        crate::testkit::block(async {
            let dir = tempfile::tempdir().unwrap();
            let session = crate::testkit::echo_session(dir.path()).await;
            let (sink, seen) = collector();
            let mut host = Host::new(session, sink);
            let ended = host.run_ended();
            host.handle(command("p1", json!({"type": "prompt", "message": "first"})))
                .await;
            ended.notified().await;
            assert!(host.is_running());
            host.handle(command(
                "f1",
                json!({"type": "follow_up", "message": "second"}),
            ))
            .await;
            host.settle().await;
            assert!(host.is_running(), "the queued text started a run");
            ended.notified().await;
            host.settle().await;
            assert!(!host.is_running());
            let outputs = seen.lock().unwrap();
            let ends: Vec<&Event> = outputs
                .iter()
                .filter_map(|o| match o {
                    Output::Event(e) if matches!(e.body, EventBody::AgentEnd { .. }) => Some(e),
                    _ => None,
                })
                .collect();
            assert_eq!(ends.len(), 2);
            assert!(ends.iter().all(|e| e.id.as_deref() == Some("p1")));
            let texts: Vec<String> = host
                .session
                .as_ref()
                .unwrap()
                .history()
                .iter()
                .map(|m| match m {
                    etch_model::Message::User { content }
                    | etch_model::Message::Assistant { content } => {
                        etch_model::content::joined_text(content)
                    }
                    _ => String::new(),
                })
                .collect();
            assert_eq!(texts, ["first", "first", "second", "second"]);
        });
    }

    /// An abort is answered only once the run has ended (after its
    /// agent_end); queued text waits after an abort instead of running.
    #[test]
    fn abort_is_answered_after_the_run_ends() {
        crate::testkit::block(async {
            let dir = tempfile::tempdir().unwrap();
            let session = crate::testkit::echo_session(dir.path()).await;
            let (sink, seen) = collector();
            let mut host = Host::new(session, sink);
            host.handle(command("p1", json!({"type": "prompt", "message": "first"})))
                .await;
            host.handle(command(
                "f1",
                json!({"type": "prompt", "message": "later", "streamingBehavior": "followUp"}),
            ))
            .await;
            host.handle(command("a1", json!({"type": "abort"}))).await;
            let answered = |id: &str| {
                seen.lock()
                    .unwrap()
                    .iter()
                    .any(|o| matches!(o, Output::Response(r) if r.id.as_deref() == Some(id)))
            };
            assert!(!answered("a1"));
            host.abort_and_settle().await;
            assert!(answered("a1"));
            let outputs = seen.lock().unwrap();
            let end = outputs
                .iter()
                .position(|o| {
                    matches!(
                        o,
                        Output::Event(Event {
                            body: EventBody::AgentEnd { .. },
                            ..
                        })
                    )
                })
                .unwrap();
            let abort = outputs
                .iter()
                .position(|o| matches!(o, Output::Response(r) if r.command == "abort"))
                .unwrap();
            assert!(end < abort);
            drop(outputs);
            assert!(!host.is_running());
            assert_eq!(host.state()["followUp"], json!(["later"]));
        });
    }
}
