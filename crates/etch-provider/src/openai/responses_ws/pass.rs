//! One model pass over a Responses WebSocket.
//!
//! A pass takes the session's idle connection (or opens one), plans full
//! context or continuation, sends one `response.create`, decodes the server
//! events with the same decoder as HTTP/SSE and forwards them, holding
//! `Done` back until `model.metrics` is out. A finished pass leaves its
//! connection idle for the next one with the chain the backend now holds.
//!
//! Failures are handled before anything is shown: a kept connection that
//! turns out closed is replaced by a fresh one with the full context; a
//! `previous_response_not_found` answer resends the full context on the same
//! connection; in `auto` mode a handshake or first exchange that fails hands
//! the pass to HTTP/SSE; transient errors are retried per C34. After output
//! a failure is reported, never retried. It must not know the session log.

use std::sync::Arc;
use std::time::{Duration, Instant};

use etch_model::{ErrorKind, Metrics, ModelError, ModelRequest, StreamEvent, StreamSender};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_util::sync::CancellationToken;

use super::conn::{self, Socket};
use super::{Encoder, WsState};
use crate::driver::{Outlet, gave_up, millis};
use crate::http::{self, RetryPolicy, StreamLimits};
use crate::openai::continuation::{self, Chain, Plan};
use crate::openai::responses_decode::ResponsesDecoder;

/// How long a kept connection may stay silent after a request before it is
/// presumed dead and replaced. A live Responses backend answers with
/// `response.created` at once; a flow dropped by a NAT or a suspend would
/// otherwise cost the whole idle timeout.
const REUSED_FIRST_MESSAGE: Duration = Duration::from_secs(15);

/// Everything one WebSocket pass needs, owned so it runs on its own task.
pub(crate) struct WsPass {
    /// The client's session state.
    pub state: Arc<WsState>,
    /// The full provider-neutral request.
    pub request: ModelRequest,
    /// Model and reasoning settings for `response.create`.
    pub encoder: Encoder,
    /// The `ws://` or `wss://` endpoint.
    pub url: String,
    /// Handshake headers: the same credentials and extra headers as HTTP.
    pub headers: Vec<(String, String)>,
    /// `auto` mode: fall back to HTTP/SSE when WebSocket does not work.
    pub auto: bool,
    /// Retry policy (C34).
    pub retry: RetryPolicy,
    /// How long the server may be silent mid-response.
    pub idle_timeout: Duration,
    /// Caps on one message from the server and one assembled answer.
    pub limits: StreamLimits,
    /// Metrics with the request shape filled in; transport `responses-ws`.
    pub metrics: Metrics,
}

/// How a WebSocket pass ended.
pub(crate) enum Ended {
    /// The answer, or an error, was sent on the stream.
    Finished,
    /// `auto` mode only: WebSocket failed before any output, so the pass
    /// should go over HTTP/SSE. Carries the diagnostic for `lastFallback`
    /// and the WebSocket metrics gathered so far.
    UseSse {
        /// Why WebSocket was given up.
        reason: String,
        /// Metrics of the failed WebSocket attempt (opens, bytes).
        metrics: Metrics,
    },
}

/// How reading one response off a socket ended.
enum Read {
    /// The response finished; the socket may be kept.
    Completed {
        /// The response id, if the server sent one.
        response_id: Option<String>,
        /// The tool call ids it made, in order.
        calls: Vec<String>,
    },
    /// The server no longer holds the response a continuation named
    /// (`previous_response_not_found`), and nothing was shown yet.
    LostPrevious(String),
    /// The socket closed or broke before any server message arrived: a
    /// stale kept connection or a failed first exchange.
    Silent(ModelError),
    /// Failed after server messages arrived; `shown` if output was
    /// forwarded (then it must not be retried).
    Failed {
        /// What went wrong.
        err: ModelError,
        /// Whether model output was already forwarded.
        shown: bool,
    },
    /// The run was cancelled.
    Cancelled,
}

/// A running pass.
struct Run<'a> {
    /// What to do.
    pass: WsPass,
    /// Where events go.
    outlet: Outlet<'a>,
    /// Run cancellation.
    cancel: &'a CancellationToken,
    /// When the pass started.
    started: Instant,
    /// Retries used so far.
    retries: u32,
}

/// Runs one pass; see the module docs for the failure rules.
pub(crate) async fn run(pass: WsPass, tx: &StreamSender, cancel: &CancellationToken) -> Ended {
    let max_message = pass.limits.max_message_bytes;
    let mut run = Run {
        pass,
        outlet: Outlet::new(tx, max_message),
        cancel,
        started: Instant::now(),
        retries: 0,
    };
    run.run().await
}

