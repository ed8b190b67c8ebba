//! Credentials never reach the model through a tool (E-TOOL-22, G18):
//! the built-in tools refuse etch's credential store, what `bash` prints
//! of it is redacted before it is logged or sent, and keys a login file
//! exports again are gone before a `bash` command runs, each through the
//! real binary against the fake model server.

#![allow(clippy::unwrap_used)]

mod support;

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::json;
use support::{Workspace, jsonl};

/// A bash call's arguments.
fn bash(command: &str) -> String {
    json!({ "command": command }).to_string()
}

/// G18: `bash -lc` runs the user's login files, and a key they export is
/// unset again before the model's command runs (bash reads
/// `~/.bash_profile` when there is one, which here sources `~/.profile`
/// as many do). The command keeps its own line numbers in bash's
/// messages.
#[test]
fn keys_a_login_file_exports_never_reach_commands() {
    let ws = Workspace::new();
    let home = ws.home.path();
    std::fs::write(
        home.join(".profile"),
        "export OPENAI_API_KEY=sk-from-profile-1234\n",
    )
    .unwrap();
    std::fs::write(
        home.join(".bash_profile"),
        "export ANTHROPIC_API_KEY=sk-ant-from-bash-profile\n. \"$HOME/.profile\"\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            (
                "c1",
                "bash",
                &bash("echo \"k=$OPENAI_API_KEY a=$ANTHROPIC_API_KEY\""),
            ),
            ("c2", "bash", &bash("echo one\nif then fi")),
        ])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    assert_eq!(ws.run_model(&server, &["-p", "go"], &[]).ok(), "done\n");
    assert_eq!(ws.result_text("c1"), "k= a=\n");
    let syntax = ws.result_text("c2");
    assert!(syntax.starts_with("one\n--- stderr ---\n"), "{syntax}");
    assert!(syntax.contains("line 2: syntax error"), "{syntax}");
    assert!(!syntax.contains("unset"), "{syntax}");
}

/// The tokens of the stored login the test writes.
const TOKENS: [&str; 3] = [
    "at-stored-access-0123456789",
    "rt-stored-refresh-0123456789",
    "it-stored-id-0123456789",
];

/// E-TOOL-22, E-AUTH-10: with a ChatGPT login stored in
/// `~/.etch/auth/openai.json`, the model reads it, greps HOME for
/// `access_token` and `cat`s it with bash. `read` and `grep` refuse or pass the
/// store over, saying why; what bash printed is redacted; neither the
/// session log nor the next request holds any of the tokens. The run
/// itself uses an API key, not the login. The sandbox is off here: it
/// would refuse the `cat` itself (tests/sandbox.rs), and the redaction
/// must hold where there is no sandbox.
#[test]
fn the_stored_login_never_reaches_the_log_or_the_model() {
    let ws = Workspace::new();
    ws.user_config("[sandbox]\nmode = \"off\"\n");
    let store = ws.home.path().join(".etch/auth");
    std::fs::create_dir_all(&store).unwrap();
    let login = store.join("openai.json");
    let file = json!({
        "type": "openai-codex-oauth",
        "access_token": TOKENS[0],
        "refresh_token": TOKENS[1],
        "id_token": TOKENS[2],
        "expires_at": "2099-01-01T00:00:00Z",
        "account_id": "acct-test",
    });
    std::fs::write(&login, file.to_string()).unwrap();
    let home = ws.home.path().to_str().unwrap().to_owned();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            (
                "r1",
                "read",
                &json!({"path": "~/.etch/auth/openai.json"}).to_string(),
            ),
            (
                "r2",
                "read",
                &json!({"path": login.to_str().unwrap()}).to_string(),
            ),
            (
                "g1",
                "grep",
                &json!({"pattern": "access_token", "path": home}).to_string(),
            ),
            ("b1", "bash", &bash("cat ~/.etch/auth/openai.json")),
        ])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    assert_eq!(ws.run_model(&server, &["-p", "go"], &[]).ok(), "done\n");
    let why = "etch's own credential store; credentials never reach the model";
    for id in ["r1", "r2"] {
        let text = ws.result_text(id);
        assert!(text.starts_with("tool error: refusing to read "), "{text}");
        assert!(text.ends_with(why), "{text}");
    }
    let grep = ws.result_text("g1");
    assert!(grep.starts_with("No matches found\n\n"), "{grep}");
    assert!(
        grep.contains(&format!("[Skipped {}: {why}]", store.display())),
        "{grep}"
    );
    let cat = ws.result_text("b1");
    assert!(
        cat.contains("\"access_token\":\"[redacted: etch credential]\""),
        "{cat}"
    );
    assert!(cat.contains("acct-test"), "{cat}");

    let log = std::fs::read_to_string(ws.only_session()).unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let next = requests[1].body_text();
    assert!(next.contains("[redacted: etch credential]"), "{next}");
    for token in TOKENS {
        assert!(!log.contains(token), "{token} in the session log");
        assert!(!next.contains(token), "{token} in the request");
    }
    assert_eq!(
        jsonl(&ws.only_session())
            .iter()
            .filter(|e| e["type"] == "message.tool")
            .count(),
        4
    );
}
