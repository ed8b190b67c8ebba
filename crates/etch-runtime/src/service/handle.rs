//! The front end's hold on one served session, as a trait: the chat and
//! `etch acp` drive sessions only through it, so a handle that speaks to
//! a session in another process (`etch serve`, `etch chat --attach`) can
//! take the place of the in-process one ([`super::Local`]) without
//! touching them. Commands go in with [`SessionHandle::send`] and their
//! responses and events come back at the sink the session was opened
//! with; the other methods are typed questions answered from the log.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use etch_protocol::{Command, ForkPoint, Replay, TreeRow};

use crate::projection::Scope;

use crate::context::Context;
use crate::settings::{Place, RunSettings};

/// A handle's answer, later.
pub type Later<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What closing a session hands back.
#[derive(Debug, Default)]
pub struct Closed {
    /// Texts queued for the session that will not run now.
    pub unsent: Vec<String>,
    /// The settings it had reached (model and reasoning effort as last
    /// switched), for the session a front end opens next; `None` when
    /// they are not known here (a session that failed beyond repair).
    pub settings: Option<RunSettings>,
}

/// One served session.
pub trait SessionHandle: Send + Sync {
    /// The session id now (`fork`, `new_session` and `switch_session`
    /// move a handle to another session).
    fn id(&self) -> String;

    /// The session file now.
    fn file(&self) -> PathBuf;

    /// The provider and model it uses now.
    fn model(&self) -> (String, String);

    /// The reasoning effort asked for, if any.
    fn thinking(&self) -> Option<String>;

    /// Why the session cannot go on, once a task failed beyond repair;
    /// the front end should close it and say so.
    fn broken(&self) -> Option<String>;

    /// Sends a command; its response and events come to the sink.
    fn send(&self, command: Command);

    /// Sends a command and resolves once the session has taken it: a
    /// quick command is answered then, a run or long command started. A
    /// front end whose own output must stay in order with the session's
    /// (`etch rpc` answering an unreadable line) waits for it.
    fn handled(&self, command: Command) -> Later<()>;

    /// The active branch told again, as much as `scope` says, with
    /// counters.
    fn replay(&self, scope: Scope) -> Later<Result<Replay, String>>;

    /// The conversation tree.
    fn tree(&self) -> Later<Result<Vec<TreeRow>, String>>;

    /// The prompts of the active branch a fork can start before.
    fn fork_points(&self) -> Later<Result<Vec<ForkPoint>, String>>;

    /// The `/status` report.
    fn status(&self) -> Later<Result<String, String>>;

    /// Names the session; the name as stored.
    fn rename(&self, title: String) -> Later<Result<String, String>>;

    /// The models the session's server offers.
    fn server_models(&self) -> Later<Result<Vec<String>, String>>;

    /// Takes a newly read configuration and context (`/reload`); the next
    /// run uses them, the model stays. A remote handle asks its server to
    /// read its own again.
    fn reload(&self, place: Place, context: Context);

    /// Stops what runs and lets the session go (its lock too).
    fn close(&self) -> Later<Closed>;
}
