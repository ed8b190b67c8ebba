//! The served sessions. Each has a bounded broadcast of [`Frame`]s that
//! every event stream of it subscribes to (a client too slow for it is
//! dropped, never waited for) and the commands sent over HTTP waiting
//! for their responses. Log lines reach the broadcast through the
//! service's writer tap, right after they are on disk, so a stream can
//! send each with its event id; the session's protocol events (deltas
//! too) through its sink.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use axum::http::StatusCode;
use etch_protocol::{Command, EventBody, Response};
use etch_runtime::host::Output;
use etch_runtime::service::{Local, Scope, SessionHandle, SessionService, Spec, Stored, catalog};
use etch_runtime::{Context, Place, RunSettings};
use tokio::sync::{broadcast, oneshot};

use crate::error::{ApiError, ServeError};

/// Frames a session's broadcast holds for its slowest client; one that
/// falls further behind is dropped.
pub const FRAMES_PER_SESSION: usize = 1024;

/// What the server was started with.
#[derive(Debug, Clone)]
pub struct Options {
    /// The token every request but `/health` must carry.
    pub token: String,
    /// The `Origin` values allowed (the server's own URLs).
    pub origins: Vec<String>,
    /// The directories whose sessions are served, canonical; a new
    /// session's cwd must be inside one.
    pub roots: Vec<PathBuf>,
    /// The user's home (configuration, credentials), as every run has.
    pub home: Option<PathBuf>,
    /// `--session-dir`, when given.
    pub session_dir: Option<PathBuf>,
    /// The run options new sessions start from.
    pub defaults: RunSettings,
    /// Runs at once; a prompt beyond them is answered 429.
    pub max_running: usize,
}

/// One frame of a session's stream.
#[derive(Debug, Clone)]
pub enum Frame {
    /// A log line as written, with its event id: durable, replayable.
    Entry {
        /// The event's id (a ULID).
        id: Arc<str>,
        /// The JSON line.
        line: Arc<str>,
    },
    /// A protocol event (JSON): live only, never replayed.
    Live(Arc<str>),
}

/// A served session's outputs, shared by its sink and the routes.
pub struct Channels {
    /// Every frame, to every stream.
    pub frames: broadcast::Sender<Frame>,
    /// Commands sent over HTTP, by the id the server gave them.
    pending: Mutex<HashMap<String, oneshot::Sender<Response>>>,
    /// Whether a run is active (between `agent_start` and `agent_end`).
    pub running: AtomicBool,
    /// Why the session cannot go on, once it broke.
    broken: Mutex<Option<String>>,
}

impl Channels {
    /// Channels with nothing sent yet.
    fn new() -> Arc<Self> {
        Arc::new(Self {
            frames: broadcast::channel(FRAMES_PER_SESSION).0,
            pending: Mutex::default(),
            running: AtomicBool::new(false),
            broken: Mutex::default(),
        })
    }

    /// Takes one output of the session.
    fn take(&self, output: Output) {
        match output {
            Output::Response(response) => {
                let waiting = response.id.as_ref().and_then(|id| {
                    self.pending
                        .lock()
                        .ok()
                        .and_then(|mut pending| pending.remove(id))
                });
                match waiting {
                    Some(tx) => {
                        let _ = tx.send(response);
                    }
                    None => self.live(&Output::Response(response).to_line()),
                }
            }
            Output::Event(event) => {
                match event.body {
                    EventBody::AgentStart => self.running.store(true, Ordering::SeqCst),
                    EventBody::AgentEnd { .. } => self.running.store(false, Ordering::SeqCst),
                    _ => {}
                }
                self.live(&Output::Event(event).to_line());
            }
            Output::Broken(why) => {
                self.live(&serde_json::json!({"type": "broken", "message": why}).to_string());
                if let Ok(mut broken) = self.broken.lock() {
                    *broken = Some(why);
                }
                // Commands still waiting will not be answered.
                if let Ok(mut pending) = self.pending.lock() {
                    pending.clear();
                }
                self.running.store(false, Ordering::SeqCst);
            }
        }
    }

