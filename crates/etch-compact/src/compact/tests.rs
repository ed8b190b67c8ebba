//! Whole compactions on real session files: what is appended, what the
//! projection becomes, and that failures leave the file untouched.

use etch_model::{ErrorKind, Message, ModelError, StreamEvent};
use etch_session::{load_session, project_messages};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::test_support::{Log, Scripted, est};
use crate::tokens::estimate_context;

/// Settings keeping about 100 recent tokens.
fn settings() -> Settings {
    Settings {
        keep_recent_tokens: 100,
        ..Settings::new(est)
    }
}

/// Text of `n` estimated tokens.
fn sized(n: usize) -> String {
    "y".repeat(n * 4)
}

/// A session with an old exchange that read and edited files, then a recent
/// one. Returns the log and the id of the first recent event.
fn session() -> (Log, String) {
    let mut log = Log::new();
    log.user(&sized(500));
    log.calls(&[
        ("c1", "read", json!({"path": "src/a.rs"})),
        ("c2", "edit", json!({"path": "src/b.rs", "edits": []})),
    ]);
    log.tool("c1", "read", &sized(500));
    log.tool("c2", "edit", "ok");
    log.assistant(&sized(100));
    let recent = log.user(&sized(60));
    log.assistant(&sized(60));
    (log, recent)
}

/// The messages of a session's projection from `first_kept` on, computed
/// from an uncompacted load, to compare with the compacted projection.
fn raw_from(session: &etch_session::LoadedSession, first_kept: &str) -> Vec<Message> {
    let mut log_only = Vec::new();
    let mut seen = false;
    for event in session.active_events() {
        seen |= event.id == first_kept;
        if seen && let Some(m) = crate::window::replayed_message(event) {
            log_only.push(m);
        }
    }
    log_only
}

