//! Credentials never reach the model through a tool (E-TOOL-22, G18):
//! keys a login file exports again are gone before a `bash` command runs,
//! each through the real binary against the fake model server.

#![allow(clippy::unwrap_used)]

mod support;

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::json;
use support::Workspace;

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
