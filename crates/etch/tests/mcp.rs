//! MCP servers through the real binary (E-PLUG-22, issue 16): real
//! servers from the npm and PyPI registries (`server-everything` over
//! stdio and streamable HTTP, `server-filesystem`, `mcp-server-git`),
//! installed once into target/mcp-servers by tests/mcp-servers/install.sh,
//! and hand-written servers that misbehave in each way the issue names.
//! A model turn against the fake model server calls MCP tools; the
//! assertions are on stdout, stderr, exit codes, the requests the model
//! got and the session log.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::Value;
use support::{Workspace, jsonl, process_gone};

/// The stdio misbehaving server.
const STDIO_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp_server.py");

/// The HTTP misbehaving server.
const HTTP_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp_http.py");

/// Where the real servers are installed.
struct Installed {
    /// server-everything's entry script.
    everything: PathBuf,
    /// server-filesystem's entry script.
    filesystem: PathBuf,
    /// mcp-server-git's executable.
    git: PathBuf,
}

/// The real servers, installed on first use (a no-op once .ci/run or an
/// earlier test run installed them).
fn installed() -> &'static Installed {
    static INSTALLED: OnceLock<Installed> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = root.join("../../target/mcp-servers");
        let status = Command::new("sh")
            .arg(root.join("tests/mcp-servers/install.sh"))
            .arg(&dir)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "installing the MCP servers from the npm and PyPI registries failed"
        );
        let modules = dir.join("node_modules/@modelcontextprotocol");
        Installed {
            everything: modules.join("server-everything/dist/index.js"),
            filesystem: modules.join("server-filesystem/dist/index.js"),
            git: dir.join("venv/bin/mcp-server-git"),
        }
    })
}

/// `text` as a TOML string.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// An `[[mcp.servers]]` table for a stdio server.
fn stdio(name: &str, command: &str, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| quoted(a)).collect();
    format!(
        "[[mcp.servers]]\nname = \"{name}\"\ncommand = {}\nargs = [{}]\n{extra}\n",
        quoted(command),
        args.join(", ")
    )
}

/// An `[[mcp.servers]]` table for the stdio fixture in `mode`, writing
/// its pid into `ws`.
fn fixture(ws: &Workspace, name: &str, mode: &str, extra: &str) -> String {
    let pid = ws.home.path().join(format!("{name}.pid"));
    stdio(
        name,
        "python3",
        &[STDIO_FIXTURE, mode, pid.to_str().unwrap()],
        extra,
    )
}

/// The pid the stdio fixture `name` wrote.
fn fixture_pid(ws: &Workspace, name: &str) -> String {
    std::fs::read_to_string(ws.home.path().join(format!("{name}.pid"))).unwrap()
}

/// The tools of recorded request `n`, by name.
fn tools_of(server: &FakeServer, n: usize) -> Vec<Value> {
    server.requests()[n].json()["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The tool named `name` in `tools`.
fn tool<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|t| t["function"]["name"] == name)
}

/// The `plugin.diagnostic` messages of the session, as `who: message`.
fn diagnostics(ws: &Workspace) -> Vec<String> {
    jsonl(&ws.only_session())
        .into_iter()
        .filter(|e| e["type"] == "plugin.diagnostic")
        .map(|e| {
            format!(
                "{}: {}",
                e["data"]["plugin"].as_str().unwrap(),
                e["data"]["message"].as_str().unwrap()
            )
        })
        .collect()
}

/// A server process the test started, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A model that calls `calls` at once, then answers "done".
fn model(calls: &[(&str, &str, &str)]) -> FakeServer {
    FakeServer::start(vec![
        Reply::sse(chat_tool_calls(calls)),
        Reply::sse(chat_text("done")),
    ])
    .unwrap()
}

