//! The interactive chat through the real binary in tmux (issue 13): the
//! start-up header and footer, a markdown reply drawn into the terminal's
//! own scrollback, Up history, ESC during a slow stream and during a
//! running tool (nothing partial stored, the next prompt works), steering
//! during a tool batch and during the final pass, slash commands
//! (`/status`, an unknown one, `/export html`), Ctrl-D with the resume
//! line, resuming with the transcript drawn again, a large paste, hostile
//! escape sequences, and a resize storm during streaming.
//!
//! Ordering uses barriers: a stalled model stream keeps a run active
//! until the test presses ESC, and a tool waits for a file the test
//! creates once its steering shows as queued.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::time::Duration;

use etch_test_support::{End, FakeServer, Reply, chat_text, chat_text_chunks, chat_tool_calls};
use serde_json::Value;
use support::tmux::Tmux;
use support::{Workspace, jsonl, types};

/// Columns and rows of the test terminal.
const SIZE: (u16, u16) = (100, 30);

/// The provider flags for `server` (Chat Completions shape).
fn against(server: &FakeServer) -> Vec<String> {
    [
        "--provider",
        "openai",
        "--base-url",
        &format!("{}/v1", server.url()),
        "--api-key",
        "sk-test",
        "--model",
        "m1",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// Starts the chat in `ws` against `server`, with `extra` arguments.
fn chat(ws: &Workspace, server: &FakeServer, extra: &[&str]) -> Tmux {
    let mut args = against(server);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let tmux = Tmux::start(ws, &args, &[], SIZE.0, SIZE.1);
    tmux.wait_for("/help for commands");
    tmux
}

/// `etch resume` of the session `id` (by a prefix) in the chat.
fn resume_chat(ws: &Workspace, server: &FakeServer, id: &str) -> Tmux {
    let mut args = vec!["resume".to_owned(), id[..12].to_owned()];
    args.extend(against(server));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Tmux::start(ws, &args, &[], SIZE.0, SIZE.1)
}

/// A model that runs `sleep 30`, then answers `text`.
fn sleeping_then(text: &str) -> FakeServer {
    FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "bash",
            r#"{"command":"sleep 30"}"#,
        )])),
        Reply::sse(chat_text(text)),
    ])
    .unwrap()
}

/// A reply that starts streaming and then stays silent, so the run stays
/// active until it is cancelled.
fn stalled() -> Reply {
    Reply::Sse {
        events: chat_text("partial answer")[..1].to_vec(),
        gap: Duration::ZERO,
        end: End::Stall(Duration::from_secs(60)),
    }
}

/// The text of the user messages of a request body.
fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| support::without_context(m["content"].as_str().unwrap_or("")).to_owned())
        .collect()
}

/// How often `needle` occurs in `haystack`.
fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[test]
fn starts_with_a_header_and_a_live_footer() {
    let ws = Workspace::new();
    let tmux = Tmux::start(&ws, &["--provider", "echo"], &[], SIZE.0, SIZE.1);
    let screen = tmux.wait_screen("/help for commands");
    assert!(screen.contains("etch "), "{screen}");
    assert!(screen.contains("Ctrl-D to quit"), "{screen}");
    // The footer names the model and the directory; no session file yet.
    assert!(
        screen
            .lines()
            .any(|l| l.starts_with("echo · ") && l.contains("0 req")),
        "{screen}"
    );
    assert!(ws.session_files().is_empty());
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
    assert!(tmux.history().contains("no session was started"));
    assert!(
        ws.session_files().is_empty(),
        "quitting at once leaves no session behind"
    );
}

/// A markdown answer is drawn once into the scrollback, styled (no raw
/// `**`), with its table laid out; the footer counts the request; Up
/// brings the prompt back; Ctrl-D prints how to resume.
#[test]
fn a_markdown_reply_history_and_the_resume_line() {
    let ws = Workspace::new();
    // The answer names a.rs; it exists, so no grounding note follows.
    std::fs::write(ws.path().join("a.rs"), "").unwrap();
    let answer = "# Plan\n\nSome **bold** text and `code`.\n\n| file | lines |\n|---|---|\n| a.rs | 10 |\n\n```rust\nfn main() {}\n```";
    let server = FakeServer::start(vec![Reply::sse(chat_text(answer))]).unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("explain the plan");
    let history = tmux.wait_for("a.rs │ 10");
    assert!(history.contains("• explain the plan"), "{history}");
    assert!(history.contains("# Plan"), "{history}");
    assert!(history.contains("Some bold text and code."), "{history}");
    assert!(history.contains("fn main() {}"), "{history}");
    assert!(!history.contains("**"), "{history}");
    assert_eq!(
        count(&history, "Some bold text"),
        1,
        "written once: {history}"
    );
    tmux.wait_screen("1 req");
    tmux.keys(&["Up"]);
    tmux.wait_screen("› explain the plan");
    tmux.keys(&["C-u", "C-d"]);
    assert_eq!(tmux.exit_code(), 0);
    let session = ws.only_session();
    let id = session.file_stem().unwrap().to_string_lossy().into_owned();
    let history = tmux.history();
    assert!(
        history.contains(&format!("continue with: etch resume {id}")),
        "{history}"
    );
    let events = jsonl(&session);
    assert_eq!(
        types(&events)
            .iter()
            .filter(|t| t.starts_with("message."))
            .count(),
        2
    );
    assert_eq!(
        events[0]["data"]["title"]
            .as_str()
            .unwrap_or("explain the plan"),
        "explain the plan"
    );
}

