//! Hooks in real runs (E-HOOK, G5, G6, issue 14): real shell scripts as
//! hooks, the real binary against the fake model server, and assertions
//! on stdout, exit codes, the requests the model got and the session log
//! (every hook run leaves a `hook.run` event).

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::{Value, json};
use support::{Workspace, jsonl, types};

/// Writes an executable hook script outside the project (so tools that
/// list the project do not see it) and returns its path.
fn hook(ws: &Workspace, name: &str, body: &str) -> String {
    let path = ws.home.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// A file in HOME a hook writes to.
fn out_file(ws: &Workspace, name: &str) -> PathBuf {
    ws.home.path().join(name)
}

/// The data of the `hook.run` events of the session.
fn hook_runs(ws: &Workspace) -> Vec<Value> {
    jsonl(&ws.only_session())
        .into_iter()
        .filter(|e| e["type"] == "hook.run")
        .map(|e| e["data"].clone())
        .collect()
}

/// The tool results of the session, by call id.
fn tool_result(ws: &Workspace, id: &str) -> Value {
    jsonl(&ws.only_session())
        .into_iter()
        .find(|e| e["type"] == "message.tool" && e["data"]["toolCallId"] == id)
        .map_or_else(|| panic!("no result for {id}"), |e| e["data"].clone())
}

/// The text of a tool result.
fn result_text(ws: &Workspace, id: &str) -> String {
    tool_result(ws, id)["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Two rewriting `PreToolUse` hooks run in order, the second seeing the
/// first's arguments; what they leave is what is validated and run; each
/// run is logged with its call id.
#[test]
fn pre_tool_hooks_chain_their_rewrites() {
    let ws = Workspace::new();
    let first = hook(
        &ws,
        "first.sh",
        r#"grep -q 'echo one' && echo '{"arguments":"{\"command\":\"echo two\"}"}'; exit 0"#,
    );
    let second = hook(
        &ws,
        "second.sh",
        r#"grep -q 'echo two' && echo '{"arguments":"{\"command\":\"echo three\"}"}'; exit 0"#,
    );
    let other = hook(&ws, "other.sh", "echo called >> \"$HOME/other.log\"");
    ws.user_config(&format!(
        "[[hooks.PreToolUse]]\ncommand = \"{first}\"\n\n[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"{second}\"\n\n[[hooks.PreToolUse]]\nmatcher = \"bas\"\ncommand = \"{other}\"\n"
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "call_1",
            "bash",
            r#"{"command":"echo one"}"#,
        )])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    assert_eq!(ws.run_model(&server, &["-p", "go"], &[]).ok(), "done\n");
    assert_eq!(result_text(&ws, "call_1"), "three\n");
    let second_request = server.requests()[1].json();
    let messages = second_request["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], "three\n");
    let runs = hook_runs(&ws);
    assert_eq!(
        runs.len(),
        2,
        "the anchored `bas` matcher does not match bash: {runs:?}"
    );
    assert!(!out_file(&ws, "other.log").exists());
    for (run, command) in runs.iter().zip([&first, &second]) {
        assert_eq!(run["event"], "PreToolUse");
        assert_eq!(run["outcome"], "rewrote");
        assert_eq!(run["command"], command.as_str());
        assert_eq!(run["toolCallId"], "call_1");
        assert!(run["durationMs"].is_u64());
    }
    let status = ws.run(&["status"]).ok();
    assert!(
        status.contains("hooks        2 runs (rewrote 2)"),
        "{status}"
    );
}

/// A block with a reason, exit code 2 with the reason on stderr, and a
/// block without a reason each answer the call with G6's text, and the
/// tool does not run.
#[test]
fn pre_tool_blocks_answer_the_call_and_nothing_runs() {
    let ws = Workspace::new();
    let json_block = hook(
        &ws,
        "json.sh",
        r#"echo '{"block":true,"reason":"writes to .env are blocked"}'"#,
    );
    let exit_block = hook(&ws, "exit.sh", "echo 'no edits today' >&2; exit 2");
    let bare_block = hook(&ws, "bare.sh", r#"echo '{"block":true}'"#);
    ws.user_config(&format!(
        "[[hooks.PreToolUse]]\nmatcher = \"write\"\ncommand = \"{json_block}\"\n\n[[hooks.PreToolUse]]\nmatcher = \"edit\"\ncommand = \"{exit_block}\"\n\n[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"{bare_block}\"\n"
    ));
    std::fs::write(ws.path().join("a.txt"), "old\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c_write", "write", r#"{"path":".env","content":"X=1"}"#),
            (
                "c_edit",
                "edit",
                r#"{"path":"a.txt","edits":[{"oldText":"old","newText":"new"}]}"#,
            ),
            ("c_bash", "bash", r#"{"command":"touch made-by-bash"}"#),
        ])),
        Reply::sse(chat_text("ok")),
    ])
    .unwrap();
    ws.run_model(&server, &["-p", "go"], &[]).ok();
    assert_eq!(
        result_text(&ws, "c_write"),
        "tool error: writes to .env are blocked"
    );
    assert_eq!(result_text(&ws, "c_edit"), "tool error: no edits today");
    assert_eq!(
        result_text(&ws, "c_bash"),
        "tool error: Tool execution was blocked"
    );
    assert!(!ws.path().join(".env").exists());
    assert!(!ws.path().join("made-by-bash").exists());
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "old\n"
    );
    let runs = hook_runs(&ws);
    let outcomes: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| {
            (
                r["toolCallId"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("c_write", "blocked"),
            ("c_edit", "blocked"),
            ("c_bash", "blocked")
        ]
    );
    assert_eq!(runs[0]["reason"], "writes to .env are blocked");
    assert_eq!(runs[1]["reason"], "no edits today");
    assert!(runs[2].get("reason").is_none());
}

/// A hook that fails, rewrites into invalid JSON, or into arguments the
/// tool's schema rejects: each is a tool error for that call (the tool
/// does not run), never a crash, and the run goes on.
#[test]
fn pre_tool_failures_and_bad_rewrites_are_tool_errors() {
    let ws = Workspace::new();
    let failing = hook(&ws, "fail.sh", "echo 'policy server down' >&2; exit 1");
    let invalid = hook(&ws, "invalid.sh", r#"echo '{"arguments":"{not json"}'"#);
    let schema = hook(
        &ws,
        "schema.sh",
        r#"echo '{"arguments":"{\"pattern\":5}"}'"#,
    );
    let not_found = hook(&ws, "nf.sh", "exec /nonexistent/program");
    ws.user_config(&format!(
        "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"{failing}\"\n\n[[hooks.PreToolUse]]\nmatcher = \"write\"\ncommand = \"{invalid}\"\n\n[[hooks.PreToolUse]]\nmatcher = \"grep\"\ncommand = \"{schema}\"\n\n[[hooks.PreToolUse]]\nmatcher = \"ls\"\ncommand = \"{not_found}\"\n"
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "bash", r#"{"command":"touch ran"}"#),
            ("c2", "write", r#"{"path":"w.txt","content":"x"}"#),
            ("c3", "grep", r#"{"pattern":"x"}"#),
            ("c4", "ls", "{}"),
        ])),
        Reply::sse(chat_text("recovered")),
    ])
    .unwrap();
    assert_eq!(
        ws.run_model(&server, &["-p", "go"], &[]).ok(),
        "recovered\n"
    );
    let bash = result_text(&ws, "c1");
    assert!(
        bash.starts_with("tool error: PreToolUse hook failed: `")
            && bash.ends_with("exited with code 1: policy server down"),
        "{bash}"
    );
    assert!(!ws.path().join("ran").exists());
    let write = result_text(&ws, "c2");
    assert!(
        write.starts_with("tool error: PreToolUse hook failed: `")
            && write.contains("`arguments` is not valid JSON"),
        "{write}"
    );
    assert!(!ws.path().join("w.txt").exists());
    let grep = result_text(&ws, "c3");
    assert!(
        grep.starts_with("tool error: ") && grep.contains("pattern"),
        "the schema check sees the rewritten arguments: {grep}"
    );
    let ls = result_text(&ws, "c4");
    assert!(
        ls.contains("PreToolUse hook failed") && ls.contains("not found (exit 127)"),
        "{ls}"
    );
    let failed = hook_runs(&ws)
        .iter()
        .filter(|r| r["outcome"] == "failed")
        .count();
    assert_eq!(
        failed, 3,
        "a rewrite into invalid JSON is the hook's failure"
    );
}

/// A hook that sleeps past its timeout while its child holds stdout open
/// is killed with its group; the call fails and the run goes on.
#[test]
fn a_hook_past_its_timeout_is_killed_with_its_children() {
    let ws = Workspace::new();
    let pid_file = out_file(&ws, "child.pid");
    let slow = hook(
        &ws,
        "slow.sh",
        &format!("sleep 300 &\necho $! > {}\nsleep 300", pid_file.display()),
    );
    ws.user_config(&format!(
        "[[hooks.PreToolUse]]\ncommand = \"{slow}\"\ntimeout_seconds = 1\n"
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "ls", "{}")])),
        Reply::sse(chat_text("went on")),
    ])
    .unwrap();
    assert_eq!(ws.run_model(&server, &["-p", "go"], &[]).ok(), "went on\n");
    let text = result_text(&ws, "c1");
    assert!(
        text.contains("PreToolUse hook failed") && text.contains("timed out after 1 s"),
        "{text}"
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        support::process_gone(&pid),
        "the hook's child {pid} outlived it"
    );
}

