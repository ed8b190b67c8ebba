//! `etch serve`: many sessions served over HTTP and server-sent events,
//! one more front end on the runtime's session service (like the chat,
//! `etch rpc` and `etch acp`), not a new source of truth: every session
//! is its JSONL log, written by this process alone while it serves it.
//!
//! - `served`: one served session: its handle, a bounded broadcast of
//!   its frames (log lines as they are appended, with their event ids,
//!   and the protocol's live events, deltas included), the commands
//!   waiting for their responses, the lease a request holds it with.
//! - `state`: the server's options and the sessions it serves: found,
//!   opened, created, admitted to run (429 beyond `max_running`),
//!   re-keyed after a fork, unloaded when idle; the shared contexts.
//! - `ops`: what a client may do to a session (create, prompt,
//!   command, rename), shared by the HTTP API and the 9P namespace.
//! - `routes`: the HTTP API (`/health`, `/v1/sessions`, prompt,
//!   commands, name, messages, log, events, the server-wide `/v1/events`),
//!   its JSON errors.
//! - `sse`: a session's event stream: the log after a client's last event
//!   id, then the live frames, with no gap and no duplicate.
//! - `api`: the bodies as types, read and written by the routes.
//! - `openapi`: `/openapi.json`, generated from the route table and the
//!   bodies' types.
//! - `page`: the web page (HTML, CSS, one script, embedded), and how it
//!   gets the token into an `HttpOnly` cookie.
//! - `auth`: the bearer token and the `Origin` check.
//! - `nine`: the same sessions as a 9P2000 file tree (`--9p`).
//!
//! This crate must not know how options reach it (the binary parses
//! flags), how a terminal draws anything, or what a provider is.

mod api;
mod auth;
mod error;
#[doc(hidden)]
pub mod fuzz;
mod nine;
mod openapi;
mod ops;
mod page;
mod routes;
mod served;
mod sse;
mod state;

use std::future::{Future, IntoFuture as _};
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt as _;

pub use auth::{new_token, token_from_file};
pub use error::ServeError;
pub use nine::Listener as NineListener;
/// The 9P2000 message format, public for the fuzz targets.
#[doc(hidden)]
pub use nine::wire as ninep_wire;
pub use state::{Notify, Options};

/// How long a client that stopped reading may keep data unsent before
/// its connection is closed (`TCP_USER_TIMEOUT`: the kernel gives up on
/// a connection whose window stayed shut that long). Its stream is
/// never waited for meanwhile; this only frees the connection.
pub const STALLED_CLIENT: Duration = Duration::from_secs(30);

/// How long stopping waits for open connections (a client that stopped
/// reading never lets its last bytes go) before it closes the sessions
/// and returns anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// The 9P namespace to serve beside HTTP.
#[derive(Debug)]
pub struct Nine {
    /// Where it listens.
    pub listener: NineListener,
    /// The user who owns its files (the one who started the server).
    pub owner: String,
}

/// Serves `options`' roots on `listener` (and as a 9P tree on `nine`'s,
/// when given) until `shutdown` resolves, then stops accepting, aborts
/// every run (the logs stay valid) and returns.
pub async fn serve(
    listener: tokio::net::TcpListener,
    nine: Option<Nine>,
    options: Options,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let app = state::App::new(options)?;
    if let Some(nine) = nine {
        tokio::spawn(nine::serve(Arc::clone(&app), nine.listener, nine.owner));
    }
    let router = routes::router(Arc::clone(&app));
    // Event streams never end by themselves: they are told to, so the
    // graceful shutdown does not wait for them forever.
    let stopping = Arc::clone(&app);
    let shutdown = async move {
        shutdown.await;
        stopping.stop();
    };
    if let Some(idle) = app.options.idle_unload {
        tokio::spawn(sweep(Arc::downgrade(&app), idle));
    }
    let listener = listener.tap_io(|tcp| {
        // Best effort: without it a stalled client's connection stays
        // open (its stream still never slows anyone).
        let _ = socket2::SockRef::from(&*tcp).set_tcp_user_timeout(Some(STALLED_CLIENT));
    });
    let server = axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .into_future();
    let stopped = app.stopped();
    let grace = async move {
        stopped.await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    let outcome = tokio::select! {
        ended = server => ended.map_err(ServeError::Serve),
        () = grace => Ok(()),
    };
    app.close_all().await;
    outcome
}

/// Unloads idle sessions until the server is gone, looking a few times
/// per `idle` (at most every 30 s, at least every 250 ms).
async fn sweep(app: std::sync::Weak<state::App>, idle: std::time::Duration) {
    let period = (idle / 4).clamp(
        std::time::Duration::from_millis(250),
        std::time::Duration::from_secs(30),
    );
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(app) = app.upgrade() else { return };
        app.sweep(idle).await;
    }
}