/// ESC during a stream that stalls: `cancelled`, nothing of the partial
/// pass stored, and the next prompt runs (G20).
#[test]
fn esc_cancels_a_slow_stream_and_the_next_prompt_works() {
    let ws = Workspace::new();
    let server =
        FakeServer::start(vec![stalled(), Reply::sse(chat_text("second answer"))]).unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("first");
    tmux.wait_screen("esc to interrupt");
    tmux.wait_screen("partial");
    tmux.keys(&["Escape"]);
    // What was shown stays, marked as cut short (issue 28).
    let history = tmux.wait_for("interrupted: the answer above is partial");
    assert!(history.contains("partial"), "{history}");
    tmux.line("second");
    tmux.wait_for("second answer");
    let events = jsonl(&ws.only_session());
    let assistants: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message.assistant")
        .collect();
    assert_eq!(assistants.len(), 2, "the interrupted answer and the second");
    assert_eq!(assistants[0]["data"]["stopReason"], "aborted");
    assert!(
        assistants[0]["data"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("partial")
    );
    assert_eq!(assistants[1]["data"]["content"][0]["text"], "second answer");
    // The next request replays it: no two user messages in a row.
    let roles: Vec<String> = server.requests()[1].json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(roles[roles.len() - 3..], ["user", "assistant", "user"]);
    let shown = ws.run(&["show"]).ok();
    assert!(shown.contains("[assistant, interrupted]"), "{shown}");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// ESC while `sleep 30` runs: the tool is killed, its call gets
/// `Operation aborted`, and the history stays valid for the next request.
#[test]
fn esc_stops_a_running_tool() {
    let ws = Workspace::new();
    let server = sleeping_then("after the abort");
    let tmux = chat(&ws, &server, &[]);
    tmux.line("run it");
    tmux.wait_screen("$ sleep 30");
    tmux.wait_screen("Running tools");
    tmux.keys(&["Escape"]);
    let history = tmux.wait_for("cancelled");
    assert!(history.contains("Operation aborted"), "{history}");
    tmux.line("go on");
    tmux.wait_for("after the abort");
    let events = jsonl(&ws.only_session());
    let tool = events.iter().find(|e| e["type"] == "message.tool").unwrap();
    assert!(
        tool["data"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Operation aborted"),
        "{tool}"
    );
    assert!(server.violations().is_empty(), "{:?}", server.violations());
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Enter while a tool batch runs steers: the text shows as queued and is
/// admitted after the batch, before the next request (C21).
#[test]
fn steering_during_a_tool_batch() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "bash",
            r#"{"command":"while [ ! -f go ]; do sleep 0.05; done; echo done"}"#,
        )])),
        Reply::sse(chat_text("steered answer")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("start");
    tmux.wait_screen("Running tools");
    tmux.line("also check the docs");
    tmux.wait_screen("↳ queued: also check the docs");
    std::fs::write(ws.path().join("go"), "").unwrap();
    tmux.wait_for("steered answer");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        user_texts(&requests[1].json()),
        ["start", "also check the docs"]
    );
    let history = tmux.history();
    assert!(history.contains("• also check the docs"), "{history}");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Two prompts typed during the final pass run next as one combined
