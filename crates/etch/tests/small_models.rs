//! The real `etch` binary serving a small model on a local server (issue
//! 30), against the fake server on loopback (which `[tools] profile =
//! "auto"`, set in these workspaces, takes for a local server): the compact profile, the grounding
//! checks and the notes they send, tool calls sent as text, placeholder
//! arguments, calls repeated in one message, and a write over a file
//! nothing read.

// Fixture helpers outside #[test] functions may panic on a broken setup.
#![allow(clippy::unwrap_used)]

mod support;

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_call, chat_tool_calls};
use serde_json::Value;
use support::{Workspace, jsonl};

/// Runs etch with the OpenAI provider against `server`, then `extra`.
fn run(ws: &Workspace, server: &FakeServer, extra: &[&str]) -> support::Run {
    let mut args = support::model_args(server);
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    ws.run(&refs)
}

/// A workspace with `notes.txt` (two lines) and `settings.json`.
fn workspace() -> Workspace {
    let ws = Workspace::new();
    ws.user_config("[tools]\nprofile = \"auto\"\n");
    std::fs::write(ws.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(ws.path().join("settings.json"), "{\"plugins\": [\"a\"]}\n").unwrap();
    ws
}

/// The description the model was shown of tool `name` in request `n`.
fn description(server: &FakeServer, n: usize, name: &str) -> String {
    let body = server.requests()[n].json();
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == name)
        .map(|t| t["function"]["description"].as_str().unwrap().to_owned())
        .unwrap()
}

/// The session's events of `kind`.
fn events(ws: &Workspace, kind: &str) -> Vec<Value> {
    jsonl(&ws.only_session())
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

/// The text of the last message of request `n`.
fn last_message(server: &FakeServer, n: usize) -> String {
    let body = server.requests()[n].json();
    let messages = body["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Under `auto`, a server on this machine gets the compact profile: short tool
/// descriptions (every parameter kept) and the short base prompt, and
/// the prompt is a fraction of the full one; `[tools] profile = "full"`
/// turns it back.
#[test]
fn a_local_server_gets_the_compact_profile() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("ok")),
        Reply::sse(chat_text("ok")),
    ])
    .unwrap();
    ws.user_config("[tools]\nprofile = \"auto\"\n");
    assert_eq!(run(&ws, &server, &["-p", "hi"]).ok(), "ok\n");
    ws.user_config("[tools]\nprofile = \"full\"\n");
    assert_eq!(run(&ws, &server, &["-p", "hi"]).ok(), "ok\n");

    let (compact, full) = (server.requests()[0].json(), server.requests()[1].json());
    assert_eq!(
        description(&server, 0, "read"),
        "Read a file; each line is shown with its number."
    );
    assert!(description(&server, 1, "read").contains("cat -n style"));
    let params = |body: &Value, tool: usize| {
        let mut keys: Vec<String> = body["tools"][tool]["function"]["parameters"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    };
    for tool in 0..8 {
        assert_eq!(params(&compact, tool), params(&full, tool), "tool {tool}");
    }
    let system = |body: &Value| body["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(
        system(&compact).starts_with("You are a coding assistant working in the user's project."),
        "{}",
        system(&compact)
    );
    // `process` comes with `bash`, shorter under the compact profile too.
    let tool_size = |body: &Value, name: &str| {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| (t["function"]["name"] == name) == (name != "*"))
            .map(|t| t.to_string().len())
            .sum::<usize>()
    };
    assert!(
        tool_size(&compact, "process") < tool_size(&full, "process"),
        "{} {}",
        tool_size(&compact, "process"),
        tool_size(&full, "process")
    );
    let size = |body: &Value| body["tools"].to_string().len() + system(body).len();
    assert!(
        size(&compact) * 2 < size(&full),
        "compact {} bytes, full {}",
        size(&compact),
        size(&full)
    );
}

