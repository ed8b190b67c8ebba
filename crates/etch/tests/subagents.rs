//! Subagents through the real binary (E-SUB, issue 17): the `task` tool
//! against the fake model server, which answers the parent's and the
//! children's requests in the order they come. Assertions are on the
//! requests each side sent, the tool results and both session logs.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::process::Command;

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::Value;
use support::{Workspace, assert_whole, jsonl, model_args, wait_until};

/// A project configuration with subagents on and the `explore` profile
/// (its instructions in explore.md), plus `extra`.
fn configure(ws: &Workspace, limits: &str, extra: &str) {
    std::fs::write(ws.path().join("explore.md"), "You explore; you never edit.").unwrap();
    // The file the scripted children name exists, so grounding (on
    // against a server on this machine) has no note to send.
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/lib.rs"), "pub struct X;\n").unwrap();
    ws.user_config(&format!(
        "[subagents]\nenabled = true\n{limits}\n\n\
         [[subagents.profile]]\nname = \"explore\"\ndescription = \"Read-only exploration.\"\n\
         model = \"child-m\"\nallowed_tools = [\"read\", \"ls\"]\nmax_tool_rounds = 2\n\
         system_prompt_file = \"{}\"\n\n{extra}",
        ws.path().join("explore.md").display()
    ));
}

/// A `task` call's arguments.
fn task(profile: &str, text: &str) -> String {
    serde_json::json!({"profile": profile, "task": text}).to_string()
}

/// The tool names of a recorded request.
fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The session files other than the parent's, with their headers.
fn children(ws: &Workspace) -> Vec<(PathBuf, Value)> {
    ws.session_files()
        .into_iter()
        .map(|path| {
            let header = jsonl(&path)[0]["data"].clone();
            (path, header)
        })
        .filter(|(_, header)| header["parentSessionId"].is_string())
        .collect()
}

/// The parent session's file.
fn parent_file(ws: &Workspace) -> PathBuf {
    ws.session_files()
        .into_iter()
        .find(|path| jsonl(path)[0]["data"]["parentSessionId"].is_null())
        .unwrap()
}

