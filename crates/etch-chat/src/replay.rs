//! What the chat takes from a session's log when it resumes one: the
//! recent transcript of the active branch as blocks (reasoning included,
//! E-CHAT-19 in docs/requirements.md), the prompt history (the branch's
//! `message.user` texts, E-CHAT-07) and the footer's counters from the
//! session's totals (E-CHAT-16). This module must not know about the
//! terminal.

use std::collections::HashMap;

use etch_model::ContentPart;
use etch_session::event::{AssistantData, ReasoningData, ToolData, UserData};
use etch_session::{LoadedSession, session_stats, types};

use crate::app::Counters;
use crate::app::footer::{Price, price_of};
use crate::render::blocks::{Block, Level};
use crate::render::tools::ToolView;

/// How many message events of the branch's end are drawn again.
pub const RECENT_EVENTS: usize = 60;

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

/// The replay of `session`, its cost priced with `prices` (model name,
/// price; the last entry for a name wins).
pub fn replay(session: &LoadedSession, prices: &[(String, Price)]) -> Replay {
    let blocks = blocks(session, Some(RECENT_EVENTS));
    let events: Vec<_> = session.active_events().collect();
    let mut history = Vec::new();
    for event in &events {
        if event.kind == types::MESSAGE_USER
            && let Ok(data) = event.parse_data::<UserData>()
        {
            history.push(text(&data.content));
        }
    }
    let stats = session_stats(session);
    let counters = Counters {
        input: stats.usage.input_tokens,
        output: stats.usage.output_tokens,
        cached: stats.usage.cached_input_tokens,
        requests: stats.model_requests,
        up: stats.transport.request_bytes,
        down: stats.transport.response_bytes,
        last_input: 0,
        ..cost(session, prices)
    };
    Replay {
        blocks,
        history,
        counters,
    }
}

/// What the session's requests cost, each priced with the model in use
/// when it was made (the last model named before its usage record);
/// requests of models without a price are left out.
fn cost(session: &LoadedSession, prices: &[(String, Price)]) -> Counters {
    let mut counters = Counters::default();
    if prices.is_empty() {
        return counters;
    }
    let mut model = String::new();
    for event in &session.events {
        match event.kind.as_str() {
            types::SESSION_STARTED | types::MODEL_CHANGE | types::MESSAGE_ASSISTANT => {
                if let Ok(data) = event.parse_data::<serde_json::Value>()
                    && let Some(name) = data.get("model").and_then(serde_json::Value::as_str)
                {
                    name.clone_into(&mut model);
                }
            }
            types::MODEL_USAGE => {
                if let Ok(usage) = event.parse_data::<serde_json::Value>() {
                    counters.usage(&usage, price_of(prices, &model));
                }
            }
            _ => {}
        }
    }
    Counters {
        cost: counters.cost,
        priced: counters.priced,
        ..Counters::default()
    }
}

/// The active branch of `session` as blocks, the last `recent` message
/// events only when given (with a line saying how many were left out).
pub fn blocks(session: &LoadedSession, recent: Option<usize>) -> Vec<Block> {
    let events: Vec<_> = session.active_events().collect();
    let messages: Vec<_> = events
        .iter()
        .filter(|e| {
            matches!(
                e.kind.as_str(),
                types::MESSAGE_USER
                    | types::MESSAGE_ASSISTANT
                    | types::MESSAGE_TOOL
                    | types::MODEL_REASONING
            )
        })
        .collect();
    let skip = recent.map_or(0, |recent| messages.len().saturating_sub(recent));
    let mut blocks = Vec::new();
    if skip > 0 {
        blocks.push(Block::Notice(
            Level::Info,
            format!("… {skip} earlier events (etch show has them all)"),
        ));
    }
    // Results by call id, so each batch is drawn whole where its calls are.
    let mut results: HashMap<String, ToolData> = HashMap::new();
    for event in &messages[skip..] {
        if event.kind == types::MESSAGE_TOOL
            && let Ok(data) = event.parse_data::<ToolData>()
        {
            results.insert(data.tool_call_id.clone(), data);
        }
    }
    for event in &messages[skip..] {
        match event.kind.as_str() {
            types::MESSAGE_USER => {
                if let Ok(data) = event.parse_data::<UserData>() {
                    blocks.push(Block::User(text(&data.content)));
                }
            }
            types::MODEL_REASONING => {
                if let Ok(data) = event.parse_data::<ReasoningData>() {
                    blocks.push(Block::Reasoning(data.text));
                }
            }
            types::MESSAGE_ASSISTANT => {
                let Ok(data) = event.parse_data::<AssistantData>() else {
                    continue;
                };
                let answer = text(&data.content);
                if !answer.trim().is_empty() {
                    blocks.push(Block::Assistant(answer));
                    if data.stop_reason == etch_model::StopReason::Aborted {
                        blocks.push(Block::Notice(
                            Level::Info,
                            "interrupted: the answer above is partial".to_owned(),
                        ));
                    }
                }
                if let Some(error) = data.error_message {
                    blocks.push(Block::Notice(Level::Error, error));
                }
                let calls: Vec<ToolView> = data
                    .content
                    .iter()
                    .filter_map(|part| match part {
                        ContentPart::ToolCall(call) => {
                            let result = results.get(&call.id);
                            Some(ToolView {
                                id: call.id.clone(),
                                name: call.name.clone(),
                                args: call.arguments.clone(),
                                result: Some(result.map_or_else(
                                    || "(no result)".to_owned(),
                                    |r| text(&r.content),
                                )),
                                is_error: result.is_some_and(|r| r.is_error),
                                duration_ms: 0,
                                details: result.and_then(|r| r.details.clone()),
                            })
                        }
                        ContentPart::Text { .. } => None,
                    })
                    .collect();
                if !calls.is_empty() {
                    blocks.push(Block::Tools(calls));
                }
            }
            _ => {}
        }
    }
    blocks
}

/// The text parts of a message.
fn text(content: &[ContentPart]) -> String {
    content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(text.as_str()),
            ContentPart::ToolCall(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use etch_session::{SessionWriter, load_session, types};
    use serde_json::json;

    use super::*;

    /// A resumed session's cost prices each request with the model in use
    /// when it was made; a model without a price adds nothing.
    #[test]
    fn the_cost_follows_the_model_of_each_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "").unwrap();
        let mut writer = SessionWriter::open(&path, "s1", None).unwrap();
        let mut add = |kind: &str, data: serde_json::Value| {
            writer.append(kind, &data).unwrap();
        };
        add(
            types::SESSION_STARTED,
            json!({"sessionId": "s1", "formatVersion": 1, "cwd": "/", "etchVersion": "0", "provider": "openai", "model": "cheap"}),
        );
        add(
            types::MODEL_USAGE,
            json!({"inputTokens": 1_000_000, "outputTokens": 0}),
        );
        add(
            types::MODEL_CHANGE,
            json!({"provider": "openai", "model": "dear"}),
        );
        add(
            types::MODEL_USAGE,
            json!({"inputTokens": 1_000_000, "outputTokens": 0}),
        );
        add(
            types::MODEL_CHANGE,
            json!({"provider": "openai", "model": "unpriced"}),
        );
        add(
            types::MODEL_USAGE,
            json!({"inputTokens": 1_000_000, "outputTokens": 0}),
        );
        let session = load_session(&path).unwrap();
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
}
