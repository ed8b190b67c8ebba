//! End-to-end tests of the Responses WebSocket transport against the fake
//! server's scripted WebSocket (E-MOD-12, E-MOD-14, E-MOD-16, C34).

use std::time::Duration;

use etch_model::{
    ContentPart, ErrorKind, Message, ModelRequest, RequestOptions, StopReason, StreamEvent,
    ToolCall,
};
use etch_test_support::{
    FakeServer, Recorded, Reply, WsEnd, responses_function_calls, responses_text, ws_messages,
};
use serde_json::{Value, json};

use super::Transport;
use crate::http::RetryPolicy;
use crate::openai::responses::{ResponsesClient, ResponsesConfig};
use crate::testutil::{collect, metrics};

/// A client for `server` using `transport`, with fast retries.
fn client(server: &FakeServer, transport: Transport) -> ResponsesClient {
    ResponsesClient::new(config(server, transport))
}

/// The settings of [`client`].
fn config(server: &FakeServer, transport: Transport) -> ResponsesConfig {
    ResponsesConfig {
        base_url: format!("{}/v1", server.url()),
        bearer: Some("sk-ws".into()),
        model: "gpt-5".into(),
        reasoning_effort: None,
        reasoning_summary: None,
        extra_headers: Vec::new(),
        credentials: None,
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(1),
            max_retry_after: Duration::from_millis(10),
        },
        idle_timeout: Duration::from_secs(10),
        limits: crate::http::StreamLimits::default(),
        transport,
        websocket_headers: vec![("OpenAI-Beta".into(), "responses_websockets=test".into())],
    }
}

/// A request of `messages` with one tool.
fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        system: Vec::new(),
        messages,
        tools: vec![etch_model::ToolSpec {
            name: "ls".into(),
            description: "List files.".into(),
            parameters: json!({"type": "object"}),
        }],
        options: RequestOptions {
            session_id: "sess-ws".into(),
            ..RequestOptions::default()
        },
    }
}

/// The WebSocket messages of a text answer.
fn text_turn(text: &str) -> Vec<String> {
    ws_messages(&responses_text(text))
}

/// The WebSocket messages of an answer calling `ls` as `call_a` and
/// `call_b`.
fn calls_turn() -> Vec<String> {
    ws_messages(&responses_function_calls(&[
        ("call_a", "ls", "{}"),
        ("call_b", "ls", "{}"),
    ]))
}

/// The history after the calls of [`calls_turn`] were answered.
fn after_calls() -> Vec<Message> {
    let call = |id: &str| {
        ContentPart::ToolCall(ToolCall {
            id: id.into(),
            name: "ls".into(),
            arguments: json!({}),
        })
    };
    let result = |id: &str| Message::Tool {
        tool_call_id: id.into(),
        tool_name: "ls".into(),
        content: vec![ContentPart::text("a b")],
        is_error: false,
    };
    vec![
        Message::user_text("list"),
        Message::Assistant {
            content: vec![call("call_a"), call("call_b")],
        },
        result("call_a"),
        result("call_b"),
    ]
}

/// The joined text of a pass.
fn text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The error a pass ended with.
fn error(events: &[StreamEvent]) -> &etch_model::ModelError {
    match events.last() {
        Some(StreamEvent::Error(err)) => err,
        other => panic!("expected an error, got {other:?} in {events:?}"),
    }
}

/// The `response.create` messages the server received, parsed.
fn creates(requests: &[Recorded]) -> Vec<Value> {
    requests
        .iter()
        .filter(|r| r.method == "WS")
        .map(Recorded::json)
        .collect()
}

/// The handshakes the server received.
fn handshakes(requests: &[Recorded]) -> usize {
    requests.iter().filter(|r| r.method == "GET").count()
}

