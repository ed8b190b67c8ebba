//! The Claude Code mapping both ways, on the shapes Claude Code
//! documents.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::process::Exit;

/// A finished hook with `code`, `stdout` and `stderr`.
fn done(code: i32, stdout: &str, stderr: &str) -> Finished {
    Finished {
        exit: Exit::Code(code),
        stdout: stdout.as_bytes().to_vec(),
        stderr: stderr.to_owned(),
        elapsed: Duration::ZERO,
    }
}

/// An etch envelope for a tool event.
fn tool_envelope(event: &str, name: &str, arguments: &Value) -> Value {
    json!({
        "version": 1,
        "event": event,
        "cwd": "/work/p",
        "payload": {
            "sessionId": "S1",
            "sessionPath": "/home/u/.etch/sessions/S1.jsonl",
            "tool": {"id": "call_1", "name": name, "arguments": arguments.to_string()},
            "output": {"text": "raw out", "isError": false},
        }
    })
}

#[test]
fn tool_input_uses_claude_names() {
    let input = input(&tool_envelope(
        "PreToolUse",
        "edit",
        &json!({"path": "src/a.rs", "edits": [{"oldText": "a", "newText": "b"}]}),
    ));
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["session_id"], "S1");
    assert_eq!(input["transcript_path"], "/home/u/.etch/sessions/S1.jsonl");
    assert_eq!(input["cwd"], "/work/p");
    assert_eq!(input["tool_name"], "Edit");
    assert_eq!(input["tool_use_id"], "call_1");
    assert_eq!(
        input["tool_input"],
        json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"})
    );
    let bash = super::input(&tool_envelope(
        "PostToolUse",
        "bash",
        &json!({"command": "ls", "timeout": 5}),
    ));
    assert_eq!(bash["tool_name"], "Bash");
    assert_eq!(
        bash["tool_input"],
        json!({"command": "ls", "timeout": 5000})
    );
    assert_eq!(bash["tool_response"]["stdout"], "raw out");
}

#[test]
fn arguments_map_back() {
    let claude = json!({"file_path": "a", "old_string": "x", "new_string": "y"});
    assert_eq!(
        arguments_from_claude("edit", claude.as_object().unwrap()),
        json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})
    );
    let grep = json!({"pattern": "p", "-i": true, "-C": 2, "head_limit": 9});
    assert_eq!(
        arguments_from_claude("grep", grep.as_object().unwrap()),
        json!({"pattern": "p", "ignoreCase": true, "context": 2, "limit": 9})
    );
    let bash = json!({"command": "ls", "timeout": 1500, "description": "list"});
    assert_eq!(
        arguments_from_claude("bash", bash.as_object().unwrap()),
        json!({"command": "ls", "timeout": 2})
    );
    let args = json!({"path": "a", "edits": [{"oldText": "1", "newText": "2"}, {"oldText": "3", "newText": "4"}]});
    let there = arguments_to_claude("edit", &args);
    assert_eq!(
        arguments_from_claude("edit", there.as_object().unwrap()),
        args
    );
}

#[test]
fn matchers_see_claude_subjects() {
    assert_eq!(subject(HookEvent::PreToolUse, "bash"), "Bash");
    assert_eq!(subject(HookEvent::PostToolUse, "find"), "Glob");
    assert_eq!(subject(HookEvent::PreToolUse, "plugin_echo"), "plugin_echo");
    assert_eq!(subject(HookEvent::SessionStart, "new"), "startup");
    assert_eq!(subject(HookEvent::PreCompact, "overflow"), "auto");
}

