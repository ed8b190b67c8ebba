//! The real `etch` binary against a fake OpenAI-compatible server (issue 4):
//! the Chat Completions request shape (G19), streamed text and tool rounds,
//! retries (C34), provider errors (E-MOD-23), broken, invalid, unterminated,
//! empty, huge and stalled streams, unreachable servers, provider
//! auto-selection (C42) and credentials never reaching the log (E-SES-21).

mod support;

use std::time::Duration;

use etch_test_support::{End, FakeServer, Reply, chat_text, chat_tool_calls, sse_data};
use serde_json::json;
use support::{Workspace, jsonl, types};

/// Runs etch against `server` with an explicit provider and key.
fn run(ws: &Workspace, server: &FakeServer, extra: &[&str]) -> support::Run {
    let base = format!("{}/v1", server.url());
    let mut args = vec![
        "--provider",
        "openai",
        "--base-url",
        base.as_str(),
        "--api-key",
        "sk-test-secret",
        "--model",
        "m1",
    ];
    args.extend_from_slice(extra);
    ws.run(&args)
}

/// G19, E-MOD-06: text streams to stdout; the request has the compatibility
/// shape with the key as a bearer token; the log has usage and chat-sse
/// metrics; the key is nowhere in the session files (E-SES-21).
#[test]
fn streams_text_with_the_compatibility_request() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text("Hello from the model."))]).unwrap();
    let out = run(&ws, &server, &["-p", "hi"]);
    assert_eq!(out.ok(), "Hello from the model.\n");
    assert!(
        out.stderr().contains("OpenAI: Platform API key"),
        "{}",
        out.stderr()
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(r.header("authorization"), Some("Bearer sk-test-secret"));
    assert_eq!(r.header("accept"), Some("text/event-stream"));
    let body = r.json();
    assert_eq!(body["model"], "m1");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(
        support::without_context(body["messages"][1]["content"].as_str().unwrap()),
        "hi"
    );
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bash", "edit", "find", "grep", "ls", "process", "read", "write"
        ]
    );
    for key in ["tool_choice", "store", "prompt_cache_key", "reasoning"] {
        assert!(body.get(key).is_none(), "{key} must not be sent");
    }
    let path = ws.only_session();
    let events = jsonl(&path);
    assert_eq!(
        types(&events),
        [
            "session.started",
            "message.user",
            "message.assistant",
            "model.usage",
            "model.metrics"
        ]
    );
    assert_eq!(events[2]["data"]["provider"], "openai");
    assert_eq!(events[2]["data"]["stopReason"], "stop");
    assert_eq!(events[3]["data"]["inputTokens"], 10);
    assert_eq!(events[4]["data"]["transport"], "chat-sse");
    assert_eq!(events[4]["data"]["requests"], 1);
    assert!(events[4]["data"]["responseBytes"].as_u64().unwrap() > 0);
    for file in [path, ws.sessions_dir().join("index.jsonl")] {
        assert!(
            !std::fs::read_to_string(file)
                .unwrap()
                .contains("sk-test-secret")
        );
    }
}

/// E-MOD-06, P-CHK-2: a tool call streamed in pieces runs the real tool and
/// its result goes back in the next request as a `tool` message.
#[test]
fn tool_round_trip() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("word.txt"), "pineapple\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("call_a", "read", r#"{"path":"word.txt"}"#),
            ("call_b", "bash", r#"{"command":"echo hi"}"#),
        ])),
        Reply::sse(chat_text("The word is pineapple.")),
    ])
    .unwrap();
    assert_eq!(
        run(&ws, &server, &["-p", "what word?"]).ok(),
        "The word is pineapple.\n"
    );
    let second = server.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(
        messages[n - 3]["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"word.txt"}"#
    );
    assert_eq!(
        messages[n - 2],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "     1\tpineapple"})
    );
    assert_eq!(
        messages[n - 1],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "hi\n"})
    );
}

/// C34: 429 and 5xx are retried (Retry-After honoured) before any output.
#[test]
fn retries_429_and_5xx_then_succeeds() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::json(
            429,
            &json!({"error": {"message": "slow down", "type": "rate_limit"}}),
        )
        .with_header("Retry-After", "0"),
        Reply::json(503, &json!({"error": {"message": "overloaded"}})),
        Reply::sse(chat_text("finally")),
    ])
    .unwrap();
    assert_eq!(run(&ws, &server, &["-p", "x"]).ok(), "finally\n");
    assert_eq!(server.requests().len(), 3);
    let events = jsonl(&ws.only_session());
    assert_eq!(events.last().unwrap()["data"]["requests"], 3);
}

