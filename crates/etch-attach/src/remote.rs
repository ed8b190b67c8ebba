//! [`attach`]: a served session found and read ([`Attached`]), then
//! driven through [`Remote`], the [`SessionHandle`] over HTTP.
//!
//! The remote's event stream follows the session live (a chat attached
//! sees the runs any client starts, as it happens); when the connection
//! breaks it reconnects after the last log entry it saw, so the server
//! resumes it without a gap. Log entries themselves are not passed on:
//! what the chat draws comes from the live events, as for a local
//! session.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use etch_protocol::{Command, CommandBody, Event, EventBody, ForkPoint, Replay, Response, TreeRow};
use etch_runtime::host::{Output, Sink};
use etch_runtime::service::{Closed, Later, Scope, SessionHandle};
use etch_runtime::{Context, Place};
use etch_session::LoadedSession;
use serde_json::{Value, json};

use crate::error::AttachError;
use crate::frames::Framer;
use crate::target::Target;

/// How long to wait before reconnecting a broken event stream.
const RECONNECT: Duration = Duration::from_millis(500);

/// Reconnects tried in a row before the session is taken as lost.
const RECONNECTS: u32 = 20;

/// The server's side of one session, as HTTP.
#[derive(Clone)]
struct Api {
    /// `http://HOST:PORT`.
    base: String,
    /// `Bearer TOKEN`.
    auth: String,
    /// The HTTP client.
    client: reqwest::Client,
}

impl Api {
    /// The error for `why` at this server.
    fn error(&self, why: impl std::fmt::Display) -> AttachError {
        AttachError::Server {
            base: self.base.clone(),
            why: why.to_string(),
        }
    }

