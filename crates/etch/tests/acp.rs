//! `etch acp` through the real binary (issue 18), driven by a small
//! ACP client over its pipes against the fake model server: initialize,
//! sessions, prompts streamed as updates, tool calls with their kinds
//! and diffs, permission requests answered allow and reject, cancel,
//! session/load, and the bad inputs (requests before initialize,
//! unknown methods and sessions, malformed JSON, a client that leaves
//! mid-turn). Assertions are on the protocol messages and the session
//! logs on disk.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::time::Duration;

use etch_test_support::{End, FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::{Value, json};
use support::rpc::RpcClient;
use support::{Workspace, assert_whole, jsonl, model_args, wait_until};

/// An ACP client over a running `etch acp`.
struct Acp {
    /// The process and its lines.
    rpc: RpcClient,
    /// The next request id.
    next: i64,
}

impl Acp {
    /// `etch acp` in `ws` against `server` (the OpenAI shape).
    fn start(ws: &Workspace, server: &FakeServer) -> Self {
        let args = model_args(server);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let rpc = RpcClient::start_command(ws, "acp", &args, &[]);
        Self { rpc, next: 0 }
    }

    /// Sends request `method` and returns its id.
    fn send(&mut self, method: &str, params: &Value) -> i64 {
        self.next += 1;
        self.rpc
            .send(&json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}));
        self.next
    }

    /// Reads until the answer to request `id` (updates seen on the way
    /// are kept in `seen`).
    fn answer(&mut self, id: i64) -> Value {
        self.rpc
            .until(|v| v["id"] == id && v.get("method").is_none())
    }

    /// Sends request `method` and returns its answer.
    fn call(&mut self, method: &str, params: &Value) -> Value {
        let id = self.send(method, params);
        self.answer(id)
    }

    /// Sends a notification.
    fn notify(&mut self, method: &str, params: &Value) {
        self.rpc
            .send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// `initialize`, checked.
    fn initialize(&mut self) -> Value {
        let answer = self.call(
            "initialize",
            &json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}}}),
        );
        assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
        answer
    }

    /// `session/new` in `ws`; the session id.
    fn new_session(&mut self, ws: &Workspace) -> String {
        let answer = self.call("session/new", &json!({"cwd": ws.path(), "mcpServers": []}));
        answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {answer}"))
            .to_owned()
    }

    /// Sends `text` as a prompt of session `id`; the request id.
    fn prompt(&mut self, id: &str, text: &str) -> i64 {
        self.send(
            "session/prompt",
            &json!({"sessionId": id, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    /// The `session/update`s seen so far, as `(sessionUpdate, update)`.
    fn updates(&self) -> Vec<Value> {
        self.rpc
            .seen
            .iter()
            .filter(|v| v["method"] == "session/update")
            .map(|v| v["params"]["update"].clone())
            .collect()
    }

    /// Reads until the client is asked for permission; the request.
    fn permission_request(&mut self) -> Value {
        self.rpc
            .until(|v| v["method"] == "session/request_permission")
    }

    /// Answers the server's request `id` with option `option`.
    fn choose(&mut self, id: &Value, option: &str) {
        self.rpc.send(&json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "selected", "optionId": option}}}));
    }
}

/// An answer that sends its first chunk and then stalls for a minute.
fn stalled() -> Reply {
    Reply::Sse {
        events: chat_text("partial answer")[..1].to_vec(),
        gap: Duration::ZERO,
        end: End::Stall(Duration::from_secs(60)),
    }
}

/// The config that asks for nothing, so tools run unasked.
const ASK_NOTHING: &str = "[acp]\nask = []\n";

