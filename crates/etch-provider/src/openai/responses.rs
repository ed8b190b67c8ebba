//! The Responses API client (E-MOD-07, E-MOD-09, E-MOD-12). Over HTTP/SSE
//! (the default) each model pass is one streamed, full-context
//! `POST {base_url}/responses` with `store:false`, run by the shared pass
//! driver (retries, idle timeout, metrics) with the Responses decoder; that
//! path never sends `previous_response_id` (E-MOD-13, E-MOD-19). With the
//! `websocket` or `auto` transport the pass goes over the session's
//! WebSocket instead ([`crate::openai::responses_ws`]), which may continue
//! the previous response on a reused connection.
//!
//! It owns the client settings (endpoint, bearer, reasoning, extra headers,
//! transport) and how they become an [`HttpPass`] or a WebSocket pass. It
//! must not know the wire JSON (see [`responses_request`] and
//! [`crate::openai::responses_decode`]) or how credentials are obtained or
//! refreshed (it only asks a [`crate::http::CredentialSource`] before each
//! request).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use etch_model::{
    ErrorKind, Metrics, ModelClient, ModelError, ModelRequest, ModelStream, StreamEvent,
    stream_channel,
};
use tokio_util::sync::CancellationToken;

use crate::driver::{self, HttpPass, StreamDecoder};
use crate::http::{RetryPolicy, StreamLimits};
use crate::openai::chat_decode::decode_error_body;
use crate::openai::responses_decode::ResponsesDecoder;
use crate::openai::responses_request;
use crate::openai::responses_ws::pass::{self, Ended, WsPass};
use crate::openai::responses_ws::{Encoder, Transport, WsState, conn};
use crate::sse::SseFrame;

/// Settings of a Responses client.
#[derive(Clone)]
pub struct ResponsesConfig {
    /// Base URL, e.g. `https://api.openai.com/v1` or
    /// `https://chatgpt.com/backend-api/codex`; requests go to
    /// `{base_url}/responses`.
    pub base_url: String,
    /// Bearer credential (API key or OAuth access token); `None` sends no
    /// Authorization header.
    pub bearer: Option<String>,
    /// Model name sent in requests.
    pub model: String,
    /// Reasoning effort (`none`, `minimal`, `low`, `medium`, `high`,
    /// `xhigh`); `None` or `off` sends no reasoning field (C35).
    pub reasoning_effort: Option<String>,
    /// Reasoning summary (`auto`, `concise`, `detailed`, `none`); `None` or
    /// `none` leaves the summary out.
    pub reasoning_summary: Option<String>,
    /// Extra request headers, e.g. `ChatGPT-Account-Id` for the Codex
    /// backend.
    pub extra_headers: Vec<(String, String)>,
    /// Credentials fetched before every request (a refreshable login);
    /// their headers are added after `bearer` and `extra_headers`.
    pub credentials: Option<std::sync::Arc<dyn crate::http::CredentialSource>>,
    /// Retry policy (C34).
    pub retry: RetryPolicy,
    /// How long the stream may be silent before it counts as stalled.
    pub idle_timeout: Duration,
    /// Caps on one stream frame (an SSE event or a WebSocket message) and
    /// one assembled message.
    pub limits: StreamLimits,
    /// HTTP/SSE, WebSocket, or WebSocket with SSE fallback.
    pub transport: Transport,
    /// Headers sent only with the WebSocket handshake, e.g. the Codex
    /// backend's `OpenAI-Beta: responses_websockets=…`.
    pub websocket_headers: Vec<(String, String)>,
}

