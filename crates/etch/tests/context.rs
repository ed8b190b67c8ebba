//! The real `etch` binary building context (issue 5): the pinned prompt the
//! model receives (G22), instruction-file and skill diagnostics, `--skill`,
//! overflow recovery and manual compaction against the fake server, and the
//! `status` and `context` commands.

// Fixture helpers outside #[test] functions may panic on a broken setup.
#![allow(clippy::unwrap_used)]

mod support;

use etch_test_support::{FakeServer, Reply, chat_text};
use serde_json::{Value, json};
use support::{Workspace, jsonl, types};

/// Runs etch with the OpenAI provider against `server`.
fn run(ws: &Workspace, server: &FakeServer, extra: &[&str]) -> support::Run {
    run_sub(ws, server, &[], extra)
}

/// Runs the subcommand `sub` (e.g. `resume ID`) with the OpenAI provider
/// against `server`; options go after the subcommand.
fn run_sub(ws: &Workspace, server: &FakeServer, sub: &[&str], extra: &[&str]) -> support::Run {
    let base = format!("{}/v1", server.url());
    let mut args = sub.to_vec();
    args.extend([
        "--provider",
        "openai",
        "--base-url",
        base.as_str(),
        "--api-key",
        "k",
    ]);
    args.extend_from_slice(extra);
    ws.run(&args)
}