/// Initialize, a new session, a prompt with a tool call: the updates
/// come in order (the call pending, running, completed, then the
/// answer), the answer is end_turn, and the session is an ordinary etch
/// session on disk.
#[test]
fn a_prompt_streams_updates_and_ends_the_turn() {
    let ws = Workspace::new();
    ws.user_config(ASK_NOTHING);
    std::fs::write(ws.path().join("notes.txt"), "X lives here\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "read",
            r#"{"path":"notes.txt"}"#,
        )])),
        Reply::sse(chat_text("X is in notes.txt")),
    ])
    .unwrap();
    let mut acp = Acp::start(&ws, &server);
    let init = acp.initialize();
    let caps = &init["result"]["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{init}");
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(init["result"]["agentInfo"]["name"], "etch");
    let answer = acp.call("session/new", &json!({"cwd": ws.path(), "mcpServers": []}));
    let id = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    let model = &answer["result"]["configOptions"][0];
    assert_eq!(model["id"], "model", "{answer}");
    assert_eq!(model["currentValue"], "m1", "{answer}");
    let commands = acp
        .rpc
        .until(|v| v["params"]["update"]["sessionUpdate"] == "available_commands_update");
    let names: Vec<&str> = commands["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"compact"), "{names:?}");
    let prompt = acp.prompt(&id, "where is X?");
    let done = acp.answer(prompt);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let mut kinds: Vec<String> = acp
        .updates()
        .iter()
        .filter(|u| u["sessionUpdate"] != "available_commands_update")
        .map(|u| match u["sessionUpdate"].as_str().unwrap() {
            "tool_call" => format!("tool_call {}", u["status"].as_str().unwrap_or("pending")),
            "tool_call_update" => format!("update {}", u["status"].as_str().unwrap_or("content")),
            other => other.to_owned(),
        })
        .collect();
    // The answer streams in several chunks.
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "tool_call pending",
            "update in_progress",
            "update completed",
            "agent_message_chunk"
        ],
        "{:#?}",
        acp.updates()
    );
    let updates = acp.updates();
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(call["toolCallId"], "c1");
    assert_eq!(call["kind"], "read");
    assert_eq!(call["title"], "Read notes.txt");
    let finished = updates.iter().find(|u| u["status"] == "completed").unwrap();
    assert!(
        finished["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("X lives here"),
        "{finished}"
    );
    let answer: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(answer, "X is in notes.txt");
    // The session is etch's own: on disk, listed, and whole.
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
    let session = ws.only_session();
    assert_eq!(session.file_stem().unwrap().to_string_lossy(), id);
    assert_whole(&session);
    let listed = ws.run(&["sessions"]).ok();
    assert!(listed.contains(&id), "{listed}");
}

