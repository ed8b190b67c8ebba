//! Test support: run the real `etch` binary in a throwaway workspace.
//!
//! Every run gets a fresh temp directory as its working directory and as
//! `HOME`, stdin from `/dev/null` unless a test pipes something, and an
//! environment without model credentials, so tests are hermetic and leave
//! nothing behind.

#![allow(dead_code, clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

pub mod browser;
pub mod http;
pub mod rpc;
pub mod serve;
pub mod tmux;

/// Credential variables removed from every child environment (and
/// etch serve's token, which `etch chat --attach` reads).
const CREDENTIALS: [&str; 5] = [
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "CODEX_ACCESS_TOKEN",
    "ANTHROPIC_API_KEY",
    "ETCH_SERVE_TOKEN",
];

/// A temp workspace with its own HOME.
pub struct Workspace {
    /// The project directory (cwd of runs).
    pub dir: tempfile::TempDir,
    /// HOME of runs.
    pub home: tempfile::TempDir,
}

/// Makes sure the system programs the tests run are there: tmux (the
/// chat's tests drive etch in it) and procps's `kill`. A fresh machine
/// may lack them; as root with apt, they are installed once (under a
/// lock, as test binaries run at the same time), as `.ci/run` does;
/// anywhere else a missing one fails the test saying what to install.
fn ensure_system_programs() {
    static CHECKED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    CHECKED.get_or_init(|| {
        let have = |program: &str| {
            Command::new("sh")
                .args(["-c", &format!("command -v {program} >/dev/null")])
                .status()
                .is_ok_and(|s| s.success())
        };
        let missing: Vec<&str> = [
            ("tmux", "tmux"),
            ("kill", "procps"),
            ("chromium", "chromium"),
            ("chromedriver", "chromium-driver"),
        ]
            .into_iter()
            .filter(|(program, _)| {
                // `kill` must be a program, not only the shell's builtin.
                if *program == "kill" {
                    !Path::new("/bin/kill").exists() && !Path::new("/usr/bin/kill").exists()
                } else {
                    !have(program)
                }
            })
            .map(|(_, package)| package)
            .collect();
        if missing.is_empty() {
            return;
        }
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        assert!(
            root && have("apt-get"),
            "the tests need {}: install them (apt-get install {})",
            missing.join(" and "),
            missing.join(" ")
        );
        let script = format!(
            "flock /tmp/etch-tests-apt.lock sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq {}' >/dev/null",
            missing.join(" ")
        );
        let installed = Command::new("sh")
            .args(["-c", &script])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            installed,
            "installing {} with apt-get failed; install them by hand",
            missing.join(" ")
        );
    });
}

