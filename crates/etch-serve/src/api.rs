//! The bodies of the HTTP API as types: what the routes read and write
//! and what the OpenAPI description is generated from, so the two
//! cannot drift. Session commands and responses are `etch-protocol`'s
//! own (one vocabulary for stdio and HTTP).
//!
//! This module must not know how a route does its work.

use std::path::PathBuf;

use etch_protocol::{StreamingBehavior, WireMessage};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /health`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Health {
    /// Always true: the server answers.
    pub ok: bool,
    /// etch's version.
    pub version: String,
}

/// `POST /v1/sessions`: every field optional.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NewSession {
    /// Working directory, inside a served root (default: the first root).
    pub cwd: Option<PathBuf>,
    /// Provider name (default: the server's run options).
    pub provider: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Reasoning effort.
    pub thinking: Option<String>,
    /// Built-in tools to offer, by name.
    pub tools: Option<Vec<String>>,
}

/// `201` for `POST /v1/sessions`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Created {
    /// The new session's id.
    pub id: String,
}

/// `POST /v1/sessions/{id}/prompt`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Prompt {
    /// The user's text.
    pub message: String,
    /// Images attached to the prompt, as RPC takes them:
    /// `{"type":"image","data":BASE64,"mimeType":"image/png"}`.
    #[serde(default)]
    pub images: Vec<etch_protocol::ImageInput>,
    /// While a run is active: `steer` admits the text at the next
    /// boundary, `followUp` runs it after; without it such a prompt is
    /// refused (409).
    #[serde(default)]
    pub streaming_behavior: Option<StreamingBehavior>,
}

/// `202` for a prompt.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    /// The id the run's events carry.
    pub command_id: String,
}

/// `POST /v1/sessions/{id}/name`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Name {
    /// The new title.
    pub name: String,
}

/// The answer to a name: the title as stored (one line, cut to the
/// index's length).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Named {
    /// The title.
    pub name: String,
}

/// `GET /v1/sessions`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionList {
    /// The one written last first.
    pub sessions: Vec<SessionRow>,
}

/// One session of the list.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    /// Session id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Where it runs.
    pub cwd: String,
    /// The session it was forked or delegated from.
    pub parent: Option<String>,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// When its log was last written, in milliseconds since the epoch.
    pub updated_ms: Option<u64>,
    /// `running` or `idle`.
    pub state: RunState,
    /// Whether this server has it loaded now.
    pub served: bool,
    /// How many.
    pub counts: Counts,
}

/// Whether a session runs.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// A run is active.
    Running,
    /// No run.
    Idle,
}

/// A session's counts.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Counts {
    /// Sessions forked or delegated from it.
    pub children: usize,
    /// Event streams watching it now.
    pub clients: usize,
}

/// `GET /v1/sessions/{id}/messages`: what the next request would send.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Messages {
    /// The conversation at the leaf, oldest first.
    pub messages: Vec<WireMessage>,
}

/// One event of `GET /v1/events`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Lifecycle {
    /// A session was created here (or by a fork of `parent`).
    SessionCreated {
        /// The session.
        session_id: String,
        /// Its working directory, when created by `POST /v1/sessions`.
        #[serde(skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
        /// The session it was forked from.
        #[serde(skip_serializing_if = "Option::is_none")]
        parent: Option<String>,
    },
    /// A stored session was loaded to answer a request.
    SessionLoaded {
        /// The session.
        session_id: String,
    },
    /// A run started.
    RunStarted {
        /// The session.
        session_id: String,
    },
    /// A run ended.
    RunEnded {
        /// The session.
        session_id: String,
    },
    /// The session was named.
    SessionNamed {
        /// The session.
        session_id: String,
        /// Its title as stored.
        name: String,
    },
    /// The session was unloaded (its log remains).
    SessionClosed {
        /// The session.
        session_id: String,
        /// Why: `idle`.
        reason: String,
    },
    /// The session failed beyond repair.
    SessionBroken {
        /// The session.
        session_id: String,
        /// What happened.
        message: String,
    },
}

/// Every error's body.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// An error: a stable code and what to do.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorDetail {
    /// Stable, for programs (`unknown_session`, `session_running`, ...).
    pub code: String,
    /// For people: what failed and what to do.
    pub message: String,
}