/// `PostToolUse` redaction reaches both the log and the next request; the
/// raw output is in neither. A failing `PostToolUse` hook (exit 2 is not a
/// block there) replaces the output with G6's text.
#[test]
fn post_tool_rewrites_reach_the_log_and_the_model() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("secret.txt"), "token=hunter2\n").unwrap();
    let redact = hook(
        &ws,
        "redact.sh",
        r#"grep -q hunter2 && echo '{"output":"token=[redacted]"}'; exit 0"#,
    );
    let broken = hook(&ws, "broken.sh", "echo 'bad day' >&2; exit 2");
    ws.user_config(&format!(
        "[[hooks.PostToolUse]]\nmatcher = \"read\"\ncommand = \"{redact}\"\n\n[[hooks.PostToolUse]]\nmatcher = \"bash\"\ncommand = \"{broken}\"\n"
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "read", r#"{"path":"secret.txt"}"#),
            ("c2", "bash", r#"{"command":"echo raw-output"}"#),
        ])),
        Reply::sse(chat_text("ok")),
    ])
    .unwrap();
    ws.run_model(&server, &["-p", "go"], &[]).ok();
    assert_eq!(result_text(&ws, "c1"), "token=[redacted]");
    let bash = result_text(&ws, "c2");
    assert!(
        bash.starts_with("tool error: PostToolUse hook failed: `")
            && bash
                .contains("exited with code 2, which blocks only PreToolUse and UserPromptSubmit"),
        "{bash}"
    );
    let log = std::fs::read_to_string(ws.only_session()).unwrap();
    assert!(!log.contains("hunter2"), "the raw output reached the log");
    let request = server.requests()[1].body_text();
    assert!(!request.contains("hunter2") && request.contains("token=[redacted]"));
    assert!(!request.contains("raw-output\\n\""), "{request}");
    assert!(tool_result(&ws, "c2")["isError"].as_bool().unwrap());
}