/// Writes `text` to `rel` under the workspace, creating directories.
fn write(ws: &Workspace, rel: &str, text: &str) {
    let path = ws.path().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The whole prompt of a recorded Chat Completions request: its system
/// message and the project context before the first prompt.
fn system(server: &FakeServer, n: usize) -> String {
    support::whole_prompt(&server.requests()[n].json())
}

/// Issue 30: what comes before the conversation is the same byte for byte
/// in every project (system prompt, then tools), so a server's prompt
/// cache reuses it; the project's instructions and environment lead the
/// first user message.
#[test]
fn the_prefix_before_the_conversation_is_the_same_in_every_project() {
    let mut seen = Vec::new();
    for rules in ["Use tabs.", "Use spaces."] {
        let ws = Workspace::new();
        write(&ws, "AGENTS.md", rules);
        let server = FakeServer::start(vec![Reply::sse(chat_text("ok"))]).unwrap();
        assert_eq!(run(&ws, &server, &["-p", "hi"]).ok(), "ok\n");
        let body = server.requests()[0].json();
        let messages = body["messages"].as_array().unwrap().clone();
        assert_eq!(messages[0]["role"], "system");
        let first = messages[1]["content"].as_str().unwrap().to_owned();
        assert!(support::context_of(&first).contains(rules), "{first}");
        assert!(
            support::context_of(&first).contains(&ws.path().display().to_string()),
            "{first}"
        );
        assert_eq!(support::without_context(&first), "hi");
        assert!(!messages[0]["content"].as_str().unwrap().contains(rules));
        seen.push((messages[0].clone(), body["tools"].clone()));
    }
    assert_eq!(
        seen[0], seen[1],
        "system prompt and tools differ between projects"
    );
}

/// A 400 context-overflow answer as OpenAI sends it.
fn overflow() -> Reply {
    Reply::json(
        400,
        &json!({"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
    )
}

/// G22/E-CTX-02: the model receives the base prompt, config text, SYSTEM.md,
/// AGENTS.md (CLAUDE.md where a directory has none) in Pi's wrapper, the
/// skills catalog, then cwd and date, in that order.
#[test]
fn pinned_layers_reach_the_model_in_order() {
    let ws = Workspace::new();
    write(
        &ws,
        ".etch/config.toml",
        "[prompt]\ntext = \"CONFIG TEXT\"\n",
    );
    write(&ws, "SYSTEM.md", "SYSTEM TEXT\n");
    write(&ws, "AGENTS.md", "AGENTS TEXT\n");
    write(&ws, "sub/CLAUDE.md", "CLAUDE TEXT\n");
    write(
        &ws,
        ".etch/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploy the service.\n---\nRun make deploy.\n",
    );
    let server = FakeServer::start(vec![Reply::sse(chat_text("ok"))]).unwrap();
    let out = run(&ws, &server, &["-C", "sub", "-p", "hi"]);
    assert_eq!(out.ok(), "ok\n");
    let prompt = system(&server, 0);
    let root = ws.path().to_string_lossy().into_owned();
    let order = [
        "Be concise in your responses".to_owned(),
        "CONFIG TEXT".to_owned(),
        "SYSTEM TEXT".to_owned(),
        "<project_context>\nProject-specific instructions and guidelines:".to_owned(),
        format!(
            "<project_instructions path=\"{root}/AGENTS.md\">\nAGENTS TEXT\n</project_instructions>"
        ),
        format!(
            "<project_instructions path=\"{root}/sub/CLAUDE.md\">\nCLAUDE TEXT\n</project_instructions>"
        ),
        "<available_skills>".to_owned(),
        format!("<location>{root}/.etch/skills/deploy/SKILL.md</location>"),
        format!("Current working directory: {root}/sub\nCurrent date: "),
    ];
    let mut at = 0;
    for piece in &order {
        let found = prompt[at..]
            .find(piece.as_str())
            .unwrap_or_else(|| panic!("{piece:?} missing after byte {at} in:\n{prompt}"));
        at += found + piece.len();
    }
}

/// Bad input: an unreadable AGENTS.md and a skill with malformed
/// frontmatter are reported on stderr; the run goes on without them.
#[test]
fn bad_instruction_files_and_skills_are_diagnostics() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("AGENTS.md"), b"\xff\xfe not utf-8").unwrap();
    write(
        &ws,
        ".etch/skills/broken/SKILL.md",
        "name: broken\nno frontmatter here\n",
    );
    write(
        &ws,
        ".etch/skills/good/SKILL.md",
        "---\nname: good\ndescription: A good skill.\n---\nBody.\n",
    );
    let server = FakeServer::start(vec![Reply::sse(chat_text("fine"))]).unwrap();
    let out = run(&ws, &server, &["-p", "hi"]);
    assert_eq!(out.ok(), "fine\n");
    let stderr = out.stderr();
    assert!(
        stderr.contains("AGENTS.md") && stderr.contains("UTF-8"),
        "{stderr}"
    );
    assert!(stderr.contains("broken/SKILL.md"), "{stderr}");
    let prompt = system(&server, 0);
    assert!(prompt.contains("<name>good</name>") && !prompt.contains("<name>broken</name>"));
    assert!(!prompt.contains("not utf-8"));
}

/// P-SKILL-10: `--skill NAME` puts the skill's body before the prompt; an
/// unknown skill is a usage error that lists the available ones.
#[test]
fn skill_flag_expands_into_the_prompt() {
    let ws = Workspace::new();
    write(
        &ws,
        ".agents/skills/release/SKILL.md",
        "---\nname: release\ndescription: Cut a release.\n---\nBump the version, tag, push.\n",
    );
    let server = FakeServer::start(vec![Reply::sse(chat_text("done"))]).unwrap();
    let out = run(&ws, &server, &["--skill", "release", "-p", "ship 1.2"]);
    assert_eq!(out.ok(), "done\n");
    let body = server.requests()[0].json();
    let messages = body["messages"].as_array().unwrap();
    let user = support::without_context(messages.last().unwrap()["content"].as_str().unwrap());
    let location = ws.path().join(".agents/skills/release/SKILL.md");
    assert_eq!(
        user,
        format!(
            "<skill name=\"release\" location=\"{}\">\nBump the version, tag, push.\n</skill>\n\nship 1.2",
            location.display()
        )
    );
    let out = run(&ws, &server, &["--skill", "nope", "-p", "x"]);
    assert_eq!(out.code(), 2);
    assert!(
        out.stderr()
            .contains("unknown skill \"nope\"; available: release"),
        "{}",
        out.stderr()
    );
}

/// Makes a session with one long exchange so there is something to
/// compact, keeping only the last message raw. Returns its id.
fn long_session(ws: &Workspace) -> String {
    write(
        ws,
        ".etch/config.toml",
        "[context]\nkeep_recent_tokens = 0\n[session]\nkeep_messages = 1\n[provider]\nmax_retries = 0\n",
    );
    // No usage chunk: the fake's fixed token counts would claim this long
    // exchange is tiny, so the estimate measures the messages themselves.
    let mut frames = chat_text(&"a long answer ".repeat(200));
    frames.retain(|f| !f.contains("\"prompt_tokens\""));
    let server = FakeServer::start(vec![Reply::sse(frames)]).unwrap();
    let prompt = "please explain the whole codebase ".repeat(100);
    run(ws, &server, &["-p", &prompt]).ok();
    ws.only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// P-OVF-02 through the binary: an overflow compacts (trigger overflow),
/// says so on stderr, and the retried request carries the summary.
#[test]
fn overflow_is_recovered_by_compaction() {
    let ws = Workspace::new();
    let id = long_session(&ws);
    let server = FakeServer::start(vec![
        overflow(),
        Reply::sse(chat_text("## Goal\nExplain the codebase.")),
        Reply::sse(chat_text("Recovered answer.")),
    ])
    .unwrap();
    let out = run_sub(&ws, &server, &["resume", &id], &["-p", "and now?"]);
    assert_eq!(out.ok(), "Recovered answer.\n");
    assert!(
        out.stderr().contains("compacted the context (overflow)"),
        "{}",
        out.stderr()
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let summarizer = requests[1].json();
    assert!(summarizer.get("tools").is_none(), "{summarizer}");
    let retried = requests[2].json();
    let first_user = retried["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let first_user = support::without_context(&first_user);
    assert!(
        first_user.starts_with("The conversation history before this point was compacted"),
        "{first_user}"
    );
    let events = jsonl(&ws.only_session());
    let summary = events
        .iter()
        .find(|e| e["type"] == "context.summary")
        .unwrap();
    assert_eq!(summary["data"]["trigger"], "overflow");
}

/// P-OVF-02 bad input: an overflow on the retry too is surfaced (exit 1),
/// not looped.
#[test]
fn second_overflow_is_surfaced() {
    let ws = Workspace::new();
    let id = long_session(&ws);
    let server = FakeServer::start(vec![
        overflow(),
        Reply::sse(chat_text("## Goal\nSummary.")),
        overflow(),
    ])
    .unwrap();
    let out = run_sub(&ws, &server, &["resume", &id], &["-p", "and now?"]);
    assert_eq!(out.code(), 1, "{}", out.stderr());
    assert!(
        out.stderr().contains("maximum context length"),
        "{}",
        out.stderr()
    );
    assert_eq!(server.requests().len(), 3);
    let kinds = types(&jsonl(&ws.only_session()));
    assert_eq!(kinds.iter().filter(|k| *k == "context.summary").count(), 1);
}

/// E-CLI-08: `etch compact` appends a manual summary; a summarizer failure
/// leaves the log byte-for-byte unchanged and exits 1 with a clear error.
#[test]
fn manual_compaction_and_its_failure() {
    let ws = Workspace::new();
    let id = long_session(&ws);
    let file = ws.only_session();
    let before = std::fs::read(&file).unwrap();
    let failing = FakeServer::start(vec![Reply::json(
        500,
        &json!({"error": {"message": "The server had an error.", "type": "server_error"}}),
    )])
    .unwrap();
    let out = run_sub(&ws, &failing, &["compact", "--session", &id], &[]);
    assert_eq!(out.code(), 1, "{}", out.stderr());
    assert!(
        out.stderr().contains("the session was not changed"),
        "{}",
        out.stderr()
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);

    let server = FakeServer::start(vec![Reply::sse(chat_text("## Goal\nManual."))]).unwrap();
    let out = run_sub(
        &ws,
        &server,
        &["compact", "--session", &id],
        &["--focus", "the parser"],
    );
    let said = out.ok();
    assert!(
        said.starts_with(&format!("compacted session {id}")),
        "{said}"
    );
    let request = server.requests()[0].json();
    let user = request["messages"][1]["content"].as_str().unwrap();
    assert!(user.starts_with("<conversation>\n[User]: "), "{user}");
    assert!(user.ends_with("Additional focus: the parser"), "{user}");
    let summary: Value = jsonl(&file)
        .into_iter()
        .find(|e| e["type"] == "context.summary")
        .unwrap();
    assert_eq!(summary["data"]["trigger"], "manual");
    assert_eq!(summary["data"]["instructions"], "the parser");

    let out = ws.run(&["compact", "--session", "zzzz"]);
    assert_eq!(out.code(), 2);
    let out = ws.run(&["compact", "--session", &id, "--json"]);
    assert_eq!(out.code(), 2);
    assert!(
        out.stderr().contains("does not take --json"),
        "{}",
        out.stderr()
    );
}

/// `etch status` and `etch context` report the session; `context dump`
/// writes the G12 sections.
#[test]
fn status_and_context_commands() {
    let ws = Workspace::new();
    write(&ws, "AGENTS.md", "Use tabs.\n");
    let id = long_session(&ws);
    let status = ws.run(&["status"]).ok();
    assert!(
        status.contains(&id) && status.contains("user turns   1"),
        "{status}"
    );
    let json: Value = serde_json::from_str(&ws.run(&["status", "--json"]).ok()).unwrap();
    assert_eq!(json["modelCalls"], 1);
    assert_eq!(json["transport"]["passes"]["chat-sse"], 1);

    let context = ws.run(&["context", "--session", &id]).ok();
    for piece in [
        "prompt layers",
        "AGENTS.md",
        "conversation   2 messages",
        "tool schemas",
    ] {
        assert!(context.contains(piece), "{piece} missing in {context}");
    }
    let out = ws.run(&["context", "dump"]).ok();
    let path = ws.path().join(format!(".etch/context-dump-{id}.txt"));
    assert_eq!(out, format!("wrote context dump to {}\n", path.display()));
    let dump = std::fs::read_to_string(path).unwrap();
    for header in [
        "=== base prompt ===",
        &format!(
            "=== AGENTS.md: {} ===",
            ws.path().join("AGENTS.md").display()
        ),
        "=== conversation ===",
        "=== tools ===",
    ] {
        assert!(dump.contains(header), "{header} missing");
    }
    assert_eq!(ws.run(&["status", "--session", "nope"]).code(), 2);
}
