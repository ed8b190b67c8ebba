//! Content parts: the pieces a message is made of.
//!
//! The JSON shape of a part is part of the session log contract (E-SES-05,
//! E-SES-06): `{"type":"text","text":…}` and
//! `{"type":"tool_call","id":…,"name":…,"arguments":{…}}` and
//! `{"type":"image","mediaType":…,"sha256":…,"width":…,"height":…}`. This module knows
//! nothing about how a provider encodes them on the wire.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::image::Image;

/// One part of a message's content, tagged by `type` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain text, as written by the user, the model or a tool.
    Text {
        /// The text itself, verbatim.
        text: String,
    },
    /// A request from the model to run a tool.
    ToolCall(ToolCall),
    /// An image, in a user message or a tool result; its bytes are held
    /// by reference and never serialized (see [`crate::image`]).
    Image(Image),
}

impl ContentPart {
    /// Builds a text part; a shorthand used all over the loop and tests.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

/// A tool call requested by the model.
///
/// `arguments` is the parsed JSON object when the model sent valid JSON. When
/// it did not, the raw text is kept as a JSON string so the log still shows
/// exactly what the model asked for; the loop answers such a call with a
/// `tool error:` result instead of running it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned call id, echoed back in the tool result.
    pub id: String,
    /// Name of the tool the model wants to run.
    pub name: String,
    /// Arguments: a JSON object, or a JSON string holding unparseable raw text.
    pub arguments: Value,
}

/// Concatenates the text parts of a content list, ignoring tool calls.
///
/// Used wherever a message must be shown or compared as plain text (final
/// answers, titles, the echo provider).
pub fn joined_text(parts: &[ContentPart]) -> String {
    let mut out = String::new();
    for part in parts {
        if let ContentPart::Text { text } = part {
            out.push_str(text);
        }
    }
    out
}

/// The text of `parts` for a person: the text parts, and each image as
/// its marker on a line of its own (`[image image/png 1568x882]`).
pub fn display_text(parts: &[ContentPart]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for part in parts {
        match part {
            ContentPart::Text { text } => out.push_str(text),
            ContentPart::Image(image) => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                let _ = write!(out, "[image {}]", image.describe());
            }
            ContentPart::ToolCall(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serialized shape of parts is the log contract of E-SES-05/06.
    #[test]
    fn parts_serialize_to_the_log_shape() {
        let text = serde_json::to_string(&ContentPart::text("hi")).unwrap();
        assert_eq!(text, r#"{"type":"text","text":"hi"}"#);
        let call = ContentPart::ToolCall(ToolCall {
            id: "call_1".into(),
            name: "grep".into(),
            arguments: serde_json::json!({"pattern": "TODO"}),
        });
        assert_eq!(
            serde_json::to_string(&call).unwrap(),
            r#"{"type":"tool_call","id":"call_1","name":"grep","arguments":{"pattern":"TODO"}}"#
        );
    }

    /// Tool calls do not leak into the plain-text view of a message.
    #[test]
    fn joined_text_skips_tool_calls() {
        let parts = vec![
            ContentPart::text("a"),
            ContentPart::ToolCall(ToolCall {
                id: "1".into(),
                name: "x".into(),
                arguments: serde_json::json!({}),
            }),
            ContentPart::text("b"),
        ];
        assert_eq!(joined_text(&parts), "ab");
    }
}
