//! `etch import pi` through the real binary (issue 35): Pi's sessions for
//! the project found in Pi's directory, a dry run that writes nothing,
//! an import that says what each file became, a second import skipped,
//! and a resume of the imported session sending the model the same
//! context Pi would have sent at that leaf (checked on the fake
//! server's request body).

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use etch_test_support::{FakeServer, Reply, chat_text};
use serde_json::{Value, json};
use support::{Workspace, jsonl};

/// Writes a Pi session for `ws`'s project under `agent_dir` (as Pi
/// names it) and returns its path.
fn pi_session(ws: &Workspace, agent_dir: &std::path::Path) -> std::path::PathBuf {
    let cwd = std::fs::canonicalize(ws.path()).unwrap();
    let safe = cwd
        .to_string_lossy()
        .trim_start_matches('/')
        .replace(['/', ':'], "-");
    let dir = agent_dir.join("sessions").join(format!("--{safe}--"));
    std::fs::create_dir_all(&dir).unwrap();
    let at = "2026-02-03T04:05:06.000Z";
    let entry = |kind: &str, id: &str, parent: Option<&str>, fields: Value| {
        let mut v = json!({"type": kind, "id": id, "parentId": parent, "timestamp": at});
        for (k, val) in fields.as_object().unwrap() {
            v[k] = val.clone();
        }
        v
    };
    let lines = [
        json!({"type": "session", "version": 3, "id": "pi-sess-1", "timestamp": at, "cwd": cwd}),
        entry(
            "model_change",
            "e0",
            None,
            json!({"provider": "openai", "modelId": "m1"}),
        ),
        entry(
            "message",
            "e1",
            Some("e0"),
            json!({"message": {"role": "user", "content": [{"type": "text", "text": "count the lines of notes.txt"}]}}),
        ),
        entry(
            "message",
            "e2",
            Some("e1"),
            json!({"message": {"role": "assistant", "provider": "openai",
            "api": "openai-completions", "model": "m1", "stopReason": "toolUse",
            "content": [{"type": "toolCall", "id": "call_7", "name": "bash", "arguments": {"command": "wc -l notes.txt"}}]}}),
        ),
        entry(
            "message",
            "e3",
            Some("e2"),
            json!({"message": {"role": "toolResult", "toolCallId": "call_7",
            "toolName": "bash", "isError": false, "content": [{"type": "text", "text": "3 notes.txt"}]}}),
        ),
        entry(
            "message",
            "e4",
            Some("e3"),
            json!({"message": {"role": "assistant", "provider": "openai",
            "api": "openai-completions", "model": "m1", "stopReason": "stop",
            "content": [{"type": "text", "text": "It has 3 lines."}]}}),
        ),
        entry(
            "session_info",
            "e5",
            Some("e4"),
            json!({"name": "line count"}),
        ),
    ];
    let path = dir.join("2026-02-03T04-05-06-000Z_pi-sess-1.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// The default directory, a dry run, the import, a second import, and
/// a resume that sends Pi's context.
#[test]
fn pi_sessions_are_imported_and_resume_with_pis_context() {
    let ws = Workspace::new();
    let agent = tempfile::tempdir().unwrap();
    let file = pi_session(&ws, agent.path());
    let before = std::fs::read(&file).unwrap();
    let env = [("PI_CODING_AGENT_DIR", agent.path().to_str().unwrap())];
    let dry = ws.run_env(&["import", "pi", "--dry-run"], &env);
    let out = dry.ok();
    assert!(out.starts_with("would import "), "{out}");
    assert!(out.contains("6 entries"), "{out}");
    assert!(ws.session_files().is_empty(), "a dry run writes nothing");
    let out = ws.run_env(&["import", "pi"], &env).ok();
    assert!(out.starts_with("imported "), "{out}");
    let id = out
        .split(" as ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap()
        .to_owned();
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "Pi's file is untouched"
    );
    let again = ws.run_env(&["import", "pi"], &env).ok();
    assert!(
        again.contains(&format!("already imported as {id}")),
        "{again}"
    );
    let listed = ws.run(&["sessions"]).ok();
    assert!(listed.contains("line count"), "{listed}");
    // Resumed, the model gets what Pi would have sent at that leaf.
    let server = FakeServer::start(vec![Reply::sse(chat_text("and now"))]).unwrap();
    let out = ws
        .run_model(&server, &["resume", &id, "-p", "thanks"], &[])
        .ok();
    assert_eq!(out, "and now\n");
    let body = server.requests()[0].json();
    let messages: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .cloned()
        .collect();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user"]);
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .ends_with("count the lines of notes.txt"),
        "{messages:?}"
    );
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_7");
    assert_eq!(
        messages[1]["tool_calls"][0]["function"]["arguments"],
        "{\"command\":\"wc -l notes.txt\"}"
    );
    assert_eq!(messages[2]["tool_call_id"], "call_7");
    assert_eq!(messages[2]["content"], "3 notes.txt");
    assert_eq!(messages[3]["content"], "It has 3 lines.");
    assert_eq!(messages[4]["content"], "thanks");
    let log = jsonl(&ws.only_session());
    assert_eq!(log[0]["data"]["importedFrom"]["sessionId"], "pi-sess-1");
}

/// Bad input: no Pi directory for the project, a file that is no Pi
/// session, a path that does not exist.
#[test]
fn bad_import_input_is_refused_clearly() {
    let ws = Workspace::new();
    let agent = tempfile::tempdir().unwrap();
    let env = [("PI_CODING_AGENT_DIR", agent.path().to_str().unwrap())];
    let none = ws.run_env(&["import", "pi"], &env);
    assert_eq!(none.code(), 2);
    assert!(
        none.stderr().contains("Pi has no sessions for"),
        "{}",
        none.stderr()
    );
    std::fs::write(ws.path().join("notes.jsonl"), "{\"a\":1}\n").unwrap();
    let not_pi = ws.run_env(&["import", "pi", "notes.jsonl"], &env);
    assert_eq!(not_pi.code(), 1);
    assert!(
        not_pi.stderr().contains("is not a Pi session file"),
        "{}",
        not_pi.stderr()
    );
    let missing = ws.run_env(&["import", "pi", "nope.jsonl"], &env);
    assert_eq!(missing.code(), 2);
    assert!(
        missing.stderr().contains("nope.jsonl"),
        "{}",
        missing.stderr()
    );
}

/// The conversation of a Chat Completions request, as comparable text:
/// each non-system message's role, its text (Pi sends parts, etch a
/// string; etch's project context before the first prompt is left out),
/// its tool calls (id, name and arguments as JSON), its images, and tool
/// results by id.
fn conversation(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let text = match &m["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            let text = support::without_context(&text).to_owned();
            // Arguments compared as JSON values, whatever their spacing.
            let calls: Vec<String> = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let arguments = c["function"]["arguments"].as_str().unwrap_or("");
                    let arguments = serde_json::from_str::<Value>(arguments)
                        .map_or_else(|_| arguments.to_owned(), |v| v.to_string());
                    format!("{} {} {arguments}", c["id"], c["function"]["name"])
                })
                .collect();
            // Images by their bytes' size and end (the data URLs whole
            // would flood a failure's message).
            let images: Vec<String> = m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["image_url"]["url"].as_str())
                .map(|url| {
                    format!(
                        "image {} …{}",
                        url.len(),
                        &url[url.len().saturating_sub(16)..]
                    )
                })
                .collect();
            format!(
                "{} [{}] {} {} {}",
                m["role"].as_str().unwrap(),
                m["tool_call_id"].as_str().unwrap_or(""),
                text,
                calls.join(","),
                images.join(",")
            )
        })
        .collect()
}

