//! Approvals in the front ends that can ask (issue 32), through the real
//! binary against the fake model server: over RPC a waiting call is an
//! `approval_request` event answered by an `approve` command (allow
//! once, for the session, deny with a reason the model reads); in the
//! chat, in tmux, the call is shown and answered by keys. Each decision
//! is an `approval.decision` event in the log, before the result.
//!
//! Ordering needs no timing: a call waits for its answer, so each step
//! waits for the request event or the screen showing the question.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::json;
use support::rpc::RpcClient;
use support::tmux::Tmux;
use support::{Workspace, jsonl, model_args};

/// A bash call's arguments.
fn bash(command: &str) -> String {
    json!({ "command": command }).to_string()
}

/// The `approval.decision` records of the session file `path`, as
/// (call, decision, by, reason).
fn decisions(path: &std::path::Path) -> Vec<(String, String, String, Option<String>)> {
    jsonl(path)
        .into_iter()
        .filter(|e| e["type"] == "approval.decision")
        .map(|e| {
            let d = &e["data"];
            (
                d["toolCallId"].as_str().unwrap().to_owned(),
                d["decision"].as_str().unwrap().to_owned(),
                d["by"].as_str().unwrap().to_owned(),
                d["reason"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// Over RPC: a command asking to leave the sandbox waits for the client;
/// an answer for a call that does not wait names the one that does;
/// allow-for-session lets the next such call run unasked in that session
/// only; a denial's reason reaches the model; all is in the log.
#[test]
fn rpc_clients_answer_approval_requests() {
    let ws = Workspace::new();
    let away = tempfile::tempdir_in("/var/tmp").unwrap();
    let outside = |name: &str| away.path().join(name);
    let leave = |name: &str| {
        json!({
            "command": format!("echo {name} > {}", outside(name).display()),
            "bypass_sandbox": true,
            "justification": "the user asked for the report there"
        })
        .to_string()
    };
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "bash", &leave("one"))])),
        Reply::sse(chat_tool_calls(&[("c2", "bash", &leave("two"))])),
        Reply::sse(chat_text("first done")),
        Reply::sse(chat_tool_calls(&[("c3", "bash", &leave("three"))])),
        Reply::sse(chat_text("second done")),
    ])
    .unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut rpc = RpcClient::start(&ws, &args, &[]);
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "write the reports"}));
    let asked = rpc.event("approval_request");
    assert_eq!(asked["toolCallId"], "c1");
    assert_eq!(asked["toolName"], "bash");
    assert_eq!(asked["args"]["bypass_sandbox"], true);
    assert_eq!(asked["reason"], "it asks to run outside the sandbox");
    assert!(!outside("one").exists());
    let wrong =
        rpc.call(&json!({"id": "a0", "type": "approve", "toolCallId": "c9", "decision": "allow"}));
    assert_eq!(wrong["success"], false);
    assert!(
        wrong["error"].as_str().unwrap().contains("waiting: c1"),
        "{wrong}"
    );
    let ok = rpc.call(&json!({"id": "a1", "type": "approve", "toolCallId": "c1", "decision": "allow_for_session"}));
    assert_eq!(ok["success"], true, "{ok}");
    rpc.event("agent_end");
    assert!(outside("one").exists() && outside("two").exists());
    assert!(
        !rpc.seen
            .iter()
            .any(|e| e["type"] == "approval_request" && e["toolCallId"] == "c2"),
        "c2 was asked about although allowed for the session"
    );
    let first = ws.only_session();

    // A new session asks again; a denial's reason goes to the model.
    rpc.call(&json!({"id": "n", "type": "new_session"}));
    rpc.send(&json!({"id": "p2", "type": "prompt", "message": "and another"}));
    let asked = rpc.event("approval_request");
    assert_eq!(asked["toolCallId"], "c3");
    let denied = rpc.call(&json!({"id": "a2", "type": "approve", "toolCallId": "c3", "decision": "deny", "reason": "put it in the workspace"}));
    assert_eq!(denied["success"], true, "{denied}");
    rpc.event("agent_end");
    assert!(!outside("three").exists());
    let sent = String::from_utf8(server.requests()[4].body.clone()).unwrap();
    assert!(
        sent.contains("the user denied this bash call. Their reason: put it in the workspace"),
        "{sent}"
    );
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");

    let reason = Some("the user asked for the report there".to_owned());
    assert_eq!(
        decisions(&first),
        [
            (
                "c1".into(),
                "allowed_for_session".into(),
                "user".into(),
                reason.clone()
            ),
            ("c2".into(), "allowed".into(), "session".into(), reason),
        ]
    );
    let second = ws
        .session_files()
        .into_iter()
        .find(|f| *f != first)
        .unwrap();
    assert_eq!(
        decisions(&second),
        [(
            "c3".into(),
            "denied".into(),
            "user".into(),
            Some("put it in the workspace".into())
        )]
    );
}

