//! Tasks where a small model got lost before issue 12 (the same `grep`
//! fifteen times, re-reading a file instead of answering): count a file's
//! lines, rename a function used in two files, say which test fails from
//! a test command's output, add an entry to a JSON list without breaking
//! it, and find one fact in a long README. Each runs a few times with the
//! default tools, as a new user would; pass rate, model requests and wall
//! time per task are printed (the finding), and every run must end within
//! its bounds: an answer, or a stop by the loop's guard or round bound,
//! never a hang.
//!
//! `ETCH_LOST_TOOLS=read,bash,edit,write` runs them with those tools only
//! (as `--tools`), to compare a smaller tool set.
//!
//! All tasks share one workspace, so the system prompt and tool schemas
//! are byte-identical across runs and the server's prompt cache stays
//! warm: only the first request pays for the whole prompt.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use super::support::Workspace;
use super::{Outcome, Server, enabled, etch_with, last_error, measure_runs, mentions};

/// Runs per task: issue 30 asks for a rate over at least three (the
/// compact profile's shorter requests pay for the third run; the whole
/// real-model suite must stay within 15 minutes on a 2-core machine).
const RUNS: usize = 3;

/// Round bound of these runs: each round re-sends a growing context, so
/// a lost run costs about 20 s a round on a 2-core machine.
const ROUNDS: u32 = 5;

/// Longest a single run may take before its bounds count as broken (a
/// hang, not a slow machine: five rounds take about two minutes here).
const RUN_LIMIT: Duration = Duration::from_secs(600);

/// The workspace every task works in, under the compact profile (and
/// so with grounding): the small-model path these figures measure.
fn workspace() -> Workspace {
    let ws = Workspace::new();
    ws.user_config("[tools]\nprofile = \"compact\"\n");
    let root = ws.path();
    let rows: String = (1..=41)
        .map(|i| format!("{i},item{i},{}\n", (i * 37) % 100))
        .collect();
    std::fs::write(root.join("data.csv"), format!("id,name,score\n{rows}")).unwrap();
    std::fs::write(
        root.join("run-tests.sh"),
        "#!/bin/sh\ncat <<'OUT'\n============ test session starts ============\n\
         tests/test_dates.py::test_parse_iso_date PASSED\n\
         tests/test_dates.py::test_parse_iso_week FAILED\n\
         tests/test_money.py::test_round_half_even PASSED\n\
         tests/test_money.py::test_currency_symbol PASSED\n\
         ================ FAILURES ================\n\
         ______ test_parse_iso_week ______\n\
         AssertionError: expected week 53, got 1\n\
         ====== 1 failed, 3 passed in 0.12s ======\nOUT\nexit 1\n",
    )
    .unwrap();
    let mut readme = String::from("# Lighthouse\n\nLighthouse watches ships.\n");
    for section in [
        "Install",
        "Usage",
        "Configuration",
        "Deployment",
        "Contributing",
        "License",
    ] {
        let _ = write!(readme, "\n## {section}\n\n");
        if section == "Deployment" {
            readme.push_str(
                "Deploy with `make deploy`. The service listens on port 8437 behind the proxy.\n",
            );
        }
        for n in 1..=8 {
            let _ = writeln!(
                readme,
                "{section} note {n}: keep the defaults unless the team agrees otherwise."
            );
        }
    }
    std::fs::write(root.join("README.md"), readme).unwrap();
    ws
}

/// Puts the files the editing tasks change back as they were, and drops
/// whatever an earlier run created in `app/` (a stray `app/welcome.py`
/// would otherwise be there for the next run to find).
fn reset(root: &Path) {
    let _ = std::fs::remove_dir_all(root.join("app"));
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::write(
        root.join("app/greet.py"),
        "def greet_user(name):\n    return f\"Hello, {name}!\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("app/main.py"),
        "from greet import greet_user\n\nprint(greet_user(\"Ada\"))\n",
    )
    .unwrap();
    std::fs::write(
        root.join("app/cli.py"),
        "import sys\nfrom greet import greet_user\n\nprint(greet_user(sys.argv[1]))\n",
    )
    .unwrap();
    std::fs::write(
        root.join("settings.json"),
        "{\n  \"name\": \"demo\",\n  \"plugins\": [\"alpha\", \"beta\"],\n  \"debug\": false\n}\n",
    )
    .unwrap();
}

