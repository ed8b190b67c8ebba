//! Continuation planning for the Responses WebSocket transport (E-MOD-12,
//! E-MOD-13, E-MOD-14): whether the next request may send only
//! `previous_response_id` plus the new user and tool input, or must carry
//! the full context.
//!
//! It owns the safe-suffix rule: continuation is offered only when the new
//! provider-neutral history is exactly the previous request's history, then
//! the answer that response produced, then nothing but new user messages and
//! tool results. Anything else (a compacted or edited history, a different
//! answer, no new input) sends the full context and says why, so metrics
//! can show when and why a continuation fell back (E-MOD-16).
//!
//! It must not know the wire JSON, the connection or the session log: it
//! compares messages and returns a plan.

use etch_model::{ContentPart, Message};

/// What the backend behind a kept connection holds: the last response that
/// finished on it and the history that produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// The finished response's id, sent back as `previous_response_id`.
    pub response_id: String,
    /// The provider-neutral messages of the request that produced it.
    pub messages: Vec<Message>,
    /// The ids of the tool calls the response made, in order; the local
    /// history must carry exactly these after `messages`.
    pub calls: Vec<String>,
}

/// How the next request is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Only `messages[from..]` as input, after `previous_response_id`.
    Delta {
        /// The response to continue.
        previous_response_id: String,
        /// The index of the first message to send.
        from: usize,
    },
    /// The whole history. `fallback` says why a possible continuation was
    /// not used; `None` when there was nothing to continue from.
    Full {
        /// Why continuation was not safe, for `lastFallback`.
        fallback: Option<String>,
    },
}

/// Plans the next request for `messages`, continuing `chain` if the history
/// is still a safe suffix of it.
pub fn plan(chain: Option<&Chain>, messages: &[Message]) -> Plan {
    let Some(chain) = chain else {
        return Plan::Full { fallback: None };
    };
    let fallback = |reason: &str| Plan::Full {
        fallback: Some(format!(
            "{reason}; sent the full context instead of continuing {}",
            chain.response_id
        )),
    };
    let Some(rest) = messages
        .strip_prefix(chain.messages.as_slice())
        .filter(|_| !chain.messages.is_empty())
    else {
        return fallback("the history changed since the previous response");
    };
    let Some((Message::Assistant { content }, after)) = rest.split_first() else {
        return fallback("the previous response's answer is not the next message");
    };
    if !same_calls(content, &chain.calls) {
        return fallback("the logged answer differs from the previous response");
    }
    let native = after
        .iter()
        .take_while(|m| matches!(m, Message::ProviderItem(_)))
        .count();
    let delta = &after[native..];
    if delta.is_empty() {
        return fallback("there is no new input");
    }
    if !delta
        .iter()
        .all(|m| matches!(m, Message::User { .. } | Message::Tool { .. }))
    {
        return fallback("the new input holds more than user messages and tool results");
    }
    Plan::Delta {
        previous_response_id: chain.response_id.clone(),
        from: messages.len() - delta.len(),
    }
}

/// Whether an assistant message's tool calls are exactly `calls`, in order.
fn same_calls(content: &[ContentPart], calls: &[String]) -> bool {
    let mut logged = content.iter().filter_map(|part| match part {
        ContentPart::ToolCall(call) => Some(call.id.as_str()),
        ContentPart::Text { .. } | ContentPart::Image(_) => None,
    });
    calls.iter().all(|id| logged.next() == Some(id.as_str())) && logged.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use etch_model::{ProviderItem, ToolCall};
    use serde_json::json;

    /// An assistant message making calls with these ids.
    fn calling(ids: &[&str]) -> Message {
        Message::Assistant {
            content: ids
                .iter()
                .map(|id| {
                    ContentPart::ToolCall(ToolCall {
                        id: (*id).into(),
                        name: "ls".into(),
                        arguments: json!({}),
                    })
                })
                .collect(),
        }
    }

    /// A tool result for `id`.
    fn result(id: &str) -> Message {
        Message::Tool {
            tool_call_id: id.into(),
            tool_name: "ls".into(),
            content: vec![ContentPart::text("a b")],
            is_error: false,
        }
    }

    /// An encrypted reasoning item as the log records it.
    fn reasoning() -> Message {
        Message::ProviderItem(ProviderItem {
            provider: "openai".into(),
            api: "responses".into(),
            item_type: "reasoning".into(),
            item: json!({"type": "reasoning", "encrypted_content": "X"}),
            model: None,
        })
    }

    /// The chain left by a first request of one user message that answered
    /// with calls `a` and `b`.
    fn chain() -> Chain {
        Chain {
            response_id: "resp_1".into(),
            messages: vec![Message::user_text("list")],
            calls: vec!["a".into(), "b".into()],
        }
    }

    /// E-MOD-12: after the answer and its reasoning, only the tool results
    /// are the delta.
    #[test]
    fn tool_results_are_the_delta() {
        let history = vec![
            Message::user_text("list"),
            calling(&["a", "b"]),
            reasoning(),
            result("a"),
            result("b"),
        ];
        assert_eq!(
            plan(Some(&chain()), &history),
            Plan::Delta {
                previous_response_id: "resp_1".into(),
                from: 3
            }
        );
    }

    /// A text answer followed by a new user prompt continues with the
    /// prompt alone.
    #[test]
    fn a_new_prompt_after_text_is_the_delta() {
        let chain = Chain {
            calls: Vec::new(),
            ..chain()
        };
        let history = vec![
            Message::user_text("list"),
            Message::Assistant {
                content: vec![ContentPart::text("done")],
            },
            Message::user_text("again"),
        ];
        assert!(matches!(
            plan(Some(&chain), &history),
            Plan::Delta { from: 2, .. }
        ));
    }

    /// Nothing to continue from: full context, no fallback.
    #[test]
    fn no_chain_is_full_without_fallback() {
        assert_eq!(
            plan(None, &[Message::user_text("hi")]),
            Plan::Full { fallback: None }
        );
    }

    /// Every unsafe shape falls back with its reason (E-MOD-13).
    #[test]
    fn unsafe_histories_fall_back_with_a_reason() {
        let cases: Vec<(Vec<Message>, &str)> = vec![
            (
                vec![
                    Message::user_text("edited"),
                    calling(&["a", "b"]),
                    result("a"),
                ],
                "history changed",
            ),
            (
                vec![Message::user_text("list"), result("a")],
                "answer is not the next message",
            ),
            (
                vec![Message::user_text("list"), calling(&["a"]), result("a")],
                "answer differs",
            ),
            (
                vec![
                    Message::user_text("list"),
                    calling(&["b", "a"]),
                    result("a"),
                ],
                "answer differs",
            ),
            (
                vec![Message::user_text("list"), calling(&["a", "b"])],
                "no new input",
            ),
            (
                vec![
                    Message::user_text("list"),
                    calling(&["a", "b"]),
                    result("a"),
                    calling(&["c"]),
                ],
                "more than user messages and tool results",
            ),
            (
                vec![Message::user_text("list")],
                "answer is not the next message",
            ),
        ];
        for (history, reason) in cases {
            match plan(Some(&chain()), &history) {
                Plan::Full {
                    fallback: Some(text),
                } => {
                    assert!(text.contains(reason), "{text} for {history:?}");
                    assert!(text.contains("resp_1"), "{text}");
                }
                other => panic!("{other:?} for {history:?}"),
            }
        }
    }
}
