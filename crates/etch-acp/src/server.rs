//! The connection to one editor: messages in, lines out, one etch
//! session per ACP session, each served by the runtime's [`Host`] as the
//! chat and `etch rpc` are. A `session/prompt` becomes a prompt command;
//! the host's events become `session/update`s; the run's end answers
//! the request with its stop reason. Gated tools' questions go to the
//! client as `session/request_permission` requests, and its answers are
//! routed back by id.
//!
//! Before `initialize` every request is refused; an unknown method is
//! method-not-found with its id; a line that is not JSON is a parse
//! error, and the connection goes on. When the client goes away, runs
//! are aborted (the logs stay valid) and every session is closed.
//!
//! This module must not know where lines come from or go to.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AgentCapabilities, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate,
    CancelNotification, ConfigOptionUpdate, ContentBlock, EmbeddedResourceResource, Error,
    Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, RequestId, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, StopReason, UnstructuredCommandInput,
};
use etch_protocol::{Command, CommandBody, EventBody, Response, WireMessage};
use etch_runtime::host::{Host, Output, Sink};
use etch_runtime::{Context, Notice, Place, RunSettings, Session, Target};
use etch_tool::Approver;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::permission::{Ask, EditorApprover};
use crate::rpc::{self, Message};
use crate::update::{Updates, chunk};

/// Writes one line to the client (without its newline).
pub type Out = Arc<dyn Fn(String) + Send + Sync>;

/// The place (directory, configuration, session directory) for a
/// session in a directory, with warnings about its configuration; or
/// why there is none.
pub type PlaceFor = Box<dyn Fn(&Path) -> Result<(Place, Vec<String>), String> + Send>;

/// What the front end gives the connection.
pub struct Options {
    /// Provider, model and tool settings from the command line.
    pub settings: RunSettings,
    /// How to find the place for a session's directory.
    pub place_for: PlaceFor,
    /// Where notices go (the binary prints them on stderr): warnings, and
    /// lines that carry their own prefix (the provider header), told
    /// apart by their level so each is printed with one prefix.
    pub notify: Arc<dyn Fn(Notice) + Send + Sync>,
    /// Fired to stop serving (Ctrl-C): runs are aborted as when the
    /// client leaves.
    pub stop: tokio_util::sync::CancellationToken,
}

/// One record from the client.
#[derive(Debug)]
pub enum Input {
    /// A line without its newline.
    Line(Vec<u8>),
    /// A line longer than the reader takes, skipped.
    TooLong,
    /// The input could not be read; treated like its end.
    Failed(String),
}

/// How serving ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Served {
    /// The client closed its end.
    Closed,
    /// Reading from the client failed.
    Failed(String),
    /// The front end stopped it (`Options::stop`).
    Stopped,
}

/// What a command sent to a host answers.
#[derive(Debug)]
enum Pending {
    /// A prompt's acceptance: refused, it fails the ACP request.
    Prompt,
    /// A `/compact` command, ending the turn of that request; `true`
    /// once the client cancelled it.
    Compact(RequestId, bool),
    /// A model switch answering `session/set_config_option`.
    SetModel(RequestId),
    /// Nothing to answer (an abort).
    Quiet,
}

/// A `session/prompt` in progress.
#[derive(Debug)]
struct Turn {
    /// The ACP request to answer.
    request: RequestId,
    /// The id of the host command that runs it.
    command: String,
    /// Whether the client cancelled it.
    cancelled: bool,
    /// Whether the model's last answer was cut by its token limit.
    max_tokens: bool,
}

/// One ACP session.
struct Live {
    /// The session's host.
    host: Host,
    /// Its events as updates.
    updates: Updates,
    /// The prompt running, if any.
    turn: Option<Turn>,
    /// Host commands waiting for their response, by command id.
    pending: HashMap<String, Pending>,
    /// The skills a prompt can name (`/skill:NAME`).
    skills: Vec<(String, String)>,
    /// The model the configuration names (`[provider] model`).
    configured: Option<String>,
    /// Forwards the host's task-ended signal to the connection.
    watcher: tokio::task::JoinHandle<()>,
}

