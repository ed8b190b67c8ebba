//! One served session: its handle, and the channels its outputs go
//! through. Each has a bounded broadcast of [`Frame`]s that every event
//! stream of it subscribes to (a client too slow for it is dropped,
//! never waited for) and the commands sent over HTTP waiting for their
//! responses. Log lines reach the broadcast through the service's writer
//! tap, right after they are on disk, so a stream can send each with its
//! event id; the session's protocol events (deltas too) through its
//! sink. A request holds a session with an [`InUse`] lease.
//!
//! This module must not know routes or how sessions are found.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use etch_protocol::{Command, EventBody, Response};
use etch_runtime::host::Output;
use etch_runtime::service::{Local, SessionHandle};
use serde_json::json;
use tokio::sync::{broadcast, oneshot};

use crate::api::Lifecycle;
use crate::error::ApiError;

/// Frames a session's broadcast holds for its slowest client; one that
/// falls further behind is dropped.
pub const FRAMES_PER_SESSION: usize = 1024;

/// The line that ends a run's chat text.
pub const END_OF_RUN: &str = "--- end ---";

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
    /// Whether a run is active (from the prompt's acceptance to
    /// `agent_end`); changed only through [`Self::set_running`].
    pub running: AtomicBool,
    /// The same, for those who wait for it to change (the 9P `state`
    /// file).
    state: tokio::sync::watch::Sender<bool>,
    /// The assistant's answer text as it streams, and a line
    /// [`END_OF_RUN`] when a run ends (the 9P `chat` file).
    pub chat: broadcast::Sender<Arc<str>>,
    /// Whether the chat text sent last ended a line.
    chat_at_line_start: AtomicBool,
    /// Why the session cannot go on, once it broke.
    broken: Mutex<Option<String>>,
    /// The session's id, for the lifecycle events.
    pub(crate) id: RwLock<String>,
    /// The server-wide lifecycle stream.
    lifecycle: broadcast::Sender<Arc<str>>,
    /// Requests holding the session now.
    users: AtomicUsize,
    /// When the last request let go of it or its last run ended.
    last_used: Mutex<Instant>,
    /// Bumped when the handle moves to another session (`fork`): the
    /// streams of the old one end.
    generation: AtomicU64,
    /// Whether the session still has the placeholder title it was
    /// created with; its first prompt names it.
    pub(crate) untitled: AtomicBool,
    /// Held while a command that moves the handle (`fork`) runs.
    pub(crate) moving: Arc<tokio::sync::Mutex<()>>,
}

impl Channels {
    /// Channels with nothing sent yet.
    pub(crate) fn new(lifecycle: broadcast::Sender<Arc<str>>) -> Arc<Self> {
        Arc::new(Self {
            frames: broadcast::channel(FRAMES_PER_SESSION).0,
            pending: Mutex::default(),
            running: AtomicBool::new(false),
            state: tokio::sync::watch::channel(false).0,
            chat: broadcast::channel(FRAMES_PER_SESSION).0,
            chat_at_line_start: AtomicBool::new(true),
            broken: Mutex::default(),
            id: RwLock::default(),
            lifecycle,
            users: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
            generation: AtomicU64::new(0),
            untitled: AtomicBool::new(false),
            moving: Arc::default(),
        })
    }

    /// Takes one output of the session.
    fn take(&self, output: Output) {
        match output {
            Output::Response(response) => {
                // An abort is answered once the session is idle, and may
                // hand queued texts back without any run ending: nothing
                // runs after it.
                if response.command == "abort" && response.success {
                    self.set_running(false);
                    self.touch();
                }
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
                match &event.body {
                    EventBody::AgentStart => {
                        self.set_running(true);
                        self.announce(|session_id| Lifecycle::RunStarted { session_id });
                    }
                    EventBody::MessageUpdate {
                        delta: etch_protocol::Delta::TextDelta { delta },
                    } => self.say(delta),
                    EventBody::AgentEnd { error } => {
                        // Idle before the chat says the run ended: a
                        // reader acting on the end finds the session
                        // idle.
                        self.set_running(false);
                        self.end_chat(error.as_deref());
                        self.touch();
                        self.announce(|session_id| Lifecycle::RunEnded { session_id });
                    }
                    _ => {}
                }
                self.live(&Output::Event(event).to_line());
            }
            Output::Broken(why) => {
                if self.running.load(Ordering::SeqCst) {
                    self.set_running(false);
                    self.end_chat(Some(&why));
                }
                self.live(&json!({"type": "broken", "message": why}).to_string());
                let message = why.clone();
                self.announce(|session_id| Lifecycle::SessionBroken {
                    session_id,
                    message,
                });
                if let Ok(mut broken) = self.broken.lock() {
                    *broken = Some(why);
                }
                // Commands still waiting will not be answered.
                if let Ok(mut pending) = self.pending.lock() {
                    pending.clear();
                }
                self.set_running(false);
            }
        }
    }

    /// Marks a run active or not, for both the flag and its watchers.
    pub(crate) fn set_running(&self, running: bool) {
        // The flag is stored under the watch's lock, so two callers
        // never leave the flag and the watch disagreeing.
        self.state.send_if_modified(|now| {
            self.running.store(running, Ordering::SeqCst);
            let changed = *now != running;
            *now = running;
            changed
        });
    }

