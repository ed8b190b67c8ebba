//! What the chat takes from a session's log when it resumes one: the
//! recent transcript of the active branch as blocks (reasoning included,
//! E-CHAT-19 in docs/requirements.md), the prompt history (the branch's
//! `message.user` texts, E-CHAT-07) and the footer's counters from the
//! session's totals (E-CHAT-16). This module must not know about the
//! terminal.

use std::collections::HashMap;

use etch_protocol::{ReplayEntry, UsageRecord};

use crate::app::Counters;
use crate::app::footer::{Price, price_of};
use crate::render::blocks::{Block, Level};
use crate::render::tools::ToolView;

/// How many entries (messages and reasoning) of the branch's end are
/// drawn again.
pub const RECENT_EVENTS: usize = 60;

/// What a resumed chat asks of a session: the entries it draws, and the
/// usage records only when it prices requests.
pub fn scope(prices: &[(String, Price)]) -> etch_runtime::projection::Scope {
    etch_runtime::projection::Scope {
        recent: Some(RECENT_EVENTS),
        usage: !prices.is_empty(),
    }
}

/// The replay of a session.
#[derive(Debug, Default)]
pub struct Replay {
    /// Recent blocks, oldest first.
    pub blocks: Vec<Block>,
    /// Prompts of the branch, oldest first.
    pub history: Vec<String>,
    /// Counters from the whole log.
    pub counters: Counters,
}

/// The replay of `session` (the runtime's projection), its cost priced
/// with `prices` (model name, price; the last entry for a name wins).
pub fn replay(session: &etch_protocol::Replay, prices: &[(String, Price)]) -> Replay {
    let history = session.prompts.clone();
    let t = &session.totals;
    let counters = Counters {
        input: t.input_tokens,
        output: t.output_tokens,
        cached: t.cached_input_tokens,
        requests: t.model_requests,
        up: t.request_bytes,
        down: t.response_bytes,
        last_input: 0,
        ..cost(&session.usage, prices)
    };
    Replay {
        blocks: blocks(&session.entries, session.earlier),
        history,
        counters,
    }
}

/// What the session's requests cost, each priced with the model in use
/// when it was made; requests of models without a price are left out.
fn cost(usage: &[UsageRecord], prices: &[(String, Price)]) -> Counters {
    let mut counters = Counters::default();
    for record in usage {
        if let Some(price) = price_of(prices, &record.model) {
            counters.cost += price.cost(
                record.input_tokens,
                record.cached_input_tokens,
                record.output_tokens,
            );
            counters.priced = true;
        }
    }
    Counters {
        cost: counters.cost,
        priced: counters.priced,
        ..Counters::default()
    }
}

/// A tool result as the blocks need it: text, whether it failed, its
/// details and its images.
type Result<'a> = (
    &'a str,
    bool,
    Option<&'a serde_json::Value>,
    &'a [etch_protocol::ReplayImage],
);

