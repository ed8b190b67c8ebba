//! Cut points, budgets and skips, on sessions written by a real writer.

use etch_model::Message;
use etch_model::content::joined_text;
use etch_session::{SummaryData, types};
use serde_json::json;

use super::*;
use crate::test_support::{Log, assistant_failed, est, usage};
use crate::tokens::estimate_context;

/// Settings with a token budget and the tests' estimator.
fn tokens(keep: u64) -> Settings {
    Settings {
        keep_recent_tokens: keep,
        ..Settings::new(est)
    }
}

/// Settings with the token budget off and a message budget.
fn messages(keep: usize) -> Settings {
    Settings {
        keep_recent_tokens: 0,
        keep_messages: keep,
        force: false,
        estimate: est,
    }
}

/// Text of `n` estimated tokens.
fn sized(n: usize) -> String {
    "x".repeat(n * 4)
}

/// A short label for each summarized message, to compare prefixes.
fn labels(plan: &Plan) -> Vec<String> {
    plan.summarized
        .iter()
        .map(|m| match m {
            Message::User { content } => format!("user:{}", joined_text(content).len()),
            Message::Assistant { content } => format!("assistant:{}", joined_text(content).len()),
            Message::Tool { tool_call_id, .. } => format!("tool:{tool_call_id}"),
            Message::ProviderItem(_) => "item".into(),
        })
        .collect()
}

/// E-CTX-20: the budget is reached inside a tool batch; the cut moves forward
/// past the remaining results to the next assistant message.
#[test]
fn cut_never_lands_on_a_tool_result() {
    let mut log = Log::new();
    log.user(&sized(100));
    log.assistant(&sized(100));
    log.user("run the tests");
    log.calls(&[
        ("c1", "bash", json!({"command": "a"})),
        ("c2", "bash", json!({"command": "b"})),
        ("c3", "bash", json!({"command": "c"})),
    ]);
    log.tool("c1", "bash", &sized(1000));
    log.tool("c2", "bash", &sized(1000));
    log.tool("c3", "bash", &sized(1000));
    let after_batch = log.assistant(&sized(10));
    log.user(&sized(10));
    let session = log.load();
    // Walking back: 10, 20, 1020, 2020 >= 1500 at the result of c2.
    let plan = plan(&session, &tokens(1500)).unwrap();
    assert_eq!(plan.first_kept_event_id, after_batch);
    assert_eq!(
        labels(&plan),
        [
            "user:400",
            "assistant:400",
            "user:13",
            "assistant:0",
            "tool:c1",
            "tool:c2",
            "tool:c3"
        ]
    );
    assert_eq!(plan.tokens_before, estimate_context(&session, est));
    assert_eq!(plan.tokens_kept, 20);
    assert_eq!(plan.previous_summary, None);
}

/// A huge batch at the very end has no cut point after it: the cut falls
/// back to the assistant message that made the calls, never to a result.
#[test]
fn a_trailing_batch_keeps_its_call() {
    let mut log = Log::new();
    log.user(&sized(400));
    log.assistant(&sized(400));
    log.user("go");
    let call = log.calls(&[
        ("c1", "read", json!({"path": "a"})),
        ("c2", "read", json!({"path": "b"})),
    ]);
    log.tool("c1", "read", &sized(1000));
    log.tool("c2", "read", &sized(1000));
    let session = log.load();
    let plan = plan(&session, &tokens(1500)).unwrap();
    assert_eq!(plan.first_kept_event_id, call);
    assert_eq!(labels(&plan), ["user:1600", "assistant:1600", "user:2"]);
}