    /// `method path` with a JSON `body`; the JSON answer of a 2xx, or the
    /// server's error message.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, AttachError> {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("Authorization", &self.auth);
        if let Some(body) = body {
            request = request
                .header("Content-Type", "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.map_err(|e| self.error(e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| self.error(e))?;
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if status.is_success() {
            Ok(value)
        } else {
            let message = value["error"]["message"]
                .as_str()
                .map_or_else(|| format!("{status}: {value}"), str::to_owned);
            Err(self.error(format!("{path}: {message}")))
        }
    }

    /// The session's log, whole.
    async fn log(&self, id: &str, file: &std::path::Path) -> Result<LoadedSession, String> {
        let response = self
            .client
            .get(format!("{}/v1/sessions/{id}/log", self.base))
            .header("Authorization", &self.auth)
            .send()
            .await
            .map_err(|e| self.error(e).to_string())?;
        if !response.status().is_success() {
            return Err(self
                .error(format!(
                    "cannot read the log of {id}: {}",
                    response.status()
                ))
                .to_string());
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.error(e).to_string())?;
        etch_session::parse_session(file, &bytes).map_err(|e| e.to_string())
    }
}

/// A served session, found and read, not yet driven.
pub struct Attached {
    /// Its server.
    api: Api,
    /// Its id.
    pub id: String,
    /// Its file on the server's machine.
    pub file: PathBuf,
    /// The provider it runs on.
    pub provider: String,
    /// Its model.
    pub model: String,
    /// Its reasoning effort, if set.
    pub thinking: Option<String>,
    /// Its log as it was when attached.
    pub log: LoadedSession,
}

/// Finds the session `target` names on its server (creating one there
/// when it names none) and reads its state and log.
pub async fn attach(target: &Target) -> Result<Attached, AttachError> {
    let client =
        etch_provider::http::client_for(&target.base).map_err(|e| AttachError::Server {
            base: target.base.clone(),
            why: e.to_string(),
        })?;
    let api = Api {
        base: target.base.clone(),
        auth: format!("Bearer {}", target.token),
        client,
    };
    let id = match &target.session {
        Some(id) => id.clone(),
        None => api
            .call(reqwest::Method::POST, "/v1/sessions", Some(&json!({})))
            .await?["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| api.error("POST /v1/sessions answered without an id"))?,
    };
    let state = api
        .call(
            reqwest::Method::POST,
            &format!("/v1/sessions/{id}/commands"),
            Some(&json!({"type": "get_state"})),
        )
        .await?;
    let data = &state["data"];
    let text = |key: &str| data[key].as_str().unwrap_or_default().to_owned();
    let file = PathBuf::from(text("sessionFile"));
    let log = api.log(&id, &file).await.map_err(|e| api.error(e))?;
    Ok(Attached {
        id,
        file,
        provider: text("provider"),
        // `{"provider","id","name"}` (Pi's shape); a plain name from an
        // older server.
        model: data["model"]["id"]
            .as_str()
            .or_else(|| data["model"].as_str())
            .unwrap_or_default()
            .to_owned(),
        thinking: data["thinkingLevel"].as_str().map(str::to_owned),
        log,
        api,
    })
}

impl Attached {
    /// Drives the session, its outputs going to `sink` from now on.
    /// Call it within a Tokio runtime.
    pub fn serve(self, sink: Sink) -> Remote {
        let inner = Arc::new(Inner {
            api: self.api,
            view: RwLock::new(View {
                id: self.id,
                file: self.file,
                provider: self.provider,
                model: self.model,
                thinking: self.thinking,
                broken: None,
            }),
            sink,
            stream: Mutex::new(None),
        });
        // From the log's last entry: whatever happened since it was read
        // (a run's start, say) comes too.
        Inner::follow(&inner, self.log.events.last().map(|e| e.id.clone()));
        Remote { inner }
    }
}

/// What the remote knows of its session now.
struct View {
    /// The session id (a fork moves the handle to the new one).
    id: String,
    /// Its file on the server's machine.
    file: PathBuf,
    /// Provider.
    provider: String,
    /// Model.
    model: String,
    /// Reasoning effort.
    thinking: Option<String>,
    /// Why it cannot go on.
    broken: Option<String>,
}

/// The remote's shared state.
struct Inner {
    /// The server.
    api: Api,
    /// The session as known.
    view: RwLock<View>,
    /// Where outputs go.
    sink: Sink,
    /// The task following the event stream.
    stream: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Inner {
    /// The view, read.
    fn view(&self) -> std::sync::RwLockReadGuard<'_, View> {
        self.view.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The view, to change.
    fn view_mut(&self) -> std::sync::RwLockWriteGuard<'_, View> {
        self.view.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// (Re)starts following the session's event stream, after the entry
    /// `after` when given; a stream already followed is stopped.
    fn follow(this: &Arc<Self>, after: Option<String>) {
        let inner = Arc::clone(this);
        let task = tokio::spawn(async move { inner.stream_loop(after).await });
        let mut stream = this.stream.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = stream.replace(task) {
            old.abort();
        }
    }

    /// Reads the event stream, reconnecting after breaks, until the
    /// session is gone or the task is stopped.
    async fn stream_loop(&self, mut after: Option<String>) {
        let mut failures = 0;
        loop {
            let id = self.view().id.clone();
            match self.stream_once(&id, &mut after).await {
                Ok(()) => failures = 0,
                Err(why) => {
                    failures += 1;
                    if failures > RECONNECTS {
                        self.view_mut().broken = Some(why.clone());
                        (self.sink)(Output::Broken(format!(
                            "lost the session {id} on {}: {why}",
                            self.api.base
                        )));
                        return;
                    }
                }
            }
            tokio::time::sleep(RECONNECT).await;
        }
    }

    /// One connection to the event stream: live events to the sink until
    /// it ends; `after` follows the last entry seen.
    async fn stream_once(&self, id: &str, after: &mut Option<String>) -> Result<(), String> {
        let mut request = self
            .api
            .client
            .get(format!("{}/v1/sessions/{id}/events", self.api.base))
            .header("Authorization", &self.api.auth);
        if let Some(last) = after.as_deref() {
            request = request.header("Last-Event-ID", last);
        }
        let mut response = request.send().await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("its event stream answered {}", response.status()));
        }
        let mut framer = Framer::default();
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Ok(()),
                Err(e) => return Err(e.to_string()),
            };
            for frame in framer.push(&chunk) {
                match frame.event.as_deref() {
                    Some("entry") => *after = frame.id,
                    Some("live") => self.live(&frame.data),
                    _ => {}
                }
            }
        }
    }

    /// One live frame: an event of the session's, passed on.
    fn live(&self, data: &str) {
        let Ok(value) = serde_json::from_str::<Value>(data) else {
            return;
        };
        match value["type"].as_str() {
            // Another client's command's answer: not ours.
            Some("response") => {}
            Some("broken") => {
                let why = value["message"].as_str().unwrap_or("broken").to_owned();
                self.view_mut().broken = Some(why.clone());
                (self.sink)(Output::Broken(why));
            }
            _ => {
                if let Ok(event) = serde_json::from_value::<Event>(value) {
                    self.noted(&event);
                    (self.sink)(Output::Event(event));
                }
            }
        }
    }

    /// Keeps the view up to date with `event`.
    fn noted(&self, event: &Event) {
        match &event.body {
            EventBody::ModelChanged { provider, model } => {
                let mut view = self.view_mut();
                view.provider.clone_from(provider);
                view.model.clone_from(model);
            }
            EventBody::ThinkingLevelChanged { level } => {
                self.view_mut().thinking = serde_json::to_value(level)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned));
            }
            _ => {}
        }
    }

    /// Sends `command` and hands its response to the sink; a fork moves
    /// the handle (and its stream) to the new session.
    async fn run(this: Arc<Self>, command: Command) {
        let id = this.view().id.clone();
        let name = command.body.name();
        let fork = matches!(command.body, CommandBody::Fork { .. });
        let body = serde_json::to_value(&command).unwrap_or(Value::Null);
        let answered = this
            .api
            .call(
                reqwest::Method::POST,
                &format!("/v1/sessions/{id}/commands"),
                Some(&body),
            )
            .await
            .and_then(|value| {
                serde_json::from_value::<Response>(value).map_err(|e| this.api.error(e))
            });
        let response =
            answered.unwrap_or_else(|e| Response::err(command.id.clone(), name, e.to_string()));
        if fork && response.success {
            let data = response.data.clone().unwrap_or(Value::Null);
            if let Some(new) = data["sessionId"].as_str() {
                {
                    let mut view = this.view_mut();
                    new.clone_into(&mut view.id);
                    if let Some(file) = data["sessionFile"].as_str() {
                        view.file = PathBuf::from(file);
                    }
                }
                Self::follow(&this, None);
            }
        }
        (this.sink)(Output::Response(response));
    }

    /// The session's log, read now, projected by `project`.
    fn read<T: Send + 'static>(
        this: &Arc<Self>,
        project: impl FnOnce(&LoadedSession) -> T + Send + 'static,
    ) -> Later<Result<T, String>> {
        let inner = Arc::clone(this);
        Box::pin(async move {
            let (id, file) = {
                let view = inner.view();
                (view.id.clone(), view.file.clone())
            };
            let loaded = inner.api.log(&id, &file).await?;
            Ok(project(&loaded))
        })
    }
}

