//! The streaming pass driver shared by every HTTP provider.
//!
//! One model pass is: POST a serialized body, read an SSE response through
//! a provider-specific [`StreamDecoder`], forward the decoded events, and
//! report `model.metrics`. The driver owns what is the same everywhere:
//! retries of transient failures before any output (C34, honouring
//! `Retry-After`), error bodies turned into typed errors, the idle timeout
//! (on the wait for response headers, an error body and every body read),
//! the caps on one frame and one message (`[provider] max_frame_bytes`,
//! `max_message_bytes`), cancellation, byte and latency metrics, and holding `Done` back until the
//! metrics are out. It knows no vendor's JSON.

use std::time::{Duration, Instant};

use std::sync::Arc;

use etch_model::{
    ErrorKind, Metrics, ModelError, ModelStream, StreamEvent, StreamSender, stream_channel,
};
use tokio_util::sync::CancellationToken;

use crate::http::{self, CredentialSource, RetryPolicy, StreamLimits};
use crate::sse::{SseFrame, SseParser};

/// Most bytes of an error body kept for the message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Turns a provider's SSE frames into stream events.
pub trait StreamDecoder: Send {
    /// Decodes one frame, appending events to `out`.
    fn frame(&mut self, frame: &SseFrame, out: &mut Vec<StreamEvent>) -> Result<(), ModelError>;
    /// The body ended: closes open blocks and appends `Done`, or fails.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError>;
    /// Whether any model output was decoded (no retry after that).
    fn has_output(&self) -> bool;
}

/// Everything a pass sends.
#[derive(Debug, Clone)]
pub struct HttpPass {
    /// Endpoint URL.
    pub url: String,
    /// Extra request headers (authorization, versions).
    pub headers: Vec<(String, String)>,
    /// The serialized JSON body.
    pub body: Vec<u8>,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// How long the stream may be silent.
    pub idle_timeout: Duration,
    /// Caps on one frame and one assembled message.
    pub limits: StreamLimits,
    /// Metrics with the request shape already filled in.
    pub metrics: Metrics,
    /// Decodes a non-2xx response body into a typed error.
    pub error_body: fn(u16, &str) -> ModelError,
}

/// Where a pass's events go. Events are forwarded as they are decoded,
/// but `Done` is held back until the metrics are out, so the loop logs a
/// pass's metrics with it (E-SES-15). Shared by the HTTP driver and the
/// Responses WebSocket pass. It also keeps the message cap: the loop
/// holds, and logs as one line, everything forwarded.
pub(crate) struct Outlet<'a> {
    /// The stream to the core.
    tx: &'a StreamSender,
    /// A decoded `Done`, held until the metrics are sent.
    done: Option<StreamEvent>,
    /// `[provider] max_message_bytes`.
    max_message: usize,
    /// Message bytes forwarded so far.
    message: usize,
}

impl<'a> Outlet<'a> {
    /// An outlet into `tx` that forwards at most `max_message` bytes of
    /// message (see [`message_bytes`]).
    pub(crate) fn new(tx: &'a StreamSender, max_message: usize) -> Self {
        Self {
            tx,
            done: None,
            max_message,
            message: 0,
        }
    }

    /// Sends events on, holding `Done` back for after the metrics. An
    /// event that would take the message past the cap is not sent: the
    /// pass fails there, and the rest of `events` is dropped.
    pub(crate) async fn forward(
        &mut self,
        events: &mut Vec<StreamEvent>,
    ) -> Result<(), ModelError> {
        for event in events.drain(..) {
            let reached = self.message.saturating_add(message_bytes(&event));
            if reached > self.max_message {
                return Err(message_too_large(self.max_message, reached));
            }
            self.message = reached;
            if matches!(event, StreamEvent::Done { .. }) {
                self.done = Some(event);
            } else if !self.tx.send(event).await {
                break;
            }
        }
        Ok(())
    }

    /// Ends a successful pass: the metrics, then the held `Done`.
    pub(crate) async fn finish(&mut self, metrics: Metrics) {
        self.tx.send(StreamEvent::Metrics(metrics)).await;
        if let Some(done) = self.done.take() {
            self.tx.send(done).await;
        }
    }

    /// Ends a failed pass: the metrics, then the error.
    pub(crate) async fn fail(&mut self, metrics: Metrics, err: ModelError) {
        self.tx.send(StreamEvent::Metrics(metrics)).await;
        self.tx.send(StreamEvent::Error(err)).await;
    }

    /// Says that a failed request will be retried after `delay`.
    pub(crate) async fn retrying(
        &mut self,
        attempt: u32,
        policy: &RetryPolicy,
        delay: Duration,
        err: &ModelError,
    ) {
        self.tx
            .send(StreamEvent::Retrying {
                attempt,
                max_retries: policy.max_retries,
                delay_ms: millis(delay),
                reason: err.message.clone(),
            })
            .await;
    }