/// The real Pi, installed from the pinned npm package, in `ws` with its
/// own agent directory whose `models.json` offers the fake `server` as
/// provider `fake`, model `m1` (with `model` fields added) and whose
/// `settings.json` is `settings`.
struct RealPi<'a> {
    /// The workspace.
    ws: &'a Workspace,
    /// Pi's agent directory.
    agent: tempfile::TempDir,
}

impl<'a> RealPi<'a> {
    /// Pi for `ws` against `server`.
    fn new(ws: &'a Workspace, server: &FakeServer, model: &Value, settings: &Value) -> Self {
        let agent = tempfile::tempdir().unwrap();
        let mut entry = json!({"id": "m1"});
        for (k, v) in model.as_object().unwrap() {
            entry[k] = v.clone();
        }
        let models = json!({"providers": {"fake": {
            "baseUrl": format!("{}/v1", server.url()),
            "api": "openai-completions",
            "apiKey": "k",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [entry],
        }}});
        std::fs::write(agent.path().join("models.json"), models.to_string()).unwrap();
        std::fs::write(agent.path().join("settings.json"), settings.to_string()).unwrap();
        Self { ws, agent }
    }

    /// Runs `node ARGS` as Pi's own processes run (its agent directory,
    /// the workspace's home); what it printed.
    fn node(&self, args: &[&std::ffi::OsStr]) -> String {
        let out = std::process::Command::new("node")
            .args(args)
            .current_dir(self.ws.path())
            .env("PI_CODING_AGENT_DIR", self.agent.path())
            .env("HOME", self.ws.home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "node failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs Pi's CLI with `args` on model `m1` of `fake`.
    fn cli(&self, args: &[&str]) {
        let cli =
            support::pi_client_dir().join("node_modules/@mariozechner/pi-coding-agent/dist/cli.js");
        let mut all: Vec<&std::ffi::OsStr> = vec![cli.as_os_str()];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        all.extend(["--provider", "fake", "--model", "m1"].map(std::ffi::OsStr::new));
        self.node(&all);
    }

    /// Copies Pi's only session file into the workspace as `name` (the
    /// session as it is now, before Pi goes on with it).
    fn keep_session(&self, name: &str) {
        let sessions = self.agent.path().join("sessions");
        let dir = std::fs::read_dir(&sessions)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::copy(&file, self.ws.path().join(name)).unwrap();
    }
}

/// Imports `file` in `ws`; the etch session's id.
fn import_into_etch(ws: &Workspace, file: &str) -> (String, String) {
    let out = ws.run(&["import", "pi", file]).ok();
    let id = out
        .split(" as ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap()
        .to_owned();
    (id, out)
}

/// Pi's request `pi` and etch's `etch` carry the same conversation.
fn same_conversation(
    requests: &[etch_test_support::Recorded],
    pi: usize,
    etch: usize,
) -> Vec<String> {
    let pis = conversation(&requests[pi].json());
    let etchs = conversation(&requests[etch].json());
    assert_eq!(etchs, pis, "etch sends what Pi sends");
    pis
}

/// A session made by the real Pi (pinned npm package) against the fake
/// server, with a tool round, is imported; resumed, etch sends the model
/// the same conversation Pi sends when it continues the same session.
#[test]
fn a_real_pi_session_resumes_with_the_context_pi_sends() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(etch_test_support::chat_tool_call(
            "call_1",
            "bash",
            r#"{"command":"echo from-pi-bash"}"#,
        )),
        Reply::sse(chat_text("Pi says: done.")),
        Reply::sse(chat_text("Pi continues.")),
        Reply::sse(chat_text("etch continues.")),
    ])
    .unwrap();
    let pi = RealPi::new(&ws, &server, &json!({}), &json!({}));
    pi.cli(&["-p", "run echo for me"]);
    pi.keep_session("pi-session.jsonl");
    pi.cli(&["--continue", "-p", "and now?"]);
    let (id, _) = import_into_etch(&ws, "pi-session.jsonl");
    let resumed = ws
        .run_model(&server, &["resume", &id, "-p", "and now?"], &[])
        .ok();
    assert_eq!(resumed, "etch continues.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let pis = same_conversation(&requests, 2, 3);
    assert!(pis.iter().any(|m| m.contains("from-pi-bash")), "{pis:?}");
}

/// The real Pi makes a session with an image and a compaction (its RPC
/// mode, driven by its own client); imported (the image moved to the
/// session's assets) and resumed, etch sends the same conversation Pi
/// sends when it continues it: the summary in Pi's wrapper and the kept
/// messages (the compaction summarized the turn with the image).
#[test]
fn a_real_pi_session_with_an_image_and_a_compaction() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("A gradient.")),
        Reply::sse(chat_text("Blue and red.")),
        Reply::sse(chat_text("## Goal\nDescribe the picture.")),
        Reply::sse(chat_text("Pi continues.")),
        Reply::sse(chat_text("etch continues.")),
    ])
    .unwrap();
    // Keep the last turn whole and summarize the first (its image makes
    // it the large one).
    let settings = json!({"compaction": {"keepRecentTokens": 50}});
    let pi = RealPi::new(
        &ws,
        &server,
        &json!({"input": ["text", "image"]}),
        &settings,
    );
    let image = ws.path().join("shot.png");
    std::fs::write(
        &image,
        etch_image::sample(32, 16, etch_model::MediaType::Png).unwrap(),
    )
    .unwrap();
    let script = support::pi_client_dir().join("session.mjs");
    pi.node(&[script.as_os_str(), ws.path().as_os_str(), image.as_os_str()]);
    pi.keep_session("pi-session.jsonl");
    pi.cli(&["--continue", "-p", "and now?"]);
    let (id, out) = import_into_etch(&ws, "pi-session.jsonl");
    assert!(out.contains("1 compaction"), "{out}");
    assert!(out.contains("1 images"), "{out}");
    let resumed = ws
        .run_model(&server, &["resume", &id, "-p", "and now?"], &[])
        .ok();
    assert_eq!(resumed, "etch continues.\n");
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        5,
        "Pi's two prompts, its summary, its continue, etch's"
    );
    let pis = same_conversation(&requests, 3, 4);
    assert!(pis[0].contains("<summary>"), "{pis:?}");
    let assets = ws.only_session().with_extension("assets");
    assert_eq!(
        std::fs::read_dir(assets).unwrap().count(),
        1,
        "the image is kept"
    );
}

