//! The host of a long-lived session: it accepts protocol [`Command`]s at
//! any time, runs prompts (and the commands that can take long: `bash`,
//! `compact`, `navigate` with a summary) on a task of their own so that
//! commands keep being answered and `abort` reaches them, and reports
//! every response and event to one sink, tagged with the id of the
//! command that caused it. A command's events come before its response,
//! except that a prompt is acknowledged before its run's first event.
//!
//! While a task holds the [`Session`] the host answers from what it knows
//! without it (the queues, a snapshot of the model, the log on disk) and
//! refuses what would change the session under the task (switching,
//! forking, compacting) with an error saying to wait or abort. A prompt
//! that arrives during a run is queued (steering or follow-up, with its
//! images, at most [`crate::images::MAX_PROMPT_IMAGES`] queued at once,
//! as one request takes); what is still queued when a run ends starts
//! the next run, drained per the queue's mode; an abort hands the queued
//! texts back to the client instead (in the abort's response; their
//! images, which the client sent and still has, are dropped), so no
//! text is ever silently lost or carried into another session. This module must not know how commands
//! arrive or where output goes (`etch rpc` reads stdin and writes stdout;
//! the chat will draw).

mod idle;
mod jobs;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use etch_core::{RunError, RunOutcome};
use etch_protocol::{Command, CommandBody, Event, EventBody, Response, StreamingBehavior};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::approval::{Answer as Approved, Asked, Broker, Watch};
use crate::error::Notice;
use crate::events::EventBridge;
use crate::queue::{QueuedRun, Queues};
use crate::session::Session;

/// One line of output: a response or an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// The answer to a command.
    Response(Response),
    /// Something that happened.
    Event(Event),
    /// The session failed beyond repair (a task stopped unexpectedly and
    /// took it along; the log holds everything appended): the front end
    /// should close it and say why. Only the session service sends it,
    /// after the failed command's own response.
    Broken(String),
}

impl Output {
    /// The JSON line for this output (no newline).
    pub fn to_line(&self) -> String {
        let encoded = match self {
            Self::Response(response) => serde_json::to_string(response),
            Self::Event(event) => serde_json::to_string(event),
            Self::Broken(why) => {
                Ok(json!({"type": "notice", "level": "warning", "message": why}).to_string())
            }
        };
        // Both are plain data (strings, numbers, JSON values): encoding
        // cannot fail, but a line must come out whatever happens.
        encoded.unwrap_or_else(|e| {
            json!({"type": "notice", "level": "warning", "message": format!("could not encode an output line: {e}")})
                .to_string()
        })
    }
}

/// Where outputs go; called from the host and from its tasks.
pub type Sink = Arc<dyn Fn(Output) + Send + Sync>;

/// A command's answer: data, or an error saying what to do.
type Answer = Result<Option<Value>, String>;

/// What a task reports when it has finished.
enum Finished {
    /// A run of the loop.
    Run(Result<RunOutcome, RunError>),
    /// A long command (`bash`, `compact`, `navigate`) and its answer.
    Command(Answer),
}

/// What the active task is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Job {
    /// A run of the loop.
    Run,
    /// The long command of this name.
    Command(&'static str),
}

/// A task in progress.
struct Running {
    /// The id of the command that started it.
    command_id: Option<String>,
    /// What it does.
    job: Job,
    /// Cancels it.
    cancel: CancellationToken,
    /// The task; it hands the session back with what it did.
    task: JoinHandle<(Session, Finished)>,
    /// Ids of `abort` commands to answer once it has ended.
    aborts: Vec<Option<String>>,
}

/// Notifies the host when a task ends, also when it panics (dropped
/// during unwinding), so the host never waits for a task that is gone.
struct EndSignal(Arc<Notify>);