/// Bad input, each answered and the connection going on: a request
/// before initialize, malformed JSON, an unknown method (with its id),
/// a prompt for an unknown session, a cancel with nothing running.
#[test]
fn bad_messages_are_answered_and_the_connection_goes_on() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text("fine"))]).unwrap();
    let mut acp = Acp::start(&ws, &server);
    let early = acp.call("session/new", &json!({"cwd": ws.path(), "mcpServers": []}));
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert!(
        early["error"]["message"]
            .as_str()
            .unwrap()
            .contains("send initialize before session/new"),
        "{early}"
    );
    acp.rpc.send_raw(b"{this is not json\n");
    let parse = acp.rpc.until(|v| v.get("error").is_some());
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert!(parse["id"].is_null());
    acp.initialize();
    let unknown = acp.call("session/fly", &json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert_eq!(unknown["id"], acp.next);
    let nobody = acp.call(
        "session/prompt",
        &json!({"sessionId": "01NOSUCHSESSION", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(nobody["error"]["code"], -32002, "{nobody}");
    let bad_params = acp.call("session/new", &json!({"cwd": 7}));
    assert_eq!(bad_params["error"]["code"], -32602, "{bad_params}");
    let id = acp.new_session(&ws);
    acp.notify("session/cancel", &json!({"sessionId": id}));
    let prompt = acp.prompt(&id, "still there?");
    assert_eq!(acp.answer(prompt)["result"]["stopReason"], "end_turn");
    // The cancel with nothing running was answered by nothing: the only
    // errors are the five asked for above.
    let seen = acp.rpc.seen.clone();
    let (status, stderr, rest) = acp.rpc.finish();
    assert!(status.success(), "{stderr}");
    let errors = seen
        .iter()
        .chain(&rest)
        .filter(|v| v.get("error").is_some())
        .count();
    assert_eq!(errors, 5, "{seen:#?}");
}

/// A gated tool asks the editor first: allowed, the command runs;
/// rejected, it does not and the model is told; allow-always is kept
/// for the session, so the next call does not ask.
#[test]
fn permission_requests_allow_and_reject() {
    let ws = Workspace::new();
    // Four turns, each a bash call that writes a file, then an answer.
    let turns = [
        ("k1", "one"),
        ("k2", "two"),
        ("k3", "three"),
        ("k4", "four"),
    ];
    let server = FakeServer::start(
        turns
            .iter()
            .flat_map(|(id, word)| {
                let command = json!({"command": format!("echo {word} > {word}.txt")}).to_string();
                [
                    Reply::sse(chat_tool_calls(&[(id, "bash", &command)])),
                    Reply::sse(chat_text(&format!("done with {word}"))),
                ]
            })
            .collect(),
    )
    .unwrap();
    let mut acp = Acp::start(&ws, &server);
    acp.initialize();
    let id = acp.new_session(&ws);
    let first = acp.prompt(&id, "make one");
    let asked = acp.permission_request();
    assert_eq!(asked["params"]["sessionId"], id.as_str());
    assert_eq!(asked["params"]["toolCall"]["toolCallId"], "k1");
    assert_eq!(asked["params"]["toolCall"]["kind"], "execute");
    let options: Vec<&str> = asked["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    acp.choose(&asked["id"], "allow_once");
    assert_eq!(acp.answer(first)["result"]["stopReason"], "end_turn");
    assert!(ws.path().join("one.txt").exists());

    let second = acp.prompt(&id, "make two");
    let asked = acp.permission_request();
    acp.choose(&asked["id"], "reject_once");
    assert_eq!(acp.answer(second)["result"]["stopReason"], "end_turn");
    assert!(!ws.path().join("two.txt").exists());
    let body = server.requests()[3].body_text();
    assert!(body.contains("the user denied this bash call"), "{body}");

    let third = acp.prompt(&id, "make three");
    let asked = acp.permission_request();
    acp.choose(&asked["id"], "allow_always");
    assert_eq!(acp.answer(third)["result"]["stopReason"], "end_turn");
    let fourth = acp.prompt(&id, "make four");
    assert_eq!(acp.answer(fourth)["result"]["stopReason"], "end_turn");
    assert!(ws.path().join("three.txt").exists() && ws.path().join("four.txt").exists());
    let asks = acp
        .rpc
        .seen
        .iter()
        .filter(|v| v["method"] == "session/request_permission")
        .count();
    assert_eq!(asks, 3, "allow-always is not asked again");
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
    // The editor's answers are in the log, before the results.
    let decided: Vec<String> = support::jsonl(&ws.only_session())
        .into_iter()
        .filter(|e| e["type"] == "approval.decision")
        .map(|e| {
            format!(
                "{} {} {}",
                e["data"]["toolCallId"].as_str().unwrap(),
                e["data"]["decision"].as_str().unwrap(),
                e["data"]["by"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        decided,
        [
            "k1 allowed editor",
            "k2 denied editor",
            "k3 allowed_for_session editor",
            "k4 allowed session"
        ]
    );
}

/// session/cancel while the answer streams: the prompt ends with
/// `cancelled`, nothing partial is stored, and the next prompt works.
#[test]
fn cancel_stops_a_streaming_answer() {
    let ws = Workspace::new();
    let server =
        FakeServer::start(vec![stalled(), Reply::sse(chat_text("second answer"))]).unwrap();
    let mut acp = Acp::start(&ws, &server);
    acp.initialize();
    let id = acp.new_session(&ws);
    let prompt = acp.prompt(&id, "first");
    acp.rpc
        .until(|v| v["params"]["update"]["sessionUpdate"] == "agent_message_chunk");
    acp.notify("session/cancel", &json!({"sessionId": id}));
    assert_eq!(acp.answer(prompt)["result"]["stopReason"], "cancelled");
    let next = acp.prompt(&id, "second");
    assert_eq!(acp.answer(next)["result"]["stopReason"], "end_turn");
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
    let events = jsonl(&ws.only_session());
    let answers: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message.assistant")
        .collect();
    // The cancelled answer is kept as interrupted (G20), then the second.
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0]["data"]["stopReason"], "aborted");
    assert_eq!(answers[1]["data"]["stopReason"], "stop");
}

/// An edit reaches the editor as an ACP diff of the changed region.
#[test]
fn an_edit_is_shown_as_a_diff() {
    let ws = Workspace::new();
    ws.user_config(ASK_NOTHING);
    std::fs::write(ws.path().join("greeting.txt"), "Hello, wrold!\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "e1",
            "edit",
            r#"{"path":"greeting.txt","oldText":"wrold","newText":"world"}"#,
        )])),
        Reply::sse(chat_text("fixed")),
    ])
    .unwrap();
    let mut acp = Acp::start(&ws, &server);
    acp.initialize();
    let id = acp.new_session(&ws);
    let prompt = acp.prompt(&id, "fix the typo");
    assert_eq!(acp.answer(prompt)["result"]["stopReason"], "end_turn");
    let updates = acp.updates();
    let done = updates
        .iter()
        .find(|u| u["toolCallId"] == "e1" && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{updates:#?}"));
    let diff = &done["content"][0];
    assert_eq!(diff["type"], "diff", "{done}");
    assert_eq!(
        diff["path"],
        ws.path().join("greeting.txt").display().to_string()
    );
    assert_eq!(diff["oldText"], "Hello, wrold!");
    assert_eq!(diff["newText"], "Hello, world!");
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
}

/// session/load tells an earlier session again as updates (its prompt,
/// its tool call, its answer) and then goes on in it.
#[test]
fn load_replays_an_earlier_session() {
    let ws = Workspace::new();
    ws.user_config(ASK_NOTHING);
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "ls", r#"{"path":"."}"#)])),
        Reply::sse(chat_text("an empty place")),
        Reply::sse(chat_text("still empty")),
    ])
    .unwrap();
    let mut acp = Acp::start(&ws, &server);
    acp.initialize();
    let id = acp.new_session(&ws);
    let prompt = acp.prompt(&id, "what is here?");
    acp.answer(prompt);
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());

    let mut again = Acp::start(&ws, &server);
    again.initialize();
    let loaded = again.call(
        "session/load",
        &json!({"sessionId": id, "cwd": ws.path(), "mcpServers": []}),
    );
    assert!(loaded.get("result").is_some(), "{loaded}");
    let kinds: Vec<String> = again
        .updates()
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ],
        "{:#?}",
        again.updates()
    );
    assert_eq!(again.updates()[0]["content"]["text"], "what is here?");
    let next = again.prompt(&id, "and now?");
    assert_eq!(again.answer(next)["result"]["stopReason"], "end_turn");
    let body = server.requests()[2].body_text();
    assert!(
        body.contains("what is here?") && body.contains("an empty place"),
        "{body}"
    );
    let missing = again.call(
        "session/load",
        &json!({"sessionId": "01NOSUCH", "cwd": ws.path(), "mcpServers": []}),
    );
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let (status, _, _) = again.rpc.finish();
    assert!(status.success());
}