impl Run<'_> {
    /// The connection loop: each iteration uses one socket.
    async fn run(&mut self) -> Ended {
        loop {
            let (socket, opened, chain, reused) = if let Some(idle) = self.pass.state.take_idle() {
                self.pass.metrics.ws_reuses += 1;
                (idle.socket, idle.opened, idle.chain, true)
            } else {
                let opening = tokio::select! {
                    () = self.cancel.cancelled() => return Ended::Finished,
                    r = conn::open(
                        &self.pass.url,
                        &self.pass.headers,
                        self.pass.idle_timeout,
                        self.pass.limits.max_frame_bytes,
                    ) => r,
                };
                match opening {
                    Ok(socket) => {
                        self.pass.metrics.ws_opens += 1;
                        if self.pass.metrics.headers_ms == 0 {
                            self.pass.metrics.headers_ms = millis(self.started.elapsed()).max(1);
                        }
                        (socket, Instant::now(), None, false)
                    }
                    Err(err) if self.pass.auto => return self.use_sse(&err),
                    Err(err) => {
                        if self.retry(err).await {
                            continue;
                        }
                        return Ended::Finished;
                    }
                }
            };
            if let Some(ended) = self.exchange(socket, opened, chain, reused).await {
                return ended;
            }
        }
    }

    /// Sends the request on `socket` (more than once only after
    /// `previous_response_not_found`) and reads the answer. `None` means:
    /// drop this socket and go round the connection loop again.
    async fn exchange(
        &mut self,
        mut socket: Socket,
        opened: Instant,
        mut chain: Option<Chain>,
        reused: bool,
    ) -> Option<Ended> {
        loop {
            let plan = if self.pass.request.options.no_continuation {
                Plan::Full {
                    fallback: chain.as_ref().map(|c| {
                        format!(
                            "a ContextBuild hook rewrites the context; sent the full context instead of continuing {}",
                            c.response_id
                        )
                    }),
                }
            } else {
                continuation::plan(chain.as_ref(), &self.pass.request.messages)
            };
            if chain.take().is_some() {
                self.pass.metrics.continuation_attempts += 1;
            }
            if let Plan::Full {
                fallback: Some(reason),
            } = &plan
            {
                self.note_fallback(reason.clone());
            }
            let encoded = match self.pass.encoder.encode(&self.pass.request, &plan) {
                Ok(encoded) => encoded,
                Err(err) => {
                    self.fail(err).await;
                    return Some(Ended::Finished);
                }
            };
            let metrics = &mut self.pass.metrics;
            metrics.requests += 1;
            metrics.request_bytes += encoded.text.len() as u64;
            metrics.input_bytes = encoded.input_bytes;
            metrics.delta_messages = encoded.delta_messages;
            let continuing = matches!(plan, Plan::Delta { .. });
            let idle = self.pass.idle_timeout;
            let sent = tokio::select! {
                () = self.cancel.cancelled() => return Some(Ended::Finished),
                r = tokio::time::timeout(idle, socket.send(WsMessage::text(encoded.text))) => r,
            };
            let first_wait = if reused {
                idle.min(REUSED_FIRST_MESSAGE)
            } else {
                idle
            };
            let read = match sent {
                Ok(Ok(())) => self.read(&mut socket, continuing, first_wait).await,
                Ok(Err(e)) => Read::Silent(ModelError::new(
                    ErrorKind::Transient,
                    format!(
                        "cannot send the request over the WebSocket to {}: {e}",
                        self.pass.url
                    ),
                )),
                Err(_) => Read::Silent(ModelError::new(
                    ErrorKind::Transient,
                    format!(
                        "sending the request over the WebSocket to {} took more than {} seconds",
                        self.pass.url,
                        idle.as_secs()
                    ),
                )),
            };
            match read {
                Read::Completed { response_id, calls } => {
                    let chain = response_id.map(|response_id| Chain {
                        response_id,
                        messages: self.pass.request.messages.clone(),
                        calls,
                    });
                    self.pass.state.keep(socket, opened, chain);
                    self.finish().await;
                    return Some(Ended::Finished);
                }
                Read::LostPrevious(message) => {
                    let Plan::Delta {
                        previous_response_id,
                        ..
                    } = plan
                    else {
                        self.fail(ModelError::new(ErrorKind::InvalidRequest, message))
                            .await;
                        return Some(Ended::Finished);
                    };
                    self.note_fallback(format!(
                        "the server no longer holds {previous_response_id} ({message}); sent the full context"
                    ));
                }
                Read::Silent(err) if reused => {
                    // The kept connection was closed while idle: a fresh
                    // one with the full context is no retry.
                    if let Plan::Delta {
                        previous_response_id,
                        ..
                    } = plan
                    {
                        self.note_fallback(format!(
                            "the kept connection was closed ({}); sent the full context instead of continuing {previous_response_id}",
                            err.message
                        ));
                    }
                    return None;
                }
                Read::Silent(err) if self.pass.auto => return Some(self.use_sse(&err)),
                Read::Silent(err) | Read::Failed { err, shown: false } => {
                    return if self.retry(err).await {
                        None
                    } else {
                        Some(Ended::Finished)
                    };
                }
                Read::Failed { err, shown: true } => {
                    self.fail(err).await;
                    return Some(Ended::Finished);
                }
                Read::Cancelled => return Some(Ended::Finished),
            }
        }
    }

    /// Reads server messages until the response finishes or fails,
    /// forwarding decoded events. `first_wait` bounds the wait for the
    /// first message (shorter on a kept connection that may be dead).
    async fn read(&mut self, socket: &mut Socket, continuing: bool, first_wait: Duration) -> Read {
        let idle = self.pass.idle_timeout;
        let mut decoder = ResponsesDecoder::new();
        let mut events = Vec::new();
        let mut received = false;
        let mut response_id = None;
        let mut calls = Vec::new();
        loop {
            let wait = if received { idle } else { first_wait };
            let next = tokio::select! {
                () = self.cancel.cancelled() => return Read::Cancelled,
                r = tokio::time::timeout(wait, socket.next()) => r,
            };
            let text = match next {
                Err(_) => {
                    let err = ModelError::new(
                        ErrorKind::Transient,
                        format!(
                            "{} sent nothing for {} seconds; the stream looks stalled \
                             (raise [provider] idle_timeout_secs if the model is just slow)",
                            self.pass.url,
                            wait.as_secs()
                        ),
                    );
                    return Self::broken(err, received, &decoder);
                }
                Ok(Some(Ok(WsMessage::Text(text)))) => text.as_str().to_owned(),
                Ok(Some(Ok(WsMessage::Binary(bytes)))) => {
                    let Ok(text) = String::from_utf8(bytes.to_vec()) else {
                        let err = ModelError::new(
                            ErrorKind::Protocol,
                            "the server sent a binary WebSocket message that is not UTF-8 text",
                        );
                        return Read::Failed {
                            err,
                            shown: decoder.has_output(),
                        };
                    };
                    text
                }
                Ok(Some(Ok(WsMessage::Close(frame)))) => {
                    let why = frame.map_or_else(String::new, |f| {
                        format!(" (code {}{})", u16::from(f.code), reason_suffix(&f.reason))
                    });
                    let err = ModelError::new(
                        ErrorKind::Transient,
                        format!(
                            "the WebSocket to {} was closed{why} before the response finished",
                            self.pass.url
                        ),
                    );
                    return Self::broken(err, received, &decoder);
                }
                Ok(Some(Ok(_))) => continue,
                // tungstenite refuses a message past the cap from its
                // header, before reading it (`conn::open` sets the cap).
                Ok(Some(Err(WsError::Capacity(CapacityError::MessageTooLong {
                    size,
                    max_size,
                })))) => {
                    return Read::Failed {
                        err: http::frame_too_large(&self.pass.url, max_size, size),
                        shown: decoder.has_output(),
                    };
                }
                Ok(Some(Err(e))) => {
                    let err = ModelError::new(
                        ErrorKind::Transient,
                        format!("the WebSocket to {} broke: {e}", self.pass.url),
                    );
                    return Self::broken(err, received, &decoder);
                }
                Ok(None) => {
                    let err = ModelError::new(
                        ErrorKind::Transient,
                        format!(
                            "the WebSocket to {} ended before the response finished",
                            self.pass.url
                        ),
                    );
                    return Self::broken(err, received, &decoder);
                }
            };
            received = true;
            self.pass.metrics.response_bytes += text.len() as u64;
            if continuing
                && !decoder.has_output()
                && let Some(message) = lost_previous(&text)
            {
                return Read::LostPrevious(message);
            }
            if let Err(err) = decoder.frame(None, &text, &mut events) {
                return Read::Failed {
                    err,
                    shown: decoder.has_output(),
                };
            }
            for event in &events {
                match event {
                    StreamEvent::ResponseInfo {
                        response_id: id, ..
                    } => {
                        response_id = Some(id.clone());
                    }
                    StreamEvent::ToolCallStart { id, .. } => calls.push(id.clone()),
                    _ => {}
                }
            }
            if !events.is_empty() && self.pass.metrics.first_event_ms == 0 {
                self.pass.metrics.first_event_ms = millis(self.started.elapsed()).max(1);
            }
            if let Err(err) = self.outlet.forward(&mut events).await {
                return Read::Failed {
                    err,
                    shown: decoder.has_output(),
                };
            }
            if decoder.is_finished() {
                return Read::Completed { response_id, calls };
            }
        }
    }

    /// A socket that broke: silent if nothing had arrived yet.
    fn broken(err: ModelError, received: bool, decoder: &ResponsesDecoder) -> Read {
        if received {
            Read::Failed {
                err,
                shown: decoder.has_output(),
            }
        } else {
            Read::Silent(err)
        }
    }

    /// Records a continuation fallback and its reason (E-MOD-16).
    fn note_fallback(&mut self, reason: String) {
        self.pass.metrics.continuation_fallbacks += 1;
        self.pass.metrics.last_fallback = Some(reason);
    }

    /// Gives WebSocket up for this session (`auto` mode).
    fn use_sse(&mut self, err: &ModelError) -> Ended {
        let reason = format!("WebSocket unavailable ({}); used HTTP/SSE", err.message);
        self.pass.state.mark_unavailable(&reason);
        Ended::UseSse {
            reason,
            metrics: self.pass.metrics.clone(),
        }
    }

    /// Waits before another attempt if `err` is transient and retries are
    /// left (C34); otherwise reports it. Returns whether to try again.
    async fn retry(&mut self, err: ModelError) -> bool {
        let policy = &self.pass.retry;
        if err.kind == ErrorKind::Transient && self.retries < policy.max_retries {
            self.retries += 1;
            let delay = policy.delay(self.retries, None);
            let policy = policy.clone();
            self.outlet
                .retrying(self.retries, &policy, delay, &err)
                .await;
            return http::sleep_unless_cancelled(delay, self.cancel).await;
        }
        let err = if err.kind == ErrorKind::Transient {
            gave_up(err, policy)
        } else {
            err
        };
        self.fail(err).await;
        false
    }

    /// Sends the metrics, then the held `Done`.
    async fn finish(&mut self) {
        self.pass.metrics.duration_ms = millis(self.started.elapsed());
        self.outlet.finish(self.pass.metrics.clone()).await;
    }

    /// Sends the metrics and then the error.
    async fn fail(&mut self, err: ModelError) {
        self.pass.metrics.duration_ms = millis(self.started.elapsed());
        self.outlet.fail(self.pass.metrics.clone(), err).await;
    }
}

