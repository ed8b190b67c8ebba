//! The idle timeout before any body byte: a server that accepts a request
//! and never sends its response headers, one that stalls while sending an
//! error body, and a WebSocket upgrade that is never answered all fail the
//! pass within the idle timeout with a message that says what stalled, for
//! how long, where, and which key to raise; cancelling a pass that waits
//! for headers ends it at once. Every provider that goes through the
//! shared driver (Chat Completions, Responses over SSE, Anthropic) is run.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use etch_model::{ErrorKind, Message, ModelClient, ModelError, ModelRequest, StreamEvent};
use etch_provider::anthropic::{AnthropicClient, AnthropicConfig};
use etch_provider::http::{RetryPolicy, StreamLimits};
use etch_provider::openai::chat::{ChatClient, ChatConfig};
use etch_provider::openai::responses::{ResponsesClient, ResponsesConfig};
use etch_provider::openai::responses_ws::Transport;
use etch_test_support::{FakeServer, Reply};
use tokio_util::sync::CancellationToken;

/// The idle timeout of these tests: short, so a test takes about as long.
const IDLE: Duration = Duration::from_millis(500);

/// How long a scripted server stays silent: far past [`IDLE`], so only the
/// client's deadline can end the wait.
const SILENCE: Duration = Duration::from_mins(1);

/// The longest a failing pass may take: the idle timeout for each of two
/// attempts, plus slack for a loaded machine. Far below [`SILENCE`].
const BOUND: Duration = Duration::from_secs(10);

/// `retries` retries, 1 ms apart.
fn retry(retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries: retries,
        base_delay: Duration::from_millis(1),
        max_retry_after: Duration::from_millis(10),
    }
}

/// One client of each provider the HTTP driver runs, against `server`,
/// with `idle` and `retries`, named for messages.
fn clients(
    server: &FakeServer,
    idle: Duration,
    retries: u32,
) -> Vec<(&'static str, Arc<dyn ModelClient>)> {
    let base = format!("{}/v1", server.url());
    vec![
        (
            "chat",
            Arc::new(ChatClient::new(ChatConfig {
                base_url: base.clone(),
                api_key: Some("k".into()),
                model: "m".into(),
                stream_usage: false,
                retry: retry(retries),
                idle_timeout: idle,
                limits: StreamLimits::default(),
            })),
        ),
        (
            "responses",
            Arc::new(ResponsesClient::new(responses(
                &base,
                idle,
                retries,
                Transport::Sse,
            ))),
        ),
        (
            "anthropic",
            Arc::new(AnthropicClient::new(AnthropicConfig {
                base_url: server.url(),
                api_key: "k".into(),
                model: "m".into(),
                retry: retry(retries),
                idle_timeout: idle,
                ..AnthropicConfig::default()
            })),
        ),
    ]
}

/// A Responses client for `base` over `transport`.
fn responses(base: &str, idle: Duration, retries: u32, transport: Transport) -> ResponsesConfig {
    ResponsesConfig {
        base_url: base.to_owned(),
        bearer: Some("k".into()),
        model: "m".into(),
        reasoning_effort: None,
        reasoning_summary: None,
        extra_headers: Vec::new(),
        credentials: None,
        retry: retry(retries),
        idle_timeout: idle,
        limits: StreamLimits::default(),
        transport,
        websocket_headers: Vec::new(),
    }
}

/// A one-message request.
fn request() -> ModelRequest {
    ModelRequest {
        system: Vec::new(),
        messages: vec![Message::user_text("hi")],
        tools: Vec::new(),
        options: etch_model::RequestOptions::default(),
    }
}

/// Runs one pass of `client` to its end (failing the test past
/// [`BOUND`]) and returns its events and how long it took.
async fn run(client: &dyn ModelClient, cancel: CancellationToken) -> (Vec<StreamEvent>, Duration) {
    let start = Instant::now();
    let mut stream = client.stream(request(), cancel);
    let mut events = Vec::new();
    let collected = tokio::time::timeout(BOUND, async {
        while let Some(event) = stream.next().await {
            events.push(event);
        }
    })
    .await;
    assert!(
        collected.is_ok(),
        "the pass did not end within {BOUND:?}: {events:#?}"
    );
    (events, start.elapsed())
}

