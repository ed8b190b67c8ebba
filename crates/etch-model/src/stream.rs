//! The model stream: events a provider emits while answering one request.
//!
//! The kinds mirror E-MOD-02 (text, reasoning and tool-call start/delta/end,
//! usage, response info, metrics, error, done). A well-behaved stream ends with
//! exactly one `Done` or one `Error`; the core treats a stream that simply
//! stops as an error, so a provider bug can never masquerade as an answer.

use serde::{Deserialize, Serialize};

use crate::message::ProviderItem;

/// One event of a model stream.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A text block begins.
    TextStart,
    /// More text for the current text block.
    TextDelta(String),
    /// The current text block is complete.
    TextEnd,
    /// A displayable reasoning summary begins.
    ReasoningStart,
    /// More reasoning summary text.
    ReasoningDelta(String),
    /// The reasoning summary block is complete.
    ReasoningEnd,
    /// A tool call begins; `index` identifies it for later deltas.
    ToolCallStart {
        /// Position of the call within this response.
        index: usize,
        /// Provider call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON argument text.
    ToolCallDelta {
        /// Which call the fragment belongs to.
        index: usize,
        /// Raw argument text to append.
        arguments: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// Which call is complete.
        index: usize,
    },
    /// Provider-reported token usage for this pass.
    Usage(Usage),
    /// Provider response identity (`model.response`).
    ResponseInfo {
        /// Provider response id.
        response_id: String,
        /// Model the provider says answered.
        model: String,
    },
    /// An opaque native item to persist and replay to the same provider.
    ProviderItem(ProviderItem),
    /// Transport and request-shape metrics for this pass.
    Metrics(Metrics),
    /// A request failed before any output and will be sent again after
    /// `delay_ms` (C34); front ends say so instead of waiting in silence.
    Retrying {
        /// Which retry this is, from 1.
        attempt: u32,
        /// Retries allowed in all.
        max_retries: u32,
        /// How long the provider waits before it.
        delay_ms: u64,
        /// Why the request failed.
        reason: String,
    },
    /// The pass failed; no `Done` follows.
    Error(ModelError),
    /// The pass finished normally.
    Done {
        /// Why the model stopped.
        stop_reason: StopReason,
    },
}

/// Why a model pass ended (Pi's stop reasons, C5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The model finished its answer.
    Stop,
    /// The output token limit cut the answer.
    Length,
    /// The model asked for tools.
    ToolUse,
    /// The pass failed.
    Error,
    /// The pass was cancelled.
    Aborted,
}

/// Token usage of one model pass (`model.usage`, G4). Missing fields read
/// as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Prompt tokens served from cache.
    pub cached_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Completion tokens spent on reasoning.
    pub reasoning_output_tokens: u64,
    /// Total tokens as the provider counts them.
    pub total_tokens: u64,
}

/// Transport and request-shape metrics of one model pass (`model.metrics`, G4).
/// Missing fields read as zero, so logs from other writers or versions load.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Metrics {
    /// `echo`, `chat-sse`, `responses-sse`, `responses-ws`, `anthropic-sse`.
    pub transport: String,
    /// HTTP/WebSocket requests made for this pass (retries included).
    pub requests: u64,
    /// Serialized request body bytes.
    pub request_bytes: u64,
    /// Raw response body bytes read.
    pub response_bytes: u64,
    /// Milliseconds until response headers arrived.
    pub headers_ms: u64,
    /// Milliseconds until the first meaningful stream event.
    pub first_event_ms: u64,
    /// Milliseconds for the whole pass.
    pub duration_ms: u64,
    /// WebSocket connections opened.
    pub ws_opens: u64,
    /// WebSocket connections reused.
    pub ws_reuses: u64,
    /// Continuation attempts (`previous_response_id`).
    pub continuation_attempts: u64,
    /// Continuations that fell back to a full request.
    pub continuation_fallbacks: u64,
    /// Why the latest continuation fell back, if it did.
    pub last_fallback: Option<String>,
    /// Messages in the provider-neutral input.
    pub input_messages: u64,
    /// Messages actually sent as a continuation delta.
    pub delta_messages: u64,
    /// Tool schemas sent.
    pub tool_schemas: u64,
    /// Bytes of serialized instructions.
    pub instruction_bytes: u64,
    /// Bytes of serialized input messages.
    pub input_bytes: u64,
    /// Bytes of serialized tool schemas.
    pub tool_bytes: u64,
}

/// Classification of a failed pass, so the core can decide what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Rate limit, 5xx or network failure: worth a retry before any output.
    Transient,
    /// The request did not fit the model's context window.
    ContextOverflow,
    /// Credentials missing, rejected or expired beyond refresh.
    Auth,
    /// The provider rejected the request (non-429 4xx).
    InvalidRequest,
    /// The stream broke the protocol (bad JSON, missing terminator…).
    Protocol,
    /// Anything else.
    Other,
}

/// A typed model-pass failure with the provider's own message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    /// What kind of failure this is.
    pub kind: ErrorKind,
    /// Human-readable message, including the provider's text where it has one.
    pub message: String,
}

impl ModelError {
    /// Builds an error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}