    /// Sends a live frame to every stream (none listening is fine).
    fn live(&self, line: &str) {
        let _ = self.frames.send(Frame::Live(line.into()));
    }
}

/// A served session: its handle and its outputs.
#[derive(Clone)]
pub struct Served {
    /// The handle commands go through.
    pub handle: Local,
    /// Its outputs.
    pub channels: Arc<Channels>,
}

impl Served {
    /// Sends `command` with an id of the server's and waits for its
    /// response; the client's own id, if any, is put back on it.
    pub async fn ask(&self, command: Command) -> Result<Response, ApiError> {
        self.ask_with_id(command)
            .await
            .map(|(_, response)| response)
    }

    /// [`Self::ask`], with the id the command ran under (the id its
    /// events carry).
    pub async fn ask_with_id(&self, mut command: Command) -> Result<(String, Response), ApiError> {
        let theirs = command.id.take();
        let ours = format!("http-{}", ulid::Ulid::new());
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.channels.pending.lock() {
            pending.insert(ours.clone(), tx);
        }
        command.id = Some(ours.clone());
        self.handle.send(command);
        let mut response = rx.await.map_err(|_| {
            let why = self
                .channels
                .broken
                .lock()
                .ok()
                .and_then(|b| b.clone())
                .unwrap_or_else(|| "the session stopped".to_owned());
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "session_broken",
                format!("session {} cannot answer: {why}", self.handle.id()),
            )
        })?;
        response.id = theirs;
        Ok((ours, response))
    }
}

/// The server's state.
pub struct App {
    /// What it was started with.
    pub options: Options,
    /// The service serving the sessions.
    service: tokio::sync::Mutex<SessionService>,
    /// The sessions served now, by id.
    served: RwLock<HashMap<String, Served>>,
    /// The place of each root, loaded once.
    places: Vec<Place>,
    /// Turns true when the server stops; event streams end then.
    stopping: tokio::sync::watch::Sender<bool>,
}

impl App {
    /// The state for `options`; a root whose configuration has errors is
    /// refused (a server must not serve half-configured).
    pub fn new(options: Options) -> Result<Arc<Self>, ServeError> {
        let mut places = Vec::with_capacity(options.roots.len());
        for root in &options.roots {
            let (place, _) = Place::load(
                root,
                options.home.as_deref(),
                options.session_dir.as_deref(),
            )
            .map_err(|errors| ServeError::Config {
                root: root.clone(),
                errors: errors.join("; "),
            })?;
            places.push(place);
        }
        Ok(Arc::new_cyclic(|app: &std::sync::Weak<Self>| {
            let tap_app = app.clone();
            let tap: etch_session::Tap = Arc::new(move |session, appended| {
                let Some(app) = tap_app.upgrade() else { return };
                let frames = app
                    .served
                    .read()
                    .ok()
                    .and_then(|served| served.get(session).map(|s| s.channels.frames.clone()));
                if let Some(frames) = frames {
                    let _ = frames.send(Frame::Entry {
                        id: appended.id.as_str().into(),
                        line: appended.line.as_str().into(),
                    });
                }
            });
            Self {
                options,
                service: tokio::sync::Mutex::new(SessionService::new().with_tap(tap)),
                served: RwLock::default(),
                places,
                stopping: tokio::sync::watch::channel(false).0,
            }
        }))
    }