/// `: reason` for a close frame with a reason, else nothing.
fn reason_suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

/// The message of a `previous_response_not_found` error event, if `text` is
/// one. The substring test keeps ordinary events from being parsed twice.
fn lost_previous(text: &str) -> Option<String> {
    if !text.contains("previous_response_not_found") {
        return None;
    }
    let value: Value = serde_json::from_str(text).ok()?;
    if value.get("type").and_then(Value::as_str) != Some("error") {
        return None;
    }
    let error = value
        .get("error")
        .filter(|e| e.is_object())
        .unwrap_or(&value);
    (error.get("code").and_then(Value::as_str) == Some("previous_response_not_found")).then(|| {
        error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("previous_response_not_found")
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Only an `error` event with that code counts, nested or flat.
    #[test]
    fn recognises_lost_previous_response() {
        let nested = json!({"type": "error", "status": 400, "error": {"code": "previous_response_not_found", "message": "Previous response 'resp_1' not found."}});
        assert_eq!(
            lost_previous(&nested.to_string()).as_deref(),
            Some("Previous response 'resp_1' not found.")
        );
        let flat = json!({"type": "error", "code": "previous_response_not_found"});
        assert_eq!(
            lost_previous(&flat.to_string()).as_deref(),
            Some("previous_response_not_found")
        );
        let text =
            json!({"type": "response.output_text.delta", "delta": "previous_response_not_found"});
        assert_eq!(lost_previous(&text.to_string()), None);
    }
}