/// A session `etch serve` holds, driven over HTTP.
pub struct Remote {
    /// Shared with its tasks.
    inner: Arc<Inner>,
}

impl SessionHandle for Remote {
    fn id(&self) -> String {
        self.inner.view().id.clone()
    }

    fn file(&self) -> PathBuf {
        self.inner.view().file.clone()
    }

    fn model(&self) -> (String, String) {
        let view = self.inner.view();
        (view.provider.clone(), view.model.clone())
    }

    fn thinking(&self) -> Option<String> {
        self.inner.view().thinking.clone()
    }

    fn broken(&self) -> Option<String> {
        self.inner.view().broken.clone()
    }

    fn send(&self, command: Command) {
        tokio::spawn(Inner::run(Arc::clone(&self.inner), command));
    }

    fn handled(&self, command: Command) -> Later<()> {
        Box::pin(Inner::run(Arc::clone(&self.inner), command))
    }

    fn replay(&self, scope: Scope) -> Later<Result<Replay, String>> {
        Inner::read(&self.inner, move |loaded| {
            etch_runtime::projection::replay_in(loaded, scope)
        })
    }

    fn tree(&self) -> Later<Result<Vec<TreeRow>, String>> {
        Inner::read(&self.inner, etch_runtime::projection::tree)
    }

    fn fork_points(&self) -> Later<Result<Vec<ForkPoint>, String>> {
        Inner::read(&self.inner, etch_runtime::projection::fork_points)
    }

    fn status(&self) -> Later<Result<String, String>> {
        let base = self.inner.api.base.clone();
        let status = Inner::read(&self.inner, |loaded| {
            etch_runtime::report::status_text(&etch_session::session_stats(loaded), &loaded.path)
        });
        Box::pin(async move {
            let text = status.await?;
            Ok(format!("{text}\nserved by etch serve at {base}"))
        })
    }

    fn rename(&self, title: String) -> Later<Result<String, String>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let id = inner.view().id.clone();
            let named = inner
                .api
                .call(
                    reqwest::Method::POST,
                    &format!("/v1/sessions/{id}/name"),
                    Some(&json!({ "name": title })),
                )
                .await
                .map_err(|e| e.to_string())?;
            Ok(named["name"].as_str().unwrap_or_default().to_owned())
        })
    }

    fn server_models(&self) -> Later<Result<Vec<String>, String>> {
        let base = self.inner.api.base.clone();
        Box::pin(async move {
            Err(format!(
                "the models are listed by the machine that runs the session ({base}); \
                 name one with /model NAME"
            ))
        })
    }

    fn reload(&self, _place: Place, _context: Context) {
        // The server reads its own configuration; nothing here to take.
    }

    fn close(&self) -> Later<Closed> {
        if let Some(task) = self
            .inner
            .stream
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
        // The session goes on at the server (others may watch it); only
        // this chat lets go.
        Box::pin(async { Closed::default() })
    }
}