impl Workspace {
    /// Creates an empty workspace (after making sure the system programs
    /// the tests need are there).
    pub fn new() -> Self {
        ensure_system_programs();
        Self {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// The project directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A command running etch in the workspace: this build's binary, or
    /// the one `ETCH_TEST_BINARY` names (to measure another build with the
    /// same tests, as the real-model tasks do before and after a change).
    pub fn command(&self, args: &[&str]) -> Command {
        let binary = std::env::var_os("ETCH_TEST_BINARY")
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_etch").into());
        let mut cmd = Command::new(binary);
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.home.path())
            .env_remove("ETCH_ECHO_DELAY_MS")
            .env_remove("ETCH_IDLE_TIMEOUT_SECS")
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("http_proxy")
            .env_remove("https_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("ETCH_RETRY_BASE_DELAY_MS", "10")
            .stdin(Stdio::null());
        for var in CREDENTIALS {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Runs etch to completion.
    pub fn run(&self, args: &[&str]) -> Run {
        Run(self.command(args).output().unwrap())
    }

    /// Runs etch with `input` piped to stdin.
    pub fn run_with_stdin(&self, args: &[&str], input: &str) -> Run {
        let mut child: Child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        Run(child.wait_with_output().unwrap())
    }

    /// The default session directory.
    pub fn sessions_dir(&self) -> PathBuf {
        self.path().join(".etch/sessions")
    }

    /// Paths of all session files, sorted (oldest first).
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.sessions_dir())
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.extension().is_some_and(|e| e == "jsonl")
                            && p.file_name().is_some_and(|n| n != "index.jsonl")
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
    }

    /// The only session file; fails if there is not exactly one.
    pub fn only_session(&self) -> PathBuf {
        let files = self.session_files();
        assert_eq!(files.len(), 1, "expected one session, found {files:?}");
        files[0].clone()
    }
}

/// The output of one run.
pub struct Run(pub Output);

impl Run {
    /// Standard output as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }

    /// Standard error as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }

    /// Exit code (-1 when killed by a signal).
    pub fn code(&self) -> i32 {
        self.0.status.code().unwrap_or(-1)
    }

    /// Asserts success and returns stdout.
    pub fn ok(&self) -> String {
        assert_eq!(self.code(), 0, "stderr: {}", self.stderr());
        self.stdout()
    }
}

/// Parses every non-blank line of a JSONL file.
pub fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `type` of each event.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

/// A server whose every answer (the first try and three retries) starts a
/// stream and then stays silent for 30 s, to exercise the idle timeout.
pub fn stalling_server() -> etch_test_support::FakeServer {
    let stall = || etch_test_support::Reply::Sse {
        events: Vec::new(),
        gap: std::time::Duration::ZERO,
        end: etch_test_support::End::Stall(std::time::Duration::from_secs(30)),
    };
    etch_test_support::FakeServer::start(vec![stall(), stall(), stall(), stall()]).unwrap()
}

impl Workspace {
    /// Runs etch with extra environment variables (credentials, knobs).
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(args);
        for (key, value) in env {
            cmd.env(key, value);
        }
        Run(cmd.output().unwrap())
    }

    /// Writes the project's `.etch/config.toml`.
    pub fn project_config(&self, text: &str) {
        std::fs::create_dir_all(self.path().join(".etch")).unwrap();
        std::fs::write(self.path().join(".etch/config.toml"), text).unwrap();
    }

    /// Writes the user's `~/.etch/config.toml` (in the workspace's HOME).
    pub fn user_config(&self, text: &str) {
        std::fs::create_dir_all(self.home.path().join(".etch")).unwrap();
        std::fs::write(self.home.path().join(".etch/config.toml"), text).unwrap();
    }
}

impl Workspace {
    /// Runs etch with the OpenAI provider against `server` (key `k`,
    /// model `m1`), then `args`, with `env` set.
    pub fn run_model(
        &self,
        server: &etch_test_support::FakeServer,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Run {
        let mut all = model_args(server);
        all.extend(args.iter().map(|a| (*a).to_owned()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        self.run_env(&all, env)
    }
}

/// An answer of `text` whose first chunk is sent at once and the rest
/// only once the file `gate` exists: a run held open until the test has
/// done what must happen while it streams.
pub fn held(text: &str, gate: &Path) -> etch_test_support::Reply {
    let mut events = etch_test_support::chat_text(text);
    let rest = events.split_off(1);
    etch_test_support::Reply::Gated {
        events,
        gate: gate.to_path_buf(),
        rest,
    }
}

/// The flags that point etch at `server` in the OpenAI shape, with key
/// `k` and model `m1`.
pub fn model_args(server: &etch_test_support::FakeServer) -> Vec<String> {
    let base = format!("{}/v1", server.url());
    [
        "--provider",
        "openai",
        "--base-url",
        &base,
        "--api-key",
        "k",
        "--model",
        "m1",
    ]
    .map(str::to_owned)
    .to_vec()
}

impl Workspace {
    /// The text of the only session's result for tool call `id`.
    pub fn result_text(&self, id: &str) -> String {
        let result = jsonl(&self.only_session())
            .into_iter()
            .find(|e| e["type"] == "message.tool" && e["data"]["toolCallId"] == id);
        assert!(result.is_some(), "no result for {id}");
        result.unwrap()["data"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// Whether process `pid` is gone (or a zombie) within a few seconds: a
/// killed process's orphaned children are reaped by init a moment later.
pub fn process_gone(pid: &str) -> bool {
    let stat = || std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let now = stat();
        if now.is_empty() || now.contains(") Z ") {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Asserts that every tool call in the session at `path` has a result.
pub fn assert_whole(path: &std::path::Path) {
    let events = jsonl(path);
    let calls = events
        .iter()
        .filter(|e| e["type"] == "message.assistant")
        .flat_map(|e| e["data"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "tool_call")
        .count();
    let results = events
        .iter()
        .filter(|e| e["type"] == "message.tool")
        .count();
    assert_eq!(calls, results, "{}", path.display());
}

/// Waits until `ready` holds, at most 20 s: a barrier on a side effect
/// of the run (a file its shell wrote), never a guess at a duration.
pub fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

impl Workspace {
    /// Runs etch with `args` on a pseudo-terminal (`script`, from
    /// util-linux), as a person at a terminal would, and returns every
    /// byte it wrote there (stdout and stderr together) and whether it
    /// exited 0.
    pub fn run_on_terminal(&self, args: &[String]) -> (String, bool) {
        let binary = self
            .command(&[])
            .get_program()
            .to_string_lossy()
            .into_owned();
        let command = std::iter::once(binary)
            .chain(args.iter().cloned())
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let mut script = Command::new("script");
        script
            .args(["-qec", &command, "/dev/null"])
            .current_dir(self.path())
            .env("HOME", self.home.path())
            .env("NO_PROXY", "127.0.0.1,localhost")
            .stdin(Stdio::null());
        for var in CREDENTIALS {
            script.env_remove(var);
        }
        let out = script.output().unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            out.status.success(),
        )
    }
}

/// Where the project context the loop puts before a conversation's first
/// message ends (instructions, skills, then the environment, whose
/// `Current date:` line is its last), if `text` starts with one: the
/// byte index after its blank line.
fn context_end(text: &str) -> Option<usize> {
    let date = text.find("Current date: ")?;
    let blank = text[date..].find("\n\n")?;
    Some(date + blank + 2)
}

/// A first user message's text without the project context before it.
pub fn without_context(text: &str) -> &str {
    context_end(text).map_or(text, |end| &text[end..])
}

/// The project context at the start of a first user message (without
/// its closing blank line), or empty.
pub fn context_of(text: &str) -> &str {
    context_end(text).map_or("", |end| &text[..end - 2])
}

/// The whole prompt a recorded Chat Completions request gave the model:
/// the system message, then the project context of the first user
/// message, joined as the G22 prompt joins its layers.
pub fn whole_prompt(request: &Value) -> String {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    let first = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    match context_of(first) {
        "" => system.to_owned(),
        context => format!("{system}\n\n{context}"),
    }
}

/// Pi (npm's `@mariozechner/pi-coding-agent`, pinned in
/// tests/pi-client) with the scripts that drive it, installed on first
/// use into target/pi-client (a no-op once .ci/run installed it).
pub fn pi_client_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = root.join("../../target/pi-client");
        let status = Command::new("sh")
            .arg(root.join("tests/pi-client/install.sh"))
            .arg(&dir)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "installing @mariozechner/pi-coding-agent from the npm registry failed"
        );
        dir
    })
}
