//! End-to-end tests of the real `etch` binary against a real model on a
//! real llama.cpp server (issue 6): Qwen2.5-Coder-1.5B-Instruct served by
//! `llama-server` through `scripts/real-model.sh`.
//!
//! They are `#[ignore]`d, so a plain `cargo test` never pays for the
//! model and reports them as ignored, never as passed; `scripts/test.sh`
//! (the README's test command, which `.ci/run` runs) sets the model up
//! with `scripts/real-model.sh setup`, sets `ETCH_E2E_REAL_MODEL=1` and
//! runs them with `--include-ignored`. Run without that setup, they fail
//! saying what to do. Each agent
//! task runs several times and must pass a minimum number of runs; the pass
//! rate, model requests and wall time per task are printed, because a small
//! model is not deterministic and a flaky task is a finding, not noise.
//! Assertions check outcomes (the word reported, the file fixed on disk),
//! never wording.
//!
//! Each test starts its own server, which needs the CPU to itself: the
//! tests of this binary take one lock (`cargo test` runs them on threads of
//! one process) and nextest runs them one at a time
//! (`.config/nextest.toml`). Under `cargo test` no other test binary runs
//! meanwhile, so the server gets two threads (`ETCH_REAL_MODEL_THREADS`
//! overrides), which about doubles prompt and generation speed on a
//! two-core machine.

// Fixture helpers outside #[test] functions may panic on a broken setup.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[path = "real_model/lost.rs"]
mod lost;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Workspace, jsonl};

/// Runs per agent task.
const RUNS: usize = 6;

/// Runs that must pass: two thirds. With this 1.5B model the grep task
/// passes about nine runs in ten; at 4 of 5 a whole suite would still fail
/// about one time in twenty on chance alone, at 4 of 6 about one in a
/// hundred, while a task that really regresses (say to half its runs)
/// fails it.
const REQUIRED: usize = 4;

/// Server settings of the harness: a cap on generated tokens per request
/// (etch sends none, and at the server's default temperature of 0.8 this
/// model sometimes rambles until the 8192-token context is full, several
/// minutes at a time) and a low sampling temperature, as one would
/// configure a small model for coding.
const SERVER_FLAGS: [&str; 4] = ["--n-predict", "512", "--temp", "0.2"];

/// Held by the test that has the model server (and the CPU).
static SERVER_SLOT: Mutex<()> = Mutex::new(());

/// The server slot (held for the whole test); a run without the model set
/// up fails here, saying what to do.
fn enabled(test: &str) -> MutexGuard<'static, ()> {
    let on = std::env::var("ETCH_E2E_REAL_MODEL").is_ok_and(|v| v == "1");
    assert!(
        on,
        "{test} needs the real model: run scripts/real-model.sh setup and set \
         ETCH_E2E_REAL_MODEL=1 (scripts/test.sh does both)"
    );
    // A test that failed while holding the slot leaves nothing running.
    SERVER_SLOT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Server threads: `ETCH_REAL_MODEL_THREADS`, else two (or one on a
/// one-core machine).
fn server_threads() -> String {
    std::env::var("ETCH_REAL_MODEL_THREADS").unwrap_or_else(|_| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get().min(2))
            .to_string()
    })
}

/// A free loopback port.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `llama-server`, killed on drop.
struct Server {
    /// The server process (the script execs it).
    child: Child,
    /// Its port.
    port: u16,
}

impl Server {
    /// Starts the server on a free port with `extra` llama-server flags and
    /// waits until `/health` answers 200.
    fn start(ctx: Option<u32>, extra: &[&str]) -> Self {
        let port = free_port();
        Self::start_on(port, ctx, extra)
    }

    /// Starts the server on `port`.
    fn start_on(port: u16, ctx: Option<u32>, extra: &[&str]) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/real-model.sh");
        let mut cmd = Command::new("bash");
        cmd.arg(script)
            .arg("serve")
            .arg(port.to_string())
            .args(SERVER_FLAGS)
            .args(extra)
            .env("ETCH_REAL_MODEL_THREADS", server_threads())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(ctx) = ctx {
            cmd.env("ETCH_REAL_MODEL_CTX", ctx.to_string());
        }
        let mut child = cmd
            .spawn()
            .expect("cannot start scripts/real-model.sh serve");
        let deadline = Instant::now() + Duration::from_secs(180);
        while !healthy(port) {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "the model server exited with {status} before it was ready; run scripts/real-model.sh setup"
                );
            }
            assert!(
                Instant::now() < deadline,
                "the model server was not ready within 180 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Self { child, port }
    }

    /// The OpenAI-compatible base URL.
    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether `GET /health` answers 200.
fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request =
        format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200")
}

/// Arguments that point etch at `url` with a model name (and no key: a
/// local server gets none without being told), and a
/// round bound suited to these small tasks: a run where the model keeps
/// repeating a call fails in minutes, not after the default 32 rounds.
fn provider_args(url: &str) -> Vec<String> {
    provider_args_with(url, 8)
}

/// [`provider_args`] with another round bound.
fn provider_args_with(url: &str, rounds: u32) -> Vec<String> {
    [
        "--provider",
        "openai",
        "--base-url",
        url,
        "--model",
        "qwen2.5-coder-1.5b-instruct",
        "--max-tool-rounds",
    ]
    .map(str::to_owned)
    .into_iter()
    .chain([rounds.to_string()])
    .collect()
}

/// One run's outcome.
struct Outcome {
    /// Whether the task's check held.
    passed: bool,
    /// Model requests the run made (model.metrics events of its session).
    requests: usize,
    /// Wall time.
    elapsed: Duration,
    /// What to show when it failed.
    detail: String,
}

/// Runs etch once in `ws` with `args` after the provider flags; returns the
/// output and the requests its newest session made.
fn etch(ws: &Workspace, server: &Server, args: &[&str]) -> (support::Run, usize, Duration) {
    etch_with(ws, server, 8, args)
}