impl Drop for EndSignal {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// What the host knows about the session while a task holds it.
#[derive(Clone)]
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
    /// Messages in the history when the task started.
    messages: usize,
    /// Whether threshold compaction is on.
    auto_compact: bool,
    /// The subagents running now.
    children: Arc<crate::subagent::Children>,
    /// The model client.
    client: Arc<dyn etch_model::ModelClient>,
    /// Where the session's calls wait for approval.
    approvals: Arc<Broker>,
    /// Where the session stands (its configuration, for choosing a
    /// client while a run holds the session).
    place: crate::settings::Place,
    /// The provider flags as last switched.
    flags: crate::provider::ProviderFlags,
    /// Where a client chosen during a run is offered to it.
    switch: Arc<etch_core::ClientSwitch>,
    /// The skills a prompt can invoke: name, description, file, and
    /// whether it is the user's own (under the home) or the project's.
    skills: Vec<(String, String, PathBuf, bool)>,
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
            children: Arc::clone(&session.context().children),
            client: Arc::clone(client),
            approvals: Arc::clone(&session.context().approvals),
            place: session.place().clone(),
            flags: session.settings().provider.clone(),
            switch: session.switch(),
            skills: session
                .context()
                .assembled
                .skills
                .iter()
                .map(|s| {
                    let users = session
                        .place()
                        .home
                        .as_deref()
                        .is_some_and(|home| s.location.starts_with(home.join(".etch")));
                    (
                        s.name.clone(),
                        s.description.clone(),
                        s.location.clone(),
                        users,
                    )
                })
                .collect(),
        }
    }
}

/// A session accepting commands.
pub struct Host {
    /// The session, when no task holds it.
    session: Option<Session>,
    /// The active task, if any.
    running: Option<Running>,
    /// What is known about the session while a task holds it.
    snapshot: Snapshot,
    /// Pending steering and follow-up texts.
    queues: Arc<Mutex<Queues>>,
    /// Where outputs go.
    sink: Sink,
    /// Signalled when a task has finished (see [`Host::task_ended`]).
    ended: Arc<Notify>,
    /// Why the host cannot go on (a task panicked and took the session
    /// with it); every later command is refused with this.
    broken: Option<String>,
    /// How `export` renders HTML, when the front end has a renderer
    /// richer than the escaped plain transcript.
    html: Option<HtmlRenderer>,
    /// Watching the session's approval questions, which go out as
    /// `approval_request` events.
    watch: Option<Watch>,
    /// The session whose background processes report here, with its
    /// processes (to stop them when the host moves on).
    processes: Option<(String, Arc<etch_process::Processes>)>,
    /// Where those reports go; the front end's actor takes the other
    /// end ([`Host::process_notices`]).
    process_tx: tokio::sync::mpsc::UnboundedSender<(String, etch_process::Notice)>,
    /// The other end, until taken.
    process_rx: Option<tokio::sync::mpsc::UnboundedReceiver<(String, etch_process::Notice)>>,
    /// Whether the active run waits to retry a failed request.
    retrying: Arc<std::sync::atomic::AtomicBool>,
    /// A model or level chosen during the run, for the session once the
    /// run gives it back.
    pending: Option<(crate::provider::ProviderFlags, crate::provider::Selection)>,
    /// The last model list a server gave, with the client that asked
    /// (held, so no other client can take its place) and when.
    models: Option<(
        Arc<dyn etch_model::ModelClient>,
        std::time::Instant,
        Vec<String>,
    )>,
}

/// How long a server's model list is used before it is asked again.
const MODELS_TTL: std::time::Duration = std::time::Duration::from_secs(300);

/// Renders a session (the runtime's projection of it) as an HTML page;
/// whatever came from the session must be escaped in it.
pub type HtmlRenderer = Arc<dyn Fn(&etch_protocol::Replay) -> String + Send + Sync>;

/// A client's images made fit for a model (long edge `edge`), or the
/// error that refuses the prompt, naming the image (`#2`) and what is
/// wrong with it.
fn prompt_images(
    images: &[etch_protocol::ImageInput],
    edge: u32,
) -> Result<Vec<etch_model::Image>, String> {
    crate::images::check_count(images.len()).map_err(|e| e.to_string())?;
    images
        .iter()
        .enumerate()
        .map(|(n, input)| {
            let what = format!("#{}", n + 1);
            crate::images::from_base64(&input.data, &input.mime_type, &what, edge)
                .map(|prepared| prepared.image)
                .map_err(|e| e.to_string())
        })
        .collect()
}