/// The pass's error; fails the test if it has none.
fn error(events: &[StreamEvent]) -> &ModelError {
    events
        .iter()
        .find_map(|e| match e {
            StreamEvent::Error(err) => Some(err),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no error in {events:#?}"))
}

/// How many retries the pass announced.
fn retries(events: &[StreamEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Retrying { .. }))
        .count()
}

/// A server that takes the request and never answers: each provider fails
/// the pass after the idle timeout per attempt, retried like a stalled
/// stream (transient, nothing shown yet), naming the URL, the wait and
/// the key to raise.
#[tokio::test]
async fn a_server_that_never_sends_headers_fails_within_the_idle_timeout() {
    let server = FakeServer::start((0..6).map(|_| Reply::Hang(SILENCE)).collect()).unwrap();
    for (name, client) in clients(&server, IDLE, 1) {
        let (events, took) = run(client.as_ref(), CancellationToken::new()).await;
        let err = error(&events);
        assert_eq!(err.kind, ErrorKind::Transient, "{name}: {err:?}");
        assert!(
            err.message.contains(&server.url())
                && err
                    .message
                    .contains("sent no response headers within 0.5 seconds")
                && err.message.contains("[provider] idle_timeout_secs")
                && err.message.contains("gave up after 1 retries"),
            "{name}: {err:?}"
        );
        assert_eq!(retries(&events), 1, "{name}: {events:#?}");
        assert!(took >= IDLE * 2, "{name}: {took:?}");
        assert!(took < BOUND, "{name}: {took:?}");
    }
    assert_eq!(server.requests().len(), 6);
}

/// A server that sends an error status and then stalls in its body: the
/// pass fails after the idle timeout with the status and what arrived,
/// classified by the status (a 400 is not retried).
#[tokio::test]
async fn an_error_body_that_stalls_is_cut_at_the_idle_timeout() {
    let stalled = || Reply::StalledBody {
        status: 400,
        content_type: "text/plain".into(),
        start: "model not loaded".into(),
        stall: SILENCE,
    };
    let server = FakeServer::start((0..3).map(|_| stalled()).collect()).unwrap();
    for (name, client) in clients(&server, IDLE, 2) {
        let (events, took) = run(client.as_ref(), CancellationToken::new()).await;
        let err = error(&events);
        assert_eq!(err.kind, ErrorKind::InvalidRequest, "{name}: {err:?}");
        assert!(
            err.message.contains("answered 400")
                && err.message.contains("model not loaded")
                && err
                    .message
                    .contains("the rest of the error body did not arrive within 0.5 seconds")
                && err.message.contains("[provider] idle_timeout_secs"),
            "{name}: {err:?}"
        );
        assert_eq!(retries(&events), 0, "{name}: {events:#?}");
        assert!(took >= IDLE && took < BOUND, "{name}: {took:?}");
    }
}

/// Cancelling a pass that waits for headers ends it at once, with no
/// error and no retry, long before the idle timeout.
#[tokio::test]
async fn cancel_drops_a_request_waiting_for_headers() {
    let server =
        Arc::new(FakeServer::start((0..3).map(|_| Reply::Hang(SILENCE)).collect()).unwrap());
    for (n, (name, client)) in clients(&server, SILENCE, 3).into_iter().enumerate() {
        let cancel = CancellationToken::new();
        let waiting = {
            let server = Arc::clone(&server);
            tokio::task::spawn_blocking(move || server.wait_for_requests(n + 1, BOUND).len())
        };
        let trigger = cancel.clone();
        let cancelling = tokio::spawn(async move {
            assert_eq!(waiting.await.unwrap(), n + 1);
            trigger.cancel();
            Instant::now()
        });
        let (events, _) = run(client.as_ref(), cancel).await;
        let cancelled_at = cancelling.await.unwrap();
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(2),
            "{name}: {:?}",
            cancelled_at.elapsed()
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::Error(_) | StreamEvent::Retrying { .. })),
            "{name}: {events:#?}"
        );
    }
}

/// A WebSocket upgrade that is never answered fails within the idle
/// timeout (not the 30 s handshake limit), naming the URL and the key.
#[tokio::test]
async fn a_websocket_upgrade_never_answered_fails_within_the_idle_timeout() {
    let server = FakeServer::start(vec![Reply::Hang(SILENCE), Reply::Hang(SILENCE)]).unwrap();
    let base = format!("{}/v1", server.url());
    let client = ResponsesClient::new(responses(&base, IDLE, 1, Transport::WebSocket));
    let (events, took) = run(&client, CancellationToken::new()).await;
    let err = error(&events);
    assert_eq!(err.kind, ErrorKind::Transient, "{err:?}");
    assert!(
        err.message
            .contains("WebSocket handshake with ws://127.0.0.1:")
            && err.message.contains("took more than 0.5 seconds")
            && err.message.contains("[provider] idle_timeout_secs"),
        "{err:?}"
    );
    assert_eq!(retries(&events), 1, "{events:#?}");
    assert!(took >= IDLE * 2 && took < BOUND, "{took:?}");
}