/// `UserPromptSubmit` rewrites what is stored and sent; a block (exit 2,
/// or JSON) or a failure appends no `message.user`, makes no request and
/// exits 1 with the reason.
#[test]
fn prompt_admission_rewrites_or_refuses() {
    let ws = Workspace::new();
    let rewrite = hook(
        &ws,
        "rewrite.sh",
        r#"if grep -q 'forbidden' ; then echo 'prompt mentions the forbidden project' >&2; exit 2; fi
echo '{"prompt":"rewritten prompt"}'"#,
    );
    ws.user_config(&format!(
        "[[hooks.UserPromptSubmit]]\ncommand = \"{rewrite}\"\n"
    ));
    let server = FakeServer::start(vec![Reply::sse(chat_text("fine"))]).unwrap();
    assert_eq!(
        ws.run_model(&server, &["-p", "xyzzy-original"], &[]).ok(),
        "fine\n"
    );
    let request = server.requests()[0].body_text();
    assert!(
        request.contains("rewritten prompt") && !request.contains("xyzzy-original"),
        "{request}"
    );
    let user = jsonl(&ws.only_session())
        .into_iter()
        .find(|e| e["type"] == "message.user")
        .unwrap();
    assert_eq!(user["data"]["content"][0]["text"], "rewritten prompt");
    std::fs::remove_file(ws.only_session()).unwrap();

    let server = FakeServer::start(vec![Reply::sse(chat_text("never"))]).unwrap();
    let blocked = ws.run_model(&server, &["-p", "the forbidden thing"], &[]);
    assert_eq!(blocked.code(), 1);
    assert!(
        blocked.stderr().contains(
            "the prompt was blocked by a UserPromptSubmit hook: prompt mentions the forbidden project"
        ),
        "{}",
        blocked.stderr()
    );
    assert!(server.requests().is_empty());
    let kinds = types(&jsonl(&ws.only_session()));
    assert!(!kinds.contains(&"message.user".to_owned()), "{kinds:?}");
    assert_eq!(hook_runs(&ws)[0]["outcome"], "blocked");
    std::fs::remove_file(ws.only_session()).unwrap();

    let failing = hook(&ws, "fail.sh", "echo 'oops' >&2; exit 3");
    ws.user_config(&format!(
        "[[hooks.UserPromptSubmit]]\ncommand = \"{failing}\"\n"
    ));
    let failed = ws.run_model(&server, &["-p", "hello"], &[]);
    assert_eq!(failed.code(), 1);
    assert!(
        failed.stderr().contains("UserPromptSubmit hook failed: `")
            && failed.stderr().contains("exited with code 3: oops"),
        "{}",
        failed.stderr()
    );
    assert!(server.requests().is_empty());
}

