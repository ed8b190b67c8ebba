//! `etch serve` end to end: the real binary serving a workspace on a
//! loopback port, driven with plain HTTP requests and read as
//! server-sent events. Runs that must stay open while a test acts are
//! held by a gated fake model server (a file releases the answer), so
//! no test waits on a guessed duration.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use etch_test_support::{FakeServer, Reply, chat_text, chat_text_chunks, chat_tool_calls};
use serde_json::{Value, json};
use support::browser::Browser;
use support::http::{self, Events, Frame, Reply as HttpReply};
use support::serve::Serve;
use support::{Workspace, jsonl, model_args};

/// An answer whose first delta goes out at once and the rest once the
/// file `gate` exists: a run held open until the test says go.
fn held(gate: &std::path::Path) -> Reply {
    let mut chunks = chat_text_chunks("held answer", 4);
    let rest = chunks.split_off(1);
    Reply::Gated {
        events: chunks,
        gate: gate.to_path_buf(),
        rest,
    }
}

/// The prompts logged in session file `file`, in order.
fn prompts_in(file: &std::path::Path) -> Vec<String> {
    jsonl(file)
        .iter()
        .filter(|e| e["type"] == "message.user")
        .map(|e| e["data"]["content"][0]["text"].as_str().unwrap().to_owned())
        .collect()
}

/// On the page: a new session, then `message` sent in it.
fn new_session_and_send(browser: &Browser, message: &str) {
    browser.eval("document.getElementById('new').click()");
    browser.wait(
        "a new session open",
        "return document.getElementById('status').textContent === 'connected'",
    );
    browser.eval(&format!(
        "document.getElementById('message').value = {}; \
         document.getElementById('send').click()",
        serde_json::Value::from(message)
    ));
}

/// Whether a frame is the live `agent_end`.
fn agent_end(frame: &Frame) -> bool {
    frame.event.as_deref() == Some("live") && frame.json()["type"] == "agent_end"
}

/// The ids of the log entries among `frames`.
fn entry_ids(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f.event.as_deref() == Some("entry"))
        .map(|f| {
            let id = f.id.clone().unwrap();
            assert_eq!(
                f.json()["id"],
                id.as_str(),
                "an entry's SSE id is its event id"
            );
            id
        })
        .collect()
}

