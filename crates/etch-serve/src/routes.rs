//! The HTTP API. Bodies are JSON; every error is
//! `{"error":{"code","message"}}` with its status: unknown routes 404,
//! wrong methods 405, bodies over [`MAX_BODY`] 413, malformed JSON 400
//! with the parser's words, an unknown session 404, a prompt while the
//! session runs 409 (send `streamingBehavior`), more than
//! `max_running` runs 429 with `Retry-After`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use etch_protocol::{Command, CommandBody};
use etch_runtime::service::{SessionHandle, catalog};
use serde::Deserialize;
use serde_json::Value;

use crate::api;
use crate::auth;
use crate::error::ApiError;
use crate::sse;
use crate::state::{Access, App};

/// The largest request body taken: what the largest request any
/// provider takes (Anthropic's 32 MB) needs, so a prompt with images
/// fits.
pub const MAX_BODY: usize = 32 << 20;

/// One operation of the API: the router and the OpenAPI description
/// are both built from [`Op::ALL`], so neither lists a route the other
/// does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `GET /health`.
    Health,
    /// `GET /openapi.json`.
    OpenApi,
    /// `GET /v1/sessions`.
    List,
    /// `POST /v1/sessions`.
    Create,
    /// `POST /v1/sessions/{id}/prompt`.
    Prompt,
    /// `POST /v1/sessions/{id}/commands`.
    Commands,
    /// `POST /v1/sessions/{id}/name`.
    Name,
    /// `GET /v1/sessions/{id}/messages`.
    Messages,
    /// `GET /v1/sessions/{id}/log`.
    Log,
    /// `GET /v1/sessions/{id}/events`.
    Events,
    /// `GET /v1/events`.
    Lifecycle,
}

impl Op {
    /// Every operation, in the order the description lists them.
    pub const ALL: [Self; 11] = [
        Self::Health,
        Self::OpenApi,
        Self::List,
        Self::Create,
        Self::Prompt,
        Self::Commands,
        Self::Name,
        Self::Messages,
        Self::Log,
        Self::Events,
        Self::Lifecycle,
    ];

    /// Its method and path (axum's `{id}` syntax, also OpenAPI's).
    pub const fn route(self) -> (&'static str, &'static str) {
        match self {
            Self::Health => ("GET", "/health"),
            Self::OpenApi => ("GET", "/openapi.json"),
            Self::List => ("GET", "/v1/sessions"),
            Self::Create => ("POST", "/v1/sessions"),
            Self::Prompt => ("POST", "/v1/sessions/{id}/prompt"),
            Self::Commands => ("POST", "/v1/sessions/{id}/commands"),
            Self::Name => ("POST", "/v1/sessions/{id}/name"),
            Self::Messages => ("GET", "/v1/sessions/{id}/messages"),
            Self::Log => ("GET", "/v1/sessions/{id}/log"),
            Self::Events => ("GET", "/v1/sessions/{id}/events"),
            Self::Lifecycle => ("GET", "/v1/events"),
        }
    }

    /// Whether it needs the token (all but `/health`).
    pub const fn guarded(self) -> bool {
        !matches!(self, Self::Health)
    }

    /// Its handler.
    fn handler(self) -> MethodRouter<Arc<App>> {
        match self {
            Self::Health => get(health),
            Self::OpenApi => get(openapi),
            Self::List => get(list),
            Self::Create => post(create),
            Self::Prompt => post(prompt),
            Self::Commands => post(commands),
            Self::Name => post(name),
            Self::Messages => get(messages),
            Self::Log => get(log),
            Self::Events => get(events),
            Self::Lifecycle => get(lifecycle),
        }
    }
}

/// Every route, behind the token and origin guard.
pub fn router(app: Arc<App>) -> Router {
    let mut router = Router::new();
    for op in Op::ALL {
        // Two operations on one path (GET and POST /v1/sessions) merge
        // into one route.
        router = router.route(op.route().1, op.handler());
    }
    router
        .route("/", get(crate::page::index))
        .route("/page.js", get(crate::page::script))
        .route("/page.css", get(crate::page::style))
        .fallback(not_found)
        .method_not_allowed_fallback(not_allowed)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&app),
            auth::guard,
        ))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(app)
}

/// Any route not listed.
async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such route; the API is under /v1 (GET /v1/sessions to start)",
    )
}

/// A listed route with a method it does not take.
async fn not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method",
    )
}

/// `GET /health`, the one route without the token.
async fn health() -> Response {
    axum::Json(api::Health {
        ok: true,
        version: env!("CARGO_PKG_VERSION").to_owned(),
    })
    .into_response()
}

/// `GET /openapi.json`: this API's OpenAPI 3.1 description.
async fn openapi() -> Response {
    axum::Json(crate::openapi::document()).into_response()
}

/// A JSON body, or the error saying what is wrong with it; an empty body
/// is `{}`.
pub(crate) fn body<T: serde::de::DeserializeOwned>(
    bytes: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = bytes.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("request bodies are limited to {} MiB", MAX_BODY >> 20),
            )
        } else {
            ApiError::bad("bad_body", rejection.body_text())
        }
    })?;
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        &bytes
    };
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad(
            "bad_json",
            format!("the body is not the JSON expected: {e}"),
        )
    })
}

