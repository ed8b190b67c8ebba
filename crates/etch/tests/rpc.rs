//! `etch rpc` through the real binary (issue 11): every command, the
//! lifecycle events tagged with the id of the command that caused them,
//! the queues (steering during a tool batch, follow-ups after the answer,
//! a prompt while a run is active), the session tree (navigate, fork),
//! switching sessions, and bad input: malformed and unknown lines, strict
//! LF framing, abort with nothing running, unknown ids, missing and locked
//! session files, stdin closing mid-run and a client that stops reading.
//!
//! Ordering uses barriers, never sleeps: a stalled model stream keeps a
//! run active until the test aborts it, and a tool waits for a file the
//! test creates once its steering is queued.

#![allow(clippy::panic)]

mod support;

use std::time::Duration;

use etch_test_support::{End, FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::{Value, json};
use support::rpc::RpcClient;
use support::{Workspace, jsonl, types};

/// Starts `etch rpc` on the offline echo model.
fn echo(ws: &Workspace) -> RpcClient {
    RpcClient::start(ws, &["--provider", "echo"], &[])
}

/// Starts `etch rpc` against `server` (OpenAI Chat Completions shape).
fn against(ws: &Workspace, server: &FakeServer, extra: &[&str]) -> RpcClient {
    let base = format!("{}/v1", server.url());
    let mut args = vec![
        "--provider",
        "openai",
        "--base-url",
        base.as_str(),
        "--api-key",
        "sk-test",
        "--model",
        "m1",
    ];
    args.extend_from_slice(extra);
    RpcClient::start(ws, &args, &[])
}

/// A reply that starts streaming and then stays silent, so the run stays
/// active until it is aborted.
fn stalled() -> Reply {
    Reply::Sse {
        events: chat_text("partial")[..1].to_vec(),
        gap: Duration::ZERO,
        end: End::Stall(Duration::from_secs(60)),
    }
}

/// The event of `kind` tagged `id` among the lines read so far (a
/// command's events come before its response).
fn seen(rpc: &RpcClient, kind: &str, id: &str) -> Value {
    rpc.seen
        .iter()
        .find(|v| v["type"] == kind && v["id"] == id)
        .unwrap_or_else(|| panic!("no {kind} event for {id} in {:#?}", rpc.seen))
        .clone()
}

/// Lines of `seen` that are events of `kind`.
fn events<'a>(seen: &'a [Value], kind: &str) -> Vec<&'a Value> {
    seen.iter().filter(|v| v["type"] == kind).collect()
}

/// The first line is the session's info; a prompt is acknowledged before
/// its run's first event; every event of the run carries the prompt's id,
/// in Pi's order; the answer is in the session log.
#[test]
fn a_prompt_is_acknowledged_then_streams_tagged_events() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    let info = rpc.next();
    assert_eq!(info["type"], "session_info");
    let file = info["sessionFile"].as_str().unwrap().to_owned();
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "hello rpc"}));
    let ack = rpc.next();
    assert_eq!(
        ack,
        json!({"type": "response", "id": "p1", "command": "prompt", "success": true})
    );
    let end = rpc.event("agent_end");
    assert!(end.get("error").is_none(), "{end}");
    let run: Vec<&Value> = rpc.seen[2..].iter().collect();
    assert!(run.iter().all(|v| v["id"] == "p1"), "{run:#?}");
    let kinds: Vec<&str> = run.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_update",
            "message_end",
            "model_metrics",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(run[7]["metrics"]["transport"], "echo", "{:#?}", run[7]);
    assert_eq!(
        run[5]["delta"],
        json!({"type": "text_delta", "delta": "hello rpc"})
    );
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
    let log = jsonl(std::path::Path::new(&file));
    let kinds = types(&log);
    assert!(kinds.contains(&"message.user".to_owned()), "{kinds:?}");
    assert!(kinds.contains(&"message.assistant".to_owned()), "{kinds:?}");
}

/// Malformed JSON, unknown commands, missing fields, a non-UTF-8 line and
/// an over-long line are answered (with the id when the line had one) and
/// the session goes on; blank lines are skipped; CRLF is accepted; U+2028
/// and U+2029 inside a string do not split the record.
#[test]
fn bad_lines_are_answered_and_framing_is_strict() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    rpc.next();
    rpc.send_raw(b"{not json\n");
    let parse = rpc.next();
    assert_eq!(
        (parse["command"].as_str(), parse["success"].as_bool()),
        (Some("parse"), Some(false))
    );
    assert!(parse.get("id").is_none());
    rpc.send(&json!({"id": "u1", "type": "teleport"}));
    let unknown = rpc.next();
    assert_eq!(unknown["id"], "u1");
    assert_eq!(unknown["command"], "teleport");
    assert_eq!(unknown["success"], false);
    assert!(
        unknown["error"].as_str().unwrap().contains("teleport"),
        "{unknown}"
    );
    rpc.send(&json!({"id": "m1", "type": "prompt"}));
    let missing = rpc.next();
    assert_eq!(
        (missing["id"].as_str(), missing["success"].as_bool()),
        (Some("m1"), Some(false))
    );
    assert!(
        missing["error"].as_str().unwrap().contains("message"),
        "{missing}"
    );
    rpc.send_raw(b"\xff\xfe\n\n   \n");
    let binary = rpc.next();
    assert_eq!(binary["command"], "parse");
    assert!(
        binary["error"].as_str().unwrap().contains("UTF-8"),
        "{binary}"
    );
    rpc.send(&json!({"id": "e1", "type": "prompt", "message": "  "}));
    assert_eq!(rpc.next()["success"], false);
    // One record with U+2028 and U+2029 raw inside the string, ended by CRLF.
    rpc.send_raw(
        "{\"id\":\"p1\",\"type\":\"prompt\",\"message\":\"a\u{2028}b\u{2029}c\"}\r\n".as_bytes(),
    );
    assert_eq!(rpc.response("p1")["success"], true);
    let user = rpc.until(|v| v["type"] == "message_end" && v["message"]["role"] == "user");
    assert_eq!(user["message"]["content"][0]["text"], "a\u{2028}b\u{2029}c");
    rpc.event("agent_end");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// A command line longer than the limit is refused without taking the