/// The connection's state.
struct Server {
    /// What the front end gave.
    options: Options,
    /// Lines to the client.
    out: Out,
    /// Whether `initialize` was answered.
    initialized: bool,
    /// Sessions by id.
    sessions: HashMap<String, Live>,
    /// Host output, tagged with its session.
    outputs: mpsc::UnboundedSender<(String, Output)>,
    /// Sessions whose host task ended.
    ended: mpsc::UnboundedSender<String>,
    /// Permission questions from gated tools.
    asks: mpsc::UnboundedSender<Ask>,
    /// Our requests waiting for the client's answer, by id.
    waiting: HashMap<i64, oneshot::Sender<Result<Value, Error>>>,
    /// The next id of a request of ours.
    next_request: i64,
    /// The next host command id.
    next_command: u64,
    /// Sessions whose commands are announced once the answer that
    /// names them is out (a client routes updates by session id).
    announce: Vec<String>,
}

/// Serves one client until its input ends.
pub async fn serve(options: Options, mut input: mpsc::Receiver<Input>, out: Out) -> Served {
    let (outputs, mut outputs_rx) = mpsc::unbounded_channel();
    let (ended, mut ended_rx) = mpsc::unbounded_channel();
    let (asks, mut asks_rx) = mpsc::unbounded_channel();
    let mut server = Server {
        options,
        out,
        initialized: false,
        sessions: HashMap::new(),
        outputs,
        ended,
        asks,
        waiting: HashMap::new(),
        next_request: 0,
        next_command: 0,
        announce: Vec::new(),
    };
    let stop = server.options.stop.clone();
    let ended_how = loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => break Served::Stopped,
            Some((id, output)) = outputs_rx.recv() => server.on_output(&id, output),
            Some(id) = ended_rx.recv() => server.settle(&id).await,
            Some(ask) = asks_rx.recv() => server.ask(ask),
            incoming = input.recv() => match incoming {
                Some(Input::Line(line)) => server.on_line(&line).await,
                Some(Input::TooLong) => (server.out)(rpc::error_without_id(&Error::new(
                    -32700,
                    "parse error: the line is too long and was skipped; send one message per line",
                ))),
                Some(Input::Failed(why)) => break Served::Failed(why),
                None => break Served::Closed,
            },
        }
    };
    server.close().await;
    ended_how
}

/// Reads a request's parameters as `T`.
fn params<T: DeserializeOwned>(method: &str, params: Value) -> Result<T, Error> {
    serde_json::from_value(params).map_err(|e| rpc::invalid_params(method, &e))
}

impl Server {
    /// Writes a notification of `update` for session `id`.
    fn update(&self, id: &str, update: SessionUpdate) {
        let notification = SessionNotification::new(id.to_owned(), update);
        (self.out)(rpc::notification("session/update", &notification));
    }

    /// Answers request `id`.
    fn answer(&self, id: &RequestId, result: Result<Value, Error>) {
        (self.out)(rpc::response(id, result));
    }

    /// A fresh host command id.
    fn command_id(&mut self, what: &str) -> String {
        self.next_command += 1;
        format!("acp-{what}-{}", self.next_command)
    }

    /// Handles one line from the client.
    async fn on_line(&mut self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match rpc::parse(line) {
            Err(bad) => (self.out)(match &bad.id {
                Some(id) => rpc::response(id, Err(bad.error)),
                None => rpc::error_without_id(&bad.error),
            }),
            Ok(Message::Request { id, method, params }) => {
                if let Some(result) = self.request(&id, &method, params).await {
                    self.answer(&id, result);
                }
                for session in std::mem::take(&mut self.announce) {
                    self.announce_commands(&session);
                }
            }
            Ok(Message::Notification { method, params }) => {
                self.notification(&method, params).await;
            }
            Ok(Message::Response { id, result }) => {
                let RequestId::Number(n) = id else {
                    return;
                };
                if let Some(reply) = self.waiting.remove(&n) {
                    let _ = reply.send(result);
                }
            }
        }
    }

