//! The `etch` binary end to end with the offline echo provider: print and
//! JSON modes, the session log on disk, listing, showing, resuming damaged
//! sessions, prefix errors, concurrent index appends, SIGINT and usage
//! errors (issue 2; E-CLI, E-SES, G1, G2, G14, G16, G20, G23).

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use support::{Workspace, jsonl, types};

/// C42's stderr line when no credentials exist.
const NO_CREDENTIALS: &str = "etch: no model credentials found; using the offline echo model (see 'etch auth login' or set OPENAI_API_KEY)";

/// E-CLI-02, G9, G3, E-SES-04: `-p` prints the echoed answer; the session file
/// starts with `session.started`, chains every event to the previous one and
/// records the echo metrics; `.etch/.gitignore` ignores etch's own state
/// but not config or skills (G2).
#[test]
fn print_mode_writes_a_chained_session() {
    let ws = Workspace::new();
    let run = ws.run(&["-p", "hello world"]);
    assert_eq!(run.ok(), "hello world\n");
    assert_eq!(run.stderr().trim(), NO_CREDENTIALS);
    let ignore = std::fs::read_to_string(ws.path().join(".etch/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "sessions/"), "{ignore}");
    assert!(!ignore.lines().any(|l| l == "*"), "{ignore}");
    let events = jsonl(&ws.only_session());
    assert_eq!(
        types(&events),
        [
            "session.started",
            "message.user",
            "message.assistant",
            "model.metrics"
        ]
    );
    assert!(events[0]["parentId"].is_null());
    for pair in events.windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"]);
    }
    let header = &events[0]["data"];
    assert_eq!(header["formatVersion"], 1);
    assert_eq!(header["provider"], "echo");
    assert_eq!(header["cwd"], ws.path().to_string_lossy().as_ref());
    assert_eq!(events[1]["data"]["content"][0]["text"], "hello world");
    assert_eq!(events[2]["data"]["stopReason"], "stop");
    assert_eq!(events[2]["data"]["provider"], "echo");
    assert_eq!(events[3]["data"]["transport"], "echo");
    for e in &events {
        assert_eq!(e["id"].as_str().unwrap().len(), 26);
        assert!(e["time"].as_str().unwrap().ends_with('Z'));
    }
}

/// G1: `--json -p` prints each durable line byte-identical to the file, then
/// one result line.
#[test]
fn json_mode_mirrors_the_session_file() {
    let ws = Workspace::new();
    let out = ws.run(&["--json", "-p", "hi there"]).ok();
    let lines: Vec<&str> = out.lines().collect();
    let file = std::fs::read_to_string(ws.only_session()).unwrap();
    let file_lines: Vec<&str> = file.lines().collect();
    assert_eq!(&lines[..lines.len() - 1], &file_lines[..]);
    let result: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["ok"], true);
    assert_eq!(result["text"], "hi there");
    assert!(result["error"].is_null());
    assert_eq!(
        result["sessionPath"],
        ws.only_session().to_string_lossy().as_ref()
    );
    let id = result["sessionId"].as_str().unwrap();
    assert!(ws.only_session().ends_with(format!("{id}.jsonl")));
}

/// C40, E-CLI-24: a positional prompt works like -p and piped stdin is
/// appended as a fenced block; stdin alone is a prompt too.
#[test]
fn positional_prompt_and_piped_stdin() {
    let ws = Workspace::new();
    assert_eq!(ws.run(&["what now"]).ok(), "what now\n");
    let out = ws.run_with_stdin(&["fix this"], "line 1\nline 2\n").ok();
    assert_eq!(out, "fix this\n\n```\nline 1\nline 2\n```\n");
    let out = ws.run_with_stdin(&[], "only stdin\n").ok();
    assert_eq!(out, "```\nonly stdin\n```\n");
}

