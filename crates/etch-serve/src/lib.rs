//! `etch serve`: many sessions served over HTTP and server-sent events,
//! one more front end on the runtime's session service (like the chat,
//! `etch rpc` and `etch acp`), not a new source of truth: every session
//! is its JSONL log, written by this process alone while it serves it.
//!
//! - `state`: the served sessions, each with a bounded broadcast of its
//!   frames (log lines as they are appended, with their event ids, and
//!   the protocol's live events, deltas included) and the commands
//!   waiting for their responses.
//! - `routes`: the HTTP API (`/health`, `/v1/sessions`, prompt,
//!   commands, messages, log, events), its JSON errors.
//! - `sse`: a session's event stream: the log after a client's last event
//!   id, then the live frames, with no gap and no duplicate.
//! - `auth`: the bearer token and the `Origin` check.
//!
//! This crate must not know how options reach it (the binary parses
//! flags), how a terminal draws anything, or what a provider is.

mod auth;
mod error;
mod routes;
mod sse;
mod state;

use std::future::Future;
use std::sync::Arc;

pub use auth::new_token;
pub use error::ServeError;
pub use state::Options;

/// Serves `options`' roots on `listener` until `shutdown` resolves, then
/// stops accepting, aborts every run (the logs stay valid) and returns.
pub async fn serve(
    listener: tokio::net::TcpListener,
    options: Options,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let app = state::App::new(options)?;
    let router = routes::router(Arc::clone(&app));
    // Event streams never end by themselves: they are told to, so the
    // graceful shutdown does not wait for them forever.
    let stopping = Arc::clone(&app);
    let shutdown = async move {
        shutdown.await;
        stopping.stop();
    };
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServeError::Serve);
    app.close_all().await;
    served
}