    /// Serves a request; `None` when it is answered later (a prompt).
    async fn request(
        &mut self,
        id: &RequestId,
        method: &str,
        raw: Value,
    ) -> Option<Result<Value, Error>> {
        if !self.initialized && method != "initialize" {
            return Some(Err(Error::new(
                -32600,
                format!("the connection is not initialized: send initialize before {method}"),
            )));
        }
        let result = match method {
            "initialize" => self.initialize(raw),
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(raw).await,
            "session/load" => self.load_session(raw).await,
            "session/prompt" => return self.prompt(id, raw).await,
            "session/set_config_option" => return self.set_config_option(id, raw).await,
            other => Err(rpc::method_not_found(other)),
        };
        Some(result)
    }

    /// `initialize`: protocol version 1 and what etch really does.
    fn initialize(&mut self, raw: Value) -> Result<Value, Error> {
        let _request: InitializeRequest = params("initialize", raw)?;
        self.initialized = true;
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
            .mcp_capabilities(McpCapabilities::new().http(true));
        let response = InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(
                Implementation::new("etch", env!("CARGO_PKG_VERSION")).title("etch".to_owned()),
            );
        rpc::to_value(&response)
    }

    /// Opens a session in `cwd` with the editor's MCP `servers`
    /// (`resume`: an existing one by id).
    async fn open(
        &mut self,
        cwd: &Path,
        servers: &[McpServer],
        resume: Option<&str>,
    ) -> Result<(String, etch_session::LoadedSession), Error> {
        let method = if resume.is_some() {
            "session/load"
        } else {
            "session/new"
        };
        if !cwd.is_absolute() {
            return Err(rpc::invalid_params(
                method,
                &format!("cwd {} is not an absolute path", cwd.display()),
            ));
        }
        if !cwd.is_dir() {
            return Err(rpc::invalid_params(
                method,
                &format!("cwd {} is not a directory", cwd.display()),
            ));
        }
        let (mut place, warnings) = (self.options.place_for)(cwd).map_err(rpc::internal)?;
        // A session to load is named by its whole id: its file, looked
        // up before anything starts.
        let stored = match resume {
            Some(id) => {
                let file = place.session_dir.join(format!("{id}.jsonl"));
                if id.is_empty()
                    || !id.chars().all(|c| c.is_ascii_alphanumeric())
                    || !file.is_file()
                {
                    return Err(unknown_stored(
                        id,
                        "no session of this directory has exactly this id",
                    ));
                }
                Some((id, file))
            }
            None => None,
        };
        let configured: Vec<String> = place
            .config
            .mcp_servers
            .iter()
            .map(|s| s.name.clone())
            .collect();
        let given = crate::mcp::entries(servers, &configured)
            .map_err(|why| rpc::invalid_params(method, &why))?;
        place.config.mcp_servers.extend(given);
        for warning in warnings {
            (self.options.notify)(Notice::warning(warning));
        }
        let settings = self.options.settings.clone();
        let configured = place.config.provider.model.clone();
        let approver = Arc::new(EditorApprover::new(
            place.config.acp.clone(),
            self.asks.clone(),
        ));
        let gate: Arc<dyn Approver> = approver.clone();
        let context = Context::build_gated(&place, &settings, Some(&gate))
            .map_err(|e| rpc::internal(e.to_string()))?;
        for diagnostic in &context.assembled.diagnostics {
            (self.options.notify)(Notice::warning(diagnostic.clone()));
        }
        let skills: Vec<(String, String)> = context
            .assembled
            .skills
            .iter()
            .map(|s| (s.name.clone(), s.description.clone()))
            .collect();
        let notify_out = Arc::clone(&self.options.notify);
        let mut notify = move |notice: Notice| notify_out(notice);
        let (session, loaded) = match &stored {
            None => {
                let (session, _) = Session::create(
                    place,
                    settings,
                    context,
                    "acp session".to_owned(),
                    &mut notify,
                )
                .await
                .map_err(|e| rpc::internal(e.to_string()))?;
                let loaded = session.load().map_err(|e| rpc::internal(e.to_string()))?;
                (session, loaded)
            }
            Some((id, file)) => Session::open_loaded(
                place,
                settings,
                context,
                Target::Path(file),
                &mut notify,
                &mut etch_core::NoopObserver,
            )
            .await
            .map_err(|e| match e {
                etch_runtime::OpenError::Resolve(_) => unknown_stored(id, &e.to_string()),
                other => rpc::internal(format!("cannot open session {id}: {other}")),
            })
            .and_then(|(session, _)| {
                // The file's own header must name the id asked for (a
                // copied or renamed file does not).
                if session.id() == *id {
                    // Read again: opening closed any call a crash left
                    // open, and the replay must show it closed.
                    let loaded = session.load().map_err(|e| rpc::internal(e.to_string()))?;
                    Ok((session, loaded))
                } else {
                    Err(unknown_stored(id, "no session has exactly this id"))
                }
            })?,
        };
        let id = session.id().to_owned();
        approver.name_session(&id);
        let sink = self.sink(&id);
        let host = Host::new(session, sink);
        let ended = host.task_ended();
        let to = self.ended.clone();
        let tag = id.clone();
        let watcher = tokio::spawn(async move {
            loop {
                ended.notified().await;
                if to.send(tag.clone()).is_err() {
                    break;
                }
            }
        });
        if let Some(old) = self.sessions.remove(&id) {
            old.watcher.abort();
        }
        self.sessions.insert(
            id.clone(),
            Live {
                host,
                updates: Updates::new(cwd.to_path_buf()),
                turn: None,
                pending: HashMap::new(),
                skills,
                configured,
                watcher,
            },
        );
        Ok((id, loaded))
    }

