//! The real `etch` binary against fake OpenAI Responses and Anthropic
//! Messages servers (issue 4): request shapes (G19), response identity and
//! metrics in the log (G4), tool rounds, and auto-selection of anthropic
//! from `ANTHROPIC_API_KEY` (C42).

mod support;

use etch_test_support::{FakeServer, Reply, anthropic_text, anthropic_tool_uses, responses_text};
use serde_json::json;
use support::{Workspace, jsonl, types};

/// E-MOD-07/09/10: Responses streams text; the request carries store:false
/// and the session id as prompt_cache_key; the log records the response id.
#[test]
fn responses_over_sse() {
    let ws = Workspace::new();
    let server =
        FakeServer::start(vec![Reply::sse(responses_text("Hello via Responses."))]).unwrap();
    let base = format!("{}/v1", server.url());
    let out = ws.run(&[
        "--provider",
        "openai",
        "--openai-api",
        "responses",
        "--base-url",
        &base,
        "--api-key",
        "k",
        "-p",
        "hi",
    ]);
    assert_eq!(out.ok(), "Hello via Responses.\n");
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/responses");
    let body = r.json();
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    let id = ws
        .only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(body["prompt_cache_key"], id.as_str());
    assert_eq!(body["reasoning"]["effort"], "minimal");
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    let events = jsonl(&ws.only_session());
    let kinds = types(&events);
    assert!(kinds.contains(&"model.response".to_string()), "{kinds:?}");
    let metrics = events
        .iter()
        .find(|e| e["type"] == "model.metrics")
        .unwrap();
    assert_eq!(metrics["data"]["transport"], "responses-sse");
    let off = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(responses_text("x"))]).unwrap();
    let base = format!("{}/v1", server.url());
    off.run(&[
        "--provider",
        "openai",
        "--openai-api",
        "responses",
        "--reasoning-effort",
        "off",
        "--base-url",
        &base,
        "--api-key",
        "k",
        "-p",
        "hi",
    ])
    .ok();
    let body = server.requests()[0].json();
    assert!(body.get("reasoning").is_none() && body.get("include").is_none());
}

/// C29: Anthropic Messages with a tool round; the key goes in x-api-key.
#[test]
fn anthropic_messages_with_a_tool_round() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(anthropic_tool_uses(&[(
            "toolu_1",
            "read",
            r#"{"path":"a.txt"}"#,
        )])),
        Reply::sse(anthropic_text("It says alpha.")),
    ])
    .unwrap();
    let base = server.url();
    let out = ws.run(&[
        "--provider",
        "anthropic",
        "--base-url",
        &base,
        "--api-key",
        "ak-secret",
        "-p",
        "read a.txt",
    ]);
    assert_eq!(out.ok(), "It says alpha.\n");
    assert!(
        out.stderr().contains("Anthropic: API key"),
        "{}",
        out.stderr()
    );
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some("ak-secret"));
    assert!(requests[0].json().get("thinking").is_none());
    let second = requests[1].json();
    let last = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_1");
    let events = jsonl(&ws.only_session());
    let assistant = events
        .iter()
        .find(|e| e["type"] == "message.assistant")
        .unwrap();
    assert_eq!(assistant["data"]["provider"], "anthropic");
    assert!(
        !std::fs::read_to_string(ws.only_session())
            .unwrap()
            .contains("ak-secret")
    );
}

/// C42: with only ANTHROPIC_API_KEY set, anthropic is chosen. (The key
/// goes to a server other than Anthropic's only because the user's own
/// file says `[anthropic] auth = "api-key"`.)
#[test]
fn anthropic_is_auto_selected() {
    let ws = Workspace::new();
    ws.user_config("[anthropic]\nauth = \"api-key\"\n");
    let server = FakeServer::start(vec![Reply::sse(anthropic_text("auto anthropic"))]).unwrap();
    let out = support::Run(
        ws.command(&["--base-url", &server.url(), "-p", "x"])
            .env("ANTHROPIC_API_KEY", "ak-env")
            .output()
            .unwrap(),
    );
    assert_eq!(out.ok(), "auto anthropic\n");
    assert_eq!(server.requests()[0].header("x-api-key"), Some("ak-env"));
}
