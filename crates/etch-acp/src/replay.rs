//! `session/load`: an etch session's active branch told again as the
//! updates a client would have seen live, so an editor shows the whole
//! conversation: the user's prompts, the answers and reasoning, each
//! tool call with its result.
//!
//! This module must not know how updates are sent.

use agent_client_protocol_schema::v1::SessionUpdate;
use etch_session::LoadedSession;
use serde_json::Value;

use crate::update::{Updates, chunk};

/// The text of every `text` part of `content`.
fn texts(content: &Value) -> Vec<&str> {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str())
        .collect()
}

/// The updates replaying `loaded`'s active branch.
pub fn replay(loaded: &LoadedSession, updates: &mut Updates) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    for event in loaded.active_events() {
        let Ok(data) = serde_json::from_str::<Value>(event.data.get()) else {
            continue;
        };
        match event.kind.as_str() {
            "message.user" => out.extend(
                texts(&data["content"])
                    .iter()
                    .map(|t| SessionUpdate::UserMessageChunk(chunk(t))),
            ),
            "message.assistant" => {
                for part in data["content"].as_array().into_iter().flatten() {
                    match part["type"].as_str() {
                        Some("text") => out.push(SessionUpdate::AgentMessageChunk(chunk(
                            part["text"].as_str().unwrap_or_default(),
                        ))),
                        Some("thinking") => out.push(SessionUpdate::AgentThoughtChunk(chunk(
                            part["thinking"]
                                .as_str()
                                .or_else(|| part["text"].as_str())
                                .unwrap_or_default(),
                        ))),
                        Some("tool_call") => out.push(updates.announce(
                            part["id"].as_str().unwrap_or_default(),
                            part["name"].as_str().unwrap_or_default(),
                            &part["arguments"],
                        )),
                        _ => {}
                    }
                }
            }
            "model.reasoning" => {
                if let Some(text) = data["text"].as_str().filter(|t| !t.is_empty()) {
                    out.push(SessionUpdate::AgentThoughtChunk(chunk(text)));
                }
            }
            "message.tool" => {
                let text = texts(&data["content"]).join("\n");
                out.push(updates.finish(
                    data["toolCallId"].as_str().unwrap_or_default(),
                    &text,
                    data["isError"].as_bool().unwrap_or(false),
                    data.get("details"),
                ));
            }
            _ => {}
        }
    }
    out
}