/// session down.
#[test]
fn an_over_long_line_is_refused() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    rpc.next();
    let mut long = vec![b'x'; (16 << 20) + 10];
    long.push(b'\n');
    rpc.send_raw(&long);
    let refused = rpc.next();
    assert_eq!(refused["command"], "parse");
    assert!(
        refused["error"].as_str().unwrap().contains("longer than"),
        "{refused}"
    );
    let state = rpc.call(&json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["success"], true);
}

/// Abort with nothing running is an error with the id; a prompt while a
/// run is active without streamingBehavior is refused saying what to send;
/// with followUp it is queued (queue_update tagged with its id); abort
/// ends the run (agent_end with the error, then the abort's response) and
/// the queued text stays pending, visible in get_state.
#[test]
fn prompts_during_a_run_and_abort() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![stalled()]).unwrap();
    let mut rpc = against(&ws, &server, &[]);
    rpc.next();
    let idle_abort = rpc.call(&json!({"id": "a0", "type": "abort"}));
    assert_eq!(idle_abort["success"], false);
    assert!(
        idle_abort["error"]
            .as_str()
            .unwrap()
            .contains("nothing is running")
    );
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "long job"}));
    rpc.until(|v| v["type"] == "message_update" && v["id"] == "p1");
    let refused = rpc.call(&json!({"id": "p2", "type": "prompt", "message": "another"}));
    assert_eq!(refused["success"], false);
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("streamingBehavior"),
        "{refused}"
    );
    let busy = rpc.call(&json!({"id": "n1", "type": "new_session"}));
    assert_eq!(busy["success"], false);
    assert!(
        busy["error"].as_str().unwrap().contains("a run is active"),
        "{busy}"
    );
    let queued = rpc.call(
        &json!({"id": "p3", "type": "prompt", "message": "later", "streamingBehavior": "followUp"}),
    );
    assert_eq!(queued["data"], json!({"queued": "followUp"}));
    let update = rpc.event("queue_update");
    assert_eq!(update["id"], "p3");
    assert_eq!(update["followUp"], json!(["later"]));
    let state = rpc.call(&json!({"id": "s1", "type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], true);
    rpc.send(&json!({"id": "a1", "type": "abort"}));
    let end = rpc.event("agent_end");
    assert_eq!(end["id"], "p1");
    assert!(end["error"].as_str().unwrap().contains("cancel"), "{end}");
    // The abort hands the queued text back instead of running it.
    let aborted = rpc.response("a1");
    assert_eq!(aborted["data"]["unsent"], json!(["later"]), "{aborted}");
    let state = rpc.call(&json!({"id": "s2", "type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], false);
    assert_eq!(state["data"]["followUp"], json!([]));
    assert_eq!(state["data"]["pendingMessageCount"], 0);
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// C21 and Pi's follow-up queue through the protocol: steering sent while
/// a tool runs is admitted after its batch, before the next request, as
/// its own user message; a follow-up runs after the answer, in the same
/// run. The tool waits for a file the test creates once both are queued.
#[test]
fn steering_during_a_tool_batch_and_a_follow_up_after_the_answer() {
    let ws = Workspace::new();
    let gate = ws.path().join("go");
    let command = format!(
        "while [ ! -f '{}' ]; do sleep 0.01; done; echo tool done",
        gate.display()
    );
    let args = json!({ "command": command }).to_string();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("call_1", "bash", &args)])),
        Reply::sse(chat_text("steered answer")),
        Reply::sse(chat_text("follow-up answer")),
    ])
    .unwrap();
    let mut rpc = against(&ws, &server, &[]);
    rpc.next();
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "run the tool"}));
    rpc.event("tool_execution_start");
    let steer = rpc.call(&json!({"id": "s1", "type": "steer", "message": "also check the docs"}));
    assert_eq!(steer["data"]["queued"], "steer");
    let follow = rpc.call(&json!({"id": "f1", "type": "follow_up", "message": "then summarize"}));
    assert_eq!(follow["data"]["queued"], "followUp");
    std::fs::write(&gate, "").unwrap();
    let end = rpc.event("agent_end");
    assert!(end.get("error").is_none(), "{end}");
    assert_eq!(events(&rpc.seen, "agent_end").len(), 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(
        (last["role"].as_str(), last["content"].as_str()),
        (Some("user"), Some("also check the docs"))
    );
    assert_eq!(messages[messages.len() - 2]["role"], "tool");
    let third = requests[2].json();
    let last = third["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "then summarize");
    // Each change of the queues was announced: two texts queued, then
    // steering taken after the batch, then the follow-up after the answer.
    let updates: Vec<(Value, Value)> = events(&rpc.seen, "queue_update")
        .iter()
        .map(|u| (u["steering"].clone(), u["followUp"].clone()))
        .collect();
    assert_eq!(
        updates,
        [
            (json!(["also check the docs"]), json!([])),
            (json!(["also check the docs"]), json!(["then summarize"])),
            (json!([]), json!(["then summarize"])),
            (json!([]), json!([])),
        ]
    );
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
    assert!(server.violations().is_empty());
}

/// Closing stdin mid-run aborts the run cleanly: agent_end is written, the
/// process exits 0, and the session log is valid and can be resumed.
#[test]
fn stdin_closing_mid_run_aborts_cleanly() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![stalled()]).unwrap();
    let mut rpc = against(&ws, &server, &[]);
    let info = rpc.next();
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "long job"}));
    rpc.until(|v| v["type"] == "message_update");
    let (status, stderr, rest) = rpc.finish();
    assert!(status.success(), "{stderr}");
    let end = rest.iter().find(|v| v["type"] == "agent_end").unwrap();
    assert_eq!(end["id"], "p1");
    let file = info["sessionFile"].as_str().unwrap();
    let log = std::fs::read_to_string(file).unwrap();
    assert!(log.ends_with('\n'));
    for line in log.lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
    let id = info["sessionId"].as_str().unwrap();
    let out = ws.run(&["resume", id, "--provider", "echo", "-p", "again"]);
    assert_eq!(out.ok(), "again\n");
}

