//! The agent loop running the real built-in tools (issue 3): two edits of
//! one file in one batch never lose an update (E-TOOL-24, C19), a write and
//! reads of other files overlap, and results keep the model's order.

// Test doubles outside #[test] functions may panic on broken fixtures.
#![allow(clippy::unwrap_used, clippy::unnecessary_literal_bound)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use etch_core::{Agent, AgentConfig, NoopObserver};
use etch_model::{
    ModelClient, ModelRequest, ModelStream, RequestOptions, StopReason, StreamEvent, stream_channel,
};
use etch_session::store::NewSession;
use etch_session::{SessionStore, load_session, types};
use etch_tools::builtin::{ALL, BuiltinOptions, registry};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Plays back scripted passes.
struct Script(Mutex<VecDeque<Vec<StreamEvent>>>);

impl ModelClient for Script {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "script"
    }
    fn stream(&self, _request: ModelRequest, _cancel: CancellationToken) -> ModelStream {
        let events = self.0.lock().unwrap().pop_front().unwrap_or_default();
        let (tx, stream) = stream_channel();
        tokio::spawn(async move {
            for e in events {
                if !tx.send(e).await {
                    return;
                }
            }
        });
        stream
    }
}

/// A pass calling `(id, tool, json args)` in one assistant message.
fn calls(list: &[(&str, &str, Value)]) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    for (i, (id, name, args)) in list.iter().enumerate() {
        events.push(StreamEvent::ToolCallStart {
            index: i,
            id: (*id).into(),
            name: (*name).into(),
        });
        events.push(StreamEvent::ToolCallDelta {
            index: i,
            arguments: args.to_string(),
        });
    }
    events.push(StreamEvent::Done {
        stop_reason: StopReason::ToolUse,
    });
    events
}

/// A final text pass.
fn done() -> Vec<StreamEvent> {
    vec![
        StreamEvent::TextDelta("ok".into()),
        StreamEvent::Done {
            stop_reason: StopReason::Stop,
        },
    ]
}

/// E-TOOL-24: two edits of one file in one batch both land, in order; the
/// read of another file runs alongside; results are in the model's order.
#[tokio::test]
async fn two_edits_of_one_file_never_lose_an_update() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("w");
    std::fs::create_dir(&cwd).unwrap();
    std::fs::write(cwd.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(cwd.join("b.txt"), "bee\n").unwrap();
    let script = Script(Mutex::new(
        vec![
            calls(&[
                ("c1", "edit", serde_json::json!({"path": "a.txt", "edits": [{"oldText": "one", "newText": "1"}]})),
                ("c2", "read", serde_json::json!({"path": "b.txt"})),
                ("c3", "edit", serde_json::json!({"path": "./a.txt", "edits": [{"oldText": "three", "newText": "3"}]})),
            ]),
            done(),
        ]
        .into(),
    ));
    let store = SessionStore::new(dir.path().join("sessions"));
    let (mut writer, _) = store
        .create(&NewSession {
            cwd: cwd.to_string_lossy().into_owned(),
            provider: "scripted".into(),
            model: "script".into(),
            openai_api: None,
            base_url: None,
            etch_version: "test".into(),
            first_prompt: "p".into(),
        })
        .unwrap();
    let agent = Agent::new(
        Arc::new(script),
        registry(&ALL, &BuiltinOptions::default()).unwrap(),
        AgentConfig {
            max_tool_rounds: 4,
            system: Vec::new(),
            cwd: cwd.clone(),
            temp_dir: dir.path().join("tmp"),
            options: RequestOptions::default(),
            compaction: None,
            guard: etch_core::GuardSettings::default(),
            grounding: false,
            required_reply_tokens: None,
        },
    );
    agent
        .run(
            &mut writer,
            &mut Vec::new(),
            "edit",
            &mut NoopObserver,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(cwd.join("a.txt")).unwrap(),
        "1\ntwo\n3\n"
    );
    let s = load_session(writer.path()).unwrap();
    let results: Vec<Value> = s
        .events
        .iter()
        .filter(|e| e.kind == types::MESSAGE_TOOL)
        .map(|e| serde_json::from_str(e.data.get()).unwrap())
        .collect();
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
    assert!(
        results[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Successfully replaced 1 block(s) in a.txt.")
    );
    assert_eq!(results[1]["content"][0]["text"], "     1\tbee");
    assert!(
        results[2]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Successfully replaced 1 block(s) in ./a.txt.")
    );
}

/// E-TOOL-22: a secret the redactor names never reaches the log, whichever
/// tool printed it (a file read, a bash command) and whether it is the
/// whole text or part of a diff in the details.
#[tokio::test]
async fn results_never_carry_a_named_secret() {
    const SECRET: &str = "sk-proj-secret-0123456789";
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("w");
    std::fs::create_dir(&cwd).unwrap();
    std::fs::write(cwd.join(".env"), format!("OPENAI_API_KEY={SECRET}\n")).unwrap();
    let script = Script(Mutex::new(
        vec![
            calls(&[
                ("c1", "read", serde_json::json!({"path": ".env"})),
                (
                    "c2",
                    "bash",
                    serde_json::json!({"command": format!("echo {SECRET}")}),
                ),
                (
                    "c3",
                    "edit",
                    serde_json::json!({"path": ".env", "oldText": "OPENAI", "newText": "MY"}),
                ),
            ]),
            done(),
        ]
        .into(),
    ));
    let store = SessionStore::new(dir.path().join("sessions"));
    let (mut writer, _) = store
        .create(&NewSession {
            cwd: cwd.to_string_lossy().into_owned(),
            provider: "scripted".into(),
            model: "script".into(),
            openai_api: None,
            base_url: None,
            etch_version: "test".into(),
            first_prompt: "p".into(),
        })
        .unwrap();
    let agent = Agent::new(
        Arc::new(script),
        registry(&ALL, &BuiltinOptions::default()).unwrap(),
        AgentConfig {
            max_tool_rounds: 4,
            system: Vec::new(),
            cwd: cwd.clone(),
            temp_dir: dir.path().join("tmp"),
            options: RequestOptions::default(),
            compaction: None,
            guard: etch_core::GuardSettings::default(),
            grounding: false,
            required_reply_tokens: None,
        },
    )
    .with_redactor(etch_core::Redactor::new(vec![SECRET.to_owned()]));
    agent
        .run(
            &mut writer,
            &mut Vec::new(),
            "show the key",
            &mut NoopObserver,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    // The model's own call names the secret; no result line may.
    let log = std::fs::read_to_string(writer.path()).unwrap();
    for line in log.lines().filter(|l| l.contains("\"message.tool\"")) {
        assert!(!line.contains(SECRET), "{line}");
    }
    let redacted = etch_core::REDACTED;
    let s = load_session(writer.path()).unwrap();
    let texts: Vec<String> = s
        .events
        .iter()
        .filter(|e| e.kind == types::MESSAGE_TOOL)
        .map(|e| serde_json::from_str::<Value>(e.data.get()).unwrap())
        .map(|r| r["content"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts[0], format!("     1\tOPENAI_API_KEY={redacted}"));
    assert_eq!(texts[1], format!("{redacted}\n"));
    assert!(
        texts[2].contains(&format!("+MY_API_KEY={redacted}")),
        "{}",
        texts[2]
    );
}