/// The text of the parent's result for call `id`.
fn result(ws: &Workspace, id: &str) -> String {
    let event = jsonl(&parent_file(ws))
        .into_iter()
        .find(|e| e["type"] == "message.tool" && e["data"]["toolCallId"] == id);
    assert!(event.is_some(), "no result for {id}");
    event.unwrap()["data"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `etch -p go` against `server` (the OpenAI shape), running in the
/// background.
fn spawn_run(ws: &Workspace, server: &FakeServer) -> std::process::Child {
    let mut args = model_args(server);
    args.extend(["-p".to_owned(), "go".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ws.command(&args)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// `etch rpc` against `server`.
fn rpc_against(ws: &Workspace, server: &FakeServer) -> support::rpc::RpcClient {
    let args = model_args(server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    support::rpc::RpcClient::start(ws, &args, &[])
}

/// One task call: the child starts from the parent's conversation
/// without the task call, with its own model, instructions and
/// allowlisted tools; the parent gets one compact result; the child
/// session names its parent and fork point; resuming the child rebuilds
/// the same context.
#[test]
fn a_task_runs_a_child_and_returns_its_answer() {
    let ws = Workspace::new();
    configure(&ws, "", "");
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "task",
            &task("explore", "find where X is defined"),
        )])),
        Reply::sse(chat_text("X is defined in src/lib.rs")),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "where is X?"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    let requests = server.requests();
    let parent = requests[0].json();
    assert!(tool_names(&parent).contains(&"task".to_owned()));
    let spec = parent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap();
    assert_eq!(
        spec["function"]["parameters"]["properties"]["profile"]["enum"],
        serde_json::json!(["explore"])
    );
    assert!(
        spec["function"]["description"]
            .as_str()
            .unwrap()
            .contains("explore: Read-only exploration.")
    );
    let child = requests[1].json();
    assert_eq!(child["model"], "child-m");
    assert_eq!(tool_names(&child), ["ls", "read"]);
    let body = requests[1].body_text();
    assert!(body.contains("You explore; you never edit."), "{body}");
    assert!(
        body.contains("where is X?") && body.contains("find where X is defined"),
        "{body}"
    );
    assert!(
        !body.contains("\"c1\""),
        "the task call itself is not replayed: {body}"
    );
    let result = result(&ws, "c1");
    let (child_path, header) = children(&ws).pop().unwrap();
    let child_id = header["sessionId"].as_str().unwrap().to_owned();
    assert!(
        result.starts_with("subagent explore finished in "),
        "{result}"
    );
    assert!(
        result.contains(&format!("etch show {child_id}"))
            && result.contains(&format!("etch resume {child_id}"))
    );
    assert!(result.ends_with("X is defined in src/lib.rs"), "{result}");
    assert_ne!(parent_file(&ws), child_path);
    let parent_events = jsonl(&parent_file(&ws));
    let asked = parent_events
        .iter()
        .find(|e| e["type"] == "message.assistant")
        .unwrap();
    assert_eq!(
        header["parentSessionId"],
        parent_events[0]["data"]["sessionId"]
    );
    assert_eq!(header["parentToolCallId"], "c1");
    assert_eq!(header["subagentProfile"], "explore");
    assert_eq!(header["forkBeforeEventId"], asked["id"]);
    assert!(!parent_events.iter().any(
        |e| e.to_string().contains("X is defined in src/lib.rs") && e["type"] != "message.tool"
    ));
    let listed = ws.run(&["sessions"]).ok();
    assert!(listed.contains("(subagent)"), "{listed}");
    let parent_id = parent_events[0]["data"]["sessionId"].as_str().unwrap();
    let tree = ws.run(&["show", "--tree", parent_id]).ok();
    assert!(
        tree.contains(&format!("subagent sessions:\n  {child_id} explore (task call c1): find where X is defined  etch show {child_id}")),
        "{tree}"
    );
    // Resuming the child rebuilds the inherited context.
    let again = FakeServer::start(vec![Reply::sse(chat_text("still X"))]).unwrap();
    let resumed = ws.run_model(&again, &["resume", &child_id, "-p", "and Y?"], &[]);
    assert_eq!(resumed.ok(), "still X\n", "{}", resumed.stderr());
    let body = again.requests()[0].body_text();
    assert!(
        body.contains("where is X?")
            && body.contains("X is defined in src/lib.rs")
            && body.contains("and Y?"),
        "{body}"
    );
    // ... with its profile's tools and instructions, not the parent's.
    assert_eq!(tool_names(&again.requests()[0].json()), ["ls", "read"]);
    assert!(body.contains("You explore; you never edit."), "{body}");
    // `etch context` measures the child as it resumes.
    let measured = ws.run(&["context", "--session", &child_id]).ok();
    assert!(measured.contains("subagent explore: "), "{measured}");
}

/// Bad task calls are tool errors naming what is wrong, and the good
/// ones of the same response still run: an unknown profile, an empty
/// task, a profile whose instructions file is missing, a profile whose
/// provider has no credentials, a call past max_per_turn.
#[test]
fn bad_task_calls_are_tool_errors() {
    let ws = Workspace::new();
    configure(
        &ws,
        "max_per_turn = 3\nmax_concurrent = 1",
        "[[subagents.profile]]\nname = \"broken\"\nsystem_prompt_file = \"missing.md\"\n\n\
         [[subagents.profile]]\nname = \"keyless\"\nprovider = \"anthropic\"\n",
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "task", &task("nope", "x")),
            ("c2", "task", &task("explore", "  ")),
            ("c3", "task", &task("explore", "look")),
            ("c4", "task", &task("broken", "look")),
            ("c5", "task", &task("keyless", "look")),
            ("c6", "task", &task("explore", "look again")),
        ])),
        Reply::sse(chat_text("looked")),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    // The schema lists the profiles, so validation names them.
    let unknown = result(&ws, "c1");
    assert!(
        unknown.starts_with("tool error: Validation failed for tool \"task\"")
            && unknown.contains("must be one of \"explore\", \"broken\", \"keyless\""),
        "{unknown}"
    );
    assert!(result(&ws, "c2").starts_with("tool error: the task is empty"));
    assert!(
        result(&ws, "c3").ends_with("looked"),
        "{}",
        result(&ws, "c3")
    );
    let broken = result(&ws, "c4");
    assert!(
        broken
            .starts_with("tool error: subagent profile broken: cannot read its system_prompt_file")
            && broken.contains("missing.md"),
        "{broken}"
    );
    let keyless = result(&ws, "c5");
    assert!(
        keyless.starts_with("tool error: subagent profile keyless: ")
            && keyless.contains("ANTHROPIC_API_KEY"),
        "{keyless}"
    );
    assert_eq!(
        result(&ws, "c6"),
        "tool error: more than max_per_turn (3) task calls in one response; this one was not run"
    );
    assert_eq!(server.requests().len(), 3);
}