/// P-COMP-11/C23: the summary is appended with its metadata; the reloaded
/// projection is the P-DATA-06 wrapper followed by the raw events from
/// `firstKeptEventId`, inclusive.
#[tokio::test]
async fn compaction_appends_a_summary_that_the_projection_uses() {
    let (mut log, recent) = session();
    let before = log.load();
    let client = Scripted::replying("## Goal\nShip it.");
    let outcome = compact(
        &before,
        &mut log.writer,
        &client,
        Trigger::Manual,
        Some("the edits"),
        &settings(),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let Outcome::Compacted { data, event_id, .. } = outcome else {
        panic!("skipped: {outcome:?}");
    };
    let summary = "## Goal\nShip it.\n\n<read-files>\nsrc/a.rs\n</read-files>\n\n<modified-files>\nsrc/b.rs\n</modified-files>";
    assert_eq!(data.summary, summary);
    assert_eq!(data.trigger, "manual");
    assert_eq!(data.first_kept_event_id.as_deref(), Some(recent.as_str()));
    assert_eq!(data.tokens_before, estimate_context(&before, est));
    assert_eq!(data.read_files, ["src/a.rs"]);
    assert_eq!(data.modified_files, ["src/b.rs"]);
    assert_eq!(data.instructions.as_deref(), Some("the edits"));
    assert_eq!(log.writer.leaf(), Some(event_id.as_str()));

    let after = load_session(log.writer.path()).unwrap();
    let last = after.events.last().unwrap();
    assert_eq!(last.id, event_id);
    assert_eq!(last.kind, types::CONTEXT_SUMMARY);
    assert_eq!(last.parse_data::<SummaryData>().unwrap(), data);

    let projection = project_messages(&after);
    assert_eq!(projection.messages[0], summary_message(summary));
    assert_eq!(
        projection.messages[0],
        Message::user_text(format!(
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\n{summary}\n</summary>"
        ))
    );
    assert_eq!(projection.messages[1..], raw_from(&before, &recent)[..]);
    assert_eq!(projection.messages.len(), 3);
    // tokensAfter estimates exactly that projection (no usage, no pinned part).
    assert_eq!(data.tokens_after, estimate_context(&after, est));
    assert!(data.tokens_after < data.tokens_before);
}

/// A second compaction updates the first: the request carries the previous
/// summary without its file blocks, the lists accumulate, and the projection
/// shows only the newest summary.
#[tokio::test]
async fn a_second_compaction_updates_the_first() {
    let (mut log, _) = session();
    let first = compact(
        &log.load(),
        &mut log.writer,
        &Scripted::replying("FIRST"),
        Trigger::Auto,
        None,
        &settings(),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(matches!(first, Outcome::Compacted { .. }));
    log.calls(&[("c3", "write", json!({"path": "NOTES.md", "content": "x"}))]);
    log.tool("c3", "write", "ok");
    log.assistant(&sized(200));
    let newest = log.user(&sized(120));

    let client = Scripted::replying("SECOND");
    let outcome = compact(
        &log.load(),
        &mut log.writer,
        &client,
        Trigger::Overflow,
        Some("   "),
        &settings(),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let Outcome::Compacted { data, .. } = outcome else {
        panic!("skipped: {outcome:?}");
    };
    assert_eq!(data.trigger, "overflow");
    assert_eq!(data.instructions, None);
    assert_eq!(data.first_kept_event_id.as_deref(), Some(newest.as_str()));
    assert_eq!(data.read_files, ["src/a.rs"]);
    assert_eq!(data.modified_files, ["NOTES.md", "src/b.rs"]);
    let Message::User { content } = &client.request().messages[0] else {
        panic!("not a user message");
    };
    let text = etch_model::content::joined_text(content);
    assert!(
        text.ends_with("\n</conversation>\n\n<previous-summary>\nFIRST\n</previous-summary>"),
        "{text}"
    );
    // The messages the first compaction kept are summarized now.
    assert!(
        text.starts_with(&format!("<conversation>\n[User]: {}", sized(60))),
        "{text}"
    );

    let projection = project_messages(&log.load());
    assert_eq!(projection.messages.len(), 2);
    assert_eq!(projection.messages[0], summary_message(&data.summary));
    assert_eq!(projection.messages[1], Message::user_text(sized(120)));
}

/// P-COMP-09: a failed summary appends nothing at all, byte for byte, and
/// the error says the session was not changed.
#[tokio::test]
async fn a_failed_summary_changes_nothing() {
    let (mut log, _) = session();
    let bytes = log.bytes();
    let leaf = log.writer.leaf().map(str::to_string);
    let client = Scripted::new(vec![StreamEvent::Error(ModelError::new(
        ErrorKind::Transient,
        "503 service unavailable",
    ))]);
    let err = compact(
        &log.load(),
        &mut log.writer,
        &client,
        Trigger::Manual,
        None,
        &settings(),
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the summary request failed: 503 service unavailable; the session was not changed"
    );
    assert_eq!(log.bytes(), bytes);
    assert_eq!(log.writer.leaf().map(str::to_string), leaf);

    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = compact(
        &log.load(),
        &mut log.writer,
        &Scripted::replying("never"),
        Trigger::Manual,
        None,
        &settings(),
        &cancel,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CompactError::Cancelled));
    assert_eq!(log.bytes(), bytes);
}

/// A skip makes no request and appends nothing.
#[tokio::test]
async fn a_skip_makes_no_request() {
    let (mut log, _) = session();
    let bytes = log.bytes();
    let client = Scripted::replying("unused");
    let outcome = compact(
        &log.load(),
        &mut log.writer,
        &client,
        Trigger::Auto,
        None,
        &Settings::new(est),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        outcome,
        Outcome::Skipped(Skip::NothingToSummarize {
            budget: crate::skip::Budget::Tokens(20_000),
            since_summary: false
        })
    );
    assert!(client.requests.lock().unwrap().is_empty());
    assert_eq!(log.bytes(), bytes);
}

/// A summary no smaller than the history it would replace is not appended:
/// the compaction reports a skip and the file is unchanged.
#[tokio::test]
async fn a_summary_that_does_not_shrink_is_not_appended() {
    let (mut log, _) = session();
    let session = log.load();
    let before = std::fs::read(&session.path).unwrap();
    let huge = Scripted::replying(&sized(5000));
    let outcome = compact(
        &session,
        &mut log.writer,
        &huge,
        Trigger::Manual,
        None,
        &settings(),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let Outcome::Skipped(skip) = outcome else {
        panic!("appended: {outcome:?}");
    };
    assert!(matches!(skip, Skip::SummaryTooLong { .. }), "{skip:?}");
    assert!(skip.to_string().contains("the session was not changed"));
    assert_eq!(std::fs::read(&session.path).unwrap(), before);
}

/// What the summary request cost is recorded just before the summary,
/// marked with its purpose, and handed back for observers; the context
/// estimate after the compaction does not take it for the conversation.
#[tokio::test]
async fn the_summary_requests_usage_and_metrics_are_recorded() {
    let (mut log, _) = session();
    let before = log.load();
    let client = Scripted::new(vec![
        StreamEvent::TextDelta("## Goal\nShip it.".into()),
        StreamEvent::Usage(crate::test_support::usage(900, 880, 20)),
        StreamEvent::Metrics(etch_model::Metrics {
            requests: 1,
            request_bytes: 4000,
            ..etch_model::Metrics::default()
        }),
        StreamEvent::Done {
            stop_reason: etch_model::StopReason::Stop,
        },
    ]);
    let outcome = compact(
        &before,
        &mut log.writer,
        &client,
        Trigger::Manual,
        None,
        &settings(),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let Outcome::Compacted { counted, .. } = outcome else {
        panic!("not compacted: {outcome:?}");
    };
    assert_eq!(counted.len(), 2);
    assert!(
        counted[0].contains("\"type\":\"model.usage\""),
        "{}",
        counted[0]
    );
    assert!(
        counted[0].contains("\"purpose\":\"compaction\""),
        "{}",
        counted[0]
    );
    assert!(counted[1].contains("\"requests\":1"), "{}", counted[1]);
    let after = log.load();
    let kinds: Vec<&str> = after.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds[kinds.len() - 3..],
        ["model.usage", "model.metrics", "context.summary"]
    );
    assert!(estimate_context(&after, est) < 880);
}
