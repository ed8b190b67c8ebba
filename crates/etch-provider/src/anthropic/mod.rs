//! The Anthropic Messages provider (E-MOD-04, C29): one streamed
//! `POST {base_url}/v1/messages` per model pass, authenticated with
//! `x-api-key` (`ANTHROPIC_API_KEY`) and run by the shared pass driver
//! (retries, idle timeout, metrics) with the Anthropic decoder.
//!
//! This module owns the client settings, the mapping of a reasoning effort
//! to a thinking budget (C35) and the pass it hands the driver; the body
//! shape lives in `request`, the stream and error decoding in `decode`. It
//! must not know how the CLI finds credentials or settings, nor anything
//! about sessions, tools or the loop.

mod decode;
mod request;

use std::fmt;
use std::time::Duration;

use etch_model::{
    ErrorKind, Metrics, ModelClient, ModelError, ModelRequest, ModelStream, StreamEvent,
};
use tokio_util::sync::CancellationToken;

use self::decode::decode_error_body;
// Public for the fuzz targets, which feed it hostile streams.
pub use self::decode::AnthropicDecoder;
/// The Messages body for a request, public for the property tests that
/// check every projection makes a valid one.
#[doc(hidden)]
pub use self::request::build as build_body;
use crate::driver::{self, HttpPass, StreamDecoder};
use crate::http::{RetryPolicy, StreamLimits};
use crate::sse::SseFrame;

/// The default API root (decisions: `[anthropic] base_url`).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The default model (decisions).
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// The default output token limit (decisions: `max_tokens = 16384`).
pub const DEFAULT_MAX_TOKENS: u32 = 16384;

/// The `anthropic-version` header every request carries.
const API_VERSION: &str = "2023-06-01";

/// The thinking budget for a reasoning effort (C35): `minimal` 1024, `low`
/// 2048, `medium` 8192, `high` 16384, `xhigh` 32000 tokens; `off`, `none`
/// and unknown values mean no thinking. Case and surrounding spaces are
/// ignored.
pub fn thinking_budget(effort: &str) -> Option<u32> {
    match effort.trim().to_ascii_lowercase().as_str() {
        "minimal" => Some(1024),
        "low" => Some(2048),
        "medium" => Some(8192),
        "high" => Some(16384),
        "xhigh" => Some(32000),
        _ => None,
    }
}

/// Settings of an Anthropic client.
#[derive(Clone)]
pub struct AnthropicConfig {
    /// API root, e.g. [`DEFAULT_BASE_URL`]; requests go to
    /// `{base_url}/v1/messages`.
    pub base_url: String,
    /// The API key, sent as `x-api-key`; empty sends no key.
    pub api_key: String,
    /// Model name sent in requests.
    pub model: String,
    /// Output token limit; raised when thinking needs more room.
    pub max_tokens: u32,
    /// Extended-thinking budget; `None` sends no `thinking`.
    pub thinking_budget: Option<u32>,
    /// Retry policy (C34).
    pub retry: RetryPolicy,
    /// How long the stream may be silent before it counts as stalled.
    pub idle_timeout: Duration,
    /// Caps on one stream frame and one assembled message.
    pub limits: StreamLimits,
}

impl Default for AnthropicConfig {
    /// The decided defaults with no key and no thinking.
    fn default() -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: String::new(),
            model: DEFAULT_MODEL.to_string(),
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
            retry: RetryPolicy::default(),
            idle_timeout: crate::http::DEFAULT_IDLE_TIMEOUT,
            limits: StreamLimits::default(),
        }
    }
}

impl fmt::Debug for AnthropicConfig {
    /// Like a derived `Debug`, but the key is never printed (logs and panic
    /// messages must not leak it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("thinking_budget", &self.thinking_budget)
            .field("retry", &self.retry)
            .field("idle_timeout", &self.idle_timeout)
            .field("limits", &self.limits)
            .finish()
    }
}

