//! The real `etch` binary doing what a new user does in the first hour
//! (issue 10): resuming a session against a local server, typing global
//! flags first, mistyping a subcommand, keeping `.etch/` out of git, working
//! from a subdirectory, piping output into `head`, piping odd input in, and
//! the small cuts around prompts, `show`, `--json` and `context dump`.

// Fixture helpers outside #[test] functions may panic on a broken setup.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::Read;
use std::process::{Command, Stdio};

use etch_test_support::{FakeServer, Reply, chat_text, responses_text};
use serde_json::Value;
use support::{Workspace, jsonl};

/// The id (file stem) of a session file.
fn id_of(path: &std::path::Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

/// The `session.started` data of a session file.
fn header(path: &std::path::Path) -> Value {
    jsonl(path)[0]["data"].clone()
}

/// The most serious first-hour bug: a session run against a local server
/// and resumed with the command etch itself prints went to api.openai.com
/// with the environment's real key. The endpoint is recorded (never a key),
/// resume goes back to it without sending the key, and a run that goes
/// elsewhere says so.
#[test]
fn resume_returns_to_the_recorded_endpoint() {
    let ws = Workspace::new();
    let local = FakeServer::start(vec![
        Reply::sse(chat_text("first")),
        Reply::sse(chat_text("second")),
    ])
    .unwrap();
    let other = FakeServer::start(vec![Reply::sse(chat_text("third"))]).unwrap();
    let local_url = format!("{}/v1", local.url());
    let other_url = format!("{}/v1", other.url());
    let first = ws.run(&["--provider", "openai", "--base-url", &local_url, "-p", "hi"]);
    assert_eq!(first.ok(), "first\n");
    let session = ws.only_session();
    assert_eq!(header(&session)["baseUrl"], local_url.as_str());
    let text = std::fs::read_to_string(&session).unwrap();
    assert!(!text.contains("sk-"), "{text}");

    let id = id_of(&session);
    let resumed = ws.run_env(
        &["resume", &id, "-p", "continue"],
        &[("OPENAI_API_KEY", "sk-real-key")],
    );
    assert_eq!(resumed.ok(), "second\n");
    assert_eq!(local.requests().len(), 2);
    assert_eq!(local.requests()[1].header("authorization"), None);
    assert!(!resumed.stderr().contains("note:"), "{}", resumed.stderr());

    let moved = ws.run(&["resume", &id, "--base-url", &other_url, "-p", "more"]);
    assert_eq!(moved.ok(), "third\n");
    assert!(
        moved.stderr().contains(&format!(
            "this session ran against {local_url}; this run uses {other_url} (--base-url)"
        )),
        "{}",
        moved.stderr()
    );
    assert_eq!(ws.session_files().len(), 1);
}

/// The API shape is part of the endpoint: a session run with the Responses
/// API is resumed with it, not with the configured default.
#[test]
fn resume_keeps_the_recorded_api() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(responses_text("one")),
        Reply::sse(responses_text("two")),
    ])
    .unwrap();
    let url = format!("{}/v1", server.url());
    let first = ws.run(&[
        "--provider",
        "openai",
        "--openai-api",
        "responses",
        "--base-url",
        &url,
        "-p",
        "hi",
    ]);
    assert_eq!(first.ok(), "one\n");
    let id = id_of(&ws.only_session());
    assert_eq!(ws.run(&["resume", &id, "-p", "again"]).ok(), "two\n");
    assert_eq!(server.requests()[1].path, "/v1/responses");
}

/// A configured `[openai] base_url` that differs from the session's
/// endpoint does not move the session; etch says which one it used.
#[test]
fn resume_prefers_the_session_endpoint_over_config() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("one")),
        Reply::sse(chat_text("two")),
    ])
    .unwrap();
    let url = format!("{}/v1", server.url());
    ws.run(&["--provider", "openai", "--base-url", &url, "-p", "hi"])
        .ok();
    ws.project_config("[openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n");
    // A project's endpoint applies only once trusted.
    ws.run(&["trust", "--yes"]).ok();
    let id = id_of(&ws.only_session());
    let out = ws.run(&["resume", &id, "-p", "again"]);
    assert_eq!(out.ok(), "two\n");
    assert!(
        out.stderr().contains(&format!(
            "resuming against the session's endpoint {url}, not [openai] base_url http://127.0.0.1:9/v1"
        )),
        "{}",
        out.stderr()
    );
}