/// The editor quits mid-turn (its pipe closes), or etch gets Ctrl-C:
/// the run is aborted, its shell is gone, etch exits 0 (130 for Ctrl-C)
/// and the session is whole.
#[test]
fn a_turn_stopped_from_outside_leaves_a_valid_session() {
    for interrupt in [false, true] {
        let ws = Workspace::new();
        ws.user_config(ASK_NOTHING);
        let server = FakeServer::start(vec![Reply::sse(chat_tool_calls(&[(
            "k1",
            "bash",
            r#"{"command":"echo $$ > loop.pid; for i in $(seq 600); do [ -f never ] && break; sleep 0.05; done"}"#,
        )]))])
        .unwrap();
        let mut acp = Acp::start(&ws, &server);
        acp.initialize();
        let id = acp.new_session(&ws);
        acp.prompt(&id, "wait");
        acp.rpc
            .until(|v| v["params"]["update"]["status"] == "in_progress");
        let pid_file = ws.path().join("loop.pid");
        wait_until("the call never started", || pid_file.exists());
        let (status, stderr) = if interrupt {
            let sent = std::process::Command::new("kill")
                .args(["-INT", &acp.rpc.pid().to_string()])
                .status()
                .unwrap();
            assert!(sent.success());
            acp.rpc.wait_exit()
        } else {
            let (status, stderr, _) = acp.rpc.finish();
            (status, stderr)
        };
        let expected = if interrupt { 130 } else { 0 };
        assert_eq!(status.code(), Some(expected), "{stderr}");
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let gone = support::process_gone(&pid);
        std::fs::write(ws.path().join("never"), "").unwrap();
        assert!(gone, "the call's shell {pid} outlived etch acp");
        assert_whole(&ws.only_session());
    }
}

/// The ACP client library's scenario script, installed on first use
/// into target/acp-client (a no-op once .ci/run installed it).
fn sdk_client() -> &'static std::path::Path {
    static CLIENT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = root.join("../../target/acp-client");
        let status = std::process::Command::new("sh")
            .arg(root.join("tests/acp-client/install.sh"))
            .arg(&dir)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "installing @agentclientprotocol/sdk from the npm registry failed"
        );
        dir.join("client.mjs")
    })
}

/// Runs the SDK client's `scenario` against `etch acp` in `ws` (talking
/// to `server`), with `env` for the script; what it saw.
fn sdk(ws: &Workspace, server: &FakeServer, scenario: &str, env: &[(&str, &str)]) -> Value {
    // The etch the script starts gets the workspace's environment.
    let template = ws.command(&[]);
    let mut cmd = std::process::Command::new("node");
    cmd.arg(sdk_client())
        .arg(scenario)
        .arg(ws.path())
        .arg(template.get_program())
        .args(model_args(server))
        .current_dir(ws.path());
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the client failed: {stdout}\n{stderr}"
    );
    let seen: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}): {stdout}\n{stderr}"));
    assert!(seen.get("error").is_none(), "{seen:#}\n{stderr}");
    assert_eq!(seen["exit"], 0, "{seen:#}\n{stderr}");
    seen
}

