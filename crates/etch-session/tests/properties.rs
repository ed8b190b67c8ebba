//! Properties of the log that need no fuzzer: whatever is appended
//! loads back as appended, in order, on one branch, with no tool call
//! left dangling; and a log cut anywhere (a crash mid-write) loads as
//! the whole lines before the cut, a torn last line only warned of.

#![allow(clippy::panic, clippy::unwrap_used)]

use etch_session::store::NewSession;
use etch_session::{SessionStore, dangling_tool_calls, load_session, parse_session};
use proptest::prelude::*;
use serde_json::{Value, json};

/// One thing a run appends.
#[derive(Debug, Clone)]
enum Step {
    /// A user message.
    User(String),
    /// An answer.
    Answer(String),
    /// A tool call and its result.
    Tool(String, String),
}

/// Any step, with any text.
fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        any::<String>().prop_map(Step::User),
        any::<String>().prop_map(Step::Answer),
        (any::<String>(), any::<String>()).prop_map(|(a, r)| Step::Tool(a, r)),
    ]
}

/// The events a step appends: kind and data.
fn events(step: &Step, n: usize) -> Vec<(&'static str, Value)> {
    match step {
        Step::User(text) => vec![(
            "message.user",
            json!({"content": [{"type": "text", "text": text}]}),
        )],
        Step::Answer(text) => vec![(
            "message.assistant",
            json!({"content": [{"type": "text", "text": text}], "provider": "echo",
                   "model": "echo", "stopReason": "stop"}),
        )],
        Step::Tool(argument, result) => vec![
            (
                "message.assistant",
                json!({"content": [{"type": "toolCall", "id": format!("call_{n}"), "name": "bash",
                        "arguments": {"command": argument}}],
                       "provider": "echo", "model": "echo", "stopReason": "toolUse"}),
            ),
            (
                "message.tool",
                json!({"toolCallId": format!("call_{n}"), "toolName": "bash",
                       "content": [{"type": "text", "text": result}], "isError": false}),
            ),
        ],
    }
}

/// A new session's parameters.
fn session() -> NewSession {
    NewSession {
        cwd: "/w".into(),
        provider: "echo".into(),
        model: "echo".into(),
        openai_api: None,
        base_url: None,
        etch_version: "0.1.0".into(),
        first_prompt: "p".into(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn what_is_appended_loads_back_as_appended(
        steps in prop::collection::vec(step(), 0..24),
        cut in any::<prop::sample::Index>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        let (mut writer, _) = store.create(&session()).unwrap();
        let mut appended = Vec::new();
        for (n, step) in steps.iter().enumerate() {
            for (kind, data) in events(step, n) {
                writer.append(kind, &data).unwrap();
                appended.push((kind.to_owned(), data));
            }
        }
        let loaded = load_session(writer.path()).unwrap();
        prop_assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let got: Vec<(String, Value)> = loaded.events[1..]
            .iter()
            .map(|e| (e.kind.clone(), serde_json::from_str(e.data.get()).unwrap()))
            .collect();
        prop_assert_eq!(&got, &appended);
        // One branch, each event the child of the one before.
        prop_assert_eq!(loaded.active.len(), loaded.events.len());
        for pair in loaded.events.windows(2) {
            prop_assert_eq!(pair[1].parent_id.as_deref(), Some(pair[0].id.as_str()));
        }
        prop_assert!(dangling_tool_calls(&loaded).is_empty());

        // Cut anywhere, as a crash mid-write leaves it: the whole lines
        // before the cut load, a torn last line is a warning.
        let bytes = std::fs::read(writer.path()).unwrap();
        let at = cut.index(bytes.len() + 1);
        let whole_lines = bytes[..at].split(|&b| b == b'\n').count() - 1;
        // A cut just before a newline leaves a last line that is whole
        // but for its newline: it loads, as a line written by hand might.
        let partial = at > 0 && bytes[at - 1] != b'\n';
        let whole_but_newline = partial && bytes.get(at) == Some(&b'\n');
        let loadable = whole_lines + usize::from(whole_but_newline);
        if let Ok(torn) = parse_session(writer.path(), &bytes[..at]) {
            prop_assert_eq!(torn.events.len(), loadable);
            prop_assert_eq!(
                torn.warnings.len(),
                usize::from(partial && !whole_but_newline)
            );
        } else {
            // Nothing whole before the cut: not even the header.
            prop_assert_eq!(loadable, 0);
        }
    }
}
