//! The Chat Completions client: one streamed `POST {base_url}/chat/completions`
//! per model pass, with retries before any output (C34), an idle timeout,
//! and metrics (G4).

use std::time::{Duration, Instant};

use etch_model::{
    ErrorKind, Metrics, ModelClient, ModelError, ModelRequest, ModelStream, StreamEvent,
    StreamSender, stream_channel,
};
use tokio_util::sync::CancellationToken;

use crate::http::{self, RetryPolicy};
use crate::openai::chat_decode::{ChatDecoder, decode_error_body};
use crate::openai::chat_request;
use crate::sse::{SseFrame, SseParser};

/// Most bytes of an error body kept for the message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Settings of a Chat Completions client.
#[derive(Debug, Clone)]
pub struct ChatConfig {
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Bearer credential; `None` sends no Authorization header.
    pub api_key: Option<String>,
    /// Model name sent in requests.
    pub model: String,
    /// Ask for usage with `stream_options` (G19).
    pub stream_usage: bool,
    /// Retry policy (C34).
    pub retry: RetryPolicy,
    /// How long the stream may be silent before it counts as stalled.
    pub idle_timeout: Duration,
}

/// An OpenAI-compatible Chat Completions provider.
#[derive(Debug, Clone)]
pub struct ChatClient {
    /// Settings.
    config: ChatConfig,
}

impl ChatClient {
    /// A client with `config`.
    pub fn new(config: ChatConfig) -> Self {
        Self { config }
    }

    /// The endpoint URL.
    fn url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        )
    }
}

impl ModelClient for ChatClient {
    fn provider(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn api(&self) -> Option<&'static str> {
        Some("chat")
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let (tx, stream) = stream_channel();
        let client = self.clone();
        tokio::spawn(async move {
            let pass = Pass::new(&client, &request);
            pass.run(&client, &tx, &cancel).await;
        });
        stream
    }
}

/// What one model pass sends and measures.
struct Pass {
    /// The serialized body.
    body: Vec<u8>,
    /// Metrics so far.
    metrics: Metrics,
    /// When the pass started.
    started: Instant,
    /// Serialization failure, reported instead of sending.
    error: Option<ModelError>,
    /// A `Done` decoded mid-stream, held until the metrics are sent.
    done: Option<StreamEvent>,
}

/// How one HTTP attempt ended.
enum Attempt {
    /// The stream finished (successfully or with an error event sent).
    Finished,
    /// Failed before any output; may be retried.
    Retry(ModelError, Option<Duration>),
    /// Cancelled; nothing more to send.
    Cancelled,
}

impl Pass {
    /// Serializes the request and records its shape.
    fn new(client: &ChatClient, request: &ModelRequest) -> Self {
        let body = chat_request::build(request, &client.config.model, client.config.stream_usage);
        let mut metrics = Metrics {
            transport: "chat-sse".to_string(),
            input_messages: request.messages.len() as u64,
            tool_schemas: request.tools.len() as u64,
            instruction_bytes: request.system_prompt().len() as u64,
            ..Metrics::default()
        };
        metrics.tool_bytes = serde_json::to_vec(&body.tools).map_or(0, |v| v.len() as u64);
        metrics.input_bytes = serde_json::to_vec(&body.messages).map_or(0, |v| v.len() as u64);
        match serde_json::to_vec(&body) {
            Ok(bytes) => {
                metrics.request_bytes = bytes.len() as u64;
                Self {
                    body: bytes,
                    metrics,
                    started: Instant::now(),
                    error: None,
                    done: None,
                }
            }
            Err(e) => Self {
                body: Vec::new(),
                metrics,
                started: Instant::now(),
                error: Some(ModelError::new(
                    ErrorKind::Other,
                    format!("cannot encode the request: {e}"),
                )),
                done: None,
            },
        }
    }