    /// Ends a pass that never got as far as a request: just the error.
    pub(crate) async fn error(&mut self, err: ModelError) {
        self.tx.send(StreamEvent::Error(err)).await;
    }
}

/// The error reported when retries ran out (C34): the last failure, saying
/// how many retries were made.
pub(crate) fn gave_up(err: ModelError, policy: &RetryPolicy) -> ModelError {
    if policy.max_retries == 0 {
        return err;
    }
    ModelError::new(
        err.kind,
        format!(
            "{} (gave up after {} retries)",
            err.message, policy.max_retries
        ),
    )
}

/// How many bytes `event` adds to the assembled message: the text,
/// reasoning and tool-call pieces the loop accumulates, and native items
/// at their JSON size.
fn message_bytes(event: &StreamEvent) -> usize {
    match event {
        StreamEvent::TextDelta(text) | StreamEvent::ReasoningDelta(text) => text.len(),
        StreamEvent::ToolCallDelta { arguments, .. } => arguments.len(),
        StreamEvent::ToolCallStart { id, name, .. } => id.len() + name.len(),
        StreamEvent::ProviderItem(item) => json_len(&item.item),
        _ => 0,
    }
}

/// The length of `value` as JSON, without building the text.
fn json_len(value: &serde_json::Value) -> usize {
    /// Counts what is written to it.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// The error of a message past `[provider] max_message_bytes`: not
/// retried, naming the cap, the size reached and the key.
fn message_too_large(limit: usize, reached: usize) -> ModelError {
    ModelError::new(
        ErrorKind::Protocol,
        format!(
            "the model's answer grew past [provider] max_message_bytes = {limit} (text, \
             reasoning and tool-call arguments of one pass reached {reached} bytes); etch \
             stopped it there. Raise max_message_bytes if answers this large are expected"
        ),
    )
}

/// How one HTTP attempt ended.
enum Attempt {
    /// The stream finished (successfully or with an error event sent).
    Finished,
    /// Failed before any output; may be retried.
    Retry(ModelError, Option<Duration>),
    /// Lost on a connection the server had closed, before any answer:
    /// sent again at once on a fresh connection, once per pass.
    Resend,
    /// Cancelled; nothing more to send.
    Cancelled,
}

/// State of a running pass.
struct Run<'a> {
    /// What to send.
    pass: &'a mut HttpPass,
    /// Where events go.
    outlet: Outlet<'a>,
    /// Run cancellation.
    cancel: &'a CancellationToken,
    /// When the pass started.
    started: Instant,
    /// Whether a request lost on a stale connection was sent again (the
    /// next attempt then opens a connection of its own).
    resent: bool,
}

/// Starts a pass on its own task and returns its stream: the whole
/// `ModelClient::stream` of an HTTP provider. A serialization failure becomes
/// the stream's error; with a credential source, its headers are fetched
/// right before the request (P-AUTH-01).
pub fn spawn<D, F>(
    pass: Result<HttpPass, ModelError>,
    make_decoder: F,
    credentials: Option<Arc<dyn CredentialSource>>,
    cancel: CancellationToken,
) -> ModelStream
where
    D: StreamDecoder + Sync + 'static,
    F: Fn() -> D + Send + 'static,
{
    let (tx, stream) = stream_channel();
    tokio::spawn(async move {
        match with_credentials(pass, credentials.as_deref()).await {
            Ok(pass) => run(pass, make_decoder, &tx, &cancel).await,
            Err(err) => {
                tx.send(StreamEvent::Error(err)).await;
            }
        }
    });
    stream
}

/// Adds the credential source's headers, fetched now, to `pass`: right
/// before the request, so a refreshable login is fresh (P-AUTH-01).
pub async fn with_credentials(
    pass: Result<HttpPass, ModelError>,
    credentials: Option<&dyn CredentialSource>,
) -> Result<HttpPass, ModelError> {
    let mut pass = pass?;
    if let Some(source) = credentials {
        pass.headers.extend(source.headers().await?);
    }
    Ok(pass)
}

