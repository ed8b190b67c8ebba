//! Plugins through the real binary (E-PLUG, issue 15): a Python test
//! plugin that serves tools or misbehaves in each way the issue names,
//! the example plugin built from this workspace, and the fake model
//! server. Assertions are on stdout, stderr, exit codes, the requests
//! the model got and the session log.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::Value;
use support::{Workspace, jsonl};

/// The test plugin script.
const PLUGIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/plugin.py");

/// A `[[plugins]]` table for the test plugin in `mode`, named `name`.
fn entry(name: &str, mode: &str, extra: &str) -> String {
    format!(
        "[[plugins]]\nname = \"{name}\"\ncommand = \"python3 {PLUGIN} {mode} {name}\"\n{extra}\n"
    )
}

/// The tool names of recorded request `n`.
fn tool_names(server: &FakeServer, n: usize) -> Vec<String> {
    server.requests()[n].json()["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A file in HOME.
fn home_file(ws: &Workspace, name: &str) -> PathBuf {
    ws.home.path().join(name)
}

/// A plugin's tools join the registry (sorted with the built-ins) and run
/// on the model's first call; the plugin sees the sanitized environment plus its allowlist,
/// never a credential, even allowlisted.
#[test]
fn plugin_tools_run_and_join_the_list() {
    let ws = Workspace::new();
    ws.user_config(&entry(
        "alpha",
        "ok",
        "env = [\"PLUGIN_VISIBLE\", \"ANTHROPIC_API_KEY\"]",
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "alpha_echo", r#"{"text":"hi"}"#),
            ("c2", "alpha_env", "{}"),
            ("c3", "alpha_echo", r#"{"text":"fail"}"#),
            ("c4", "alpha_echo", r#"{"text":"error"}"#),
        ])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(
        &server,
        &["-p", "go"],
        &[
            ("PLUGIN_VISIBLE", "1"),
            ("PLUGIN_HIDDEN", "1"),
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
        ],
    );
    assert_eq!(out.ok(), "done\n");
    assert_eq!(ws.result_text("c1"), "echo: hi");
    let env = ws.result_text("c2");
    assert!(
        env.contains("PLUGIN_VISIBLE") && env.contains("PATH"),
        "{env}"
    );
    assert!(
        !env.contains("PLUGIN_HIDDEN") && !env.contains("ANTHROPIC"),
        "{env}"
    );
    assert_eq!(ws.result_text("c3"), "tool error: echo failed on purpose");
    assert_eq!(ws.result_text("c4"), "tool error: an error object");
    let names = tool_names(&server, 1);
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(names.contains(&"alpha_echo".to_owned()) && names.contains(&"read".to_owned()));
    assert!(
        out.stderr()
            .contains("plugin alpha: ANTHROPIC_API_KEY is a model credential"),
        "{}",
        out.stderr()
    );
}

/// Calls to two plugins overlap (one waits for a file the other makes),
/// a second call to the same plugin queues in its lane, and results keep
/// the model's order.
#[test]
fn plugins_overlap_and_each_has_one_lane() {
    let ws = Workspace::new();
    ws.user_config(&format!(
        "{}{}",
        entry("alpha", "ok", ""),
        entry("beta", "ok", "")
    ));
    let flag = home_file(&ws, "from_beta");
    let wait = format!(r#"{{"wait":"{}"}}"#, flag.display());
    let make = format!(r#"{{"make":"{}"}}"#, flag.display());
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "alpha_wait", &wait),
            ("c2", "alpha_echo", r#"{"text":"queued"}"#),
            ("c3", "beta_wait", &make),
        ])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    ws.run_model(&server, &["-p", "go"], &[]).ok();
    assert_eq!(ws.result_text("c1"), "saw True");
    assert_eq!(ws.result_text("c2"), "echo: queued");
    let order: Vec<String> = jsonl(&ws.only_session())
        .into_iter()
        .filter(|e| e["type"] == "message.tool")
        .map(|e| e["data"]["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(order, ["c1", "c2", "c3"]);
}

/// Serial plugin tools are barriers (C19): two calls to different
/// plugins' serial tools do not overlap.
#[test]
fn serial_plugin_tools_are_barriers() {
    let ws = Workspace::new();
    let record = home_file(&ws, "record");
    ws.user_config(&format!(
        "{}{}",
        entry("alpha", "ok", "env = [\"PLUGIN_RECORD\"]"),
        entry("beta", "ok", "env = [\"PLUGIN_RECORD\"]")
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "alpha_serial", r#"{"tag":"a"}"#),
            ("c2", "beta_serial", r#"{"tag":"b"}"#),
        ])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    ws.run_model(
        &server,
        &["-p", "go"],
        &[("PLUGIN_RECORD", record.to_str().unwrap())],
    )
    .ok();
    assert_eq!(
        std::fs::read_to_string(&record).unwrap(),
        "enter a\nexit a\nenter b\nexit b\n"
    );
}

/// A protocol violation mid-session stops the plugin: the call is a tool
/// error naming it, its tools leave the next request, the log has a
/// `plugin.diagnostic`, and the session goes on.
#[test]
fn fatal_failures_drop_the_plugin_tools() {
    for (how, said) in [
        (
            "garbage",
            "wrote something that is not JSON to stdout: \"oops, a log line\"",
        ),
        ("die", "closed its stdout before answering tool.execute"),
        ("image", "returned a \"image\" content part"),
    ] {
        let ws = Workspace::new();
        ws.user_config(&entry("alpha", "ok", ""));
        let server = FakeServer::start(vec![
            Reply::sse(chat_tool_calls(&[(
                "c1",
                "alpha_misbehave",
                &format!(r#"{{"how":"{how}"}}"#),
            )])),
            Reply::sse(chat_text("went on")),
        ])
        .unwrap();
        let out = ws.run_model(&server, &["-p", "go"], &[]);
        assert_eq!(out.ok(), "went on\n");
        let text = ws.result_text("c1");
        assert!(
            text.starts_with("tool error: plugin alpha stopped: ") && text.contains(said),
            "{how}: {text}"
        );
        assert!(
            text.ends_with("its tools are no longer available"),
            "{text}"
        );
        assert!(
            !tool_names(&server, 1)
                .iter()
                .any(|n| n.starts_with("alpha_")),
            "{how}"
        );
        let diagnostics: Vec<Value> = jsonl(&ws.only_session())
            .into_iter()
            .filter(|e| e["type"] == "plugin.diagnostic")
            .collect();
        assert_eq!(diagnostics.len(), 1, "{how}: {diagnostics:?}");
        assert_eq!(diagnostics[0]["data"]["plugin"], "alpha");
    }
}

/// Long results are capped before they are stored.
#[test]
fn long_results_are_capped() {
    let ws = Workspace::new();
    ws.user_config(&entry("alpha", "ok", ""));
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "alpha_misbehave",
            r#"{"how":"huge_text"}"#,
        )])),
        Reply::sse(chat_text("ok")),
    ])
    .unwrap();
    ws.run_model(&server, &["-p", "go"], &[]).ok();
    let text = ws.result_text("c1");
    assert!(text.len() <= 65_536, "{}", text.len());
    assert!(text.ends_with(
        "[output truncated: the plugin returned 100000 bytes; etch keeps the first 65408]"
    ));
}

/// Each bad start leaves a clear diagnostic naming the plugin (`etch
/// plugins check` exits 1), and a run with all of them configured goes
/// on without them.
#[test]
fn bad_plugins_are_named_and_the_session_goes_on() {
    let ws = Workspace::new();
    let cases = [
        (
            "exit",
            "closed its stdout before answering initialize; it exited with code 3",
        ),
        ("silent", "did not answer initialize within 1 s"),
        (
            "malformed",
            "wrote something that is not JSON to stdout: \"{not json\"",
        ),
        (
            "wrong_id",
            "answered request 99 when request 1 (initialize) was waiting",
        ),
        ("no_id", "answered initialize without an id"),
        ("array", "sent JSON that is not an object"),
        ("big", "sent a line over 4 MiB"),
        (
            "logs",
            "wrote something that is not JSON to stdout: \"starting up the plugin...\"",
        ),
    ];
    let mut config = String::new();
    for (mode, _) in &cases {
        config.push_str(&entry(mode, mode, "timeout_seconds = 1"));
    }
    config.push_str(&entry("bad_tools", "bad_tools", ""));
    ws.user_config(&config);
    let check = ws.run(&["plugins", "check"]);
    assert_eq!(check.code(), 1);
    let out = check.stdout();
    for (mode, said) in &cases {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{mode}  ")))
            .unwrap_or_else(|| panic!("{mode} not listed: {out}"));
        assert!(
            line.contains(&format!("{mode}  failed: {said}")),
            "{mode}: {line}"
        );
    }
    for rejected in [
        "rejected: tool name \"has space\" is invalid",
        "rejected: read: a built-in tool or an earlier plugin or MCP server already has this name",
        "rejected: tool \"not_object\" has parameters that are not a JSON object schema",
        "rejected: bad_tools_ok: declared twice",
        "rejected: no_params: missing field `parameters`",
        "rejected: bad_safety: unknown variant `readonly`",
        "tool bad_tools_ok",
    ] {
        assert!(out.contains(rejected), "{rejected}: {out}");
    }
    // A call to a tool no one offers waits for start-up to settle, so
    // every plugin's trouble is known, and said, before the run ends.
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "nonexistent", "{}")])),
        Reply::sse(chat_text("fine")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "fine\n");
    for (mode, said) in &cases {
        assert!(
            out.stderr()
                .contains(&format!("etch: warning: plugin {mode}: {said}")),
            "{mode}: {}",
            out.stderr()
        );
    }
    let logged = jsonl(&ws.only_session())
        .into_iter()
        .filter(|e| e["type"] == "plugin.diagnostic")
        .count();
    assert!(logged >= cases.len(), "{logged}");
}