/// The protocol's own client library drives a turn: an MCP server the
/// editor passes (npm's server-everything) is used by the model, a
/// gated bash call asks and runs once allowed, and every update passes
/// the library's schema checks.
#[test]
fn the_sdk_client_runs_a_turn_with_an_editor_mcp_server() {
    let ws = Workspace::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mcp = root.join("../../target/mcp-servers");
    let status = std::process::Command::new("sh")
        .arg(root.join("tests/mcp-servers/install.sh"))
        .arg(&mcp)
        .status()
        .unwrap();
    assert!(status.success(), "installing the MCP servers failed");
    let everything = mcp.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "m1",
            "mcp__everything__echo",
            r#"{"message":"hi from the editor's server"}"#,
        )])),
        Reply::sse(chat_tool_calls(&[(
            "k1",
            "bash",
            r#"{"command":"echo ran > ran.txt"}"#,
        )])),
        Reply::sse(chat_text("all done")),
    ])
    .unwrap();
    let servers = json!([{
        "name": "everything",
        "command": "node",
        "args": [everything, "stdio"],
        "env": [{"name": "EDITOR_GIVEN", "value": "1"}]
    }])
    .to_string();
    let seen = sdk(
        &ws,
        &server,
        "prompt",
        &[
            ("ACP_MCP_SERVERS", &servers),
            ("ACP_PROMPT", "echo, then run it"),
            ("ACP_PERMISSION", "allow_once"),
        ],
    );
    assert_eq!(seen["initialize"]["protocolVersion"], 1);
    assert_eq!(seen["prompt"]["stopReason"], "end_turn", "{seen:#}");
    let tools: Vec<String> = server.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        tools.contains(&"mcp__everything__echo".to_owned()),
        "{tools:?}"
    );
    let updates = seen["updates"].as_array().unwrap();
    let echoed = updates
        .iter()
        .find(|u| u["toolCallId"] == "m1" && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{updates:#?}"));
    assert!(
        echoed.to_string().contains("hi from the editor's server"),
        "{echoed}"
    );
    let asked = seen["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "only bash asks: {asked:#?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "k1");
    assert!(ws.path().join("ran.txt").exists());
    assert_whole(&ws.only_session());
}

/// The library's client cancels while the answer streams: the turn
/// ends `cancelled`, and etch exits cleanly when the editor closes.
#[test]
fn the_sdk_client_cancels_a_turn() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![stalled()]).unwrap();
    let seen = sdk(&ws, &server, "cancel", &[("ACP_PROMPT", "tell me a story")]);
    assert_eq!(seen["prompt"]["stopReason"], "cancelled", "{seen:#}");
    assert_whole(&ws.only_session());
}

/// The library's client loads a session `etch -p` wrote: its prompt and
/// answer come back as updates.
#[test]
fn the_sdk_client_loads_a_headless_session() {
    let ws = Workspace::new();
    let first = FakeServer::start(vec![Reply::sse(chat_text("forty-two"))]).unwrap();
    let out = ws.run_model(&first, &["-p", "what is the answer?"], &[]);
    assert_eq!(out.ok(), "forty-two\n");
    let id = ws
        .only_session()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let server = FakeServer::start(Vec::new()).unwrap();
    let seen = sdk(&ws, &server, "load", &[("ACP_SESSION", &id)]);
    let updates = seen["updates"].as_array().unwrap();
    assert_eq!(
        updates[0]["sessionUpdate"], "user_message_chunk",
        "{updates:#?}"
    );
    assert_eq!(updates[0]["content"]["text"], "what is the answer?");
    assert!(
        updates
            .iter()
            .any(|u| u["sessionUpdate"] == "agent_message_chunk"
                && u["content"]["text"] == "forty-two"),
        "{updates:#?}"
    );
}

/// Skills and `/compact` are the editor's slash commands; the model is
/// a session option the editor can switch, and later requests use the
/// new model. The session is one `etch show` and `etch resume` know.
#[test]
fn slash_commands_and_the_model_option() {
    let ws = Workspace::new();
    let dir = ws.path().join(".etch/skills/deploy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the service.\n---\nRun make deploy-now.\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("deploying")),
        Reply::sse(chat_text("on m2 now")),
        Reply::sse(chat_text("resumed")),
    ])
    .unwrap();
    let mut acp = Acp::start(&ws, &server);
    acp.initialize();
    let id = acp.new_session(&ws);
    let commands = acp
        .rpc
        .until(|v| v["params"]["update"]["sessionUpdate"] == "available_commands_update");
    let listed = commands["params"]["update"]["availableCommands"].to_string();
    assert!(
        listed.contains("\"skill:deploy\"") && listed.contains("Deploy the service."),
        "{listed}"
    );
    let skill = acp.prompt(&id, "/skill:deploy to staging");
    assert_eq!(acp.answer(skill)["result"]["stopReason"], "end_turn");
    let sent = server.requests()[0].body_text();
    assert!(
        sent.contains("Run make deploy-now.") && sent.contains("to staging"),
        "{sent}"
    );
    // A session this short has nothing to compact, and says so (a focus
    // would force it).
    let compact = acp.prompt(&id, "/compact");
    assert_eq!(acp.answer(compact)["result"]["stopReason"], "end_turn");
    let said = acp.updates().last().unwrap()["content"]["text"].clone();
    assert!(
        said.as_str().unwrap().starts_with("Nothing to compact: "),
        "{said}"
    );
    assert_eq!(server.requests().len(), 1, "no summary was asked for");
    let switched = acp.call(
        "session/set_config_option",
        &json!({"sessionId": id, "configId": "model", "value": "m2"}),
    );
    assert_eq!(
        switched["result"]["configOptions"][0]["currentValue"], "m2",
        "{switched}"
    );
    let bad = acp.call(
        "session/set_config_option",
        &json!({"sessionId": id, "configId": "mode", "value": "fast"}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let next = acp.prompt(&id, "which model?");
    assert_eq!(acp.answer(next)["result"]["stopReason"], "end_turn");
    let last = server.requests().last().unwrap().json();
    assert_eq!(last["model"], "m2");
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
    let shown = ws.run(&["show", &id]).ok();
    assert!(shown.contains("on m2 now"), "{shown}");
    let resumed = ws.run_model(&server, &["resume", &id, "-p", "go on"], &[]);
    assert_eq!(resumed.ok(), "resumed\n", "{}", resumed.stderr());
}

/// `/compact` with something to compact: the summary request goes out,
/// the editor is told how far the context shrank, and the next prompt
/// starts from the summary.
#[test]
fn compact_summarizes_and_says_so() {
    let ws = Workspace::new();
    ws.user_config("[context]\nkeep_recent_tokens = 0\n[session]\nkeep_messages = 1\n");
    // No usage chunk: the fake's fixed token counts would claim these
    // long answers are tiny, so the estimate measures the messages.
    let long = |text: &str| {
        let mut frames = chat_text(&text.repeat(200));
        frames.retain(|f| !f.contains("\"prompt_tokens\""));
        Reply::sse(frames)
    };
    let server = FakeServer::start(vec![
        long("a long first answer "),
        long("a long second answer "),
        Reply::sse(chat_text("The user asked two things.")),
        Reply::sse(chat_text("after the summary")),
    ])
    .unwrap();
    let mut acp = Acp::start(&ws, &server);
    acp.initialize();
    let id = acp.new_session(&ws);
    for text in ["one", "two"] {
        let prompt = acp.prompt(&id, &format!("{text} {}", "and so on ".repeat(200)));
        assert_eq!(acp.answer(prompt)["result"]["stopReason"], "end_turn");
    }
    let compact = acp.prompt(&id, "/compact");
    assert_eq!(acp.answer(compact)["result"]["stopReason"], "end_turn");
    let said = acp.updates().last().unwrap()["content"]["text"].clone();
    assert!(
        said.as_str()
            .unwrap()
            .starts_with("Compacted the conversation: about "),
        "{said}"
    );
    let next = acp.prompt(&id, "three");
    assert_eq!(acp.answer(next)["result"]["stopReason"], "end_turn");
    let body = server.requests()[3].body_text();
    assert!(body.contains("The user asked two things."), "{body}");
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
    assert!(
        jsonl(&ws.only_session())
            .iter()
            .any(|e| e["type"] == "context.summary")
    );
}

/// An editor that stops reading: once more output waits than the cap
/// allows, etch acp aborts the run and exits 1 saying why; the session
/// log is whole.
#[test]
fn an_editor_that_stops_reading_gets_a_clear_error() {
    use std::io::{BufRead, BufReader, Write};
    let ws = Workspace::new();
    let mut child = ws
        .command(&["acp", "--provider", "echo"])
        .env("ETCH_ACP_OUTBOX_BYTES", "65536")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": ws.path(), "mcpServers": []}}),
    );
    let session = loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "etch acp ended early"
        );
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["id"] == 2 {
            break value["result"]["sessionId"].as_str().unwrap().to_owned();
        }
    };
    // From here on nothing is read: the echoed answer fills the pipe.
    let big = "word ".repeat(100_000);
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": big}]}}),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("etch acp did not give up on an editor that stopped reading");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stopped reading"), "{stderr}");
    for line in std::fs::read_to_string(ws.only_session()).unwrap().lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
}