impl Host {
    /// A host for `session`, reporting to `sink`. It announces the session
    /// with a `session_info` event.
    pub fn new(session: Session, sink: Sink) -> Self {
        let (process_tx, process_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut host = Self {
            snapshot: Snapshot::of(&session),
            session: Some(session),
            running: None,
            queues: Arc::default(),
            sink,
            ended: Arc::new(Notify::new()),
            broken: None,
            html: None,
            watch: None,
            processes: None,
            process_tx,
            process_rx: Some(process_rx),
            retrying: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            pending: None,
            models: None,
        };
        host.emit(None, host.session_info());
        host.rewatch();
        if let Some(session) = host.session.take() {
            host.watch_processes(&session);
            host.session = Some(session);
        }
        host
    }

    /// What the session's background processes report (a start, an
    /// end), for the front end's actor to hand back to
    /// [`Host::process_notice`]; `None` once taken.
    pub fn process_notices(
        &mut self,
    ) -> Option<tokio::sync::mpsc::UnboundedReceiver<(String, etch_process::Notice)>> {
        self.process_rx.take()
    }

    /// Has the background processes of `session` report here; the
    /// processes of a session the host moved away from are stopped.
    fn watch_processes(&mut self, session: &Session) {
        // Every context shares the tables: only another session is a
        // change (a reloaded context still finds its processes).
        if self
            .processes
            .as_ref()
            .is_some_and(|(id, _)| id == session.id())
        {
            return;
        }
        if let Some((old, processes)) = self.processes.take() {
            tokio::spawn(async move { processes.close(&old).await });
        }
        let tx = self.process_tx.clone();
        let id = session.id().to_owned();
        session.process_table().listen(Arc::new(move |notice| {
            let _ = tx.send((id.clone(), notice));
        }));
        self.processes = Some((
            session.id().to_owned(),
            Arc::clone(&session.context().processes),
        ));
    }

    /// A background process started or ended: says so, and logs an end
    /// at once when no run holds the session (a run logs it before its
    /// next request).
    pub fn process_notice(&mut self, (session, notice): (String, etch_process::Notice)) {
        // A session the host moved away from says nothing here.
        if self.processes.as_ref().is_none_or(|(id, _)| *id != session) {
            return;
        }
        let body = match notice {
            etch_process::Notice::Started { id, pid, command } => EventBody::ProcessStarted {
                process_id: id,
                pid,
                command,
            },
            etch_process::Notice::Exited { id, state } => {
                let data = crate::session::exited_data(&id, state);
                EventBody::ProcessExited {
                    process_id: id,
                    state: data.state,
                    code: data.code,
                    signal: data.signal,
                }
            }
        };
        let ended = matches!(body, EventBody::ProcessExited { .. });
        self.emit(None, body);
        if ended {
            self.log_process_ends();
        }
    }

    /// Logs the ends of background processes, when no task holds the
    /// session.
    fn log_process_ends(&mut self) {
        if let Some(session) = self.session.as_mut()
            && let Err(e) = session.log_process_ends()
        {
            self.notice(
                None,
                &Notice::warning(format!(
                    "the end of a background process was not logged: {e}"
                )),
            );
        }
    }

    /// The session's background processes, for `list_processes`.
    fn list_processes(&self) -> Value {
        let rows = self
            .processes
            .as_ref()
            .and_then(|(id, processes)| processes.get(id))
            .map(|table| table.list())
            .unwrap_or_default();
        let list: Vec<Value> = rows
            .into_iter()
            .map(|row| {
                let data = crate::session::exited_data(&row.id, row.state);
                json!({
                    "processId": row.id,
                    "pid": row.pid,
                    "command": row.command,
                    "state": data.state,
                    "code": data.code,
                    "signal": data.signal,
                    "ageMs": u64::try_from(row.age.as_millis()).unwrap_or(u64::MAX),
                    "unreadBytes": row.unread,
                })
            })
            .collect();
        json!({ "processes": list })
    }

    /// `kill_process`: stops the process on a task of its own (it may
    /// take the grace) and answers when it ended.
    fn kill_process(
        &self,
        id: Option<String>,
        name: &'static str,
        process: String,
        signal: Option<&str>,
    ) {
        let how = match signal {
            None | Some("term") => etch_process::Stop::Term,
            Some("kill") => etch_process::Stop::Kill,
            Some(other) => {
                return self.respond(
                    id,
                    name,
                    Err(format!(
                        "unknown signal {other:?}: use \"term\" or \"kill\""
                    )),
                );
            }
        };
        let Some(table) = self
            .processes
            .as_ref()
            .and_then(|(session, processes)| processes.get(session))
        else {
            return self.respond(
                id,
                name,
                Err(format!(
                    "there is no background process {process}; none is kept"
                )),
            );
        };
        let sink = Arc::clone(&self.sink);
        tokio::spawn(async move {
            let answer = match table.stop(&process, how).await {
                Ok(state) => Ok(Some(json!({
                    "processId": process,
                    "state": state.word(),
                    "description": state.describe(),
                }))),
                Err(e) => Err(e.to_string()),
            };
            let response = match answer {
                Ok(data) => Response::ok(id, name, data),
                Err(error) => Response::err(id, name, error),
            };
            sink(Output::Response(response));
        });
    }

    /// Stops the background processes of `session`, which the host is
    /// leaving for another, and logs their ends in its log.
    async fn end_processes(&mut self, session: &mut Session) {
        if self
            .processes
            .as_ref()
            .is_some_and(|(id, _)| id == session.id())
        {
            self.processes = None;
        }
        let processes = Arc::clone(&session.context().processes);
        if let Some(table) = processes.close(session.id()).await
            && let Err(e) = session.log_ends_of(&table)
        {
            self.notice(
                None,
                &Notice::warning(format!(
                    "the ends of background processes were not logged in {}: {e}",
                    session.path().display()
                )),
            );
        }
    }

    /// Stops the session's background processes (TERM, then KILL after
    /// the grace): the session is closing.
    pub async fn close_processes(&mut self) {
        if let Some((id, processes)) = self.processes.take()
            && let Some(table) = processes.close(&id).await
            && let Some(session) = self.session.as_mut()
            && session.id() == id
        {
            // Their ends belong in the log too; a failure here has no one
            // left to tell but the log itself.
            let _ = session.log_ends_of(&table);
        }
    }

    /// Takes what is known about `session` (a new id, a reloaded
    /// context) and watches its approval questions.
    fn look_at(&mut self, session: &Session) {
        self.snapshot = Snapshot::of(session);
        self.rewatch();
        self.watch_processes(session);
    }

    /// Watches the current session's approval questions, unless that is
    /// what is watched already: each goes to the sink as an
    /// `approval_request` event.
    fn rewatch(&mut self) {
        let (broker, id) = (&self.snapshot.approvals, &self.snapshot.id);
        if self.watch.as_ref().is_some_and(|w| w.watches(broker, id)) {
            return;
        }
        // The old watch goes first: its unanswered questions are refused.
        self.watch = None;
        let sink = Arc::clone(&self.sink);
        let show: crate::approval::Show = Arc::new(move |asked: Asked| {
            sink(Output::Event(Event {
                id: None,
                body: EventBody::ApprovalRequest {
                    tool_call_id: asked.call_id,
                    tool_name: asked.tool,
                    args: asked.args,
                    reason: asked.why,
                },
            }));
        });
        self.watch = Some(broker.watch(id, &show));
    }

    /// Takes what is known about the session again after it was changed
    /// in place (the chat's `/reload` gives it a new context).
    pub fn refresh(&mut self) {
        if let Some(session) = self.session.take() {
            self.look_at(&session);
            self.session = Some(session);
        }
    }

    /// Makes `export` write HTML with `render` (the chat's page) instead
    /// of the escaped plain transcript.
    pub fn set_html_renderer(&mut self, render: HtmlRenderer) {
        self.html = Some(render);
    }

    /// Notified when the active task has finished, so a front end can wait
    /// for it beside its input without borrowing the host, then call
    /// [`Host::settle`].
    pub fn task_ended(&self) -> Arc<Notify> {
        Arc::clone(&self.ended)
    }

    /// The session, when no task holds it (a front end reads it for its
    /// own reports: the chat's `/context`).
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The session to change, when no task holds it (the chat's
    /// `/reload`).
    pub fn session_mut(&mut self) -> Option<&mut Session> {
        self.session.as_mut()
    }

    /// The provider and model the session uses now (known while a task
    /// holds the session too).
    pub fn model(&self) -> (&str, &str) {
        (&self.snapshot.provider, &self.snapshot.model)
    }

    /// The session's id and file now (known while a task holds the
    /// session too).
    pub fn current(&self) -> (&str, &std::path::Path) {
        (&self.snapshot.id, &self.snapshot.path)
    }

    /// The reasoning effort asked for now, if any.
    pub fn thinking(&self) -> Option<&str> {
        self.snapshot.thinking.as_deref()
    }

    /// The model client the session uses now (known while a task holds
    /// the session too): a front end asks it for the server's models.
    pub fn client(&self) -> Arc<dyn etch_model::ModelClient> {
        Arc::clone(&self.snapshot.client)
    }

    /// Whether a run or a long command is active.
    pub fn is_busy(&self) -> bool {
        self.running.is_some()
    }

    /// Why the host cannot go on, when a task failed beyond repair; the
    /// front end should stop and say so.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Handles one command: answers it at once, or (a long command, an
    /// abort) once its task has ended.
    pub async fn handle(&mut self, command: Command) {
        let Command { id, body } = command;
        let name = body.name();
        let answer = match body {
            CommandBody::Prompt {
                message,
                images,
                streaming_behavior,
            } => return self.prompt(id, name, (message, images), streaming_behavior),
            CommandBody::Steer { message, images } => {
                let text = (message, images);
                return self.prompt(id, name, text, Some(StreamingBehavior::Steer));
            }
            CommandBody::FollowUp { message, images } => {
                let text = (message, images);
                return self.prompt(id, name, text, Some(StreamingBehavior::FollowUp));
            }
            CommandBody::Abort => match &mut self.running {
                Some(running) => {
                    running.cancel.cancel();
                    running.aborts.push(id);
                    return;
                }
                None => Err("nothing is running; there is nothing to abort".to_owned()),
            },
            CommandBody::AbortSubagent { tool_call_id } => {
                if self.snapshot.children.cancel(&tool_call_id) {
                    Ok(None)
                } else {
                    let running: Vec<String> = self
                        .snapshot
                        .children
                        .list()
                        .into_iter()
                        .map(|(id, label)| format!("{id} ({label})"))
                        .collect();
                    Err(if running.is_empty() {
                        format!("no subagent runs for call {tool_call_id}; none is running")
                    } else {
                        format!(
                            "no subagent runs for call {tool_call_id}; running: {}",
                            running.join(", ")
                        )
                    })
                }
            }
            CommandBody::SetSteeringMode { mode } => {
                self.with_queues(|q| q.set_steering_mode(mode));
                Ok(Some(json!({ "mode": mode })))
            }
            CommandBody::SetFollowUpMode { mode } => {
                self.with_queues(|q| q.set_follow_up_mode(mode));
                Ok(Some(json!({ "mode": mode })))
            }
            CommandBody::ListProcesses => Ok(Some(self.list_processes())),
            CommandBody::KillProcess { process_id, signal } => {
                return self.kill_process(id, name, process_id, signal.as_deref());
            }
            CommandBody::Approve {
                tool_call_id,
                decision,
                reason,
            } => {
                let answer = match decision {
                    etch_protocol::ApprovalDecision::Allow => Approved::Once,
                    etch_protocol::ApprovalDecision::AllowForSession => Approved::Session,
                    etch_protocol::ApprovalDecision::Deny => Approved::Deny(reason),
                };
                self.snapshot
                    .approvals
                    .answer(&self.snapshot.id, &tool_call_id, answer)
                    .map(|()| None)
            }
            CommandBody::GetState => Ok(Some(self.state())),
            CommandBody::GetMessages => self.messages().map(Some),
            CommandBody::GetForkMessages => self.fork_messages().map(Some),
            CommandBody::GetSessionStats => self.stats(),
            CommandBody::GetLastAssistantText => self.last_assistant_text(),
            CommandBody::SetSessionName { name } => self.set_name(&name),
            body @ (CommandBody::SetModel { .. } | CommandBody::SetThinkingLevel { .. })
                if self.running.as_ref().is_some_and(|r| r.job == Job::Run) =>
            {
                self.switch_during_run(id.clone(), body).await
            }
            CommandBody::GetAvailableModels => Ok(Some(self.available_models().await)),
            CommandBody::GetCommands => Ok(Some(self.commands())),
            CommandBody::ExportHtml { output_path } => {
                self.export(output_path.as_deref(), Some("html"))
            }
            CommandBody::AbortRetry => Ok(Some(match &mut self.running {
                Some(running)
                    if running.job == Job::Run
                        && self.retrying.load(std::sync::atomic::Ordering::SeqCst) =>
                {
                    // The retry is given up: the run ends, as Pi's does.
                    running.cancel.cancel();
                    json!({ "aborted": true })
                }
                _ => json!({ "aborted": false }),
            })),
            CommandBody::AbortBash => Ok(Some(match &mut self.running {
                Some(running) if matches!(running.job, Job::Command("bash")) => {
                    running.cancel.cancel();
                    json!({ "aborted": true })
                }
                _ => json!({ "aborted": false }),
            })),
            CommandBody::Export {
                output_path,
                format,
            } => self.export(output_path.as_deref(), format.as_deref()),
            body => match self.take_session() {
                Err(why) => Err(why),
                Ok(session) if jobs::is_long(&body) => {
                    // Answered when its task ends.
                    return self.launch_long(session, id, body);
                }
                Ok(session) => {
                    let (session, answer) =
                        Box::pin(self.idle_command(session, id.clone(), body)).await;
                    self.look_at(&session);
                    self.session = Some(session);
                    answer
                }
            },
        };
        self.respond(id, name, answer);
    }

    /// The session, when no task holds it; else why not.
    fn take_session(&mut self) -> Result<Session, String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        self.session.take().ok_or_else(|| self.busy())
    }

    /// The error for commands that need the session while a task has it.
    fn busy(&self) -> String {
        match self.running.as_ref().map(|r| r.job) {
            Some(Job::Command(name)) => {
                format!("the {name} command is still running; wait for its response or send abort")
            }
            _ => "a run is active; wait for agent_end or send abort first".to_owned(),
        }
    }

    /// Sends the response to a command.
    fn respond(&self, id: Option<String>, name: &str, answer: Answer) {
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

    /// Changes the queues and returns the `queue_update` describing them.
    fn with_queues(&self, change: impl FnOnce(&mut Queues)) -> EventBody {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut queues);
        queues.update_event()
    }

    /// A prompt, steering or follow-up text (the command `name`): queued
    /// while a task is active (per `behavior`; a plain prompt is refused
    /// then), else acknowledged and run.
    fn prompt(
        &mut self,
        id: Option<String>,
        name: &str,
        (message, images): (String, Vec<etch_protocol::ImageInput>),
        behavior: Option<StreamingBehavior>,
    ) {
        if message.trim().is_empty() {
            let error = "the text is empty; send some text in \"message\"".to_owned();
            return self.respond(id, name, Err(error));
        }
        if self.running.is_none() {
            return match self.take_session() {
                Err(why) => self.respond(id, name, Err(why)),
                Ok(session) => {
                    let edge = session.place().config.tools.read_image_max_edge;
                    let images = match prompt_images(&images, edge) {
                        Ok(images) => images,
                        Err(why) => {
                            self.session = Some(session);
                            return self.respond(id, name, Err(why));
                        }
                    };
                    // Answer before the run's first event, so a client sees
                    // the acknowledgement first.
                    self.respond(id.clone(), name, Ok(None));
                    let prompt = etch_core::Prompt {
                        text: message,
                        images,
                    };
                    self.start(session, id, prompt);
                }
            };
        }
        let Some(behavior) = behavior else {
            let error = format!(
                "{}, or send the prompt with \"streamingBehavior\": \"steer\" (admitted after the current tool batch) or \"followUp\" (run when this run ends)",
                self.busy()
            );
            return self.respond(id, name, Err(error));
        };
        // Images go with the queued text, made fit now, as a prompt's are;
        // what is queued may end up in one message, so all of it counts
        // against the limit of one request.
        let queued_images = {
            let queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            queues.image_count()
        };
        if let Err(e) = crate::images::check_count(queued_images + images.len()) {
            let error = format!(
                "{e}; {queued_images} are queued already: send these when this run has ended"
            );
            return self.respond(id, name, Err(error));
        }
        let edge = self.snapshot.place.config.tools.read_image_max_edge;
        let images = match prompt_images(&images, edge) {
            Ok(images) => images,
            Err(why) => return self.respond(id, name, Err(why)),
        };
        let prompt = etch_core::Prompt {
            text: message,
            images,
        };
        let (update, queued) = match behavior {
            StreamingBehavior::Steer => (self.with_queues(|q| q.steer(prompt)), "steer"),
            StreamingBehavior::FollowUp => (self.with_queues(|q| q.follow_up(prompt)), "followUp"),
        };
        self.respond(id.clone(), name, Ok(Some(json!({ "queued": queued }))));
        self.emit(id, update);
    }

    /// Starts a run of `prompt` on its own task.
    fn start(&mut self, mut session: Session, id: Option<String>, prompt: etch_core::Prompt) {
        let sink = Arc::clone(&self.sink);
        let retrying = Arc::clone(&self.retrying);
        retrying.store(false, std::sync::atomic::Ordering::SeqCst);
        let bridge = EventBridge::new(
            id.clone(),
            Box::new(move |event| {
                // Whether the run waits to retry a request (abort_retry).
                match &event.body {
                    EventBody::AutoRetryStart { .. } => {
                        retrying.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                    EventBody::AutoRetryEnd { .. } => {
                        retrying.store(false, std::sync::atomic::Ordering::SeqCst);
                    }
                    _ => {}
                }
                sink(Output::Event(event));
            }),
        );
        let mut observer = QueuedRun::new(bridge, Arc::clone(&self.queues));
        self.look_at(&session);
        self.launch(id, Job::Run, move |token| async move {
            let result = session.run(prompt, &mut observer, &token).await;
            (session, Finished::Run(result))
        });
    }

    /// `set_model` or `set_thinking_level` while a run holds the session:
    /// the client is chosen now and offered to the run, which asks with it
    /// from its next request on (as Pi applies them); the session takes
    /// it when the run ends.
    async fn switch_during_run(&mut self, id: Option<String>, body: CommandBody) -> Answer {
        let mut flags = self.snapshot.flags.clone();
        match body {
            CommandBody::SetModel { provider, model_id } => {
                flags.switch_model(&provider, &model_id, &self.snapshot.provider);
            }
            CommandBody::SetThinkingLevel { level } => {
                flags.reasoning_effort = Some(idle::level_name(level).to_owned());
            }
            _ => return Err("only set_model and set_thinking_level switch during a run".to_owned()),
        }
        let loaded = etch_session::load_session(&self.snapshot.path).map_err(|e| e.to_string())?;
        let known = crate::endpoints::KnownEndpoints::load(self.snapshot.place.home.as_deref());
        let selection = crate::provider::select_for_session(
            &flags,
            &self.snapshot.place.config,
            &loaded,
            &known,
        )
        .await
        .map_err(|e| e.to_string())?;
        let records = Session::change_records(&loaded, &selection, &flags);
        self.snapshot.switch.offer(etch_core::Switch {
            client: Arc::clone(&selection.client),
            records,
        });
        let client = Arc::clone(&selection.client);
        if (client.provider(), client.model())
            != (
                self.snapshot.provider.as_str(),
                self.snapshot.model.as_str(),
            )
        {
            self.emit(
                id.clone(),
                EventBody::ModelChanged {
                    provider: client.provider().to_owned(),
                    model: client.model().to_owned(),
                },
            );
        }
        if flags.reasoning_effort != self.snapshot.thinking
            && let Some(level) = flags
                .reasoning_effort
                .as_deref()
                .and_then(idle::level_from_name)
        {
            self.emit(id, EventBody::ThinkingLevelChanged { level });
        }
        client.provider().clone_into(&mut self.snapshot.provider);
        client.model().clone_into(&mut self.snapshot.model);
        self.snapshot.thinking.clone_from(&flags.reasoning_effort);
        self.snapshot.client = Arc::clone(&client);
        self.snapshot.flags = flags.clone();
        let level = flags.reasoning_effort.clone();
        self.pending = Some((flags, selection));
        Ok(Some(json!({
            "provider": client.provider(),
            "model": client.model(),
            "id": client.model(),
            "thinkingLevel": level,
            "appliesTo": "next request",
        })))
    }

    /// Spawns `work` (given the task's cancellation token) as the active
    /// task.
    fn launch<F, Fut>(&mut self, id: Option<String>, job: Job, work: F)
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = (Session, Finished)> + Send + 'static,
    {
        let cancel = CancellationToken::new();
        let signal = EndSignal(Arc::clone(&self.ended));
        let future = work(cancel.clone());
        let task = tokio::spawn(async move {
            let _signal = signal;
            future.await
        });
        self.running = Some(Running {
            command_id: id,
            job,
            cancel,
            task,
            aborts: Vec::new(),
        });
    }

    /// Takes the session back when the active task has finished: its
    /// outcome is answered (a failed run gets a second response to its
    /// prompt, a long command its response), aborts are answered, and text
    /// still queued starts the next run, unless the task was aborted (then
    /// the text goes back to the client in the abort's response). Returns
    /// at once while the task is still going.
    pub async fn settle(&mut self) {
        if self
            .running
            .as_ref()
            .is_some_and(|running| running.task.is_finished())
        {
            self.finish().await;
        }
    }

    /// Cancels the active task, if any, waits for it, and returns the
    /// texts that were queued and will not run (a front end that is
    /// closing says so).
    pub async fn abort_and_settle(&mut self) -> Vec<String> {
        let mut unsent = Vec::new();
        while let Some(running) = &self.running {
            running.cancel.cancel();
            unsent.extend(self.finish().await);
        }
        unsent
    }

    /// Waits for the active task and takes the session back; returns the
    /// queued texts an abort handed back.
    async fn finish(&mut self) -> Vec<String> {
        let Some(mut running) = self.running.take() else {
            return Vec::new();
        };
        let joined = (&mut running.task).await;
        let aborted = running.cancel.is_cancelled();
        let (session, finished) = match joined {
            Ok(done) => done,
            Err(err) => {
                // The task panicked and the session went with it; the log
                // holds everything appended.
                let (what, name) = match running.job {
                    Job::Run => ("run", "prompt"),
                    Job::Command(name) => (name, name),
                };
                let why = format!(
                    "the {what} stopped unexpectedly ({err}); the session log is intact: {}; start etch again with --session {} to go on",
                    self.snapshot.path.display(),
                    self.snapshot.id,
                );
                self.respond(running.command_id, name, Err(why.clone()));
                for abort in running.aborts {
                    self.respond(abort, "abort", Err(why.clone()));
                }
                self.broken = Some(why);
                return Vec::new();
            }
        };
        if let Some(notice) = session.tidy() {
            self.notice(None, &notice);
        }
        let mut session = session;
        if let Some((flags, selection)) = self.pending.take() {
            // What was chosen during the run stays for the next ones;
            // an offer no request took is logged now.
            let unlogged = session
                .switch()
                .take()
                .map(|s| s.records)
                .unwrap_or_default();
            if let Err(err) = session.adopt(flags, selection, &unlogged) {
                self.notice(
                    None,
                    &Notice::warning(format!(
                        "the model chosen during the run could not be recorded: {err}"
                    )),
                );
            }
        }
        self.look_at(&session);
        self.session = Some(session);
        self.log_process_ends();
        match finished {
            Finished::Run(Err(RunError::Cancelled) | Ok(_)) => {}
            Finished::Run(Err(err)) => {
                self.respond(running.command_id.clone(), "prompt", Err(err.to_string()));
            }
            Finished::Command(answer) => {
                if let Job::Command(name) = running.job {
                    self.respond(running.command_id.clone(), name, answer);
                }
            }
        }
        if aborted {
            let mut unsent = Vec::new();
            let update = self.with_queues(|q| unsent = q.take_all());
            if !unsent.is_empty() {
                self.emit(running.command_id.clone(), update);
            }
            for abort in running.aborts {
                self.respond(abort, "abort", Ok(Some(json!({ "unsent": unsent }))));
            }
            return unsent;
        }
        // What was queued after the run's last look at the queues runs
        // next, drained per the queue's mode (steering first).
        let mut prompts = Vec::new();
        let update = self.with_queues(|q| {
            prompts = q.drain_steering();
            if prompts.is_empty() {
                prompts = q.drain_follow_up();
            }
        });
        if !prompts.is_empty()
            && let Some(session) = self.session.take()
        {
            self.emit(running.command_id.clone(), update);
            let prompt = etch_core::Prompt::joined(prompts);
            self.start(session, running.command_id, prompt);
        }
        Vec::new()
    }

    /// The `session_info` event for the current session.
    fn session_info(&self) -> EventBody {
        EventBody::SessionInfo {
            session_id: self.snapshot.id.clone(),
            session_file: self.snapshot.path.to_string_lossy().into_owned(),
            name: None,
        }
    }
}