/// E-CLI-06, G16: sessions are listed newest first, as text and as JSON rows
/// with the documented fields.
#[test]
fn sessions_are_listed_newest_first() {
    let ws = Workspace::new();
    ws.run(&["-p", "first prompt\nsecond line"]).ok();
    ws.run(&["-p", "   second    prompt  "]).ok();
    let text = ws.run(&["sessions"]).ok();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].ends_with("  second prompt"), "{text}");
    assert!(lines[1].ends_with("  first prompt"), "{text}");
    let rows: serde_json::Value =
        serde_json::from_str(&ws.run(&["sessions", "--json"]).ok()).unwrap();
    let row = &rows[0];
    for key in ["id", "path", "createdAt", "cwd", "title"] {
        assert!(row[key].is_string(), "missing {key} in {row}");
    }
    assert!(std::path::Path::new(row["path"].as_str().unwrap()).is_absolute());
    assert!(lines[0].starts_with(row["id"].as_str().unwrap()));
}

/// E-CLI-07, G1: `show` prints a plain transcript; `show --json` prints the
/// file's lines verbatim; both take a prefix of the id's last 10 characters.
#[test]
fn show_plain_and_json() {
    let ws = Workspace::new();
    ws.run(&["-p", "show me"]).ok();
    let path = ws.only_session();
    let id = path.file_stem().unwrap().to_string_lossy().into_owned();
    let plain = ws.run(&["show", &id[..12]]).ok();
    assert!(plain.starts_with(&format!("session {id}\n")), "{plain}");
    assert!(plain.contains("\n[user]\nshow me\n"), "{plain}");
    assert!(plain.contains("\n[assistant]\nshow me\n"), "{plain}");
    let json = ws.run(&["show", "--json", &id[16..22]]).ok();
    assert_eq!(json, std::fs::read_to_string(&path).unwrap());
}

/// G23, G14: unknown and ambiguous prefixes exit 2 with exact messages.
#[test]
fn prefix_errors_exit_2() {
    let ws = Workspace::new();
    ws.run(&["-p", "a"]).ok();
    ws.run(&["-p", "b"]).ok();
    let unknown = ws.run(&["show", "ZZZZ"]);
    assert_eq!(unknown.code(), 2);
    assert_eq!(
        unknown.stderr(),
        "etch: error: no session matches prefix \"ZZZZ\"\n"
    );
    let ids: Vec<String> = ws
        .session_files()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let common: String = ids[0]
        .chars()
        .zip(ids[1].chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    let ambiguous = ws.run(&["resume", &common, "-p", "x"]);
    assert_eq!(ambiguous.code(), 2);
    let err = ambiguous.stderr();
    assert!(
        err.starts_with(&format!(
            "etch: error: session prefix \"{common}\" is ambiguous: "
        )),
        "{err}"
    );
    assert!(err.contains(&ids[0]) && err.contains(&ids[1]), "{err}");
    assert_eq!(ws.run(&["show", ""]).code(), 2);
}

/// E-SES-22 and issue 2's damaged-log case: a garbage line in the middle and
/// a torn last line are reported with their line numbers, the session still
/// resumes, and new events chain after the last valid event.
#[test]
fn resume_after_garbage_and_torn_line() {
    let ws = Workspace::new();
    ws.run(&["-p", "one"]).ok();
    let path = ws.only_session();
    let original = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
    let last_valid_id =
        serde_json::from_str::<serde_json::Value>(lines.last().unwrap()).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
    lines.insert(2, "{this is not json".to_string());
    let damaged = format!(
        "{}\n{{\"type\":\"message.user\",\"id\":\"01TORN",
        lines.join("\n")
    );
    std::fs::write(&path, damaged).unwrap();
    let id = path.file_stem().unwrap().to_string_lossy().into_owned();
    let run = ws.run(&["resume", &id[..10], "-p", "two"]);
    assert_eq!(run.ok(), "two\n");
    let err = run.stderr();
    assert!(err.contains("line 3: malformed line skipped"), "{err}");
    assert!(err.contains("line 6: torn last line"), "{err}");
    let text = std::fs::read_to_string(&path).unwrap();
    let after: Vec<serde_json::Value> = text
        .lines()
        .skip(6)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        types(&after),
        ["message.user", "message.assistant", "model.metrics"]
    );
    assert_eq!(after[0]["parentId"], last_valid_id.as_str());
    let shown = ws.run(&["show", &id]).ok();
    assert!(
        shown.contains("[user]\none\n") && shown.contains("[user]\ntwo\n"),
        "{shown}"
    );
}

