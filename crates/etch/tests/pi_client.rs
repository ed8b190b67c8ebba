//! Pi's own RPC client (npm's `@mariozechner/pi-coding-agent`, pinned in
//! tests/pi-client) drives `etch rpc` through a shim that stands where
//! it expects Pi's CLI (issue 35): a Pi user's script keeps working
//! against etch. Every call the script makes resolves, with the shapes
//! Pi's types declare.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::time::Duration;

use etch_test_support::{End, FakeServer, Reply, chat_text};
use serde_json::Value;
use support::{Workspace, model_args};

/// Runs client.mjs against etch in `ws`, talking to `server`; what it saw.
fn drive(ws: &Workspace, server: &FakeServer) -> Value {
    drive_script(ws, server, "client.mjs", &[])
}

/// Runs `script` (with `before` ahead of etch's arguments) against etch
/// in `ws`, talking to `server`; what it saw.
fn drive_script(ws: &Workspace, server: &FakeServer, script: &str, before: &[&str]) -> Value {
    let template = ws.command(&[]);
    let mut cmd = std::process::Command::new("node");
    // The client adds --provider openai --model m1; the rest points etch
    // at the fake server.
    let args: Vec<String> = model_args(server)
        .into_iter()
        .skip_while(|a| a != "--base-url")
        .take(4)
        .collect();
    cmd.arg(support::pi_client_dir().join(script))
        .arg(ws.path())
        .args(before)
        .args(&args)
        .current_dir(ws.path());
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.env("ETCH", template.get_program());
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the client failed: {stdout}\n{stderr}"
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}): {stdout}\n{stderr}"))
}

/// A session driven by Pi's client: a prompt streamed to the end, the
/// queries, the settings, bash, export, clone and a new session.
#[test]
fn pis_own_client_drives_etch_rpc() {
    let ws = Workspace::new();
    let models = serde_json::json!({"data": [{"id": "m1"}, {"id": "m2"}]});
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("one, two, three")),
        Reply::json(200, &models),
        Reply::json(200, &models),
        // A run that stays open until the client aborts it.
        Reply::Sse {
            events: chat_text("partial")[..1].to_vec(),
            gap: Duration::ZERO,
            end: End::Stall(Duration::from_secs(60)),
        },
        Reply::sse(chat_text("steer answer")),
        Reply::sse(chat_text("follow answer")),
        Reply::sse(chat_text("## Goal\nCount.")),
    ])
    .unwrap();
    let seen = drive(&ws, &server);
    assert!(seen.get("fatal").is_none(), "{seen:#}");
    assert_eq!(seen["errors"], serde_json::json!({}), "{seen:#}");
    let calls = &seen["calls"];
    assert!(calls["promptAndWait"].as_u64().unwrap() > 3, "{seen:#}");
    let events: Vec<&str> = seen["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        events.contains(&"agent_start") && events.contains(&"agent_end"),
        "{events:?}"
    );
    let state = &calls["getState"];
    assert_eq!(state["model"]["id"], "m1", "{state}");
    assert_eq!(state["model"]["provider"], "openai", "{state}");
    assert_eq!(state["isStreaming"], false);
    assert_eq!(state["messageCount"], 2);
    assert_eq!(calls["getMessages"].as_array().unwrap().len(), 2);
    assert_eq!(calls["getLastAssistantText"], "one, two, three");
    assert_eq!(calls["getForkMessages"][0]["text"], "count to three");
    assert_eq!(calls["cycleThinkingLevel"]["level"], "xhigh");
    assert_eq!(
        calls["bash"]["output"].as_str().unwrap().trim(),
        "from-bash"
    );
    assert_eq!(calls["bash"]["exitCode"], 0);
    assert_eq!(calls["bash"]["cancelled"], false);
    let counters = &calls["getSessionStats"];
    // The prompt, and the bash output that joined the context.
    assert_eq!(counters["userMessages"], 2, "{counters}");
    assert_eq!(counters["assistantMessages"], 1, "{counters}");
    assert!(counters["tokens"]["total"].is_number(), "{counters}");
    assert!(
        calls["exportHtml"]["path"]
            .as_str()
            .unwrap()
            .ends_with("pi.html")
    );
    assert_eq!(calls["clone"]["cancelled"], false);
    assert_eq!(calls["newSession"]["cancelled"], false);
    let ids: Vec<&str> = calls["getAvailableModels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m1", "m2"]);
    assert_eq!(calls["setModel"]["id"], "m2");
    assert_eq!(calls["cycleModel"]["model"]["id"], "m1");
    assert_eq!(calls["abort"], true);
    assert_eq!(calls["steer"], "steer answer");
    assert_eq!(calls["followUp"], "follow answer");
    assert_eq!(calls["fork"]["cancelled"], false);
    assert_eq!(calls["switchSession"]["cancelled"], false);
    assert!(
        calls["compact"]["summary"].is_string(),
        "{}",
        calls["compact"]
    );
    assert!(
        calls["compact"]["tokensBefore"].is_number(),
        "{}",
        calls["compact"]
    );
    assert!(
        calls["compact"].get("firstKeptEntryId").is_some(),
        "{}",
        calls["compact"]
    );
    let commands = calls["getCommands"].as_array().unwrap();
    assert!(
        commands
            .iter()
            .all(|c| c["source"].is_string() && c["sourceInfo"].is_object()),
        "{commands:?}"
    );
}