/// A plugin that hangs while a grandchild holds its stdout is killed with
/// its whole group at the timeout; nothing it started is left.
#[test]
fn a_hanging_plugin_is_killed_with_its_group() {
    let ws = Workspace::new();
    let record = home_file(&ws, "record");
    ws.user_config(&entry(
        "hang",
        "hang",
        "timeout_seconds = 1\nenv = [\"PLUGIN_RECORD\"]",
    ));
    let check = ws.run_env(
        &["plugins", "check"],
        &[("PLUGIN_RECORD", record.to_str().unwrap())],
    );
    assert!(
        check
            .stdout()
            .contains("did not answer initialize within 1 s and was killed with its process group"),
        "{}",
        check.stdout()
    );
    let recorded = std::fs::read_to_string(&record).unwrap();
    let pid = recorded.trim().strip_prefix("grandchild ").unwrap();
    assert!(
        support::process_gone(pid),
        "grandchild {pid} outlived its plugin"
    );
}

/// Disabled plugins never start; hooks wrap plugin tools like any other
/// (a blocked call never reaches the plugin); untrusted project plugins
/// refuse the run.
#[test]
fn disabled_hooked_and_untrusted_plugins() {
    let ws = Workspace::new();
    let record = home_file(&ws, "record");
    let hook = home_file(&ws, "block.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho '{\"block\":true,\"reason\":\"no echo today\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    ws.user_config(&format!(
        "{}{}[[hooks.PreToolUse]]\nmatcher = \"alpha_echo\"\ncommand = \"{}\"\n",
        entry(
            "idle",
            "started",
            "disabled = true\nenv = [\"PLUGIN_RECORD\"]"
        ),
        entry("alpha", "ok", "env = [\"PLUGIN_RECORD\"]"),
        hook.display()
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "alpha_echo", r#"{"text":"hi"}"#)])),
        Reply::sse(chat_text("ok")),
    ])
    .unwrap();
    ws.run_model(
        &server,
        &["-p", "go"],
        &[("PLUGIN_RECORD", record.to_str().unwrap())],
    )
    .ok();
    assert_eq!(ws.result_text("c1"), "tool error: no echo today");
    assert!(!record.exists(), "the disabled plugin started");
    let listed = ws.run(&["plugins", "list"]).ok();
    assert!(listed.contains("idle  disabled"), "{listed}");

    ws.project_config(&entry("project", "ok", ""));
    let refused = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(refused.code(), 1);
    assert!(
        refused.stderr().contains("are not trusted yet"),
        "{}",
        refused.stderr()
    );
}

