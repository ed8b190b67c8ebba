//! The wire shape of a conversation message, as events and `get_messages`
//! carry it: `{"role":"user","content":[{"type":"text","text":"hi"}]}`.
//!
//! Content parts use the session log's part shapes (`text`, `tool_call`,
//! `image` by reference)
//! plus `thinking` for displayable reasoning, so a client that reads the
//! log and one that reads the protocol see the same objects. This module
//! must not know how messages are stored or sent to a provider.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation, tagged by `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(
    tag = "role",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum WireMessage {
    /// The user's prompt (or a steering or follow-up text).
    User {
        /// Text parts.
        content: Vec<WirePart>,
    },
    /// A model answer: thinking, text and tool calls.
    Assistant {
        /// The parts in the order the model produced them.
        content: Vec<WirePart>,
        /// Why the model stopped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<StopReason>,
        /// What went wrong, for a failed pass.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    /// The result of one tool call.
    ToolResult {
        /// The call this answers.
        tool_call_id: String,
        /// The tool that ran.
        tool_name: String,
        /// Result parts (text).
        content: Vec<WirePart>,
        /// Whether the tool failed.
        is_error: bool,
    },
}

/// One part of a message, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WirePart {
    /// Text.
    Text {
        /// The text, verbatim.
        text: String,
    },
    /// Displayable reasoning.
    Thinking {
        /// The reasoning text.
        thinking: String,
    },
    /// A tool call the model asked for.
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments: a JSON object, or a string holding unparseable text.
        arguments: Value,
    },
    /// An image the user attached or a tool returned, by reference: its
    /// bytes stay in the session's assets
    /// (`<session>.assets/<sha256>.<ext>`), out of every event.
    Image {
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        #[serde(rename = "mediaType")]
        media_type: String,
        /// The SHA-256 of the bytes, in lowercase hex.
        sha256: String,
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
}

/// Why a model pass ended (the session log's `stopReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The model finished its answer.
    Stop,
    /// The output token limit cut the answer.
    Length,
    /// The model asked for tools.
    ToolUse,
    /// The pass failed.
    Error,
    /// The pass was cancelled.
    Aborted,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each role's JSON shape, both ways.
    #[test]
    fn messages_round_trip() {
        let cases = [
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "let me look"},
                {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "a"}}
            ], "stopReason": "toolUse"}),
            json!({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "boom"}),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                   "content": [{"type": "text", "text": "x"}], "isError": false}),
        ];
        for case in cases {
            let message: WireMessage = serde_json::from_value(case.clone()).unwrap();
            assert_eq!(serde_json::to_value(&message).unwrap(), case);
        }
        assert!(
            serde_json::from_value::<WireMessage>(json!({"role": "system", "content": []}))
                .is_err()
        );
    }
}