/// An answer about a file the run never looked at gets one note, and
/// the next request must be a tool call; so must the first, since the
/// prompt names a file that exists. The note is in the log and goes
/// back to the model on resume.
#[test]
fn an_answer_about_a_file_never_looked_at_gets_a_note() {
    let ws = workspace();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("It has 10 lines.")),
        Reply::sse(chat_tool_call("c1", "read", "{\"path\": \"notes.txt\"}")),
        Reply::sse(chat_text("2")),
        Reply::sse(chat_text("fine")),
    ])
    .unwrap();
    let out = run(&ws, &server, &["-p", "How many lines does notes.txt have?"]);
    assert_eq!(out.ok(), "2\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].json()["tool_choice"], "required");
    assert_eq!(requests[1].json()["tool_choice"], "required");
    assert!(requests[2].json().get("tool_choice").is_none());
    // The server is on this machine: a forced reply is capped (llama.cpp
    // lets a model that meant to answer write until its context is full).
    assert_eq!(requests[0].json()["max_tokens"], 512);
    assert!(requests[2].json().get("max_tokens").is_none());
    let note = "[etch: you have not looked at notes.txt yet; look at it with a tool now, then answer from what it shows.]";
    assert_eq!(last_message(&server, 1), note);
    let grounding = events(&ws, "loop.grounding");
    assert_eq!(grounding.len(), 1);
    assert_eq!(grounding[0]["data"]["kind"], "not_looked");
    assert_eq!(grounding[0]["data"]["paths"][0], "notes.txt");
    assert_eq!(grounding[0]["data"]["note"], note);

    // `etch show` shows what the model was told.
    let id = ws
        .only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let shown = ws.run(&["show", &id]).ok();
    assert!(
        shown.contains(&format!("(etch told the model: {note})")),
        "{shown}"
    );

    // Resumed, the model sees the answer, the note and what followed.
    let mut args = vec!["resume".to_owned(), id];
    args.extend(support::model_args(&server));
    args.extend(["-p", "thanks"].map(str::to_owned));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(ws.run(&refs).ok(), "fine\n");
    let body = server.requests()[3].json();
    let texts: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    let at = texts.iter().position(|t| t == "It has 10 lines.").unwrap();
    assert_eq!(texts[at + 1], note);
}

/// An answer naming a path that does not exist gets one note and the
/// model answers again; a path it saw in a result is no invention; the
/// check is off under the full profile, or with `[session] grounding =
/// false`.
#[test]
fn an_invented_path_gets_a_note() {
    let ws = workspace();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("It is defined in pkg/quartz.rs.")),
        Reply::sse(chat_text("notes.txt")),
        Reply::sse(chat_text("It is defined in pkg/quartz.rs.")),
    ])
    .unwrap();
    let out = run(&ws, &server, &["-p", "Which file holds the notes?"]);
    assert_eq!(out.ok(), "notes.txt\n");
    assert_eq!(
        last_message(&server, 1),
        "[etch: your answer names pkg/quartz.rs, which does not exist; check with a tool before answering.]"
    );
    let grounding = events(&ws, "loop.grounding");
    assert_eq!(grounding[0]["data"]["kind"], "missing_path");

    let other = workspace();
    other.user_config("[session]\ngrounding = false\n");
    let out = run(&other, &server, &["-p", "Which file holds the notes?"]);
    assert_eq!(out.ok(), "It is defined in pkg/quartz.rs.\n");
    assert_eq!(server.requests().len(), 3);
    assert!(server.requests()[2].json().get("tool_choice").is_none());
}

/// A call the server passed on as text is run as a call: a
/// `<tool_call>` block, or a bare JSON call of an active tool; the log
/// keeps the text it came as. JSON that is no call stays the answer.
#[test]
fn a_tool_call_sent_as_text_is_run() {
    let ws = workspace();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text(
            "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>",
        )),
        Reply::sse(chat_text("two lines")),
        Reply::sse(chat_text("{\"name\": \"test1\", \"arguments\": {\"timeout\": 30}}")),
    ])
    .unwrap();
    let out = run(
        &ws,
        &server,
        &["--tools", "read", "-p", "Show me the notes"],
    );
    assert_eq!(out.ok(), "two lines\n");
    let assistant = &events(&ws, "message.assistant")[0]["data"];
    assert_eq!(assistant["content"][0]["type"], "tool_call");
    assert_eq!(assistant["content"][0]["name"], "read");
    assert!(
        assistant["recoveredText"]
            .as_str()
            .unwrap()
            .starts_with("<tool_call>")
    );
    let result = &events(&ws, "message.tool")[0]["data"];
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );

    let other = Workspace::new();
    let out = run(&other, &server, &["--tools", "read", "-p", "hi"]);
    assert_eq!(
        out.ok(),
        "{\"name\": \"test1\", \"arguments\": {\"timeout\": 30}}\n"
    );
}