/// The example plugin (E-PLUG-18), built from this workspace, through a
/// model turn.
#[test]
fn the_example_plugin_serves_its_tools() {
    let ws = Workspace::new();
    let binary = example_binary();
    ws.user_config(&format!(
        "[[plugins]]\nname = \"example\"\ncommand = \"{}\"\n",
        binary.display()
    ));
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "plugin_echo", r#"{"text":"two words"}"#),
            ("c2", "project_files", "{}"),
        ])),
        Reply::sse(chat_text("ok")),
    ])
    .unwrap();
    ws.run_model(&server, &["-p", "go"], &[]).ok();
    assert_eq!(
        ws.result_text("c1"),
        "two words\n\n9 characters, 2 words, 1 lines, 9 bytes"
    );
    assert!(
        ws.result_text("c2").starts_with("1 files, 6 bytes under ."),
        "{}",
        ws.result_text("c2")
    );
}

/// A plugin binary of this workspace, built beside etch's (plugins are
/// workspace members), or built now.
fn plugin_binary(package: &str) -> PathBuf {
    let etch = Path::new(env!("CARGO_BIN_EXE_etch"));
    let binary = etch.with_file_name(package);
    if !binary.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", package])
            .status()
            .unwrap();
        assert!(status.success());
    }
    binary
}