/// Shows everything but secrets: the bearer and extra header values may be
/// credentials, which must never reach a log (E-AUTH-10).
impl fmt::Debug for ResponsesConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self
            .extra_headers
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        f.debug_struct("ResponsesConfig")
            .field("base_url", &self.base_url)
            .field("bearer", &self.bearer.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("reasoning_summary", &self.reasoning_summary)
            .field("extra_headers", &header_names)
            .field(
                "credentials",
                &self.credentials.as_ref().map(|_| "<source>"),
            )
            .field("retry", &self.retry)
            .field("idle_timeout", &self.idle_timeout)
            .field("limits", &self.limits)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

/// An OpenAI Responses API provider. One client serves one session: its
/// WebSocket state (the kept connection) is shared by its passes and by its
/// clones.
#[derive(Debug, Clone)]
pub struct ResponsesClient {
    /// Settings.
    config: ResponsesConfig,
    /// The session's WebSocket connection and continuation state.
    ws: Arc<WsState>,
}

impl ResponsesClient {
    /// A client with `config`.
    pub fn new(config: ResponsesConfig) -> Self {
        Self {
            config,
            ws: Arc::default(),
        }
    }

    /// The reasoning effort and summary in force for `request`: its options
    /// first, each falling back to the client's setting on its own.
    fn reasoning_settings<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> (Option<&'a str>, Option<&'a str>) {
        let options = &request.options;
        (
            options
                .reasoning_effort
                .as_deref()
                .or(self.config.reasoning_effort.as_deref()),
            options
                .reasoning_summary
                .as_deref()
                .or(self.config.reasoning_summary.as_deref()),
        )
    }

    /// Serializes `request` into the pass the driver sends.
    ///
    /// Reasoning settings in the request's options (set per request, e.g.
    /// by a subagent profile) take precedence over the client's; each of
    /// effort and summary falls back to the client's setting on its own.
    pub(crate) fn pass(&self, request: &ModelRequest) -> Result<HttpPass, ModelError> {
        let (effort, summary) = self.reasoning_settings(request);
        let body = responses_request::build(
            request,
            &self.config.model,
            responses_request::reasoning(effort, summary),
        );
        let metrics = Metrics {
            transport: "responses-sse".to_string(),
            input_messages: request.messages.len() as u64,
            tool_schemas: request.tools.len() as u64,
            instruction_bytes: body.instructions.len() as u64,
            tool_bytes: serde_json::to_vec(&body.tools).map_or(0, |v| v.len() as u64),
            input_bytes: serde_json::to_vec(&body.input).map_or(0, |v| v.len() as u64),
            ..Metrics::default()
        };
        let bytes = serde_json::to_vec(&body).map_err(|e| {
            ModelError::new(ErrorKind::Other, format!("cannot encode the request: {e}"))
        })?;
        let mut headers = Vec::with_capacity(self.config.extra_headers.len() + 1);
        if let Some(bearer) = &self.config.bearer {
            headers.push(("authorization".to_string(), format!("Bearer {bearer}")));
        }
        headers.extend(self.config.extra_headers.iter().cloned());
        Ok(HttpPass {
            url: format!("{}/responses", self.config.base_url.trim_end_matches('/')),
            headers,
            metrics: Metrics {
                request_bytes: bytes.len() as u64,
                ..metrics
            },
            body: bytes,
            retry: self.config.retry.clone(),
            idle_timeout: self.config.idle_timeout,
            limits: self.config.limits,
            error_body: decode_error_body,
        })
    }
}

impl StreamDecoder for ResponsesDecoder {
    fn frame(&mut self, frame: &SseFrame, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        ResponsesDecoder::frame(self, frame.event.as_deref(), &frame.data, out)
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        ResponsesDecoder::finish(self, out)
    }

    fn has_output(&self) -> bool {
        ResponsesDecoder::has_output(self)
    }
}

impl ModelClient for ResponsesClient {
    fn provider(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn api(&self) -> Option<&'static str> {
        Some("responses")
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        match self.config.transport {
            Transport::WebSocket => self.stream_ws(request, false, cancel),
            // `auto` stays on SSE for the session once WebSocket failed.
            Transport::Auto if self.ws.unavailable().is_none() => {
                self.stream_ws(request, true, cancel)
            }
            Transport::Auto | Transport::Sse => driver::spawn(
                self.pass(&request),
                ResponsesDecoder::new,
                self.config.credentials.clone(),
                cancel,
            ),
        }
    }

    /// The Platform's (or a compatible server's) `GET /models`. A login
    /// (the ChatGPT backend) has no such list: none is asked for.
    fn list_models(&self) -> etch_model::ModelsFuture<'_> {
        Box::pin(async move {
            if self.config.credentials.is_some() {
                return Ok(Vec::new());
            }
            let url = format!("{}/models", self.config.base_url.trim_end_matches('/'));
            let mut headers = Vec::with_capacity(self.config.extra_headers.len() + 1);
            if let Some(bearer) = &self.config.bearer {
                headers.push(("authorization".to_string(), format!("Bearer {bearer}")));
            }
            headers.extend(self.config.extra_headers.iter().cloned());
            crate::models::list(&url, &headers).await
        })
    }
}