/// The chat under `[approval] policy = "always"`: each call shows what
/// it would run and why it asks; `y` allows it once, `a` allows such
/// calls for the session (the next runs unasked), and `n` with a typed
/// reason denies it, the reason reaching the model.
#[test]
fn the_chat_asks_and_answers_by_keys() {
    let ws = Workspace::new();
    ws.user_config("[approval]\npolicy = \"always\"\n");
    let write = json!({"path": "four.txt", "content": "4"}).to_string();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "bash",
            &bash("echo 1 > one.txt"),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "c2",
            "bash",
            &bash("echo 2 > two.txt"),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "c3",
            "bash",
            &bash("echo 3 > three.txt"),
        )])),
        Reply::sse(chat_tool_calls(&[("c4", "write", &write)])),
        Reply::sse(chat_text("all done")),
    ])
    .unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let tmux = Tmux::start(&ws, &args, &[], 100, 30);
    let screen = tmux.wait_screen("/help for commands");
    // The start line and the footer say how commands are confined.
    assert!(
        screen.contains("sandbox: workspace-write, ") && screen.contains("approvals: always"),
        "{screen}"
    );
    assert!(
        screen
            .lines()
            .any(|l| l.starts_with("m1 · ") && l.contains("· sandbox workspace-write")),
        "{screen}"
    );
    tmux.line("make the files");
    // A question's keys work once it says so (a moment after it shows).
    let armed = |text: &str| tmux.wait_screen_all(&[text, "[n] deny with a reason"]);
    let screen = armed("$ echo 1 > one.txt");
    assert!(
        screen.contains("bash asks for approval: the approval policy is always"),
        "{screen}"
    );
    assert!(screen.contains("[y] allow once"), "{screen}");
    assert!(!ws.path().join("one.txt").exists());
    tmux.keys(&["y"]);
    armed("$ echo 2 > two.txt");
    tmux.keys(&["a"]);
    let screen = armed("write four.txt (1 lines)");
    assert!(screen.contains("write asks for approval"), "{screen}");
    tmux.keys(&["n"]);
    tmux.type_text("not that file");
    tmux.wait_screen("reason (Enter denies, Esc goes back): not that file");
    tmux.keys(&["Enter"]);
    tmux.wait_for("all done");
    for (file, made) in [
        ("one.txt", true),
        ("two.txt", true),
        ("three.txt", true),
        ("four.txt", false),
    ] {
        assert_eq!(ws.path().join(file).exists(), made, "{file}");
    }
    let history = tmux.history();
    assert!(history.contains("bash allowed once"), "{history}");
    assert!(history.contains("write denied: not that file"), "{history}");
    let sent = String::from_utf8(server.requests()[4].body.clone()).unwrap();
    assert!(
        sent.contains("the user denied this write call. Their reason: not that file"),
        "{sent}"
    );
    let by: Vec<(String, String)> = decisions(&ws.only_session())
        .into_iter()
        .map(|(call, decision, by, _)| (format!("{call} {decision}"), by))
        .collect();
    let expected: Vec<(String, String)> = [
        ("c1 allowed", "user"),
        ("c2 allowed_for_session", "user"),
        ("c3 allowed", "session"),
        ("c4 denied", "user"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(by, expected);
}
