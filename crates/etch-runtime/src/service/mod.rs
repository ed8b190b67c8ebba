//! The session service: the one place front ends go to create, open,
//! list and close sessions, for many sessions at once. Each served
//! session is an actor owning its own [`Host`](crate::host::Host)
//! ([`Local`]); a front end holds its handle as a [`SessionHandle`] and
//! drives everything else (prompts, model changes, fork, navigate,
//! compact, export, state, messages) with protocol commands through it,
//! and asks it typed questions (replay, tree, fork points, status, name).
//! The stored sessions of a directory are in `catalog`.
//!
//! This module must not know which front end asked or how anything is
//! drawn; it never prints (what the user should know while opening comes
//! back as [`Notice`]s).

pub mod catalog;
mod handle;
mod local;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use etch_core::Observer;
use etch_protocol::Replay;

pub use handle::{Closed, Later, SessionHandle};
pub use local::Local;

use crate::context::Context;
use crate::error::{Notice, OpenError};
use crate::host::{HtmlRenderer, Sink};
pub use crate::projection::Scope;
use crate::provider::Selection;
use crate::session::{Session, Target};
use crate::settings::{Place, RunSettings};

/// How a session is to run: where, with which flags, tools and prompt.
#[derive(Clone)]
pub struct Spec {
    /// Where it runs.
    pub place: Place,
    /// The run flags.
    pub settings: RunSettings,
    /// Tools and pinned prompt.
    pub context: Context,
}

/// Which stored session to open.
#[derive(Debug, Clone, Copy)]
pub enum Stored<'a> {
    /// An id prefix (unknown or ambiguous prefixes are errors).
    Prefix(&'a str),
    /// Exactly this id, in the place's session directory.
    Id(&'a str),
    /// A session file.
    Path(&'a Path),
    /// The top-level session written to most recently.
    Last,
}

/// A session just opened.
pub struct Opened {
    /// Its handle.
    pub handle: Local,
    /// Its active branch told again, as it is after opening (a call a
    /// crash left open shows closed).
    pub replay: Replay,
    /// What the user should know (loader warnings, the provider header).
    pub notices: Vec<Notice>,
}

/// The sessions served by one process.
#[derive(Default)]
pub struct SessionService {
    /// Every session served, by the id it was opened with.
    served: HashMap<String, Local>,
    /// How `export` writes HTML, when the front end has a page richer
    /// than the escaped plain transcript.
    html: Option<HtmlRenderer>,
    /// Told of every line a served session appends.
    tap: Option<etch_session::Tap>,
}

impl SessionService {
    /// A service serving nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every session's `export` write HTML with `render` (the
    /// chat's page, everything escaped).
    #[must_use]
    pub fn with_html(mut self, render: HtmlRenderer) -> Self {
        self.html = Some(render);
        self
    }

    /// Tells `tap` of every line each session served from now on appends
    /// (a server streaming logs as they grow).
    #[must_use]
    pub fn with_tap(mut self, tap: etch_session::Tap) -> Self {
        self.tap = Some(tap);
        self
    }

    /// Creates a session titled `title` as `spec` says (with `selection`,
    /// the client already chosen for it) and serves it, reporting to
    /// `sink`.
    pub async fn create(
        &mut self,
        spec: Spec,
        selection: Option<Selection>,
        title: String,
        sink: Sink,
    ) -> Result<(Local, Vec<Notice>), OpenError> {
        let Spec {
            place,
            settings,
            context,
        } = spec;
        let mut notices = Vec::new();
        let (session, _) = match selection {
            Some(selection) => {
                Session::create_selected(place, settings, context, selection, title).await?
            }
            None => {
                Session::create(place, settings, context, title, &mut |n| notices.push(n)).await?
            }
        };
        Ok((self.serve(session, sink), notices))
    }

    /// Opens a stored session as `spec` says and serves it, reporting to
    /// `sink`; what opening appended (calls a crash left open closed, a
    /// changed model recorded) is in the replay, told as `scope` says.
    pub async fn open(
        &mut self,
        spec: Spec,
        stored: Stored<'_>,
        scope: Scope,
        sink: Sink,
    ) -> Result<Opened, OpenError> {
        let dir = spec.place.session_dir.clone();
        let file: PathBuf = match stored {
            Stored::Prefix(prefix) => catalog::resolve(&dir, prefix)?,
            Stored::Id(id) => catalog::file_of(&dir, id).ok_or_else(|| {
                OpenError::Usage(format!(
                    "no session of {} has exactly the id {id}; see etch sessions",
                    dir.display()
                ))
            })?,
            Stored::Path(path) => path.to_path_buf(),
            Stored::Last => catalog::last(&dir)?.ok_or_else(|| {
                OpenError::Usage(format!(
                    "there is no session in {} to resume; start one with etch",
                    dir.display()
                ))
            })?,
        };
        let mut notices = Vec::new();
        let mut appended = Counted(0);
        let (session, loaded) = Session::open_loaded(
            spec.place,
            spec.settings,
            spec.context,
            Target::Path(&file),
            &mut |n| notices.push(n),
            &mut appended,
        )
        .await?;
        // The log is read again only when opening wrote to it.
        let replay = if appended.0 == 0 {
            crate::projection::replay_in(&loaded, scope)
        } else {
            crate::projection::replay_in(&session.load()?, scope)
        };
        Ok(Opened {
            handle: self.serve(session, sink),
            replay,
            notices,
        })
    }

    /// Serves an open `session`, reporting to `sink`.
    pub fn serve(&mut self, mut session: Session, sink: Sink) -> Local {
        if self.tap.is_some() {
            session.set_tap(self.tap.clone());
        }
        let id = session.id().to_owned();
        // A handle filed under this id that a fork moved to another
        // session stays served, filed under the one it is on now.
        if let Some(moved) = self.served.remove(&id) {
            let now = moved.id();
            if now != id {
                self.served.insert(now, moved);
            }
        }
        let handle = Local::spawn(session, sink, self.html.clone());
        self.served.insert(id, handle.clone());
        handle
    }

    /// The handle of the served session now called `id`.
    pub fn get(&self, id: &str) -> Option<&Local> {
        self.served
            .get(id)
            .or_else(|| self.served.values().find(|h| h.id() == id))
    }

    /// The ids of the sessions served now.
    pub fn ids(&self) -> Vec<String> {
        self.served.values().map(SessionHandle::id).collect()
    }

    /// Closes the served session now called `id`, if any.
    pub async fn close(&mut self, id: &str) -> Option<Closed> {
        let key = self
            .served
            .iter()
            .find(|(key, h)| key.as_str() == id || h.id() == id)
            .map(|(key, _)| key.clone())?;
        let handle = self.served.remove(&key)?;
        Some(handle.close().await)
    }

    /// Closes every served session.
    pub async fn close_all(&mut self) -> Vec<Closed> {
        let mut closed = Vec::new();
        for (_, handle) in self.served.drain() {
            closed.push(handle.close().await);
        }
        closed
    }
}

/// Counts the lines opening appended.
struct Counted(usize);

impl Observer for Counted {
    fn durable_line(&mut self, _line: &str) {
        self.0 += 1;
    }
}