/// More bad input: a second prompt while one runs, an image the
/// capabilities never offered, a load by a prefix, loading a session
/// already open on this connection (told again from its log), and a
/// cancel while a permission question is open (the turn ends cancelled,
/// the call never runs).
#[test]
fn busy_sessions_prefixes_and_open_questions() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "k1",
            "bash",
            r#"{"command":"touch ran.txt"}"#,
        )])),
        Reply::sse(chat_text("never mind")),
    ])
    .unwrap();
    let mut acp = Acp::start(&ws, &server);
    acp.initialize();
    let id = acp.new_session(&ws);
    let first = acp.prompt(&id, "run it");
    acp.permission_request();
    let second = acp.prompt(&id, "and this?");
    let refused = acp.answer(second);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already running a prompt"),
        "{refused}"
    );
    let image = acp.call(
        "session/prompt",
        &json!({"sessionId": id, "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
    );
    assert!(
        image["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already running a prompt"),
        "{image}"
    );
    // The question stays open; the editor cancels the turn instead.
    acp.notify("session/cancel", &json!({"sessionId": id}));
    assert_eq!(acp.answer(first)["result"]["stopReason"], "cancelled");
    assert!(!ws.path().join("ran.txt").exists());
    let by_prefix = acp.call(
        "session/load",
        &json!({"sessionId": &id[..8], "cwd": ws.path(), "mcpServers": []}),
    );
    assert_eq!(by_prefix["error"]["code"], -32002, "{by_prefix}");
    let again = acp.call(
        "session/load",
        &json!({"sessionId": id, "cwd": ws.path(), "mcpServers": []}),
    );
    assert!(again.get("result").is_some(), "{again}");
    // A live turn never echoes the user's text: this is the replay.
    assert!(
        acp.updates()
            .iter()
            .any(|u| u["sessionUpdate"] == "user_message_chunk" && u["content"]["text"] == "run it"),
        "{:#?}",
        acp.updates()
    );
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
    assert_whole(&ws.only_session());
}

/// Image blocks reach the model with the prompt (the capabilities say
/// so); a block that is no image is refused naming it; audio is not
/// taken.
#[test]
fn image_blocks_reach_the_model() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text("a square"))]).unwrap();
    let mut acp = Acp::start(&ws, &server);
    let caps = acp.initialize();
    assert_eq!(
        caps["result"]["agentCapabilities"]["promptCapabilities"]["image"],
        true
    );
    let id = acp.new_session(&ws);
    let bad = acp.call(
        "session/prompt",
        &json!({"sessionId": id, "prompt": [{"type": "text", "text": "what?"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
    );
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("image #1: it is not a PNG"),
        "{bad}"
    );
    let audio = acp.call(
        "session/prompt",
        &json!({"sessionId": id, "prompt": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]}),
    );
    assert_eq!(audio["error"]["code"], -32602, "{audio}");
    let bytes = etch_image::sample(12, 12, etch_model::MediaType::Jpeg).unwrap();
    let image = etch_model::Image::new(bytes, etch_model::MediaType::Jpeg, 12, 12);
    let answer = acp.call(
        "session/prompt",
        &json!({"sessionId": id, "prompt": [{"type": "image", "data": image.base64().unwrap(), "mimeType": "image/jpeg"}]}),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let request = server.requests()[0].json();
    let user = request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let parts = user["content"].as_array().unwrap();
    assert!(
        parts
            .iter()
            .any(|p| p["text"] == "(see the attached image)"),
        "{user}"
    );
    assert_eq!(
        parts.last().unwrap()["image_url"]["url"],
        image.data_url().unwrap()
    );
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
}

/// `session/list` lists the project's sessions (the capability says so),
/// newest first, with titles; `session/resume` opens one to go on without
/// telling its history again; an unknown id is refused.
#[test]
fn sessions_are_listed_and_resumed() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("first answer")),
        Reply::sse(chat_text("resumed answer")),
    ])
    .unwrap();
    let mut acp = Acp::start(&ws, &server);
    let caps = acp.initialize();
    let session_caps = &caps["result"]["agentCapabilities"]["sessionCapabilities"];
    assert!(session_caps["list"].is_object(), "{caps}");
    assert!(session_caps["resume"].is_object(), "{caps}");
    let id = acp.new_session(&ws);
    let first = acp.prompt(&id, "remember the number 7");
    assert_eq!(acp.answer(first)["result"]["stopReason"], "end_turn");
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
    let mut acp = Acp::start(&ws, &server);
    acp.initialize();
    let listed = acp.call("session/list", &json!({"cwd": ws.path()}));
    let sessions = listed["result"]["sessions"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["sessionId"], id.as_str());
    // A session opened by an editor has no title until it is named.
    assert!(
        sessions[0].get("title").is_none_or(Value::is_string),
        "{listed}"
    );
    assert!(sessions[0]["updatedAt"].is_string());
    let bad_cursor = acp.call("session/list", &json!({"cwd": ws.path(), "cursor": "x"}));
    assert_eq!(bad_cursor["error"]["code"], -32602, "{bad_cursor}");
    let past_the_end = acp.call(
        "session/list",
        &json!({"cwd": ws.path(), "cursor": usize::MAX.to_string()}),
    );
    assert_eq!(
        past_the_end["result"]["sessions"],
        json!([]),
        "{past_the_end}"
    );
    assert!(
        past_the_end["result"]
            .get("nextCursor")
            .is_none_or(Value::is_null)
    );
    let unknown = acp.call(
        "session/resume",
        &json!({"sessionId": "01NOSUCHSESSION0000000000", "cwd": ws.path()}),
    );
    assert!(unknown.get("error").is_some(), "{unknown}");
    let resumed = acp.call(
        "session/resume",
        &json!({"sessionId": id, "cwd": ws.path()}),
    );
    assert!(resumed.get("result").is_some(), "{resumed}");
    assert!(
        !acp.updates()
            .iter()
            .any(|u| u["sessionUpdate"] == "user_message_chunk"),
        "a resume tells no history: {:#?}",
        acp.updates()
    );
    let next = acp.prompt(&id, "what number?");
    assert_eq!(acp.answer(next)["result"]["stopReason"], "end_turn");
    let request = server.requests()[1].json();
    assert!(
        request.to_string().contains("remember the number 7"),
        "the context goes on"
    );
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
}

