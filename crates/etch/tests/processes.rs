//! Background processes (issue 33) through the real binary against the
//! fake model server: `bash` with `background: true` returns an id at
//! once; new output reaches the next request's context with no tool
//! call; `process` reads with a wait, writes to stdin and kills a whole
//! group that ignores SIGTERM; the limit of running processes holds;
//! etch killed with SIGKILL leaves no process behind; a resumed session
//! lists the processes of its last life as lost; the chat shows them and
//! `/ps` stops one.
//!
//! Ordering uses files as barriers: a process waits for a file a later
//! call creates, and a call waits until the process's output file shows
//! what it printed.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use etch_test_support::{FakeServer, Reply, chat_text, chat_tool_calls};
use serde_json::{Value, json};
use support::rpc::RpcClient;
use support::tmux::Tmux;
use support::{Workspace, jsonl, model_args};

/// A bash call's arguments; in the background when `background`.
fn bash(command: &str, background: bool) -> String {
    if background {
        json!({ "command": command, "background": true }).to_string()
    } else {
        json!({ "command": command }).to_string()
    }
}

/// A `process` call's arguments.
fn process(args: &Value) -> String {
    args.to_string()
}

/// The user texts of recorded request `n`.
fn user_texts(server: &FakeServer, n: usize) -> Vec<String> {
    server.requests()[n].json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The process ids whose process group is `group`, from /proc.
fn group_members(group: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...: comm may hold spaces.
        let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            continue;
        }
        if fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(group) {
            members.push(pid);
        }
    }
    members
}

/// Waits until no process is left in `group`.
fn group_gone(group: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if group_members(group).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A model that starts `command` in the background (call `c1`), then
/// answers `answer`.
fn starts(command: &str, answer: &str) -> FakeServer {
    FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "bash", &bash(command, true))])),
        Reply::sse(chat_text(answer)),
    ])
    .unwrap()
}

/// `etch rpc` in `ws` against `server`, with `extra` arguments.
fn rpc_against(ws: &Workspace, server: &FakeServer, extra: &[&str]) -> RpcClient {
    let mut args = model_args(server);
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    RpcClient::start(ws, &args, &[])
}

/// The pid in `started process p1 (pid N): ...`.
fn started_pid(text: &str) -> u32 {
    text.split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {text:?}"))
}

/// A process started in the background: its id comes back at once; what
/// it prints later reaches the next request with no tool call reading
/// it; `output` with `wait_ms` returns once there is output; the run's
/// end stops it and every step is in the log.
#[test]
fn output_reaches_the_model_by_itself() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[(
            "c1",
            "bash",
            &bash(
                "echo first; while [ ! -f gate ]; do sleep 0.02; done; echo second; sleep 300",
                true,
            ),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "c2",
            "process",
            // From offset 0: a push before this request may have given
            // the model "first" already.
            &process(&json!({"action": "output", "id": "p1", "wait_ms": 20000, "offset": 0})),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "c3",
            "bash",
            &bash(
                "touch gate; until grep -q second .etch/tmp/*/process-p1.log 2>/dev/null; do sleep 0.02; done; echo seen",
                false,
            ),
        )])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "serve it"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    let started = ws.result_text("c1");
    assert!(
        started.starts_with("started process p1 (pid ") && started.contains("use the process tool"),
        "{started}"
    );
    assert_eq!(ws.result_text("c2"), "first\n[p1 running; next offset 6]");
    assert_eq!(ws.result_text("c3"), "seen\n");
    let pushed = user_texts(&server, 3);
    assert_eq!(
        pushed.last().unwrap(),
        "<process-update id=\"p1\" state=\"running\">\nsecond\n</process-update>",
        "{pushed:?}"
    );
    assert!(group_gone(started_pid(&started)));
    let log = jsonl(&ws.only_session());
    let kinds: Vec<&str> = log
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|k| k.starts_with("process."))
        .collect();
    // One update or two ("first" may have been pushed before c2).
    assert_eq!(kinds.first(), Some(&"process.started"));
    assert_eq!(kinds.last(), Some(&"process.exited"));
    assert!(kinds.contains(&"process.update"), "{kinds:?}");
    let exited = log.iter().find(|e| e["type"] == "process.exited").unwrap();
    assert_eq!(exited["data"]["state"], "killed", "{exited}");
    let shown = ws.run(&["show"]).ok();
    assert!(shown.contains("(process p1 started, pid "), "{shown}");
    assert!(shown.contains("[process update]"), "{shown}");
}

