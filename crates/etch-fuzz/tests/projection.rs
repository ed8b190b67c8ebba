//! A property of the projection: whatever a log holds (calls answered
//! out of order, calls never answered, results for calls never made,
//! user messages between a call and its result, failed passes), the
//! projection at its leaf, or at any entry, is a request every provider
//! takes: each tool result paired with an earlier call of the same id,
//! as the fake model server's invariants check them.

#![allow(clippy::panic, clippy::unwrap_used)]

use etch_model::{ModelRequest, RequestOptions};
use etch_session::store::NewSession;
use etch_session::{SessionStore, load_session, project_messages, project_messages_at};
use etch_test_support::invariants::{image_violation, tool_pairing_violation};
use proptest::prelude::*;
use serde_json::{Value, json};

/// One thing a log may hold.
#[derive(Debug, Clone)]
enum Step {
    /// A user message.
    User,
    /// An answer.
    Answer,
    /// A batch of calls (ids from this step's number) and, for each
    /// call, whether its result comes, in the order given.
    Calls(Vec<bool>, bool),
    /// A result for a call that was never made.
    Stray,
    /// A failed pass: an assistant message that ended in an error.
    Failed,
}

/// Any step.
fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::User),
        Just(Step::Answer),
        (prop::collection::vec(any::<bool>(), 1..4), any::<bool>())
            .prop_map(|(answered, reversed)| Step::Calls(answered, reversed)),
        Just(Step::Stray),
        Just(Step::Failed),
    ]
}

/// An assistant message's data with `content`.
fn assistant(content: &Value, stop: &str) -> Value {
    json!({"content": content, "provider": "openai", "model": "m1", "stopReason": stop})
}

/// A tool result's data for call `id`.
fn result(id: &str) -> Value {
    json!({"toolCallId": id, "toolName": "bash", "content": [{"type": "text", "text": "out"}],
           "isError": false})
}

/// The three providers' bodies for `messages`, each as JSON bytes.
fn bodies(messages: Vec<etch_model::Message>) -> Vec<(&'static str, Vec<u8>)> {
    let request = ModelRequest {
        system: Vec::new(),
        messages,
        tools: Vec::new(),
        options: RequestOptions::default(),
    };
    vec![
        (
            "chat",
            serde_json::to_vec(&etch_provider::openai::chat_request::build(
                &request, "m1", true,
            ))
            .unwrap(),
        ),
        (
            "responses",
            serde_json::to_vec(&etch_provider::openai::responses_request::build(
                &request, "m1", None,
            ))
            .unwrap(),
        ),
        (
            "anthropic",
            serde_json::to_vec(&etch_provider::anthropic::build_body(
                &request, "m1", 4096, None,
            ))
            .unwrap(),
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_projection_is_a_request_every_provider_takes(
        steps in prop::collection::vec(step(), 1..20),
        pick in any::<prop::sample::Index>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        let (mut writer, _) = store
            .create(&NewSession {
                cwd: "/w".into(),
                provider: "openai".into(),
                model: "m1".into(),
                openai_api: None,
                base_url: None,
                etch_version: "0".into(),
                first_prompt: "p".into(),
            })
            .unwrap();
        writer.append("message.user", &json!({"content": [{"type": "text", "text": "go"}]})).unwrap();
        for (n, step) in steps.iter().enumerate() {
            match step {
                Step::User => {
                    writer.append("message.user", &json!({"content": [{"type": "text", "text": "more"}]})).unwrap();
                }
                Step::Answer => {
                    writer.append("message.assistant", &assistant(&json!([{"type": "text", "text": "ok"}]), "stop")).unwrap();
                }
                Step::Calls(answered, reversed) => {
                    let ids: Vec<String> = (0..answered.len()).map(|i| format!("call_{n}_{i}")).collect();
                    let calls: Vec<Value> = ids.iter().map(|id| json!({"type": "tool_call", "id": id,
                        "name": "bash", "arguments": {"command": "ls"}})).collect();
                    writer.append("message.assistant", &assistant(&json!(calls), "toolUse")).unwrap();
                    let mut order: Vec<usize> = (0..ids.len()).collect();
                    if *reversed {
                        order.reverse();
                    }
                    for i in order {
                        if answered[i] {
                            writer.append("message.tool", &result(&ids[i])).unwrap();
                        }
                    }
                }
                Step::Stray => {
                    writer.append("message.tool", &result(&format!("never_{n}"))).unwrap();
                }
                Step::Failed => {
                    let mut failed = assistant(&json!([{"type": "text", "text": "half"}]), "error");
                    failed["errorMessage"] = json!("the stream broke");
                    writer.append("message.assistant", &failed).unwrap();
                }
            }
        }
        let loaded = load_session(writer.path()).unwrap();
        let entry = loaded.events[pick.index(loaded.events.len())].id.clone();
        let at_leaf = project_messages(&loaded).messages;
        let at_entry = project_messages_at(&loaded, &entry).unwrap().messages;
        for (place, messages) in [("leaf", at_leaf), ("entry", at_entry)] {
            for (provider, body) in bodies(messages) {
                prop_assert_eq!(tool_pairing_violation(&body), None, "{} at the {}", provider, place);
                prop_assert_eq!(image_violation(&body), None, "{} at the {}", provider, place);
            }
        }
    }
}
