//! The caps on what one pass may make etch hold (`[provider]
//! max_frame_bytes`, `max_message_bytes`): an oversized SSE frame or
//! WebSocket message fails the pass naming the cap, the size reached and
//! the key, with what came before it forwarded and nothing retried; an
//! answer growing past the message cap is stopped with at most the cap
//! forwarded. Every provider that goes through the shared driver is run,
//! and the Responses WebSocket transport.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use etch_model::{ErrorKind, Message, ModelClient, ModelError, ModelRequest, StreamEvent};
use etch_provider::anthropic::{AnthropicClient, AnthropicConfig};
use etch_provider::http::{RetryPolicy, StreamLimits};
use etch_provider::openai::chat::{ChatClient, ChatConfig};
use etch_provider::openai::responses::{ResponsesClient, ResponsesConfig};
use etch_provider::openai::responses_ws::Transport;
use etch_test_support::{
    FakeServer, Reply, anthropic_text, chat_text, chat_text_chunks, responses_text, ws_messages,
};
use tokio_util::sync::CancellationToken;

/// Retries that would show if a failure were retried.
fn retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(1),
        max_retry_after: Duration::from_millis(10),
    }
}

/// A Chat Completions client of `server` with `limits`.
fn chat(server: &FakeServer, limits: StreamLimits) -> Arc<dyn ModelClient> {
    Arc::new(ChatClient::new(ChatConfig {
        base_url: format!("{}/v1", server.url()),
        api_key: Some("k".into()),
        model: "m".into(),
        stream_usage: false,
        retry: retry(),
        idle_timeout: Duration::from_secs(10),
        limits,
    }))
}

/// A Responses client of `server` over `transport` with `limits`.
fn responses(
    server: &FakeServer,
    limits: StreamLimits,
    transport: Transport,
) -> Arc<dyn ModelClient> {
    Arc::new(ResponsesClient::new(ResponsesConfig {
        base_url: format!("{}/v1", server.url()),
        bearer: Some("k".into()),
        model: "m".into(),
        reasoning_effort: None,
        reasoning_summary: None,
        extra_headers: Vec::new(),
        credentials: None,
        retry: retry(),
        idle_timeout: Duration::from_secs(10),
        limits,
        transport,
        websocket_headers: Vec::new(),
    }))
}

/// An Anthropic client of `server` with `limits`.
fn anthropic(server: &FakeServer, limits: StreamLimits) -> Arc<dyn ModelClient> {
    Arc::new(AnthropicClient::new(AnthropicConfig {
        base_url: server.url(),
        api_key: "k".into(),
        model: "m".into(),
        retry: retry(),
        idle_timeout: Duration::from_secs(10),
        limits,
        ..AnthropicConfig::default()
    }))
}

/// Limits with a frame cap of `frame` bytes and the default message cap.
fn frame_cap(frame: usize) -> StreamLimits {
    StreamLimits {
        max_frame_bytes: frame,
        ..StreamLimits::default()
    }
}

/// Runs one pass of `client` to its end.
async fn run(client: &dyn ModelClient) -> Vec<StreamEvent> {
    let request = ModelRequest {
        system: Vec::new(),
        messages: vec![Message::user_text("hi")],
        tools: Vec::new(),
        options: etch_model::RequestOptions::default(),
    };
    let mut stream = client.stream(request, CancellationToken::new());
    let mut events = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = stream.next().await {
            events.push(event);
        }
    })
    .await;
    assert!(ended.is_ok(), "the pass did not end: {events:#?}");
    events
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

/// The text forwarded.
fn text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// An SSE `data:` line of about `bytes` bytes of JSON.
fn big_data_line(bytes: usize) -> String {
    format!("data: {{\"pad\":\"{}\"}}\n\n", "x".repeat(bytes))
}

/// Asserts `err` is the frame cap's error for a 1024-byte cap.
fn assert_frame_error(name: &str, err: &ModelError) {
    assert_eq!(err.kind, ErrorKind::Protocol, "{name}: {err:?}");
    assert!(
        err.message
            .contains("past [provider] max_frame_bytes = 1024; etch stopped reading it")
            && err.message.contains("Raise max_frame_bytes"),
        "{name}: {err:?}"
    );
}

/// Makes a client of a server.
type MakeClient = fn(&FakeServer) -> Arc<dyn ModelClient>;

