//! The real `etch` binary with configuration files (issue 5, E-CFG): bad
//! input named by file and line, precedence of flags over project over user
//! files, `config show --effective` and `config schema`, and settings that
//! reach the run.

// Fixture helpers outside #[test] functions may panic on a broken setup.
#![allow(clippy::unwrap_used)]

mod support;

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::Value;
use support::Workspace;

/// Writes the project config file.
fn project_config(ws: &Workspace, text: &str) -> std::path::PathBuf {
    let dir = ws.path().join(".etch");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Writes the user config file.
fn user_config(ws: &Workspace, text: &str) {
    let dir = ws.home.path().join(".etch");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

/// E-CFG-17 bad input: each problem is an error naming the file, the line
/// and the key, with what is allowed; `config check` exits 1.
#[test]
fn config_check_names_file_line_and_key() {
    let cases = [
        ("[session\nmax_tool_rounds = 3\n", ":1:", "TOML"),
        (
            "[session]\nmax_tool_round = 3\n",
            ":2: session.max_tool_round",
            "unknown key",
        ),
        (
            "[session]\nmax_tool_rounds = \"many\"\n",
            ":2: session.max_tool_rounds",
            "integer",
        ),
        (
            "[provider]\nname = \"opneai\"\n",
            ":2: provider.name",
            "echo, openai, anthropic",
        ),
        (
            "[[hooks.PreToolUse]]\nmatcher = \"(unclosed\"\ncommand = \"true\"\n",
            ":2: hooks.PreToolUse.matcher",
            "not a valid regex",
        ),
    ];
    for (text, place, what) in cases {
        let ws = Workspace::new();
        let path = project_config(&ws, text);
        let out = ws.run(&["config", "check"]);
        assert_eq!(out.code(), 1, "{text}: {}", out.stderr());
        let stderr = out.stderr();
        let expected = format!("{}{place}", path.display());
        assert!(
            stderr.contains(&expected),
            "{text}: want {expected} in {stderr}"
        );
        assert!(
            stderr.to_lowercase().contains(&what.to_lowercase()),
            "{text}: want {what} in {stderr}"
        );
    }
}

/// A clean config passes; without files the defaults apply.
#[test]
fn config_check_passes_clean_files() {
    let ws = Workspace::new();
    let out = ws.run(&["config", "check"]);
    assert_eq!(out.code(), 0, "{}", out.stderr());
    assert!(
        out.stdout().contains("no config files found"),
        "{}",
        out.stdout()
    );
    let path = project_config(&ws, "[session]\nmax_tool_rounds = 3\n");
    let out = ws.run(&["config", "check"]);
    assert_eq!(out.code(), 0, "{}", out.stderr());
    assert!(
        out.stdout().contains(&path.display().to_string()),
        "{}",
        out.stdout()
    );
}

/// A run refuses to start on a config error (no session is created), and
/// only warns about an unknown key.
#[test]
fn runs_stop_on_errors_and_warn_on_unknown_keys() {
    let ws = Workspace::new();
    project_config(&ws, "[openai]\napi = \"chats\"\n");
    let out = ws.run(&["--provider", "echo", "-p", "hi"]);
    assert_eq!(out.code(), 1, "{}", out.stderr());
    assert!(out.stderr().contains("openai.api"), "{}", out.stderr());
    assert!(ws.session_files().is_empty());

    let ws = Workspace::new();
    project_config(&ws, "[session]\ncolour = \"blue\"\n");
    let out = ws.run(&["--provider", "echo", "-p", "hi"]);
    assert_eq!(out.ok(), "hi\n");
    assert!(
        out.stderr().contains("warning") && out.stderr().contains("session.colour"),
        "{}",
        out.stderr()
    );
}

/// E-CFG-03/18: project beats user, defaults fill the rest, and
/// `show --effective` says where each value came from.
#[test]
fn effective_config_shows_sources() {
    let ws = Workspace::new();
    user_config(&ws, "[session]\nmax_tool_rounds = 7\nkeep_messages = 5\n");
    let project = project_config(&ws, "[session]\nmax_tool_rounds = 9\n");
    let out = ws.run(&["config", "show", "--effective"]);
    assert_eq!(out.code(), 0, "{}", out.stderr());
    let text = out.stdout();
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("{key} missing in {text}"))
            .to_owned()
    };
    assert!(line("max_tool_rounds = 9").contains(&project.display().to_string()));
    assert!(line("keep_messages = 5").contains("config.toml"));
    assert!(line("auto_compact = false").contains("default"));
    let schema: Value = serde_json::from_str(&ws.run(&["config", "schema"]).ok()).unwrap();
    assert!(schema["tables"].as_array().unwrap().len() > 5);
    assert_eq!(ws.run(&["config", "show"]).code(), 2);
}