/// A child whose first request fails gives the parent an error result
/// with the provider's message; the child session is whole and names
/// what happened.
#[test]
fn a_child_whose_first_request_fails_is_an_error() {
    let ws = Workspace::new();
    configure(&ws, "", "");
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "task", &task("explore", "look"))])),
        Reply::json(
            400,
            &serde_json::json!({"error": {"message": "model child-m is not loaded"}}),
        ),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    let failed = result(&ws, "c1");
    assert!(
        failed.starts_with("tool error: subagent explore stopped after ")
            && failed.contains("without an answer")
            && failed.contains("model child-m is not loaded")
            && failed.contains("etch show "),
        "{failed}"
    );
    let (path, _) = children(&ws).pop().unwrap();
    assert_whole(&path);
    assert!(
        jsonl(&path)
            .iter()
            .any(|e| e.to_string().contains("model child-m is not loaded")),
        "the child's log records the failure"
    );
}

/// A child that uses up its max_tool_rounds gives the parent an error
/// result, never a success (E-SUB-12); its session keeps what it did.
#[test]
fn a_child_past_its_round_bound_is_an_error() {
    let ws = Workspace::new();
    configure(&ws, "", "");
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "task",
            &task("explore", "list forever"),
        )])),
        Reply::sse(chat_tool_calls(&[("k1", "ls", r#"{"path":"."}"#)])),
        Reply::sse(chat_tool_calls(&[("k2", "ls", r#"{"path":".."}"#)])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    let result = result(&ws, "c1");
    assert!(
        result.starts_with("tool error: subagent explore stopped after "),
        "{result}"
    );
    assert!(
        result.contains("2 tool calls") && result.contains("etch show "),
        "{result}"
    );
}

/// Two `worker` task calls under `max_concurrent = limit`: each child's
/// bash call marks that it started, then waits (at most `wait`
/// hundredths of a second) for the other's mark, printing `both` or
/// `alone`. Returns those outputs in the children's order and asserts
/// that the parent's results keep the call order.
fn two_children(limit: u32, wait: u32) -> Vec<String> {
    let ws = Workspace::new();
    configure(
        &ws,
        &format!("max_concurrent = {limit}"),
        "[[subagents.profile]]\nname = \"worker\"\nallowed_tools = [\"bash\"]\n",
    );
    std::fs::create_dir_all(ws.path().join("marks")).unwrap();
    let wait = format!(
        r#"{{"command":"touch marks/$$; for i in $(seq {wait}); do [ $(ls marks | wc -l) -ge 2 ] && echo both && exit 0; sleep 0.01; done; echo alone"}}"#
    );
    let calls = Reply::sse(chat_tool_calls(&[
        ("c1", "task", &task("worker", "first")),
        ("c2", "task", &task("worker", "second")),
    ]));
    let bash = |id: &str| Reply::sse(chat_tool_calls(&[(id, "bash", &wait)]));
    let worked = || Reply::sse(chat_text("worked"));
    // Overlapping children both ask before either answers; one at a
    // time, each finishes before the next asks.
    let replies = if limit > 1 {
        vec![calls, bash("k1"), bash("k2"), worked(), worked()]
    } else {
        vec![calls, bash("k1"), worked(), bash("k2"), worked()]
    };
    let server = FakeServer::start(
        replies
            .into_iter()
            .chain([Reply::sse(chat_text("done"))])
            .collect(),
    )
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    for id in ["c1", "c2"] {
        assert!(result(&ws, id).ends_with("worked"), "{}", result(&ws, id));
    }
    let order: Vec<String> = jsonl(&parent_file(&ws))
        .into_iter()
        .filter(|e| e["type"] == "message.tool")
        .map(|e| e["data"]["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(order, ["c1", "c2"]);
    let mut outputs: Vec<(String, String)> = children(&ws)
        .iter()
        .flat_map(|(path, _)| jsonl(path))
        .filter(|e| e["type"] == "message.tool")
        .map(|e| {
            (
                e["time"].as_str().unwrap_or_default().to_owned(),
                e["data"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .trim()
                    .to_owned(),
            )
        })
        .collect();
    outputs.sort();
    outputs.into_iter().map(|(_, text)| text).collect()
}

/// At `max_concurrent = 2` two children overlap: each sees the other's
/// mark (which only works if they run at the same time).
#[test]
fn children_overlap_at_max_concurrent_two() {
    assert_eq!(two_children(2, 500), ["both", "both"]);
}

/// At `max_concurrent = 1` they never overlap: the first waits out its
/// whole second alone, and only then does the second start.
#[test]
fn children_take_turns_at_max_concurrent_one() {
    assert_eq!(two_children(1, 100), ["alone", "both"]);
}

/// Token and time bounds stop a child (it keeps its session) and give
/// the parent an error saying which bound and how far it got.
#[test]
fn token_and_time_bounds_stop_a_child() {
    let ws = Workspace::new();
    configure(
        &ws,
        "max_concurrent = 1",
        "[[subagents.profile]]\nname = \"thrifty\"\nmax_tokens = 5\n\n\
         [[subagents.profile]]\nname = \"hasty\"\nmax_seconds = 1\nallowed_tools = [\"bash\"]\n",
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "task", &task("thrifty", "spend")),
            ("c2", "task", &task("hasty", "wait")),
        ])),
        // thrifty's first answer already uses more than 5 tokens.
        Reply::sse(chat_tool_calls(&[("k1", "ls", r#"{"path":"."}"#)])),
        // hasty waits for a file nobody writes.
        Reply::sse(chat_tool_calls(&[(
            "k2",
            "bash",
            r#"{"command":"while [ ! -f never ]; do sleep 0.05; done"}"#,
        )])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    let thrifty = result(&ws, "c1");
    assert!(
        thrifty.starts_with("tool error: subagent thrifty stopped after ")
            && thrifty.contains("at its max_tokens (5): its requests used "),
        "{thrifty}"
    );
    let hasty = result(&ws, "c2");
    assert!(
        hasty.starts_with("tool error: subagent hasty stopped after ")
            && hasty.contains("at its max_seconds (1 s)")
            && hasty.contains("etch show "),
        "{hasty}"
    );
    // Both child sessions are whole: every call has its result.
    for (path, _) in children(&ws) {
        assert_whole(&path);
    }
}

/// etch killed with SIGKILL while a child runs: the child's session is
/// valid, and resuming it closes the interrupted call and goes on with
/// the inherited context.
#[test]
fn a_child_killed_mid_run_is_resumable() {
    let ws = Workspace::new();
    configure(
        &ws,
        "",
        "[[subagents.profile]]\nname = \"waiter\"\nallowed_tools = [\"bash\"]\n",
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "task", &task("waiter", "wait"))])),
        Reply::sse(chat_tool_calls(&[(
            "k1",
            "bash",
            r#"{"command":"echo $$ > loop.pid; touch started; while [ ! -f never ]; do sleep 0.05; done"}"#,
        )])),
    ])
    .unwrap();
    let mut etch = spawn_run(&ws, &server);
    // The child's bash call has started: a barrier on its side effect.
    let started = ws.path().join("started");
    wait_until("the child never started its call", || started.exists());
    etch.kill().unwrap();
    etch.wait().unwrap();
    // SIGKILL gave etch no chance to stop the call's shell: end it here.
    std::fs::write(ws.path().join("never"), "").unwrap();
    let pid = std::fs::read_to_string(ws.path().join("loop.pid")).unwrap();
    assert!(
        support::process_gone(&pid),
        "the call's shell {pid} outlived the test"
    );
    let (_, header) = children(&ws).pop().unwrap();
    let child_id = header["sessionId"].as_str().unwrap().to_owned();
    let again = FakeServer::start(vec![Reply::sse(chat_text("resumed"))]).unwrap();
    let resumed = ws.run_model(&again, &["resume", &child_id, "-p", "go on"], &[]);
    assert_eq!(resumed.ok(), "resumed\n", "{}", resumed.stderr());
    let body = again.requests()[0].body_text();
    assert!(
        body.contains("\"k1\"") && body.contains("go on") && body.contains("wait"),
        "{body}"
    );
}

/// Ctrl-C while three children run: all stop, their shells are gone,
/// etch exits 130, and every session (parent and children) has a result
/// for each call.
#[test]
fn interrupting_the_parent_stops_every_child() {
    let ws = Workspace::new();
    configure(
        &ws,
        "max_concurrent = 3",
        "[[subagents.profile]]\nname = \"waiter\"\nallowed_tools = [\"bash\"]\n",
    );
    std::fs::create_dir_all(ws.path().join("pids")).unwrap();
    let wait = r#"{"command":"echo $$ > pids/$$; while [ ! -f never ]; do sleep 0.05; done"}"#;
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "task", &task("waiter", "one")),
            ("c2", "task", &task("waiter", "two")),
            ("c3", "task", &task("waiter", "three")),
        ])),
        Reply::sse(chat_tool_calls(&[("k1", "bash", wait)])),
        Reply::sse(chat_tool_calls(&[("k2", "bash", wait)])),
        Reply::sse(chat_tool_calls(&[("k3", "bash", wait)])),
    ])
    .unwrap();
    let mut etch = spawn_run(&ws, &server);
    let pids = ws.path().join("pids");
    wait_until("the children never all started", || {
        std::fs::read_dir(&pids).unwrap().count() >= 3
    });
    let status = Command::new("kill")
        .args(["-INT", &etch.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = etch.wait().unwrap();
    assert_eq!(exit.code(), Some(130));
    for entry in std::fs::read_dir(&pids).unwrap() {
        let pid = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            support::process_gone(&pid),
            "shell {pid} outlived the interrupt"
        );
    }
    std::fs::write(ws.path().join("never"), "").unwrap();
    let sessions = ws.session_files();
    assert_eq!(sessions.len(), 4);
    for path in sessions {
        assert_whole(&path);
    }
    for id in ["c1", "c2", "c3"] {
        assert_eq!(result(&ws, id), "tool error: Operation aborted");
    }
}

/// A child's tool calls go through the configured hooks like the
/// parent's: a PreToolUse hook blocks a child's bash.
#[test]
fn hooks_wrap_a_childs_tool_calls() {
    let ws = Workspace::new();
    let hook = ws.home.path().join("deny.sh");
    std::fs::write(
        &hook,
        "printf '%s\\n' '{\"block\": true, \"reason\": \"no shell here\"}'\n",
    )
    .unwrap();
    configure(
        &ws,
        "",
        &format!(
            "[[subagents.profile]]\nname = \"worker\"\nallowed_tools = [\"bash\"]\n\n\
             [[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"sh {}\"\n",
            hook.display()
        ),
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "task",
            &task("worker", "run it"),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "k1",
            "bash",
            r#"{"command":"touch ran"}"#,
        )])),
        Reply::sse(chat_text("could not")),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    assert!(!ws.path().join("ran").exists());
    let body = server.requests()[2].body_text();
    assert!(body.contains("no shell here"), "{body}");
}