/// [`etch`] with another round bound.
fn etch_with(
    ws: &Workspace,
    server: &Server,
    rounds: u32,
    args: &[&str],
) -> (support::Run, usize, Duration) {
    let mut all = provider_args_with(&server.base_url(), rounds);
    all.extend(args.iter().map(|a| (*a).to_owned()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let started = Instant::now();
    let run = ws.run(&refs);
    let elapsed = started.elapsed();
    let requests = ws.session_files().last().map_or(0, |path| {
        jsonl(path)
            .iter()
            .filter(|e| e["type"] == "model.metrics")
            .count()
    });
    (run, requests, elapsed)
}

/// Runs `task` [`RUNS`] times, prints its pass rate, requests and time per
/// run, and returns a failure line if fewer than [`REQUIRED`] passed.
fn measure(name: &str, task: impl FnMut(usize) -> Outcome) -> Option<String> {
    measure_runs(name, RUNS, REQUIRED, task)
}

/// Runs `task` `runs` times, prints its pass rate, requests and time per
/// run, and returns a failure line if fewer than `required` passed.
fn measure_runs(
    name: &str,
    runs: usize,
    required: usize,
    mut task: impl FnMut(usize) -> Outcome,
) -> Option<String> {
    let mut passed = 0;
    let mut requests = 0;
    let mut elapsed = Duration::ZERO;
    let mut details = Vec::new();
    for run in 0..runs {
        let outcome = task(run);
        requests += outcome.requests;
        elapsed += outcome.elapsed;
        if outcome.passed {
            passed += 1;
        } else {
            details.push(format!("run {}: {}", run + 1, outcome.detail));
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let per_run = |n: usize| n as f64 / runs as f64;
    let line = format!(
        "real-model task {name}: {passed}/{runs} passed, {:.1} model requests and {:.1} s per run",
        per_run(requests),
        elapsed.as_secs_f64() / f64::from(u32::try_from(runs).unwrap_or(1))
    );
    report(&line);
    for detail in &details {
        report(&format!("  {detail}"));
    }
    (passed < required).then(|| format!("{line}; failures: {}", details.join(" | ")))
}

/// Prints a report line on the process's stderr, past the test harness's
/// output capture (which only takes `eprintln!`), so that `cargo test`
/// shows pass rates and times of passing runs too: they are the finding.
fn report(line: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}

/// The last stderr line of a failed run, to say why it failed.
fn last_error(run: &support::Run) -> String {
    if run.code() == 0 {
        return String::new();
    }
    let stderr = run.stderr();
    let line = stderr.lines().last().unwrap_or_default();
    format!(", stderr {line:?}")
}

/// Whether `text` mentions `word`, ignoring case.
fn mentions(text: &str, word: &str) -> bool {
    text.to_lowercase().contains(&word.to_lowercase())
}

/// A workspace whose src holds three files, `sum` defined in
/// src/maths.rs and called from src/main.rs: the "which file defines
/// it" tasks.
fn sum_workspace() -> Workspace {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(
        ws.path().join("src/main.rs"),
        "fn main() {\n    let total = sum(&[1, 2]);\n    println!(\"{total}\");\n}\n",
    )
    .unwrap();
    std::fs::write(
        ws.path().join("src/util.rs"),
        "pub fn helper() -> u32 {\n    7\n}\n",
    )
    .unwrap();
    std::fs::write(
        ws.path().join("src/maths.rs"),
        "pub fn sum(values: &[u32]) -> u32 {\n    values.iter().sum()\n}\n",
    )
    .unwrap();
    ws
}

/// The five agent tasks of issue 6, each run [`RUNS`] times against one
/// server; fails listing every task below its required pass rate.
#[test]
#[ignore = "needs the real model: scripts/test.sh sets it up and runs it"]
fn agent_tasks_pass_at_the_required_rate() {
    let _slot = enabled("agent_tasks_pass_at_the_required_rate");
    let server = Server::start(None, &[]);
    let mut failures = Vec::new();

    // read: report the word in a file.
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join("notes")).unwrap();
    std::fs::write(ws.path().join("notes/word.txt"), "pineapple\n").unwrap();
    failures.extend(measure("read", |_| {
        let (run, requests, elapsed) = etch(
            &ws,
            &server,
            &[
                "--tools",
                "read",
                "-p",
                "What is the single word in notes/word.txt?",
            ],
        );
        let out = run.stdout();
        Outcome {
            passed: run.code() == 0 && mentions(&out, "pineapple"),
            requests,
            elapsed,
            detail: format!("exit {}, answer {out:?}{}", run.code(), last_error(&run)),
        }
    }));

    // grep: find which file defines a function.
    let ws = sum_workspace();
    failures.extend(measure("grep", |_| {
        let (run, requests, elapsed) = etch(
            &ws,
            &server,
            &[
                "--tools",
                "grep",
                "-p",
                "Which file in src defines the function `sum`? Search with grep for `fn sum`, then answer with the file path.",
            ],
        );
        let out = run.stdout();
        Outcome {
            passed: run.code() == 0 && mentions(&out, "maths.rs"),
            requests,
            elapsed,
            detail: format!("exit {}, answer {out:?}{}", run.code(), last_error(&run)),
        }
    }));

    // edit: fix a one-line typo; the file on disk is what counts.
    let ws = Workspace::new();
    let greeting = ws.path().join("greeting.txt");
    failures.extend(measure("edit", |_| {
        std::fs::write(&greeting, "Hello, wrold!\n").unwrap();
        let (run, requests, elapsed) = etch(
            &ws,
            &server,
            &[
                "--tools",
                "read,edit",
                "-p",
                "greeting.txt contains the typo \"wrold\". Fix it to \"world\" with the edit tool.",
            ],
        );
        let on_disk = std::fs::read_to_string(&greeting).unwrap_or_default();
        Outcome {
            passed: on_disk == "Hello, world!\n",
            requests,
            elapsed,
            detail: format!("exit {}, file {on_disk:?}", run.code()),
        }
    }));

    // bash: run a command and report its output.
    let ws = Workspace::new();
    let numbers: String = (1..=37).map(|n| format!("{n}\n")).collect();
    std::fs::write(ws.path().join("numbers.txt"), numbers).unwrap();
    failures.extend(measure("bash", |_| {
        let (run, requests, elapsed) = etch(
            &ws,
            &server,
            &[
                "--tools",
                "bash",
                "-p",
                "Run the shell command `wc -l < numbers.txt` with the bash tool and tell me the number it prints.",
            ],
        );
        let out = run.stdout();
        Outcome {
            passed: run.code() == 0 && out.contains("37"),
            requests,
            elapsed,
            detail: format!("exit {}, answer {out:?}{}", run.code(), last_error(&run)),
        }
    }));

    // resume: a second turn uses an earlier answer.
    let ws = Workspace::new();
    failures.extend(measure("resume", |_| {
        let (first, _, first_time) = etch(
            &ws,
            &server,
            &[
                "--tools",
                "read",
                "-p",
                "Remember this code word: tangerine. Reply with just OK.",
            ],
        );
        let session = ws.session_files().last().cloned().unwrap_or_default();
        let id = session
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut args = vec!["resume".to_owned(), id];
        args.extend(provider_args(&server.base_url()));
        args.extend(
            [
                "--tools",
                "read",
                "-p",
                "What code word did I ask you to remember?",
            ]
            .map(str::to_owned),
        );
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = Instant::now();
        let second = ws.run(&refs);
        let out = second.stdout();
        let requests = jsonl(&session)
            .iter()
            .filter(|e| e["type"] == "model.metrics")
            .count();
        Outcome {
            passed: first.code() == 0 && second.code() == 0 && mentions(&out, "tangerine"),
            requests,
            elapsed: first_time + started.elapsed(),
            detail: format!("exit {}/{}, answer {out:?}", first.code(), second.code()),
        }
    }));

    assert!(
        failures.is_empty(),
        "tasks below {REQUIRED}/{RUNS}:\n{}",
        failures.join("\n")
    );
}

/// Subagents (issue 17): the parent hands "find which file defines
/// `sum`" to an `explore` profile with grep and read; the child does the
/// search in its own session and the parent reports its answer. A run
/// passes when the final answer names the file and a child session
/// (naming its parent) did the search. With this 1.5B model the
/// instructions file must not push for a bare answer: told to "answer
/// with the file path only", the child answers at once, from nothing.
#[test]
#[ignore = "needs the real model: scripts/test.sh sets it up and runs it"]
fn a_parent_delegates_a_search_to_an_explore_subagent() {
    let _slot = enabled("a_parent_delegates_a_search_to_an_explore_subagent");
    let server = Server::start(None, &[]);
    let ws = sum_workspace();
    std::fs::write(
        ws.path().join("explore.md"),
        "You are a code explorer working for another agent: use your tools to find the answer in the files, then report it briefly.",
    )
    .unwrap();
    ws.user_config(&format!(
        "[subagents]\nenabled = true\n\n[[subagents.profile]]\nname = \"explore\"\n\
         description = \"Searches the code with grep and reports which file holds what.\"\n\
         allowed_tools = [\"grep\", \"read\"]\nmax_tool_rounds = 4\nsystem_prompt_file = \"{}\"\n",
        ws.path().join("explore.md").display()
    ));
    let failure = measure_runs("subagent", 3, 2, |_| {
        let before = ws.session_files();
        let (run, _, elapsed) = etch(
            &ws,
            &server,
            &[
                "--tools",
                "grep,read",
                "-p",
                "Call the `task` tool with profile `explore` and the task \"Which file in src defines the function `sum`? Search with grep for `fn sum`.\" Then tell me the file path it reports.",
            ],
        );
        let new: Vec<_> = ws
            .session_files()
            .into_iter()
            .filter(|p| !before.contains(p))
            .collect();
        let searched = new.iter().any(|path| {
            let events = jsonl(path);
            events[0]["data"]["parentSessionId"].is_string()
                && events
                    .iter()
                    .any(|e| e["type"] == "message.tool" && mentions(&e.to_string(), "maths.rs"))
        });
        let requests = new
            .iter()
            .flat_map(|path| jsonl(path))
            .filter(|e| e["type"] == "model.metrics")
            .count();
        let out = run.stdout();
        Outcome {
            passed: run.code() == 0 && searched && mentions(&out, "maths.rs"),
            requests,
            elapsed,
            detail: format!(
                "exit {}, child searched: {searched}, answer {out:?}{}",
                run.code(),
                last_error(&run)
            ),
        }
    });
    assert!(failure.is_none(), "{}", failure.unwrap_or_default());
}

/// Bad input: the server dies mid-stream. etch exits 1 with a clear error,
/// the session stays valid, and resuming it against a restarted server
/// works.
#[test]
#[ignore = "needs the real model: scripts/test.sh sets it up and runs it"]
fn server_killed_mid_stream() {
    let _slot = enabled("server_killed_mid_stream");
    let mut server = Server::start(None, &[]);
    let proxy = Proxy::start(server.port);
    let ws = Workspace::new();
    let url = format!("http://127.0.0.1:{}/v1", proxy.port);
    let mut args = provider_args(&url);
    args.extend(
        [
            "--tools",
            "read",
            "-p",
            "Write a 300-word story about a lighthouse keeper.",
        ]
        .map(str::to_owned),
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let child = ws
        .command(&refs)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the server once a few kilobytes of the streamed answer went by.
    let deadline = Instant::now() + Duration::from_secs(240);
    while proxy.response_bytes() < 3000 {
        assert!(
            Instant::now() < deadline,
            "the answer never started streaming"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("broke mid-stream") || stderr.contains("ended before the model finished"),
        "{stderr}"
    );
    let session = ws.only_session();
    let events = jsonl(&session);
    let last_assistant = events
        .iter()
        .rev()
        .find(|e| e["type"] == "message.assistant")
        .expect("the failed pass is logged");
    assert_eq!(last_assistant["data"]["stopReason"], "error");
    let show = ws.run(&["show", session.file_stem().unwrap().to_str().unwrap()]);
    assert_eq!(show.code(), 0, "{}", show.stderr());
    assert!(!show.stderr().contains("warning"), "{}", show.stderr());

    let restarted = Server::start(None, &[]);
    let id = session.file_stem().unwrap().to_string_lossy().into_owned();
    let mut args = vec!["resume".to_owned(), id];
    args.extend(provider_args(&restarted.base_url()));
    args.extend(["--tools", "read", "-p", "Reply with just OK."].map(str::to_owned));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let resumed = ws.run(&refs);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    assert!(!resumed.stdout().trim().is_empty());
}

/// Bad input: the server is not running. A clear connection error naming
/// the URL, exit 1. (No model needed, so this always runs.)
#[test]
#[ignore = "needs the real model: scripts/test.sh sets it up and runs it"]
fn server_not_started() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let ws = Workspace::new();
    let mut args = provider_args(&url);
    args.extend(["-p", "hi"].map(str::to_owned));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ws.run(&refs);
    assert_eq!(out.code(), 1, "{}", out.stderr());
    assert!(
        out.stderr()
            .contains(&format!("cannot reach {url}/chat/completions")),
        "{}",
        out.stderr()
    );
}

/// Bad input: a context window too small for the prompt. llama.cpp's
/// overflow error goes through the overflow path: nothing to compact in a
/// fresh session, so the provider's error is surfaced with exit 1.
#[test]
#[ignore = "needs the real model: scripts/test.sh sets it up and runs it"]
fn context_window_too_small() {
    let _slot = enabled("context_window_too_small");
    let server = Server::start(Some(512), &[]);
    let ws = Workspace::new();
    let (run, _, _) = etch(&ws, &server, &["-p", "Summarize this project."]);
    let stderr = run.stderr();
    assert_eq!(run.code(), 1, "{stderr}");
    assert!(stderr.contains("overflow compaction skipped"), "{stderr}");
    assert!(mentions(&stderr, "context"), "{stderr}");
    let events: Vec<Value> = jsonl(&ws.only_session());
    assert!(events.iter().any(|e| e["type"] == "message.user"));
}

/// A loopback TCP proxy in front of the server that counts the response
/// bytes flowing back, so a test can kill the server mid-stream.
struct Proxy {
    /// Where etch connects.
    port: u16,
    /// Bytes received from the server so far.
    from_server: Arc<AtomicUsize>,
}

impl Proxy {
    /// Forwards every connection on a new port to `target`.
    fn start(target: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let from_server = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&from_server);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(upstream) = TcpStream::connect(("127.0.0.1", target)) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let (Ok(client_read), Ok(upstream_write)) =
                    (client.try_clone(), upstream.try_clone())
                else {
                    continue;
                };
                std::thread::spawn(move || pipe(client_read, upstream_write, None));
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || pipe(upstream, client, Some(&counter)));
            }
        });
        Self { port, from_server }
    }

    /// Response bytes forwarded so far.
    fn response_bytes(&self) -> usize {
        self.from_server.load(Ordering::SeqCst)
    }
}

/// Copies `from` to `to` until either side closes, counting bytes.
fn pipe(mut from: TcpStream, mut to: TcpStream, counter: Option<&AtomicUsize>) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Some(counter) = counter {
                    counter.fetch_add(n, Ordering::SeqCst);
                }
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}
