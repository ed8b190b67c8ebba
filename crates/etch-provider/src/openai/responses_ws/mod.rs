//! The Responses API over WebSocket (E-MOD-12, E-MOD-14, E-MOD-16): the
//! same request shape sent as a `response.create` message, one connection
//! per session kept briefly for the next pass, and on a reused connection
//! only `previous_response_id` plus the new input when the history allows
//! it ([`crate::openai::continuation`]).
//!
//! This module owns the per-session state (the idle connection, the chain
//! it holds, whether WebSocket turned out unavailable in `auto` mode) and
//! the `response.create` encoding; [`pass`] runs one pass over a socket and
//! [`conn`] opens sockets. It must not know the session log or the loop:
//! the full provider-neutral history arrives with every request, so any pass
//! can fall back to a full-context request or to HTTP/SSE.

pub mod conn;
pub mod pass;
#[cfg(test)]
mod tests;

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use etch_model::{ErrorKind, ModelError, ModelRequest};
use serde::Serialize;

use crate::openai::continuation::{Chain, Plan};
use crate::openai::responses_request::{self, ResponsesBody};

/// How long an idle connection stays reusable between passes; an older one
/// is dropped and a new one opened (Pi keeps Codex sockets as long).
pub const IDLE_REUSE: Duration = Duration::from_secs(5 * 60);

/// The oldest connection that is still reused: OpenAI ends WebSocket
/// connections after 60 minutes, so one close to that is replaced first.
pub const MAX_AGE: Duration = Duration::from_secs(55 * 60);

/// Which transport a Responses client uses (`--openai-transport`, G13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// HTTP/SSE, full context every pass (the default).
    #[default]
    Sse,
    /// WebSocket only; a failed handshake is an error (retried like HTTP).
    WebSocket,
    /// WebSocket, falling back to HTTP/SSE for the rest of the session when
    /// the connection cannot be used: the handshake fails, or the socket
    /// closes before answering the first request. An error the server sends
    /// as an answer (e.g. an invalid request) is reported, not retried over
    /// SSE.
    Auto,
}

impl Transport {
    /// Parses `sse`, `websocket` or `auto`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "sse" => Some(Self::Sse),
            "websocket" => Some(Self::WebSocket),
            "auto" => Some(Self::Auto),
            _ => None,
        }
    }
}

/// A connection waiting for the session's next pass.
pub(crate) struct Idle {
    /// The open socket.
    socket: conn::Socket,
    /// When it was opened (for [`MAX_AGE`]).
    opened: Instant,
    /// When its last pass finished (for [`IDLE_REUSE`]).
    since: Instant,
    /// What the backend holds for it, if the last response had an id.
    chain: Option<Chain>,
}

/// The WebSocket state of one client (one session): shared by its passes.
#[derive(Default)]
pub struct WsState {
    /// The idle connection, if one is kept.
    idle: Mutex<Option<Idle>>,
    /// Why WebSocket is off for this session after an `auto` fallback.
    unavailable: Mutex<Option<String>>,
}

/// Locks a mutex, using the value even if a panicking pass poisoned it: the
/// worst case is a dropped connection, never a wrong answer.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Shows whether a connection is kept, never the socket itself.
impl std::fmt::Debug for WsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsState")
            .field("idle", &lock(&self.idle).is_some())
            .field("unavailable", &self.unavailable())
            .finish()
    }
}

impl WsState {
    /// Takes the idle connection if it is still fresh enough to reuse.
    fn take_idle(&self) -> Option<Idle> {
        let idle = lock(&self.idle).take()?;
        (idle.since.elapsed() < IDLE_REUSE && idle.opened.elapsed() < MAX_AGE).then_some(idle)
    }

    /// Keeps `socket` for the next pass, replacing any other idle one.
    fn keep(&self, socket: conn::Socket, opened: Instant, chain: Option<Chain>) {
        *lock(&self.idle) = Some(Idle {
            socket,
            opened,
            since: Instant::now(),
            chain,
        });
    }

    /// Whether an earlier `auto` fallback turned WebSocket off, and why.
    pub(crate) fn unavailable(&self) -> Option<String> {
        lock(&self.unavailable).clone()
    }

    /// Turns WebSocket off for the rest of the session.
    fn mark_unavailable(&self, reason: &str) {
        *lock(&self.unavailable) = Some(reason.to_owned());
    }
}

/// The settings a `response.create` needs, owned so a pass can run on its
/// own task.
#[derive(Debug, Clone)]
pub(crate) struct Encoder {
    /// Model name.
    pub model: String,
    /// Reasoning effort in force for this request.
    pub effort: Option<String>,
    /// Reasoning summary in force for this request.
    pub summary: Option<String>,
}