/// Config values reach the run: `[prompt] text` is in the system prompt and
/// `[session] max_tool_rounds` bounds the rounds; a flag still wins.
#[test]
fn settings_reach_the_run() {
    let ws = Workspace::new();
    project_config(
        &ws,
        "[prompt]\ntext = \"Always answer in French.\"\n[session]\nmax_tool_rounds = 1\n",
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "ls", "{}")])),
        Reply::sse(chat_tool_calls(&[("c2", "ls", "{}")])),
        Reply::sse(chat_text("Fini.")),
    ])
    .unwrap();
    let base = format!("{}/v1", server.url());
    let args = [
        "--provider",
        "openai",
        "--base-url",
        base.as_str(),
        "--api-key",
        "k",
        "-p",
        "list",
    ];
    let out = ws.run(&args);
    assert_eq!(out.code(), 1, "{}", out.stderr());
    assert!(
        out.stderr().contains("stopped after 1 model/tool rounds"),
        "{}",
        out.stderr()
    );
    let system = server.requests()[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("\n\nAlways answer in French."), "{system}");
    let mut with_flag = args.to_vec();
    with_flag.extend(["--max-tool-rounds", "3"]);
    assert_eq!(ws.run(&with_flag).ok(), "Fini.\n");
}

/// `[provider] idle_timeout_secs` is parsed, validated (a type error and an
/// out-of-range value are named with file and line), shown by `config show
/// --effective`, and reaches the stall timeout of a run.
#[test]
fn idle_timeout_key_reaches_the_stall_timeout() {
    let ws = Workspace::new();
    let path = project_config(&ws, "[provider]\nidle_timeout_secs = \"soon\"\n");
    let check = ws.run(&["config", "check"]);
    assert_eq!(check.code(), 1);
    assert!(
        check
            .stderr()
            .contains(&format!("{}:2: provider.idle_timeout_secs", path.display())),
        "{}",
        check.stderr()
    );
    project_config(&ws, "[provider]\nidle_timeout_secs = 0\n");
    let check = ws.run(&["config", "check"]);
    assert_eq!(check.code(), 1, "{}", check.stderr());
    assert!(
        check.stderr().contains("provider.idle_timeout_secs"),
        "{}",
        check.stderr()
    );
    project_config(&ws, "[provider]\nidle_timeout_secs = 1\n");
    let shown = ws.run(&["config", "show", "--effective"]).ok();
    assert!(shown.contains("idle_timeout_secs = 1"), "{shown}");
    let server = support::stalling_server();
    let base = format!("{}/v1", server.url());
    let out = ws.run(&["--provider", "openai", "--base-url", &base, "-p", "x"]);
    assert_eq!(out.code(), 1, "{}", out.stderr());
    assert!(
        out.stderr()
            .contains("sent nothing for 1 seconds; the stream looks stalled"),
        "{}",
        out.stderr()
    );
}

/// `config check` reports every invalid skill with its path and reason and
/// exits 1: a bad name, a name that differs from its directory, a missing
/// description and an over-long one. A valid skill passes.
#[test]
fn config_check_reports_invalid_skills() {
    let ws = Workspace::new();
    let skill = |dir: &str, text: &str| {
        let path = ws.path().join(".etch/skills").join(dir).join("SKILL.md");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    };
    skill(
        "good",
        "---\nname: good\ndescription: Does a thing.\n---\nBody\n",
    );
    let ok = ws.run(&["config", "check"]);
    assert_eq!(ok.code(), 0, "{}", ok.stderr());
    let bad_name = skill("Bad_Name", "---\nname: Bad_Name\ndescription: x\n---\n");
    let mismatch = skill("other", "---\nname: renamed\ndescription: x\n---\n");
    let missing = skill("nodesc", "---\nname: nodesc\n---\n");
    let long = skill(
        "long",
        &format!("---\nname: long\ndescription: {}\n---\n", "d".repeat(1100)),
    );
    let check = ws.run(&["config", "check"]);
    assert_eq!(check.code(), 1, "{}", check.stderr());
    let stderr = check.stderr();
    for path in [&bad_name, &mismatch, &missing, &long] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("etch: error: skill ")
                    && l.contains(&path.display().to_string())),
            "{} not reported:\n{stderr}",
            path.display()
        );
    }
    assert!(stderr.contains("4 problems"), "{stderr}");
    assert!(!stderr.contains("good/SKILL.md"), "{stderr}");
}

/// `[tools] active` picks the tools offered (as `--tools` does, which wins
/// over it); an unknown name is a usage error naming the key.
#[test]
fn tools_active_picks_the_offered_tools() {
    let ws = Workspace::new();
    project_config(&ws, "[tools]\nactive = [\"read\", \"bash\"]\n");
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("one")),
        Reply::sse(chat_text("two")),
    ])
    .unwrap();
    let base = format!("{}/v1", server.url());
    let args = |extra: &[&'static str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--api-key",
            "k",
            "--model",
            "m",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        v.extend(extra.iter().map(ToString::to_string));
        v
    };
    let run = |extra: &[&'static str]| {
        let a = args(extra);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        ws.run(&refs)
    };
    run(&["-p", "hi"]).ok();
    run(&["--tools", "ls", "-p", "hi"]).ok();
    let names = |i: usize| -> Vec<String> {
        server.requests()[i].json()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    // `process` comes with `bash`, for its background processes.
    assert_eq!(names(0), ["bash", "process", "read"]);
    assert_eq!(names(1), ["ls"]);
    project_config(&ws, "[tools]\nactive = [\"read\", \"cat\"]\n");
    let out = run(&["-p", "hi"]);
    assert_eq!(out.code(), 2, "{}", out.stderr());
    assert!(
        out.stderr()
            .contains("[tools] active in the configuration: unknown tool \"cat\""),
        "{}",
        out.stderr()
    );
}