/// `TurnStart` and `TurnComplete` see the turn, the prompt and the final
/// text; `SessionStart` sees `new`, then `resume`. A failing `TurnComplete`
/// keeps the events and exits 1; a failing `TurnStart` fails before the
/// request.
#[test]
fn turn_and_session_hooks_see_their_payloads() {
    let ws = Workspace::new();
    let save = |name: &str| {
        hook(
            &ws,
            &format!("{name}.sh"),
            &format!(
                "cat >> {0}; echo >> {0}",
                out_file(&ws, &format!("{name}.jsonl")).display()
            ),
        )
    };
    let (start, turn_start, turn_complete) =
        (save("session"), save("turn_start"), save("turn_complete"));
    ws.user_config(&format!(
        "[[hooks.SessionStart]]\ncommand = \"{start}\"\n\n[[hooks.TurnStart]]\ncommand = \"{turn_start}\"\n\n[[hooks.TurnComplete]]\ncommand = \"{turn_complete}\"\n"
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("first answer")),
        Reply::sse(chat_text("second answer")),
    ])
    .unwrap();
    ws.run_model(&server, &["-p", "first"], &[]).ok();
    let id = ws
        .only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    ws.run_model(&server, &["resume", &id, "-p", "second"], &[])
        .ok();
    let read = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(out_file(&ws, &format!("{name}.jsonl")))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let sessions = read("session");
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0]["event"], "SessionStart");
    assert_eq!(sessions[0]["version"], 1);
    assert_eq!(sessions[0]["payload"]["reason"], "new");
    assert_eq!(sessions[1]["payload"]["reason"], "resume");
    assert_eq!(sessions[1]["payload"]["sessionId"], id.as_str());
    assert_eq!(
        sessions[1]["payload"]["sessionPath"],
        ws.only_session().to_string_lossy().as_ref()
    );
    let starts = read("turn_start");
    assert_eq!(starts[1]["payload"]["turn"], 2);
    assert_eq!(starts[1]["payload"]["prompt"], "second");
    let completes = read("turn_complete");
    assert_eq!(completes[0]["payload"]["finalText"], "first answer");
    assert_eq!(completes[1]["payload"]["turn"], 2);
    assert_eq!(completes[1]["payload"]["error"], Value::Null);

    let bad = hook(&ws, "bad.sh", "exit 1");
    ws.user_config(&format!("[[hooks.TurnComplete]]\ncommand = \"{bad}\"\n"));
    let server = FakeServer::start(vec![Reply::sse(chat_text("third answer"))]).unwrap();
    let out = ws.run_model(&server, &["resume", &id, "-p", "third"], &[]);
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr().contains("TurnComplete hook failed"),
        "{}",
        out.stderr()
    );
    let log = std::fs::read_to_string(ws.only_session()).unwrap();
    assert!(log.contains("third answer"), "the turn's events stay");

    ws.user_config(&format!("[[hooks.TurnStart]]\ncommand = \"{bad}\"\n"));
    let server = FakeServer::start(vec![Reply::sse(chat_text("never"))]).unwrap();
    let out = ws.run_model(&server, &["resume", &id, "-p", "fourth"], &[]);
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr().contains("TurnStart hook failed"),
        "{}",
        out.stderr()
    );
    assert!(server.requests().is_empty());

    ws.user_config(&format!("[[hooks.SessionStart]]\ncommand = \"{bad}\"\n"));
    let out = ws.run_model(&server, &["resume", &id, "-p", "fifth"], &[]);
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr().contains("SessionStart hook failed"),
        "{}",
        out.stderr()
    );
    assert!(server.requests().is_empty());
}

