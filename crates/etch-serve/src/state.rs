//! The server's state: what it was started with ([`Options`]), the
//! sessions it serves now ([`App`]): found, opened, created, admitted to
//! run, re-keyed after a fork, unloaded when idle.
//!
//! A request holds its session with an [`InUse`] lease; a session with
//! no lease, no stream, no run and no command waiting for longer than
//! `idle_unload` is closed ([`App::sweep`]): its log is all that
//! remains, and the next request opens it again. Leases are taken under
//! the map's read lock and the sweep decides under its write lock, so a
//! request never gets a session the sweep is closing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::http::StatusCode;
use etch_runtime::service::{Scope, SessionHandle, SessionService, Spec, Stored, catalog};
use etch_runtime::{Context, Place, RunSettings};
use tokio::sync::broadcast;

use crate::api::Lifecycle;
use crate::error::{ApiError, ServeError};
pub use crate::served::{Access, Admission, Channels, FRAMES_PER_SESSION, Frame, InUse, Served};
use crate::served::{announce, sink};

/// Seconds a client told 429 should wait.
const RETRY_AFTER_SECS: u32 = 5;

/// The title of a session created here until its first prompt names it.
const UNTITLED: &str = "(new session)";

/// Lifecycle events the server-wide stream holds for its slowest client.
const LIFECYCLE_FRAMES: usize = 1024;

/// What the server was started with.
#[derive(Debug, Clone)]
pub struct Options {
    /// The token every request but `/health` must carry.
    pub token: String,
    /// The server's URL, named in the notes it leaves beside the
    /// sessions it holds.
    pub url: String,
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
    /// How long an unwatched, idle session stays loaded; `None` keeps
    /// every session until the server stops.
    pub idle_unload: Option<Duration>,
    /// Where the server reports what the operator should know (a client
    /// dropped for falling behind); the binary prints it.
    pub notify: Notify,
}

/// Tells the operator something (this crate never prints).
#[derive(Clone)]
pub struct Notify(pub Arc<dyn Fn(&str) + Send + Sync>);

impl Notify {
    /// Reports `message`.
    pub fn say(&self, message: &str) {
        (self.0)(message);
    }
}