/// A session killed between a tool call and its result is repaired on
/// resume: the call gets `tool error: Operation aborted` before the new prompt.
#[test]
fn resume_closes_dangling_tool_calls() {
    let ws = Workspace::new();
    ws.run(&["-p", "start"]).ok();
    let path = ws.only_session();
    let events = jsonl(&path);
    let last = events.last().unwrap()["id"].as_str().unwrap().to_string();
    let call = serde_json::json!({"type":"message.assistant","id":"01K0000000000000000000CALL","parentId":last,"time":"2026-01-01T00:00:00.000Z","data":{"content":[{"type":"tool_call","id":"call_9","name":"bash","arguments":{"command":"sleep 100"}}],"provider":"echo","model":"echo","stopReason":"toolUse"}});
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&call.to_string());
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    let id = path.file_stem().unwrap().to_string_lossy().into_owned();
    ws.run(&["resume", &id, "-p", "next"]).ok();
    let events = jsonl(&path);
    let tail = &events[events.len() - 4..];
    assert_eq!(
        types(tail),
        [
            "message.tool",
            "message.user",
            "message.assistant",
            "model.metrics"
        ]
    );
    assert_eq!(tail[0]["data"]["toolCallId"], "call_9");
    assert_eq!(
        tail[0]["data"]["content"][0]["text"],
        "tool error: Operation aborted"
    );
    assert_eq!(tail[0]["data"]["isError"], true);
    assert_eq!(tail[0]["parentId"], "01K0000000000000000000CALL");
}

/// E-SES-18: many etch processes creating sessions at once append whole,
/// distinct index rows: none lost, none interleaved.
#[test]
fn concurrent_processes_append_whole_index_rows() {
    let ws = Workspace::new();
    let children: Vec<_> = (0..16)
        .map(|i| {
            ws.command(&["-p", &format!("prompt {i} {}", "x".repeat(300))])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let rows = jsonl(&ws.sessions_dir().join("index.jsonl"));
    assert_eq!(rows.len(), 16);
    let mut ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 16);
    assert_eq!(ws.session_files().len(), 16);
}

/// G20, G14: SIGINT during `-p` exits 130, says the log is intact, and the
/// log is valid: the prompt is there and nothing of the interrupted pass.
#[test]
fn sigint_during_print_mode_exits_130() {
    let ws = Workspace::new();
    let child = ws
        .command(&["-p", "slow"])
        .env("ETCH_ECHO_DELAY_MS", "30000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ready = ws.session_files().first().is_some_and(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .contains("\"message.user\"")
        });
        if ready {
            break;
        }
        assert!(Instant::now() < deadline, "etch never appended the prompt");
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(130));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("interrupted; the session log is intact"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let events = jsonl(&ws.only_session());
    // The interrupted pass is logged as such, with nothing streamed (G20).
    assert_eq!(
        types(&events),
        ["session.started", "message.user", "message.assistant"]
    );
    assert_eq!(events[2]["data"]["stopReason"], "aborted");
}

/// G14: usage errors exit 2 with a message that says what to do.
#[test]
fn usage_errors_exit_2() {
    let ws = Workspace::new();
    let none = ws.run(&[]);
    assert_eq!(none.code(), 2);
    assert!(
        none.stderr().contains("no prompt given"),
        "{}",
        none.stderr()
    );
    assert_eq!(ws.run(&["-p", "x", "--max-tool-rounds", "0"]).code(), 2);
    let bogus = ws.run(&["--provider", "bogus", "-p", "x"]);
    assert_eq!(bogus.code(), 2);
    assert!(
        bogus
            .stderr()
            .contains("unknown provider \"bogus\": expected one of echo, openai, anthropic")
    );
    let missing = ws.run(&["-C", "/definitely/not/here", "-p", "x"]);
    assert_eq!(missing.code(), 2);
    assert!(
        missing
            .stderr()
            .contains("cannot change to directory /definitely/not/here")
    );
    let misplaced = ws.run(&["--model", "m", "sessions"]);
    assert_eq!(misplaced.code(), 2);
    assert!(
        misplaced
            .stderr()
            .contains("etch sessions has no use for --model"),
        "{}",
        misplaced.stderr()
    );
    assert!(ws.session_files().is_empty());
}