/// Placeholder values of optional arguments (`"limit": 0`) mean the
/// default rather than an error, and the same read twice in one message
/// runs once.
#[test]
fn placeholders_and_repeated_calls_in_one_message() {
    let ws = workspace();
    let args = "{\"path\": \"notes.txt\", \"offset\": 0, \"limit\": 0}";
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "read", args),
            ("c2", "read", args),
        ])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = run(&ws, &server, &["-p", "Read notes.txt"]);
    assert_eq!(out.ok(), "done\n");
    let first = ws.result_text("c1");
    assert!(first.contains("alpha") && first.contains("beta"), "{first}");
    assert_eq!(
        ws.result_text("c2"),
        "[etch: this is the same call as call 1 of this message; it ran once: use that result.]"
    );
    assert!(
        events(&ws, "message.tool")
            .iter()
            .all(|e| e["data"]["isError"] == false)
    );
}

/// Under grounding, a write over an existing file nothing read is
/// refused with what to do, and the file stays; after a read it goes
/// through.
#[test]
fn a_write_over_an_unread_file_is_refused() {
    let ws = workspace();
    let write = "{\"path\": \"settings.json\", \"content\": \"const plugins = [];\"}";
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_call("w1", "write", write)),
        Reply::sse(chat_tool_call(
            "r1",
            "read",
            "{\"path\": \"settings.json\"}",
        )),
        Reply::sse(chat_tool_call("w2", "write", write)),
        Reply::sse(chat_text("rewritten")),
    ])
    .unwrap();
    let out = run(&ws, &server, &["-p", "Rewrite settings.json"]);
    assert_eq!(out.ok(), "rewritten\n");
    assert_eq!(
        ws.result_text("w1"),
        "tool error: settings.json already exists and you have not read it; read it first, then change it with edit (write replaces the whole file)"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("settings.json")).unwrap(),
        "const plugins = [];"
    );
}

/// Under grounding, an answer sent with a call that repeats an earlier
/// one (same call, same result) ends the run with its text instead of
/// going round again; without grounding the call runs and the run goes
/// on.
#[test]
fn an_answer_with_only_repeated_calls_ends_the_run() {
    let read = "{\"path\": \"notes.txt\"}";
    let replies = || {
        vec![
            Reply::sse(chat_tool_call("c1", "read", read)),
            Reply::sse(text_then_call("It has 2 lines.", "c2", "read", read)),
            Reply::sse(chat_text("after the repeat")),
        ]
    };
    let ws = workspace();
    let server = FakeServer::start(replies()).unwrap();
    let out = run(&ws, &server, &["-p", "How many lines does notes.txt have?"]);
    assert_eq!(out.ok(), "It has 2 lines.\n");
    assert_eq!(server.requests().len(), 2);

    let other = Workspace::new();
    std::fs::write(other.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let server = FakeServer::start(replies()).unwrap();
    let out = run(
        &other,
        &server,
        &["-p", "How many lines does notes.txt have?"],
    );
    assert_eq!(out.ok(), "after the repeat\n");
    assert_eq!(server.requests().len(), 3);
}

/// A Chat Completions stream with `text` and then a call in one message.
fn text_then_call(text: &str, id: &str, name: &str, arguments: &str) -> Vec<String> {
    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]});
    let mut frames = vec![etch_test_support::sse_data(&delta.to_string())];
    frames.extend(chat_tool_call(id, name, arguments));
    frames
}
