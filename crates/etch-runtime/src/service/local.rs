//! The in-process [`SessionHandle`]: one session actor per session, a
//! task that owns the session's [`Host`] and takes requests from a
//! channel one at a time, so any number of sessions are served at once
//! from one process and each log has exactly one writer. The actor also
//! takes the session back from the host whenever a run or long command
//! ends (what a front end had to do itself before), so a handle is only
//! a sender and a shared view of what the session is now.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use etch_protocol::{Command, ForkPoint, Replay, TreeRow};
use etch_session::load_session;
use tokio::sync::{mpsc, oneshot};

use super::handle::{Closed, Later, SessionHandle};
use crate::context::Context;
use crate::host::{Host, HtmlRenderer, Output, Sink};
use crate::projection::Scope;
use crate::session::Session;
use crate::settings::Place;

/// What a handle knows about its session without asking the actor.
#[derive(Debug, Clone, Default)]
struct View {
    /// Session id.
    id: String,
    /// Session file.
    file: PathBuf,
    /// Provider and model.
    model: (String, String),
    /// Reasoning effort asked for.
    thinking: Option<String>,
    /// The session directory (for naming).
    dir: PathBuf,
    /// Why the session cannot go on.
    broken: Option<String>,
}

/// A request to the actor.
enum Request {
    /// A protocol command, and who waits for it to be taken.
    Command(Command, Option<oneshot::Sender<()>>),
    /// New configuration and context for later runs.
    Reload(Box<(Place, Context)>),
    /// Stop and hand back what is left.
    Close(oneshot::Sender<Closed>),
}

/// An in-process handle: cheap to clone, every clone drives the same
/// session.
#[derive(Clone)]
pub struct Local {
    /// The actor's inbox.
    requests: mpsc::UnboundedSender<Request>,
    /// The session as the actor last saw it.
    view: Arc<Mutex<View>>,
    /// The session's model client (for the server's model list).
    client: Arc<Mutex<Arc<dyn etch_model::ModelClient>>>,
}

impl Local {
    /// Serves `session` on a task of its own, reporting to `sink`;
    /// `export` writes HTML with `html` when given.
    pub fn spawn(session: Session, sink: Sink, html: Option<HtmlRenderer>) -> Self {
        let view = Arc::new(Mutex::new(View {
            dir: session.place().session_dir.clone(),
            ..View::default()
        }));
        let client = Arc::new(Mutex::new(Arc::clone(&session.selection().client)));
        let mut host = Host::new(session, Arc::clone(&sink));
        if let Some(html) = html {
            host.set_html_renderer(html);
        }
        let (requests, inbox) = mpsc::unbounded_channel();
        let actor = Actor {
            host,
            sink,
            view: Arc::clone(&view),
            client: Arc::clone(&client),
        };
        actor.look();
        tokio::spawn(actor.serve(inbox));
        Self {
            requests,
            view,
            client,
        }
    }

    /// The view now.
    fn view(&self) -> View {
        self.view
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Reads the session's log on a blocking thread and answers with
    /// `read`'s result.
    fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&etch_session::LoadedSession) -> T + Send + 'static,
    ) -> Later<Result<T, String>> {
        let file = self.view().file;
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                load_session(&file)
                    .map(|loaded| read(&loaded))
                    .map_err(|e| e.to_string())
            })
            .await
            .map_err(|e| format!("reading the session failed: {e}"))?
        })
    }
}

impl SessionHandle for Local {
    fn id(&self) -> String {
        self.view().id
    }

    fn file(&self) -> PathBuf {
        self.view().file
    }

    fn model(&self) -> (String, String) {
        self.view().model
    }

    fn thinking(&self) -> Option<String> {
        self.view().thinking
    }

    fn broken(&self) -> Option<String> {
        self.view().broken
    }

    fn send(&self, command: Command) {
        // An actor that is gone has said why (`broken`).
        let _ = self.requests.send(Request::Command(command, None));
    }

    fn handled(&self, command: Command) -> Later<()> {
        let (taken, answer) = oneshot::channel();
        let sent = self
            .requests
            .send(Request::Command(command, Some(taken)))
            .is_ok();
        Box::pin(async move {
            if sent {
                let _ = answer.await;
            }
        })
    }

    fn replay(&self, scope: Scope) -> Later<Result<Replay, String>> {
        self.read(move |loaded| crate::projection::replay_in(loaded, scope))
    }

