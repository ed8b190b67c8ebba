//! `etch import pi` through the real binary (issue 35): Pi's sessions for
//! the project found in Pi's directory, a dry run that writes nothing,
//! an import that says what each file became, a second import skipped,
//! and a resume of the imported session sending the model the same
//! context Pi would have sent at that leaf (checked on the fake
//! server's request body).

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use etch_test_support::{FakeServer, Reply, chat_text};
use serde_json::{Value, json};
use support::{Workspace, jsonl};

/// Writes a Pi session for `ws`'s project under `agent_dir` (as Pi
/// names it) and returns its path.
fn pi_session(ws: &Workspace, agent_dir: &std::path::Path) -> std::path::PathBuf {
    let cwd = std::fs::canonicalize(ws.path()).unwrap();
    let safe = cwd
        .to_string_lossy()
        .trim_start_matches('/')
        .replace(['/', ':'], "-");
    let dir = agent_dir.join("sessions").join(format!("--{safe}--"));
    std::fs::create_dir_all(&dir).unwrap();
    let at = "2026-02-03T04:05:06.000Z";
    let entry = |kind: &str, id: &str, parent: Option<&str>, fields: Value| {
        let mut v = json!({"type": kind, "id": id, "parentId": parent, "timestamp": at});
        for (k, val) in fields.as_object().unwrap() {
            v[k] = val.clone();
        }
        v
    };
    let lines = [
        json!({"type": "session", "version": 3, "id": "pi-sess-1", "timestamp": at, "cwd": cwd}),
        entry(
            "model_change",
            "e0",
            None,
            json!({"provider": "openai", "modelId": "m1"}),
        ),
        entry(
            "message",
            "e1",
            Some("e0"),
            json!({"message": {"role": "user", "content": [{"type": "text", "text": "count the lines of notes.txt"}]}}),
        ),
        entry(
            "message",
            "e2",
            Some("e1"),
            json!({"message": {"role": "assistant", "provider": "openai",
            "api": "openai-completions", "model": "m1", "stopReason": "toolUse",
            "content": [{"type": "toolCall", "id": "call_7", "name": "bash", "arguments": {"command": "wc -l notes.txt"}}]}}),
        ),
        entry(
            "message",
            "e3",
            Some("e2"),
            json!({"message": {"role": "toolResult", "toolCallId": "call_7",
            "toolName": "bash", "isError": false, "content": [{"type": "text", "text": "3 notes.txt"}]}}),
        ),
        entry(
            "message",
            "e4",
            Some("e3"),
            json!({"message": {"role": "assistant", "provider": "openai",
            "api": "openai-completions", "model": "m1", "stopReason": "stop",
            "content": [{"type": "text", "text": "It has 3 lines."}]}}),
        ),
        entry(
            "session_info",
            "e5",
            Some("e4"),
            json!({"name": "line count"}),
        ),
    ];
    let path = dir.join("2026-02-03T04-05-06-000Z_pi-sess-1.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// The default directory, a dry run, the import, a second import, and
/// a resume that sends Pi's context.
#[test]
fn pi_sessions_are_imported_and_resume_with_pis_context() {
    let ws = Workspace::new();
    let agent = tempfile::tempdir().unwrap();
    let file = pi_session(&ws, agent.path());
    let before = std::fs::read(&file).unwrap();
    let env = [("PI_CODING_AGENT_DIR", agent.path().to_str().unwrap())];
    let dry = ws.run_env(&["import", "pi", "--dry-run"], &env);
    let out = dry.ok();
    assert!(out.starts_with("would import "), "{out}");
    assert!(out.contains("6 entries"), "{out}");
    assert!(ws.session_files().is_empty(), "a dry run writes nothing");
    let out = ws.run_env(&["import", "pi"], &env).ok();
    assert!(out.starts_with("imported "), "{out}");
    let id = out
        .split(" as ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap()
        .to_owned();
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "Pi's file is untouched"
    );
    let again = ws.run_env(&["import", "pi"], &env).ok();
    assert!(
        again.contains(&format!("already imported as {id}")),
        "{again}"
    );
    let listed = ws.run(&["sessions"]).ok();
    assert!(listed.contains("line count"), "{listed}");
    // Resumed, the model gets what Pi would have sent at that leaf.
    let server = FakeServer::start(vec![Reply::sse(chat_text("and now"))]).unwrap();
    let out = ws
        .run_model(&server, &["resume", &id, "-p", "thanks"], &[])
        .ok();
    assert_eq!(out, "and now\n");
    let body = server.requests()[0].json();
    let messages: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .cloned()
        .collect();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user"]);
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .ends_with("count the lines of notes.txt"),
        "{messages:?}"
    );
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_7");
    assert_eq!(
        messages[1]["tool_calls"][0]["function"]["arguments"],
        "{\"command\":\"wc -l notes.txt\"}"
    );
    assert_eq!(messages[2]["tool_call_id"], "call_7");
    assert_eq!(messages[2]["content"], "3 notes.txt");
    assert_eq!(messages[3]["content"], "It has 3 lines.");
    assert_eq!(messages[4]["content"], "thanks");
    let log = jsonl(&ws.only_session());
    assert_eq!(log[0]["data"]["importedFrom"]["sessionId"], "pi-sess-1");
}

/// Bad input: no Pi directory for the project, a file that is no Pi
/// session, a path that does not exist.
#[test]
fn bad_import_input_is_refused_clearly() {
    let ws = Workspace::new();
    let agent = tempfile::tempdir().unwrap();
    let env = [("PI_CODING_AGENT_DIR", agent.path().to_str().unwrap())];
    let none = ws.run_env(&["import", "pi"], &env);
    assert_eq!(none.code(), 2);
    assert!(
        none.stderr().contains("Pi has no sessions for"),
        "{}",
        none.stderr()
    );
    std::fs::write(ws.path().join("notes.jsonl"), "{\"a\":1}\n").unwrap();
    let not_pi = ws.run_env(&["import", "pi", "notes.jsonl"], &env);
    assert_eq!(not_pi.code(), 1);
    assert!(
        not_pi.stderr().contains("is not a Pi session file"),
        "{}",
        not_pi.stderr()
    );
    let missing = ws.run_env(&["import", "pi", "nope.jsonl"], &env);
    assert_eq!(missing.code(), 2);
    assert!(
        missing.stderr().contains("nope.jsonl"),
        "{}",
        missing.stderr()
    );
}