/// Whether a run passed, from its exit code and stdout (and the files).
type Check = Box<dyn Fn(i32, &str) -> bool>;

/// One run of `prompt` judged by `check` on (exit code, stdout); a run
/// over [`RUN_LIMIT`] is a broken bound, whatever its answer.
fn ask(
    ws: &Workspace,
    server: &Server,
    prompt: &str,
    check: impl Fn(i32, &str) -> bool,
    bounds: &mut Vec<String>,
) -> Outcome {
    reset(ws.path());
    let tools = std::env::var("ETCH_LOST_TOOLS").unwrap_or_default();
    let mut args = vec!["-p", prompt];
    if !tools.is_empty() {
        args.splice(0..0, ["--tools", tools.as_str()]);
    }
    let (run, requests, elapsed) = etch_with(ws, server, ROUNDS, &args);
    let out = run.stdout();
    if elapsed > RUN_LIMIT || !matches!(run.code(), 0 | 1) {
        bounds.push(format!(
            "{prompt:?}: exit {} after {:.0} s",
            run.code(),
            elapsed.as_secs_f64()
        ));
    }
    Outcome {
        passed: check(run.code(), &out),
        requests,
        elapsed,
        detail: format!("exit {}, answer {out:?}{}", run.code(), last_error(&run)),
    }
}

/// The tasks, with their figures; fails only when a run broke its bounds
/// (the pass rates of a 1.5B model on these are the finding, reported).
#[test]
#[ignore = "needs the real model: scripts/test.sh sets it up and runs it"]
fn tasks_where_a_small_model_got_lost() {
    let _slot = enabled("tasks_where_a_small_model_got_lost");
    let server = Server::start(None, &[]);
    let ws = workspace();
    let root = ws.path().to_path_buf();
    let mut bounds = Vec::new();
    let tasks: [(&str, &str, Check); 5] = [
        (
            "count lines",
            "How many lines does data.csv have? Check with a tool, then answer with just the number.",
            Box::new(|code, out| code == 0 && out.contains("42")),
        ),
        (
            "failing test",
            "Run ./run-tests.sh with bash. Which test fails? Answer with just the test's name.",
            Box::new(|code, out| code == 0 && mentions(out, "test_parse_iso_week")),
        ),
        (
            "README fact",
            "According to README.md, which port does the service listen on? Answer with just the number.",
            Box::new(|code, out| code == 0 && out.contains("8437")),
        ),
        (
            "JSON list",
            "Add \"gamma\" to the end of the plugins list in settings.json, keeping the file valid JSON.",
            {
                let root = root.clone();
                Box::new(move |_, _| {
                    let text =
                        std::fs::read_to_string(root.join("settings.json")).unwrap_or_default();
                    serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| {
                        v["plugins"] == serde_json::json!(["alpha", "beta", "gamma"])
                            && v["name"] == "demo"
                    })
                })
            },
        ),
        (
            "rename",
            "Rename the function greet_user to welcome_user everywhere in app/ (its definition and both places that use it).",
            {
                let root = root.clone();
                Box::new(move |_, _| {
                    ["greet.py", "main.py", "cli.py"].iter().all(|f| {
                        let text =
                            std::fs::read_to_string(root.join("app").join(f)).unwrap_or_default();
                        text.contains("welcome_user") && !text.contains("greet_user")
                    })
                })
            },
        ),
    ];
    for (name, prompt, check) in &tasks {
        let _ = measure_runs(name, RUNS, 0, |_| {
            ask(&ws, &server, prompt, check, &mut bounds)
        });
    }
    assert!(
        bounds.is_empty(),
        "runs that broke their bounds (a hang, a crash, or longer than {RUN_LIMIT:?}):\n{}",
        bounds.join("\n")
    );
}