    fn tree(&self) -> Later<Result<Vec<TreeRow>, String>> {
        self.read(crate::projection::tree)
    }

    fn fork_points(&self) -> Later<Result<Vec<ForkPoint>, String>> {
        self.read(crate::projection::fork_points)
    }

    fn status(&self) -> Later<Result<String, String>> {
        self.read(|loaded| {
            crate::report::status_text(&etch_session::session_stats(loaded), &loaded.path)
        })
    }

    fn rename(&self, title: String) -> Later<Result<String, String>> {
        let view = self.view();
        Box::pin(async move {
            super::catalog::rename(&view.dir, &view.id, &title).map_err(|e| e.to_string())
        })
    }

    fn server_models(&self) -> Later<Result<Vec<String>, String>> {
        let client = Arc::clone(&self.client.lock().unwrap_or_else(PoisonError::into_inner));
        Box::pin(async move { client.list_models().await.map_err(|e| e.to_string()) })
    }

    fn reload(&self, place: Place, context: Context) {
        let _ = self
            .requests
            .send(Request::Reload(Box::new((place, context))));
    }

    fn close(&self) -> Later<Closed> {
        let (reply, answer) = oneshot::channel();
        let sent = self.requests.send(Request::Close(reply)).is_ok();
        Box::pin(async move {
            if sent {
                answer.await.unwrap_or_default()
            } else {
                Closed::default()
            }
        })
    }
}

/// The task serving one session.
struct Actor {
    /// The session's host.
    host: Host,
    /// Where its output goes.
    sink: Sink,
    /// What handles see.
    view: Arc<Mutex<View>>,
    /// The client handles ask for models.
    client: Arc<Mutex<Arc<dyn etch_model::ModelClient>>>,
}

impl Actor {
    /// Takes requests until every handle is gone or one closes the
    /// session; a run that ends is settled at once.
    async fn serve(mut self, mut inbox: mpsc::UnboundedReceiver<Request>) {
        let ended = self.host.task_ended();
        let mut processes = self.host.process_notices();
        loop {
            let process_notice = async {
                match processes.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = ended.notified() => self.host.settle().await,
                Some(notice) = process_notice => self.host.process_notice(notice),
                request = inbox.recv() => match request {
                    Some(Request::Command(command, taken)) => {
                        // A run that has just ended gives the session back
                        // first, so a prompt sent right after its answer
                        // starts a run instead of being refused.
                        self.host.settle().await;
                        self.host.handle(command).await;
                        if let Some(taken) = taken {
                            let _ = taken.send(());
                        }
                    }
                    Some(Request::Reload(new)) => {
                        let (place, context) = *new;
                        self.host.settle().await;
                        if let Some(session) = self.host.session_mut() {
                            session.reload(place, context);
                        }
                        self.host.refresh();
                    }
                    Some(Request::Close(reply)) => {
                        let unsent = self.host.abort_and_settle().await;
                        self.host.close_processes().await;
                        let settings = self.host.session().map(|s| s.settings().clone());
                        let _ = reply.send(Closed { unsent, settings });
                        return;
                    }
                    None => {
                        self.host.abort_and_settle().await;
                        self.host.close_processes().await;
                        return;
                    }
                },
            }
            self.look();
            if let Some(why) = self.host.broken() {
                // Said after the view holds it, so a front end that
                // checks `broken` on this output finds it.
                (self.sink)(Output::Broken(why.to_owned()));
                // Its background processes end with it.
                self.host.close_processes().await;
                // Only closing is answered from now on.
                while let Some(request) = inbox.recv().await {
                    if let Request::Close(reply) = request {
                        let _ = reply.send(Closed::default());
                        return;
                    }
                }
                return;
            }
        }
    }

    /// Updates what handles see.
    fn look(&self) {
        let (provider, model) = self.host.model();
        let mut view = self.view.lock().unwrap_or_else(PoisonError::into_inner);
        view.model = (provider.to_owned(), model.to_owned());
        let (id, file) = self.host.current();
        id.clone_into(&mut view.id);
        view.file = file.to_path_buf();
        view.thinking = self.host.thinking().map(str::to_owned);
        view.broken = self.host.broken().map(str::to_owned);
        drop(view);
        *self.client.lock().unwrap_or_else(PoisonError::into_inner) = self.host.client();
    }
}