/// The kept suffix is the smallest one reaching the budget, moved forward to
/// a cut point; all-valid sequences cut exactly there.
#[test]
fn keep_recent_tokens_is_respected() {
    let mut log = Log::new();
    let mut ids = Vec::new();
    for i in 0..10 {
        ids.push(if i % 2 == 0 {
            log.user(&sized(100))
        } else {
            log.assistant(&sized(100))
        });
    }
    let session = log.load();
    for (keep, first_kept) in [(250, 7), (300, 7), (301, 6), (1, 9)] {
        let plan = plan(&session, &tokens(keep)).unwrap();
        assert_eq!(plan.first_kept_event_id, ids[first_kept], "keep {keep}");
        assert_eq!(plan.summarized.len(), first_kept);
        assert_eq!(plan.tokens_kept, 100 * (10 - first_kept as u64));
    }
}

/// E-CTX-17: with the token budget off, the last N message events stay raw,
/// again moving forward past tool results.
#[test]
fn keep_messages_is_the_fallback() {
    let mut log = Log::new();
    log.user(&sized(100));
    log.calls(&[("c1", "ls", json!({}))]);
    log.tool("c1", "ls", &sized(100));
    let answer = log.assistant(&sized(100));
    let last_user = log.user(&sized(100));
    log.assistant(&sized(100));
    let session = log.load();
    assert_eq!(
        plan(&session, &messages(2)).unwrap().first_kept_event_id,
        last_user
    );
    assert_eq!(
        plan(&session, &messages(3)).unwrap().first_kept_event_id,
        answer
    );
    // Four would start at the tool result: the cut moves to the answer.
    let plan4 = plan(&session, &messages(4)).unwrap();
    assert_eq!(plan4.first_kept_event_id, answer);
    assert_eq!(labels(&plan4), ["user:400", "assistant:0", "tool:c1"]);
    let skip = plan(&session, &messages(6)).unwrap_err();
    assert_eq!(
        skip.to_string(),
        "nothing to compact: the whole session fits in the 6 most recent messages"
    );
}

/// Nothing older than the kept part: a skip that says why.
#[test]
fn nothing_to_summarize_is_a_skip() {
    let mut log = Log::new();
    log.user("hello");
    log.assistant("hi");
    let session = log.load();
    let skip = plan(&session, &Settings::new(est)).unwrap_err();
    assert_eq!(
        skip,
        Skip::NothingToSummarize {
            budget: Budget::Tokens(20_000),
            since_summary: false
        }
    );
    assert_eq!(
        skip.to_string(),
        "nothing to compact: the whole session fits in the 20000 most recent tokens"
    );
    // An empty session has nothing either.
    let session = Log::new().load();
    assert!(matches!(
        plan(&session, &tokens(1)),
        Err(Skip::NothingToSummarize { .. })
    ));
}

/// Failed and aborted passes are not replayed, so they neither count toward
/// the budget nor become the cut, nor reach the summarizer.
#[test]
fn failed_passes_are_invisible() {
    let mut log = Log::new();
    log.user(&sized(100));
    log.assistant(&sized(100));
    log.user(&sized(100));
    log.append(types::MESSAGE_ASSISTANT, &assistant_failed(&sized(10_000)));
    let retry = log.assistant(&sized(100));
    log.user(&sized(100));
    let session = log.load();
    let plan = plan(&session, &tokens(150)).unwrap();
    assert_eq!(plan.first_kept_event_id, retry);
    assert_eq!(labels(&plan), ["user:400", "assistant:400", "user:400"]);
}

/// A single huge recent message: summarizing a tiny prefix would not shrink
/// the context, so nothing is done (E-CTX-18).
#[test]
fn a_tiny_prefix_would_not_shrink() {
    let mut log = Log::new();
    log.user("hi");
    log.assistant(&sized(25_000));
    let session = log.load();
    let skip = plan(&session, &Settings::new(est)).unwrap_err();
    assert_eq!(
        skip,
        Skip::WouldNotShrink {
            tokens_before: 25_001,
            tokens_after: 25_000
        }
    );
    assert!(
        skip.to_string().contains("from about 25001 to 25000"),
        "{skip}"
    );
}

