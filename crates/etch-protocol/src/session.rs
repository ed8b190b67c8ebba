//! What a front end learns about stored sessions without reading them:
//! the sessions of a directory ([`SessionSummary`]), a session's active
//! branch told again ([`Replay`], for the chat's scrollback on resume and
//! ACP's `session/load`), its conversation tree ([`TreeRow`]), the points
//! a fork can start from ([`ForkPoint`]) and its usage ([`UsageRecord`],
//! [`Totals`]).
//!
//! The runtime projects these from the session log; a front end draws
//! them. They are plain data, so a remote front end receives the same
//! values over the wire (camelCase, like the rest of the protocol).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One stored session, as a list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// Session id.
    pub id: String,
    /// The session file.
    pub path: String,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// The working directory it ran in.
    pub cwd: String,
    /// Its title (the first prompt, or a name given later).
    pub title: String,
    /// The session it was forked or delegated from, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// One entry of a session's active branch, in log order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReplayEntry {
    /// A prompt (or text a hook added as the user).
    User {
        /// Its text parts, joined by newlines (each image as a marker
        /// line).
        text: String,
        /// The images attached to it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ReplayImage>,
    },
    /// Reasoning the model showed.
    Reasoning {
        /// The reasoning text.
        text: String,
    },
    /// A model answer.
    #[serde(rename_all = "camelCase")]
    Assistant {
        /// Its text parts, joined by newlines.
        text: String,
        /// Whether the user interrupted it (the text is partial).
        aborted: bool,
        /// The error the answer ended with, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The tool calls it made, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ReplayCall>,
    },
    /// A tool result.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        /// The call it answers.
        tool_call_id: String,
        /// Its text parts, joined by newlines.
        text: String,
        /// Whether the tool failed.
        is_error: bool,
        /// Structured details (a diff, a subagent's outcome).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        /// The images it returned.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ReplayImage>,
    },
}

/// An image of a replayed message, with the file its bytes are in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReplayImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The SHA-256 of the bytes.
    pub sha256: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The file in the session's assets holding the bytes.
    pub path: String,
}

/// A tool call of an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReplayCall {
    /// The call id its result names.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments as the model sent them.
    pub arguments: Value,
}

/// The tokens of one request, with the model in use when it was made
/// (a front end prices it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageRecord {
    /// The model named last before the record.
    pub model: String,
    /// Input tokens (cached ones included).
    pub input_tokens: u64,
    /// Input tokens served from the provider's cache.
    pub cached_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

/// A session's counters over its whole log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cached input tokens.
    pub cached_input_tokens: u64,
    /// Model requests made.
    pub model_requests: u64,
    /// Bytes sent to the model server.
    pub request_bytes: u64,
    /// Bytes received from it.
    pub response_bytes: u64,
}

/// A session told again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Replay {
    /// The session id.
    pub session_id: String,
    /// The session file.
    pub session_file: String,
    /// The working directory it started in.
    pub cwd: String,
    /// The provider and model it started with.
    pub provider: String,
    /// The model it started with.
    pub model: String,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// The active branch's messages and reasoning, oldest first: the
    /// last ones only when fewer were asked for.
    pub entries: Vec<ReplayEntry>,
    /// How many entries of the branch came before `entries` and were
    /// left out.
    #[serde(default)]
    pub earlier: usize,
    /// Every prompt of the branch, oldest first (a front end's prompt
    /// history), also those left out of `entries`.
    #[serde(default)]
    pub prompts: Vec<String>,
    /// Every usage record of the log, oldest first (when asked for).
    pub usage: Vec<UsageRecord>,
    /// The whole log's counters.
    pub totals: Totals,
}

/// One row of a session's conversation tree: prompts and answers in file
/// order, depth-first from the root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TreeRow {
    /// The event id (what `navigate` takes).
    pub id: String,
    /// Its parent event, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Whether it is a prompt (else an answer).
    pub is_user: bool,
    /// The first non-empty line of its text.
    pub text: String,
    /// The whole text (a prompt goes back to the editor).
    pub full_text: String,
    /// Branch points passed on the way from the root.
    pub depth: usize,
    /// Whether it is on the active branch.
    pub active: bool,
}

/// A prompt of the active branch a fork can start before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ForkPoint {
    /// The prompt's event id (what `fork` takes).
    pub entry_id: String,
    /// Its text.
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The wire shapes are camelCase and tagged, as the rest of the
    /// protocol.
    #[test]
    fn entries_round_trip_in_their_wire_shape() {
        let entry = ReplayEntry::Assistant {
            text: "hi".into(),
            aborted: false,
            error: None,
            tool_calls: vec![ReplayCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
            }],
        };
        let value = serde_json::to_value(&entry).unwrap();
        assert_eq!(
            value,
            json!({"type": "assistant", "text": "hi", "aborted": false,
                   "toolCalls": [{"id": "c1", "name": "read", "arguments": {"path": "a"}}]})
        );
        assert_eq!(serde_json::from_value::<ReplayEntry>(value).unwrap(), entry);
        let result = ReplayEntry::ToolResult {
            tool_call_id: "c1".into(),
            text: "x".into(),
            is_error: true,
            details: None,
            images: Vec::new(),
        };
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"type": "tool_result", "toolCallId": "c1", "text": "x", "isError": true})
        );
    }
}