/// `SubagentStart` hooks may refuse a child (the parent gets why) and
/// `SubagentStop` hooks see how each ended; their records are in the
/// child sessions.
#[test]
fn subagent_hooks_start_and_stop() {
    let ws = Workspace::new();
    let start = ws.home.path().join("start.py");
    std::fs::write(
        &start,
        "import json, sys\n\
         event = json.load(sys.stdin)\n\
         payload = event.get('payload', event)\n\
         if payload['profile'] == 'locked':\n\
         \x20   print(json.dumps({'block': True, 'reason': 'not today'}))\n",
    )
    .unwrap();
    let stops = ws.home.path().join("stops.jsonl");
    configure(
        &ws,
        "",
        &format!(
            "[[subagents.profile]]\nname = \"locked\"\n\n\
             [[hooks.SubagentStart]]\ncommand = \"python3 {}\"\n\n\
             [[hooks.SubagentStop]]\nmatcher = \"explore\"\ncommand = \"cat >> {}\"\n",
            start.display(),
            stops.display()
        ),
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "task", &task("explore", "look")),
            ("c2", "task", &task("locked", "look")),
        ])),
        Reply::sse(chat_text("seen")),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    assert!(result(&ws, "c1").ends_with("seen"));
    let refused = result(&ws, "c2");
    assert!(
        refused.starts_with("tool error: subagent locked did not start (child session ")
            && refused.ends_with("a SubagentStart hook blocked it: not today"),
        "{refused}"
    );
    let stop: Value =
        serde_json::from_str(std::fs::read_to_string(&stops).unwrap().trim()).unwrap();
    let text = stop.to_string();
    assert!(
        text.contains("\"outcome\":\"ok\"")
            && text.contains("\"detail\":\"seen\"")
            && text.contains("\"toolCallId\":\"c1\""),
        "{text}"
    );
    let records: Vec<Value> = children(&ws)
        .iter()
        .flat_map(|(path, _)| jsonl(path))
        .filter(|e| e["type"] == "hook.run")
        .collect();
    let events: Vec<&str> = records
        .iter()
        .map(|e| e["data"]["event"].as_str().unwrap())
        .collect();
    assert_eq!(events.iter().filter(|e| **e == "SubagentStart").count(), 2);
    assert_eq!(events.iter().filter(|e| **e == "SubagentStop").count(), 1);
}