/// server-everything over stdio: its tools join the request with their
/// schemas passed through, text, structured content and an image
/// placeholder come back as results, and the results reach the model.
#[test]
fn everything_over_stdio_answers_a_model_turn() {
    let servers = installed();
    let ws = Workspace::new();
    ws.user_config(&stdio(
        "everything",
        "node",
        &[servers.everything.to_str().unwrap(), "stdio"],
        "disabled_tools = [\"get-env\"]",
    ));
    let server = model(&[
        ("c1", "mcp__everything__echo", r#"{"message":"hi there"}"#),
        ("c2", "mcp__everything__get-sum", r#"{"a":2,"b":40}"#),
        ("c3", "mcp__everything__get-tiny-image", "{}"),
        (
            "c4",
            "mcp__everything__get-structured-content",
            r#"{"location":"New York"}"#,
        ),
    ]);
    let out = ws.run_model(&server, &["-p", "use the tools"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    assert_eq!(ws.result_text("c1"), "Echo: hi there");
    assert!(
        ws.result_text("c2").contains("42"),
        "{}",
        ws.result_text("c2")
    );
    let image = ws.result_text("c3");
    assert!(
        image.contains("[image (image/png,") && image.contains("left out"),
        "{image}"
    );
    let weather = ws.result_text("c4");
    assert!(weather.contains("temperature"), "{weather}");
    // The run's first request waited for the server: the model sees its
    // tools from the start.
    let tools = tools_of(&server, 0);
    let sum = tool(&tools, "mcp__everything__get-sum").unwrap();
    assert_eq!(sum["function"]["parameters"]["type"], "object");
    assert!(sum["function"]["parameters"]["properties"]["a"].is_object());
    assert!(tool(&tools, "mcp__everything__get-env").is_none());
    assert!(tool(&tools, "read").is_some());
    let request = server.requests()[1].body_text();
    assert!(request.contains("Echo: hi there"), "{request}");
}

/// server-everything over streamable HTTP, started on a loopback port.
#[test]
fn everything_over_streamable_http() {
    let servers = installed();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new("node")
        .arg(&servers.everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It says when it listens.
    let stderr = child.stderr.take().unwrap();
    let _node = Running(child);
    let mut lines = BufReader::new(stderr).lines();
    assert!(lines.any(|l| l.unwrap().contains("listening on port")));
    let ws = Workspace::new();
    ws.user_config(&format!(
        "[[mcp.servers]]\nname = \"web\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nheaders = [\"X-Etch-Test: ${{ETCH_TEST_TEAM}}\"]\n"
    ));
    let server = model(&[("c1", "mcp__web__echo", r#"{"message":"over http"}"#)]);
    let out = ws.run_model(&server, &["-p", "go"], &[("ETCH_TEST_TEAM", "core")]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    assert_eq!(ws.result_text("c1"), "Echo: over http");
}

/// A workspace whose `allowed` directory (returned) holds `in.txt`,
/// configured with server-filesystem over it as `fs`, and `extra`.
fn filesystem_workspace(extra: &str) -> (Workspace, PathBuf) {
    let servers = installed();
    let ws = Workspace::new();
    let allowed = ws.path().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::write(allowed.join("in.txt"), "inside text").unwrap();
    let entry = stdio(
        "fs",
        "node",
        &[
            servers.filesystem.to_str().unwrap(),
            allowed.to_str().unwrap(),
        ],
        "",
    );
    ws.user_config(&format!("{entry}\n{extra}"));
    (ws, allowed)
}

/// The arguments of reading `allowed/in.txt` and of writing
/// `allowed/new.txt`.
fn filesystem_calls(allowed: &Path) -> (String, String) {
    let read_in = format!(
        r#"{{"path":{}}}"#,
        quoted(allowed.join("in.txt").to_str().unwrap())
    );
    let write_in = format!(
        r#"{{"path":{},"content":"written by mcp"}}"#,
        quoted(allowed.join("new.txt").to_str().unwrap())
    );
    (read_in, write_in)
}

/// server-filesystem reads and writes inside its allowed directory and
/// refuses a path outside it, as a tool error the session goes on from.
#[test]
fn filesystem_inside_the_allowed_directory_only() {
    let (ws, allowed) = filesystem_workspace("");
    let outside = ws.home.path().join("secret.txt");
    std::fs::write(&outside, "secret text").unwrap();
    let (read_in, write_in) = filesystem_calls(&allowed);
    let read_out = format!(r#"{{"path":{}}}"#, quoted(outside.to_str().unwrap()));
    let server = model(&[
        ("c1", "mcp__fs__read_text_file", &read_in),
        ("c2", "mcp__fs__write_file", &write_in),
        ("c3", "mcp__fs__read_text_file", &read_out),
    ]);
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    assert_eq!(ws.result_text("c1"), "inside text");
    assert_eq!(
        std::fs::read_to_string(allowed.join("new.txt")).unwrap(),
        "written by mcp"
    );
    let refused = ws.result_text("c3");
    assert!(
        refused.starts_with("tool error: ") && refused.contains("Access denied"),
        "{refused}"
    );
    assert!(!refused.contains("secret text"));
}

/// server-filesystem's annotations count: under `--read-only` only its
/// tools marked `readOnlyHint` are offered, and under the `untrusted`
/// approval policy those run while `write_file` asks, which a `-p` run
/// without `--approve-all` refuses and logs.
#[test]
fn filesystem_tools_follow_their_read_only_hints() {
    let (ws, allowed) = filesystem_workspace("[approval]\npolicy = \"untrusted\"\n");
    let server = FakeServer::start(vec![Reply::sse(chat_text("done"))]).unwrap();
    let out = ws.run_model(&server, &["-p", "look", "--read-only"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    let tools = tools_of(&server, 0);
    assert!(tool(&tools, "mcp__fs__read_text_file").is_some());
    assert!(tool(&tools, "mcp__fs__write_file").is_none());
    assert!(tool(&tools, "write").is_none());

    let (read_in, write_in) = filesystem_calls(&allowed);
    let server = model(&[
        ("c1", "mcp__fs__read_text_file", &read_in),
        ("c2", "mcp__fs__write_file", &write_in),
    ]);
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    let sessions = ws.session_files();
    let log = jsonl(sessions.last().unwrap());
    let result = |id: &str| {
        log.iter()
            .find(|e| e["type"] == "message.tool" && e["data"]["toolCallId"] == id)
            .map(|e| e["data"]["content"][0]["text"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(result("c1"), "inside text");
    assert!(
        result("c2").contains("needs the user's approval")
            && result("c2").contains("--approve-all"),
        "{}",
        result("c2")
    );
    assert!(!allowed.join("new.txt").exists());
    let decisions: Vec<&Value> = log
        .iter()
        .filter(|e| e["type"] == "approval.decision")
        .collect();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["data"]["toolCallId"], "c2");
    assert_eq!(decisions[0]["data"]["decision"], "denied");
    assert_eq!(decisions[0]["data"]["by"], "flag");
}

/// mcp-server-git (PyPI) on a temporary repository.
#[test]
fn git_server_on_a_temporary_repository() {
    let servers = installed();
    let ws = Workspace::new();
    let repo = ws.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@e",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&repo)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("a.txt"), "one\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "first commit"]);
    std::fs::write(repo.join("a.txt"), "two\n").unwrap();
    ws.user_config(&stdio(
        "git",
        servers.git.to_str().unwrap(),
        &["--repository", repo.to_str().unwrap()],
        "enabled_tools = [\"git_status\", \"git_log\", \"git_diff_unstaged\"]",
    ));
    let args = format!(r#"{{"repo_path":{}}}"#, quoted(repo.to_str().unwrap()));
    let server = model(&[
        ("c1", "mcp__git__git_status", &args),
        ("c2", "mcp__git__git_log", &args),
        ("c3", "mcp__git__git_diff_unstaged", &args),
    ]);
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    assert!(
        ws.result_text("c1").contains("a.txt"),
        "{}",
        ws.result_text("c1")
    );
    assert!(ws.result_text("c2").contains("first commit"));
    assert!(ws.result_text("c3").contains("+two"));
    let tools = tools_of(&server, 1);
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    assert_eq!(
        names,
        [
            "mcp__git__git_diff_unstaged",
            "mcp__git__git_log",
            "mcp__git__git_status"
        ]
    );
}

/// `etch mcp list` and `etch mcp check NAME` without a model: states,
/// etch names, a disabled server, an untrusted project server, an
/// unknown name.
#[test]
fn mcp_list_and_check() {
    let servers = installed();
    let ws = Workspace::new();
    ws.user_config(&format!(
        "{}{}",
        stdio(
            "everything",
            "node",
            &[servers.everything.to_str().unwrap()],
            "enabled_tools = [\"echo\", \"get-sum\"]"
        ),
        "[[mcp.servers]]\nname = \"off\"\ncommand = \"nothing\"\ndisabled = true\n"
    ));
    ws.project_config(&fixture(&ws, "local", "ok", ""));
    let list = ws.run(&["mcp", "list"]);
    let text = list.ok();
    assert!(text.contains("everything  runs · 2 tools"), "{text}");
    assert!(text.contains("  tool mcp__everything__echo\n"), "{text}");
    assert!(text.contains("off  disabled"), "{text}");
    assert!(text.contains("local  not run: not trusted"), "{text}");
    let check = ws.run(&["mcp", "check", "everything"]);
    let text = check.ok();
    assert!(
        text.contains("tool mcp__everything__get-sum (overlaps): Returns the sum of two numbers"),
        "{text}"
    );
    assert!(text.contains("started and stopped in"), "{text}");
    assert!(!text.contains("local"), "{text}");
    let unknown = ws.run(&["mcp", "check", "nope"]);
    assert_eq!(unknown.code(), 2);
    assert!(unknown.stderr().contains("no MCP server named \"nope\""));
    assert!(
        unknown.stderr().contains("everything, off, local"),
        "{}",
        unknown.stderr()
    );
    let untrusted = ws.run(&["mcp", "check", "local"]);
    assert_eq!(untrusted.code(), 1);
    assert!(untrusted.stdout().contains("not trusted"));
}

/// A project's MCP servers pass the trust gate like hooks and plugins.
#[test]
fn project_servers_need_trust() {
    let ws = Workspace::new();
    ws.project_config(&fixture(&ws, "local", "ok", ""));
    let server = model(&[("c1", "mcp__local__echo", r#"{"text":"trusted"}"#)]);
    let refused = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(refused.code(), 1);
    assert!(
        refused
            .stderr()
            .contains("hooks, plugins and MCP servers in")
            && refused.stderr().contains("etch trust"),
        "{}",
        refused.stderr()
    );
    assert!(server.requests().is_empty());
    let trust = ws.run(&["trust", "--yes"]);
    assert!(
        trust.ok().contains("mcp server local: python3 "),
        "{}",
        trust.stdout()
    );
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    assert_eq!(ws.result_text("c1"), "echo: trusted");
}

/// Every bad stdio server in one session: one that does not exist, one
/// that exits during initialize, one that never answers, one that writes
/// garbage, one whose schema is not an object schema, one that dies in a
/// call, and a tool that hangs past its timeout. Each leaves a message
/// naming the server, the turn goes on, and no process is left.
#[test]
fn bad_stdio_servers_leave_messages_and_no_process() {
    let ws = Workspace::new();
    let config = [
        "[[mcp.servers]]\nname = \"ghost\"\ncommand = \"etch-test-no-such-server\"\n".to_owned(),
        fixture(&ws, "quits", "exit-init", ""),
        fixture(&ws, "mute", "silent", "timeout_seconds = 1"),
        fixture(&ws, "noisy", "garbage", "timeout_seconds = 1"),
        fixture(&ws, "schema", "bad-schema", ""),
        fixture(&ws, "dies", "die-call", ""),
        fixture(&ws, "ok", "ok", "disabled_tools = [\"secret\"]"),
        fixture(
            &ws,
            "slow",
            "ok",
            "timeout_seconds = 2\nenabled_tools = [\"hang\"]",
        ),
        fixture(&ws, "ok", "ok", ""),
    ]
    .concat();
    ws.user_config(&config);
    let server = model(&[
        ("c1", "mcp__ok__echo", r#"{"text":"still here"}"#),
        ("c2", "mcp__ok__echo", r#"{"text":"fail"}"#),
        ("c3", "mcp__dies__echo", r#"{"text":"x"}"#),
        ("c4", "mcp__slow__hang", "{}"),
    ]);
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    assert_eq!(ws.result_text("c1"), "echo: still here");
    assert_eq!(ws.result_text("c2"), "tool error: it failed");
    let died = ws.result_text("c3");
    assert!(
        died.starts_with("tool error: MCP server dies stopped: closed the connection during echo")
            && died.contains("exit status: 4")
            && died.contains("fixture: crashed during a call")
            && died.ends_with("its tools are no longer available"),
        "{died}"
    );
    let hung = ws.result_text("c4");
    assert!(
        hung.contains(
            "MCP server slow: tool hang did not answer within 2 s (the call was cancelled"
        ),
        "{hung}"
    );
    // The server that died is withdrawn from the next request.
    assert!(tool(&tools_of(&server, 1), "mcp__dies__echo").is_none());
    assert!(tool(&tools_of(&server, 0), "mcp__dies__echo").is_some());
    let said = diagnostics(&ws).join("\n");
    for expected in [
        "mcp:ghost: could not start etch-test-no-such-server: no such program",
        "mcp:quits: python3 did not complete MCP initialize",
        "exit status: 3; its last stderr line: fixture: cannot open its database",
        "mcp:mute: did not finish starting (connect, initialize, tools/list) within 1 s",
        "mcp:noisy: did not finish starting",
        "it wrote \"Server ready on stdio (this is a log line, not JSON)\" to stdout",
        "mcp:schema: tool rejected: tool \"mcp__schema__stringly\" has parameters that are not a JSON object schema",
        "mcp:schema: tool rejected: tool \"mcp__schema__truthy\" has parameters that are not a JSON object schema",
        "mcp:ok: another [[mcp.servers]] entry (in ",
        "check it with etch mcp check ghost",
    ] {
        assert!(said.contains(expected), "missing {expected:?} in\n{said}");
    }
    assert!(
        out.stderr()
            .contains("etch: warning: MCP server ghost: could not start"),
        "{}",
        out.stderr()
    );
    // Names that collide after mapping get distinct names; a long one is
    // cut to 64 characters; a disabled one is not offered.
    let tools = tools_of(&server, 0);
    assert!(tool(&tools, "mcp__schema__echo").is_some());
    let dotted = tools
        .iter()
        .find(|t| t["function"]["description"] == "(MCP tool \"a.b\") Dotted.")
        .unwrap();
    assert!(
        dotted["function"]["name"]
            .as_str()
            .unwrap()
            .starts_with("mcp__ok__a_b_")
    );
    let ok: Vec<&str> = tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|n| n.starts_with("mcp__ok__"))
        .collect();
    assert_eq!(ok.len(), 5, "{ok:?}");
    assert!(
        ok.iter().filter(|n| n.starts_with("mcp__ok__a_b_")).count() == 2,
        "{ok:?}"
    );
    assert!(ok.iter().all(|n| n.len() <= 64));
    assert!(
        ok.iter()
            .any(|n| n.len() == 64 && n.starts_with("mcp__ok__xxx"))
    );
    assert!(!ok.contains(&"mcp__ok__secret"));
    for name in ["quits", "mute", "noisy", "schema", "dies", "ok", "slow"] {
        let pid = fixture_pid(&ws, name);
        assert!(process_gone(&pid), "server {name} ({pid}) outlived etch");
    }
}

/// HTTP servers: 401 without the token and a working session with it
/// (from the environment), 404 on a wrong path, and an SSE stream
/// dropped in the middle of a call.
#[test]
fn bad_http_servers_leave_messages() {
    let start = |mode: &str| {
        let mut child = Command::new("python3")
            .args([HTTP_FIXTURE, mode])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        (Running(child), port.trim().to_owned())
    };
    let (_auth, auth) = start("auth");
    let (_drop, drop) = start("drop");
    let ws = Workspace::new();
    ws.user_config(&format!(
        "[[mcp.servers]]\nname = \"locked\"\nurl = \"http://127.0.0.1:{auth}/mcp\"\n\
         [[mcp.servers]]\nname = \"keyed\"\nurl = \"http://127.0.0.1:{auth}/mcp\"\nbearer_token_env = \"FIXTURE_TOKEN\"\n\
         [[mcp.servers]]\nname = \"lost\"\nurl = \"http://127.0.0.1:{auth}/nowhere\"\n\
         [[mcp.servers]]\nname = \"flaky\"\nurl = \"http://127.0.0.1:{drop}/mcp\"\ntimeout_seconds = 3\n"
    ));
    let server = model(&[
        ("c1", "mcp__keyed__echo", r#"{"text":"with a token"}"#),
        ("c2", "mcp__flaky__echo", r#"{"text":"dropped"}"#),
    ]);
    let out = ws.run_model(&server, &["-p", "go"], &[("FIXTURE_TOKEN", "good-token")]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    assert_eq!(ws.result_text("c1"), "echo: with a token");
    let dropped = ws.result_text("c2");
    assert!(
        dropped.starts_with(&format!(
            "tool error: MCP server flaky stopped: the connection to http://127.0.0.1:{drop}/mcp dropped during echo"
        )),
        "{dropped}"
    );
    let said = diagnostics(&ws).join("\n");
    for expected in [
        "mcp:locked: http://127.0.0.1:",
        "401 Unauthorized): set bearer_token_env",
        "mcp:lost: http://127.0.0.1:",
        "404 Not Found): check url",
    ] {
        assert!(said.contains(expected), "missing {expected:?} in\n{said}");
    }
    // The token is never written anywhere.
    let log = std::fs::read_to_string(ws.only_session()).unwrap();
    for text in [log, out.stdout(), out.stderr()] {
        assert!(!text.contains("good-token"));
    }
}

/// `config check` refuses an entry with both command and url, and a
/// server name holding `__`.
#[test]
fn config_check_names_a_bad_server_entry() {
    let ws = Workspace::new();
    ws.user_config(
        "[[mcp.servers]]\nname = \"both\"\ncommand = \"x\"\nurl = \"http://127.0.0.1:1/mcp\"\n",
    );
    let out = ws.run(&["config", "check"]);
    assert_ne!(out.code(), 0);
    let said = format!("{}{}", out.stdout(), out.stderr());
    assert!(said.contains("has both command and url"), "{said}");
    ws.user_config("[[mcp.servers]]\nname = \"a__b\"\ncommand = \"x\"\n");
    let out = ws.run(&["config", "check"]);
    assert_ne!(out.code(), 0);
    let said = format!("{}{}", out.stdout(), out.stderr());
    assert!(
        said.contains("\"a__b\" is not a valid server name"),
        "{said}"
    );
}
