//! The connection to one editor: messages in, lines out, one etch
//! session per ACP session, each served by the runtime's session service
//! and driven through its handle, as the chat's is. A `session/prompt` becomes a prompt command;
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
//! Opening sessions is `open`, turns and outputs are `turn`, what a
//! prompt's text means is `text`. This module must not know where lines
//! come from or go to.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AgentCapabilities, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate,
    CancelNotification, ConfigOptionUpdate, Error, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    RequestId, SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
    SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, StopReason, UnstructuredCommandInput,
};
use etch_protocol::{Command, CommandBody, EventBody, Response, WireMessage};
use etch_runtime::host::{Output, Sink};
use etch_runtime::service::{Local, SessionHandle, SessionService, Spec, Stored, catalog};
use etch_runtime::{Context, Notice, Place, RunSettings};
use etch_tool::Approver;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::permission::{Ask, EditorAsker};
use crate::rpc::{self, Message};
use crate::update::{Updates, chunk};

mod open;
mod text;
mod turn;

use text::{Slash, compacted, prompt_text, slash};

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
    /// The session, served by the runtime's session service.
    handle: Local,
    /// Its tools, prompt and skills (a `/skill:` prompt is expanded
    /// here; the plugins are shut down with the connection).
    context: Context,
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
    /// Its mode: the approval policy the editor picks.
    mode: Arc<crate::mode::ModeApprover>,
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
    /// Serves them.
    service: SessionService,
    /// Host output, tagged with its session.
    outputs: mpsc::UnboundedSender<(String, Output)>,
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
    let (asks, mut asks_rx) = mpsc::unbounded_channel();
    let mut server = Server {
        options,
        out,
        initialized: false,
        sessions: HashMap::new(),
        service: SessionService::new(),
        outputs,
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
                self.notification(&method, params);
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
            "session/resume" => self.resume_session(raw).await,
            "session/set_mode" => self.set_mode(raw),
            "session/list" => self.list_sessions(raw),
            "session/prompt" => return self.prompt(id, raw),
            "session/set_config_option" => return self.set_config_option(id, raw),
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
            .session_capabilities(
                agent_client_protocol_schema::v1::SessionCapabilities::new()
                    .list(agent_client_protocol_schema::v1::SessionListCapabilities::new())
                    .resume(agent_client_protocol_schema::v1::SessionResumeCapabilities::new()),
            )
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
            .mcp_capabilities(McpCapabilities::new().http(true));
        let response = InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(
                Implementation::new("etch", env!("CARGO_PKG_VERSION")).title("etch".to_owned()),
            );
        rpc::to_value(&response)
    }

    /// Aborts every run and closes every session.
    async fn close(&mut self) {
        self.service.close_all().await;
        for (_, live) in self.sessions.drain() {
            live.context.plugins.shutdown().await;
        }
    }
}

impl Live {
    /// The provider and model now, and the other models to offer: the
    /// configured one, when it is another.
    fn host_state(&self) -> (String, String, Vec<String>) {
        let (provider, model) = self.handle.model();
        (provider, model, self.configured.iter().cloned().collect())
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