/// Every route answers, and each bad input gets its status and a JSON
/// error saying what to do.
#[test]
fn routes_answer_and_bad_input_is_refused() {
    let ws = Workspace::new();
    let serve = Serve::start(&ws, &["--provider", "echo"]);
    let addr = serve.addr.as_str();

    let health = http::request(addr, "GET", "/health", &[], b"");
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["ok"], true);

    // The token is required, whole.
    let none = http::request(addr, "GET", "/v1/sessions", &[], b"");
    assert_eq!(none.status, 401);
    assert_eq!(none.json()["error"]["code"], "unauthorized");
    let wrong = http::request(
        addr,
        "GET",
        "/v1/sessions",
        &[("Authorization", "Bearer nope")],
        b"",
    );
    assert_eq!(wrong.status, 401);
    let cookie = format!("etch_token={}", serve.token);
    let by_cookie = http::request(addr, "GET", "/v1/sessions", &[("Cookie", &cookie)], b"");
    assert_eq!(by_cookie.status, 200);
    // A page on another site may not drive it, even with the token.
    let auth = serve.auth();
    let foreign = http::request(
        addr,
        "GET",
        "/v1/sessions",
        &[("Authorization", &auth), ("Origin", "http://evil.example")],
        b"",
    );
    assert_eq!(foreign.status, 403);
    assert_eq!(foreign.json()["error"]["code"], "foreign_origin");
    let own = format!("http://{addr}");
    let same = http::request(
        addr,
        "GET",
        "/v1/sessions",
        &[("Authorization", &auth), ("Origin", &own)],
        b"",
    );
    assert_eq!(same.status, 200);

    // Create, prompt, read back.
    let id = serve.create();
    let mut events = serve.events(&id, None);
    let prompt = serve.prompt(&id, r#"{"message":"hello"}"#);
    assert_eq!(prompt.status, 202, "{}", prompt.body);
    let command = prompt.json()["commandId"].as_str().unwrap().to_owned();
    let frames = events.until(agent_end);
    assert!(
        frames
            .iter()
            .filter(|f| f.event.as_deref() == Some("live"))
            .all(|f| f.json()["id"] == command.as_str()),
        "the run's events carry the prompt's command id"
    );
    let messages = serve.call("GET", &format!("/v1/sessions/{id}/messages"), "");
    assert_eq!(messages.status, 200);
    assert_eq!(
        messages.json()["messages"][1]["content"][0]["text"],
        "hello"
    );
    let log = serve.call("GET", &format!("/v1/sessions/{id}/log"), "");
    assert_eq!(log.status, 200);
    let file = ws.only_session();
    assert_eq!(log.body, std::fs::read_to_string(&file).unwrap());
    let state = serve.command(&id, r#"{"id":"mine","type":"get_state"}"#);
    assert_eq!(state.status, 200);
    let state = state.json();
    assert_eq!(
        (state["id"].as_str(), state["success"].as_bool()),
        (Some("mine"), Some(true))
    );
    assert_eq!(state["data"]["sessionId"], id.as_str());
    let list = serve.call("GET", "/v1/sessions", "").json();
    assert_eq!(list["sessions"][0]["id"], id.as_str());
    assert_eq!(list["sessions"][0]["state"], "idle");
    assert_eq!(
        list["sessions"][0]["title"], "hello",
        "named by its first prompt"
    );

    // Bad input.
    let code = |reply: &HttpReply| reply.json()["error"]["code"].as_str().unwrap().to_owned();
    let cases: [(HttpReply, u16, &str); 8] = [
        (serve.call("GET", "/nowhere", ""), 404, "not_found"),
        (
            serve.call("DELETE", "/v1/sessions", ""),
            405,
            "method_not_allowed",
        ),
        (
            serve.call("POST", "/v1/sessions", "{not json"),
            400,
            "bad_json",
        ),
        (
            serve.call("POST", "/v1/sessions", r#"{"colour":"red"}"#),
            400,
            "bad_json",
        ),
        (
            serve.call("POST", "/v1/sessions", r#"{"cwd":"/"}"#),
            403,
            "cwd_outside_roots",
        ),
        (
            serve.call(
                "POST",
                "/v1/sessions/01NOSUCHSESSION/prompt",
                r#"{"message":"x"}"#,
            ),
            404,
            "unknown_session",
        ),
        (serve.prompt(&id, r#"{"text":"x"}"#), 400, "bad_json"),
        (serve.command(&id, r#"{"type":"fly"}"#), 400, "bad_json"),
    ];
    for (reply, status, want) in &cases {
        assert_eq!(
            (reply.status, code(reply).as_str()),
            (*status, *want),
            "{}",
            reply.body
        );
    }
    // A directory inside the root that is a project of its own keeps
    // its sessions elsewhere: refused, since they could not be found
    // again.
    std::fs::create_dir_all(ws.path().join("nested/.etch")).unwrap();
    let nested = format!(r#"{{"cwd":"{}"}}"#, ws.path().join("nested").display());
    let refused = serve.call("POST", "/v1/sessions", &nested);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(code(&refused), "sessions_elsewhere");
    let big = vec![b'x'; (32 << 20) + 1];
    let too_big = http::request(
        addr,
        "POST",
        "/v1/sessions",
        &[("Authorization", &auth)],
        &big,
    );
    assert_eq!(too_big.status, 413);
    assert_eq!(code(&too_big), "too_large");
}

/// A client that reconnects with `Last-Event-ID` gets every log entry
/// after it and then the live run, with no gap and no duplicate; while
/// the run is held open, a second prompt is refused with 409 and how to
/// queue it, and the list says the session runs.
#[test]
fn a_reconnect_resumes_after_the_last_event_without_gap_or_duplicate() {
    let ws = Workspace::new();
    let gate = ws.path().join("release");
    let server = FakeServer::start(vec![held(&gate), Reply::sse(chat_text("second"))]).unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&ws, &args);
    let id = serve.create();
    let mut first = serve.events(&id, Some("0"));
    let prompt = serve.prompt(&id, r#"{"message":"go"}"#);
    assert_eq!(prompt.status, 202, "{}", prompt.body);
    // Mid-run: the first delta is out, the rest held by the gate.
    let before =
        first.until(|f| f.event.as_deref() == Some("live") && f.json()["type"] == "message_update");
    let seen = entry_ids(&before);
    assert!(
        seen.len() >= 2,
        "session.started and the prompt: {before:?}"
    );
    drop(first);

    let busy = serve.prompt(&id, r#"{"message":"again"}"#);
    assert_eq!(busy.status, 409, "{}", busy.body);
    assert!(busy.body.contains("streamingBehavior"), "{}", busy.body);
    assert_eq!(
        serve.call("GET", "/v1/sessions", "").json()["sessions"][0]["state"],
        "running"
    );

    // Reconnect from the last entry seen, then let the run finish.
    let mut second = serve.events(&id, seen.last().map(String::as_str));
    std::fs::write(&gate, "").unwrap();
    let after = second.until(agent_end);
    let rest = entry_ids(&after);
    let file: Vec<String> = jsonl(&ws.only_session())
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    let mut both = seen.clone();
    both.extend(rest.iter().cloned());
    assert_eq!(both, file, "every entry once, in log order");

    // After the end: a reconnect from the last entry gets nothing old
    // (connected before the next prompt, whose run may end at once).
    let mut third = serve.events(&id, file.last().map(String::as_str));
    let prompt = serve.prompt(&id, r#"{"message":"more"}"#);
    assert_eq!(prompt.status, 202);
    let later = entry_ids(&third.until(agent_end));
    let file_now: Vec<String> = jsonl(&ws.only_session())
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(later, file_now[file.len()..], "only what came after");
    // An id the log does not have is refused with the way back.
    let auth = serve.auth();
    let unknown = Events::open(
        &serve.addr,
        &format!("/v1/sessions/{id}/events?after=01NOTANEVENT"),
        &[("Authorization", &auth)],
    );
    assert_eq!(unknown.status, 400);
}

/// SIGTERM stops the server: exit 0, and the log is whole.
#[test]
fn sigterm_exits_0_with_the_log_whole() {
    let ws = Workspace::new();
    let mut serve = Serve::start(&ws, &["--provider", "echo"]);
    let id = serve.create();
    let mut events = serve.events(&id, None);
    let prompt = serve.prompt(&id, r#"{"message":"hi"}"#);
    assert_eq!(prompt.status, 202);
    events.until(agent_end);
    let pid = serve.child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = serve.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    support::assert_whole(&ws.only_session());
}

/// Flags that make no sense for a server are refused before it starts,
/// and so is an address off this machine without --insecure-remote.
#[test]
fn bad_flags_are_refused() {
    let ws = Workspace::new();
    let cases: [(&[&str], &str); 5] = [
        (
            &["serve", "-p", "hi"],
            "etch serve does not take -p/--prompt",
        ),
        (&["serve", "--listen", "0.0.0.0:0"], "--insecure-remote"),
        (&["serve", "--listen", "nowhere"], "is not an address"),
        (
            &["chat", "--attach", "https://127.0.0.1:1/?token=x"],
            "it must start with http://",
        ),
        (
            &["chat", "--attach", "http://127.0.0.1:1/"],
            "ETCH_SERVE_TOKEN",
        ),
    ];
    for (args, says) in cases {
        let run = ws.run(args);
        assert_eq!(run.code(), 2, "{args:?}");
        assert!(run.stderr().contains(says), "{args:?}: {}", run.stderr());
    }
}

/// Beyond eight runs at once a prompt is answered 429 with
/// `Retry-After`; the eight held runs finish once released.
#[test]
fn a_ninth_concurrent_run_is_told_to_retry() {
    let ws = Workspace::new();
    let gate = ws.path().join("release");
    let server = FakeServer::start((0..8).map(|_| held(&gate)).collect()).unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&ws, &args);
    let ids: Vec<String> = (0..9).map(|_| serve.create()).collect();
    for id in &ids[..8] {
        let prompt = serve.prompt(id, r#"{"message":"go"}"#);
        assert_eq!(prompt.status, 202, "{}", prompt.body);
    }
    let running = || {
        serve.call("GET", "/v1/sessions", "").json()["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["state"] == "running")
            .count()
    };
    support::wait_until("eight runs active", || running() == 8);
    let ninth = serve.call(
        "POST",
        &format!("/v1/sessions/{}/prompt", ids[8]),
        r#"{"message":"go"}"#,
    );
    assert_eq!(ninth.status, 429, "{}", ninth.body);
    assert_eq!(ninth.header("retry-after"), Some("5"));
    assert_eq!(ninth.json()["error"]["code"], "overloaded");
    // Text that would start a run through the commands route is held to
    // the same limit.
    for kind in ["prompt", "steer", "follow_up"] {
        let sent = serve.command(&ids[8], &format!(r#"{{"type":"{kind}","message":"go"}}"#));
        assert_eq!(sent.status, 429, "{kind}: {}", sent.body);
    }
    std::fs::write(&gate, "").unwrap();
    support::wait_until("the held runs finished", || running() == 0);
}

/// The server-wide stream tells of every session's life; a session
/// nothing uses for `[serve] idle_unload_secs` is unloaded (and says so
/// there) and comes back, log intact, on the next request; while served,
/// `etch resume` on it says which server has it and exits 2.
#[test]
fn idle_sessions_unload_and_reload_and_resume_is_told_where_they_are() {
    let ws = Workspace::new();
    ws.user_config("[serve]\nidle_unload_secs = 1\n");
    let serve = Serve::start(&ws, &["--provider", "echo"]);
    let auth = serve.auth();
    let mut lifecycle = Events::open(&serve.addr, "/v1/events", &[("Authorization", &auth)]);
    assert_eq!(lifecycle.status, 200);
    let of_kind = |kind: &'static str| move |f: &Frame| f.json()["type"] == kind;

    let id = serve.create();
    let created = lifecycle.until(of_kind("session_created"));
    assert_eq!(created.last().unwrap().json()["sessionId"], id.as_str());
    assert_eq!(created.last().unwrap().event.as_deref(), Some("session"));

    // While it is served, another process is told where it is.
    let resume = ws.run(&["resume", &id, "-p", "hi", "--provider", "echo"]);
    assert_eq!(resume.code(), 2, "{}", resume.stderr());
    let pid = serve.child.id();
    assert!(
        resume.stderr().contains(&format!(
            "served by etch serve (pid {pid}, http://{})",
            serve.addr
        )),
        "{}",
        resume.stderr()
    );

    let mut events = serve.events(&id, None);
    let prompt = serve.prompt(&id, r#"{"message":"hello"}"#);
    assert_eq!(prompt.status, 202);
    events.until(agent_end);
    lifecycle.until(of_kind("run_started"));
    lifecycle.until(of_kind("run_ended"));
    let named = serve.call(
        "POST",
        &format!("/v1/sessions/{id}/name"),
        r#"{"name":"greeting"}"#,
    );
    assert_eq!(named.status, 200, "{}", named.body);
    // The first prompt names the session too ("hello"), and its frame
    // may come after the run's end: wait for the name given here.
    let frames =
        lifecycle.until(|f| f.json()["type"] == "session_named" && f.json()["name"] == "greeting");
    assert_eq!(frames.last().unwrap().json()["name"], "greeting");
    let row = serve.call("GET", "/v1/sessions", "").json()["sessions"][0].clone();
    assert_eq!(
        (
            row["title"].as_str(),
            row["served"].as_bool(),
            row["counts"]["clients"].as_u64()
        ),
        (Some("greeting"), Some(true), Some(1))
    );
    let before = std::fs::read_to_string(ws.only_session()).unwrap();

    // A watched session stays; once its last stream goes it unloads.
    drop(events);
    let closed = lifecycle.until(of_kind("session_closed"));
    let closed = closed.last().unwrap().json();
    assert_eq!(
        (closed["sessionId"].as_str(), closed["reason"].as_str()),
        (Some(id.as_str()), Some("idle"))
    );
    assert_eq!(
        serve.call("GET", "/v1/sessions", "").json()["sessions"][0]["served"],
        false
    );
    assert_eq!(std::fs::read_to_string(ws.only_session()).unwrap(), before);

    // The next request loads it again from its log.
    let messages = serve.call("GET", &format!("/v1/sessions/{id}/messages"), "");
    assert_eq!(messages.status, 200, "{}", messages.body);
    assert_eq!(
        messages.json()["messages"][1]["content"][0]["text"],
        "hello"
    );
    let loaded = lifecycle.until(of_kind("session_loaded"));
    assert_eq!(loaded.last().unwrap().json()["sessionId"], id.as_str());
    let mut events = serve.events(&id, None);
    let prompt = serve.prompt(&id, r#"{"message":"again"}"#);
    assert_eq!(prompt.status, 202, "{}", prompt.body);
    events.until(agent_end);
    support::assert_whole(&ws.only_session());
}

/// A second server over the same sessions shows one the first holds
/// read-only (messages, log, the replay of its events) and refuses to
/// run it, naming the holder.
#[test]
fn a_session_held_elsewhere_is_served_read_only() {
    let ws = Workspace::new();
    let first = Serve::start(&ws, &["--provider", "echo"]);
    let id = first.create();
    let mut events = first.events(&id, None);
    let prompt = first.prompt(&id, r#"{"message":"hello"}"#);
    assert_eq!(prompt.status, 202);
    events.until(agent_end);

    let second = Serve::start(&ws, &["--provider", "echo"]);
    let messages = second.call("GET", &format!("/v1/sessions/{id}/messages"), "");
    assert_eq!(messages.status, 200, "{}", messages.body);
    assert_eq!(
        messages.json()["messages"][1]["content"][0]["text"],
        "hello"
    );
    let log = second.call("GET", &format!("/v1/sessions/{id}/log"), "");
    assert_eq!(
        log.body,
        std::fs::read_to_string(ws.only_session()).unwrap()
    );
    let refused = second.prompt(&id, r#"{"message":"mine now"}"#);
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.json()["error"]["code"], "session_held");
    let holder = format!(
        "etch serve (pid {}, http://{})",
        first.child.id(),
        first.addr
    );
    assert!(refused.body.contains(&holder), "{}", refused.body);
    // Its events: the log's, then the stream ends (no live frames).
    let mut replay = second.events(&id, Some("0"));
    let frames = replay.rest();
    let file: Vec<String> = jsonl(&ws.only_session())
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(entry_ids(&frames), file);
}

/// Two clients on one session both see a run live; a prompt from the
/// second while the first's runs is queued by the one writer and runs
/// next, seen by both.
#[test]
fn two_clients_share_one_session() {
    let ws = Workspace::new();
    let gate = ws.path().join("release");
    let server =
        FakeServer::start(vec![held(&gate), Reply::sse(chat_text("second answer"))]).unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&ws, &args);
    let id = serve.create();
    let mut a = serve.events(&id, None);
    let mut b = serve.events(&id, None);
    let first = serve.prompt(&id, r#"{"message":"from a"}"#);
    assert_eq!(first.status, 202);
    let started =
        |f: &Frame| f.event.as_deref() == Some("live") && f.json()["type"] == "agent_start";
    a.until(started);
    b.until(started);
    let queued = serve.prompt(
        &id,
        r#"{"message":"from b","streamingBehavior":"followUp"}"#,
    );
    assert_eq!(queued.status, 202, "{}", queued.body);
    std::fs::write(&gate, "").unwrap();
    let text_of = |frames: &[Frame]| -> Vec<String> {
        frames
            .iter()
            .filter(|f| f.event.as_deref() == Some("entry"))
            .map(Frame::json)
            .filter(|e| e["type"] == "message.user")
            .map(|e| e["data"]["content"][0]["text"].as_str().unwrap().to_owned())
            .collect()
    };
    for client in [&mut a, &mut b] {
        let mut frames = client.until(agent_end);
        // The follow-up runs in the same run or the next one.
        if !text_of(&frames).contains(&"from b".to_owned()) {
            frames.extend(client.until(agent_end));
        }
        let texts = text_of(&frames);
        assert!(texts.contains(&"from b".to_owned()), "{texts:?}");
    }
    let users = prompts_in(&ws.only_session());
    assert_eq!(users, ["from a", "from b"]);
}

/// A server killed with SIGKILL mid-run leaves a log that `etch resume`
/// opens and continues: no lock left behind, no torn history.
#[test]
fn a_killed_server_leaves_a_log_resume_continues() {
    let ws = Workspace::new();
    let gate = ws.path().join("never");
    let server = FakeServer::start(vec![held(&gate), Reply::sse(chat_text("resumed"))]).unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut serve = Serve::start(&ws, &args);
    let id = serve.create();
    let mut events = serve.events(&id, None);
    let prompt = serve.prompt(&id, r#"{"message":"start"}"#);
    assert_eq!(prompt.status, 202);
    events.until(|f| f.event.as_deref() == Some("live") && f.json()["type"] == "message_update");
    serve.child.kill().unwrap();
    serve.child.wait().unwrap();

    let mut resume_args = vec!["resume", id.as_str(), "-p", "go on"];
    resume_args.extend_from_slice(&args);
    let run = ws.run(&resume_args);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(run.stdout().contains("resumed"), "{}", run.stdout());
    support::assert_whole(&ws.only_session());
    let users = prompts_in(&ws.only_session());
    assert_eq!(users, ["start", "go on"]);
}

/// A fork over HTTP moves the served handle to the new session, served
/// under its own id from then (the streams of the old one end, and the
/// old one opens again from its log); commands that would move a URL to
/// another session are refused.
#[test]
fn a_fork_is_served_under_its_own_id() {
    let ws = Workspace::new();
    let serve = Serve::start(&ws, &["--provider", "echo"]);
    let id = serve.create();
    let mut events = serve.events(&id, None);
    let prompt = serve.prompt(&id, r#"{"message":"first"}"#);
    assert_eq!(prompt.status, 202);
    events.until(agent_end);
    let points = serve.command(&id, r#"{"type":"get_fork_messages"}"#);
    let entry = points.json()["data"]["messages"][0]["entryId"]
        .as_str()
        .unwrap()
        .to_owned();
    let fork = serve.call(
        "POST",
        &format!("/v1/sessions/{id}/commands"),
        &format!(r#"{{"type":"fork","entryId":"{entry}"}}"#),
    );
    assert_eq!(fork.status, 200, "{}", fork.body);
    let forked = fork.json()["data"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(forked, id);
    // The old session's stream ends at its next frame or the move.
    let state = serve.command(&forked, r#"{"type":"get_state"}"#);
    assert_eq!(state.json()["data"]["sessionId"], forked.as_str());
    let old = serve.command(&id, r#"{"type":"get_state"}"#);
    assert_eq!(old.status, 200, "{}", old.body);
    assert_eq!(old.json()["data"]["sessionId"], id.as_str());
    drop(events);

    let refused = serve.command(&id, r#"{"type":"new_session"}"#);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.json()["error"]["code"], "not_served_here");
}

/// `/openapi.json` describes the routes the server has: each documented
/// operation, called, answers one of its documented statuses, and a JSON
/// answer has the required fields of its schema and no others.
#[test]
fn the_openapi_description_matches_the_routes() {
    let ws = Workspace::new();
    let serve = Serve::start(&ws, &["--provider", "echo"]);
    let doc = serve.call("GET", "/openapi.json", "");
    assert_eq!(doc.status, 200);
    let doc = doc.json();
    assert_eq!(doc["openapi"], "3.1.0");
    let id = serve.create();
    let components = doc["components"]["schemas"].clone();
    let resolve = |schema: &Value| -> Value {
        match schema["$ref"].as_str() {
            Some(target) => components[target.trim_start_matches("#/components/schemas/")].clone(),
            None => schema.clone(),
        }
    };
    let mut called = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let method = method.to_ascii_uppercase();
            let url = path.replace("{id}", &id);
            let body = match operation["operationId"].as_str().unwrap() {
                "Create" => "{}",
                "Prompt" => r#"{"message":"hi"}"#,
                "Commands" => r#"{"type":"get_state"}"#,
                "Name" => r#"{"name":"described"}"#,
                _ => "",
            };
            let event_stream =
                operation["responses"]["200"]["content"]["text/event-stream"].is_object();
            let status = if event_stream {
                let auth = serve.auth();
                Events::open(&serve.addr, &url, &[("Authorization", &auth)]).status
            } else {
                let reply = serve.call(&method, &url, body);
                let documented = &operation["responses"][reply.status.to_string()];
                let schema = &documented["content"]["application/json"]["schema"];
                if schema.is_object() {
                    let schema = resolve(schema);
                    let value = reply.json();
                    let object = value.as_object().unwrap();
                    for required in schema["required"].as_array().into_iter().flatten() {
                        assert!(
                            object.contains_key(required.as_str().unwrap()),
                            "{method} {path}: {required} missing from {value}"
                        );
                    }
                    if let Some(properties) = schema["properties"].as_object() {
                        for key in object.keys() {
                            assert!(
                                properties.contains_key(key),
                                "{method} {path}: {key} is not described"
                            );
                        }
                    }
                }
                reply.status
            };
            assert!(
                operation["responses"][status.to_string()].is_object(),
                "{method} {path} answered {status}, which is not described"
            );
            called += 1;
        }
    }
    assert_eq!(called, 11);
}

/// The web page in a real headless browser: opened once with the token
/// (kept in an HttpOnly cookie, gone from the address), it creates a
/// session, sends a prompt and shows the streamed answer sanitized as
/// the chat does; when the server is killed and started again it
/// reconnects from the last event it had and shows nothing twice.
#[test]
fn the_page_streams_a_session_and_resumes_after_a_restart() {
    let ws = Workspace::new();
    let token_file = ws.path().join("serve-token");
    ws.user_config(&format!(
        "[serve]\ntoken_file = \"{}\"\n",
        token_file.display()
    ));
    let server = FakeServer::start(vec![
        Reply::sse(chat_text_chunks(
            "Hello \u{1b}[31mfrom\u{1b}[0m the \u{202e}model",
            4,
        )),
        Reply::sse(chat_text("second answer")),
    ])
    .unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&ws, &args);
    let addr = serve.addr.clone();
    let browser = Browser::start();
    browser.go(&format!("http://{addr}/?token={}", serve.token));
    browser.wait(
        "the page without the token in its address",
        &format!("return location.href === 'http://{addr}/'"),
    );
    assert_eq!(browser.text("return document.cookie"), "", "HttpOnly");

    new_session_and_send(&browser, "hi from the page");
    browser.wait(
        "the streamed answer",
        "return document.querySelectorAll('#log .assistant:not(.streaming)').length === 1",
    );
    let log = browser.text("return document.getElementById('log').textContent");
    assert!(log.contains("Hello from the model"), "{log}");
    assert!(
        !log.contains('\u{1b}') && !log.contains('\u{202e}'),
        "sanitized as the chat does: {log:?}"
    );
    browser.wait(
        "the session listed",
        "return document.querySelectorAll('#sessions li').length === 1",
    );

    // Kill the server; the page notices, and finds the new one.
    drop(serve);
    browser.wait(
        "the page notices the server is gone",
        "return document.getElementById('status').textContent !== 'connected'",
    );
    let again = Serve::start_at(&ws, &addr, &args);
    assert_eq!(
        again.token,
        std::fs::read_to_string(&token_file).unwrap().trim()
    );
    browser.wait(
        "the page reconnected",
        "return document.getElementById('status').textContent === 'connected'",
    );
    browser.eval(
        "document.getElementById('message').value = 'and again'; \
         document.getElementById('send').click()",
    );
    browser.wait(
        "the second answer",
        "return document.getElementById('log').textContent.includes('second answer')",
    );
    let count = |selector: &str| {
        browser
            .eval(&format!(
                "return document.querySelectorAll('{selector}').length"
            ))
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        (
            count("#log .user"),
            count("#log .assistant"),
            count("#log .note")
        ),
        (2, 2, 1),
        "every entry once: {}",
        browser.text("return document.getElementById('log').innerText")
    );
    // The server resumed after the page's last event: nothing was sent
    // twice for the page to drop.
    assert_eq!(browser.eval("return view.repeated"), 0);
}

/// Reconnecting with `Last-Event-ID` at each point of a run (after the
/// prompt before the model's first delta, while a tool runs) gets every
/// entry after it and nothing twice: the pieces join into the log.
#[test]
fn a_reconnect_at_each_point_of_a_run_joins_into_the_log() {
    let ws = Workspace::new();
    let model_gate = ws.path().join("model-go");
    let tool_gate = ws.path().join("tool-go");
    let wait = format!(
        "while [ ! -f {} ]; do sleep 0.02; done; echo tool-done",
        tool_gate.display()
    );
    let arguments = serde_json::json!({ "command": wait }).to_string();
    let server = FakeServer::start(vec![
        Reply::Gated {
            events: Vec::new(),
            gate: model_gate.clone(),
            rest: etch_test_support::chat_tool_call("call_1", "bash", &arguments),
        },
        Reply::sse(chat_text("all done")),
    ])
    .unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&ws, &args);
    let id = serve.create();
    let is_live = |kind: &'static str| {
        move |f: &Frame| f.event.as_deref() == Some("live") && f.json()["type"] == kind
    };

    let mut first = serve.events(&id, Some("0"));
    let prompt = serve.prompt(&id, r#"{"message":"run it"}"#);
    assert_eq!(prompt.status, 202, "{}", prompt.body);
    // Before the first delta: the prompt is logged, the model holds.
    let mut ids = entry_ids(
        &first.until(|f| f.event.as_deref() == Some("entry") && f.json()["type"] == "message.user"),
    );
    drop(first);

    let mut second = serve.events(&id, ids.last().map(String::as_str));
    std::fs::write(&model_gate, "").unwrap();
    // Mid-tool: the call is logged and running, held by its gate.
    ids.extend(entry_ids(&second.until(is_live("tool_execution_start"))));
    drop(second);

    let mut third = serve.events(&id, ids.last().map(String::as_str));
    std::fs::write(&tool_gate, "").unwrap();
    ids.extend(entry_ids(&third.until(agent_end)));

    let file: Vec<String> = jsonl(&ws.only_session())
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, file, "every entry once, in log order");
    let log = std::fs::read_to_string(ws.only_session()).unwrap();
    assert!(
        log.contains("tool-done") && log.contains("all done"),
        "{log}"
    );
}

/// A client that stops reading slows neither the run nor the client
/// that reads, and does not keep the server from stopping: SIGTERM
/// still exits 0 with the log whole.
#[test]
fn a_stalled_client_slows_nothing_and_does_not_block_the_stop() {
    let ws = Workspace::new();
    let big = "x".repeat(8 << 20);
    let server = FakeServer::start(vec![Reply::sse(chat_text_chunks(&big, 32 << 10))]).unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut serve = Serve::start(&ws, &args);
    let id = serve.create();

    // Subscribed, with a 4 KiB receive window, and never read.
    let stalled = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    stalled.set_recv_buffer_size(4096).unwrap();
    let addr: std::net::SocketAddr = serve.addr.parse().unwrap();
    stalled.connect(&addr.into()).unwrap();
    let mut stalled = std::net::TcpStream::from(stalled);
    let request = format!(
        "GET /v1/sessions/{id}/events HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\r\n",
        serve.addr,
        serve.auth()
    );
    std::io::Write::write_all(&mut stalled, request.as_bytes()).unwrap();
    support::wait_until("the stalled client subscribed", || {
        serve.call("GET", "/v1/sessions", "").json()["sessions"][0]["counts"]["clients"] == 1
    });

    let mut reading = serve.events(&id, None);
    let prompt = serve.prompt(&id, r#"{"message":"big"}"#);
    assert_eq!(prompt.status, 202);
    let frames = reading.until(agent_end);
    assert!(frames.len() > 256, "every delta reached the reader");

    let pid = serve.child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let child = std::cell::RefCell::new(&mut serve.child);
    support::wait_until("the server stopped", || {
        child.borrow_mut().try_wait().unwrap().is_some()
    });
    assert_eq!(serve.child.wait().unwrap().code(), Some(0));
    support::assert_whole(&ws.only_session());
    drop(stalled);
}

/// Two chats attached to one served session (`etch chat --attach`) both
/// see a run live; a prompt typed in the second while the first's run is
/// held is queued by the server, the one writer, and both see its
/// answer. /new is refused: an attached chat stays on its session.
#[test]
fn two_attached_chats_share_one_session() {
    let ws = Workspace::new();
    let gate = ws.path().join("release");
    let server =
        FakeServer::start(vec![held(&gate), Reply::sse(chat_text("queued answer"))]).unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&ws, &args);
    let id = serve.create();
    let url = format!("http://{}/?token={}#{id}", serve.addr, serve.token);
    let chat = || {
        let tmux = support::tmux::Tmux::start(&ws, &["chat", "--attach", &url], &[], 100, 30);
        tmux.wait_for("/help for commands");
        tmux
    };
    let a = chat();
    let b = chat();
    a.wait_for(&format!("attached to session {id}"));

    a.line("first from a");
    a.wait_for("held");
    b.wait_for("held");
    b.line("second from b");
    support::wait_until("the second prompt queued at the server", || {
        let state = serve.command(&id, r#"{"type":"get_state"}"#);
        state.json()["data"]["pendingMessageCount"] == 1
    });
    std::fs::write(&gate, "").unwrap();
    for chat in [&a, &b] {
        chat.wait_for("held answer");
        chat.wait_for("queued answer");
    }
    let users = prompts_in(&ws.only_session());
    assert_eq!(users, ["first from a", "second from b"]);

    b.line("/new");
    b.wait_for("/new is for a chat of its own");
}

/// Sessions created with the server's run options share one context per
/// directory: a configured plugin starts once, not once per session,
/// and serves every session's calls.
#[test]
fn sessions_share_one_start_of_each_plugin() {
    let ws = Workspace::new();
    let starts = ws.path().join("starts");
    let plugin = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/plugin.py");
    ws.user_config(&format!(
        "[[plugins]]\nname = \"counted\"\ncommand = \"echo started >> {}; exec python3 {plugin} ok counted\"\n",
        starts.display()
    ));
    let replies = (0..3)
        .flat_map(|i| {
            [
                Reply::sse(etch_test_support::chat_tool_call(
                    &format!("call_{i}"),
                    "counted_echo",
                    &format!(r#"{{"text":"hello {i}"}}"#),
                )),
                Reply::sse(chat_text("done")),
            ]
        })
        .collect();
    let server = FakeServer::start(replies).unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&ws, &args);
    for _ in 0..3 {
        let id = serve.create();
        let mut events = serve.events(&id, None);
        let prompt = serve.prompt(&id, r#"{"message":"use the plugin"}"#);
        assert_eq!(prompt.status, 202, "{}", prompt.body);
        events.until(agent_end);
    }
    let results: Vec<Value> = ws
        .session_files()
        .iter()
        .flat_map(|file| jsonl(file))
        .filter(|e| e["type"] == "message.tool")
        .collect();
    assert_eq!(results.len(), 3);
    for result in &results {
        assert_eq!(result["data"]["isError"], false, "{result}");
    }
    let started = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(started.lines().count(), 1, "one start for three sessions");
}

/// Over HTTP: a call the policy asks about waits; its
/// `approval_request` comes on the event stream, `get_state` lists it
/// for a client that came later, and an `approve` command posted to the
/// session answers it.
#[test]
fn approvals_are_answered_over_http() {
    let ws = Workspace::new();
    ws.user_config("[approval]\npolicy = \"always\"\n");
    let call = serde_json::json!({"command": "echo 1 > one.txt"}).to_string();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "bash", &call)])),
        Reply::sse(chat_text("made it")),
    ])
    .unwrap();
    let args = support::model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&ws, &args);
    let id = serve.create();
    let mut events = serve.events(&id, None);
    assert_eq!(serve.prompt(&id, r#"{"message":"go"}"#).status, 202);
    let asked = events
        .until(|f| f.event.as_deref() == Some("live") && f.json()["type"] == "approval_request");
    let asked = asked.last().unwrap().json();
    assert_eq!(asked["toolCallId"], "c1");
    assert_eq!(asked["args"]["command"], "echo 1 > one.txt");
    let state = serve
        .command(&id, r#"{"id":"s","type":"get_state"}"#)
        .json();
    assert_eq!(state["data"]["approvals"][0]["toolCallId"], "c1", "{state}");
    assert!(!ws.path().join("one.txt").exists());
    let answer = serve.command(
        &id,
        r#"{"id":"a","type":"approve","toolCallId":"c1","decision":"allow"}"#,
    );
    assert_eq!(answer.json()["success"], true, "{}", answer.body);
    events.until(agent_end);
    assert!(ws.path().join("one.txt").exists());
    let state = serve
        .command(&id, r#"{"id":"s2","type":"get_state"}"#)
        .json();
    assert_eq!(state["data"]["approvals"], serde_json::json!([]));
}

/// The page shows a call that asks (what it runs, why) with its answers;
/// Deny with a typed reason sends it, the box goes, the call does not
/// run, and the decision shows from the log.
#[test]
fn the_page_answers_approvals() {
    let ws = Workspace::new();
    ws.user_config("[approval]\npolicy = \"always\"\n");
    let call = serde_json::json!({"command": "echo 1 > one.txt"}).to_string();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "bash", &call)])),
        Reply::sse(chat_text("told no")),
    ])
    .unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&ws, &args);
    let browser = Browser::start();
    browser.go(&format!("http://{}/?token={}", serve.addr, serve.token));
    new_session_and_send(&browser, "make it");
    browser.wait(
        "the question",
        "return document.querySelectorAll('#log .approval').length === 1",
    );
    let asked = browser.text("return document.querySelector('#log .approval').textContent");
    assert!(
        asked.contains("bash asks for approval: the approval policy is always")
            && asked.contains("echo 1 > one.txt"),
        "{asked}"
    );
    browser.eval(
        "document.querySelector('#log .approval .reason').value = 'not now'; \
         document.querySelector('#log .approval button[data-decision=deny]').click()",
    );
    browser.wait(
        "the answer",
        "return document.getElementById('log').textContent.includes('told no')",
    );
    assert_eq!(
        browser.eval("return document.querySelectorAll('#log .approval').length"),
        0
    );
    assert!(!ws.path().join("one.txt").exists());
    browser.wait(
        "the decision from the log",
        "return document.getElementById('log').textContent.includes('approval: bash denied by user: not now')",
    );
    let sent = String::from_utf8(server.requests()[1].body.clone()).unwrap();
    assert!(sent.contains("Their reason: not now"), "{sent}");
}

/// The prompt route takes images as RPC does; one that is no image is
/// refused naming it, before any request.
#[test]
fn prompts_over_http_take_images() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text("an image"))]).unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&ws, &args);
    let id = serve.create();
    let bad = serve.prompt(
        &id,
        &json!({"message": "x", "images": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]})
            .to_string(),
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.body.contains("image #1: it is not a PNG"),
        "{}",
        bad.body
    );
    let bytes = etch_image::sample(10, 10, etch_model::MediaType::Webp).unwrap();
    let image = etch_model::Image::new(bytes, etch_model::MediaType::Webp, 10, 10);
    let mut events = serve.events(&id, Some("0"));
    let ok = serve.prompt(
        &id,
        &json!({"message": "what?", "images": [{"type": "image", "data": image.base64().unwrap(), "mimeType": "image/webp"}]})
            .to_string(),
    );
    assert_eq!(ok.status, 202, "{}", ok.body);
    events.until(agent_end);
    let request = server.requests()[0].json();
    let user = request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        user["content"].as_array().unwrap().last().unwrap()["image_url"]["url"],
        image.data_url().unwrap()
    );
}