/// E-MOD-12: one pass over a WebSocket: the handshake carries the
/// credentials and WebSocket headers, the message is `response.create` with
/// the HTTP body's fields but no `stream`, and the answer streams.
#[tokio::test]
async fn websocket_pass_end_to_end() {
    let server = FakeServer::start(vec![Reply::websocket(vec![text_turn("hi over ws")])]).unwrap();
    let events = collect(
        &client(&server, Transport::WebSocket),
        request(vec![Message::user_text("hi")]),
    )
    .await;
    assert_eq!(text(&events), "hi over ws");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Done {
            stop_reason: StopReason::Stop
        })
    );
    let requests = server.requests();
    let handshake = &requests[0];
    assert_eq!(
        (handshake.method.as_str(), handshake.path.as_str()),
        ("GET", "/v1/responses")
    );
    assert_eq!(handshake.header("authorization"), Some("Bearer sk-ws"));
    assert_eq!(
        handshake.header("openai-beta"),
        Some("responses_websockets=test")
    );
    let sent = creates(&requests);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["type"], "response.create");
    assert_eq!(sent[0]["store"], false);
    assert_eq!(sent[0]["prompt_cache_key"], "sess-ws");
    assert!(sent[0].get("stream").is_none() && sent[0].get("previous_response_id").is_none());
    let m = metrics(&events);
    assert_eq!(m.transport, "responses-ws");
    assert_eq!((m.requests, m.ws_opens, m.ws_reuses), (1, 1, 0));
    assert_eq!(m.request_bytes, requests[1].body.len() as u64);
    assert!(m.response_bytes > 0 && m.first_event_ms > 0);
}

/// E-MOD-12/E-MOD-16: the next pass reuses the connection and sends only
/// `previous_response_id` plus the tool results.
#[tokio::test]
async fn reused_connection_sends_only_the_delta() {
    let server = FakeServer::start(vec![Reply::websocket(vec![
        calls_turn(),
        text_turn("two files"),
    ])])
    .unwrap();
    let client = client(&server, Transport::WebSocket);
    let first = collect(&client, request(vec![Message::user_text("list")])).await;
    assert!(matches!(
        first.last(),
        Some(StreamEvent::Done {
            stop_reason: StopReason::ToolUse
        })
    ));
    let second = collect(&client, request(after_calls())).await;
    assert_eq!(text(&second), "two files");
    let requests = server.requests();
    assert_eq!(handshakes(&requests), 1, "{requests:?}");
    let sent = creates(&requests);
    assert_eq!(sent[1]["previous_response_id"], "resp_fake");
    let input = sent[1]["input"].as_array().unwrap();
    assert_eq!(input.len(), 2);
    assert!(input.iter().all(|i| i["type"] == "function_call_output"));
    let m = metrics(&second);
    assert_eq!((m.ws_opens, m.ws_reuses), (0, 1));
    assert_eq!((m.continuation_attempts, m.continuation_fallbacks), (1, 0));
    assert_eq!((m.input_messages, m.delta_messages), (4, 2));
    assert_eq!(m.input_bytes, sent[1]["input"].to_string().len() as u64);
    assert_eq!(m.last_fallback, None);
}

/// E-MOD-13: a history that is no longer a safe suffix (here edited) goes
/// out in full on the reused connection, and metrics say why.
#[tokio::test]
async fn changed_history_sends_full_context() {
    let server =
        FakeServer::start(vec![Reply::websocket(vec![calls_turn(), text_turn("ok")])]).unwrap();
    let client = client(&server, Transport::WebSocket);
    collect(&client, request(vec![Message::user_text("list")])).await;
    let mut history = after_calls();
    history[0] = Message::user_text("list everything");
    let second = collect(&client, request(history)).await;
    assert_eq!(text(&second), "ok");
    let sent = creates(&server.requests());
    assert!(sent[1].get("previous_response_id").is_none());
    assert_eq!(sent[1]["input"].as_array().unwrap().len(), 5);
    let m = metrics(&second);
    assert_eq!((m.continuation_attempts, m.continuation_fallbacks), (1, 1));
    assert_eq!(m.delta_messages, 0);
    let reason = m.last_fallback.as_deref().unwrap();
    assert!(reason.contains("history changed"), "{reason}");
}