impl std::fmt::Debug for Notify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notify")
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
    /// The server-wide lifecycle stream.
    lifecycle: broadcast::Sender<Arc<str>>,
    /// Held while a prompt is admitted, so two prompts never both take
    /// the last free run.
    admission: Mutex<()>,
    /// The contexts shared by sessions with the server's run options,
    /// by directory.
    contexts: Mutex<HashMap<PathBuf, Context>>,
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
                if let Some(served) = app.find(session) {
                    let _ = served.channels.frames.send(Frame::Entry {
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
                lifecycle: broadcast::channel(LIFECYCLE_FRAMES).0,
                admission: Mutex::new(()),
                contexts: Mutex::default(),
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

    /// The server-wide lifecycle stream, from now.
    pub fn lifecycle(&self) -> broadcast::Receiver<Arc<str>> {
        self.lifecycle.subscribe()
    }

    /// The places of the served roots.
    pub fn places(&self) -> &[Place] {
        &self.places
    }

    /// The served session `id`, if it is served now (no lease: for a
    /// look at its state).
    pub fn get(&self, id: &str) -> Option<Served> {
        self.served.read().ok()?.get(id).cloned()
    }

    /// The served session whose handle is now on session `id` (its key,
    /// or, in the moment between a fork and its re-keying, its handle's
    /// id).
    fn find(&self, id: &str) -> Option<Served> {
        let map = self.served.read().ok()?;
        map.get(id)
            .or_else(|| map.values().find(|s| s.handle.id() == id))
            .cloned()
    }

    /// A lease on the served session `id`, if it is served now.
    fn lease(&self, id: &str) -> Option<InUse> {
        let map = self.served.read().ok()?;
        map.get(id).cloned().map(InUse::new)
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

    /// Admits a prompt for `served`: when it runs already, the prompt is
    /// for that run (steer, follow-up, or refused by the session);
    /// otherwise it takes one of the `max_running` runs from now, before
    /// the session even sees it (a run may end before the prompt's
    /// answer comes back), or is refused with 429.
    pub fn admit(&self, served: &Served) -> Result<Admission, ApiError> {
        let _one_at_a_time = self.admission.lock();
        let was_running = served.channels.running.load(Ordering::SeqCst);
        if !was_running {
            if self.running() >= self.options.max_running {
                let mut error = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "overloaded",
                    format!(
                        "{} runs are active, the most this server runs at once; retry later",
                        self.options.max_running
                    ),
                );
                error.retry_after = Some(RETRY_AFTER_SECS);
                return Err(error);
            }
            served.channels.set_running(true);
        }
        Ok(Admission::new(Arc::clone(&served.channels), was_running))
    }

    /// The file of the stored session `id` in one of the roots.
    pub fn stored(&self, id: &str) -> Option<(&Place, PathBuf)> {
        self.places
            .iter()
            .find_map(|place| catalog::file_of(&place.session_dir, id).map(|file| (place, file)))
    }

    /// The served session `id`; a stored one held by another process is
    /// refused (409) with who holds it.
    pub async fn session(&self, id: &str) -> Result<InUse, ApiError> {
        match self.access(id).await? {
            Access::Served(served) => Ok(served),
            Access::Held { by, .. } => Err(ApiError::new(
                StatusCode::CONFLICT,
                "session_held",
                format!(
                    "session {id} is held by {by}; this server shows it read-only (its log, \
                     messages and events), and only its holder can run it"
                ),
            )),
        }
    }

    /// The session `id`: served, opening it from its root when it is
    /// stored but not served, or read-only when another process holds it.
    pub async fn access(&self, id: &str) -> Result<Access, ApiError> {
        if let Some(served) = self.lease(id) {
            return Ok(Access::Served(served));
        }
        let (place, file) = self.stored(id).ok_or_else(|| ApiError::no_session(id))?;
        let mut service = self.service.lock().await;
        // Another request may have opened it meanwhile.
        if let Some(served) = self.lease(id) {
            return Ok(Access::Served(served));
        }
        let settings = self.options.defaults.clone();
        let context = self.context(place, &settings).map_err(|e| {
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
        let channels = Channels::new(self.lifecycle.clone());
        let sink = sink(&channels);
        let opened = match service
            .open(spec, Stored::Path(&file), Scope::WHOLE, sink)
            .await
        {
            Ok(opened) => opened,
            Err(etch_runtime::OpenError::Session(etch_session::SessionError::Busy { .. })) => {
                let by = etch_session::holder::read(&file)
                    .unwrap_or_else(|| "another etch process".to_owned());
                return Ok(Access::Held { file, by });
            }
            Err(e) => {
                return Err(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "cannot_open",
                    format!("cannot open session {id}: {e}"),
                ));
            }
        };
        let served = Served {
            handle: opened.handle,
            channels,
        };
        let lease = self.insert(&served);
        announce(
            &self.lifecycle,
            &Lifecycle::SessionLoaded {
                session_id: id.to_owned(),
            },
        );
        Ok(Access::Served(lease))
    }

    /// The context (tools, plugins, MCP servers, prompt) for a session in
    /// `place` with `settings`. Sessions with the server's own run
    /// options share one per directory, built at the first: a project's
    /// plugins and MCP servers start once per server, not once per
    /// session. Other options get a context of their own.
    fn context(
        &self,
        place: &Place,
        settings: &RunSettings,
    ) -> Result<Context, etch_runtime::OpenError> {
        if *settings != self.options.defaults {
            return Context::build(place, settings);
        }
        let mut contexts = self
            .contexts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(context) = contexts.get(&place.cwd) {
            return Ok(context.clone());
        }
        let context = Context::build(place, settings)?;
        contexts.insert(place.cwd.clone(), context.clone());
        Ok(context)
    }

    /// Creates a session in `cwd` with `settings`.
    pub async fn create(&self, cwd: &Path, settings: RunSettings) -> Result<InUse, ApiError> {
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
        // A session the server could not find again (after an unload or
        // a restart) must not be made: its directory must be a root's.
        if !self
            .places
            .iter()
            .any(|root| root.session_dir == place.session_dir)
        {
            return Err(ApiError::bad(
                "sessions_elsewhere",
                format!(
                    "sessions in {} are kept in {} (its own project), which this server does not \
                     serve; start etch serve with --root {}",
                    cwd.display(),
                    place.session_dir.display(),
                    cwd.display()
                ),
            ));
        }
        let context = self
            .context(&place, &settings)
            .map_err(|e| ApiError::bad("bad_options", e.to_string()))?;
        let spec = Spec {
            place,
            settings,
            context,
        };
        let channels = Channels::new(self.lifecycle.clone());
        let sink = sink(&channels);
        let (handle, _) = self
            .service
            .lock()
            .await
            .create(spec, None, UNTITLED.to_owned(), sink)
            .await
            .map_err(|e| match e {
                etch_runtime::OpenError::Usage(m) => ApiError::bad("bad_options", m),
                other => ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "cannot_create",
                    other.to_string(),
                ),
            })?;
        channels.untitled.store(true, Ordering::SeqCst);
        let served = Served { handle, channels };
        let lease = self.insert(&served);
        announce(
            &self.lifecycle,
            &Lifecycle::SessionCreated {
                session_id: served.handle.id(),
                cwd: Some(cwd.to_path_buf()),
                parent: None,
            },
        );
        Ok(lease)
    }

    /// Records `served` under its id, leaves the note that this server
    /// holds it, and leases it to the caller.
    fn insert(&self, served: &Served) -> InUse {
        let id = served.handle.id();
        if let Ok(mut own) = served.channels.id.write() {
            own.clone_from(&id);
        }
        // Best effort: without the note, `etch resume` still refuses the
        // session (its lock is taken), only less helpfully.
        let _ = etch_session::holder::mark(&served.handle.file(), &self.holder());
        let lease = InUse::new(served.clone());
        if let Ok(mut map) = self.served.write() {
            map.insert(id, served.clone());
        }
        lease
    }

    /// How this server describes itself in the notes it leaves.
    fn holder(&self) -> String {
        format!(
            "etch serve (pid {}, {})",
            std::process::id(),
            self.options.url
        )
    }

    /// Files `served` under the session its handle is on now, when a
    /// command (`fork`) moved it from `old` (the session it was served
    /// as): the old session is no longer served (the next request opens
    /// it again from its log) and its streams end.
    pub fn rekey(&self, old: &str, old_file: &Path, served: &Served) {
        let new = served.handle.id();
        if new == old {
            return;
        }
        served.channels.moved();
        if let Ok(mut map) = self.served.write() {
            map.remove(old);
        }
        etch_session::holder::clear(old_file);
        drop(self.insert(served));
        announce(
            &self.lifecycle,
            &Lifecycle::SessionCreated {
                session_id: new,
                cwd: None,
                parent: Some(old.to_owned()),
            },
        );
    }

    /// Tells the server-wide stream session `id` is now called `name`.
    pub fn named(&self, id: &str, name: &str) {
        announce(
            &self.lifecycle,
            &Lifecycle::SessionNamed {
                session_id: id.to_owned(),
                name: name.to_owned(),
            },
        );
    }

    /// Unloads every session nothing has used for `idle`.
    pub async fn sweep(&self, idle: Duration) {
        // The service's lock first: a request opening a session waits
        // until the one it replaces has let go of its file.
        let mut service = self.service.lock().await;
        let idle_ones: Vec<Served> = match self.served.write() {
            Ok(mut map) => {
                let ids: Vec<String> = map
                    .iter()
                    .filter(|(_, s)| s.channels.idle_for(idle))
                    .map(|(id, _)| id.clone())
                    .collect();
                ids.iter().filter_map(|id| map.remove(id)).collect()
            }
            Err(_) => Vec::new(),
        };
        for served in idle_ones {
            let id = served.handle.id();
            let file = served.handle.file();
            service.close(&id).await;
            etch_session::holder::clear(&file);
            announce(
                &self.lifecycle,
                &Lifecycle::SessionClosed {
                    session_id: id,
                    reason: "idle".to_owned(),
                },
            );
        }
    }

    /// Closes every served session (runs aborted, logs left valid).
    pub async fn close_all(&self) {
        let all: Vec<Served> = match self.served.write() {
            Ok(mut map) => map.drain().map(|(_, s)| s).collect(),
            Err(_) => Vec::new(),
        };
        self.service.lock().await.close_all().await;
        for served in all {
            etch_session::holder::clear(&served.handle.file());
        }
        // The shared contexts' plugins and MCP servers stop with the
        // server (the E-PLUG-04 stop sequence).
        let contexts: Vec<Context> = self
            .contexts
            .lock()
            .map(|mut contexts| contexts.drain().map(|(_, c)| c).collect())
            .unwrap_or_default();
        for context in contexts {
            context.plugins.shutdown().await;
        }
    }
}
