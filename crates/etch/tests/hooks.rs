//! `etch hooks list` and `etch hooks test` through the real binary, with
//! real hook scripts (issue 14, first part): the configured hooks in the
//! order they run with their source, a dry run showing what each hook
//! answered, and the ways a hook can fail.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt;

use support::Workspace;

/// Writes an executable script into the project and returns its path.
fn script(ws: &Workspace, name: &str, body: &str) -> String {
    let path = ws.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn list_says_when_there_are_none() {
    let ws = Workspace::new();
    let out = ws.run(&["hooks", "list"]).ok();
    assert!(out.contains("no hooks configured"), "{out}");
}

/// User hooks first, then project hooks, each with its source.
#[test]
fn list_shows_hooks_in_run_order_with_their_source() {
    let ws = Workspace::new();
    ws.project_config("[[hooks.PreToolUse]]\nmatcher = \"write|edit\"\ncommand = \"./guard.sh\"\n");
    ws.user_config("[[hooks.PreToolUse]]\ncommand = \"audit\"\ntimeout_seconds = 5\n\n[[hooks.TurnComplete]]\ncommand = \"notify\"\ndisabled = true\n");
    let out = ws.run(&["hooks", "list"]).ok();
    let audit = out.find("audit").unwrap();
    let guard = out.find("./guard.sh").unwrap();
    assert!(audit < guard, "user hooks run first: {out}");
    assert!(out.contains("write|edit"), "{out}");
    assert!(out.contains("user · timeout 5 s"), "{out}");
    assert!(
        out.contains("project, not trusted: review with etch trust · timeout 30 s"),
        "{out}"
    );
    assert!(out.contains("(disabled)"), "{out}");
}

/// A dry run shows each matching hook's answer: a rewrite, a block with
/// the reason from stderr and exit 2, and a failure (exit 1).
#[test]
fn test_runs_the_matching_hooks_and_shows_their_answers() {
    let ws = Workspace::new();
    let seen = ws.path().join("seen.json");
    let rewrite = script(
        &ws,
        "rewrite.sh",
        &format!(
            "cat > {}\necho '{{\"arguments\":\"{{\\\"command\\\":\\\"ls -la\\\"}}\"}}'",
            seen.display()
        ),
    );
    let deny = script(&ws, "deny.sh", "echo 'no writes to .env' >&2; exit 2");
    ws.project_config(&format!(
        "[[hooks.PreToolUse]]\ncommand = \"{rewrite}\"\n\n[[hooks.PreToolUse]]\nmatcher = \"write\"\ncommand = \"{deny}\"\n"
    ));
    ws.run(&["trust", "--yes"]).ok();
    let bash = ws.run(&["hooks", "test", "PreToolUse"]);
    let out = bash.ok();
    assert!(
        out.contains("rewrite.sh") && out.contains("ok: {\"arguments\""),
        "{out}"
    );
    assert!(
        !out.contains("deny.sh"),
        "the write matcher does not match bash: {out}"
    );
    let envelope: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(envelope["event"], "PreToolUse");
    assert_eq!(envelope["payload"]["tool"]["name"], "bash");
    assert!(envelope["payload"]["tool"]["arguments"].is_string());
    let write = ws.run(&["hooks", "test", "PreToolUse", "--subject", "write"]);
    assert!(
        write.ok().contains("blocked: no writes to .env"),
        "{}",
        write.stdout()
    );
}

#[test]
fn failing_hooks_and_bad_events() {
    let ws = Workspace::new();
    let broken = script(&ws, "broken.sh", "echo 'not json'");
    ws.project_config(&format!("[[hooks.PostToolUse]]\ncommand = \"{broken}\"\n"));
    ws.run(&["trust", "--yes"]).ok();
    let run = ws.run(&["hooks", "test", "PostToolUse"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stdout()
            .contains("failed: printed output that is not JSON"),
        "{}",
        run.stdout()
    );
    let bad = ws.run(&["hooks", "test", "preTool"]);
    assert_eq!(bad.code(), 2);
    assert!(
        bad.stderr().contains("is not a hook event"),
        "{}",
        bad.stderr()
    );
    let none = ws.run(&["hooks", "test", "TurnStart"]);
    assert!(none.ok().contains("no TurnStart hook matches"));
}

/// Project hooks do not run until trusted; a changed definition is
/// refused again; the user's own hooks need no trust.
#[test]
fn project_hooks_need_trust_for_their_exact_definition() {
    let ws = Workspace::new();
    let marker = ws.path().join("ran");
    let hook = script(&ws, "mark.sh", &format!("touch {}", marker.display()));
    ws.project_config(&format!("[[hooks.TurnStart]]\ncommand = \"{hook}\"\n"));
    let untrusted = ws.run(&["hooks", "test", "TurnStart"]);
    assert_eq!(untrusted.code(), 1);
    assert!(
        untrusted.stdout().contains("not run, not trusted"),
        "{}",
        untrusted.stdout()
    );
    assert!(!marker.exists());
    let listed = ws.run(&["trust"]).ok();
    assert!(
        listed.contains("hook TurnStart [*]") && listed.contains("etch trust --yes"),
        "{listed}"
    );
    assert!(
        ws.run(&["trust", "--yes"])
            .ok()
            .contains("trusted: these run from now on")
    );
    ws.run(&["hooks", "test", "TurnStart"]).ok();
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    ws.project_config(&format!(
        "[[hooks.TurnStart]]\ncommand = \"{hook} --again\"\n"
    ));
    let changed = ws.run(&["hooks", "test", "TurnStart"]);
    assert!(
        changed.stdout().contains("changed since trusted"),
        "{}",
        changed.stdout()
    );
    assert!(!marker.exists());
    // The user's own hooks run without trust.
    let user = tempfile::tempdir().unwrap();
    let own = ws.home.path().join("own.sh");
    std::fs::write(
        &own,
        format!("#!/bin/sh\ntouch {}\n", user.path().join("own").display()),
    )
    .unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).unwrap();
    ws.user_config(&format!(
        "[[hooks.TurnComplete]]\ncommand = \"{}\"\n",
        own.display()
    ));
    ws.run(&["hooks", "test", "TurnComplete"]).ok();
    assert!(user.path().join("own").exists());
}

#[test]
fn trust_with_nothing_to_trust() {
    let ws = Workspace::new();
    assert!(ws.run(&["trust"]).ok().contains("nothing to trust"));
}

/// A Claude Code hook whose matcher uses etch's tool names matches
/// nothing: `config check` fails naming what was meant, and `hooks list`
/// warns under the entry.
#[test]
fn a_claude_hook_matching_etch_names_is_flagged() {
    let ws = Workspace::new();
    ws.user_config(
        "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"true\"\nprotocol = \"claude\"\n",
    );
    let check = ws.run(&["config", "check"]);
    assert_eq!(check.code(), 1);
    assert!(
        check.stderr().contains("[[hooks.PreToolUse]] matcher \"bash\" matches no built-in tool of protocol = \"claude\"")
            && check.stderr().contains("did you mean \"Bash\"?"),
        "{}",
        check.stderr()
    );
    let listed = ws.run(&["hooks", "list"]).ok();
    assert!(listed.contains("warning: matcher \"bash\""), "{listed}");
    ws.user_config(
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"true\"\nprotocol = \"claude\"\n",
    );
    assert!(ws.run(&["config", "check"]).ok().contains("config ok"));
}