    /// The host sink of session `id`.
    fn sink(&self, id: &str) -> Sink {
        let outputs = self.outputs.clone();
        let id = id.to_owned();
        Arc::new(move |output: Output| {
            let _ = outputs.send((id.clone(), output));
        })
    }

    /// `session/new`.
    async fn new_session(&mut self, raw: Value) -> Result<Value, Error> {
        let request: NewSessionRequest = params("session/new", raw)?;
        let (id, _) = self.open(&request.cwd, &request.mcp_servers, None).await?;
        let response = NewSessionResponse::new(id.clone()).config_options(self.config_options(&id));
        self.announce.push(id);
        rpc::to_value(&response)
    }

    /// `session/load`: the session told again as updates, then the answer.
    async fn load_session(&mut self, raw: Value) -> Result<Value, Error> {
        let request: LoadSessionRequest = params("session/load", raw)?;
        let wanted = request.session_id.0.to_string();
        // A session already open here is told again from its own log: it
        // holds the log's lock, so it cannot be opened a second time.
        let (id, loaded) = if let Some(live) = self.sessions.get_mut(&wanted) {
            live.host.settle().await;
            let Some(session) = live.host.session() else {
                return Err(rpc::internal(format!(
                    "session {wanted} is running a prompt; cancel it (session/cancel) before loading it again"
                )));
            };
            let loaded = session.load().map_err(|e| rpc::internal(e.to_string()))?;
            live.updates = Updates::new(request.cwd.clone());
            (wanted, loaded)
        } else {
            self.open(&request.cwd, &request.mcp_servers, Some(&wanted))
                .await?
        };
        let updates = match self.sessions.get_mut(&id) {
            Some(live) => crate::replay::replay(&loaded, &mut live.updates),
            None => Vec::new(),
        };
        for update in updates {
            self.update(&id, update);
        }
        self.announce.push(id.clone());
        rpc::to_value(&LoadSessionResponse::new().config_options(self.config_options(&id)))
    }