/// A `ContextBuild` hook replaces the messages of the request.
#[test]
fn context_build_rewrites_the_request_messages() {
    let ws = Workspace::new();
    let seen = out_file(&ws, "context.json");
    let rewrite = hook(
        &ws,
        "context.sh",
        &format!(
            "cat > {}\necho '{{\"messages\":[{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"only this\"}}]}}]}}'",
            seen.display()
        ),
    );
    ws.user_config(&format!(
        "[[hooks.ContextBuild]]\ncommand = \"{rewrite}\"\n"
    ));
    let server = FakeServer::start(vec![Reply::sse(chat_text("ok"))]).unwrap();
    ws.run_model(&server, &["-p", "the real prompt"], &[]).ok();
    let request = server.requests()[0].json();
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(
        support::without_context(messages.last().unwrap()["content"].as_str().unwrap()),
        "only this"
    );
    assert!(!server.requests()[0].body_text().contains("the real prompt"));
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(
        input["payload"]["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "the real prompt"}]}])
    );
    let user = jsonl(&ws.only_session())
        .into_iter()
        .find(|e| e["type"] == "message.user")
        .unwrap();
    assert_eq!(
        user["data"]["content"][0]["text"], "the real prompt",
        "the log keeps what the user said"
    );
    assert_eq!(hook_runs(&ws)[0]["outcome"], "rewrote");

    let broken = hook(&ws, "broken.sh", r#"echo '{"messages":"not a list"}'"#);
    ws.user_config(&format!("[[hooks.ContextBuild]]\ncommand = \"{broken}\"\n"));
    std::fs::remove_file(ws.only_session()).unwrap();
    let server = FakeServer::start(vec![Reply::sse(chat_text("never"))]).unwrap();
    let out = ws.run_model(&server, &["-p", "again"], &[]);
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr().contains("ContextBuild hook failed: `")
            && out.stderr().contains("`messages` as a string"),
        "{}",
        out.stderr()
    );
    assert!(server.requests().is_empty());
}

/// A long session to compact (as in the context tests): nothing kept raw
/// but the last message.
fn long_session(ws: &Workspace) -> String {
    ws.project_config("[context]\nkeep_recent_tokens = 0\n[session]\nkeep_messages = 1\n");
    let mut frames = chat_text(&"a long answer ".repeat(200));
    frames.retain(|f| !f.contains("\"prompt_tokens\""));
    let server = FakeServer::start(vec![Reply::sse(frames)]).unwrap();
    let prompt = "please explain the whole codebase ".repeat(100);
    ws.run_model(&server, &["-p", &prompt], &[]).ok();
    ws.only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// `PreCompact` supplying the summary makes no summarizer request; a
/// `PostCompact` hook rewrites it before it is appended; a `PreCompact`
/// cancel appends no summary and exits 0 saying so; a failing hook fails
/// the compaction (exit 1) with no summary appended.
#[test]
fn compaction_hooks_supply_rewrite_cancel_and_fail() {
    let ws = Workspace::new();
    let id = long_session(&ws);
    let summaries = |ws: &Workspace| -> Vec<Value> {
        jsonl(&ws.only_session())
            .into_iter()
            .filter(|e| e["type"] == "context.summary")
            .collect()
    };

    let cancel = hook(
        &ws,
        "cancel.sh",
        r#"echo '{"cancel":true,"reason":"compaction is done by the nightly job"}'"#,
    );
    ws.user_config(&format!("[[hooks.PreCompact]]\ncommand = \"{cancel}\"\n"));
    let server = FakeServer::start(vec![Reply::sse(chat_text("never asked"))]).unwrap();
    let before = std::fs::read_to_string(ws.only_session()).unwrap();
    let out = &ws
        .run_model(&server, &["compact", "--session", &id], &[])
        .ok();
    assert!(
        out.contains(
            "compaction cancelled by a PreCompact hook: compaction is done by the nightly job"
        ),
        "{out}"
    );
    let after = std::fs::read_to_string(ws.only_session()).unwrap();
    let added = after.strip_prefix(&before).unwrap();
    assert!(!added.contains("context.summary") && added.contains("\"blocked\""));
    assert!(server.requests().is_empty());

    let failing = hook(&ws, "failing.sh", "exit 1");
    ws.user_config(&format!("[[hooks.PostCompact]]\ncommand = \"{failing}\"\n"));
    let server =
        FakeServer::start(vec![Reply::sse(chat_text("## Goal\nFrom the model."))]).unwrap();
    let out = ws.run_model(&server, &["compact", "--session", &id], &[]);
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr().contains("exited with code 1")
            && out.stderr().contains("no summary was appended"),
        "{}",
        out.stderr()
    );
    assert!(summaries(&ws).is_empty());

    let supply = hook(
        &ws,
        "supply.sh",
        &format!(
            "cat > {}\nprintf '%s\\n' '{{\"summary\":\"## Goal\\nFrom the hook.\"}}'",
            out_file(&ws, "pre.json").display()
        ),
    );
    let post = hook(
        &ws,
        "post.sh",
        r###"printf '%s\n' '{"summary":"## Goal\nRewritten by PostCompact."}'"###,
    );
    ws.user_config(&format!(
        "[[hooks.PreCompact]]\nmatcher = \"manual\"\ncommand = \"{supply}\"\n\n[[hooks.PostCompact]]\ncommand = \"{post}\"\n"
    ));
    let server = FakeServer::start(vec![Reply::sse(chat_text("never asked"))]).unwrap();
    let out = ws.run_model(&server, &["compact", "--session", &id], &[]);
    assert!(out.ok().starts_with(&format!("compacted session {id}")));
    assert!(server.requests().is_empty(), "no summarizer request");
    let pre: Value =
        serde_json::from_str(&std::fs::read_to_string(out_file(&ws, "pre.json")).unwrap()).unwrap();
    assert_eq!(pre["payload"]["trigger"], "manual");
    assert!(pre["payload"]["tokensBefore"].as_u64().unwrap() > 0);
    let summaries = summaries(&ws);
    assert_eq!(summaries.len(), 1);
    assert!(
        summaries[0]["data"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("## Goal\nRewritten by PostCompact."),
        "{}",
        summaries[0]["data"]["summary"]
    );
    let outcomes: Vec<Value> = hook_runs(&ws)
        .iter()
        .map(|r| r["outcome"].clone())
        .collect();
    assert_eq!(
        outcomes,
        [
            json!("blocked"),
            json!("failed"),
            json!("rewrote"),
            json!("rewrote")
        ]
    );
}

/// Project hooks do not run until trusted: a headless run refuses with
/// what to do; after `etch trust --yes` they run; a changed definition is
/// refused again.
#[test]
fn the_trust_gate_guards_runs() {
    let ws = Workspace::new();
    let mark = hook(&ws, "mark.sh", "echo ran >> \"$HOME/marks\"");
    ws.project_config(&format!("[[hooks.TurnStart]]\ncommand = \"{mark}\"\n"));
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("one")),
        Reply::sse(chat_text("two")),
    ])
    .unwrap();
    let refused = ws.run_model(&server, &["-p", "hi"], &[]);
    assert_eq!(refused.code(), 1);
    assert!(
        refused.stderr().contains("are not trusted yet")
            && refused.stderr().contains("etch trust --yes"),
        "{}",
        refused.stderr()
    );
    assert!(server.requests().is_empty());
    assert!(ws.session_files().is_empty(), "nothing was started");
    ws.run(&["trust", "--yes"]).ok();
    assert_eq!(ws.run_model(&server, &["-p", "hi"], &[]).ok(), "one\n");
    assert_eq!(
        std::fs::read_to_string(out_file(&ws, "marks")).unwrap(),
        "ran\n"
    );
    ws.project_config(&format!(
        "[[hooks.TurnStart]]\ncommand = \"{mark} --again\"\n"
    ));
    let changed = ws.run_model(&server, &["-p", "hi"], &[]);
    assert_eq!(changed.code(), 1);
    assert!(
        changed.stderr().contains("changed since you trusted them"),
        "{}",
        changed.stderr()
    );
    assert_eq!(server.requests().len(), 1);
}