/// E-CTX-18: an active summary that dominates the context is not
/// re-summarized for a small gain.
#[test]
fn a_dominant_previous_summary_is_not_repeated() {
    let mut log = Log::new();
    log.user("old");
    let kept = log.user(&sized(50));
    log.summary(&sized(10_000), &kept);
    for _ in 0..10 {
        log.assistant(&sized(50));
    }
    let session = log.load();
    let skip = plan(&session, &tokens(200)).unwrap_err();
    assert!(matches!(skip, Skip::WouldNotShrink { .. }), "{skip:?}");
}

/// The pinned context revealed by usage counts on both sides: when it
/// dominates, compaction would not help.
#[test]
fn a_dominant_pinned_context_is_not_compacted() {
    let mut log = Log::new();
    log.user(&sized(100));
    log.assistant(&sized(100));
    log.append(types::MODEL_USAGE, &usage(50_000, 0, 0));
    log.user(&sized(100));
    log.assistant(&sized(100));
    let session = log.load();
    let skip = plan(&session, &tokens(150)).unwrap_err();
    // Before: 50,000 + 200 after the usage; pinned: 50,000 - 200.
    assert_eq!(
        skip,
        Skip::WouldNotShrink {
            tokens_before: 50_200,
            tokens_after: 49_800 + 200
        }
    );
}

/// With an active summary, only events replayed after it are candidates; the
/// previous text (without its file blocks) and lists feed the update.
#[test]
fn update_mode_starts_at_the_previous_first_kept_event() {
    let mut log = Log::new();
    log.user(&sized(1000));
    let kept = log.user(&sized(100));
    log.calls(&[("c1", "edit", json!({"path": "src/lib.rs"}))]);
    log.tool("c1", "edit", "ok");
    log.summary_data(&SummaryData {
        summary: "PREVIOUS\n\n<read-files>\nREADME.md\n</read-files>".into(),
        trigger: "auto".into(),
        first_kept_event_id: Some(kept.clone()),
        tokens_before: 0,
        tokens_after: 0,
        read_files: vec!["README.md".into(), "src/lib.rs".into()],
        modified_files: vec!["Cargo.toml".into()],
        instructions: None,
    });
    log.assistant(&sized(100));
    let newest = log.user(&sized(100));
    let session = log.load();
    let plan = plan(&session, &tokens(100)).unwrap();
    assert_eq!(plan.first_kept_event_id, newest);
    assert_eq!(
        labels(&plan),
        ["user:400", "assistant:0", "tool:c1", "assistant:400"]
    );
    assert_eq!(plan.previous_summary.as_deref(), Some("PREVIOUS"));
    assert_eq!(plan.read_files, ["README.md"]);
    assert_eq!(plan.modified_files, ["Cargo.toml", "src/lib.rs"]);

    let skip = plan_skip_since_summary(&session);
    assert_eq!(
        skip.to_string(),
        "nothing to compact: everything since the last summary fits in the 20000 most recent tokens"
    );
}

/// The skip of a session whose replay window fits in the default budget.
fn plan_skip_since_summary(session: &LoadedSession) -> Skip {
    plan(session, &Settings::new(est)).unwrap_err()
}

/// A short session has nothing to compact by the budgets; forced (`/compact
/// force`, or a focus given), everything before the last turn is
/// summarized, however little that saves.
#[test]
fn a_forced_compaction_keeps_only_the_last_turn() {
    let mut log = Log::new();
    log.user("first question");
    log.assistant("first answer");
    let last = log.user("second question");
    log.assistant("second answer");
    let session = log.load();
    assert!(matches!(
        plan(&session, &tokens(20_000)),
        Err(Skip::NothingToSummarize { .. })
    ));
    let forced = Settings {
        force: true,
        ..tokens(20_000)
    };
    let plan = plan(&session, &forced).unwrap();
    assert_eq!(plan.first_kept_event_id, last);
    assert_eq!(labels(&plan), ["user:14", "assistant:12"]);
}