/// The entries as blocks, after a line saying how many `earlier` ones
/// were left out, if any.
pub fn blocks(entries: &[ReplayEntry], earlier: usize) -> Vec<Block> {
    let mut blocks = Vec::new();
    if earlier > 0 {
        blocks.push(Block::Notice(
            Level::Info,
            format!("… {earlier} earlier events (etch show has them all)"),
        ));
    }
    // Results by call id, so each batch is drawn whole where its calls are.
    let results: HashMap<&str, Result<'_>> = entries
        .iter()
        .filter_map(|e| match e {
            ReplayEntry::ToolResult {
                tool_call_id,
                text,
                is_error,
                details,
                images,
            } => Some((
                tool_call_id.as_str(),
                (
                    text.as_str(),
                    *is_error,
                    details.as_ref(),
                    images.as_slice(),
                ),
            )),
            _ => None,
        })
        .collect();
    for entry in entries {
        match entry {
            ReplayEntry::User { text, images } => {
                blocks.push(Block::User(text.clone()));
                if !images.is_empty() {
                    blocks.push(Block::Images(images.clone()));
                }
            }
            ReplayEntry::Reasoning { text } => blocks.push(Block::Reasoning(text.clone())),
            ReplayEntry::Assistant {
                text,
                aborted,
                error,
                tool_calls,
            } => {
                if !text.trim().is_empty() {
                    blocks.push(Block::Assistant(text.clone()));
                    if *aborted {
                        blocks.push(Block::Notice(
                            Level::Info,
                            "interrupted: the answer above is partial".to_owned(),
                        ));
                    }
                }
                if let Some(error) = error {
                    blocks.push(Block::Notice(Level::Error, error.clone()));
                }
                let calls: Vec<ToolView> = tool_calls
                    .iter()
                    .map(|call| {
                        let result = results.get(call.id.as_str());
                        ToolView {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            args: call.arguments.clone(),
                            result: Some(
                                result.map_or_else(|| "(no result)".to_owned(), |r| r.0.to_owned()),
                            ),
                            is_error: result.is_some_and(|r| r.1),
                            duration_ms: 0,
                            details: result.and_then(|r| r.2.cloned()),
                        }
                    })
                    .collect();
                let images: Vec<etch_protocol::ReplayImage> = tool_calls
                    .iter()
                    .filter_map(|call| results.get(call.id.as_str()))
                    .flat_map(|r| r.3.iter().cloned())
                    .collect();
                if !calls.is_empty() {
                    blocks.push(Block::Tools(calls));
                }
                if !images.is_empty() {
                    blocks.push(Block::Images(images));
                }
            }
            ReplayEntry::ToolResult { .. } => {}
        }
    }
    blocks
}

#[cfg(test)]
mod tests {
    use etch_protocol::UsageRecord;

    use super::*;

    /// A resumed session's cost prices each request with the model in use
    /// when it was made; a model without a price adds nothing.
    #[test]
    fn the_cost_follows_the_model_of_each_request() {
        let record = |model: &str| UsageRecord {
            model: model.to_owned(),
            input_tokens: 1_000_000,
            cached_input_tokens: 0,
            output_tokens: 0,
        };
        let session = etch_protocol::Replay {
            usage: vec![record("cheap"), record("dear"), record("unpriced")],
            totals: etch_protocol::Totals {
                input_tokens: 3_000_000,
                ..etch_protocol::Totals::default()
            },
            ..etch_protocol::Replay::default()
        };
        let price = |input| Price {
            input,
            output: 0.0,
            cached_input: None,
        };
        let prices = vec![
            ("cheap".to_owned(), price(1.0)),
            ("dear".to_owned(), price(10.0)),
        ];
        let counters = replay(&session, &prices).counters;
        assert!(counters.priced);
        assert!((counters.cost - 11.0).abs() < 1e-9, "{}", counters.cost);
        assert_eq!(counters.input, 3_000_000);
        let unpriced = replay(&session, &[]).counters;
        assert!(!unpriced.priced);
    }

    /// Only the last entries are drawn, with a line saying how many were
    /// left out; a call is drawn with its result.
    #[test]
    fn the_recent_entries_are_drawn_with_their_results() {
        let mut entries: Vec<ReplayEntry> = (0..5)
            .map(|i| ReplayEntry::User {
                text: format!("p{i}"),
                images: Vec::new(),
            })
            .collect();
        entries.push(ReplayEntry::Assistant {
            text: String::new(),
            aborted: false,
            error: None,
            tool_calls: vec![etch_protocol::ReplayCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: serde_json::json!({}),
            }],
        });
        entries.push(ReplayEntry::ToolResult {
            tool_call_id: "c1".into(),
            text: "A".into(),
            is_error: true,
            details: None,
            images: Vec::new(),
        });
        let drawn = blocks(&entries[4..], 4);
        assert!(matches!(&drawn[0], Block::Notice(_, t) if t.starts_with("… 4 earlier")));
        assert!(matches!(&drawn[1], Block::User(t) if t == "p4"));
        match &drawn[2] {
            Block::Tools(calls) => {
                assert_eq!(calls[0].result.as_deref(), Some("A"));
                assert!(calls[0].is_error);
            }
            other => panic!("{other:?}"),
        }
    }
}