/// Runs one pass with retries, creating a fresh decoder per attempt.
pub async fn run<D: StreamDecoder>(
    mut pass: HttpPass,
    make_decoder: impl Fn() -> D,
    tx: &StreamSender,
    cancel: &CancellationToken,
) {
    let max_message = pass.limits.max_message_bytes;
    let mut run = Run {
        pass: &mut pass,
        outlet: Outlet::new(tx, max_message),
        cancel,
        started: Instant::now(),
        resent: false,
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        run.pass.metrics.requests += 1;
        match run.attempt(make_decoder()).await {
            Attempt::Finished | Attempt::Cancelled => return,
            // Not a failure of the server: no backoff, no retry line, not
            // counted against max_retries.
            Attempt::Resend => attempt -= 1,
            Attempt::Retry(err, retry_after) => {
                let policy = &run.pass.retry;
                if attempt > policy.max_retries {
                    let err = gave_up(err, policy);
                    run.fail(err).await;
                    return;
                }
                let delay = policy.delay(attempt, retry_after);
                let policy = policy.clone();
                run.outlet.retrying(attempt, &policy, delay, &err).await;
                if !http::sleep_unless_cancelled(delay, cancel).await {
                    return;
                }
            }
        }
    }
}

impl Run<'_> {
    /// Sends the metrics and then the error.
    async fn fail(&mut self, err: ModelError) {
        self.pass.metrics.duration_ms = millis(self.started.elapsed());
        self.outlet.fail(self.pass.metrics.clone(), err).await;
    }

    /// One HTTP request and its stream.
    async fn attempt<D: StreamDecoder>(&mut self, mut decoder: D) -> Attempt {
        let client = if self.resent {
            http::fresh_client_for(&self.pass.url)
        } else {
            http::client_for(&self.pass.url)
        };
        let http = match client {
            Ok(h) => h,
            Err(e) => {
                self.outlet.error(e).await;
                return Attempt::Finished;
            }
        };
        let url = self.pass.url.clone();
        let mut builder = http
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(self.pass.body.clone());
        for (name, value) in &self.pass.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        // The idle timeout covers the wait for the response headers too: a
        // server that accepts the request and never answers would
        // otherwise hold the pass forever, since the timeout in
        // `stream_body` only starts with the body.
        let idle = self.pass.idle_timeout;
        let sent = tokio::select! {
            () = self.cancel.cancelled() => return Attempt::Cancelled,
            r = tokio::time::timeout(idle, builder.send()) => r,
        };
        let mut response = match sent {
            Ok(Ok(r)) => r,
            // Like a stalled body: transient, retried before any output.
            Err(_) => return Attempt::Retry(no_headers(&url, idle), None),
            Ok(Err(e)) => {
                if !self.resent && http::is_stale_connection(&e) {
                    self.resent = true;
                    return Attempt::Resend;
                }
                let err = http::transport_error(&url, &e);
                if err.kind != ErrorKind::Transient {
                    self.fail(err).await;
                    return Attempt::Finished;
                }
                return Attempt::Retry(err, None);
            }
        };
        self.pass.metrics.headers_ms = millis(self.started.elapsed());
        let status = response.status();
        if !status.is_success() {
            let retry_after = http::retry_after(response.headers());
            let Some(body) = read_error_body(&mut response, idle, self.cancel).await else {
                return Attempt::Cancelled;
            };
            self.pass.metrics.response_bytes += body.text.len() as u64;
            let err = (self.pass.error_body)(status.as_u16(), &body.text);
            // The status decides the kind even when the body stalled: it
            // is what the server said.
            let stalled = if body.stalled {
                format!(
                    " (the rest of the error body did not arrive within {}; raise [provider] idle_timeout_secs if the server is just slow)",
                    seconds(idle)
                )
            } else {
                String::new()
            };
            let err = ModelError::new(
                err.kind,
                format!("{url} answered {status}: {}{stalled}", err.message),
            );
            if err.kind == ErrorKind::Transient {
                return Attempt::Retry(err, retry_after);
            }
            self.fail(err).await;
            return Attempt::Finished;
        }
        self.stream_body(&url, &mut response, &mut decoder).await
    }

    /// Reads the SSE body, forwarding decoded events.
    async fn stream_body<D: StreamDecoder>(
        &mut self,
        url: &str,
        response: &mut reqwest::Response,
        decoder: &mut D,
    ) -> Attempt {
        let idle = self.pass.idle_timeout;
        let mut parser = SseParser::with_max_frame(self.pass.limits.max_frame_bytes);
        let mut frames: Vec<SseFrame> = Vec::new();
        let mut events: Vec<StreamEvent> = Vec::new();
        loop {
            let chunk = tokio::select! {
                () = self.cancel.cancelled() => return Attempt::Cancelled,
                r = tokio::time::timeout(idle, response.chunk()) => r,
            };
            let chunk = match chunk {
                Err(_) => {
                    let err = ModelError::new(
                        ErrorKind::Transient,
                        format!(
                            "{url} sent nothing for {} seconds; the stream looks stalled \
                             (raise [provider] idle_timeout_secs if the model is just slow)",
                            idle.as_secs()
                        ),
                    );
                    return self.fail_or_retry(err, decoder).await;
                }
                Ok(Err(e)) => {
                    let err = ModelError::new(
                        ErrorKind::Transient,
                        format!("the connection to {url} broke mid-stream: {e}"),
                    );
                    return self.fail_or_retry(err, decoder).await;
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(bytes))) => bytes,
            };
            // Frames completed before an oversized one are decoded first,
            // so the log keeps what the server sent up to it.
            let pushed = parser.push(&chunk, &mut frames);
            self.pass.metrics.response_bytes = parser.bytes_read();
            if let Err(err) = self.decode(&mut frames, decoder, &mut events).await {
                return self.fail_or_retry(err, decoder).await;
            }
            if let Err(big) = pushed {
                let err = http::frame_too_large(url, big.limit, big.reached);
                return self.fail_or_retry(err, decoder).await;
            }
        }
        let finished = parser.finish(&mut frames);
        self.pass.metrics.response_bytes = parser.bytes_read();
        if let Err(err) = self.decode(&mut frames, decoder, &mut events).await {
            return self.fail_or_retry(err, decoder).await;
        }
        if let Err(big) = finished {
            let err = http::frame_too_large(url, big.limit, big.reached);
            return self.fail_or_retry(err, decoder).await;
        }
        if let Err(err) = decoder.finish(&mut events) {
            return self.fail_or_retry(err, decoder).await;
        }
        if let Err(err) = self.outlet.forward(&mut events).await {
            return self.fail_or_retry(err, decoder).await;
        }
        self.pass.metrics.duration_ms = millis(self.started.elapsed());
        self.outlet.finish(self.pass.metrics.clone()).await;
        Attempt::Finished
    }

    /// Decodes pending frames and forwards their events.
    async fn decode<D: StreamDecoder>(
        &mut self,
        frames: &mut Vec<SseFrame>,
        decoder: &mut D,
        events: &mut Vec<StreamEvent>,
    ) -> Result<(), ModelError> {
        for frame in frames.drain(..) {
            decoder.frame(&frame, events)?;
        }
        if !events.is_empty() && self.pass.metrics.first_event_ms == 0 {
            self.pass.metrics.first_event_ms = millis(self.started.elapsed()).max(1);
        }
        self.outlet.forward(events).await
    }

    /// A failure after the stream began: retried only if nothing was shown
    /// yet (C34), otherwise reported.
    async fn fail_or_retry<D: StreamDecoder>(&mut self, err: ModelError, decoder: &D) -> Attempt {
        if err.kind == ErrorKind::Transient && !decoder.has_output() {
            return Attempt::Retry(err, None);
        }
        self.fail(err).await;
        Attempt::Finished
    }
}

