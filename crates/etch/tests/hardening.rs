//! Hardening, through the real binary: a model server that never answers
//! or sends an oversized frame cannot hang etch or blow up its memory and
//! session log; session files are private to their owner; `etch acp`'s
//! stderr carries one `etch:` prefix per line.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use etch_test_support::{FakeServer, Reply};
use support::{Workspace, jsonl};

/// How long a silent scripted server stays silent: far past any timeout
/// these tests set, so only etch's own deadline ends a wait.
const SILENCE: Duration = Duration::from_mins(2);

/// Every line of the session file at `path` is a JSON object (the log
/// stays loadable), and the events it holds.
fn valid_log(path: &std::path::Path) -> Vec<serde_json::Value> {
    let events = jsonl(path);
    assert!(
        events.iter().all(serde_json::Value::is_object),
        "{events:#?}"
    );
    events
}

/// A server that accepts every request and never sends response headers:
/// `etch -p` fails after the idle timeout per attempt (the first try and
/// three retries), exits 1 saying what stalled, where and which key to
/// raise, and leaves a valid session log.
#[test]
fn a_server_that_never_answers_fails_within_the_idle_timeout() {
    let ws = Workspace::new();
    let server = FakeServer::start((0..4).map(|_| Reply::Hang(SILENCE)).collect()).unwrap();
    let start = Instant::now();
    let out = ws.run_model(&server, &["-p", "hi"], &[("ETCH_IDLE_TIMEOUT_SECS", "1")]);
    let took = start.elapsed();
    assert_eq!(out.code(), 1, "{}", out.stderr());
    let stderr = out.stderr();
    assert!(
        stderr.contains(&format!(
            "{}/v1/chat/completions sent no response headers within 1 second",
            server.url()
        )) && stderr.contains("raise [provider] idle_timeout_secs"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 4);
    assert!(took < Duration::from_secs(30), "{took:?}");
    let events = valid_log(&ws.only_session());
    let assistant = events
        .iter()
        .rfind(|e| e["type"] == "message.assistant")
        .unwrap_or_else(|| panic!("no message.assistant in {events:#?}"));
    assert_eq!(assistant["data"]["stopReason"], "error", "{assistant}");
}

/// A `data:` line of 4 KB with `[provider] max_frame_bytes = 1024` in the
/// project's config: `etch -p` exits 1 naming the cap and the key, the
/// text before the frame is kept, and the session log stays valid with
/// no line anywhere near the frame's size.
#[test]
fn an_oversized_frame_fails_the_pass_and_keeps_the_log_small() {
    let ws = Workspace::new();
    ws.project_config("[provider]\nmax_frame_bytes = 1024\n");
    let mut frames = etch_test_support::chat_text("kept part");
    frames.truncate(2);
    frames.push(format!("data: {{\"pad\":\"{}\"}}\n\n", "x".repeat(4096)));
    let server = FakeServer::start(vec![Reply::sse(frames)]).unwrap();
    let out = ws.run_model(&server, &["-p", "hi"], &[]);
    assert_eq!(out.code(), 1, "{}", out.stderr());
    let stderr = out.stderr();
    assert!(
        stderr.contains("sent a stream frame of at least")
            && stderr.contains("past [provider] max_frame_bytes = 1024")
            && stderr.contains("Raise max_frame_bytes"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1, "not retried");
    let path = ws.only_session();
    let events = valid_log(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 4096, "a session line of {longest} bytes");
    assert!(
        !text.contains(&"x".repeat(1024)),
        "the frame reached the log"
    );
    let assistant = events
        .iter()
        .rfind(|e| e["type"] == "message.assistant")
        .unwrap_or_else(|| panic!("no message.assistant in {events:#?}"));
    assert_eq!(assistant["data"]["stopReason"], "error", "{assistant}");
    assert!(assistant.to_string().contains("kept"), "{assistant}");
}

/// The mode bits of `path`.
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// `etch -p` creates `.etch/sessions` owner-only (0700) and the session
/// file and index in it 0600, whatever the umask would allow.
#[test]
fn sessions_are_created_private() {
    let ws = Workspace::new();
    ws.run(&["--provider", "echo", "-p", "a secret prompt"])
        .ok();
    assert_eq!(mode(&ws.sessions_dir()), 0o700);
    assert_eq!(mode(&ws.only_session()), 0o600);
    assert_eq!(mode(&ws.sessions_dir().join("index.jsonl")), 0o600);
}

/// `etch acp` prints the provider header and configuration warnings on
/// stderr with one `etch:` prefix each, never `etch: warning: etch: …`.
#[test]
fn acp_stderr_lines_have_one_prefix() {
    let ws = Workspace::new();
    ws.project_config("[provider]\nno_such_key = 1\n");
    let server = FakeServer::start(Vec::new()).unwrap();
    let args = support::model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut acp = support::rpc::RpcClient::start_command(&ws, "acp", &args, &[]);
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    acp.send(&init);
    acp.until(|v| v["id"] == 1);
    acp.send(
        &serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": ws.path(), "mcpServers": []}}),
    );
    let created = acp.until(|v| v["id"] == 2);
    assert!(created["result"]["sessionId"].is_string(), "{created}");
    let (status, stderr, _) = acp.finish();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("etch: openai chat · m1 · ")),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("etch: warning: ") && l.contains("no_such_key")),
        "{stderr}"
    );
    for line in stderr.lines() {
        assert!(
            line.matches("etch: ").count() <= 1,
            "doubled prefix: {line}"
        );
    }
}