/// Anthropic takes images up to 8000 px a side, but only up to
/// [`MANY_IMAGES_EDGE`] in a request of more than this many images.
const MANY_IMAGES: usize = 20;

/// The long edge allowed in a request of more than [`MANY_IMAGES`].
const MANY_IMAGES_EDGE: u32 = 2000;

/// `request` with every image over [`MANY_IMAGES_EDGE`] made smaller,
/// when it holds more than [`MANY_IMAGES`] images and one is that large
/// (only with `[tools.read] image_max_edge` raised above the default);
/// `None` when it can go as it is.
fn many_images_fitted(request: &ModelRequest) -> Option<ModelRequest> {
    let images = || {
        request
            .messages
            .iter()
            .flat_map(etch_model::Message::parts)
            .filter_map(|part| match part {
                etch_model::ContentPart::Image(image) => Some(image),
                _ => None,
            })
    };
    let large = |image: &etch_model::Image| image.width.max(image.height) > MANY_IMAGES_EDGE;
    if images().count() <= MANY_IMAGES || !images().any(large) {
        return None;
    }
    let mut fitted = request.clone();
    for part in fitted
        .messages
        .iter_mut()
        .flat_map(etch_model::Message::parts_mut)
    {
        let etch_model::ContentPart::Image(image) = part else {
            continue;
        };
        if !large(image) {
            continue;
        }
        *part = match etch_image::fit(image, MANY_IMAGES_EDGE) {
            Ok(smaller) => etch_model::ContentPart::Image(smaller),
            Err(err) => etch_model::ContentPart::text(image.omitted(&format!(
                "it could not be made small enough for a request of more than {MANY_IMAGES} images: {err}"
            ))),
        };
    }
    Some(fitted)
}

/// The native Anthropic Messages provider.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    /// Settings.
    config: AnthropicConfig,
}

impl AnthropicClient {
    /// A client with `config`.
    pub fn new(config: AnthropicConfig) -> Self {
        Self { config }
    }

    /// Serializes `request` into the pass the driver sends, with the
    /// request-shape metrics filled in.
    fn pass(&self, request: &ModelRequest) -> Result<HttpPass, ModelError> {
        let config = &self.config;
        let fitted = many_images_fitted(request);
        let request = fitted.as_ref().unwrap_or(request);
        let body = request::build(
            request,
            &config.model,
            config.max_tokens,
            config.thinking_budget,
        );
        let encode = |e: serde_json::Error| {
            ModelError::new(ErrorKind::Other, format!("cannot encode the request: {e}"))
        };
        let bytes = serde_json::to_vec(&body).map_err(encode)?;
        let metrics = Metrics {
            transport: "anthropic-sse".to_string(),
            input_messages: request.messages.len() as u64,
            tool_schemas: request.tools.len() as u64,
            instruction_bytes: body.system.as_ref().map_or(0, |s| s.len() as u64),
            input_bytes: serde_json::to_vec(&body.messages).map_or(0, |v| v.len() as u64),
            tool_bytes: if body.tools.is_empty() {
                0
            } else {
                serde_json::to_vec(&body.tools).map_or(0, |v| v.len() as u64)
            },
            request_bytes: bytes.len() as u64,
            ..Metrics::default()
        };
        let mut headers = vec![("anthropic-version".to_string(), API_VERSION.to_string())];
        // An empty key sends none: a server that is not Anthropic's gets
        // no key unless the user's configuration sends it there.
        if !config.api_key.is_empty() {
            headers.insert(0, ("x-api-key".to_string(), config.api_key.clone()));
        }
        Ok(HttpPass {
            url: format!("{}/v1/messages", config.base_url.trim_end_matches('/')),
            headers,
            body: bytes,
            retry: config.retry.clone(),
            idle_timeout: config.idle_timeout,
            limits: config.limits,
            metrics,
            error_body: decode_error_body,
        })
    }
}

impl StreamDecoder for AnthropicDecoder {
    fn frame(&mut self, frame: &SseFrame, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        AnthropicDecoder::frame(self, &frame.data, out)
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        AnthropicDecoder::finish(self, out)
    }