/// prompt (G8: joined by a blank line). The answer is held open until
/// both are queued (a file opens the gate), so no typing window is
/// assumed.
#[test]
fn two_steering_prompts_during_the_final_pass_become_one_follow_up() {
    let ws = Workspace::new();
    let gate = ws.path().join("release-the-answer");
    let mut chunks = chat_text_chunks("slow final answer", 4);
    let rest = chunks.split_off(1);
    let server = FakeServer::start(vec![
        Reply::Gated {
            events: chunks,
            gate: gate.clone(),
            rest,
        },
        Reply::sse(chat_text("combined answer")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("first");
    tmux.wait_screen("Responding");
    tmux.line("one");
    tmux.line("two");
    tmux.wait_screen("↳ queued: two");
    std::fs::write(&gate, "").unwrap();
    tmux.wait_for("combined answer");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let users = user_texts(&requests[1].json());
    assert_eq!(users.last().unwrap(), "one\n\ntwo");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Slash commands are local: `/nope` is named and sends nothing,
/// `/status` reads the log, `/help` lists the commands.
#[test]
fn slash_commands_status_unknown_and_help() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text("hi"))]).unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("/nope");
    tmux.wait_for("unknown command: /nope");
    assert!(
        server.requests().is_empty(),
        "an unknown command is never sent"
    );
    // It stays in the editor to be fixed.
    tmux.wait_screen("› /nope");
    tmux.keys(&["C-u"]);
    tmux.line("hello");
    tmux.wait_for("• hi");
    tmux.line("/status");
    let history = tmux.wait_for("user turns");
    assert!(history.contains("model calls  1"), "{history}");
    tmux.line("/help");
    tmux.wait_for("/context dump");
    assert_eq!(server.requests().len(), 1);
    let events = jsonl(&ws.only_session());
    assert!(
        !events
            .iter()
            .any(|e| e.to_string().contains("/status") || e.to_string().contains("/nope")),
        "slash commands are not history"
    );
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// `/export html` writes a self-contained page with the blocks.
#[test]
fn export_html_writes_the_transcript() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text(
        "an <b>answer</b> with **markdown**",
    ))])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("question");
    tmux.wait_for("with markdown");
    tmux.line("/export html out.html");
    tmux.wait_for("wrote the transcript to");
    let html = std::fs::read_to_string(ws.path().join("out.html")).unwrap();
    assert!(html.starts_with("<!doctype html>"), "{html}");
    assert!(html.contains("question"));
    assert!(html.contains("<strong>markdown</strong>"), "{html}");
    assert!(
        html.contains("&lt;b&gt;answer&lt;/b&gt;"),
        "model HTML is text: {html}"
    );
    tmux.line("/export md notes.md");
    // The typed command shows the name too: wait for etch's answer.
    tmux.wait("the markdown export", |text| {
        text.matches("wrote the transcript to").count() >= 2
    });
    let md = std::fs::read_to_string(ws.path().join("notes.md")).unwrap();
    assert!(
        md.contains("question") && md.contains("**markdown**"),
        "{md}"
    );
    tmux.line("/export jsonl");
    tmux.wait("the jsonl copy", |h| {
        h.contains(".jsonl") && h.matches("wrote the transcript to").count() >= 3
    });
    let id = ws
        .only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let copy = std::fs::read(ws.path().join(format!("etch-{id}.jsonl"))).unwrap();
    assert_eq!(copy, std::fs::read(ws.only_session()).unwrap());
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// `etch resume PREFIX` on a terminal opens the chat with the recent
/// transcript drawn again and the prompts as history.
#[test]
fn resume_draws_the_transcript_and_seeds_history() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text("the first answer"))]).unwrap();
    let run = ws.run(
        &[
            &against(&server)[..],
            &["-p".to_owned(), "first question".to_owned()],
        ]
        .concat()
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
    );
    run.ok();
    let id = ws
        .only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let tmux = resume_chat(&ws, &server, &id);
    let history = tmux.wait_for("the first answer");
    assert!(history.contains("• first question"), "{history}");
    tmux.keys(&["Up"]);
    tmux.wait_screen("› first question");
    tmux.keys(&["C-u", "C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Escape sequences in a tool's output and in the model's text never
/// reach the terminal: no retitling, no clearing, the text stays.
#[test]
fn hostile_escape_sequences_are_shown_harmlessly() {
    let ws = Workspace::new();
    std::fs::write(
        ws.path().join("evil.txt"),
        "before\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[3Jafter\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "bash",
            r#"{"command":"cat evil.txt"}"#,
        )])),
        Reply::sse(chat_text("model \u{1b}[8mhidden\u{1b}[0m text")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("show it");
    let history = tmux.wait_for("model hidden text");
    assert!(history.contains("beforeafter"), "{history}");
    assert!(
        history.contains("/help for commands"),
        "nothing was cleared: {history}"
    );
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// A 1 MB paste is one marker in the editor and is sent whole.
#[test]
fn a_large_paste_is_a_marker_and_is_sent_whole() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text("got it"))]).unwrap();
    let tmux = chat(&ws, &server, &[]);
    let big: String = (0..20_000)
        .map(|i| format!("line {i} of the paste\n"))
        .collect();
    tmux.paste(&big);
    tmux.wait_screen("[paste #1 +20000 lines]");
    tmux.keys(&["Enter"]);
    tmux.wait_for("got it");
    let requests = server.requests();
    let users = user_texts(&requests[0].json());
    assert_eq!(users[0].trim_end(), big.trim_end());
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// A pasted path of an image file (as a terminal pastes a dropped
/// file) becomes an attachment marker with the size the model gets; the
/// prompt goes with the image; the transcript shows the marker.
#[test]
fn a_pasted_image_path_is_attached() {
    let ws = Workspace::new();
    let png = etch_image::sample(3000, 1500, etch_model::MediaType::Png).unwrap();
    std::fs::write(ws.path().join("my shot.png"), &png).unwrap();
    let server = FakeServer::start(vec![Reply::sse(chat_text("a gradient"))]).unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.type_text("what is ");
    tmux.paste(&format!("'{}'", ws.path().join("my shot.png").display()));
    tmux.wait_screen("[image #1 my shot.png 2000x1000]");
    tmux.keys(&["Enter"]);
    tmux.wait_for("a gradient");
    let request = server.requests()[0].json();
    let user = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .unwrap()
        .clone();
    let parts = user["content"].as_array().unwrap();
    let url = parts.last().unwrap()["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,"), "{user:.300}");
    let log = jsonl(&ws.only_session());
    let part = log.iter().find(|e| e["type"] == "message.user").unwrap()["data"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "image")
        .unwrap()
        .clone();
    assert_eq!(part["width"], 2000);
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Resizes while an answer streams: every history row is written once,
/// none is lost, and the chat goes on.
#[test]
fn a_resize_storm_during_streaming_keeps_history_whole() {
    let ws = Workspace::new();
    let lines: String = (1..=40)
        .map(|i| format!("row-{i:02} of the answer\n\n"))
        .collect();
    let server = FakeServer::start(vec![Reply::Sse {
        events: chat_text_chunks(&lines, 40),
        gap: Duration::from_millis(20),
        end: End::Close,
    }])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("stream");
    tmux.wait_screen("Responding");
    for i in 0..30u16 {
        let (w, h) = if i % 2 == 0 {
            (60 + i, 20 + i % 7)
        } else {
            (120 - i, 34 - i % 5)
        };
        tmux.resize(w, h);
    }
    tmux.resize(SIZE.0, SIZE.1);
    tmux.wait_for("row-40 of the answer");
    tmux.wait_screen("1 req");
    // Preview rows (led by `┊`) are live-area rows; a resize racing a
    // frame can strand one in the scrollback, marked as such. The
    // answer's own rows are there exactly once.
    let history: String = tmux
        .history()
        .lines()
        .filter(|l| !l.trim_start().starts_with('┊'))
        .collect::<Vec<_>>()
        .join("\n");
    for i in 1..=40 {
        assert_eq!(
            count(&history, &format!("row-{i:02} of the answer")),
            1,
            "row {i}:\n{history}"
        );
    }
    assert_eq!(count(&history, "/help for commands"), 1, "{history}");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Starts the chat on the offline echo model.
fn echo_chat(ws: &Workspace, width: u16, height: u16) -> Tmux {
    let tmux = Tmux::start(ws, &["--provider", "echo"], &[], width, height);
    tmux.wait_for("/help for commands");
    tmux
}

/// Waits until the process `pid` has exited.
fn wait_gone(pid: u32) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::path::Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "etch {pid} did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `/fork` picks an earlier prompt: a new session file starts before it
/// and the prompt is back in the editor.
#[test]
fn fork_starts_a_new_session_before_an_earlier_prompt() {
    let ws = Workspace::new();
    let tmux = echo_chat(&ws, SIZE.0, SIZE.1);
    tmux.line("first prompt");
    tmux.wait_for("─ ");
    tmux.line("second prompt");
    tmux.wait("two turn footers", |h| count(h, "─ 0.") >= 2);
    tmux.line("/fork");
    tmux.wait_screen("fork a new session before which prompt?");
    tmux.keys(&["Down"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("forked into a new session");
    tmux.wait_screen("› first prompt");
    assert_eq!(ws.session_files().len(), 2);
    tmux.keys(&["Enter"]);
    tmux.wait("the forked session's answer", |h| {
        count(h, "• first prompt") >= 4
    });
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
    let history = tmux.history();
    let newest = ws.session_files().into_iter().max().unwrap();
    let id = newest.file_stem().unwrap().to_string_lossy().into_owned();
    assert!(history.contains(&format!("etch resume {id}")), "{history}");
    let events = jsonl(&newest);
    let users: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message.user")
        .collect();
    assert_eq!(
        users.len(),
        1,
        "the fork holds what came before the prompt, then the prompt sent again"
    );
}

/// `/tree` goes back to an earlier prompt (its text in the editor); what
/// is sent from there is a new branch, and the old one stays in the tree.
#[test]
fn tree_moves_back_and_a_new_branch_grows() {
    let ws = Workspace::new();
    let tmux = echo_chat(&ws, SIZE.0, SIZE.1);
    tmux.line("alpha");
    tmux.wait_for("─ ");
    tmux.line("beta");
    tmux.wait("two turns", |h| count(h, "─ 0.") >= 2);
    tmux.line("/tree");
    tmux.wait_screen("move to which point?");
    // The leaf's answer is selected; two rows up is the prompt "beta".
    tmux.keys(&["Up"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("moved in the session tree");
    tmux.wait_screen("› beta");
    tmux.keys(&["C-u"]);
    tmux.line("gamma");
    tmux.wait_for("• gamma");
    tmux.wait("three turns", |h| count(h, "─ 0.") >= 3);
    tmux.line("/tree");
    let screen = tmux.wait_screen("move to which point?");
    assert!(screen.contains("○ you: beta"), "{screen}");
    assert!(screen.contains("● you: gamma"), "{screen}");
    assert!(screen.contains("● you: alpha"), "{screen}");
    tmux.escape_from("move to which point?");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Ctrl-C clears a draft, and twice on an empty one quits.
#[test]
fn ctrl_c_twice_quits() {
    let ws = Workspace::new();
    let tmux = echo_chat(&ws, SIZE.0, SIZE.1);
    tmux.type_text("a draft");
    tmux.wait_screen("› a draft");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_screen("press Ctrl-C again to quit");
    tmux.keys(&["C-c"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// SIGTERM during a run: the run is aborted, the terminal given back,
/// the log valid (a resumed run sends a well-formed history).
#[test]
fn sigterm_mid_run_keeps_the_session_valid() {
    let ws = Workspace::new();
    let server = sleeping_then("resumed fine");
    let tmux = chat(&ws, &server, &[]);
    tmux.line("run a long command");
    tmux.wait_screen("Running tools");
    let pid = tmux.etch_pid();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(tmux.exit_code(), 130);
    let events = jsonl(&ws.only_session());
    let tool = events
        .iter()
        .find(|e| e["type"] == "message.tool")
        .expect("the call got a result");
    assert!(
        tool["data"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Operation aborted")
    );
    let id = ws
        .only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let mut args = vec!["resume".to_owned(), id, "-p".to_owned(), "go on".to_owned()];
    args.extend(against(&server));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert!(ws.run(&args).ok().contains("resumed fine"));
    assert!(server.violations().is_empty(), "{:?}", server.violations());
}

/// The terminal closing mid-run (SIGHUP) aborts the run and leaves a
/// valid session.
#[test]
fn the_terminal_closing_mid_run_keeps_the_session_valid() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![stalled()]).unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("stream something");
    tmux.wait_screen("Responding");
    let pid = tmux.etch_pid();
    tmux.close_terminal();
    wait_gone(pid);
    let events = jsonl(&ws.only_session());
    // The answer cut short is kept, marked as interrupted (G20).
    let answers: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message.assistant")
        .collect();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["data"]["stopReason"], "aborted");
    assert_eq!(
        types(&events)
            .iter()
            .filter(|t| *t == "message.user")
            .count(),
        1
    );
    let shown = ws.run(&["show"]);
    assert!(shown.ok().contains("stream something"));
}

/// A 20x5 terminal and smaller: the chat degrades and keeps working.
#[test]
fn a_tiny_terminal_still_works() {
    let ws = Workspace::new();
    let tmux = Tmux::start(&ws, &["--provider", "echo"], &[], 20, 5);
    tmux.wait_for("etch");
    tmux.line("hello from a small terminal");
    // The turn's footer row starts with `─ ` once the answer is in.
    tmux.wait("the first turn", |h| h.lines().any(|l| l.starts_with("─ ")));
    tmux.resize(8, 3);
    tmux.line("x");
    tmux.resize(20, 5);
    tmux.wait("the second turn", |h| {
        h.lines().filter(|l| l.starts_with("─ ")).count() >= 2
    });
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
    let events = jsonl(&ws.only_session());
    assert_eq!(
        types(&events)
            .iter()
            .filter(|t| *t == "message.user")
            .count(),
        2
    );
}

/// `!cmd` adds the output to the context; `!!cmd` shows it only.
#[test]
fn bang_commands_run_bash_with_and_without_context() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text("seen"))]).unwrap();
    let tmux = chat(&ws, &server, &[]);
    // The blocks show `$ command` (the editor showed `!command`).
    tmux.line("!echo kept-output");
    tmux.wait_for("$ echo kept-output");
    tmux.line("!!echo private-output");
    tmux.wait_for("$ echo private-output");
    tmux.line("what did I run?");
    tmux.wait_for("• seen");
    let body = server.requests()[0].body_text();
    assert!(body.contains("Ran `echo kept-output`"), "{body}");
    assert!(!body.contains("private-output"), "{body}");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// `/reload` reads AGENTS.md again: the next request carries it.
#[test]
fn reload_picks_up_a_new_agents_file() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("one")),
        Reply::sse(chat_text("two")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("first");
    tmux.wait_for("• one");
    std::fs::write(
        ws.path().join("AGENTS.md"),
        "Always answer in haiku (reloaded rule).\n",
    )
    .unwrap();
    tmux.line("/reload");
    tmux.wait_for("reloaded: 1 instruction file(s)");
    tmux.line("second");
    tmux.wait_for("• two");
    let requests = server.requests();
    assert!(!requests[0].body_text().contains("reloaded rule"));
    assert!(requests[1].body_text().contains("reloaded rule"));
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// With `TERM=dumb` the chat is line by line: plain text, no cursor
/// movement, end of input quits.
#[test]
fn a_dumb_terminal_gets_the_line_mode() {
    let ws = Workspace::new();
    let tmux = Tmux::start(
        &ws,
        &["--provider", "echo"],
        &[("TERM", "dumb")],
        SIZE.0,
        SIZE.1,
    );
    tmux.wait_for("/help for commands");
    tmux.line("plain **words**");
    tmux.wait_for("• plain words");
    tmux.line("/nope");
    tmux.wait_for("unknown command: /nope");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
    let history = tmux.history();
    assert!(history.contains("continue with: etch resume"), "{history}");
    assert!(!history.contains("────"), "no live area: {history}");
}

/// A Chat Completions stream with reasoning, then an answer.
fn reasoning_then(text: &str) -> Vec<String> {
    use etch_test_support::sse_data;
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        sse_data(
            &serde_json::json!({
                "id": "c", "object": "chat.completion.chunk", "model": "m1",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
            })
            .to_string(),
        )
    };
    vec![
        chunk(
            serde_json::json!({"role": "assistant", "reasoning_content": "**Weighing options** first I compare the two parsers"}),
            None,
        ),
        chunk(serde_json::json!({"content": text}), None),
        chunk(serde_json::json!({}), Some("stop")),
        sse_data("[DONE]"),
    ]
}

/// Reasoning is drawn as its own block before the answer, and drawn
/// again when the session is resumed (E-CHAT-19).
#[test]
fn reasoning_is_shown_and_replayed_on_resume() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(reasoning_then("the verdict"))]).unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("which parser?");
    let history = tmux.wait_for("• the verdict");
    let thought = history
        .find("first I compare the two parsers")
        .expect(&history);
    assert!(
        thought < history.find("• the verdict").unwrap(),
        "{history}"
    );
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
    let id = ws
        .only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let again = resume_chat(&ws, &server, &id);
    let history = again.wait_for("• the verdict");
    assert!(
        history.contains("first I compare the two parsers"),
        "{history}"
    );
    again.keys(&["C-d"]);
    assert_eq!(again.exit_code(), 0);
}

