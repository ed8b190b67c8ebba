//! A property of the cut: whatever the session and the budgets, a
//! compaction never keeps a tool result whose call it summarizes (the
//! pair would be split, and the next request would carry a result for a
//! call the model never made).

#![allow(clippy::panic, clippy::unwrap_used)]

use std::collections::HashSet;

use etch_compact::{Settings, plan};
use etch_session::store::NewSession;
use etch_session::{SessionStore, load_session};
use proptest::prelude::*;
use serde_json::json;

/// One thing a run appends: a user message, an answer, or a batch of
/// tool calls (how many, and each result's length) with their results.
#[derive(Debug, Clone)]
enum Step {
    /// A user message of this many words.
    User(usize),
    /// An answer of this many words.
    Answer(usize),
    /// Calls with results of these many words.
    Tools(Vec<usize>),
}

/// Any step.
fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1usize..400).prop_map(Step::User),
        (1usize..400).prop_map(Step::Answer),
        prop::collection::vec(1usize..2000, 1..4).prop_map(Step::Tools),
    ]
}

/// About four characters a token.
fn estimate(text: &str) -> u64 {
    text.len() as u64 / 4
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn a_cut_never_keeps_a_result_whose_call_it_summarizes(
        steps in prop::collection::vec(step(), 1..30),
        keep_tokens in prop_oneof![Just(0u64), 1u64..4000],
        keep_messages in 1usize..8,
        force in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        let (mut writer, _) = store
            .create(&NewSession {
                cwd: "/w".into(),
                provider: "echo".into(),
                model: "echo".into(),
                openai_api: None,
                base_url: None,
                etch_version: "0".into(),
                first_prompt: "p".into(),
            })
            .unwrap();
        let words = |n: usize| "word ".repeat(n);
        let mut call = 0;
        for step in &steps {
            match step {
                Step::User(n) => {
                    writer.append("message.user", &json!({"content": [{"type": "text", "text": words(*n)}]})).unwrap();
                }
                Step::Answer(n) => {
                    writer.append("message.assistant", &json!({"content": [{"type": "text", "text": words(*n)}],
                        "provider": "echo", "model": "echo", "stopReason": "stop"})).unwrap();
                }
                Step::Tools(results) => {
                    let first = call;
                    let calls: Vec<_> = results.iter().map(|_| {
                        call += 1;
                        json!({"type": "toolCall", "id": format!("call_{call}"), "name": "read",
                               "arguments": {"path": "a.txt"}})
                    }).collect();
                    writer.append("message.assistant", &json!({"content": calls, "provider": "echo",
                        "model": "echo", "stopReason": "toolUse"})).unwrap();
                    for (i, n) in results.iter().enumerate() {
                        writer.append("message.tool", &json!({"toolCallId": format!("call_{}", first + i + 1),
                            "toolName": "read", "content": [{"type": "text", "text": words(*n)}],
                            "isError": false})).unwrap();
                    }
                }
            }
        }
        let loaded = load_session(writer.path()).unwrap();
        let mut settings = Settings::new(estimate);
        settings.keep_recent_tokens = keep_tokens;
        settings.keep_messages = keep_messages;
        settings.force = force;
        let Ok(plan) = plan(&loaded, &settings) else {
            return Ok(());
        };
        let at = loaded
            .events
            .iter()
            .position(|e| e.id == plan.first_kept_event_id)
            .unwrap();
        prop_assert_ne!(loaded.events[at].kind.as_str(), "message.tool", "the cut is at a tool result");
        let called_before: HashSet<String> = loaded.events[..at]
            .iter()
            .filter(|e| e.kind == "message.assistant")
            .flat_map(|e| {
                let data: serde_json::Value = serde_json::from_str(e.data.get()).unwrap();
                data["content"].as_array().cloned().unwrap_or_default()
            })
            .filter_map(|part| part["id"].as_str().map(str::to_owned))
            .collect();
        for kept in &loaded.events[at..] {
            if kept.kind == "message.tool" {
                let data: serde_json::Value = serde_json::from_str(kept.data.get()).unwrap();
                let id = data["toolCallId"].as_str().unwrap();
                prop_assert!(!called_before.contains(id), "result {id} kept, its call summarized");
            }
        }
    }
}