/// A backend that lost the previous response gets the full context on the
/// same connection, before anything was shown.
#[tokio::test]
async fn lost_previous_response_resends_full_context() {
    let lost = json!({"type": "error", "status": 400, "error": {"type": "invalid_request_error", "code": "previous_response_not_found", "message": "Previous response with id 'resp_fake' not found."}});
    let server = FakeServer::start(vec![Reply::websocket(vec![
        calls_turn(),
        vec![lost.to_string()],
        text_turn("recovered"),
    ])])
    .unwrap();
    let client = client(&server, Transport::WebSocket);
    collect(&client, request(vec![Message::user_text("list")])).await;
    let second = collect(&client, request(after_calls())).await;
    assert_eq!(text(&second), "recovered");
    assert!(
        !second.iter().any(|e| matches!(e, StreamEvent::Error(_))),
        "{second:?}"
    );
    let requests = server.requests();
    assert_eq!(handshakes(&requests), 1);
    let sent = creates(&requests);
    assert_eq!(sent.len(), 3);
    assert!(sent[2].get("previous_response_id").is_none());
    assert_eq!(sent[2]["input"].as_array().unwrap().len(), 5);
    let m = metrics(&second);
    assert_eq!(m.requests, 2);
    assert_eq!((m.continuation_attempts, m.continuation_fallbacks), (1, 1));
    assert!(
        m.last_fallback
            .as_deref()
            .unwrap()
            .contains("no longer holds resp_fake"),
        "{m:?}"
    );
}

/// A kept connection the server closed while idle is replaced by a fresh
/// one carrying the full context; the user sees no error.
#[tokio::test]
async fn closed_idle_connection_is_replaced() {
    let server = FakeServer::start(vec![
        Reply::WebSocket {
            turns: vec![calls_turn()],
            then: WsEnd::Drop,
        },
        Reply::websocket(vec![text_turn("fresh")]),
    ])
    .unwrap();
    let client = client(&server, Transport::WebSocket);
    collect(&client, request(vec![Message::user_text("list")])).await;
    let second = collect(&client, request(after_calls())).await;
    assert_eq!(text(&second), "fresh");
    let requests = server.requests();
    assert_eq!(handshakes(&requests), 2, "{requests:?}");
    let m = metrics(&second);
    assert_eq!((m.ws_reuses, m.ws_opens), (1, 1));
    assert_eq!(m.continuation_fallbacks, 1);
    assert!(
        m.last_fallback
            .as_deref()
            .unwrap()
            .contains("kept connection was closed"),
        "{m:?}"
    );
    let sent = creates(&requests);
    let last = sent.last().unwrap();
    assert!(last.get("previous_response_id").is_none());
}

/// E-MOD-12 `auto`: a refused upgrade falls back to HTTP/SSE before any
/// output, says so in metrics, and later passes go straight to SSE.
#[tokio::test]
async fn auto_falls_back_to_sse_when_the_upgrade_fails() {
    let server = FakeServer::start(vec![
        Reply::json(404, &json!({"error": {"message": "Not found."}})),
        Reply::sse(responses_text("via sse")),
        Reply::sse(responses_text("again")),
    ])
    .unwrap();
    let client = client(&server, Transport::Auto);
    let first = collect(&client, request(vec![Message::user_text("hi")])).await;
    assert_eq!(text(&first), "via sse");
    let m = metrics(&first);
    assert_eq!(m.transport, "responses-sse");
    let reason = m.last_fallback.as_deref().unwrap();
    assert!(
        reason.contains("WebSocket unavailable") && reason.contains("404"),
        "{reason}"
    );
    let second = collect(&client, request(vec![Message::user_text("hi")])).await;
    assert_eq!(text(&second), "again");
    let requests = server.requests();
    let methods: Vec<&str> = requests.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(methods, ["GET", "POST", "POST"]);
    assert_eq!(requests[1].header("authorization"), Some("Bearer sk-ws"));
    assert_eq!(requests[1].json()["stream"], true);
}