/// A tool printing invalid UTF-8 and a 5 MB line: collapsed, cut to the
/// width, and the chat goes on.
#[test]
fn huge_and_binary_tool_output_is_contained() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "bash",
            r#"{"command":"printf 'bad \\377\\376 bytes\\n'; head -c 5000000 /dev/zero | tr '\\0' x; echo"}"#,
        )])),
        Reply::sse(chat_text("contained")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("print it");
    let history = tmux.wait_for("• contained");
    assert!(history.contains("bad "), "{history}");
    assert!(
        history
            .lines()
            .all(|l| l.chars().count() <= usize::from(SIZE.0)),
        "rows fit the terminal"
    );
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// `/model` lists the models the server offers besides the known ones
/// and picks one by typed name (recorded as `model.change`, the next
/// request uses it), `/thinking` names the levels, `/context` and
/// `/context dump` report and write the context, `/copy` saves the last
/// answer, `/name` renames the session in the index.
#[test]
fn model_context_copy_and_name_commands() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("first")),
        Reply::json(
            200,
            &serde_json::json!({"data": [{"id": "m1"}, {"id": "qwen3-coder"}]}),
        ),
        Reply::sse(chat_text("second")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("hello");
    tmux.wait_for("• first");
    tmux.line("/model");
    tmux.wait_screen("switch to which model?");
    tmux.wait_screen("openai/qwen3-coder  (offered by the server)");
    let listed = &server.requests()[1];
    assert_eq!(
        (listed.method.as_str(), listed.path.as_str()),
        ("GET", "/v1/models")
    );
    tmux.type_text("m2-large");
    tmux.wait_screen("Enter: use the model \"m2-large\"");
    tmux.keys(&["Enter"]);
    tmux.wait_for("model: m2-large (openai)");
    tmux.wait_screen("m2-large · ");
    tmux.line("again");
    tmux.wait_for("• second");
    assert_eq!(server.requests()[2].json()["model"], "m2-large");
    tmux.line("/thinking");
    tmux.wait_for("change with /thinking off|none|minimal|low|medium|high|xhigh");
    tmux.line("/thinking high");
    tmux.wait_for("thinking: high");
    // A new effort is no model change: one `model:` line, said for users
    // (no flag names, no `etch:` prefix).
    let history = tmux.history();
    assert_eq!(count(&history, "model: "), 1, "{history}");
    assert!(
        !history.contains("etch: note") && !history.contains("(--provider)"),
        "{history}"
    );
    tmux.line("/context");
    tmux.wait_for("tool schemas");
    tmux.line("/context dump");
    let history = tmux.wait_for("wrote context dump to");
    assert!(history.contains(".etch/context-dump-"), "{history}");
    let dumps: Vec<_> = std::fs::read_dir(ws.path().join(".etch"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("context-dump-"))
        .collect();
    assert_eq!(dumps.len(), 1);
    let dump = std::fs::read_to_string(dumps[0].path()).unwrap();
    assert!(dump.contains("=== conversation ===") && dump.contains("=== tools ==="));
    tmux.line("/copy");
    tmux.wait_for("copied the last answer");
    let copied = std::fs::read_to_string(ws.path().join(".etch/tmp/last-answer.md")).unwrap();
    assert_eq!(copied, "second");
    tmux.line("/name the model switch");
    tmux.wait_for("is now named \"the model switch\"");
    let listed = ws.run(&["sessions"]);
    assert!(listed.ok().contains("the model switch"));
    let events = jsonl(&ws.only_session());
    assert!(
        types(&events).iter().any(|t| t == "model.change"),
        "{:?}",
        types(&events)
    );
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// A model the server offers is picked from the list; a server that
/// cannot list its models says why under the title, and the known
/// choices stay usable.
#[test]
fn model_picks_a_model_the_server_offers() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::json(
            200,
            &serde_json::json!({"data": [{"id": "m1"}, {"id": "meta/llama-4\u{1b}[2J"}, {"id": "qwen3-coder"}]}),
        ),
        Reply::sse(chat_text("from qwen")),
        Reply::json(500, &serde_json::json!({"error": {"message": "lists are down"}})),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("/model");
    tmux.wait_screen("openai/qwen3-coder  (offered by the server)");
    // A name unfit to show is left out; m1 is listed once, as current.
    let screen = tmux.screen();
    assert!(!screen.contains("llama-4"), "{screen}");
    assert_eq!(count(&screen, "openai/m1"), 1, "{screen}");
    tmux.type_text("coder");
    tmux.wait_screen("filter: coder");
    tmux.keys(&["Enter"]);
    tmux.wait_for("model: qwen3-coder (openai; the session starts");
    tmux.line("go");
    tmux.wait_for("• from qwen");
    assert_eq!(server.requests()[1].json()["model"], "qwen3-coder");
    tmux.line("/model");
    tmux.wait_screen("the server's models are not listed:");
    tmux.wait_screen("HTTP 500");
    tmux.escape_from("switch to which model?");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// `/new` leaves the session; the next prompt starts another, and
/// `/resume` picks the first one back.
#[test]
fn new_and_resume_switch_sessions() {
    let ws = Workspace::new();
    let tmux = echo_chat(&ws, SIZE.0, SIZE.1);
    tmux.line("in the first session");
    tmux.wait("the first answer", |h| {
        count(h, "in the first session") >= 2
    });
    tmux.line("/new");
    tmux.wait_for("new session: it starts with your next prompt");
    tmux.line("in the second session");
    tmux.wait("the second answer", |h| {
        count(h, "in the second session") >= 2
    });
    assert_eq!(ws.session_files().len(), 2);
    tmux.line("/resume");
    tmux.wait_screen("resume which session?");
    tmux.type_text("first");
    tmux.keys(&["Enter"]);
    tmux.wait_for("resumed session");
    tmux.line("/status");
    let history = tmux.wait_for("user turns");
    assert!(history.rfind("user turns   1").is_some(), "{history}");
    tmux.line("back in the first");
    tmux.wait("the answer", |h| count(h, "back in the first") >= 2);
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
    let first = ws.session_files().into_iter().min().unwrap();
    let events = jsonl(&first);
    assert_eq!(
        types(&events)
            .iter()
            .filter(|t| *t == "message.user")
            .count(),
        2
    );
}

/// `/compact` runs through the host and says what happened (here the
/// session is too small to be worth it); the chat is free again after.
#[test]
fn compact_reports_and_frees_the_chat() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("a short answer")),
        Reply::sse(chat_text("after compacting")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("start");
    tmux.wait_for("─ ");
    // Without an argument (which would force it).
    tmux.line("/compact");
    tmux.wait_for("nothing to compact");
    tmux.line("next");
    tmux.wait_for("• after compacting");
    assert!(!tmux.screen().contains("Running compact"));
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// `@` lists the project's files (on a thread of its own) and the popup
/// fills in by itself; Enter puts the chosen path in the prompt.
#[test]
fn at_shows_project_files_by_itself() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/parser.rs"), "").unwrap();
    let tmux = echo_chat(&ws, SIZE.0, SIZE.1);
    tmux.type_text("look at @");
    tmux.wait_screen("  src/parser.rs");
    tmux.keys(&["Enter"]);
    tmux.wait_screen("› look at src/parser.rs");
    tmux.keys(&["C-u", "C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// `/skill:NAME text` sends the skill's instructions with the text;
/// Tab completes the name.
#[test]
fn a_skill_command_sends_the_skill() {
    let ws = Workspace::new();
    let dir = ws.path().join(".etch/skills/deploy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the service.\n---\nRun make deploy-now.\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![Reply::sse(chat_text("deploying"))]).unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.type_text("/skill:dep");
    tmux.keys(&["Tab"]);
    tmux.wait_screen("› /skill:deploy");
    tmux.line("to staging");
    tmux.wait_for("• deploying");
    let users = user_texts(&server.requests()[0].json());
    let sent = users.last().unwrap();
    assert!(
        sent.contains("Run make deploy-now.") && sent.contains("to staging"),
        "{sent}"
    );
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Ctrl-T lists the running subagents with what each is doing; Enter
/// stops the chosen one (its call gets `Operation aborted`), its shell is
/// gone, and the parent's run goes on.
#[test]
fn ctrl_t_stops_a_running_subagent() {
    let ws = Workspace::new();
    ws.user_config(
        "[subagents]\nenabled = true\n\n[[subagents.profile]]\nname = \"waiter\"\nallowed_tools = [\"bash\"]\n",
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "task",
            r#"{"profile":"waiter","task":"wait for it"}"#,
        )])),
        Reply::sse(chat_tool_calls(&[(
            "k1",
            "bash",
            r#"{"command":"echo $$ > loop.pid; while [ ! -f never ]; do sleep 0.05; done"}"#,
        )])),
        Reply::sse(chat_text("parent goes on")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.keys(&["C-t"]);
    tmux.wait_for("no subagent is running");
    tmux.line("delegate");
    tmux.wait_for("/ waiter: wait for it => bash");
    tmux.wait_screen("1 subagent (ctrl+t)");
    tmux.keys(&["C-t"]);
    tmux.wait_for("stop which subagent?");
    tmux.keys(&["Enter"]);
    tmux.wait_for("parent goes on");
    let pid = std::fs::read_to_string(ws.path().join("loop.pid")).unwrap();
    let gone = support::process_gone(&pid);
    // Ends the loop whatever happened, so no shell outlives the test.
    std::fs::write(ws.path().join("never"), "").unwrap();
    assert!(gone, "the child's shell {pid} outlived the stop");
    let body = server.requests()[2].body_text();
    assert!(body.contains("tool error: Operation aborted"), "{body}");
}

/// A task call's start is drawn at once with the whole delegated task;
/// the child's two requests count in the footer and the turn's summary
/// beside the parent's two (E-SUB-13, E-SUB-16).
#[test]
fn a_subagent_shows_its_task_and_counts_in_the_footer() {
    let ws = Workspace::new();
    ws.user_config(
        "[subagents]\nenabled = true\n\n[[subagents.profile]]\nname = \"waiter\"\nallowed_tools = [\"bash\"]\n",
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "task",
            r#"{"profile":"waiter","task":"wait for the flag\nthen report who set it"}"#,
        )])),
        Reply::sse(chat_tool_calls(&[(
            "k1",
            "bash",
            r#"{"command":"for i in $(seq 400); do [ -f flag ] && break; sleep 0.05; done; echo set"}"#,
        )])),
        Reply::sse(chat_text("the test set it")),
        Reply::sse(chat_text("parent done")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("delegate");
    // While the child still waits, its whole task is in the history.
    tmux.wait_for("then report who set it");
    tmux.wait_screen("/ waiter: wait for the flag => bash");
    std::fs::write(ws.path().join("flag"), "").unwrap();
    tmux.wait_for("4 requests");
    tmux.wait_screen("4 req");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Narrows the terminal to each of `widths` in turn, as dragging a
/// window's edge does, waiting after each until the live area's rule has
/// been redrawn at the new width (a frame drawn for it), never for a
/// fixed time.
fn narrow_in_steps(tmux: &Tmux, widths: &[u16], height: u16) {
    for &w in widths {
        tmux.resize(w, height);
        // Live rows leave the last column and a margin of 4 free.
        let rule = "─".repeat(usize::from(w) - 5);
        tmux.wait(&format!("the live area redrawn at {w} columns"), |_| {
            tmux.screen().lines().any(|l| l.trim_end() == rule)
        });
    }
}

/// The widths of issue 28's report: 120, then 98 down to 84 in steps
/// of two.
const NARROWING: [u16; 9] = [120, 98, 96, 94, 92, 90, 88, 86, 84];

/// Narrowing the window in steps, idle, leaves exactly one live area:
/// no stale copy of the rule, editor or footer in the scrollback, every
/// history row once; Ctrl+L repaints without adding a copy.
#[test]
fn narrowing_in_steps_leaves_no_stale_copies() {
    let ws = Workspace::new();
    let tmux = Tmux::start(&ws, &["--provider", "echo"], &[], 120, 30);
    tmux.wait_for("/help for commands");
    tmux.line("hello there");
    tmux.wait("the answer's turn footer", |h| {
        h.lines().any(|l| l.starts_with("─ "))
    });
    narrow_in_steps(&tmux, &NARROWING, 30);
    tmux.keys(&["C-l"]);
    tmux.keys(&["x"]);
    tmux.wait_screen("› x");
    let history = tmux.history();
    let footers = history.lines().filter(|l| l.starts_with("echo · ")).count();
    assert_eq!(footers, 1, "{history}");
    assert_eq!(count(&history, "› x"), 1, "{history}");
    assert_eq!(count(&history, "/help for commands"), 1, "{history}");
    assert_eq!(count(&history, "• hello there"), 2, "{history}");
    let rules = history
        .lines()
        .filter(|l| !l.is_empty() && l.chars().all(|c| c == '─'))
        .count();
    assert_eq!(rules, 1, "{history}");
    tmux.keys(&["C-u", "C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// The terminal's own cursor is shown at the insertion point (IME
/// candidate windows and screen readers follow it), on the editor's row,
/// also on a second line, after the window narrowed and after Ctrl+L;
/// it used to be hidden for the whole chat and parked on the rule row.
#[test]
fn the_cursor_sits_at_the_insertion_point() {
    let ws = Workspace::new();
    let tmux = echo_chat(&ws, SIZE.0, SIZE.1);
    tmux.type_text("hello");
    tmux.wait_cursor("› hello", 7);
    tmux.keys(&["Left", "Left"]);
    tmux.wait_cursor("› hello", 5);
    tmux.keys(&["End", "C-j"]);
    tmux.type_text("wörld 日本");
    tmux.wait_cursor("  wörld 日本", 12);
    tmux.line("");
    tmux.wait_for("• hello");
    tmux.wait_cursor("› ", 2);
    tmux.type_text("again");
    narrow_in_steps(&tmux, &[90, 80, 70], SIZE.1);
    tmux.wait_cursor("› again", 7);
    tmux.keys(&["C-l"]);
    tmux.wait_cursor("› again", 7);
    tmux.keys(&["C-u", "C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Two narrowing resizes while a 40-paragraph answer streams: every
/// paragraph reaches the scrollback exactly once, no preview row is
/// stranded there, and one footer remains.
#[test]
fn narrowing_during_a_stream_keeps_every_paragraph_once() {
    let ws = Workspace::new();
    let text: String = (1..=40)
        .map(|i| format!("paragraph-{i:02} of the streamed answer\n\n"))
        .collect();
    let server = FakeServer::start(vec![Reply::Sse {
        events: chat_text_chunks(&text, 30),
        gap: Duration::from_millis(60),
        end: End::Close,
    }])
    .unwrap();
    let args = against(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // A tall terminal: the live area starts high on the screen, where a
    // reflow used to push it into the scrollback.
    let tmux = Tmux::start(&ws, &args, &[], 120, 60);
    tmux.wait_for("/help for commands");
    tmux.line("stream");
    tmux.wait_for("paragraph-03");
    narrow_in_steps(&tmux, &NARROWING[..5], 60);
    tmux.wait_for("paragraph-12");
    narrow_in_steps(&tmux, &NARROWING[5..], 60);
    // The cursor stays in the editor while the answer streams.
    tmux.wait_cursor("› ", 2);
    tmux.wait_for("paragraph-40 of the streamed answer");
    tmux.wait_screen("1 req");
    let history = tmux.history();
    for i in 1..=40 {
        assert_eq!(
            count(
                &history,
                &format!("paragraph-{i:02} of the streamed answer")
            ),
            1,
            "paragraph {i}:\n{history}"
        );
    }
    let footers = history.lines().filter(|l| l.starts_with("m1 · ")).count();
    assert_eq!(footers, 1, "{history}");
    assert_eq!(count(&history, "Responding"), 0, "{history}");
    assert_eq!(count(&history, "┊"), 0, "{history}");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// `/name` without a title is refused and stays selected; typing `/quit
/// now` replaces it and quits, where it used to send "/name/quit now"
/// to the model and start a session.
#[test]
fn a_refused_command_is_replaced_by_what_is_typed_next() {
    let ws = Workspace::new();
    let tmux = Tmux::start(&ws, &["--provider", "echo"], &[], SIZE.0, SIZE.1);
    tmux.wait_for("/help for commands");
    tmux.line("/name");
    tmux.wait_for("give the new name");
    tmux.line("/quit now");
    assert_eq!(tmux.exit_code(), 0);
    let history = tmux.history();
    assert!(!history.contains("/name/quit"), "{history}");
    assert!(history.contains("no session was started"), "{history}");
    assert!(ws.session_files().is_empty());
}

/// E-CHAT-05: `x1`, `/status`, `x2` typed while an answer streams are
/// two turns, in order, where they used to be one follow-up "x1\n\nx2".
#[test]
fn a_command_between_queued_prompts_keeps_them_apart() {
    let ws = Workspace::new();
    // The answer is held open until all three are typed.
    let gate = ws.path().join("release-the-answer");
    let mut chunks = chat_text_chunks("slow final answer", 4);
    let rest = chunks.split_off(1);
    let server = FakeServer::start(vec![
        Reply::Gated {
            events: chunks,
            gate: gate.clone(),
            rest,
        },
        Reply::sse(chat_text("answer to x1")),
        Reply::sse(chat_text("answer to x2")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("first");
    tmux.wait_screen("Responding");
    tmux.line("x1");
    tmux.wait_screen("↳ queued: x1");
    tmux.line("/status");
    tmux.line("x2");
    tmux.wait_screen("↳ after the command: x2");
    std::fs::write(&gate, "").unwrap();
    tmux.wait_for("answer to x2");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(user_texts(&requests[1].json()).last().unwrap(), "x1");
    assert_eq!(user_texts(&requests[2].json()).last().unwrap(), "x2");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// The transcript shows what matters: a long paste as its marker (it is
/// sent whole), and a collapsed command's last lines, where the exit code
/// and the last error are.
#[test]
fn pastes_show_as_markers_and_commands_show_their_tail() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "bash",
            r#"{"command": "seq 1 30"}"#,
        )])),
        Reply::sse(chat_text("counted")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    let paste: String = (1..=120).map(|i| format!("pasted row {i}\n")).collect();
    tmux.paste(&paste);
    tmux.wait_screen("[paste #1 +120 lines]");
    tmux.keys(&["Enter"]);
    let history = tmux.wait_for("counted");
    assert!(history.contains("[paste #1 +120 lines]"), "{history}");
    assert!(!history.contains("pasted row 120"), "{history}");
    assert!(
        user_texts(&server.requests()[0].json())
            .last()
            .unwrap()
            .contains("pasted row 120")
    );
    assert!(
        history.contains("earlier lines (ctrl+o to expand)"),
        "{history}"
    );
    // The last of `seq 1 30` shows, its head does not.
    assert!(history.lines().any(|l| l.trim() == "30"), "{history}");
    assert!(!history.lines().any(|l| l.trim() == "1"), "{history}");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Typing `/` opens the command menu on a real terminal.
#[test]
fn a_slash_opens_the_command_menu() {
    let ws = Workspace::new();
    let tmux = Tmux::start(&ws, &["--provider", "echo"], &[], SIZE.0, SIZE.1);
    tmux.wait_for("/help for commands");
    tmux.type_text("/");
    let screen = tmux.wait_screen("/model");
    assert!(screen.contains("/help"), "{screen}");
    tmux.type_text("hot");
    tmux.wait("the menu narrowed to /hotkeys", |_| {
        !tmux.screen().contains("/model")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("Ctrl+O");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// `/compact` on a short session says there is nothing to summarize;
/// `/compact force` compacts it anyway, keeping the last turn.
#[test]
fn compact_force_compacts_a_short_session() {
    let ws = Workspace::new();
    let tmux = Tmux::start(&ws, &["--provider", "echo"], &[], SIZE.0, SIZE.1);
    tmux.wait_for("/help for commands");
    tmux.line("first question");
    tmux.wait("the first answer", |h| count(h, "first question") >= 2);
    tmux.line("second question");
    tmux.wait("the second answer", |h| count(h, "second question") >= 2);
    tmux.line("/compact");
    tmux.wait_for("/compact force compacts");
    tmux.line("/compact force");
    tmux.wait("the summary", |_| {
        types(&jsonl(&ws.only_session())).contains(&"context.summary".to_owned())
    });
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// The footer counts every request: the summary of a branch left with
/// `/tree` (Tab) and a compaction's summary as well as the prompts;
/// their usage is in the log, marked with what it was for, and `etch
/// show` says so. With a price for the model, the footer adds the cost;
/// it names the git branch and the thinking level (which the Chat
/// Completions API does not send).
#[test]
fn the_footer_counts_summary_requests_and_the_cost() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".etch")).unwrap();
    std::fs::write(
        ws.path().join(".etch/config.toml"),
        "[[prices]]\nmodel = \"m1\"\ninput = 1000\noutput = 1000\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.path().join(".git")).unwrap();
    std::fs::write(ws.path().join(".git/HEAD"), "ref: refs/heads/feature-x\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("one")),
        Reply::sse(chat_text("two")),
        Reply::sse(chat_text("the branch tried two")),
        Reply::sse(chat_text("## Goal\nsummarized")),
    ])
    .unwrap();
    let tmux = chat(&ws, &server, &["--reasoning-effort", "high"]);
    tmux.wait_screen("$0.000");
    tmux.wait_screen("m1 · think high (ignored: the chat API sends none) · ");
    tmux.resize(200, SIZE.1);
    tmux.wait_screen("(feature-x)");
    tmux.line("alpha");
    tmux.wait_for("• one");
    tmux.line("beta");
    tmux.wait_for("• two");
    tmux.wait_screen("2 req");
    tmux.line("/tree");
    tmux.wait_screen("move to which point?");
    tmux.keys(&["Up"]);
    tmux.keys(&["Tab"]);
    tmux.wait_for("moved in the session tree");
    tmux.wait_screen("3 req");
    tmux.keys(&["C-u"]);
    tmux.line("/compact force");
    tmux.wait("the summary", |_| {
        types(&jsonl(&ws.only_session())).contains(&"context.summary".to_owned())
    });
    tmux.wait_screen("4 req");
    let screen = tmux.screen();
    let footer = screen.lines().find(|l| l.starts_with("m1 · ")).unwrap();
    assert!(footer.contains(" tok · $"), "{footer}");
    assert_eq!(server.requests().len(), 4);
    let events = jsonl(&ws.only_session());
    let purposes: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "model.usage")
        .filter_map(|e| e["data"]["purpose"].as_str())
        .collect();
    assert_eq!(purposes, ["branch_summary", "compaction"]);
    let shown = ws.run(&["show"]);
    assert!(
        shown.ok().contains("(usage of the branch summary:"),
        "{}",
        shown.stdout()
    );
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}

/// Up brings back a prompt of an earlier chat (kept in
/// `~/.etch/history.jsonl`, mode 0600).
#[test]
fn prompts_are_remembered_across_chats() {
    let ws = Workspace::new();
    let first = Tmux::start(&ws, &["--provider", "echo"], &[], SIZE.0, SIZE.1);
    first.wait_for("/help for commands");
    first.line("remember this prompt");
    first.wait("the answer", |h| count(h, "remember this prompt") >= 2);
    first.keys(&["C-d"]);
    assert_eq!(first.exit_code(), 0);
    let file = ws.home.path().join(".etch/history.jsonl");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let second = Tmux::start(&ws, &["--provider", "echo"], &[], SIZE.0, SIZE.1);
    second.wait_for("/help for commands");
    second.keys(&["Up"]);
    second.wait_screen("› remember this prompt");
    second.keys(&["C-u", "C-d"]);
    assert_eq!(second.exit_code(), 0);
}

/// A long answer can be read while it streams: its finished paragraphs
/// are in the history (not preview rows) before the answer ends.
#[test]
fn finished_paragraphs_are_readable_while_streaming() {
    let ws = Workspace::new();
    let text: String = (1..=12)
        .map(|i| format!("paragraph-{i:02} of a long answer\n\n"))
        .collect();
    let server = FakeServer::start(vec![Reply::Sse {
        events: chat_text_chunks(&text, 20),
        gap: Duration::from_millis(100),
        end: End::Close,
    }])
    .unwrap();
    let tmux = chat(&ws, &server, &[]);
    tmux.line("write a lot");
    let during = tmux.wait("the first paragraph in the history", |h| {
        h.lines()
            .any(|l| l.contains("paragraph-01") && !l.trim_start().starts_with('┊'))
    });
    assert!(!during.contains("paragraph-12"), "{during}");
    let done = tmux.wait_for("─ ");
    for i in 1..=12 {
        assert_eq!(count(&done, &format!("paragraph-{i:02}")), 1, "{done}");
    }
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.exit_code(), 0);
}