impl ResponsesClient {
    /// A pass over the session's WebSocket; in `auto` mode it hands over to
    /// HTTP/SSE when WebSocket fails before any output. The HTTP pass is
    /// prepared either way so the fallback needs no second encoding path.
    fn stream_ws(
        &self,
        request: ModelRequest,
        auto: bool,
        cancel: CancellationToken,
    ) -> ModelStream {
        let (tx, stream) = stream_channel();
        let http_pass = self.pass(&request);
        let url = conn::url(&self.config.base_url);
        let (effort, summary) = self.reasoning_settings(&request);
        let encoder = Encoder {
            model: self.config.model.clone(),
            effort: effort.map(str::to_owned),
            summary: summary.map(str::to_owned),
        };
        let credentials = self.config.credentials.clone();
        let websocket_headers = self.config.websocket_headers.clone();
        let state = Arc::clone(&self.ws);
        tokio::spawn(async move {
            let prepared = match (
                driver::with_credentials(http_pass, credentials.as_deref()).await,
                url,
            ) {
                (Ok(pass), Ok(url)) => Ok((pass, url)),
                (Err(err), _) | (_, Err(err)) => Err(err),
            };
            let (http_pass, url) = match prepared {
                Ok(prepared) => prepared,
                Err(err) => {
                    tx.send(StreamEvent::Error(err)).await;
                    return;
                }
            };
            let mut headers = http_pass.headers.clone();
            headers.extend(websocket_headers);
            let ws_pass = WsPass {
                state,
                request,
                encoder,
                url,
                headers,
                auto,
                retry: http_pass.retry.clone(),
                idle_timeout: http_pass.idle_timeout,
                limits: http_pass.limits,
                metrics: Metrics {
                    transport: "responses-ws".to_owned(),
                    request_bytes: 0,
                    input_bytes: 0,
                    ..http_pass.metrics.clone()
                },
            };
            match pass::run(ws_pass, &tx, &cancel).await {
                Ended::Finished => {}
                Ended::UseSse { reason, metrics } => {
                    let mut http_pass = http_pass;
                    http_pass.metrics.last_fallback = Some(reason);
                    http_pass.metrics.ws_opens = metrics.ws_opens;
                    driver::run(http_pass, ResponsesDecoder::new, &tx, &cancel).await;
                }
            }
        });
        stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::metrics;
    use etch_model::{
        ContentPart, Message, ProviderItem, RequestOptions, StopReason, SystemLayer, ToolCall,
        ToolSpec,
    };
    use etch_test_support::{FakeServer, Reply, responses_function_calls, responses_text};
    use serde_json::json;

    /// A client for `server` with reasoning off and a retry policy fast
    /// enough for tests.
    fn client(server: &FakeServer) -> ResponsesConfig {
        ResponsesConfig {
            base_url: format!("{}/v1/", server.url()),
            bearer: Some("sk-test".into()),
            model: "gpt-5".into(),
            reasoning_effort: None,
            reasoning_summary: None,
            extra_headers: vec![("ChatGPT-Account-Id".into(), "acct-1".into())],
            credentials: None,
            retry: RetryPolicy {
                max_retries: 2,
                base_delay: Duration::from_millis(1),
                max_retry_after: Duration::from_millis(10),
            },
            idle_timeout: Duration::from_secs(10),
            limits: StreamLimits::default(),
            transport: Transport::Sse,
            websocket_headers: Vec::new(),
        }
    }

    /// A request with a system prompt, one tool and `messages`.
    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            system: vec![SystemLayer {
                name: "base".into(),
                text: "Be brief.".into(),
            }],
            messages,
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "List files.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
            options: RequestOptions {
                session_id: "sess-123".into(),
                ..RequestOptions::default()
            },
        }
    }

    /// Runs one pass and collects every event.
    async fn run(config: ResponsesConfig, request: ModelRequest) -> Vec<StreamEvent> {
        crate::testutil::collect(&ResponsesClient::new(config), request).await
    }

    /// The joined text deltas of a pass.
    fn text(events: &[StreamEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The client identifies as `openai` / `responses` with its model.
    #[test]
    fn identity() {
        let client = ResponsesClient::new(ResponsesConfig {
            base_url: "http://x".into(),
            bearer: None,
            model: "gpt-5".into(),
            reasoning_effort: None,
            reasoning_summary: None,
            extra_headers: Vec::new(),
            credentials: None,
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(1),
            limits: StreamLimits::default(),
            transport: Transport::Sse,
            websocket_headers: Vec::new(),
        });
        assert_eq!(client.provider(), "openai");
        assert_eq!(client.api(), Some("responses"));
        assert_eq!(client.model(), "gpt-5");
    }

    /// E-AUTH-10: Debug output never shows the bearer or header values.
    #[test]
    fn debug_hides_secrets() {
        let server = FakeServer::start(Vec::new()).unwrap();
        let shown = format!("{:?}", ResponsesClient::new(client(&server)));
        assert!(
            !shown.contains("sk-test") && !shown.contains("acct-1"),
            "{shown}"
        );
        assert!(shown.contains("ChatGPT-Account-Id"), "{shown}");
    }

    /// A text pass end to end: `POST /v1/responses` with the bearer, extra
    /// headers and the G19 body; events in order with metrics before Done.
    #[tokio::test]
    async fn streams_text_end_to_end() {
        let server =
            FakeServer::start(vec![Reply::sse(responses_text("Hello from the fake"))]).unwrap();
        let events = run(client(&server), request(vec![Message::user_text("hi")])).await;
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let recorded = &requests[0];
        assert_eq!(recorded.method, "POST");
        assert_eq!(recorded.path, "/v1/responses");
        assert_eq!(recorded.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(recorded.header("chatgpt-account-id"), Some("acct-1"));
        assert_eq!(recorded.header("accept"), Some("text/event-stream"));
        assert_eq!(
            recorded.json(),
            json!({
                "model": "gpt-5",
                "instructions": "Be brief.",
                "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
                "tools": [{"type": "function", "name": "ls", "description": "List files.",
                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                           "strict": false}],
                "stream": true,
                "store": false,
                "prompt_cache_key": "sess-123"
            })
        );
        assert_eq!(
            events.first(),
            Some(&StreamEvent::ResponseInfo {
                response_id: "resp_fake".into(),
                model: "fake-model".into()
            })
        );
        assert_eq!(text(&events), "Hello from the fake");
        let n = events.len();
        assert!(matches!(events[n - 3], StreamEvent::Usage(u) if u.input_tokens == 10));
        assert!(matches!(events[n - 2], StreamEvent::Metrics(_)));
        assert_eq!(
            events[n - 1],
            StreamEvent::Done {
                stop_reason: StopReason::Stop
            }
        );
        let m = metrics(&events);
        assert_eq!(m.transport, "responses-sse");
        assert_eq!(m.requests, 1);
        assert_eq!(m.input_messages, 1);
        assert_eq!(m.tool_schemas, 1);
        assert_eq!(m.request_bytes, recorded.body.len() as u64);
        assert_eq!(m.instruction_bytes, "Be brief.".len() as u64);
        assert!(m.response_bytes > 0 && m.input_bytes > 0 && m.tool_bytes > 0);
        assert_eq!(m.delta_messages, 0);
    }

    /// A tool round with reasoning configured: the request carries reasoning
    /// and include, replays the earlier encrypted reasoning item ahead of its
    /// call, and the streamed calls come back as tool-call events.
    #[tokio::test]
    async fn tool_round_with_reasoning() {
        let server = FakeServer::start(vec![Reply::sse(responses_function_calls(&[
            ("call_a", "ls", r#"{"path":"src"}"#),
            ("call_b", "ls", r#"{"path":"docs"}"#),
        ]))])
        .unwrap();
        let mut config = client(&server);
        config.reasoning_effort = Some("high".into());
        config.reasoning_summary = Some("auto".into());
        let history = vec![
            Message::user_text("list"),
            Message::Assistant {
                content: vec![ContentPart::ToolCall(ToolCall {
                    id: "call_0".into(),
                    name: "ls".into(),
                    arguments: json!({"path": "."}),
                })],
            },
            Message::ProviderItem(ProviderItem {
                provider: "openai".into(),
                api: "responses".into(),
                item_type: "reasoning".into(),
                item: json!({"id": "rs_0", "type": "reasoning", "summary": [], "encrypted_content": "ENC"}),
                model: None,
            }),
            Message::Tool {
                tool_call_id: "call_0".into(),
                tool_name: "ls".into(),
                content: vec![ContentPart::text("src docs")],
                is_error: false,
            },
        ];
        let events = run(config, request(history)).await;
        let body = server.requests()[0].json();
        assert_eq!(
            body["reasoning"],
            json!({"effort": "high", "summary": "auto"})
        );
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert!(body.get("previous_response_id").is_none());
        let types: Vec<&str> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "message",
                "reasoning",
                "function_call",
                "function_call_output"
            ]
        );
        let starts: Vec<(usize, &str)> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallStart { index, id, .. } => Some((*index, id.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(starts, [(0, "call_a"), (1, "call_b")]);
        let args: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta {
                    index: 1,
                    arguments,
                } => Some(arguments.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(args, r#"{"path":"docs"}"#);
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Done {
                stop_reason: StopReason::ToolUse
            })
        );
    }

    /// Request options override the client's reasoning settings; `off`
    /// turns reasoning off for that request.
    #[test]
    fn request_options_override_reasoning() {
        let server = FakeServer::start(Vec::new()).unwrap();
        let mut config = client(&server);
        config.reasoning_effort = Some("minimal".into());
        config.reasoning_summary = Some("auto".into());
        let client = ResponsesClient::new(config);
        let mut request = request(vec![Message::user_text("hi")]);
        let body =
            |pass: HttpPass| serde_json::from_slice::<serde_json::Value>(&pass.body).unwrap();
        let plain = body(client.pass(&request).unwrap());
        assert_eq!(
            plain["reasoning"],
            json!({"effort": "minimal", "summary": "auto"})
        );
        request.options.reasoning_effort = Some("xhigh".into());
        request.options.reasoning_summary = Some("none".into());
        let custom = body(client.pass(&request).unwrap());
        assert_eq!(custom["reasoning"], json!({"effort": "xhigh"}));
        request.options.reasoning_effort = Some("off".into());
        let off = body(client.pass(&request).unwrap());
        assert!(off.get("reasoning").is_none() && off.get("include").is_none());
    }

    /// C34: a 429 before any output is retried after the backoff, and the
    /// second attempt's answer is the pass; metrics count both requests.
    #[tokio::test]
    async fn retries_429_then_succeeds() {
        let limited = Reply::json(
            429,
            &json!({"error": {"message": "Rate limit reached.", "type": "requests", "code": "rate_limit_exceeded"}}),
        );
        let server =
            FakeServer::start(vec![limited, Reply::sse(responses_text("second time"))]).unwrap();
        let events = run(client(&server), request(vec![Message::user_text("hi")])).await;
        assert_eq!(server.requests().len(), 2);
        assert!(
            !events.iter().any(|e| matches!(e, StreamEvent::Error(_))),
            "{events:?}"
        );
        assert_eq!(text(&events), "second time");
        assert_eq!(metrics(&events).requests, 2);
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Done {
                stop_reason: StopReason::Stop
            })
        );
    }

    /// A context overflow answered with 400 is not retried and arrives as a
    /// typed error carrying the provider's message.
    #[tokio::test]
    async fn context_overflow_status_is_typed() {
        let overflow = Reply::json(
            400,
            &json!({"error": {"message": "Your input exceeds the context window of this model.", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
        );
        let server = FakeServer::start(vec![overflow]).unwrap();
        let events = run(client(&server), request(vec![Message::user_text("hi")])).await;
        assert_eq!(server.requests().len(), 1);
        let Some(StreamEvent::Error(err)) = events.last() else {
            panic!("no error: {events:?}");
        };
        assert_eq!(err.kind, ErrorKind::ContextOverflow);
        assert!(
            err.message.contains("exceeds the context window"),
            "{err:?}"
        );
    }

    /// A stream cut off after output is reported (not retried) as the
    /// unfinished-stream protocol error.
    #[tokio::test]
    async fn unterminated_stream_is_an_error() {
        let mut frames = responses_text("partial answer");
        frames.truncate(frames.len() - 1);
        let server = FakeServer::start(vec![Reply::sse(frames)]).unwrap();
        let events = run(client(&server), request(vec![Message::user_text("hi")])).await;
        assert_eq!(server.requests().len(), 1);
        let Some(StreamEvent::Error(err)) = events.last() else {
            panic!("no error: {events:?}");
        };
        assert_eq!(err.kind, ErrorKind::Protocol);
        assert!(
            err.message.contains("ended before the model finished"),
            "{err:?}"
        );
    }
}
