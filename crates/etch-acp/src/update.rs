//! A session's events as ACP `session/update`s: streamed answer and
//! reasoning text as message and thought chunks, each tool call as a
//! `tool_call` when the model asks for it (pending), then updates as it
//! starts, reports progress and ends (completed or failed, with its
//! result or diff). It keeps the calls of the run, since a call's
//! arguments come with the model's message and its result much later.
//!
//! This module must not know how updates are sent or what a turn is.

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, SessionUpdate, TextContent, ToolCall, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields,
};
use etch_protocol::{Delta, EventBody, WireMessage, WirePart};
use serde_json::{Value, json};

use crate::toolcall;

/// Turns one session's events into updates.
#[derive(Debug)]
pub struct Updates {
    /// Where the session runs, for the paths of locations and diffs.
    cwd: PathBuf,
    /// The calls seen so far: tool name and arguments by call id.
    calls: HashMap<String, (String, Value)>,
}

/// A text chunk.
pub fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

impl Updates {
    /// Updates for a session in `cwd`.
    pub fn new(cwd: PathBuf) -> Self {
        Self {
            cwd,
            calls: HashMap::new(),
        }
    }

    /// The tool call announcement for call `id` of `name` with `args`.
    pub fn announce(&mut self, id: &str, name: &str, args: &Value) -> SessionUpdate {
        SessionUpdate::ToolCall(self.call(id, name, args, ToolCallStatus::Pending))
    }

    /// Call `id` of `name` with `args`, in `status`, kept for its end.
    fn call(&mut self, id: &str, name: &str, args: &Value, status: ToolCallStatus) -> ToolCall {
        self.calls
            .insert(id.to_owned(), (name.to_owned(), args.clone()));
        ToolCall::new(id.to_owned(), toolcall::title(name, args))
            .name(name.to_owned())
            .kind(toolcall::kind(name))
            .status(status)
            .locations(toolcall::locations(name, args, &self.cwd))
            .raw_input(args.clone())
    }

    /// The update ending call `id`.
    pub fn finish(
        &mut self,
        id: &str,
        result: &str,
        is_error: bool,
        details: Option<&Value>,
    ) -> SessionUpdate {
        let (name, args) = self.calls.remove(id).unwrap_or_default();
        let status = if is_error {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        let content = toolcall::result(&name, &args, &self.cwd, result, is_error, details);
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_owned(),
            ToolCallUpdateFields::new()
                .status(status)
                .content(content)
                .raw_output(json!({"output": result, "isError": is_error})),
        ))
    }

    /// The updates one event makes (most make none).
    pub fn of(&mut self, body: &EventBody) -> Vec<SessionUpdate> {
        match body {
            EventBody::MessageUpdate {
                delta: Delta::TextDelta { delta },
            } => vec![SessionUpdate::AgentMessageChunk(chunk(delta))],
            EventBody::MessageUpdate {
                delta: Delta::ThinkingDelta { delta },
            } => vec![SessionUpdate::AgentThoughtChunk(chunk(delta))],
            EventBody::MessageEnd {
                message: WireMessage::Assistant { content, .. },
            } => content
                .iter()
                .filter_map(|part| match part {
                    WirePart::ToolCall {
                        id,
                        name,
                        arguments,
                    } => Some(self.announce(id, name, arguments)),
                    _ => None,
                })
                .collect(),
            EventBody::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                if self.calls.contains_key(tool_call_id) {
                    vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        tool_call_id.clone(),
                        ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                    ))]
                } else {
                    // A call the model's message did not announce (none
                    // today): announce it as running.
                    vec![SessionUpdate::ToolCall(self.call(
                        tool_call_id,
                        tool_name,
                        args,
                        ToolCallStatus::InProgress,
                    ))]
                }
            }
            EventBody::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
            } => vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                tool_call_id.clone(),
                ToolCallUpdateFields::new().content(vec![toolcall::text(partial_result)]),
            ))],
            EventBody::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                details,
                ..
            } => vec![self.finish(tool_call_id, result, *is_error, details.as_ref())],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON of an update, as the client reads it.
    fn json_of(update: &SessionUpdate) -> Value {
        serde_json::to_value(update).unwrap()
    }

    /// Text and reasoning stream as chunks; a call is announced pending,
    /// then runs, then completes with its text.
    #[test]
    fn a_turn_becomes_chunks_and_tool_calls() {
        let mut updates = Updates::new(PathBuf::from("/w"));
        let text = updates.of(&EventBody::MessageUpdate {
            delta: Delta::TextDelta {
                delta: "Hel".into(),
            },
        });
        assert_eq!(
            json_of(&text[0]),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}})
        );
        let thought = updates.of(&EventBody::MessageUpdate {
            delta: Delta::ThinkingDelta { delta: "hm".into() },
        });
        assert_eq!(json_of(&thought[0])["sessionUpdate"], "agent_thought_chunk");
        let asked = updates.of(&EventBody::MessageEnd {
            message: WireMessage::Assistant {
                content: vec![WirePart::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.rs"}),
                }],
                stop_reason: None,
                error_message: None,
            },
        });
        let call = json_of(&asked[0]);
        assert_eq!(call["sessionUpdate"], "tool_call");
        assert_eq!(call["toolCallId"], "c1");
        assert_eq!(call["title"], "Read a.rs");
        assert_eq!(call["kind"], "read");
        // Pending is ACP's default status, left out on the wire.
        assert!(
            call["status"].is_null() || call["status"] == "pending",
            "{call}"
        );
        assert_eq!(call["locations"][0]["path"], "/w/a.rs");
        assert_eq!(call["rawInput"]["path"], "a.rs");
        let started = updates.of(&EventBody::ToolExecutionStart {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            args: json!({"path": "a.rs"}),
        });
        assert_eq!(
            json_of(&started[0]),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"})
        );
        let ended = updates.of(&EventBody::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            result: "1\tfn main() {}".into(),
            is_error: false,
            duration_ms: 1,
            details: None,
        });
        let ended = json_of(&ended[0]);
        assert_eq!(ended["status"], "completed");
        assert_eq!(ended["content"][0]["content"]["text"], "1\tfn main() {}");
        assert!(updates.of(&EventBody::TurnStart { round: 1 }).is_empty());
    }
}