/// C44, E-CLI-13, G2: `-C` changes directory first; `--session-dir`
/// resolves against the (new) cwd.
#[test]
fn workspace_and_session_dir_flags() {
    let ws = Workspace::new();
    let sub = ws.path().join("proj");
    std::fs::create_dir(&sub).unwrap();
    ws.run(&["-C", "proj", "-p", "in proj"]).ok();
    assert!(sub.join(".etch/sessions/index.jsonl").exists());
    ws.run(&["-C", "proj", "--session-dir", "elsewhere", "-p", "x"])
        .ok();
    assert!(sub.join("elsewhere/index.jsonl").exists());
    let listed = ws.run(&["-C", "proj", "sessions"]).ok();
    assert!(listed.contains("in proj"));
}

/// Every command's help says what it does and shows an example.
#[test]
fn help_texts_have_examples() {
    let ws = Workspace::new();
    let top = ws.run(&["--help"]).ok();
    assert!(
        top.contains("Examples:") && top.contains("etch -p"),
        "{top}"
    );
    assert!(top.contains("Exit codes: 0 success"), "{top}");
    for cmd in ["sessions", "show", "resume"] {
        let help = ws.run(&[cmd, "--help"]).ok();
        assert!(help.contains("Example"), "{cmd}: {help}");
    }
}

/// `etch show --tree` prints one line per conversation event with its short
/// id, the active branch starred and the leaf marked; `--tree` and `--json`
/// exclude each other.
#[test]
fn show_tree_marks_the_active_branch_and_leaf() {
    let ws = Workspace::new();
    ws.run(&["-p", "hello tree"]).ok();
    ws.run(&["resume", "--last", "-p", "second"]).ok();
    let out = ws.run(&["show", "--tree"]).ok();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("session "), "{out}");
    assert!(lines[1].ends_with("session started"), "{out}");
    assert!(
        lines.iter().any(|l| l.ends_with("user: hello tree")),
        "{out}"
    );
    // The leaf is the last answer, not the metrics line after it.
    assert!(
        lines
            .last()
            .unwrap()
            .ends_with("assistant: second  <- leaf"),
        "{out}"
    );
    assert!(lines.iter().skip(1).all(|l| l.starts_with("* ")), "{out}");
    let both = ws.run(&["show", "--tree", "--json"]);
    assert_eq!(both.code(), 2);
}

/// "Last" is the session last written to: after continuing an older
/// session, `show` and `resume --last` take that one, not the newest
/// created.
#[test]
fn the_last_session_is_the_one_last_written_to() {
    let ws = Workspace::new();
    ws.run(&["--provider", "echo", "-p", "older"]).ok();
    let older = ws.session_files()[0].clone();
    let id = older.file_stem().unwrap().to_string_lossy().into_owned();
    ws.run(&["--provider", "echo", "-p", "newer"]).ok();
    // Make the write order certain whatever the clock's resolution.
    ws.run(&["resume", &id, "-p", "continued"]).ok();
    std::fs::File::options()
        .append(true)
        .open(&older)
        .unwrap()
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    assert!(ws.run(&["show"]).ok().contains("continued"));
    ws.run(&["resume", "--last", "-p", "and on"]).ok();
    assert!(std::fs::read_to_string(&older).unwrap().contains("and on"));
}