/// C34: after three retries the error is reported, exit 1.
#[test]
fn gives_up_after_three_retries() {
    let ws = Workspace::new();
    let busy = || Reply::json(500, &json!({"error": {"message": "internal trouble"}}));
    let server = FakeServer::start(vec![busy(), busy(), busy(), busy()]).unwrap();
    let out = run(&ws, &server, &["-p", "x"]);
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr()
            .contains("internal trouble (gave up after 3 retries)"),
        "{}",
        out.stderr()
    );
    assert_eq!(server.requests().len(), 4);
}

/// E-MOD-23: a 400 with an error body is shown, not retried.
#[test]
fn client_errors_are_shown_not_retried() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::json(400, &json!({"error": {"message": "Unsupported parameter: 'x'", "type": "invalid_request_error"}}))]).unwrap();
    let out = run(&ws, &server, &["-p", "x"]);
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr()
            .contains("400 Bad Request: Unsupported parameter: 'x'"),
        "{}",
        out.stderr()
    );
    assert_eq!(server.requests().len(), 1);
}

/// A connection reset after output is an error (no retry; the user saw
/// output); the log keeps the failed pass, marked, and stays loadable.
#[test]
fn reset_mid_stream_after_output() {
    let ws = Workspace::new();
    let mut frames = chat_text("partial answer that never ends");
    frames.truncate(3);
    let server = FakeServer::start(vec![Reply::Sse {
        events: frames,
        gap: Duration::ZERO,
        end: End::Reset,
    }])
    .unwrap();
    let out = run(&ws, &server, &["-p", "x"]);
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr().contains("broke mid-stream") || out.stderr().contains("ended before"),
        "{}",
        out.stderr()
    );
    assert_eq!(server.requests().len(), 1);
    let events = jsonl(&ws.only_session());
    let assistant = events
        .iter()
        .find(|e| e["type"] == "message.assistant")
        .unwrap();
    assert_eq!(assistant["data"]["stopReason"], "error");
    assert!(
        ws.run(&[
            "show",
            &ws.only_session().file_stem().unwrap().to_string_lossy()
        ])
        .code()
            == 0
    );
}

/// C34: a reset before any output is retried.
#[test]
fn reset_before_output_is_retried() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::Sse {
            events: Vec::new(),
            gap: Duration::ZERO,
            end: End::Reset,
        },
        Reply::sse(chat_text("second time lucky")),
    ])
    .unwrap();
    assert_eq!(run(&ws, &server, &["-p", "x"]).ok(), "second time lucky\n");
    assert_eq!(server.requests().len(), 2);
}

/// A server that closes a kept-alive connection while it sits idle in
/// etch's pool (llama.cpp does after 5 s): the next request goes out on
/// it and is lost before any answer. It is sent again at once on a fresh
/// connection: no retry line, no backoff, not counted against
/// max_retries (`max_retries = 0` here would otherwise give up).
#[test]
fn a_request_lost_on_a_closed_idle_connection_is_sent_again_at_once() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "ls", "{}")])),
        // The second request arrives on the kept-alive connection; the
        // server closes it without a byte, as one that had timed it out.
        Reply::Raw(Vec::new()),
        Reply::sse(chat_text("listed")),
    ])
    .unwrap();
    ws.project_config("[provider]\nmax_retries = 0\n");
    let out = run(&ws, &server, &["-p", "list the files"]);
    assert_eq!(out.ok(), "listed\n");
    assert!(!out.stderr().contains("retrying"), "{}", out.stderr());
    assert_eq!(server.requests().len(), 3);
}

/// Only once per pass: a server that keeps closing connections without
/// an answer is a failing server, retried with backoff and reported.
#[test]
fn a_server_that_keeps_closing_connections_is_reported() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::Raw(Vec::new()), Reply::Raw(Vec::new())]).unwrap();
    ws.project_config("[provider]\nmax_retries = 0\n");
    let out = run(&ws, &server, &["-p", "x"]);
    assert_eq!(out.code(), 1, "{}", out.stderr());
    assert!(
        out.stderr()
            .contains("connection closed before message completed"),
        "{}",
        out.stderr()
    );
    assert_eq!(server.requests().len(), 2);
}