    fn has_output(&self) -> bool {
        AnthropicDecoder::has_output(self)
    }
}

impl ModelClient for AnthropicClient {
    fn provider(&self) -> &'static str {
        request::PROVIDER
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn api(&self) -> Option<&'static str> {
        Some(request::API)
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        driver::spawn(self.pass(&request), AnthropicDecoder::new, None, cancel)
    }

    fn list_models(&self) -> etch_model::ModelsFuture<'_> {
        Box::pin(async move {
            let config = &self.config;
            let url = format!("{}/v1/models", config.base_url.trim_end_matches('/'));
            let mut headers = vec![("anthropic-version".to_string(), API_VERSION.to_string())];
            if !config.api_key.is_empty() {
                headers.push(("x-api-key".to_string(), config.api_key.clone()));
            }
            crate::models::list(&url, &headers).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::metrics;
    use etch_model::{
        ContentPart, Message, ProviderItem, RequestOptions, StopReason, SystemLayer, ToolSpec,
    };
    use etch_test_support::{FakeServer, Reply, anthropic_text, anthropic_tool_uses, sse_event};
    use serde_json::{Value, json};

    /// A client of `server` with key `sk-test`, no thinking and fast retries.
    fn client(server: &FakeServer, thinking_budget: Option<u32>) -> AnthropicClient {
        AnthropicClient::new(AnthropicConfig {
            base_url: format!("{}/", server.url()),
            api_key: "sk-test".into(),
            model: "claude-test".into(),
            thinking_budget,
            retry: RetryPolicy {
                max_retries: 3,
                base_delay: Duration::from_millis(1),
                max_retry_after: Duration::from_millis(1),
            },
            idle_timeout: Duration::from_secs(10),
            ..AnthropicConfig::default()
        })
    }

    /// Above 20 images, those larger than 2000 px are lowered to it and
    /// the others kept; at 20 nothing changes.
    #[test]
    fn many_images_are_lowered_to_2000_px() {
        let image = |w: u32, h: u32| {
            let bytes = etch_image::sample(w, h, etch_model::MediaType::Png).unwrap();
            ContentPart::Image(etch_model::Image::new(
                bytes,
                etch_model::MediaType::Png,
                w,
                h,
            ))
        };
        let mut content = vec![ContentPart::text("look"), image(3000, 1000)];
        content.extend((0..19).map(|_| image(10, 10)));
        let mut request = request("x");
        request.messages = vec![Message::User { content }];
        assert!(
            many_images_fitted(&request).is_none(),
            "20 images go as they are"
        );
        let Message::User { content } = &mut request.messages[0] else {
            panic!("not a user message");
        };
        content.push(image(10, 10));
        let fitted = many_images_fitted(&request).unwrap();
        let sizes: Vec<(u32, u32)> = fitted.messages[0]
            .parts()
            .iter()
            .filter_map(|p| match p {
                ContentPart::Image(i) => Some((i.width, i.height)),
                _ => None,
            })
            .collect();
        assert_eq!(sizes.len(), 21);
        assert_eq!(sizes[0], (2000, 666));
        assert!(sizes[1..].iter().all(|s| *s == (10, 10)));
    }

    /// A request with a system layer, one user message and one tool.
    fn request(text: &str) -> ModelRequest {
        ModelRequest {
            system: vec![SystemLayer {
                name: "base".into(),
                text: "Be brief.".into(),
            }],
            messages: vec![Message::user_text(text)],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Reads a file.".into(),
                parameters: json!({"type": "object"}),
            }],
            options: RequestOptions::default(),
        }
    }

    /// Runs one pass to its end and returns every event.
    async fn run(client: &AnthropicClient, request: ModelRequest) -> Vec<StreamEvent> {
        crate::testutil::collect(client, request).await
    }

    /// C35: efforts map to the decided budgets; off, none and unknown
    /// values mean no thinking.
    #[test]
    fn efforts_map_to_thinking_budgets() {
        let cases = [
            ("minimal", Some(1024)),
            ("low", Some(2048)),
            ("medium", Some(8192)),
            ("high", Some(16384)),
            ("xhigh", Some(32000)),
            (" High ", Some(16384)),
            ("off", None),
            ("none", None),
            ("extreme", None),
        ];
        for (effort, budget) in cases {
            assert_eq!(thinking_budget(effort), budget, "{effort}");
        }
    }

    /// The defaults are the decided ones, and `Debug` never shows the key.
    #[test]
    fn defaults_and_redacted_debug() {
        let config = AnthropicConfig {
            api_key: "sk-secret".into(),
            ..AnthropicConfig::default()
        };
        assert_eq!(config.base_url, "https://api.anthropic.com");
        assert_eq!(config.model, "claude-sonnet-4-5");
        assert_eq!(config.max_tokens, 16384);
        assert!(!format!("{config:?}").contains("sk-secret"));
        let client = AnthropicClient::new(config);
        assert_eq!(client.provider(), "anthropic");
        assert_eq!(client.api(), Some("messages"));
        assert_eq!(client.model(), "claude-sonnet-4-5");
    }

    /// End to end: the request goes to /v1/messages with the key, version
    /// and native body, and the streamed text, usage, response info,
    /// metrics and stop come back in order.
    #[tokio::test]
    async fn streams_text_from_the_messages_endpoint() {
        let server =
            FakeServer::start(vec![Reply::sse(anthropic_text("Hello there, friend"))]).unwrap();
        let client = client(&server, None);
        let events = run(&client, request("hi")).await;
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let sent = &requests[0];
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.path, "/v1/messages");
        assert_eq!(sent.header("x-api-key"), Some("sk-test"));
        assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(sent.header("content-type"), Some("application/json"));
        assert_eq!(
            sent.json(),
            json!({
                "model": "claude-test",
                "max_tokens": 16384,
                "system": "Be brief.",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "tools": [{"name": "read", "description": "Reads a file.", "input_schema": {"type": "object"}}],
                "stream": true,
            })
        );
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Hello there, friend");
        assert_eq!(
            events[0],
            StreamEvent::ResponseInfo {
                response_id: "msg_fake".into(),
                model: "fake-model".into()
            }
        );
        let n = events.len();
        assert!(
            matches!(&events[n - 3], StreamEvent::Usage(u) if u.input_tokens == 10 && u.output_tokens == 3 && u.total_tokens == 13)
        );
        assert!(matches!(&events[n - 2], StreamEvent::Metrics(_)));
        assert_eq!(
            events[n - 1],
            StreamEvent::Done {
                stop_reason: StopReason::Stop
            }
        );
        let m = metrics(&events);
        assert_eq!(m.transport, "anthropic-sse");
        assert_eq!(m.requests, 1);
        assert_eq!(m.input_messages, 1);
        assert_eq!(m.tool_schemas, 1);
        assert_eq!(m.instruction_bytes, "Be brief.".len() as u64);
        assert_eq!(m.request_bytes, sent.body.len() as u64);
        assert!(m.input_bytes > 0 && m.tool_bytes > 0 && m.response_bytes > 0);
    }

    /// End to end: tool uses arrive as calls with joined input, the stop
    /// reason is tool use, and a second pass sends the call and its result
    /// back as `tool_use` and `tool_result` blocks.
    #[tokio::test]
    async fn tool_use_round_trip() {
        let server = FakeServer::start(vec![
            Reply::sse(anthropic_tool_uses(&[
                ("toolu_1", "read", r#"{"path":"a.txt"}"#),
                ("toolu_2", "read", r#"{"path":"b.txt"}"#),
            ])),
            Reply::sse(anthropic_text("done")),
        ])
        .unwrap();
        let client = client(&server, None);
        let events = run(&client, request("read both")).await;
        let mut calls: Vec<(String, String)> = Vec::new();
        for event in &events {
            match event {
                StreamEvent::ToolCallStart { index, id, .. } => {
                    assert_eq!(*index, calls.len());
                    calls.push((id.clone(), String::new()));
                }
                StreamEvent::ToolCallDelta { index, arguments } => {
                    calls[*index].1.push_str(arguments);
                }
                _ => {}
            }
        }
        assert_eq!(
            calls,
            [
                ("toolu_1".to_string(), r#"{"path":"a.txt"}"#.to_string()),
                ("toolu_2".to_string(), r#"{"path":"b.txt"}"#.to_string()),
            ]
        );
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Done {
                stop_reason: StopReason::ToolUse
            })
        );
        let mut next = request("read both");
        next.messages.push(Message::Assistant {
            content: calls
                .iter()
                .map(|(id, args)| {
                    ContentPart::ToolCall(etch_model::ToolCall {
                        id: id.clone(),
                        name: "read".into(),
                        arguments: serde_json::from_str(args).unwrap(),
                    })
                })
                .collect(),
        });
        for (id, _) in &calls {
            next.messages.push(Message::Tool {
                tool_call_id: id.clone(),
                tool_name: "read".into(),
                content: vec![ContentPart::text(format!("contents of {id}"))],
                is_error: false,
            });
        }
        let events = run(&client, next).await;
        assert!(events.contains(&StreamEvent::TextDelta("done".into())));
        let body = server.requests()[1].json();
        assert_eq!(body["messages"].as_array().unwrap().len(), 3);
        assert_eq!(
            body["messages"][1]["content"][1],
            json!({"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b.txt"}})
        );
        assert_eq!(
            body["messages"][2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "contents of toolu_1", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "contents of toolu_2", "is_error": false},
            ]})
        );
    }

    /// End to end with thinking: the request carries the budget, the signed
    /// thinking block comes back as a provider item, and replaying it puts
    /// the block verbatim at the head of the assistant message.
    #[tokio::test]
    async fn thinking_is_requested_kept_and_replayed() {
        let data = |v: Value| sse_event(v["type"].as_str().unwrap(), &v.to_string());
        let mut frames = anthropic_tool_uses(&[("toolu_1", "read", r#"{"path":"a"}"#)]);
        // Put a signed thinking block (index 0) before the tool use, which
        // moves to index 1.
        let shifted: Vec<String> = frames
            .drain(1..)
            .map(|f| f.replace("\"index\":0", "\"index\":1"))
            .collect();
        frames.extend([
            data(json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""}})),
            data(json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Read a first."}})),
            data(json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "signature_delta", "signature": "c2ln"}})),
            data(json!({"type": "content_block_stop", "index": 0})),
        ]);
        frames.extend(shifted);
        let server =
            FakeServer::start(vec![Reply::sse(frames), Reply::sse(anthropic_text("ok"))]).unwrap();
        let client = client(&server, thinking_budget("medium"));
        let events = run(&client, request("go")).await;
        let items: Vec<ProviderItem> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ProviderItem(item) => Some(item.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(items.len(), 1);
        assert_eq!(
            items[0].item,
            json!({"type": "thinking", "thinking": "Read a first.", "signature": "c2ln"})
        );
        assert!(events.contains(&StreamEvent::ToolCallStart {
            index: 1,
            id: "toolu_1".into(),
            name: "read".into()
        }));
        let first = server.requests()[0].json();
        assert_eq!(
            first["thinking"],
            json!({"type": "enabled", "budget_tokens": 8192})
        );
        assert_eq!(first["max_tokens"], 16384);
        // The core's history order: assistant, its provider items, results.
        let mut next = request("go");
        next.messages.push(Message::Assistant {
            content: vec![ContentPart::ToolCall(etch_model::ToolCall {
                id: "toolu_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
            })],
        });
        next.messages.push(Message::ProviderItem(items[0].clone()));
        next.messages.push(Message::Tool {
            tool_call_id: "toolu_1".into(),
            tool_name: "read".into(),
            content: vec![ContentPart::text("A")],
            is_error: false,
        });
        run(&client, next).await;
        let second = server.requests()[1].json();
        assert_eq!(second["messages"][1]["content"][0], items[0].item);
        assert_eq!(second["messages"][1]["content"][1]["type"], "tool_use");
        assert!(second.get("thinking").is_some());
    }

    /// C34: a 429 before any output is retried, and the retry's stream is
    /// the answer; the metrics count both requests.
    #[tokio::test]
    async fn rate_limit_is_retried() {
        let limited = json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}});
        let server = FakeServer::start(vec![
            Reply::json(429, &limited),
            Reply::sse(anthropic_text("after the wait")),
        ])
        .unwrap();
        let events = run(&client(&server, None), request("hi")).await;
        assert_eq!(server.requests().len(), 2);
        assert!(!events.iter().any(|e| matches!(e, StreamEvent::Error(_))));
        assert!(events.contains(&StreamEvent::TextDelta("after th".into())));
        assert_eq!(metrics(&events).requests, 2);
        assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
    }

    /// An in-stream `overloaded_error` before any content block is retried
    /// like a 529 (C34: nothing was shown yet).
    #[tokio::test]
    async fn overload_event_before_output_is_retried() {
        let mut failing = anthropic_text("lost");
        failing.truncate(1);
        failing.push(sse_event(
            "error",
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                .to_string(),
        ));
        let server = FakeServer::start(vec![
            Reply::sse(failing),
            Reply::sse(anthropic_text("second try")),
        ])
        .unwrap();
        let events = run(&client(&server, None), request("hi")).await;
        assert_eq!(server.requests().len(), 2);
        assert!(events.contains(&StreamEvent::TextDelta("second t".into())));
        assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
    }

    /// A 529 (overloaded) that persists is retried, then reported as a
    /// transient error with Anthropic's message.
    #[tokio::test]
    async fn persistent_overload_gives_up() {
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        let server = FakeServer::start(vec![
            Reply::json(529, &overloaded),
            Reply::json(529, &overloaded),
        ])
        .unwrap();
        let mut client = client(&server, None);
        client.config.retry.max_retries = 1;
        let events = run(&client, request("hi")).await;
        assert_eq!(server.requests().len(), 2);
        let Some(StreamEvent::Error(err)) = events.last() else {
            panic!("no error: {events:?}");
        };
        assert_eq!(err.kind, ErrorKind::Transient);
        assert!(err.message.contains("Overloaded"), "{}", err.message);
        assert!(
            err.message.contains("gave up after 1 retries"),
            "{}",
            err.message
        );
    }

    /// A 400 "prompt is too long" is a context overflow, not retried, with
    /// Anthropic's message shown.
    #[tokio::test]
    async fn prompt_too_long_is_a_context_overflow() {
        let body = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}});
        let server = FakeServer::start(vec![Reply::json(400, &body)]).unwrap();
        let events = run(&client(&server, None), request("hi")).await;
        assert_eq!(server.requests().len(), 1);
        let Some(StreamEvent::Error(err)) = events.last() else {
            panic!("no error: {events:?}");
        };
        assert_eq!(err.kind, ErrorKind::ContextOverflow);
        assert!(
            err.message.contains("prompt is too long"),
            "{}",
            err.message
        );
        assert!(matches!(&events[0], StreamEvent::Metrics(m) if m.transport == "anthropic-sse"));
    }

    /// A 401 is an auth error, not retried.
    #[tokio::test]
    async fn bad_key_is_an_auth_error() {
        let body = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
        let server = FakeServer::start(vec![Reply::json(401, &body)]).unwrap();
        let events = run(&client(&server, None), request("hi")).await;
        assert_eq!(server.requests().len(), 1);
        assert!(matches!(
            events.last(),
            Some(StreamEvent::Error(err)) if err.kind == ErrorKind::Auth && err.message.contains("invalid x-api-key")
        ));
    }
}