/// The error of a server that sent no response headers within the idle
/// timeout: what stalled, for how long, where, and what to change.
fn no_headers(url: &str, idle: Duration) -> ModelError {
    ModelError::new(
        ErrorKind::Transient,
        format!(
            "{url} sent no response headers within {}; the server looks stalled \
             (raise [provider] idle_timeout_secs if it is just slow to start answering)",
            seconds(idle)
        ),
    )
}

/// A duration as people read it in a message: `2 seconds`, `1 second`,
/// `0.5 seconds`.
pub(crate) fn seconds(d: Duration) -> String {
    match d.as_secs() {
        1 if d.subsec_nanos() == 0 => "1 second".to_owned(),
        s if d.subsec_nanos() == 0 => format!("{s} seconds"),
        _ => format!("{} seconds", d.as_secs_f64()),
    }
}

/// What was read of an error body.
struct ErrorBody {
    /// At most [`ERROR_BODY_LIMIT`] bytes of it, as text.
    text: String,
    /// The body did not finish within the idle timeout.
    stalled: bool,
}

/// Reads at most [`ERROR_BODY_LIMIT`] bytes of an error body as text,
/// within `idle` in all (an error body is small: a server trickling one
/// must not hold the pass). `None` when cancelled.
async fn read_error_body(
    response: &mut reqwest::Response,
    idle: Duration,
    cancel: &CancellationToken,
) -> Option<ErrorBody> {
    let deadline = tokio::time::Instant::now() + idle;
    let mut body = Vec::new();
    let mut stalled = false;
    loop {
        let chunk = tokio::select! {
            () = cancel.cancelled() => return None,
            r = tokio::time::timeout_at(deadline, response.chunk()) => r,
        };
        match chunk {
            Ok(Ok(Some(bytes))) => {
                body.extend_from_slice(&bytes);
                if body.len() >= ERROR_BODY_LIMIT {
                    body.truncate(ERROR_BODY_LIMIT);
                    break;
                }
            }
            Err(_) => {
                stalled = true;
                break;
            }
            Ok(Ok(None) | Err(_)) => break,
        }
    }
    Some(ErrorBody {
        text: String::from_utf8_lossy(&body).into_owned(),
        stalled,
    })
}

/// Milliseconds of a duration, saturating.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