/// A client that stops reading stdout does not make etch buffer without
/// bound: past the cap the run is aborted and etch exits 1 naming the
/// session file, whose log stays valid.
#[test]
fn a_client_that_stops_reading_gets_a_clear_error() {
    let ws = Workspace::new();
    let mut rpc = RpcClient::start_unread(
        &ws,
        &["--provider", "echo"],
        &[("ETCH_RPC_OUTBOX_BYTES", "65536")],
    );
    let big = "word ".repeat(100_000);
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": big}));
    let (status, stderr) = rpc.wait_exit();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stopped reading"), "{stderr}");
    let file = ws.only_session();
    assert!(stderr.contains(&*file.to_string_lossy()), "{stderr}");
    for line in std::fs::read_to_string(&file).unwrap().lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
}

/// get_messages, get_session_stats, get_state and export answer from the
/// session; set_model and set_thinking_level switch later requests, emit
/// their events and are recorded in the log.
#[test]
fn queries_and_switches() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    let info = rpc.next();
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "one"}));
    rpc.event("agent_end");
    let messages = rpc.call(&json!({"id": "m", "type": "get_messages"}));
    let list = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["role"], "user");
    assert_eq!(list[1]["content"][0]["text"], "one");
    let counters = rpc.call(&json!({"id": "st", "type": "get_session_stats"}));
    assert_eq!(counters["success"], true, "{counters}");
    assert!(counters["data"].is_object());
    let model = rpc
        .call(&json!({"id": "sm", "type": "set_model", "provider": "echo", "modelId": "echo-2"}));
    assert_eq!(model["data"]["model"], "echo-2", "{model}");
    // Events a command causes come before its response.
    let changed = seen(&rpc, "model_changed", "sm");
    assert_eq!(
        (changed["id"].as_str(), changed["model"].as_str()),
        (Some("sm"), Some("echo-2"))
    );
    let level = rpc.call(&json!({"id": "tl", "type": "set_thinking_level", "level": "high"}));
    assert_eq!(level["success"], true, "{level}");
    let now = rpc.call(&json!({"id": "gs", "type": "get_state"}));
    assert_eq!(now["data"]["model"]["id"], "echo-2");
    assert_eq!(now["data"]["thinkingLevel"], "high");
    let bad =
        rpc.call(&json!({"id": "bm", "type": "set_model", "provider": "nosuch", "modelId": "x"}));
    assert_eq!(bad["success"], false);
    assert!(bad["error"].as_str().unwrap().contains("nosuch"), "{bad}");
    let out = ws.path().join("transcript.txt");
    let export = rpc.call(&json!({"id": "ex", "type": "export", "outputPath": out}));
    assert_eq!(export["success"], true, "{export}");
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains("[user]\none")
    );
    let unwritable =
        rpc.call(&json!({"id": "ex2", "type": "export", "outputPath": "/nonexistent-dir/x.txt"}));
    assert_eq!(unwritable["success"], false);
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
    let log = jsonl(std::path::Path::new(info["sessionFile"].as_str().unwrap()));
    let kinds = types(&log);
    assert!(kinds.contains(&"model.change".to_owned()), "{kinds:?}");
    assert!(
        kinds.contains(&"thinking_level.change".to_owned()),
        "{kinds:?}"
    );
}

/// Pi's `get_last_assistant_text` and `set_session_name`: the last
/// answer's text (null before any), a name stored for `sessions`, an
/// empty one refused with Pi's words.
#[test]
fn last_answer_and_session_name() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    let _info = rpc.next();
    let none = rpc.call(&json!({"id": "t0", "type": "get_last_assistant_text"}));
    assert_eq!(none["data"], json!({"text": null}), "{none}");
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "say this"}));
    rpc.event("agent_end");
    let text = rpc.call(&json!({"id": "t1", "type": "get_last_assistant_text"}));
    assert_eq!(text["data"]["text"], "say this", "{text}");
    let empty = rpc.call(&json!({"id": "n0", "type": "set_session_name", "name": "  "}));
    assert_eq!(empty["success"], false);
    assert_eq!(empty["error"], "Session name cannot be empty");
    let named = rpc.call(&json!({"id": "n1", "type": "set_session_name", "name": "release notes"}));
    assert_eq!(named["data"]["name"], "release notes", "{named}");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
    let listed = ws.run(&["sessions"]).ok();
    assert!(listed.contains("release notes"), "{listed}");
}