/// Session modes: a new session offers ask, auto and read-only (ask
/// chosen); in read-only a command is refused without asking, in auto it
/// runs without asking; a mode that does not exist is refused.
#[test]
fn modes_set_the_approval_policy() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "r1",
            "bash",
            r#"{"command":"touch refused.txt"}"#,
        )])),
        Reply::sse(chat_text("refused")),
        Reply::sse(chat_tool_calls(&[(
            "a1",
            "bash",
            r#"{"command":"touch ran.txt"}"#,
        )])),
        Reply::sse(chat_text("ran")),
    ])
    .unwrap();
    let mut acp = Acp::start(&ws, &server);
    acp.initialize();
    let created = acp.call("session/new", &json!({"cwd": ws.path(), "mcpServers": []}));
    let id = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let modes = &created["result"]["modes"];
    assert_eq!(modes["currentModeId"], "ask", "{created}");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ask", "auto", "read-only"]);
    let bad = acp.call(
        "session/set_mode",
        &json!({"sessionId": id, "modeId": "yolo"}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let set = acp.call(
        "session/set_mode",
        &json!({"sessionId": id, "modeId": "read-only"}),
    );
    assert!(set.get("result").is_some(), "{set}");
    assert!(
        acp.updates()
            .iter()
            .any(|u| u["sessionUpdate"] == "current_mode_update"
                && u["currentModeId"] == "read-only")
    );
    let first = acp.prompt(&id, "try it");
    assert_eq!(acp.answer(first)["result"]["stopReason"], "end_turn");
    assert!(!ws.path().join("refused.txt").exists());
    let second_request = server.requests()[1].json();
    assert!(
        second_request.to_string().contains("read-only mode"),
        "the model is told why: {second_request}"
    );
    acp.call(
        "session/set_mode",
        &json!({"sessionId": id, "modeId": "auto"}),
    );
    let next = acp.prompt(&id, "now run it");
    assert_eq!(acp.answer(next)["result"]["stopReason"], "end_turn");
    assert!(
        ws.path().join("ran.txt").exists(),
        "auto runs without asking"
    );
    assert!(
        !acp.rpc
            .seen
            .iter()
            .any(|v| v["method"] == "session/request_permission"),
        "nothing asked"
    );
    let (status, _, _) = acp.rpc.finish();
    assert!(status.success());
}