/// The real Pi makes a tree (its SDK, as its terminal does): a branch
/// left with a summary, a label, a new branch. Imported, the tree is
/// Pi's (ids, the label, the summary's event), and resumed, etch sends
/// the conversation Pi's --continue sends: the new branch after the
/// branch summary in Pi's wrapper.
#[test]
fn a_real_pi_tree_with_a_branch_summary_and_a_label() {
    let ws = Workspace::new();
    let replies = (0..8)
        .map(|i| Reply::sse(chat_text(&format!("answer {i}"))))
        .collect();
    let server = FakeServer::start(replies).unwrap();
    let settings = json!({"defaultProvider": "fake", "defaultModel": "m1"});
    let pi = RealPi::new(&ws, &server, &json!({}), &settings);
    let script = support::pi_client_dir().join("tree.mjs");
    pi.node(&[
        script.as_os_str(),
        ws.path().as_os_str(),
        pi.agent.path().as_os_str(),
    ]);
    pi.keep_session("pi-tree.jsonl");
    let before = server.requests().len();
    pi.cli(&["--continue", "-p", "and now?"]);
    let (id, out) = import_into_etch(&ws, "pi-tree.jsonl");
    assert!(
        out.contains("1 branch_summary") && out.contains("1 label"),
        "{out}"
    );
    let log = jsonl(&ws.only_session());
    let pi_lines: Vec<Value> = std::fs::read_to_string(ws.path().join("pi-tree.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for entry in pi_lines.iter().skip(1) {
        let id = entry["id"].as_str().unwrap();
        assert!(
            log.iter().any(|e| e["id"] == id),
            "Pi's entry {id} is in the log"
        );
    }
    let label = log.iter().find(|e| e["type"] == "session.label").unwrap();
    assert_eq!(label["data"]["label"], "start");
    let resumed = ws
        .run_model(&server, &["resume", &id, "-p", "and now?"], &[])
        .ok();
    assert!(resumed.starts_with("answer"), "{resumed}");
    let requests = server.requests();
    assert_eq!(requests.len(), before + 2);
    let pis = same_conversation(&requests, before, before + 1);
    assert!(
        pis.iter()
            .any(|m| m.contains("branch that this conversation came back from")),
        "{pis:?}"
    );
}