/// Invalid JSON in a frame, a stream with no terminator and an empty 200
/// body are clear errors.
#[test]
fn broken_streams_are_errors() {
    let cases: Vec<(Reply, &str)> = vec![
        (Reply::sse(vec![sse_data("{not json")]), "invalid JSON"),
        (
            Reply::sse(chat_text("abc").into_iter().take(1).collect()),
            "ended before the model finished",
        ),
        (Reply::sse(Vec::new()), "ended before the model finished"),
    ];
    for (reply, want) in cases {
        let ws = Workspace::new();
        let server =
            FakeServer::start(vec![reply.clone(), reply.clone(), reply.clone(), reply]).unwrap();
        let out = run(&ws, &server, &["-p", "x"]);
        assert_eq!(out.code(), 1, "{want}");
        assert!(out.stderr().contains(want), "{want}: {}", out.stderr());
    }
}

/// A 2 MB single delta arrives whole.
#[test]
fn huge_single_delta() {
    let ws = Workspace::new();
    let big = "z".repeat(2 * 1024 * 1024);
    let chunk =
        json!({"choices": [{"index": 0, "delta": {"content": big}, "finish_reason": null}]});
    let done = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    let server = FakeServer::start(vec![Reply::sse(vec![
        sse_data(&chunk.to_string()),
        sse_data(&done.to_string()),
        "data: [DONE]\n\n".into(),
    ])])
    .unwrap();
    let out = run(&ws, &server, &["-p", "x"]).ok();
    assert_eq!(out.len(), big.len() + 1);
}

/// A server that stalls mid-stream hits the idle timeout with a clear error.
#[test]
fn stalled_stream_times_out() {
    let ws = Workspace::new();
    let server = support::stalling_server();
    let base = format!("{}/v1", server.url());
    let out = support::Run(
        ws.command(&[
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--api-key",
            "k",
            "-p",
            "x",
        ])
        .env("ETCH_IDLE_TIMEOUT_SECS", "1")
        .output()
        .unwrap(),
    );
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr()
            .contains("sent nothing for 1 seconds; the stream looks stalled"),
        "{}",
        out.stderr()
    );
}

/// An unreachable server is a connection error naming the URL, exit 1.
#[test]
fn unreachable_server_names_the_url() {
    let ws = Workspace::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let out = ws.run(&[
        "--provider",
        "openai",
        "--base-url",
        &base,
        "--api-key",
        "k",
        "-p",
        "x",
    ]);
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr()
            .contains(&format!("cannot reach {base}/chat/completions")),
        "{}",
        out.stderr()
    );
}

/// C42: with OPENAI_API_KEY set and no --provider, openai is chosen; the
/// key itself goes only to api.openai.com, so a local server gets no
/// Authorization header unless `[openai] auth = "api-key"` asks; with
/// --provider openai and no credential, the error says what to do.
#[test]
fn provider_auto_selection_and_missing_key() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("auto")),
        Reply::sse(chat_text("sent")),
        Reply::sse(chat_text("none")),
    ])
    .unwrap();
    let base = format!("{}/v1", server.url());
    let key = [("OPENAI_API_KEY", "sk-env")];
    let out = ws.run_env(&["--base-url", &base, "-p", "x"], &key);
    assert_eq!(out.ok(), "auto\n");
    assert_eq!(server.requests()[0].header("authorization"), None);
    assert!(out.stderr().contains("no API key"), "{}", out.stderr());
    // The user's own config may send the key to another server.
    ws.user_config("[openai]\nauth = \"api-key\"\n");
    let out = ws.run_env(&["--base-url", &base, "-p", "x"], &key);
    assert_eq!(out.ok(), "sent\n");
    assert_eq!(
        server.requests()[1].header("authorization"),
        Some("Bearer sk-env")
    );
    // auth = "none": not even --provider openai with a key in the
    // environment sends one, and no credentials are required.
    ws.user_config("");
    ws.project_config(&format!(
        "[provider]\nname = \"openai\"\n[openai]\nauth = \"none\"\nbase_url = \"{base}\"\n"
    ));
    ws.run(&["trust", "--yes"]).ok();
    let out = ws.run_env(&["-p", "x"], &key);
    assert_eq!(out.ok(), "none\n");
    assert_eq!(server.requests()[2].header("authorization"), None);
    std::fs::remove_file(ws.path().join(".etch/config.toml")).unwrap();
    let missing = ws.run(&["--provider", "openai", "-p", "x"]);
    assert_eq!(missing.code(), 1);
    assert!(
        missing.stderr().contains("no OpenAI credentials"),
        "{}",
        missing.stderr()
    );
}