/// Pi's client during a run: its steer (with an image) and follow-up
/// while the answer streams are each sent to the model in turn, a model
/// and thinking
/// level set meanwhile apply from the next request, and a prompt with an
/// image (Pi's `ImageContent`) reaches the model as one.
#[test]
fn pis_client_steers_and_switches_during_a_run() {
    let ws = Workspace::new();
    let gates = tempfile::tempdir().unwrap();
    let gate = gates.path().join("go");
    let server = FakeServer::start(vec![
        support::held("held answer", &gate),
        Reply::sse(chat_text("after the steer")),
        Reply::sse(chat_text("after the follow-up")),
        Reply::sse(chat_text("an image")),
    ])
    .unwrap();
    let bytes = etch_image::sample(8, 6, etch_model::MediaType::Png).unwrap();
    let image = etch_model::Image::new(bytes, etch_model::MediaType::Png, 1, 1);
    let encoded = image.base64().unwrap();
    let gate_arg = gate.display().to_string();
    let seen = drive_script(&ws, &server, "running.mjs", &[&gate_arg, &encoded]);
    assert!(seen.get("fatal").is_none(), "{seen:#}");
    assert_eq!(seen["errors"], serde_json::json!({}), "{seen:#}");
    let calls = &seen["calls"];
    assert_eq!(calls["stateWhileRunning"], true, "{seen:#}");
    assert_eq!(calls["lastText"], "after the follow-up", "{seen:#}");
    assert_eq!(calls["promptWithImage"], "an image", "{seen:#}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{seen:#}");
    let last_user = |n: usize| -> Value {
        requests[n].json()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rfind(|m| m["role"] == "user")
            .cloned()
            .unwrap()
    };
    assert_eq!(requests[0].json()["model"], "m1");
    let second = requests[1].json();
    assert_eq!(second["model"], "m2", "the model set during the run");
    let after = &calls["stateAfter"];
    assert_eq!(after["model"]["id"], "m2", "{after}");
    assert_eq!(after["thinkingLevel"], "low", "{after}");
    assert!(
        last_user(1).to_string().contains("steered while running"),
        "{}",
        last_user(1)
    );
    let image_of = |message: &Value| {
        message["content"]
            .as_array()
            .and_then(|parts| parts.iter().find(|p| p["type"] == "image_url"))
            .map(|p| p["image_url"]["url"].clone())
    };
    assert_eq!(
        image_of(&last_user(1)),
        Some(Value::String(image.data_url().unwrap())),
        "the steer's image"
    );
    assert!(
        last_user(2)
            .to_string()
            .contains("followed up while running"),
        "{}",
        last_user(2)
    );
    assert_eq!(
        image_of(&last_user(3)),
        Some(Value::String(image.data_url().unwrap())),
        "the prompt's image"
    );
}