/// The example plugin's binary.
fn example_binary() -> PathBuf {
    plugin_binary("etch-plugin-example")
}

/// `rust_inspect` (the rust-intel plugin) through a model turn on a
/// fixture crate: a method's signature and doc by its `Type::method`
/// name, and a zero-result answer that says what was parsed.
#[test]
fn rust_inspect_reads_a_fixture_crate() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(
        ws.path().join("Cargo.toml"),
        "[package]\nname = \"demo-geo\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    std::fs::write(
        ws.path().join("src/lib.rs"),
        "//! Geometry.\n\n/// A point.\npub struct Point {\n    pub x: i32,\n    pub y: i32,\n}\n\nimpl Point {\n    /// Manhattan length.\n    pub fn norm(&self) -> i32 {\n        self.x.abs() + self.y.abs()\n    }\n}\n",
    )
    .unwrap();
    ws.user_config(&format!(
        "[[plugins]]\nname = \"rust-intel\"\ncommand = \"{}\"\n",
        plugin_binary("etch-rust-intel").display()
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "rust_inspect", r#"{"name":"Point::norm"}"#),
            ("c2", "rust_inspect", r#"{"name":"^nothing$"}"#),
        ])),
        Reply::sse(chat_text("ok")),
    ])
    .unwrap();
    ws.run_model(&server, &["-p", "go"], &[]).ok();
    let found = ws.result_text("c1");
    assert!(
        found.contains("demo_geo::Point::norm")
            && found.contains("src/lib.rs:11")
            && found.contains("/// Manhattan length.")
            && found.contains("pub fn norm(&self) -> i32"),
        "{found}"
    );
    let none = ws.result_text("c2");
    assert!(
        none.contains("nothing matched") && none.contains("1 crate (demo_geo)"),
        "{none}"
    );
}

/// The README's Python plugin works as printed.
#[test]
fn the_readme_python_plugin_works() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let start = readme.find("```python\n").unwrap() + "```python\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let ws = Workspace::new();
    let script = ws.home.path().join("words.py");
    std::fs::write(&script, &readme[start..end]).unwrap();
    ws.user_config(&format!(
        "[[plugins]]\nname = \"words\"\ncommand = \"python3 {}\"\n",
        script.display()
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "word_count",
            r#"{"text":"one two three"}"#,
        )])),
        Reply::sse(chat_text("ok")),
    ])
    .unwrap();
    ws.run_model(&server, &["-p", "go"], &[]).ok();
    assert_eq!(ws.result_text("c1"), "3");
    assert!(
        ws.run(&["plugins", "check"])
            .ok()
            .contains("tool word_count (overlaps): Count the words in a text.")
    );
}

/// A one-shot run's first request offers the plugin's tools (it used to
/// go out before the plugin had answered `initialize`), and `etch
/// context` counts their schemas as the request carries them.
#[test]
fn the_first_request_and_etch_context_include_plugin_tools() {
    let ws = Workspace::new();
    ws.user_config(&entry("alpha", "ok", ""));
    for _ in 0..3 {
        let server = FakeServer::start(vec![Reply::sse(chat_text("done"))]).unwrap();
        ws.run_model(&server, &["-p", "go"], &[]).ok();
        let names = tool_names(&server, 0);
        assert!(names.contains(&"alpha_echo".to_owned()), "{names:?}");
    }
    let with: serde_json::Value =
        serde_json::from_str(&ws.run(&["context", "--json"]).ok()).unwrap();
    ws.user_config("");
    let without: serde_json::Value =
        serde_json::from_str(&ws.run(&["context", "--json"]).ok()).unwrap();
    let bytes = |v: &serde_json::Value| v["tools"]["bytes"].as_u64().unwrap();
    assert!(bytes(&with) > bytes(&without) + 200, "{with}\n{without}");
}