/// `write` reaches stdin; `kill` of a process that ignores SIGTERM and
/// has a child that ignores it too ends them both (SIGKILL after the
/// grace); more than `[process] max_running` is refused.
#[test]
fn write_kill_the_group_and_the_limit() {
    let ws = Workspace::new();
    ws.user_config("[process]\nmax_running = 2\n");
    let stubborn = "trap '' TERM; sh -c \"trap '' TERM; sleep 300\" & echo child $!; read line; echo got $line; sleep 300";
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c1", "bash", &bash(stubborn, true))])),
        Reply::sse(chat_tool_calls(&[
            ("c2", "bash", &bash("sleep 300", true)),
            ("c3", "bash", &bash("sleep 300", true)),
        ])),
        // From offset 0: a push before this request may have given the
        // model the output already.
        Reply::sse(chat_tool_calls(&[(
            "c4",
            "process",
            &process(&json!({"action": "output", "id": "p1", "wait_ms": 20000, "offset": 0})),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "c5",
            "process",
            &process(&json!({"action": "write", "id": "p1", "text": "hello\n"})),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "c6",
            "bash",
            &bash(
                "until grep -q 'got hello' .etch/tmp/*/process-p1.log 2>/dev/null; do sleep 0.02; done",
                false,
            ),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "c6o",
            "process",
            &process(&json!({"action": "output", "id": "p1", "offset": 0})),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "c7",
            "process",
            &process(&json!({"action": "kill", "id": "p1"})),
        )])),
        Reply::sse(chat_tool_calls(&[(
            "c8",
            "process",
            &process(&json!({"action": "list"})),
        )])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "go"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    let group = started_pid(&ws.result_text("c1"));
    assert!(ws.result_text("c2").starts_with("started process p2"));
    let refused = ws.result_text("c3");
    assert!(
        refused.contains("2 background processes run already") && refused.contains("kill"),
        "{refused}"
    );
    let child: u32 = ws
        .result_text("c4")
        .lines()
        .find_map(|l| l.strip_prefix("child "))
        .and_then(|pid| pid.trim().parse().ok())
        .unwrap();
    assert_eq!(ws.result_text("c5"), "wrote 6 bytes to p1");
    assert!(
        ws.result_text("c6o").contains("got hello\n"),
        "{}",
        ws.result_text("c6o")
    );
    assert_eq!(ws.result_text("c7"), "p1 killed (SIGKILL)");
    let list = ws.result_text("c8");
    assert!(
        list.contains("p1  killed (SIGKILL)") && list.contains("p2  running"),
        "{list}"
    );
    assert!(group_gone(group), "the group of p1 is left");
    assert!(!alive(child), "the child that ignored SIGTERM is alive");
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// With the default `[process] max_running` (16), the 17th start is
/// refused with what to do, and the 16 run.
#[test]
fn the_seventeenth_process_is_refused() {
    let ws = Workspace::new();
    let calls: Vec<(String, String)> = (1..=17)
        .map(|i| (format!("c{i}"), bash("sleep 300", true)))
        .collect();
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "bash", args.as_str()))
        .collect();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&calls)),
        Reply::sse(chat_tool_calls(&[(
            "l",
            "process",
            &process(&json!({"action": "list"})),
        )])),
        Reply::sse(chat_text("done")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "many"], &[]);
    assert_eq!(out.ok(), "done\n", "{}", out.stderr());
    assert!(ws.result_text("c16").starts_with("started process p16 "));
    assert!(
        ws.result_text("c17").contains(
            "16 background processes run already, the most a session may have ([process] max_running)"
        ),
        "{}",
        ws.result_text("c17")
    );
    assert_eq!(
        ws.result_text("l")
            .lines()
            .filter(|l| l.contains("  running  "))
            .count(),
        16
    );
    let groups: Vec<u32> = (1..=16)
        .map(|i| started_pid(&ws.result_text(&format!("c{i}"))))
        .collect();
    for group in groups {
        assert!(group_gone(group), "{group} outlived the run");
    }
}

