//! Token estimates of messages and of the whole context (C22).
//!
//! The context estimate follows Pi's method where the provider reported
//! usage: the last trustworthy `model.usage` total after the active summary,
//! plus estimates of the messages after it. Without such usage, every
//! projected message is estimated. The per-text estimator is handed in; this
//! module only decides what text a message is made of.

use etch_model::{ContentPart, Message, StopReason, Usage};
use etch_session::{AssistantData, LoadedSession, project_messages, types};

use crate::settings::Estimator;
use crate::window::{Branch, failed, replayed_message};

/// Estimated tokens of one message: its text parts, and for each tool call
/// its name plus its JSON arguments. Provider items are opaque replay state
/// with no text to measure, so they count as nothing.
pub fn message_tokens(message: &Message, estimate: Estimator) -> u64 {
    let parts = match message {
        Message::User { content }
        | Message::Assistant { content }
        | Message::Tool { content, .. } => content,
        Message::ProviderItem(_) => return 0,
    };
    parts
        .iter()
        .map(|part| match part {
            ContentPart::Text { text } => estimate(text),
            ContentPart::ToolCall(call) => {
                estimate(&call.name) + estimate(&call.arguments.to_string())
            }
            ContentPart::Image(image) => image.estimated_tokens(),
        })
        .sum()
}

/// The provider-reported size of the context at one point of the branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Anchor {
    /// Position of the `model.usage` event in the branch path.
    pub(crate) pos: usize,
    /// Its token total: `totalTokens`, or input plus output when that is 0.
    pub(crate) tokens: u64,
}

/// Finds the last `model.usage` after the active summary that belongs to a
/// pass which did not fail: the nearest message event before it must be an
/// assistant message whose stop reason is not `error` or `aborted`. Usage
/// The `purpose` a summary request's records carry (see `crate::spent`).
#[derive(serde::Deserialize)]
struct Marked {
    /// `compaction`, `branch_summary`; none on a conversation's pass.
    purpose: Option<String>,
}

/// from before the summary measured a context that no longer exists.
pub(crate) fn usage_anchor(branch: &Branch<'_>) -> Option<Anchor> {
    let floor = branch.summary_pos().map_or(0, |pos| pos + 1);
    let path = &branch.path;
    (floor..path.len()).rev().find_map(|pos| {
        if path[pos].kind != types::MODEL_USAGE {
            return None;
        }
        let usage = path[pos].parse_data::<Usage>().ok()?;
        // A summary request's usage measured the summary's request, not
        // the conversation.
        if path[pos]
            .parse_data::<Marked>()
            .is_ok_and(|m| m.purpose.is_some())
        {
            return None;
        }
        let pass = path[floor..pos].iter().rev().find(|e| {
            matches!(
                e.kind.as_str(),
                types::MESSAGE_USER | types::MESSAGE_ASSISTANT | types::MESSAGE_TOOL
            )
        })?;
        if pass.kind != types::MESSAGE_ASSISTANT {
            return None;
        }
        let stop = pass
            .parse_data::<AssistantData>()
            .map_or(StopReason::Error, |d| d.stop_reason);
        if failed(stop) {
            return None;
        }
        let tokens = if usage.total_tokens > 0 {
            usage.total_tokens
        } else {
            usage.input_tokens + usage.output_tokens
        };
        Some(Anchor { pos, tokens })
    })
}

/// Estimated tokens of the context the next request would carry (C22): the
/// last non-error usage total after the active summary plus the estimator over
/// the message events after it; without such usage, the estimator over the
/// whole projection (the summary message included).
pub fn estimate_context(session: &LoadedSession, estimate: Estimator) -> u64 {
    let branch = Branch::of(session);
    let anchor = usage_anchor(&branch);
    context_tokens(session, &branch, anchor, estimate)
}

/// The estimate the automatic threshold is compared with (E-CTX-16): like
/// [`estimate_context`], but a session without trustworthy usage also counts
/// `pinned_tokens` (system prompt and tool schemas), which a provider's usage
/// total already includes.
pub fn estimate_request(session: &LoadedSession, estimate: Estimator, pinned_tokens: u64) -> u64 {
    let branch = Branch::of(session);
    let anchor = usage_anchor(&branch);
    let pinned = if anchor.is_some() { 0 } else { pinned_tokens };
    context_tokens(session, &branch, anchor, estimate) + pinned
}

/// [`estimate_context`] for a branch already split at its summary, with its
/// usage anchor already found.
pub(crate) fn context_tokens(
    session: &LoadedSession,
    branch: &Branch<'_>,
    anchor: Option<Anchor>,
    estimate: Estimator,
) -> u64 {
    match anchor {
        Some(anchor) => {
            let after: u64 = branch.path[anchor.pos + 1..]
                .iter()
                .filter_map(|e| replayed_message(e))
                .map(|m| message_tokens(&m, estimate))
                .sum();
            anchor.tokens + after
        }
        None => project_messages(session)
            .messages
            .iter()
            .map(|m| message_tokens(m, estimate))
            .sum(),
    }
}