    /// Ends every event stream (the server is stopping).
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    /// Resolves when the server stops.
    pub fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.stopping.subscribe();
        async move {
            let _ = rx.wait_for(|stopping| *stopping).await;
        }
    }

    /// The places of the served roots.
    pub fn places(&self) -> &[Place] {
        &self.places
    }

    /// The served session `id`, if it is served now.
    pub fn get(&self, id: &str) -> Option<Served> {
        self.served.read().ok()?.get(id).cloned()
    }

    /// How many served sessions are running.
    pub fn running(&self) -> usize {
        self.served.read().map_or(0, |served| {
            served
                .values()
                .filter(|s| s.channels.running.load(Ordering::SeqCst))
                .count()
        })
    }

    /// The file of the stored session `id` in one of the roots.
    pub fn stored(&self, id: &str) -> Option<(&Place, PathBuf)> {
        self.places
            .iter()
            .find_map(|place| catalog::file_of(&place.session_dir, id).map(|file| (place, file)))
    }

    /// The served session `id`, opening it from its root when it is
    /// stored but not served.
    pub async fn session(&self, id: &str) -> Result<Served, ApiError> {
        if let Some(served) = self.get(id) {
            return Ok(served);
        }
        let (place, file) = self.stored(id).ok_or_else(|| ApiError::no_session(id))?;
        let mut service = self.service.lock().await;
        // Another request may have opened it meanwhile.
        if let Some(served) = self.get(id) {
            return Ok(served);
        }
        let settings = self.options.defaults.clone();
        let context = Context::build(place, &settings).map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot_open",
                e.to_string(),
            )
        })?;
        let spec = Spec {
            place: place.clone(),
            settings,
            context,
        };
        let channels = Channels::new();
        let sink = sink(&channels);
        let opened = service
            .open(spec, Stored::Path(&file), Scope::WHOLE, sink)
            .await
            .map_err(|e| {
                let (status, code) = match e {
                    etch_runtime::OpenError::Session(etch_session::SessionError::Busy {
                        ..
                    }) => (StatusCode::CONFLICT, "session_busy"),
                    _ => (StatusCode::INTERNAL_SERVER_ERROR, "cannot_open"),
                };
                ApiError::new(status, code, format!("cannot open session {id}: {e}"))
            })?;
        let served = Served {
            handle: opened.handle,
            channels,
        };
        self.insert(&served);
        Ok(served)
    }

    /// Creates a session in `cwd` with `settings`.
    pub async fn create(&self, cwd: &Path, settings: RunSettings) -> Result<Served, ApiError> {
        let (place, _) = Place::load(
            cwd,
            self.options.home.as_deref(),
            self.options.session_dir.as_deref(),
        )
        .map_err(|errors| {
            ApiError::bad(
                "bad_config",
                format!(
                    "the configuration for {} has errors: {}",
                    cwd.display(),
                    errors.join("; ")
                ),
            )
        })?;
        let context = Context::build(&place, &settings)
            .map_err(|e| ApiError::bad("bad_options", e.to_string()))?;
        let spec = Spec {
            place,
            settings,
            context,
        };
        let channels = Channels::new();
        let sink = sink(&channels);
        let (handle, _) = self
            .service
            .lock()
            .await
            .create(spec, None, "served session".to_owned(), sink)
            .await
            .map_err(|e| match e {
                etch_runtime::OpenError::Usage(m) => ApiError::bad("bad_options", m),
                other => ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "cannot_create",
                    other.to_string(),
                ),
            })?;
        let served = Served { handle, channels };
        self.insert(&served);
        Ok(served)
    }

    /// Records `served` under its id.
    fn insert(&self, served: &Served) {
        if let Ok(mut map) = self.served.write() {
            map.insert(served.handle.id(), served.clone());
        }
    }

    /// Closes every served session (runs aborted, logs left valid).
    pub async fn close_all(&self) {
        if let Ok(mut map) = self.served.write() {
            map.clear();
        }
        self.service.lock().await.close_all().await;
    }
}

/// The sink of a session served with `channels`.
fn sink(channels: &Arc<Channels>) -> etch_runtime::host::Sink {
    let channels = Arc::clone(channels);
    Arc::new(move |output| channels.take(output))
}