    /// The session's configuration options: the model.
    fn config_options(&self, id: &str) -> Vec<SessionConfigOption> {
        let Some(live) = self.sessions.get(id) else {
            return Vec::new();
        };
        let state = live.host_state();
        let current = state.1.clone();
        let mut models = vec![current.clone()];
        for known in &state.2 {
            if !models.contains(known) {
                models.push(known.clone());
            }
        }
        let options: Vec<SessionConfigSelectOption> = models
            .iter()
            .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone()))
            .collect();
        vec![
            SessionConfigOption::select("model", "Model", current, options)
                .category(SessionConfigOptionCategory::Model)
                .description(format!("The {} model etch asks", state.0)),
        ]
    }

    /// Sends the slash commands and skills session `id` offers.
    fn announce_commands(&self, id: &str) {
        let Some(live) = self.sessions.get(id) else {
            return;
        };
        let mut commands = vec![
            AvailableCommand::new(
                "compact",
                "Summarize the conversation so far to free context",
            )
            .input(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new("what the summary should keep (optional)"),
            )),
        ];
        for (name, description) in &live.skills {
            commands.push(
                AvailableCommand::new(format!("skill:{name}"), description.clone()).input(
                    AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                        "what to do with the skill",
                    )),
                ),
            );
        }
        self.update(
            id,
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
        );
    }

    /// `session/prompt`: starts a run; answered when it ends.
    async fn prompt(&mut self, id: &RequestId, raw: Value) -> Option<Result<Value, Error>> {
        let request: PromptRequest = match params("session/prompt", raw) {
            Ok(request) => request,
            Err(e) => return Some(Err(e)),
        };
        let session = request.session_id.0.to_string();
        let text = match prompt_text(&request.prompt) {
            Ok(text) => text,
            Err(e) => return Some(Err(e)),
        };
        let command = self.command_id("prompt");
        let Some(live) = self.sessions.get_mut(&session) else {
            return Some(Err(unknown_session(&session)));
        };
        // A task that ended gives its session back first (the end signal
        // may still be on its way).
        live.host.settle().await;
        if live.turn.is_some() || live.host.is_busy() {
            return Some(Err(rpc::internal(format!(
                "session {session} is already running a prompt; wait for its answer or send session/cancel"
            ))));
        }
        let body = match slash(&text, &live.skills) {
            Slash::Compact(focus) => {
                live.pending
                    .insert(command.clone(), Pending::Compact(id.clone(), false));
                CommandBody::Compact {
                    custom_instructions: focus,
                    force: false,
                }
            }
            Slash::Skill(name, rest) => {
                let expanded = live
                    .host
                    .session()
                    .map(|s| s.context().expand_skill(&name, &rest));
                match expanded {
                    Some(Ok(message)) => {
                        live.pending.insert(command.clone(), Pending::Prompt);
                        CommandBody::Prompt {
                            message,
                            streaming_behavior: None,
                        }
                    }
                    Some(Err(e)) => return Some(Err(rpc::invalid_params("session/prompt", &e))),
                    None => {
                        return Some(Err(rpc::internal(format!(
                            "session {session} is busy; try again when its run has ended"
                        ))));
                    }
                }
            }
            Slash::None => {
                live.pending.insert(command.clone(), Pending::Prompt);
                CommandBody::Prompt {
                    message: text,
                    streaming_behavior: None,
                }
            }
        };
        if matches!(body, CommandBody::Prompt { .. }) {
            live.turn = Some(Turn {
                request: id.clone(),
                command: command.clone(),
                cancelled: false,
                max_tokens: false,
            });
        }
        live.host
            .handle(Command {
                id: Some(command),
                body,
            })
            .await;
        None
    }

    /// `session/set_config_option`: the model.
    async fn set_config_option(
        &mut self,
        id: &RequestId,
        raw: Value,
    ) -> Option<Result<Value, Error>> {
        let request: SetSessionConfigOptionRequest = match params("session/set_config_option", raw)
        {
            Ok(request) => request,
            Err(e) => return Some(Err(e)),
        };
        let session = request.session_id.0.to_string();
        if request.config_id.0.as_ref() != "model" {
            return Some(Err(rpc::invalid_params(
                "session/set_config_option",
                &format!(
                    "there is no option {:?}; etch offers \"model\"",
                    request.config_id.0
                ),
            )));
        }
        let Some(model) = request.value.as_value_id().map(|v| v.0.to_string()) else {
            return Some(Err(rpc::invalid_params(
                "session/set_config_option",
                &"the model must be one of the option's values",
            )));
        };
        let command = self.command_id("model");
        let Some(live) = self.sessions.get_mut(&session) else {
            return Some(Err(unknown_session(&session)));
        };
        let provider = live.host_state().0;
        live.pending
            .insert(command.clone(), Pending::SetModel(id.clone()));
        live.host
            .handle(Command {
                id: Some(command),
                body: CommandBody::SetModel {
                    provider,
                    model_id: model,
                },
            })
            .await;
        None
    }

    /// Handles a notification.
    async fn notification(&mut self, method: &str, raw: Value) {
        if method != "session/cancel" || !self.initialized {
            return;
        }
        let Ok(cancel) = serde_json::from_value::<CancelNotification>(raw) else {
            return;
        };
        let session = cancel.session_id.0.to_string();
        let command = self.command_id("abort");
        let Some(live) = self.sessions.get_mut(&session) else {
            return;
        };
        if !live.host.is_busy() {
            return;
        }
        if let Some(turn) = &mut live.turn {
            turn.cancelled = true;
        }
        for pending in live.pending.values_mut() {
            if let Pending::Compact(_, cancelled) = pending {
                *cancelled = true;
            }
        }
        live.pending.insert(command.clone(), Pending::Quiet);
        live.host
            .handle(Command {
                id: Some(command),
                body: CommandBody::Abort,
            })
            .await;
    }

    /// Sends a gated tool's question to the client.
    fn ask(&mut self, ask: Ask) {
        // A call stopped while its question waited in the queue (its
        // turn was cancelled) needs no answer; neither do the questions
        // of calls stopped since.
        self.waiting.retain(|_, reply| !reply.is_closed());
        if ask.reply.is_closed() {
            return;
        }
        self.next_request += 1;
        let id = self.next_request;
        self.waiting.insert(id, ask.reply);
        (self.out)(rpc::request(id, "session/request_permission", &ask.request));
    }

    /// Lets session `id`'s host take back its session after a task.
    async fn settle(&mut self, id: &str) {
        if let Some(live) = self.sessions.get_mut(id) {
            live.host.settle().await;
            if let Some(why) = live.host.broken() {
                let why = why.to_owned();
                if let Some(turn) = live.turn.take() {
                    self.answer(&turn.request, Err(rpc::internal(why)));
                }
            }
        }
    }

    /// Handles one output of session `id`'s host.
    fn on_output(&mut self, id: &str, output: Output) {
        match output {
            Output::Response(response) => self.on_response(id, &response),
            Output::Event(event) => {
                let Some(live) = self.sessions.get_mut(id) else {
                    return;
                };
                if let EventBody::MessageEnd {
                    message: WireMessage::Assistant { stop_reason, .. },
                } = &event.body
                    && let Some(turn) = &mut live.turn
                {
                    turn.max_tokens = *stop_reason == Some(etch_protocol::StopReason::Length);
                }
                let updates = live.updates.of(&event.body);
                let ends = match (&event.body, &live.turn) {
                    (EventBody::AgentEnd { error }, Some(turn))
                        if event.id.as_deref() == Some(turn.command.as_str()) =>
                    {
                        Some(error.clone())
                    }
                    _ => None,
                };
                let model_changed = matches!(event.body, EventBody::ModelChanged { .. });
                for update in updates {
                    self.update(id, update);
                }
                if model_changed {
                    let options = self.config_options(id);
                    self.update(
                        id,
                        SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options)),
                    );
                }
                if let Some(error) = ends {
                    self.end_turn(id, error);
                }
            }
        }
    }

    /// Answers the turn of session `id`, which ended with `error`.
    fn end_turn(&mut self, id: &str, error: Option<String>) {
        let Some(turn) = self.sessions.get_mut(id).and_then(|l| l.turn.take()) else {
            return;
        };
        let stop = if turn.cancelled {
            Ok(StopReason::Cancelled)
        } else {
            match error {
                None if turn.max_tokens => Ok(StopReason::MaxTokens),
                None => Ok(StopReason::EndTurn),
                // The loop's round bound and a blocking UserPromptSubmit
                // hook say so in their (tested) texts.
                Some(e) if e.contains("model/tool rounds") => Ok(StopReason::MaxTurnRequests),
                Some(e) if e.contains("blocked by a UserPromptSubmit hook") => {
                    Ok(StopReason::Refusal)
                }
                Some(e) => Err(rpc::internal(e)),
            }
        };
        self.answer(
            &turn.request,
            stop.and_then(|stop| rpc::to_value(&PromptResponse::new(stop))),
        );
    }

    /// Handles a host response to one of our commands.
    fn on_response(&mut self, id: &str, response: &Response) {
        let Some(live) = self.sessions.get_mut(id) else {
            return;
        };
        let Some(pending) = response.id.as_ref().and_then(|c| live.pending.remove(c)) else {
            return;
        };
        let failure = || {
            rpc::internal(
                response
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("{} failed", response.command)),
            )
        };
        match pending {
            Pending::Prompt if !response.success => {
                if let Some(turn) = live.turn.take() {
                    self.answer(&turn.request, Err(failure()));
                }
            }
            Pending::Compact(request, true) => {
                self.answer(
                    &request,
                    rpc::to_value(&PromptResponse::new(StopReason::Cancelled)),
                );
            }
            Pending::Compact(request, false) => {
                if response.success {
                    let said = compacted(response.data.as_ref());
                    self.update(id, SessionUpdate::AgentMessageChunk(chunk(&said)));
                    self.answer(
                        &request,
                        rpc::to_value(&PromptResponse::new(StopReason::EndTurn)),
                    );
                } else {
                    self.answer(&request, Err(failure()));
                }
            }
            Pending::SetModel(request) => {
                if response.success {
                    let options = self.config_options(id);
                    self.answer(
                        &request,
                        rpc::to_value(&SetSessionConfigOptionResponse::new(options)),
                    );
                } else {
                    self.answer(&request, Err(failure()));
                }
            }
            Pending::Prompt | Pending::Quiet => {}
        }
    }

    /// Aborts every run and closes every session.
    async fn close(&mut self) {
        for (_, mut live) in self.sessions.drain() {
            live.watcher.abort();
            let plugins = live
                .host
                .session()
                .map(|s| Arc::clone(&s.context().plugins));
            let _ = live.host.abort_and_settle().await;
            let plugins = plugins.or_else(|| {
                live.host
                    .session()
                    .map(|s| Arc::clone(&s.context().plugins))
            });
            if let Some(plugins) = plugins {
                plugins.shutdown().await;
            }
        }
    }
}