/// `resume --last`, a positional prompt after the prefix, and run options
/// written before the subcommand all continue the one session; an option
/// given on both sides with different values is refused by name.
#[test]
fn resume_forms_people_type() {
    let ws = Workspace::new();
    ws.run(&["-p", "start"]).ok();
    let session = ws.only_session();
    let id = id_of(&session);
    assert_eq!(ws.run(&["resume", "--last", "-p", "again"]).ok(), "again\n");
    assert_eq!(
        ws.run(&["resume", &id, "positional", "words"]).ok(),
        "positional words\n"
    );
    assert_eq!(
        ws.run(&[
            "--provider",
            "echo",
            "--model",
            "m2",
            "resume",
            &id,
            "-p",
            "flags first"
        ])
        .ok(),
        "flags first\n"
    );
    assert_eq!(ws.run(&["--json", "resume", &id, "-p", "j"]).code(), 0);
    let users = jsonl(&session)
        .iter()
        .filter(|e| e["type"] == "message.user")
        .count();
    assert_eq!(users, 5);
    assert_eq!(ws.session_files().len(), 1);

    let clash = ws.run(&["--model", "a", "resume", &id, "--model", "b", "-p", "x"]);
    assert_eq!(clash.code(), 2);
    assert!(
        clash.stderr().contains("--model is given twice"),
        "{}",
        clash.stderr()
    );
    let nothing = ws.run(&["resume", "-p", "x"]);
    assert_eq!(nothing.code(), 2);
    assert!(nothing.stderr().contains("--last"), "{}", nothing.stderr());
    let compact = ws.run(&["--provider", "echo", "compact", "--session", &id]);
    assert_eq!(compact.code(), 0, "{}", compact.stderr());
    let wrong = ws.run(&["--skill", "x", "compact", "--session", &id]);
    assert_eq!(wrong.code(), 2);
    assert!(wrong.stderr().contains("--skill"), "{}", wrong.stderr());
}

/// A one-word prompt a small edit away from a subcommand is a usage error
/// with a suggestion and creates no session; `-p` sends it as asked.
#[test]
fn mistyped_subcommands_are_not_prompts() {
    let ws = Workspace::new();
    for (typed, meant) in [
        ("sesions", "sessions"),
        ("stauts", "status"),
        ("shwo", "show"),
    ] {
        let out = ws.run(&[typed]);
        assert_eq!(out.code(), 2, "{typed}");
        assert!(
            out.stderr().contains(&format!("did you mean `{meant}`?")),
            "{}",
            out.stderr()
        );
    }
    assert!(ws.session_files().is_empty());
    assert_eq!(ws.run(&["-p", "sesions"]).ok(), "sesions\n");
    assert_eq!(ws.run(&["hello"]).ok(), "hello\n");
}