/// A Claude Code settings file with hook scripts written the way Claude
/// Code documents them, imported with `etch hooks import --write`,
/// trusted, and run: snake_case input with Claude Code's tool and
/// argument names, exit 2 and `permissionDecision: deny` as blocks,
/// `updatedInput` mapped back to etch's arguments, context added from
/// plain stdout and `additionalContext`, `CLAUDE_PROJECT_DIR` set, and an
/// unsupported output field failing the call with its name.
#[test]
fn claude_code_hooks_run_unchanged() {
    let ws = Workspace::new();
    let scripts = ws.path().join(".claude/hooks");
    std::fs::create_dir_all(&scripts).unwrap();
    let python = |name: &str, body: &str| {
        let path = scripts.join(name);
        std::fs::write(&path, format!("#!/usr/bin/env python3\n{body}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    python(
        "bash_guard.py",
        r#"import json, re, sys
input_data = json.load(sys.stdin)
tool_name = input_data.get("tool_name", "")
command = input_data.get("tool_input", {}).get("command", "")
if tool_name != "Bash" or not command:
    sys.exit(0)
if re.search(r"\brm\s+-rf\b", command):
    print("Use trash instead of rm -rf", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
"#,
    );
    python(
        "protect.py",
        r#"import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["HOME"], "claude-input.jsonl"), "a") as f:
    f.write(json.dumps(data) + "\n")
path = data["tool_input"].get("file_path", "")
if path.endswith(".env"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "Secrets stay secret"}}))
elif path == "old.txt":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow", "updatedInput": {"file_path": "new.txt"}}}))
"#,
    );
    python(
        "context.py",
        r#"import json, sys
json.load(sys.stdin)
print("Current branch: feature-x")
"#,
    );
    python(
        "start.py",
        r#"import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["HOME"], "start.json"), "w") as f:
    json.dump({"input": data, "dir": os.environ.get("CLAUDE_PROJECT_DIR")}, f)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
    "additionalContext": "This project indents with tabs."}}))