/// bash runs outside a tool call and its output enters the context of the
/// next prompt; compact answers (here: nothing to compact yet, a skip, not
/// an error) with its start and end events.
#[test]
fn bash_and_compact() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    rpc.next();
    let bash = rpc.call(&json!({"id": "b", "type": "bash", "command": "echo from-the-shell"}));
    assert_eq!(bash["success"], true, "{bash}");
    assert!(
        bash["data"]["output"]
            .as_str()
            .unwrap()
            .contains("from-the-shell")
    );
    let messages = rpc.call(&json!({"id": "m", "type": "get_messages"}));
    let text = messages["data"]["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.starts_with("Ran `echo from-the-shell`\n```\n"),
        "{text}"
    );
    let compact = rpc.call(&json!({"id": "c", "type": "compact"}));
    assert_eq!(compact["success"], true, "{compact}");
    seen(&rpc, "compaction_start", "c");
    seen(&rpc, "compaction_end", "c");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// The session tree: navigate moves the leaf (the next prompt starts a
/// branch there), fork copies the branch before an event into a new
/// session file that names its origin, and unknown ids are errors naming
/// them.
#[test]
fn navigate_and_fork() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    let info = rpc.next();
    let origin = info["sessionFile"].as_str().unwrap().to_owned();
    for (id, text) in [("p1", "one"), ("p2", "two")] {
        rpc.send(&json!({"id": id, "type": "prompt", "message": text}));
        rpc.until(|v| v["type"] == "agent_end" && v["id"] == id);
    }
    let log = jsonl(std::path::Path::new(&origin));
    let id_of = |kind: &str, text: &str| -> String {
        log.iter()
            .find(|e| e["type"] == kind && e["data"]["content"][0]["text"] == text)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let first_answer = id_of("message.assistant", "one");
    let second_prompt = id_of("message.user", "two");
    let unknown = rpc.call(&json!({"id": "n0", "type": "navigate", "entryId": "01NOSUCHEVENT"}));
    assert_eq!(unknown["success"], false);
    assert!(
        unknown["error"].as_str().unwrap().contains("01NOSUCHEVENT"),
        "{unknown}"
    );
    let nav = rpc.call(&json!({"id": "n1", "type": "navigate", "entryId": first_answer}));
    assert_eq!(nav["success"], true, "{nav}");
    let messages = rpc.call(&json!({"id": "m1", "type": "get_messages"}));
    assert_eq!(messages["data"]["messages"].as_array().unwrap().len(), 2);
    rpc.send(&json!({"id": "p3", "type": "prompt", "message": "three"}));
    rpc.until(|v| v["type"] == "agent_end" && v["id"] == "p3");
    let messages = rpc.call(&json!({"id": "m2", "type": "get_messages"}));
    let texts: Vec<&str> = messages["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "one", "three", "three"]);
    let bad_fork = rpc.call(&json!({"id": "f0", "type": "fork", "entryId": "01NOSUCHEVENT"}));
    assert_eq!(bad_fork["success"], false);
    assert!(
        bad_fork["error"]
            .as_str()
            .unwrap()
            .contains("01NOSUCHEVENT"),
        "{bad_fork}"
    );
    let fork = rpc.call(&json!({"id": "f1", "type": "fork", "entryId": second_prompt}));
    assert_eq!(fork["success"], true, "{fork}");
    assert_eq!(fork["data"]["text"], "two");
    let forked = fork["data"]["sessionFile"].as_str().unwrap().to_owned();
    assert_ne!(forked, origin);
    let info = seen(&rpc, "session_info", "f1");
    assert_eq!(info["sessionFile"], forked.as_str());
    let messages = rpc.call(&json!({"id": "m3", "type": "get_messages"}));
    assert_eq!(messages["data"]["messages"].as_array().unwrap().len(), 2);
    let header = &jsonl(std::path::Path::new(&forked))[0];
    assert_eq!(header["data"]["forkSessionPath"], origin.as_str());
    assert_eq!(header["data"]["forkBeforeEventId"], second_prompt.as_str());
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
    let tree = ws.run(&["show", "--tree", info["sessionId"].as_str().unwrap()]);
    assert_eq!(tree.code(), 0, "{}", tree.stderr());
}

/// navigate with summarize: the branch left behind is summarized by the
/// model, the summary follows the move in the log and is what the next
/// request sees after the earlier event (P-DATA-07's wrapper).
#[test]
fn navigate_with_a_branch_summary() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    let info = rpc.next();
    let file = info["sessionFile"].as_str().unwrap().to_owned();
    for (id, text) in [("p1", "one"), ("p2", "two")] {
        rpc.send(&json!({"id": id, "type": "prompt", "message": text}));
        rpc.until(|v| v["type"] == "agent_end" && v["id"] == id);
    }
    let log = jsonl(std::path::Path::new(&file));
    let first_answer = log
        .iter()
        .find(|e| e["type"] == "message.assistant")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let nav = rpc
        .call(&json!({"id": "n", "type": "navigate", "entryId": first_answer, "summarize": true}));
    assert_eq!(nav["success"], true, "{nav}");
    let summary = nav["data"]["summary"].as_str().unwrap().to_owned();
    assert!(!summary.is_empty());
    // The summary request counts: its metrics reach the client, marked
    // with what it was for, before the response.
    let metrics = events(&rpc.seen, "model_metrics");
    let counted = metrics
        .iter()
        .find(|e| e["id"] == "n")
        .expect("the summary's metrics");
    assert_eq!(counted["metrics"]["purpose"], "branch_summary", "{counted}");
    let messages = rpc.call(&json!({"id": "m", "type": "get_messages"}));
    let list = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(list.len(), 3, "{list:#?}");
    let text = list[2]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"),
        "{text}"
    );
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
    let log = jsonl(std::path::Path::new(&file));
    let kinds = types(&log);
    let nav_at = kinds.iter().position(|k| k == "session.navigate").unwrap();
    assert_eq!(kinds[nav_at + 1], "context.branch_summary");
    assert_eq!(log[nav_at + 1]["parentId"], log[nav_at]["id"]);
    assert_eq!(kinds[nav_at + 2], "model.metrics");
    assert_eq!(log[nav_at + 2]["data"]["purpose"], "branch_summary");
}

/// new_session starts a fresh file; switch_session opens another one, and
/// refuses a missing file or one another etch holds, keeping the current
/// session.
#[test]
fn new_and_switch_session() {
    let ws = Workspace::new();
    let done = ws.run(&["--provider", "echo", "-p", "earlier"]);
    done.ok();
    let earlier = ws.only_session();
    let mut holder = echo(&ws);
    let held = holder.next()["sessionFile"].as_str().unwrap().to_owned();
    let mut rpc = echo(&ws);
    let first = rpc.next()["sessionFile"].as_str().unwrap().to_owned();
    let missing = rpc.call(
        &json!({"id": "w0", "type": "switch_session", "sessionPath": ws.path().join("nope.jsonl")}),
    );
    assert_eq!(missing["success"], false);
    assert!(
        missing["error"].as_str().unwrap().contains("nope.jsonl"),
        "{missing}"
    );
    let locked = rpc.call(&json!({"id": "w1", "type": "switch_session", "sessionPath": held}));
    assert_eq!(locked["success"], false, "{locked}");
    assert!(
        locked["error"].as_str().unwrap().contains("in use"),
        "{locked}"
    );
    // The current session, named by a relative path, is not "in use".
    let relative = std::path::Path::new(&first)
        .strip_prefix(ws.path().canonicalize().unwrap())
        .or_else(|_| std::path::Path::new(&first).strip_prefix(ws.path()))
        .unwrap()
        .to_path_buf();
    let same = rpc.call(&json!({"id": "w9", "type": "switch_session", "sessionPath": relative}));
    assert_eq!(same["success"], true, "{same}");
    let state = rpc.call(&json!({"id": "s0", "type": "get_state"}));
    assert_eq!(state["data"]["sessionFile"], first.as_str());
    let switched = rpc.call(&json!({"id": "w2", "type": "switch_session", "sessionPath": earlier}));
    assert_eq!(switched["success"], true, "{switched}");
    let messages = rpc.call(&json!({"id": "m", "type": "get_messages"}));
    assert_eq!(
        messages["data"]["messages"][0]["content"][0]["text"],
        "earlier"
    );
    let fresh = rpc.call(&json!({"id": "n", "type": "new_session"}));
    assert_eq!(fresh["success"], true);
    let info = seen(&rpc, "session_info", "n");
    assert_ne!(info["sessionFile"], first.as_str());
    let messages = rpc.call(&json!({"id": "m2", "type": "get_messages"}));
    assert_eq!(messages["data"]["messages"], json!([]));
    drop(holder);
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// A run that fails gets a second response to its prompt (after its
/// agent_end) saying why; the session goes on.
#[test]
fn a_failed_run_is_answered_twice() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::json(
            400,
            &json!({"error": {"message": "model m1 does not exist"}}),
        ),
        Reply::sse(chat_text("fine now")),
    ])
    .unwrap();
    let mut rpc = against(&ws, &server, &[]);
    rpc.next();
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "hi"}));
    assert_eq!(rpc.response("p1")["success"], true);
    let end = rpc.event("agent_end");
    assert!(
        end["error"].as_str().unwrap().contains("does not exist"),
        "{end}"
    );
    let failed = rpc.response("p1");
    assert_eq!(failed["success"], false);
    assert!(
        failed["error"].as_str().unwrap().contains("does not exist"),
        "{failed}"
    );
    rpc.send(&json!({"id": "p2", "type": "prompt", "message": "again"}));
    let end = rpc.until(|v| v["type"] == "agent_end" && v["id"] == "p2");
    assert!(end.get("error").is_none(), "{end}");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// A long bash command runs on a task of its own: queries are answered
/// meanwhile, a prompt is refused naming the command, and abort stops it
/// (its response says it was cancelled, then the abort's); so does
/// `abort_bash`.
#[test]
fn abort_stops_a_long_bash_command() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    rpc.next();
    rpc.send(&json!({"id": "b", "type": "bash", "command": "sleep 600"}));
    let state = rpc.call(&json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], true);
    let refused = rpc.call(&json!({"id": "p", "type": "prompt", "message": "hi"}));
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("bash command is still running"),
        "{refused}"
    );
    rpc.send(&json!({"id": "a", "type": "abort"}));
    let bash = rpc.response("b");
    assert_eq!(bash["data"]["cancelled"], true, "{bash}");
    assert_eq!(rpc.response("a")["success"], true);
    // Pi's `abort_bash` stops a running command the same way, and says
    // it did.
    rpc.send(&json!({"id": "b2", "type": "bash", "command": "sleep 600"}));
    let aborted = rpc.call(&json!({"id": "ab", "type": "abort_bash"}));
    assert_eq!(aborted["data"]["aborted"], true, "{aborted}");
    let bash = rpc.response("b2");
    assert_eq!(bash["data"]["cancelled"], true, "{bash}");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// set_model to another provider drops the endpoint and key given for
/// the old one (the echo model needs neither; the server is not asked
/// again); export without a path writes beside the session file.
#[test]
fn switching_provider_and_default_export() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text("from the server"))]).unwrap();
    let mut rpc = against(&ws, &server, &[]);
    let info = rpc.next();
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "hi"}));
    rpc.until(|v| v["type"] == "agent_end" && v["id"] == "p1");
    let switched =
        rpc.call(&json!({"id": "m", "type": "set_model", "provider": "echo", "modelId": "echo"}));
    assert_eq!(switched["success"], true, "{switched}");
    rpc.send(&json!({"id": "p2", "type": "prompt", "message": "local"}));
    let end = rpc.until(|v| v["type"] == "agent_end" && v["id"] == "p2");
    assert!(end.get("error").is_none(), "{end}");
    assert_eq!(server.requests().len(), 1);
    let export = rpc.call(&json!({"id": "x", "type": "export"}));
    let path = export["data"]["path"].as_str().unwrap().to_owned();
    let file = info["sessionFile"].as_str().unwrap();
    assert_eq!(path, file.replace(".jsonl", ".txt"));
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("from the server")
    );
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// set_steering_mode and set_follow_up_mode answer with the mode and show
/// in get_state; a mode that does not exist is refused with the id.
#[test]
fn queue_modes() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    rpc.next();
    let steering =
        rpc.call(&json!({"id": "s", "type": "set_steering_mode", "mode": "one-at-a-time"}));
    assert_eq!(steering["data"]["mode"], "one-at-a-time", "{steering}");
    let follow = rpc.call(&json!({"id": "f", "type": "set_follow_up_mode", "mode": "all"}));
    assert_eq!(follow["data"]["mode"], "all", "{follow}");
    let state = rpc.call(&json!({"id": "g", "type": "get_state"}));
    assert_eq!(state["data"]["steeringMode"], "one-at-a-time");
    assert_eq!(state["data"]["followUpMode"], "all");
    let bad = rpc.call(&json!({"id": "b", "type": "set_follow_up_mode", "mode": "sometimes"}));
    assert_eq!(bad["success"], false);
    assert!(
        bad["error"].as_str().unwrap().contains("sometimes"),
        "{bad}"
    );
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// `etch rpc --session PREFIX` continues a session; -p, --json and --skill
/// are usage errors; an unknown prefix is a usage error.
#[test]
fn continuing_a_session_and_bad_options() {
    let ws = Workspace::new();
    ws.run(&["--provider", "echo", "-p", "first"]).ok();
    let file = ws.only_session();
    let id = file.file_stem().unwrap().to_string_lossy().into_owned();
    let mut rpc = RpcClient::start(&ws, &["--session", &id, "--provider", "echo"], &[]);
    assert_eq!(rpc.next()["sessionId"], id.as_str());
    let messages = rpc.call(&json!({"id": "m", "type": "get_messages"}));
    assert_eq!(messages["data"]["messages"].as_array().unwrap().len(), 2);
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
    for args in [
        vec!["rpc", "-p", "x"],
        vec!["rpc", "--json"],
        vec!["rpc", "--skill", "s"],
        vec!["rpc", "--session", "ZZZZZZ"],
    ] {
        let out = ws.run(&args);
        assert_eq!(out.code(), 2, "{args:?}: {}", out.stderr());
    }
}

/// `export` to a `.html` path writes an HTML page with the model's
/// markup escaped (it used to write the plain transcript, `<script>` and
/// all); `format` picks md or jsonl whatever the path; a bad format is
/// refused by name.
#[test]
fn export_to_html_escapes_and_formats_are_chosen() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    let info = rpc.next();
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "<script>alert(1)</script>"}));
    rpc.event("agent_end");
    let page = ws.path().join("t.html");
    let export = rpc.call(&json!({"id": "h", "type": "export", "outputPath": page}));
    assert_eq!(export["success"], true, "{export}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!doctype html>"), "{html}");
    assert!(
        !html.contains("<script>") && html.contains("&lt;script&gt;"),
        "{html}"
    );
    let log = ws.path().join("log.html");
    rpc.call(&json!({"id": "j", "type": "export", "outputPath": log, "format": "jsonl"}));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        std::fs::read_to_string(info["sessionFile"].as_str().unwrap()).unwrap()
    );
    let bad = rpc.call(&json!({"id": "b", "type": "export", "format": "pdf"}));
    assert_eq!(bad["success"], false);
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .contains("use html, md or jsonl"),
        "{bad}"
    );
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// Every started message ends: the streaming answer's `message_start`
/// carries its role, and an `abort` mid-stream ends it with
/// `stopReason: "aborted"` and the text that had streamed.
#[test]
fn an_aborted_answer_still_ends() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::Sse {
        events: etch_test_support::chat_text("partial answer")[..1].to_vec(),
        gap: std::time::Duration::ZERO,
        end: etch_test_support::End::Stall(std::time::Duration::from_secs(60)),
    }])
    .unwrap();
    let args = support::model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut rpc = support::rpc::RpcClient::start(&ws, &args, &[]);
    rpc.next();
    rpc.send(&json!({"id": "p", "type": "prompt", "message": "go"}));
    let start = rpc.until(|e| e["type"] == "message_start" && e["message"]["role"] == "assistant");
    assert_eq!(start["message"]["content"], json!([]));
    rpc.until(|e| e["type"] == "message_update");
    rpc.send(&json!({"id": "a", "type": "abort"}));
    let end = rpc.until(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant");
    assert_eq!(end["message"]["stopReason"], "aborted", "{end}");
    assert!(
        end["message"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("partial"),
        "{end}"
    );
    rpc.until(|e| e["type"] == "agent_end");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// `get_fork_messages` hands out the ids `fork` takes, and `fork`
/// accepts the 10-character ends `etch show --tree` prints (any unique
/// end of an id, in either case).
#[test]
fn fork_takes_the_ids_the_tree_prints() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    rpc.next();
    for (id, text) in [("p1", "one"), ("p2", "two")] {
        rpc.send(&json!({"id": id, "type": "prompt", "message": text}));
        rpc.until(|v| v["type"] == "agent_end" && v["id"] == id);
    }
    let listed = rpc.call(&json!({"id": "l", "type": "get_fork_messages"}));
    let messages = listed["data"]["messages"].as_array().unwrap().clone();
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "two"], "{listed}");
    let second = messages[1]["entryId"].as_str().unwrap().to_owned();
    let short = second[second.len() - 10..].to_ascii_lowercase();
    let fork = rpc.call(&json!({"id": "f", "type": "fork", "entryId": short}));
    assert_eq!(fork["success"], true, "{fork}");
    assert_eq!(fork["data"]["text"], "two");
    let unknown = rpc.call(&json!({"id": "u", "type": "fork", "entryId": "NOSUCHEND"}));
    assert_eq!(unknown["success"], false);
    assert!(
        unknown["error"]
            .as_str()
            .unwrap()
            .contains("etch show --tree"),
        "{unknown}"
    );
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// Pi's model and thinking commands: the available models (the current
/// one first, then the server's list), cycling the model to the next the
/// server offers (the next request uses it), cycling the thinking level,
/// the commands a prompt can invoke (none: no skills here), and
/// `abort_bash` with nothing to stop.
#[test]
fn models_levels_and_commands() {
    let ws = Workspace::new();
    let list = json!({"data": [{"id": "m1"}, {"id": "m2"}]});
    // Listed once: cycle_model uses the list get_available_models got.
    let server = FakeServer::start(vec![
        Reply::json(200, &list),
        Reply::sse(chat_text("from m2")),
    ])
    .unwrap();
    let mut rpc = against(&ws, &server, &[]);
    let _info = rpc.next();
    let models = rpc.call(&json!({"id": "am", "type": "get_available_models"}));
    let ids: Vec<&str> = models["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m1", "m2"], "{models}");
    assert_eq!(models["data"]["models"][0]["provider"], "openai");
    let cycled = rpc.call(&json!({"id": "cm", "type": "cycle_model"}));
    assert_eq!(cycled["data"]["model"]["id"], "m2", "{cycled}");
    assert_eq!(cycled["data"]["isScoped"], false);
    let level = rpc.call(&json!({"id": "cl", "type": "cycle_thinking_level"}));
    assert_eq!(level["data"]["level"], "minimal", "{level}");
    let level = rpc.call(&json!({"id": "cl2", "type": "cycle_thinking_level"}));
    assert_eq!(level["data"]["level"], "low", "{level}");
    let commands = rpc.call(&json!({"id": "gc", "type": "get_commands"}));
    // No skills here: Pi lists skills, templates and extension commands.
    assert_eq!(commands["data"]["commands"], json!([]), "{commands}");
    let abort = rpc.call(&json!({"id": "ab", "type": "abort_bash"}));
    assert_eq!(abort["data"]["aborted"], false, "{abort}");
    rpc.send(&json!({"id": "p", "type": "prompt", "message": "hi"}));
    rpc.event("agent_end");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the list is asked once");
    assert_eq!(requests[1].json()["model"], "m2");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// Pi's `clone` (the branch, leaf included, in a new session that goes
/// on), `export_html` (answers the path) and `set_auto_compaction`.
#[test]
fn clone_export_html_and_auto_compaction() {
    let ws = Workspace::new();
    let mut rpc = echo(&ws);
    let info = rpc.next();
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "keep me"}));
    rpc.event("agent_end");
    let cloned = rpc.call(&json!({"id": "c", "type": "clone"}));
    assert_eq!(cloned["data"]["cancelled"], false, "{cloned}");
    let new_file = cloned["data"]["sessionFile"].as_str().unwrap().to_owned();
    assert_ne!(new_file, info["sessionFile"].as_str().unwrap());
    let messages = rpc.call(&json!({"id": "m", "type": "get_messages"}));
    let list = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(list.len(), 2, "the leaf came along: {messages}");
    let out = ws.path().join("page.html");
    let html = rpc.call(&json!({"id": "h", "type": "export_html", "outputPath": out}));
    assert_eq!(html["data"]["path"], out.to_str().unwrap(), "{html}");
    assert!(std::fs::read_to_string(&out).unwrap().contains("keep me"));
    let off = rpc.call(&json!({"id": "ac", "type": "set_auto_compaction", "enabled": false}));
    assert_eq!(off["success"], true, "{off}");
    let state = rpc.call(&json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["autoCompactionEnabled"], false, "{state}");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
    let copy = jsonl(std::path::Path::new(&new_file));
    assert!(copy.iter().any(|e| e["type"] == "message.assistant"));
}

/// Pi's `set_auto_retry`: off, a 500 fails the prompt at once; on again,
/// it is retried.
#[test]
fn auto_retry_can_be_turned_off() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::text(500, "overloaded"),
        Reply::text(500, "overloaded"),
        Reply::sse(chat_text("second try")),
    ])
    .unwrap();
    let mut rpc = against(&ws, &server, &[]);
    let _info = rpc.next();
    let off = rpc.call(&json!({"id": "r0", "type": "set_auto_retry", "enabled": false}));
    assert_eq!(off["data"]["enabled"], false, "{off}");
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "hi"}));
    rpc.event("agent_end");
    assert_eq!(server.requests().len(), 1, "no retry");
    let on = rpc.call(&json!({"id": "r1", "type": "set_auto_retry", "enabled": true}));
    assert_eq!(on["data"]["enabled"], true, "{on}");
    rpc.send(&json!({"id": "p2", "type": "prompt", "message": "again"}));
    rpc.event("agent_end");
    assert_eq!(server.requests().len(), 3, "retried once");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// Pi's `abort_retry`: while a run waits a minute to retry a 503, the
/// retry is given up and the run ends at once; with no retry waiting it
/// answers `aborted: false`.
#[test]
fn abort_retry_gives_up_the_wait() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::text(503, "busy")]).unwrap();
    let base = format!("{}/v1", server.url());
    let args = [
        "--provider",
        "openai",
        "--base-url",
        &base,
        "--api-key",
        "sk-test",
        "--model",
        "m1",
    ];
    let mut rpc = RpcClient::start(&ws, &args, &[("ETCH_RETRY_BASE_DELAY_MS", "60000")]);
    let _info = rpc.next();
    let idle = rpc.call(&json!({"id": "a0", "type": "abort_retry"}));
    assert_eq!(idle["data"]["aborted"], false, "{idle}");
    rpc.send(&json!({"id": "p", "type": "prompt", "message": "hi"}));
    rpc.event("auto_retry_start");
    let aborted = rpc.call(&json!({"id": "a1", "type": "abort_retry"}));
    assert_eq!(aborted["data"]["aborted"], true, "{aborted}");
    rpc.event("agent_end");
    assert_eq!(server.requests().len(), 1);
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// Pi's `set_model` and `set_thinking_level` during a run apply to its
/// next request (logged before it), and stay for later runs.
#[test]
fn set_model_during_a_run_applies_to_the_next_request() {
    let ws = Workspace::new();
    let gate = ws.path().join("go");
    let wait = format!(
        "while [ ! -f '{}' ]; do sleep 0.01; done; echo released",
        gate.display()
    );
    let server = FakeServer::start(vec![
        Reply::sse(etch_test_support::chat_tool_call(
            "c1",
            "bash",
            &json!({ "command": wait }).to_string(),
        )),
        Reply::sse(chat_text("answered by m2")),
        Reply::sse(chat_text("still m2")),
    ])
    .unwrap();
    let mut rpc = against(&ws, &server, &[]);
    let info = rpc.next();
    rpc.send(&json!({"id": "p1", "type": "prompt", "message": "go"}));
    rpc.event("tool_execution_start");
    let switched =
        rpc.call(&json!({"id": "sm", "type": "set_model", "provider": "openai", "modelId": "m2"}));
    assert_eq!(switched["success"], true, "{switched}");
    assert_eq!(switched["data"]["model"], "m2", "{switched}");
    let state = rpc.call(&json!({"id": "gs", "type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], true);
    assert_eq!(state["data"]["model"]["id"], "m2", "{state}");
    std::fs::write(&gate, "").unwrap();
    rpc.event("agent_end");
    let requests = server.requests();
    assert_eq!(requests[0].json()["model"], "m1");
    assert_eq!(requests[1].json()["model"], "m2", "the next request");
    rpc.send(&json!({"id": "p2", "type": "prompt", "message": "again"}));
    rpc.event("agent_end");
    assert_eq!(server.requests()[2].json()["model"], "m2", "and later runs");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
    let log = jsonl(std::path::Path::new(info["sessionFile"].as_str().unwrap()));
    let kinds = types(&log);
    let change = kinds.iter().position(|k| k == "model.change").unwrap();
    let tool = kinds.iter().position(|k| k == "message.tool").unwrap();
    let second = kinds
        .iter()
        .rposition(|k| k == "message.assistant")
        .unwrap();
    assert!(tool < change && change < second, "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| *k == "model.change").count(),
        1,
        "{kinds:?}"
    );
}
