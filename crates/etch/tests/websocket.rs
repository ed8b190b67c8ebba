//! The real `etch` binary over the Responses WebSocket transport against the
//! fake server (issue 4, E-MOD-12, E-MOD-16, G4, G13): a tool round on one
//! reused connection with continuation, the `auto` fallback to HTTP/SSE, and
//! the flag's bad inputs.

mod support;

use etch_test_support::{FakeServer, Reply, responses_function_calls, responses_text, ws_messages};
use serde_json::Value;
use support::{Workspace, jsonl};

/// Runs `etch -p PROMPT` against `server` with the Responses API and
/// `--openai-transport TRANSPORT`.
fn run(ws: &Workspace, server: &FakeServer, transport: &str, prompt: &str) -> support::Run {
    let base = format!("{}/v1", server.url());
    ws.run(&[
        "--provider",
        "openai",
        "--openai-api",
        "responses",
        "--openai-transport",
        transport,
        "--base-url",
        &base,
        "--api-key",
        "sk-ws",
        "-p",
        prompt,
    ])
}

/// The `data` of every `model.metrics` event in the session.
fn metrics(ws: &Workspace) -> Vec<Value> {
    jsonl(&ws.only_session())
        .into_iter()
        .filter(|e| e["type"] == "model.metrics")
        .map(|e| e["data"].clone())
        .collect()
}

/// E-MOD-12/14/16: a tool round over one WebSocket. The second pass reuses
/// the connection and sends `previous_response_id` plus only the tool
/// result; the session's metrics show the reuse and the one-message delta.
#[test]
fn tool_round_continues_on_one_connection() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("notes.txt"), "x\n").unwrap();
    let server = FakeServer::start(vec![Reply::websocket(vec![
        ws_messages(&responses_function_calls(&[(
            "call_ls",
            "ls",
            r#"{"path":"."}"#,
        )])),
        ws_messages(&responses_text("One file: notes.txt.")),
    ])])
    .unwrap();
    let out = run(&ws, &server, "websocket", "what is here?");
    assert_eq!(out.ok(), "One file: notes.txt.\n");
    assert!(
        out.stderr()
            .contains("etch: openai responses (websocket) · "),
        "{}",
        out.stderr()
    );
    let requests = server.requests();
    let methods: Vec<&str> = requests.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(methods, ["GET", "WS", "WS"]);
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-ws"));
    let first = requests[1].json();
    assert_eq!(first["type"], "response.create");
    assert!(first.get("previous_response_id").is_none());
    let second = requests[2].json();
    assert_eq!(second["previous_response_id"], "resp_fake");
    let input = second["input"].as_array().unwrap();
    assert_eq!(input.len(), 1, "{input:?}");
    assert_eq!(input[0]["type"], "function_call_output");
    assert_eq!(input[0]["call_id"], "call_ls");
    assert!(
        input[0]["output"].as_str().unwrap().contains("notes.txt"),
        "{input:?}"
    );
    let m = metrics(&ws);
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(m[0]["transport"], "responses-ws");
    assert_eq!(
        (m[0]["wsOpens"].as_u64(), m[0]["wsReuses"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(
        (m[1]["wsOpens"].as_u64(), m[1]["wsReuses"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(m[1]["continuationAttempts"], 1);
    assert_eq!(m[1]["continuationFallbacks"], 0);
    assert_eq!(m[1]["deltaMessages"], 1);
    assert_eq!(m[1]["inputMessages"], 3);
}

/// E-MOD-12 `auto`: a server without WebSocket support (the upgrade gets a
/// 404) is answered over HTTP/SSE, and the metrics say why.
#[test]
fn auto_falls_back_to_sse() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::text(404, "no websockets here"),
        Reply::sse(responses_text("Answered over SSE.")),
    ])
    .unwrap();
    let out = run(&ws, &server, "auto", "hi");
    assert_eq!(out.ok(), "Answered over SSE.\n");
    let methods: Vec<String> = server.requests().iter().map(|r| r.method.clone()).collect();
    assert_eq!(methods, ["GET", "POST"]);
    let m = metrics(&ws);
    assert_eq!(m[0]["transport"], "responses-sse");
    let reason = m[0]["lastFallback"].as_str().unwrap();
    assert!(reason.contains("WebSocket unavailable"), "{reason}");
}

/// Bad input: a WebSocket transport with Chat Completions is a usage error
/// (exit 2) before any session exists; an unknown mode is refused by the
/// parser with the accepted values.
#[test]
fn transport_flag_bad_inputs() {
    let ws = Workspace::new();
    let out = ws.run(&[
        "--provider",
        "openai",
        "--api-key",
        "k",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--openai-transport",
        "websocket",
        "-p",
        "hi",
    ]);
    assert_eq!(out.code(), 2, "{}", out.stderr());
    assert!(
        out.stderr()
            .contains("needs the Responses API: add --openai-api responses"),
        "{}",
        out.stderr()
    );
    assert!(ws.session_files().is_empty());
    let out = ws.run(&["--openai-transport", "ws", "-p", "hi"]);
    assert_eq!(out.code(), 2);
    assert!(
        out.stderr()
            .contains("[possible values: sse, websocket, auto]"),
        "{}",
        out.stderr()
    );
}