/// RPC clients see what a child is doing as progress of the parent's
/// `task` call: its codename, profile and task, then each activity.
#[test]
fn rpc_clients_see_child_progress() {
    let ws = Workspace::new();
    configure(&ws, "", "");
    std::fs::write(ws.path().join("notes.txt"), "X lives here").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "task",
            &task("explore", "find X"),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "k1",
            "read",
            r#"{"path":"notes.txt"}"#,
        )])),
        Reply::sse(chat_text("X is in notes.txt")),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let mut rpc = rpc_against(&ws, &server);
    rpc.send(&serde_json::json!({"id": "p1", "type": "prompt", "message": "go"}));
    rpc.event("agent_end");
    let updates: Vec<String> = rpc
        .seen
        .iter()
        .filter(|e| e["type"] == "tool_execution_update" && e["toolCallId"] == "c1")
        .map(|e| e["partialResult"].as_str().unwrap().to_owned())
        .collect();
    assert!(updates.len() >= 3, "{updates:?}");
    let label = updates[0].split(" => ").next().unwrap().to_owned();
    assert!(label.ends_with(" / explore: find X"), "{label}");
    assert!(updates.iter().all(|u| u.starts_with(&label)), "{updates:?}");
    assert!(
        updates.contains(&format!("{label} => starting")),
        "{updates:?}"
    );
    assert!(
        updates.contains(&format!("{label} => read notes.txt")),
        "{updates:?}"
    );
    // The child's requests reach the parent's counters, marked as its.
    let usage: Vec<&Value> = rpc
        .seen
        .iter()
        .filter(|e| e["type"] == "model_usage")
        .collect();
    let of_child = usage
        .iter()
        .filter(|e| e["usage"]["toolCallId"] == "c1")
        .count();
    assert_eq!(of_child, 2, "{usage:#?}");
    assert_eq!(usage.len(), 4, "{usage:#?}");
    let (status, _, _) = rpc.finish();
    assert!(status.success());
}