/// A 4 KB frame after the first piece of an answer, with a 1 KiB cap:
/// each HTTP provider fails the pass naming the cap, keeps the piece
/// before it, and sends no second request.
#[tokio::test]
async fn an_oversized_sse_frame_fails_the_pass_without_retry() {
    let cases: Vec<(&str, Vec<String>, MakeClient)> = vec![
        ("chat", chat_text("before"), |s| chat(s, frame_cap(1024))),
        ("responses", responses_text("before"), |s| {
            responses(s, frame_cap(1024), Transport::Sse)
        }),
        ("anthropic", anthropic_text("before"), |s| {
            anthropic(s, frame_cap(1024))
        }),
    ];
    for (name, frames, client) in cases {
        // The frames that open the stream and carry the text, then the
        // oversized one where the ending would be.
        let opening: Vec<String> = frames
            .iter()
            .take_while(|f| {
                !f.contains("[DONE]")
                    && !f.contains("message_stop")
                    && !f.contains("response.completed")
            })
            .cloned()
            .collect();
        let mut events = opening;
        events.push(big_data_line(4096));
        let server = FakeServer::start(vec![Reply::Sse {
            events,
            gap: Duration::ZERO,
            end: etch_test_support::End::Close,
        }])
        .unwrap();
        let events = run(client(&server).as_ref()).await;
        assert_frame_error(name, error(&events));
        assert!(text(&events).starts_with("before"), "{name}: {events:#?}");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::Retrying { .. })),
            "{name}: {events:#?}"
        );
        assert_eq!(server.requests().len(), 1, "{name}");
    }
}

/// The frame cap holds before any output too (not retried), and a frame
/// just under it passes.
#[tokio::test]
async fn the_frame_cap_is_exact_and_not_retried_before_output() {
    let server = FakeServer::start(vec![Reply::sse(vec![big_data_line(4096)])]).unwrap();
    let events = run(chat(&server, frame_cap(1024)).as_ref()).await;
    assert_frame_error("first frame", error(&events));
    assert_eq!(server.requests().len(), 1);

    let answer = "y".repeat(800);
    let server = FakeServer::start(vec![Reply::sse(chat_text_chunks(&answer, 800))]).unwrap();
    let events = run(chat(&server, frame_cap(1024)).as_ref()).await;
    assert_eq!(text(&events), answer, "{events:#?}");
    assert!(events.iter().any(|e| matches!(e, StreamEvent::Done { .. })));
}

/// An answer growing past the message cap is stopped there: the pass
/// fails naming the cap and the key, what was forwarded stays within the
/// cap, and nothing is retried.
#[tokio::test]
async fn an_answer_past_the_message_cap_is_stopped() {
    let answer = "z".repeat(1000);
    let server = FakeServer::start(vec![Reply::sse(chat_text_chunks(&answer, 10))]).unwrap();
    let limits = StreamLimits {
        max_message_bytes: 256,
        ..StreamLimits::default()
    };
    let events = run(chat(&server, limits).as_ref()).await;
    let err = error(&events);
    assert_eq!(err.kind, ErrorKind::Protocol, "{err:?}");
    assert!(
        err.message
            .contains("grew past [provider] max_message_bytes = 256")
            && err.message.contains("reached 260 bytes")
            && err.message.contains("Raise max_message_bytes"),
        "{err:?}"
    );
    assert_eq!(text(&events), "z".repeat(250));
    assert_eq!(server.requests().len(), 1);
}

/// Over WebSocket the same caps hold: a 4 KB message with a 1 KiB frame
/// cap fails the pass with the same message, and so does an answer past
/// the message cap.
#[tokio::test]
async fn websocket_messages_are_capped_too() {
    let mut turn = ws_messages(&responses_text("before"));
    let done = turn.pop().unwrap();
    assert!(done.contains("response.completed"), "{done}");
    turn.push(format!(
        "{{\"type\":\"pad\",\"pad\":\"{}\"}}",
        "x".repeat(4096)
    ));
    let server = FakeServer::start(vec![Reply::websocket(vec![turn])]).unwrap();
    let events = run(responses(&server, frame_cap(1024), Transport::WebSocket).as_ref()).await;
    let err = error(&events);
    assert_frame_error("websocket", err);
    assert!(err.message.contains("ws://127.0.0.1:"), "{err:?}");
    assert!(err.message.contains("at least 4"), "{err:?}");
    assert_eq!(text(&events), "before");

    let answer = "w".repeat(600);
    let turn = ws_messages(&responses_text(&answer));
    let server = FakeServer::start(vec![Reply::websocket(vec![turn])]).unwrap();
    let limits = StreamLimits {
        max_message_bytes: 256,
        ..StreamLimits::default()
    };
    let events = run(responses(&server, limits, Transport::WebSocket).as_ref()).await;
    let err = error(&events);
    assert!(err.message.contains("max_message_bytes = 256"), "{err:?}");
    assert!(text(&events).len() <= 256, "{}", text(&events).len());
}