impl Live {
    /// The provider and model now, and the other models to offer: the
    /// configured one, when it is another.
    fn host_state(&self) -> (String, String, Vec<String>) {
        let (provider, model) = self.host.model();
        (
            provider.to_owned(),
            model.to_owned(),
            self.configured.iter().cloned().collect(),
        )
    }
}

/// The error for a session id no stored session has.
fn unknown_stored(id: &str, why: &str) -> Error {
    Error::session_not_found(id.to_owned()).data(json!({
        "sessionId": id,
        "why": format!("{why}; etch sessions lists the sessions of this directory"),
    }))
}

/// The error for a session etch does not serve.
fn unknown_session(id: &str) -> Error {
    Error::session_not_found(id.to_owned()).data(json!({
        "sessionId": id,
        "why": format!("no session {id} is open on this connection; create one with session/new or open it with session/load"),
    }))
}

/// What a prompt's text asks for.
#[derive(Debug, PartialEq, Eq)]
enum Slash {
    /// `/compact [focus]`.
    Compact(Option<String>),
    /// `/skill:NAME [text]`.
    Skill(String, String),
    /// An ordinary prompt.
    None,
}

/// Reads a slash command at the start of `text`.
fn slash(text: &str, skills: &[(String, String)]) -> Slash {
    let Some(rest) = text.trim_start().strip_prefix('/') else {
        return Slash::None;
    };
    let (word, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let tail = tail.trim().to_owned();
    if word == "compact" {
        return Slash::Compact(Some(tail).filter(|t| !t.is_empty()));
    }
    if let Some(name) = word.strip_prefix("skill:")
        && skills.iter().any(|(n, _)| n == name)
    {
        return Slash::Skill(name.to_owned(), tail);
    }
    Slash::None
}

/// What a compaction's answer says, for the editor.
fn compacted(data: Option<&Value>) -> String {
    if let Some(why) = data.and_then(|d| d.get("skipped")).and_then(Value::as_str) {
        // The reason reads "compaction skipped: …"; it is a sentence here.
        let mut chars = why.chars();
        return chars.next().map_or_else(String::new, |first| {
            first.to_uppercase().chain(chars).collect()
        });
    }
    let n = |key: &str| data.and_then(|d| d.get(key)).and_then(Value::as_u64);
    match (n("tokensBefore"), n("tokensAfter")) {
        (Some(before), Some(after)) => {
            format!("Compacted the conversation: about {before} tokens before, {after} after.")
        }
        _ => "Compacted the conversation.".to_owned(),
    }
}

/// A prompt's content as one text: text as it is, resources inlined
/// with their URI, links as mentions. Images and audio are refused
/// (the capabilities say etch does not take them).
fn prompt_text(blocks: &[ContentBlock]) -> Result<String, Error> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("@{}", link.uri)),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(text) => parts.push(format!(
                    "<context uri=\"{}\">\n{}\n</context>",
                    text.uri, text.text
                )),
                EmbeddedResourceResource::BlobResourceContents(blob) => parts.push(format!(
                    "(a binary resource, {}, was attached and left out)",
                    blob.uri
                )),
                _ => {}
            },
            ContentBlock::Image(_) | ContentBlock::Audio(_) => {
                return Err(rpc::invalid_params(
                    "session/prompt",
                    &"etch takes text, resources and links; images and audio are not supported (see promptCapabilities)",
                ));
            }
            _ => {}
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() {
        return Err(rpc::invalid_params(
            "session/prompt",
            &"the prompt is empty",
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slash commands are read only at the start, skills only by name.
    #[test]
    fn slash_commands() {
        let skills = vec![("review".to_owned(), "Reviews".to_owned())];
        assert_eq!(slash("/compact", &skills), Slash::Compact(None));
        assert_eq!(
            slash("/compact keep the plan", &skills),
            Slash::Compact(Some("keep the plan".into()))
        );
        assert_eq!(
            slash("/skill:review src/lib.rs", &skills),
            Slash::Skill("review".into(), "src/lib.rs".into())
        );
        assert_eq!(slash("/skill:nope x", &skills), Slash::None);
        assert_eq!(slash("please /compact", &skills), Slash::None);
    }
}