"#,
    );
    python(
        "after_read.py",
        r#"import json, sys
data = json.load(sys.stdin)
if data["tool_response"]["output"]:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
        "additionalContext": "Remember: this file is generated."}}))
"#,
    );
    python(
        "unsupported.py",
        r#"import json, sys
json.load(sys.stdin)
print(json.dumps({"continue": False, "stopReason": "no"}))
"#,
    );
    let settings = json!({
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/bash_guard.py"}]},
                {"matcher": "Read|Edit|Write", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/protect.py", "timeout": 10}]},
                {"matcher": "LS", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/unsupported.py"}]}
            ],
            "PostToolUse": [
                {"matcher": "Read", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/after_read.py"}]}
            ],
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/context.py"}]}
            ],
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/start.py"}]}
            ],
            "Notification": [
                {"hooks": [{"type": "command", "command": "notify-send etch"}]}
            ]
        }
    });
    std::fs::write(
        ws.path().join(".claude/settings.json"),
        serde_json::to_string_pretty(&settings).unwrap(),
    )
    .unwrap();
    let printed = ws.run(&["hooks", "import"]);
    let toml = printed.ok();
    assert!(
        toml.contains("[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"\\\"$CLAUDE_PROJECT_DIR\\\"/.claude/hooks/bash_guard.py\"\ntimeout_seconds = 60\nprotocol = \"claude\"\n"),
        "{toml}"
    );
    assert!(
        printed.stderr().contains("skipped Notification hooks"),
        "{}",
        printed.stderr()
    );
    assert!(!ws.path().join(".etch/config.toml").exists());
    let wrote = ws.run(&["hooks", "import", "--write"]).ok();
    assert!(wrote.contains("wrote 6 hooks"), "{wrote}");
    assert!(
        ws.run(&["hooks", "import", "--write"])
            .ok()
            .contains("nothing to write")
    );
    ws.run(&["trust", "--yes"]).ok();

    std::fs::write(ws.path().join("new.txt"), "fresh content\n").unwrap();
    std::fs::write(ws.path().join(".env"), "KEY=1\n").unwrap();
    std::fs::create_dir_all(ws.path().join("build")).unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c_rm", "bash", r#"{"command":"rm -rf build"}"#),
            ("c_env", "read", r#"{"path":".env"}"#),
            ("c_old", "read", r#"{"path":"old.txt"}"#),
            ("c_ls", "ls", "{}"),
        ])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    assert_eq!(
        ws.run_model(&server, &["-p", "clean up"], &[]).ok(),
        "done\n"
    );
    assert_eq!(
        result_text(&ws, "c_rm"),
        "tool error: Use trash instead of rm -rf"
    );
    assert!(ws.path().join("build").exists());
    assert_eq!(result_text(&ws, "c_env"), "tool error: Secrets stay secret");
    assert_eq!(
        result_text(&ws, "c_old"),
        "     1\tfresh content\n\nRemember: this file is generated."
    );
    let ls = result_text(&ws, "c_ls");
    assert!(
        ls.starts_with("tool error: PreToolUse hook failed: ") && ls.contains("`continue`"),
        "{ls}"
    );

    let inputs: Vec<Value> = std::fs::read_to_string(out_file(&ws, "claude-input.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(inputs[0]["hook_event_name"], "PreToolUse");
    assert_eq!(inputs[0]["tool_name"], "Read");
    assert_eq!(inputs[0]["tool_input"], json!({"file_path": ".env"}));
    assert_eq!(inputs[0]["tool_use_id"], "c_env");
    assert!(inputs[0]["session_id"].is_string() && inputs[0]["transcript_path"].is_string());
    let start: Value =
        serde_json::from_str(&std::fs::read_to_string(out_file(&ws, "start.json")).unwrap())
            .unwrap();
    assert_eq!(start["input"]["source"], "startup");
    assert_eq!(start["dir"], ws.path().to_string_lossy().as_ref());

    let first = server.requests()[0].json();
    let users: Vec<&Value> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(
        support::without_context(users[0]["content"].as_str().unwrap()),
        "This project indents with tabs."
    );
    assert_eq!(users[1]["content"], "clean up\n\nCurrent branch: feature-x");
}