/// Runs `git` in `dir` and returns its stdout.
fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `.etch/` made by the user first (a config file, as the README suggests)
/// still gets etch's `.gitignore` on the first run, and that file hides
/// only etch's own state: git sees the config and skills, never the
/// sessions or a context dump. Running from a subdirectory of the
/// repository keeps everything at the repository root.
#[test]
fn etch_state_stays_out_of_git_and_at_the_root() {
    let ws = Workspace::new();
    let root = ws.path();
    git(root, &["init", "-q"]);
    std::fs::create_dir_all(root.join(".etch/skills/rel")).unwrap();
    std::fs::write(
        root.join(".etch/config.toml"),
        "[session]\nmax_tool_rounds = 9\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".etch/skills/rel/SKILL.md"),
        "---\nname: rel\ndescription: Release steps.\n---\nDo it.\n",
    )
    .unwrap();
    let deep = root.join("src/deep");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(root.join("src/deep/code.rs"), "fn main() {}\n").unwrap();
    let out = support::Run(
        ws.command(&["-p", "hi"])
            .current_dir(&deep)
            .output()
            .unwrap(),
    );
    assert_eq!(out.ok(), "hi\n");
    assert!(!deep.join(".etch").exists());
    assert_eq!(ws.session_files().len(), 1);
    let dump = support::Run(
        ws.command(&["context", "dump"])
            .current_dir(&deep)
            .output()
            .unwrap(),
    );
    assert_eq!(dump.code(), 0, "{}", dump.stderr());
    let untracked = git(root, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(untracked.contains(".etch/config.toml"), "{untracked}");
    assert!(
        untracked.contains(".etch/skills/rel/SKILL.md"),
        "{untracked}"
    );
    assert!(untracked.contains(".etch/.gitignore"), "{untracked}");
    assert!(!untracked.contains("sessions"), "{untracked}");
    assert!(!untracked.contains("context-dump"), "{untracked}");
    let listed = ws.run(&["sessions"]).ok();
    assert!(listed.contains(&id_of(&ws.only_session())), "{listed}");
}

/// `etch show ID | head -1`: the reader goes away after one line; etch
/// ends quietly with status 0 instead of panicking on the broken pipe.
#[test]
fn show_into_a_closed_pipe_is_quiet() {
    let ws = Workspace::new();
    let long = "line of the transcript\n".repeat(20_000);
    ws.run_with_stdin(&["-p", "long"], &long).ok();
    let id = id_of(&ws.only_session());
    let mut child = ws
        .command(&["show", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    let n = stdout.read(&mut first).unwrap();
    assert!(n > 0);
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `find` prints paths that `read` opens from the working directory, and
/// both search tools say what they skipped, even when nothing matched.
#[test]
fn tool_paths_open_and_skips_are_named() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join("src/auth")).unwrap();
    std::fs::write(ws.path().join("src/auth/jwt.rs"), "// jwt\n").unwrap();
    std::fs::create_dir_all(ws.path().join("vendor/lib")).unwrap();
    std::fs::write(ws.path().join("vendor/lib/needle.txt"), "needle\n").unwrap();
    let found = ws.run(&["tool", "find", "jwt", "src"]).ok();
    assert_eq!(found, "src/auth/jwt.rs\n");
    let read = ws.run(&["tool", "read", found.trim()]).ok();
    assert!(read.contains("// jwt"), "{read}");
    let grep = ws.run(&["tool", "grep", "needle", "."]).ok();
    assert_eq!(
        grep,
        "No matches found\n\n[Skipped internal directories: vendor]\n\n\
         [Searched the contents of the files under . for the literal text \"needle\". grep looks inside files: to find a file by its name use find, to see a file use read.]\n"
    );
    let grep = ws.run(&["tool", "grep", "needle", "vendor"]).ok();
    assert_eq!(
        grep,
        "vendor/lib/needle.txt:1:needle\n\n[1 matching line in 1 file.]\n"
    );
}

/// Base URLs are checked before anything runs (usage error, exit 2, no
/// session); https against a plain HTTP server fails at once with a hint
/// rather than being retried; a retried failure prints one line per retry.
#[test]
fn bad_urls_fail_fast_and_retries_are_announced() {
    let ws = Workspace::new();
    let out = ws.run(&[
        "--provider",
        "openai",
        "--base-url",
        "127.0.0.1:8080/v1",
        "-p",
        "x",
    ]);
    assert_eq!(out.code(), 2);
    assert!(out.stderr().contains("has no scheme"), "{}", out.stderr());
    let out = ws.run(&[
        "--provider",
        "anthropic",
        "--api-key",
        "k",
        "--base-url",
        "ftp://h",
        "-p",
        "x",
    ]);
    assert_eq!(out.code(), 2, "{}", out.stderr());
    assert!(ws.session_files().is_empty());

    let server = FakeServer::start(vec![Reply::sse(chat_text("never"))]).unwrap();
    let https = server.url().replace("http://", "https://");
    let out = ws.run(&["--provider", "openai", "--base-url", &https, "-p", "x"]);
    assert_eq!(out.code(), 1);
    assert!(
        out.stderr().contains("does not speak TLS"),
        "{}",
        out.stderr()
    );
    assert!(!out.stderr().contains("retrying"), "{}", out.stderr());

    let flaky = FakeServer::start(vec![
        Reply::text(503, "busy"),
        Reply::sse(chat_text("after a retry")),
    ])
    .unwrap();
    let url = format!("{}/v1", flaky.url());
    let out = ws.run(&["--provider", "openai", "--base-url", &url, "-p", "x"]);
    assert_eq!(out.ok(), "after a retry\n");
    let stderr = out.stderr();
    let retries: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("retrying in"))
        .collect();
    assert_eq!(retries.len(), 1, "{}", out.stderr());
    assert!(
        retries[0].contains("503") && retries[0].contains("retry 1 of 3"),
        "{}",
        retries[0]
    );
}

/// Piped input that cannot be a prompt is refused before a session starts:
/// binary data, and text larger than the context etch keeps.
#[test]
fn binary_and_huge_stdin_are_refused() {
    let ws = Workspace::new();
    let out = ws.run_with_stdin(&["-p", "what is this"], "PK\u{3}\u{4}\0\0binary");
    assert_eq!(out.code(), 2);
    assert!(out.stderr().contains("looks binary"), "{}", out.stderr());
    ws.project_config("[context]\nauto_compact_threshold_tokens = 1000\n");
    let out = ws.run_with_stdin(&["-p", "summarize"], &"log line\n".repeat(2000));
    assert_eq!(out.code(), 2);
    assert!(
        out.stderr()
            .contains("piped input is too large: 18000 bytes"),
        "{}",
        out.stderr()
    );
    assert!(ws.session_files().is_empty());
}

/// The small cuts: `-p one two` keeps both words; `show` defaults to the
/// newest session; a session file deleted by hand is reported once;
/// `--json` prints a result line for setup errors; `context dump -` writes
/// to stdout; titles are the user's words, not a skill block or a fence.
#[test]
fn small_cuts() {
    let ws = Workspace::new();
    assert_eq!(ws.run(&["-p", "one", "two"]).ok(), "one two\n");
    let show = ws.run(&["show"]).ok();
    assert!(show.contains("one two"), "{show}");

    let bad = ws.run(&["--json", "--provider", "bogus", "-p", "x"]);
    assert_eq!(bad.code(), 2);
    let line: Value = serde_json::from_str(bad.stdout().trim()).unwrap();
    assert_eq!(line["type"], "result");
    assert_eq!(line["ok"], false);
    assert!(line["sessionId"].is_null());
    assert!(line["error"].as_str().unwrap().contains("unknown provider"));

    let dump = ws.run(&["context", "dump", "-"]).ok();
    assert!(dump.contains("=== conversation ==="), "{dump}");
    assert!(!ws.path().join("-").exists());

    std::fs::create_dir_all(ws.path().join(".etch/skills/rel")).unwrap();
    std::fs::write(
        ws.path().join(".etch/skills/rel/SKILL.md"),
        "---\nname: rel\ndescription: Release steps.\n---\nDo it.\n",
    )
    .unwrap();
    ws.run(&["--skill", "rel", "-p", "cut 1.2"]).ok();
    ws.run_with_stdin(&[], "panic at line 3\nmore\n").ok();
    let titles: Vec<String> = ws
        .run(&["sessions", "--json"])
        .ok()
        .parse::<Value>()
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["title"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(titles[0], "panic at line 3");
    assert_eq!(titles[1], "cut 1.2");

    let newest = ws.session_files().last().unwrap().clone();
    std::fs::remove_file(&newest).unwrap();
    let gone = ws.run(&["show", &id_of(&newest)]);
    assert_eq!(gone.code(), 1);
    assert_eq!(
        gone.stderr().matches("No such file or directory").count(),
        1,
        "{}",
        gone.stderr()
    );
}

/// An endless or enormous producer is cut off: etch reads stdin only up to
/// a bound and refuses, instead of reading it all into memory first.
#[test]
fn endless_stdin_is_refused_without_reading_it_all() {
    use std::io::Write;
    let ws = Workspace::new();
    let mut child = ws
        .command(&["-p", "x"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let chunk = vec![b'y'; 1 << 16];
    // Far more than the bound; the writes fail once etch stops reading.
    for _ in 0..64 {
        if stdin.write_all(&chunk).is_err() {
            break;
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("piped input is too large: more than"),
        "{stderr}"
    );
    assert!(ws.session_files().is_empty());
}

/// A ChatGPT/Codex token never goes to a local server named with
/// --base-url (the README's local-server command, for a logged-in user),
/// and the requested Chat Completions API is kept. A project config may
/// not send the user's key elsewhere with `auth = "api-key"`: it is
/// ignored with a warning. The user's own config may.
#[test]
fn credentials_stay_with_their_service() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("local")),
        Reply::sse(chat_text("project")),
        Reply::sse(chat_text("user")),
    ])
    .unwrap();
    let url = format!("{}/v1", server.url());
    let token = [("CODEX_ACCESS_TOKEN", "tok-secret")];
    let out = ws.run_env(
        &["--provider", "openai", "--base-url", &url, "-p", "hi"],
        &token,
    );
    assert_eq!(out.ok(), "local\n");
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
    assert_eq!(server.requests()[0].header("authorization"), None);

    let key = [("OPENAI_API_KEY", "sk-real-secret")];
    let project = format!("[provider]\nname = \"openai\"\n[openai]\nbase_url = \"{url}\"\n");
    ws.project_config(&format!("{project}auth = \"api-key\"\n"));
    // Trusted, the project's endpoint applies; its auth never does.
    ws.run(&["trust", "--yes"]).ok();
    let out = ws.run_env(&["-p", "hi"], &key);
    assert_eq!(out.ok(), "project\n");
    assert_eq!(server.requests()[1].header("authorization"), None);
    assert!(
        out.stderr()
            .contains("a project file may not send your credentials"),
        "{}",
        out.stderr()
    );

    ws.project_config(&project);
    ws.run(&["trust", "--yes"]).ok();
    ws.user_config("[openai]\nauth = \"api-key\"\n");
    let out = ws.run_env(&["-p", "hi"], &key);
    assert_eq!(out.ok(), "user\n");
    assert_eq!(
        server.requests()[2].header("authorization"),
        Some("Bearer sk-real-secret")
    );
}

/// A home directory kept in git (dotfiles) is not a project root: a loose
/// directory under it keeps its own `.etch`, not `~/.etch`.
#[test]
fn a_home_in_git_is_not_the_project() {
    let ws = Workspace::new();
    git(ws.home.path(), &["init", "-q"]);
    let loose = ws.home.path().join("scratch/foo");
    std::fs::create_dir_all(&loose).unwrap();
    let out = support::Run(
        ws.command(&["-p", "hi"])
            .current_dir(&loose)
            .output()
            .unwrap(),
    );
    assert_eq!(out.ok(), "hi\n");
    assert!(loose.join(".etch/sessions").is_dir());
    assert!(!ws.home.path().join(".etch/sessions").exists());
}

/// `resume --last ID` is ambiguous (the newest session, or ID?): refused,
/// saying how to say either.
#[test]
fn resume_last_with_a_session_id_is_refused() {
    let ws = Workspace::new();
    ws.run(&["-p", "one"]).ok();
    let id = id_of(&ws.only_session());
    let out = ws.run(&["resume", "--last", &id, "-p", "more"]);
    assert_eq!(out.code(), 2);
    assert!(out.stderr().contains("drop --last"), "{}", out.stderr());
}

/// Switching model on resume is recorded (`model.change`, and
/// `thinking_level.change` for a new effort), and a later plain resume
/// goes on with the switched model rather than the one the session
/// started with; `show` says where it switched.
#[test]
fn model_switches_are_recorded_and_honoured() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("one")),
        Reply::sse(chat_text("two")),
        Reply::sse(chat_text("three")),
    ])
    .unwrap();
    let url = format!("{}/v1", server.url());
    let base = ["--provider", "openai", "--base-url", url.as_str()];
    let mut first = base.to_vec();
    first.extend(["--model", "m1", "-p", "hi"]);
    assert_eq!(ws.run(&first).ok(), "one\n");
    let session = ws.only_session();
    let id = id_of(&session);
    let switched = ws.run(&[
        "resume",
        &id,
        "--model",
        "m2",
        "--reasoning-effort",
        "high",
        "-p",
        "again",
    ]);
    assert_eq!(switched.ok(), "two\n");
    assert_eq!(ws.run(&["resume", &id, "-p", "more"]).ok(), "three\n");
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(models, ["m1", "m2", "m2"]);
    let events = jsonl(&session);
    let changes: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "model.change" || e["type"] == "thinking_level.change")
        .collect();
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert_eq!(changes[0]["data"]["model"], "m2");
    assert_eq!(changes[0]["data"]["baseUrl"], url.as_str());
    assert_eq!(changes[1]["data"]["level"], "high");
    let shown = ws.run(&["show", &id]).ok();
    assert!(shown.contains("(model changed to openai/m2 at "), "{shown}");
    assert!(
        shown.contains("(reasoning effort changed to high)"),
        "{shown}"
    );
}

/// With sessions kept elsewhere (`--session-dir`), a run still keeps the
/// project's existing `.etch/` (where tool output spills) out of git.
#[test]
fn runs_keep_etch_out_of_git_with_sessions_elsewhere() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".etch")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = elsewhere.path().to_string_lossy().into_owned();
    ws.run(&["--session-dir", &dir, "-p", "hi"]).ok();
    let ignore = std::fs::read_to_string(ws.path().join(".etch/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "tmp/"), "{ignore}");
}