#[test]
fn permission_decisions_and_updated_input() {
    let envelope = tool_envelope("PreToolUse", "read", &json!({"path": "a.txt", "limit": 5}));
    let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"secrets"}}"#;
    assert_eq!(
        interpret(HookEvent::PreToolUse, &done(0, deny, ""), 30, &envelope),
        Outcome::Blocked(Some("secrets".into()))
    );
    let update = r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"file_path":"b.txt"}}}"#;
    let Outcome::Ok(fields) = interpret(HookEvent::PreToolUse, &done(0, update, ""), 30, &envelope)
    else {
        panic!("expected a rewrite");
    };
    let arguments: Value = serde_json::from_str(fields["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"path": "b.txt", "limit": 5}));
    let legacy = r#"{"decision":"block","reason":"no"}"#;
    assert_eq!(
        interpret(HookEvent::PreToolUse, &done(0, legacy, ""), 30, &envelope),
        Outcome::Blocked(Some("no".into()))
    );
    assert_eq!(
        interpret(
            HookEvent::PreToolUse,
            &done(2, "", "stop it\n"),
            30,
            &envelope
        ),
        Outcome::Blocked(Some("stop it".into()))
    );
    let Outcome::Blocked(Some(ask)) = interpret(
        HookEvent::PreToolUse,
        &done(
            0,
            r#"{"hookSpecificOutput":{"permissionDecision":"ask"}}"#,
            "",
        ),
        30,
        &envelope,
    ) else {
        panic!("ask blocks");
    };
    assert!(ask.contains("etch does not ask"), "{ask}");
}

#[test]
fn context_is_added_and_unknown_fields_are_errors() {
    let envelope =
        json!({"event": "UserPromptSubmit", "cwd": "/p", "payload": {"prompt": "fix it"}});
    let Outcome::Ok(fields) = interpret(
        HookEvent::UserPromptSubmit,
        &done(0, "Branch: main\n", ""),
        30,
        &envelope,
    ) else {
        panic!("plain stdout is context");
    };
    assert_eq!(fields["prompt"], "fix it\n\nBranch: main");
    let Outcome::Failed(why) = interpret(
        HookEvent::UserPromptSubmit,
        &done(0, r#"{"continue":false}"#, ""),
        30,
        &envelope,
    ) else {
        panic!("unknown fields fail");
    };
    assert!(why.contains("`continue`"), "{why}");
    let Outcome::Failed(why) = interpret(
        HookEvent::UserPromptSubmit,
        &done(0, r#"{"hookSpecificOutput":{"updatedInput":{}}}"#, ""),
        30,
        &envelope,
    ) else {
        panic!("fields of another event fail");
    };
    assert!(why.contains("hookSpecificOutput.updatedInput"), "{why}");
}

#[test]
fn other_failures_do_not_stop_the_action() {
    let envelope = tool_envelope("PostToolUse", "bash", &json!({"command": "ls"}));
    let Outcome::NonBlocking(why) = interpret(
        HookEvent::PostToolUse,
        &done(1, "", "linter crashed\n"),
        30,
        &envelope,
    ) else {
        panic!("a non-zero exit is reported, not fatal");
    };
    assert!(why.ends_with("linter crashed"), "{why}");
    let Outcome::Ok(fields) = interpret(
        HookEvent::PostToolUse,
        &done(0, r#"{"decision":"block","reason":"tests fail now"}"#, ""),
        30,
        &envelope,
    ) else {
        panic!("PostToolUse block feeds the reason back");
    };
    assert_eq!(fields["output"], "raw out\n\ntests fail now");
}

/// Several replacements, or edits sent as JSON text, reach a Claude Code
/// hook as `MultiEdit` with every `new_string`, and a matcher for either
/// `Edit` or `MultiEdit` sees them.
#[test]
fn multi_edits_are_shown_whole() {
    let edits = json!([{"oldText": "a", "newText": "SECRET"}, {"oldText": "c", "newText": "d"}]);
    for arguments in [
        json!({"path": "f", "edits": edits}),
        json!({"path": "f", "edits": edits.to_string()}),
    ] {
        let input = input(&tool_envelope("PreToolUse", "edit", &arguments));
        assert_eq!(input["tool_name"], "MultiEdit");
        assert_eq!(input["tool_input"]["edits"][0]["new_string"], "SECRET");
    }
    assert_eq!(
        subjects(HookEvent::PreToolUse, "edit"),
        ["Edit", "MultiEdit"]
    );
}

/// Exit 2 from a PostToolUse hook shows its stderr to the model beside
/// the result, as Claude Code does.
#[test]
fn post_tool_exit_2_adds_stderr() {
    let envelope = tool_envelope("PostToolUse", "bash", &json!({"command": "ls"}));
    let Outcome::Ok(fields) = interpret(
        HookEvent::PostToolUse,
        &done(2, "", "lint: 3 warnings\n"),
        30,
        &envelope,
    ) else {
        panic!("stderr goes to the model");
    };
    assert_eq!(fields["output"], "raw out\n\nlint: 3 warnings");
}

/// A matcher written for the other protocol's names is named, with what
/// was likely meant; a right one, or one for a plugin's tool, is not.
#[test]
fn matchers_for_the_other_protocol_are_named() {
    let warn = |protocol, matcher| matcher_warning(HookEvent::PreToolUse, protocol, matcher);
    let wrong = warn("claude", "bash|write").unwrap();
    assert!(wrong.contains("did you mean \"Bash|Write\"?"), "{wrong}");
    assert!(
        wrong.contains("Bash, Read, Write, Edit, Grep, Glob, LS"),
        "{wrong}"
    );
    assert!(
        warn("etch", "Bash")
            .unwrap()
            .contains("did you mean \"bash\"?")
    );
    assert!(warn("claude", "Bash|Edit").is_none());
    assert!(warn("claude", "MultiEdit").is_none());
    assert!(warn("etch", "bash").is_none());
    assert!(warn("claude", "mcp__git__.*").is_none());
    assert!(warn("claude", "").is_none());
    assert!(matcher_warning(HookEvent::SessionStart, "claude", "bash").is_none());
}