/// A `response.create` client message: the HTTP body's fields (without
/// `stream`) after the message type, plus the response to continue.
#[derive(Serialize)]
struct Create<'a> {
    /// Always `response.create`.
    #[serde(rename = "type")]
    kind: &'static str,
    /// The request fields, as over HTTP.
    #[serde(flatten)]
    body: ResponsesBody<'a>,
    /// Set only when continuing on a reused connection.
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_response_id: Option<&'a str>,
}

/// One encoded `response.create` and the shape figures metrics report.
pub(crate) struct Encoded {
    /// The message text.
    pub text: String,
    /// Serialized size of the input actually sent (the delta when
    /// continuing), so metrics show whether continuation saved anything.
    pub input_bytes: u64,
    /// Provider-neutral messages in the delta; 0 for a full request.
    pub delta_messages: u64,
}

impl Encoder {
    /// Encodes `request` as `plan` says: full, or the delta after
    /// `previous_response_id`.
    pub(crate) fn encode(
        &self,
        request: &ModelRequest,
        plan: &Plan,
    ) -> Result<Encoded, ModelError> {
        let (from, previous) = match plan {
            Plan::Delta {
                previous_response_id,
                from,
            } => (*from, Some(previous_response_id.as_str())),
            Plan::Full { .. } => (0, None),
        };
        let reasoning =
            responses_request::reasoning(self.effort.as_deref(), self.summary.as_deref());
        let mut body = responses_request::build_from(request, from, &self.model, reasoning);
        body.stream = false;
        let input_bytes = serde_json::to_vec(&body.input).map_or(0, |v| v.len() as u64);
        let text = serde_json::to_string(&Create {
            kind: "response.create",
            body,
            previous_response_id: previous,
        })
        .map_err(|e| {
            ModelError::new(ErrorKind::Other, format!("cannot encode the request: {e}"))
        })?;
        Ok(Encoded {
            text,
            input_bytes,
            delta_messages: previous.map_or(0, |_| (request.messages.len() - from) as u64),
        })
    }
}

#[cfg(test)]
mod encode_tests {
    use super::*;
    use etch_model::{Message, RequestOptions};
    use serde_json::{Value, json};

    /// An encoder without reasoning.
    fn encoder() -> Encoder {
        Encoder {
            model: "gpt-5".into(),
            effort: None,
            summary: None,
        }
    }

    /// A request of these messages.
    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            system: Vec::new(),
            messages,
            tools: Vec::new(),
            options: RequestOptions {
                session_id: "s1".into(),
                ..RequestOptions::default()
            },
        }
    }

    /// E-MOD-12: a full `response.create` is the HTTP body with the message
    /// type and without `stream`.
    #[test]
    fn full_create_is_the_http_body_without_stream() {
        let encoded = encoder()
            .encode(
                &request(vec![Message::user_text("hi")]),
                &Plan::Full { fallback: None },
            )
            .unwrap();
        let value: Value = serde_json::from_str(&encoded.text).unwrap();
        assert_eq!(
            value,
            json!({
                "type": "response.create",
                "model": "gpt-5",
                "instructions": "",
                "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
                "store": false,
                "prompt_cache_key": "s1"
            })
        );
        assert!(encoded.text.starts_with(r#"{"type":"response.create""#));
        assert_eq!(encoded.delta_messages, 0);
    }

    /// A delta carries `previous_response_id` and only the new messages.
    #[test]
    fn delta_create_sends_only_new_messages() {
        let messages = vec![
            Message::user_text("one"),
            Message::Assistant {
                content: vec![etch_model::ContentPart::text("ok")],
            },
            Message::user_text("two"),
        ];
        let encoded = encoder()
            .encode(
                &request(messages),
                &Plan::Delta {
                    previous_response_id: "resp_9".into(),
                    from: 2,
                },
            )
            .unwrap();
        let value: Value = serde_json::from_str(&encoded.text).unwrap();
        assert_eq!(value["previous_response_id"], "resp_9");
        assert_eq!(value["input"].as_array().unwrap().len(), 1);
        assert_eq!(value["input"][0]["content"][0]["text"], "two");
        assert_eq!(encoded.delta_messages, 1);
        assert_eq!(encoded.input_bytes, value["input"].to_string().len() as u64);
    }

    /// Transport names parse; anything else is refused.
    #[test]
    fn transport_names() {
        assert_eq!(Transport::parse("auto"), Some(Transport::Auto));
        assert_eq!(Transport::parse("websocket"), Some(Transport::WebSocket));
        assert_eq!(Transport::parse("sse"), Some(Transport::Sse));
        assert_eq!(Transport::parse("ws"), None);
    }
}