    /// Runs attempts until one finishes, retrying transient failures that
    /// happened before any output.
    async fn run(mut self, client: &ChatClient, tx: &StreamSender, cancel: &CancellationToken) {
        if let Some(err) = self.error.take() {
            tx.send(StreamEvent::Error(err)).await;
            return;
        }
        let policy = &client.config.retry;
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.metrics.requests += 1;
            match self.attempt(client, tx, cancel).await {
                Attempt::Finished | Attempt::Cancelled => return,
                Attempt::Retry(err, retry_after) => {
                    if attempt > policy.max_retries {
                        let message = if policy.max_retries > 0 {
                            format!(
                                "{} (gave up after {} retries)",
                                err.message, policy.max_retries
                            )
                        } else {
                            err.message
                        };
                        self.finish_metrics();
                        tx.send(StreamEvent::Metrics(self.metrics.clone())).await;
                        tx.send(StreamEvent::Error(ModelError::new(err.kind, message)))
                            .await;
                        return;
                    }
                    let delay = policy.delay(attempt, retry_after);
                    if !http::sleep_unless_cancelled(delay, cancel).await {
                        return;
                    }
                }
            }
        }
    }

    /// Fills in the pass duration.
    fn finish_metrics(&mut self) {
        self.metrics.duration_ms = millis(self.started.elapsed());
    }

    /// One HTTP request and its stream.
    async fn attempt(
        &mut self,
        client: &ChatClient,
        tx: &StreamSender,
        cancel: &CancellationToken,
    ) -> Attempt {
        let url = client.url();
        let http = match http::client() {
            Ok(h) => h,
            Err(e) => {
                tx.send(StreamEvent::Error(e)).await;
                return Attempt::Finished;
            }
        };
        let mut builder = http
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(self.body.clone());
        if let Some(key) = &client.config.api_key {
            builder = builder.bearer_auth(key);
        }
        let sent = tokio::select! {
            () = cancel.cancelled() => return Attempt::Cancelled,
            r = builder.send() => r,
        };
        let mut response = match sent {
            Ok(r) => r,
            Err(e) => return Attempt::Retry(http::transport_error(&url, &e), None),
        };
        self.metrics.headers_ms = millis(self.started.elapsed());
        let status = response.status();
        if !status.is_success() {
            let retry_after = http::retry_after(response.headers());
            let body = read_error_body(&mut response, cancel).await;
            self.metrics.response_bytes += body.len() as u64;
            let err = decode_error_body(status.as_u16(), &body);
            let err = ModelError::new(
                err.kind,
                format!("{url} answered {status}: {}", err.message),
            );
            if err.kind == ErrorKind::Transient {
                return Attempt::Retry(err, retry_after);
            }
            self.finish_metrics();
            tx.send(StreamEvent::Metrics(self.metrics.clone())).await;
            tx.send(StreamEvent::Error(err)).await;
            return Attempt::Finished;
        }
        self.stream_body(&url, &mut response, client.config.idle_timeout, tx, cancel)
            .await
    }

    /// Reads the SSE body, forwarding decoded events.
    async fn stream_body(
        &mut self,
        url: &str,
        response: &mut reqwest::Response,
        idle: Duration,
        tx: &StreamSender,
        cancel: &CancellationToken,
    ) -> Attempt {
        let mut parser = SseParser::new();
        let mut decoder = ChatDecoder::new();
        let mut frames: Vec<SseFrame> = Vec::new();
        let mut events: Vec<StreamEvent> = Vec::new();
        loop {
            let chunk = tokio::select! {
                () = cancel.cancelled() => return Attempt::Cancelled,
                r = tokio::time::timeout(idle, response.chunk()) => r,
            };
            let chunk = match chunk {
                Err(_) => {
                    let err = ModelError::new(
                        ErrorKind::Transient,
                        format!(
                            "{url} sent nothing for {} seconds; the stream looks stalled",
                            idle.as_secs()
                        ),
                    );
                    return self.fail_or_retry(err, &decoder, tx).await;
                }
                Ok(Err(e)) => {
                    let err = ModelError::new(
                        ErrorKind::Transient,
                        format!("the connection to {url} broke mid-stream: {e}"),
                    );
                    return self.fail_or_retry(err, &decoder, tx).await;
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(bytes))) => bytes,
            };
            parser.push(&chunk, &mut frames);
            self.metrics.response_bytes = parser.bytes_read();
            if let Err(err) = self
                .decode(&mut frames, &mut decoder, &mut events, tx)
                .await
            {
                return self.fail_or_retry(err, &decoder, tx).await;
            }
        }
        parser.finish(&mut frames);
        self.metrics.response_bytes = parser.bytes_read();
        if let Err(err) = self
            .decode(&mut frames, &mut decoder, &mut events, tx)
            .await
        {
            return self.fail_or_retry(err, &decoder, tx).await;
        }
        if let Err(err) = decoder.finish(&mut events) {
            return self.fail_or_retry(err, &decoder, tx).await;
        }
        self.finish_metrics();
        // Done is held back so Metrics reach the loop before the pass ends.
        let mut done = None;
        for event in events.drain(..) {
            if matches!(event, StreamEvent::Done { .. }) {
                done = Some(event);
            } else {
                tx.send(event).await;
            }
        }
        tx.send(StreamEvent::Metrics(self.metrics.clone())).await;
        if let Some(done) = done.or(self.done.take()) {
            tx.send(done).await;
        }
        Attempt::Finished
    }

    /// Decodes pending frames and forwards their events.
    async fn decode(
        &mut self,
        frames: &mut Vec<SseFrame>,
        decoder: &mut ChatDecoder,
        events: &mut Vec<StreamEvent>,
        tx: &StreamSender,
    ) -> Result<(), ModelError> {
        for frame in frames.drain(..) {
            decoder.frame(&frame.data, events)?;
        }
        if !events.is_empty() && self.metrics.first_event_ms == 0 {
            self.metrics.first_event_ms = millis(self.started.elapsed()).max(1);
        }
        for event in events.drain(..) {
            if matches!(event, StreamEvent::Done { .. }) {
                self.done = Some(event);
            } else if !tx.send(event).await {
                break;
            }
        }
        Ok(())
    }

    /// A failure after the stream began: retried only if nothing was shown
    /// yet (C34), otherwise reported.
    async fn fail_or_retry(
        &mut self,
        err: ModelError,
        decoder: &ChatDecoder,
        tx: &StreamSender,
    ) -> Attempt {
        if err.kind == ErrorKind::Transient && !decoder.has_output() {
            return Attempt::Retry(err, None);
        }
        self.finish_metrics();
        tx.send(StreamEvent::Metrics(self.metrics.clone())).await;
        tx.send(StreamEvent::Error(err)).await;
        Attempt::Finished
    }
}

/// Reads at most [`ERROR_BODY_LIMIT`] bytes of an error body as text.
async fn read_error_body(response: &mut reqwest::Response, cancel: &CancellationToken) -> String {
    let mut body = Vec::new();
    loop {
        let chunk = tokio::select! {
            () = cancel.cancelled() => break,
            r = tokio::time::timeout(Duration::from_secs(30), response.chunk()) => r,
        };
        match chunk {
            Ok(Ok(Some(bytes))) => {
                body.extend_from_slice(&bytes);
                if body.len() >= ERROR_BODY_LIMIT {
                    body.truncate(ERROR_BODY_LIMIT);
                    break;
                }
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Milliseconds of a duration, saturating.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