#[cfg(test)]
mod tests {
    use etch_model::{ContentPart, Message, ToolCall};
    use serde_json::json;

    use super::*;
    use crate::test_support::{Log, assistant_calls, assistant_failed, assistant_text, est, usage};

    /// Text parts and tool calls (name plus JSON arguments) are measured.
    #[test]
    fn message_tokens_count_text_and_calls() {
        let message = Message::Assistant {
            content: vec![
                ContentPart::text("abcdefgh"),
                ContentPart::ToolCall(ToolCall {
                    id: "c".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                }),
            ],
        };
        // 8 chars -> 2, "read" -> 1, {"path":"a"} (12 chars) -> 3.
        assert_eq!(message_tokens(&message, est), 6);
    }

    /// Without usage, the whole projection is estimated.
    #[test]
    fn without_usage_the_projection_is_estimated() {
        let mut log = Log::new();
        log.user(&"u".repeat(40));
        log.append(types::MESSAGE_ASSISTANT, &assistant_text(&"a".repeat(80)));
        let session = log.load();
        assert_eq!(estimate_context(&session, est), 10 + 20);
    }

    /// The request estimate adds the pinned context only when no usage
    /// total (which already contains it) is known.
    #[test]
    fn request_estimate_adds_pinned_without_usage() {
        let mut log = Log::new();
        log.user(&"u".repeat(40));
        let session = log.load();
        assert_eq!(estimate_request(&session, est, 500), 500 + 10);
        log.append(types::MESSAGE_ASSISTANT, &assistant_text("done"));
        log.append(types::MODEL_USAGE, &usage(1000, 0, 0));
        let session = log.load();
        assert_eq!(estimate_request(&session, est, 500), 1000);
    }

    /// With usage, its total plus the messages after it; usage of a failed
    /// pass is not trusted, and usage before the active summary is ignored.
    #[test]
    fn usage_total_plus_trailing_messages() {
        let mut log = Log::new();
        log.user(&"u".repeat(40));
        log.append(types::MESSAGE_ASSISTANT, &assistant_text("done"));
        log.append(types::MODEL_USAGE, &usage(1000, 0, 0));
        log.user(&"v".repeat(40));
        // A failed pass with usage: its partial text and usage do not count.
        log.append(
            types::MESSAGE_ASSISTANT,
            &assistant_failed(&"x".repeat(400)),
        );
        log.append(types::MODEL_USAGE, &usage(5000, 0, 5000));
        log.user(&"w".repeat(8));
        let session = log.load();
        assert_eq!(estimate_context(&session, est), 1000 + 10 + 2);

        // totalTokens of 0 falls back to input + output.
        let mut log = Log::new();
        log.user("hi");
        log.append(
            types::MESSAGE_ASSISTANT,
            &assistant_calls(&[("c1", "ls", json!({}))]),
        );
        log.append(types::MODEL_USAGE, &usage(0, 300, 20));
        log.tool("c1", "ls", &"r".repeat(40));
        let session = log.load();
        assert_eq!(estimate_context(&session, est), 320 + 10);
    }

    /// A summary request's usage (marked with its purpose) measured that
    /// request, not the conversation: the pass's usage before it counts.
    #[test]
    fn a_summary_requests_usage_is_not_the_context() {
        let mut log = Log::new();
        log.user(&"u".repeat(40));
        log.append(types::MESSAGE_ASSISTANT, &assistant_text("done"));
        log.append(types::MODEL_USAGE, &usage(1000, 0, 0));
        let mut marked = serde_json::to_value(usage(7000, 0, 0)).unwrap();
        marked["purpose"] = json!("branch_summary");
        log.append(types::MODEL_USAGE, &marked);
        let session = log.load();
        assert_eq!(estimate_context(&session, est), 1000);
    }

    /// Usage from before the active summary measured a context that is gone.
    #[test]
    fn usage_before_the_summary_is_ignored() {
        let mut log = Log::new();
        log.user("old");
        log.append(types::MESSAGE_ASSISTANT, &assistant_text("answer"));
        log.append(types::MODEL_USAGE, &usage(90_000, 0, 0));
        let kept = log.user(&"k".repeat(40));
        log.summary("S", &kept);
        let session = log.load();
        let wrapper = etch_session::projection::summary_message("S");
        assert_eq!(
            estimate_context(&session, est),
            message_tokens(&wrapper, est) + 10
        );
    }
}