/// An ambiguous prefix lists the candidates one per line with their age
/// and title.
#[test]
fn an_ambiguous_prefix_lists_candidates() {
    let ws = Workspace::new();
    ws.run(&["--provider", "echo", "-p", "first title"]).ok();
    ws.run(&["--provider", "echo", "-p", "second title"]).ok();
    let out = ws.run(&["show", "0"]);
    assert_eq!(out.code(), 2);
    let err = out.stderr();
    assert!(
        err.contains("2 sessions match; give more of the id"),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.trim_end().ends_with("first title") && l.contains(" ago "))
            && err.lines().any(|l| l.trim_end().ends_with("second title")),
        "{err}"
    );
}

/// `etch export`: HTML by default (the answer's markup escaped, nothing
/// that runs), md and jsonl by flag or extension, `-o -` to stdout, the
/// session last used without a prefix.
#[test]
fn export_writes_the_three_formats() {
    let ws = Workspace::new();
    ws.run(&["--provider", "echo", "-p", "<script>alert(1)</script> hi"])
        .ok();
    let id = ws
        .only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = ws.run(&["export"]).ok();
    let html_path = ws.path().join(format!("etch-{id}.html"));
    assert!(
        out.contains(&format!("wrote the html transcript of {id}")),
        "{out}"
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!doctype html>"), "{html}");
    assert!(
        !html.contains("<script>") && html.contains("&lt;script&gt;"),
        "{html}"
    );
    ws.run(&["export", &id[..8], "-o", "t.md"]).ok();
    let md = std::fs::read_to_string(ws.path().join("t.md")).unwrap();
    assert!(md.contains("<script>alert(1)</script> hi"), "{md}");
    let jsonl = ws.run(&["export", "--format", "jsonl", "-o", "-"]).ok();
    assert_eq!(jsonl, std::fs::read_to_string(ws.only_session()).unwrap());
    let bad = ws.run(&["export", "--format", "pdf"]);
    assert_eq!(bad.code(), 2);
}

/// A chat command typed as a bare word is a usage error naming what to
/// run, not a prompt sent to the model.
#[test]
fn chat_command_words_are_usage_errors() {
    let ws = Workspace::new();
    for (word, hint) in [
        ("tree", "etch show --tree"),
        ("/model", "--model NAME"),
        ("reload", "type it in the chat"),
    ] {
        let out = ws.run(&[word]);
        assert_eq!(out.code(), 2, "{word}: {}", out.stderr());
        assert!(
            out.stderr().contains("is a command of the chat") && out.stderr().contains(hint),
            "{word}: {}",
            out.stderr()
        );
    }
    assert!(ws.session_files().is_empty());
    // -p still sends any text.
    assert_eq!(ws.run(&["--provider", "echo", "-p", "tree"]).ok(), "tree\n");
}

/// On a terminal, `-p` says on stderr when each tool call starts and
/// ends; in a pipe it says nothing of the kind.
#[test]
fn print_mode_shows_tool_progress_on_a_terminal() {
    use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
    let ws = Workspace::new();
    std::fs::write(ws.path().join("notes.txt"), "x").unwrap();
    let replies = || {
        vec![
            Reply::sse(chat_tool_calls(&[
                ("c1", "ls", "{}"),
                ("c2", "read", r#"{"path": "missing.txt"}"#),
            ])),
            Reply::sse(chat_text("done")),
        ]
    };
    let server = FakeServer::start(replies()).unwrap();
    let mut args = support::model_args(&server);
    args.extend(["-p".to_owned(), "go".to_owned()]);
    let (shown, ok) = ws.run_on_terminal(&args);
    assert!(ok, "{shown}");
    assert!(shown.contains("etch: › ls"), "{shown}");
    assert!(shown.contains("etch: ✓ ls ("), "{shown}");
    assert!(shown.contains("etch: › read missing.txt"), "{shown}");
    assert!(shown.contains("etch: ✗ read ("), "{shown}");
    let server = FakeServer::start(replies()).unwrap();
    let piped = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(piped.ok(), "done\n");
    assert!(!piped.stderr().contains("›"), "{}", piped.stderr());
}