/// `abort_subagent` stops one child: its call gets `Operation aborted`,
/// the other children go on and finish; an unknown call id is refused
/// with the list of running children.
#[test]
fn rpc_abort_subagent_stops_one_child() {
    let ws = Workspace::new();
    configure(
        &ws,
        "max_concurrent = 3",
        "[[subagents.profile]]\nname = \"waiter\"\nallowed_tools = [\"bash\"]\n",
    );
    std::fs::create_dir_all(ws.path().join("pids")).unwrap();
    let wait = r#"{"command":"echo $$ > pids/$$; while [ ! -f never ]; do sleep 0.05; done; echo worked"}"#;
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[
            ("c1", "task", &task("waiter", "one")),
            ("c2", "task", &task("waiter", "two")),
            ("c3", "task", &task("waiter", "three")),
        ])),
        Reply::sse(chat_tool_calls(&[("k1", "bash", wait)])),
        Reply::sse(chat_tool_calls(&[("k2", "bash", wait)])),
        Reply::sse(chat_tool_calls(&[("k3", "bash", wait)])),
        Reply::sse(chat_text("worked")),
        Reply::sse(chat_text("worked")),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let mut rpc = rpc_against(&ws, &server);
    rpc.send(&serde_json::json!({"id": "p1", "type": "prompt", "message": "go"}));
    let pids = ws.path().join("pids");
    wait_until("the children never all started", || {
        std::fs::read_dir(&pids).unwrap().count() >= 3
    });
    let unknown =
        rpc.call(&serde_json::json!({"id": "a0", "type": "abort_subagent", "toolCallId": "c9"}));
    assert_eq!(unknown["success"], false, "{unknown}");
    let said = unknown["error"].as_str().unwrap();
    assert!(
        said.contains("no subagent runs for call c9; running: c1 (") && said.contains("c3 ("),
        "{said}"
    );
    let stopped =
        rpc.call(&serde_json::json!({"id": "a1", "type": "abort_subagent", "toolCallId": "c2"}));
    assert_eq!(stopped["success"], true, "{stopped}");
    // The stopped child's shell goes while the others still wait.
    let alive = |pid: &str| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        !stat.is_empty() && !stat.contains(") Z ")
    };
    let all: Vec<String> = std::fs::read_dir(&pids)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    wait_until("no child's shell stopped", || {
        !all.iter().all(|pid| alive(pid))
    });
    assert_eq!(all.iter().filter(|pid| alive(pid)).count(), 2);
    std::fs::write(ws.path().join("never"), "").unwrap();
    rpc.event("agent_end");
    let (status, _, _) = rpc.finish();
    assert!(status.success());
    assert_eq!(result(&ws, "c2"), "tool error: Operation aborted");
    for id in ["c1", "c3"] {
        assert!(result(&ws, id).ends_with("worked"), "{}", result(&ws, id));
    }
}