    /// Whether a run is active, and a way to wait for that to change.
    pub fn watch_running(&self) -> tokio::sync::watch::Receiver<bool> {
        self.state.subscribe()
    }

    /// Sends `text` to the chat readers, noting whether it ended a line.
    fn say(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.chat_at_line_start
            .store(text.ends_with('\n'), Ordering::SeqCst);
        let _ = self.chat.send(text.into());
    }

    /// Ends the run's chat text: its error, if any, then [`END_OF_RUN`],
    /// each on a line of its own.
    fn end_chat(&self, error: Option<&str>) {
        let mut text = String::new();
        if !self.chat_at_line_start.load(Ordering::SeqCst) {
            text.push('\n');
        }
        if let Some(error) = error {
            text.push_str("error: ");
            text.push_str(&error.replace('\n', " "));
            text.push('\n');
        }
        text.push_str(END_OF_RUN);
        text.push('\n');
        self.say(&text);
    }

    /// Sends a live frame to every stream (none listening is fine).
    fn live(&self, line: &str) {
        let _ = self.frames.send(Frame::Live(line.into()));
    }

    /// Tells the server-wide stream what happened to this session.
    fn announce(&self, event: impl FnOnce(String) -> Lifecycle) {
        let id = self.id.read().map(|id| id.clone()).unwrap_or_default();
        announce(&self.lifecycle, &event(id));
    }

    /// Marks the session used now.
    fn touch(&self) {
        if let Ok(mut last) = self.last_used.lock() {
            *last = Instant::now();
        }
    }

    /// The handle's generation; it changes when the handle moves to
    /// another session.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Marks the handle moved to another session: the streams of the
    /// one it was on end.
    pub(crate) fn moved(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        // Wakes every stream, which then sees the new generation and
        // ends (a stream only looks when a frame comes): the event
        // streams, the chat readers (an empty text, which says nothing)
        // and the state watchers.
        self.live(&json!({"type": "session_moved"}).to_string());
        let _ = self.chat.send(Arc::from(""));
        self.state.send_modify(|_| {});
    }

    /// Whether this is the first prompt of a session created untitled
    /// (true once).
    pub fn first_prompt(&self) -> bool {
        self.untitled.swap(false, Ordering::SeqCst)
    }

    /// How many event streams watch the session.
    pub fn clients(&self) -> usize {
        self.frames.receiver_count()
    }

    /// Whether nothing uses the session and nothing has for `idle` (a
    /// broken session, which answers nothing, counts as idle once no
    /// request holds it).
    pub(crate) fn idle_for(&self, idle: Duration) -> bool {
        let broken = self.broken.lock().is_ok_and(|b| b.is_some());
        if broken {
            return self.users.load(Ordering::SeqCst) == 0;
        }
        self.users.load(Ordering::SeqCst) == 0
            && !self.running.load(Ordering::SeqCst)
            && self.frames.receiver_count() == 0
            && self.pending.lock().is_ok_and(|p| p.is_empty())
            && self
                .last_used
                .lock()
                .is_ok_and(|last| last.elapsed() >= idle)
    }
}

/// Sends one lifecycle event to the server-wide stream.
pub(crate) fn announce(lifecycle: &broadcast::Sender<Arc<str>>, event: &Lifecycle) {
    if let Ok(json) = serde_json::to_string(event) {
        let _ = lifecycle.send(json.into());
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
        if let Some(why) = self.channels.broken.lock().ok().and_then(|b| b.clone()) {
            // A broken session answers nothing: say so now, not never.
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "session_broken",
                format!("session {} cannot answer: {why}", self.handle.id()),
            ));
        }
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

/// A request's hold on a served session: while any is held, the session
/// is not unloaded.
pub struct InUse(Served);

impl InUse {
    /// Takes a lease on `served`.
    pub(crate) fn new(served: Served) -> Self {
        served.channels.users.fetch_add(1, Ordering::SeqCst);
        Self(served)
    }
}

impl std::ops::Deref for InUse {
    type Target = Served;
    fn deref(&self) -> &Served {
        &self.0
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.channels.touch();
        self.0.channels.users.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A run taken for a prompt by [`crate::state::App::admit`]: given back
/// when dropped, unless the session took the prompt ([`Self::keep`]) —
/// so a refused prompt, an error or a client that went away never keeps
/// a run slot.
pub struct Admission {
    /// The session's channels.
    channels: Arc<Channels>,
    /// Whether the session ran already (then nothing was taken).
    pub was_running: bool,
    /// Whether the slot stays taken.
    kept: bool,
}

impl Admission {
    /// An admission for `channels`.
    pub(crate) fn new(channels: Arc<Channels>, was_running: bool) -> Self {
        Self {
            channels,
            was_running,
            kept: false,
        }
    }

    /// The session took the prompt: its run holds the slot now.
    pub fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if !self.kept && !self.was_running {
            self.channels.set_running(false);
        }
    }
}

/// How a request may reach a session.
pub enum Access {
    /// Served by this server.
    Served(InUse),
    /// Stored in a served root but held by another process: readable
    /// from its log only.
    Held {
        /// The session file.
        file: PathBuf,
        /// Who holds it, as its note says (or "another etch process").
        by: String,
    },
}

/// The sink of a session served with `channels`.
pub(crate) fn sink(channels: &Arc<Channels>) -> etch_runtime::host::Sink {
    let channels = Arc::clone(channels);
    Arc::new(move |output| channels.take(output))
}