/// `auto`: a socket that closes before answering the first request (a
/// failed first exchange) also falls back to SSE.
#[tokio::test]
async fn auto_falls_back_when_the_first_exchange_fails() {
    let server = FakeServer::start(vec![
        Reply::WebSocket {
            turns: Vec::new(),
            then: WsEnd::Drop,
        },
        Reply::sse(responses_text("via sse")),
    ])
    .unwrap();
    let events = collect(
        &client(&server, Transport::Auto),
        request(vec![Message::user_text("hi")]),
    )
    .await;
    assert_eq!(text(&events), "via sse");
    let m = metrics(&events);
    assert_eq!((m.transport.as_str(), m.ws_opens), ("responses-sse", 1));
}

/// `websocket` mode: a 401 upgrade is an auth error, not retried; a 503
/// upgrade is retried (C34).
#[tokio::test]
async fn websocket_mode_classifies_upgrade_failures() {
    let server = FakeServer::start(vec![Reply::json(
        401,
        &json!({"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}}),
    )])
    .unwrap();
    let events = collect(
        &client(&server, Transport::WebSocket),
        request(vec![Message::user_text("hi")]),
    )
    .await;
    let err = error(&events);
    assert_eq!(err.kind, ErrorKind::Auth);
    assert!(err.message.contains("Incorrect API key"), "{err:?}");
    assert_eq!(server.requests().len(), 1);

    let server = FakeServer::start(vec![
        Reply::text(503, "busy"),
        Reply::websocket(vec![text_turn("second try")]),
    ])
    .unwrap();
    let events = collect(
        &client(&server, Transport::WebSocket),
        request(vec![Message::user_text("hi")]),
    )
    .await;
    assert_eq!(text(&events), "second try");
    assert_eq!(handshakes(&server.requests()), 2);
}

/// C34 over WebSocket: a rate-limit error event before output is retried on
/// a fresh connection; a connection lost after output is reported.
#[tokio::test]
async fn retries_before_output_and_reports_after() {
    let limited = json!({"type": "error", "status": 429, "error": {"type": "requests", "code": "rate_limit_exceeded", "message": "Slow down."}});
    let server = FakeServer::start(vec![
        Reply::websocket(vec![vec![limited.to_string()]]),
        Reply::websocket(vec![text_turn("after the limit")]),
    ])
    .unwrap();
    let events = collect(
        &client(&server, Transport::WebSocket),
        request(vec![Message::user_text("hi")]),
    )
    .await;
    assert_eq!(text(&events), "after the limit");
    assert_eq!(metrics(&events).requests, 2);

    let mut partial = text_turn("half an answer");
    partial.truncate(partial.len() - 1);
    let server = FakeServer::start(vec![Reply::WebSocket {
        turns: vec![partial],
        then: WsEnd::Drop,
    }])
    .unwrap();
    let events = collect(
        &client(&server, Transport::WebSocket),
        request(vec![Message::user_text("hi")]),
    )
    .await;
    assert_eq!(text(&events), "half an answer");
    let err = error(&events);
    assert_eq!(err.kind, ErrorKind::Transient);
    assert!(
        err.message.contains("before the response finished") || err.message.contains("broke"),
        "{err:?}"
    );
    assert_eq!(handshakes(&server.requests()), 1);
}

/// A server that goes silent mid-response hits the idle timeout with a clear
/// error.
#[tokio::test]
async fn stalled_socket_times_out() {
    let mut partial = text_turn("waiting");
    partial.truncate(3);
    let server = FakeServer::start(vec![Reply::websocket(vec![partial])]).unwrap();
    let client = ResponsesClient::new(ResponsesConfig {
        idle_timeout: Duration::from_millis(200),
        retry: RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        },
        ..config(&server, Transport::WebSocket)
    });
    let events = collect(&client, request(vec![Message::user_text("hi")])).await;
    let err = error(&events);
    assert!(err.message.contains("looks stalled"), "{err:?}");
}