/// `GET /v1/sessions`: the sessions of every served root, the one
/// written last first, from each root's index (never from the logs; a
/// file's time is one `stat`), with whether each is served now, running,
/// and how many streams watch it.
async fn list(State(app): State<Arc<App>>) -> Result<Response, ApiError> {
    let dirs: Vec<PathBuf> = app
        .places()
        .iter()
        .map(|place| place.session_dir.clone())
        .collect();
    let mut rows = tokio::task::spawn_blocking(move || {
        let mut rows = Vec::new();
        for dir in dirs {
            let sessions = catalog::sessions(&dir);
            let mut children = std::collections::HashMap::<&str, usize>::new();
            for summary in &sessions {
                if let Some(parent) = &summary.parent {
                    *children.entry(parent.as_str()).or_default() += 1;
                }
            }
            for summary in &sessions {
                let modified = std::fs::metadata(&summary.path)
                    .and_then(|m| m.modified())
                    .ok();
                let kids = children.get(summary.id.as_str()).copied().unwrap_or(0);
                rows.push((modified, summary.clone(), kids));
            }
        }
        rows
    })
    .await
    .map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "cannot_list",
            format!("listing the sessions failed: {e}"),
        )
    })?;
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.id.cmp(&a.1.id)));
    let sessions = rows
        .into_iter()
        .map(|(modified, summary, children)| {
            let served = app.get(&summary.id);
            let state = match &served {
                Some(s) if s.channels.running.load(Ordering::SeqCst) => api::RunState::Running,
                _ => api::RunState::Idle,
            };
            let updated_ms = modified.and_then(|t| {
                let since = t.duration_since(std::time::UNIX_EPOCH).ok()?;
                u64::try_from(since.as_millis()).ok()
            });
            api::SessionRow {
                id: summary.id,
                title: summary.title,
                cwd: summary.cwd,
                parent: summary.parent,
                created_at: summary.created_at,
                updated_ms,
                state,
                served: served.is_some(),
                counts: api::Counts {
                    children,
                    clients: served.as_ref().map_or(0, |s| s.channels.clients()),
                },
            }
        })
        .collect();
    Ok(axum::Json(api::SessionList { sessions }).into_response())
}

/// `POST /v1/sessions`: 201 with the new session's id.
async fn create(
    State(app): State<Arc<App>>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let asked: api::NewSession = body(bytes)?;
    let served = app.create_session(asked).await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(api::Created {
            id: served.handle.id(),
        }),
    )
        .into_response())
}

/// `POST /v1/sessions/{id}/prompt`: 202 with the id the run's events
/// carry, once the session took the prompt.
async fn prompt(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let asked: api::Prompt = body(bytes)?;
    let command_id = app
        .prompt(&id, asked.message, asked.images, asked.streaming_behavior)
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(api::Accepted { command_id }),
    )
        .into_response())
}

/// `POST /v1/sessions/{id}/commands`: any `etch rpc` command, answered
/// with the response `etch rpc` gives. A fork moves the handle to the
/// new session, which is served under its own id from then on.
async fn commands(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let command: Command = body(bytes)?;
    let response = app.command(&id, command).await?;
    Ok(axum::Json(response).into_response())
}

/// `POST /v1/sessions/{id}/name`: names the session; answers the name as
/// stored (one line, cut to the index's length).
async fn name(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let asked: api::Name = body(bytes)?;
    let name = app.rename(&id, asked.name).await?;
    Ok(axum::Json(api::Named { name }).into_response())
}

/// `GET /v1/sessions/{id}/messages`: the projection at the leaf (what
/// the next request would send); read from the log when another process
/// holds the session.
async fn messages(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let answer = match app.access(&id).await? {
        Access::Held { file, .. } => tokio::task::spawn_blocking(move || catalog::messages(&file))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r),
        Access::Served(served) => {
            let response = served
                .ask(Command {
                    id: None,
                    body: CommandBody::GetMessages,
                })
                .await?;
            if response.success {
                Ok(response.data.unwrap_or(Value::Null))
            } else {
                Err(response.error.unwrap_or_default())
            }
        }
    };
    let messages: api::Messages = answer
        .and_then(|data| serde_json::from_value(data).map_err(|e| e.to_string()))
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "cannot_project", e))?;
    Ok(axum::Json(messages).into_response())
}

/// The file of session `id`: the served one's, or the stored one's.
fn file_of(app: &App, id: &str) -> Result<PathBuf, ApiError> {
    match app.get(id) {
        Some(served) => Ok(served.handle.file()),
        None => app
            .stored(id)
            .map(|(_, file)| file)
            .ok_or_else(|| ApiError::no_session(id)),
    }
}

/// `GET /v1/sessions/{id}/log`: the JSONL as stored.
async fn log(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let file = file_of(&app, &id)?;
    let text = tokio::fs::read(&file).await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "cannot_read_log",
            format!("cannot read {}: {e}", file.display()),
        )
    })?;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], text).into_response())
}

/// `?after=`.
#[derive(Debug, Deserialize)]
struct After {
    /// The last event id the client has, or `0`.
    after: Option<String>,
}

/// `GET /v1/sessions/{id}/events`: the session's SSE stream, from the
/// `Last-Event-ID` header or `?after=` when given.
async fn events(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(query): Query<After>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or(query.after);
    let from = match last.as_deref() {
        None => sse::From::Now,
        Some("0") => sse::From::Start,
        Some(id) => sse::From::After(id.to_owned()),
    };
    let (live, file) = match app.access(&id).await? {
        Access::Served(served) => (
            Some((Arc::clone(&served.channels), app.options.notify.clone())),
            served.handle.file(),
        ),
        Access::Held { file, .. } => (None, file),
    };
    Ok(sse::stream(live, file, from, app.stopped())
        .await?
        .into_response())
}

/// `GET /v1/events`: every session's lifecycle (created, loaded, run
/// started and ended, named, closed), live.
async fn lifecycle(State(app): State<Arc<App>>) -> Response {
    sse::lifecycle(app.lifecycle(), app.stopped()).into_response()
}