/// A child inherits the parent's model as it is now: after `set_model`,
/// a profile without a model of its own runs on the new one (with the
/// same endpoint and key, the provider being the same).
#[test]
fn a_child_follows_the_parents_model_switch() {
    let ws = Workspace::new();
    configure(
        &ws,
        "",
        "[[subagents.profile]]\nname = \"plain\"\nallowed_tools = [\"read\"]\n",
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "task", &task("plain", "look"))])),
        Reply::sse(chat_text("looked")),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let mut rpc = rpc_against(&ws, &server);
    let switched = rpc.call(
        &serde_json::json!({"id": "m", "type": "set_model", "provider": "openai", "modelId": "m2"}),
    );
    assert_eq!(switched["success"], true, "{switched}");
    rpc.send(&serde_json::json!({"id": "p1", "type": "prompt", "message": "go"}));
    rpc.event("agent_end");
    let (status, _, _) = rpc.finish();
    assert!(status.success());
    let requests = server.requests();
    assert_eq!(requests[0].json()["model"], "m2");
    assert_eq!(requests[1].json()["model"], "m2");
    assert!(result(&ws, "c1").ends_with("looked"));
}

/// After a turn that ran a subagent, the commands that take the last
/// session (`show`, `status`, `resume --last`) take the parent, never
/// the child created after it.
#[test]
fn the_last_session_is_the_parent_not_its_child() {
    let ws = Workspace::new();
    configure(&ws, "", "");
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "task",
            &task("explore", "find where X is defined"),
        )])),
        Reply::sse(chat_text("X is defined in src/lib.rs")),
        Reply::sse(chat_text("done")),
        Reply::sse(chat_text("again")),
    ])
    .unwrap();
    ws.run_model(&server, &["-p", "where is X?"], &[]).ok();
    let parent = parent_file(&ws);
    let parent_id = parent.file_stem().unwrap().to_string_lossy().into_owned();
    let shown = ws.run(&["show"]).ok();
    assert!(shown.contains("where is X?"), "{shown}");
    let status = ws.run(&["status"]).ok();
    assert!(status.contains(&parent_id), "{status}");
    ws.run_model(&server, &["resume", "--last", "-p", "more"], &[])
        .ok();
    assert!(
        std::fs::read_to_string(&parent)
            .unwrap()
            .contains("\"more\""),
        "resume --last went to the parent"
    );
}