/// etch killed with SIGKILL takes its background processes along (the
/// guard's parent-death signal); the session resumed lists them as lost.
#[test]
fn etch_killed_leaves_nothing_and_resume_says_lost() {
    let ws = Workspace::new();
    let server = starts("sh -c 'sleep 300' & sleep 300", "started");
    let mut rpc = rpc_against(&ws, &server, &[]);
    rpc.send(&json!({"id": "p", "type": "prompt", "message": "start it"}));
    let started = rpc.event("process_started");
    assert_eq!(started["processId"], "p1");
    let group = u32::try_from(started["pid"].as_u64().unwrap()).unwrap();
    rpc.event("agent_end");
    let listed = rpc.call(&json!({"id": "l", "type": "list_processes"}));
    assert_eq!(
        listed["data"]["processes"][0]["state"], "running",
        "{listed}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while group_members(group).len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(group_members(group).len() >= 2, "guard, shell and sleeps");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(rpc.pid()).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = rpc.wait_exit();
    assert!(
        group_gone(group),
        "processes outlived etch: {:?}",
        group_members(group)
    );

    let id = ws.only_session();
    let id = id.file_stem().unwrap().to_string_lossy().into_owned();
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_calls(&[("c9", "bash", &bash("sleep 300", true))])),
        Reply::sse(chat_text("again")),
    ])
    .unwrap();
    let mut again = rpc_against(&ws, &server, &["--session", &id[..12]]);
    let listed = again.call(&json!({"id": "l", "type": "list_processes"}));
    let first = &listed["data"]["processes"][0];
    assert_eq!(
        (first["processId"].as_str(), first["state"].as_str()),
        (Some("p1"), Some("lost")),
        "{listed}"
    );
    // Ids stay unique in the session: the next one is p2.
    again.send(&json!({"id": "p", "type": "prompt", "message": "once more"}));
    let started = again.event("process_started");
    assert_eq!(started["processId"], "p2");
    again.event("agent_end");
    let (status, stderr, _) = again.finish();
    assert!(status.success(), "{stderr}");
    let group = u32::try_from(started["pid"].as_u64().unwrap()).unwrap();
    assert!(group_gone(group), "stdin closed: its processes end");
}

/// The chat shows a row per background process, and `/ps` stops one:
/// the row goes and a notice says how it ended.
#[test]
fn the_chat_lists_and_stops_processes() {
    let ws = Workspace::new();
    let server = starts("echo serving; sleep 300", "it runs");
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let tmux = Tmux::start(&ws, &args, &[], 100, 30);
    tmux.wait_for("/help for commands");
    tmux.line("start the server");
    tmux.wait_for("it runs");
    tmux.wait_screen("⚙ p1 · ");
    tmux.line("/ps");
    tmux.wait_screen("stop which background process?");
    tmux.keys(&["Enter"]);
    tmux.wait_for("background process p1 was killed (SIGTERM)");
    let screen = tmux.wait_screen("/help for commands");
    assert!(!screen.contains("⚙ p1"), "{screen}");
}

/// Over RPC, moving to a new session stops the old one's processes and
/// logs their ends in the old log.
#[test]
fn a_new_session_ends_the_old_ones_processes() {
    let ws = Workspace::new();
    let server = starts("sleep 300", "started");
    let mut rpc = rpc_against(&ws, &server, &[]);
    rpc.send(&json!({"id": "p", "type": "prompt", "message": "start it"}));
    let started = rpc.event("process_started");
    let group = u32::try_from(started["pid"].as_u64().unwrap()).unwrap();
    rpc.event("agent_end");
    let old = ws.only_session();
    let answer = rpc.call(&json!({"id": "n", "type": "new_session"}));
    assert_eq!(answer["success"], true, "{answer}");
    assert!(group_gone(group));
    let ended = jsonl(&old)
        .into_iter()
        .find(|e| e["type"] == "process.exited")
        .unwrap();
    assert_eq!(ended["data"]["processId"], "p1");
    assert_eq!(ended["data"]["state"], "killed");
    let listed = rpc.call(&json!({"id": "l", "type": "list_processes"}));
    assert_eq!(listed["data"]["processes"], json!([]), "{listed}");
    let (status, stderr, _) = rpc.finish();
    assert!(status.success(), "{stderr}");
}
