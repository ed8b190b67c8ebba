//! The summarizer request's exact shape and how its answer is collected.

use etch_model::{
    ContentPart, ErrorKind, Message, ModelError, RequestOptions, StopReason, StreamEvent, ToolCall,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::prompt::{summary_prompt, update_prompt};
use crate::test_support::Scripted;

/// A plan over a three-message prefix with one read and one edit.
fn sample_plan(previous: Option<&str>) -> Plan {
    Plan {
        first_kept_event_id: "KEPT".into(),
        summarized: vec![
            Message::user_text("fix the build"),
            Message::Assistant {
                content: vec![
                    ContentPart::text("Reading."),
                    ContentPart::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "src/main.rs"}),
                    }),
                ],
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                tool_name: "read".into(),
                content: vec![ContentPart::text("fn main() {}")],
                is_error: false,
            },
        ],
        previous_summary: previous.map(str::to_string),
        tokens_before: 1000,
        tokens_kept: 100,
        read_files: vec!["src/main.rs".into()],
        modified_files: vec!["src/lib.rs".into()],
    }
}

/// The serialized conversation of [`sample_plan`].
const CONVERSATION: &str = "<conversation>\n[User]: fix the build\n\n[Assistant]: Reading.\n[Assistant tool calls]: read({\"path\":\"src/main.rs\"})\n\n[Tool result]: fn main() {}\n</conversation>";

/// G24: one `summarizer` system layer, one user message with the wrapped
/// conversation and the focus line, no tools, the session id in the options;
/// the answer is trimmed and followed by the file blocks.
#[tokio::test]
async fn request_has_the_g24_shape() {
    let client = Scripted::replying("\n## Goal\nFix the build.\n");
    let summary = summarize(
        &client,
        &sample_plan(None),
        Some("  the public API  "),
        "S1",
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        summary,
        "## Goal\nFix the build.\n\n<read-files>\nsrc/main.rs\n</read-files>\n\n<modified-files>\nsrc/lib.rs\n</modified-files>"
    );
    let request = client.request();
    assert_eq!(request.system.len(), 1);
    assert_eq!(request.system[0].name, "summarizer");
    assert_eq!(request.system[0].text, summary_prompt());
    assert_eq!(
        request.messages,
        [Message::user_text(format!(
            "{CONVERSATION}\n\nAdditional focus: the public API"
        ))]
    );
    assert!(request.tools.is_empty());
    assert_eq!(
        request.options,
        RequestOptions {
            session_id: "S1".into(),
            ..RequestOptions::default()
        }
    );
}

/// Updates use the merge prompt and pass the previous summary in its tags,
/// between the conversation and the focus; without focus there is no line.
#[tokio::test]
async fn update_requests_carry_the_previous_summary() {
    let client = Scripted::replying("## Goal\nX");
    summarize(
        &client,
        &sample_plan(Some("## Goal\nOLD")),
        None,
        "S1",
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let request = client.request();
    assert_eq!(request.system[0].text, update_prompt());
    assert_eq!(
        request.messages,
        [Message::user_text(format!(
            "{CONVERSATION}\n\n<previous-summary>\n## Goal\nOLD\n</previous-summary>"
        ))]
    );

    let client = Scripted::replying("## Goal\nX");
    summarize(
        &client,
        &sample_plan(Some("OLD")),
        Some("tests"),
        "S1",
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let Message::User { content } = &client.request().messages[0] else {
        panic!("not a user message");
    };
    assert!(etch_model::content::joined_text(content).ends_with(
        "</conversation>\n\n<previous-summary>\nOLD\n</previous-summary>\n\nAdditional focus: tests"
    ));
}

/// Runs the summarizer against a model streaming `events`.
async fn run(events: Vec<StreamEvent>) -> Result<String, CompactError> {
    let client = Scripted::new(events);
    summarize(
        &client,
        &sample_plan(None),
        None,
        "S1",
        &CancellationToken::new(),
    )
    .await
}

/// P-COMP-09: provider errors, error stop reasons and broken streams fail,
/// keeping the provider's kind; every message says the session is unchanged.
#[tokio::test]
async fn failures_are_model_errors() {
    let err = run(vec![
        StreamEvent::TextDelta("partial".into()),
        StreamEvent::Error(ModelError::new(
            ErrorKind::ContextOverflow,
            "prompt is too long",
        )),
    ])
    .await
    .unwrap_err();
    assert!(matches!(&err, CompactError::Model(e) if e.kind == ErrorKind::ContextOverflow));
    assert_eq!(
        err.to_string(),
        "the summary request failed: prompt is too long; the session was not changed"
    );

    let err = run(vec![
        StreamEvent::TextDelta("partial".into()),
        StreamEvent::Done {
            stop_reason: StopReason::Error,
        },
    ])
    .await
    .unwrap_err();
    assert!(matches!(err, CompactError::Model(_)), "{err}");
    assert!(err.to_string().ends_with("; the session was not changed"));

    let err = run(vec![StreamEvent::TextDelta("cut off".into())])
        .await
        .unwrap_err();
    assert!(matches!(&err, CompactError::Model(e) if e.kind == ErrorKind::Protocol));
}

/// An answer with no text is an error, not an empty summary.
#[tokio::test]
async fn empty_answers_are_errors() {
    let err = run(vec![
        StreamEvent::TextDelta(" \n ".into()),
        StreamEvent::Done {
            stop_reason: StopReason::Stop,
        },
    ])
    .await
    .unwrap_err();
    assert!(matches!(err, CompactError::Empty));
    assert!(err.to_string().contains("the session was not changed"));
}

/// Cancellation wins over a stream that never ends.
#[tokio::test]
async fn cancellation_stops_the_summary() {
    let client = Scripted::new(Vec::new());
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = summarize(&client, &sample_plan(None), None, "S1", &cancel)
        .await
        .unwrap_err();
    assert!(matches!(err, CompactError::Cancelled));
    assert_eq!(
        err.to_string(),
        "compaction was cancelled; the session was not changed"
    );
}
