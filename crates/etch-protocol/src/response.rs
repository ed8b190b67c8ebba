//! The answer to one command: `{"type":"response","id":..,"command":..,
//! "success":true,"data":..}` or `"success":false` with an `error`.
//!
//! A line that is not valid JSON is answered with `command: "parse"`; a
//! command that is not known is answered with the line's `id` when it had
//! one (Pi drops it). This module must not know what a command did.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The value of `type` on every response line.
const RESPONSE: &str = "response";

/// One response line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Response {
    /// Always `response`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The command's id, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The command's `type` (`parse` for a line that did not parse).
    pub command: String,
    /// Whether the command was carried out (or, for `prompt`, accepted).
    pub success: bool,
    /// What the command returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Why it failed, saying what to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Response {
    /// A success carrying `data`.
    pub fn ok(id: Option<String>, command: &str, data: Option<Value>) -> Self {
        Self {
            kind: RESPONSE.to_owned(),
            id,
            command: command.to_owned(),
            success: true,
            data,
            error: None,
        }
    }

    /// A failure saying `error`.
    pub fn err(id: Option<String>, command: &str, error: impl Into<String>) -> Self {
        Self {
            kind: RESPONSE.to_owned(),
            id,
            command: command.to_owned(),
            success: false,
            data: None,
            error: Some(error.into()),
        }
    }

    /// The answer to a line that could not be read as a command: the id is
    /// kept when the line was JSON with a string `id`, and the command is
    /// its `type` when it had one (an unknown command), else `parse`.
    pub fn unreadable(line: &str, error: &serde_json::Error) -> Self {
        let value: Option<Value> = serde_json::from_str(line).ok();
        let id = value
            .as_ref()
            .and_then(|v| v.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let kind = value
            .as_ref()
            .and_then(|v| v.get("type"))
            .and_then(Value::as_str);
        let message = match kind {
            Some(kind) if !crate::CommandBody::NAMES.contains(&kind) => format!(
                "unknown command \"{kind}\"; the commands are {}",
                crate::CommandBody::NAMES.join(", ")
            ),
            Some(kind) => format!("cannot read the {kind} command: {error}"),
            None if value.is_some() => {
                "the command has no \"type\"; send {\"type\": \"prompt\", \"message\": …} or another command".to_owned()
            }
            None => format!("the line is not JSON: {error}"),
        };
        Self::err(id, kind.unwrap_or("parse"), message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Success and failure shapes, and the answers to unreadable lines.
    #[test]
    fn response_shapes() {
        let ok = Response::ok(Some("1".into()), "get_state", Some(json!({"a": 1})));
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"type": "response", "id": "1", "command": "get_state", "success": true, "data": {"a": 1}})
        );
        let back: Response = serde_json::from_value(serde_json::to_value(&ok).unwrap()).unwrap();
        assert_eq!(back, ok);
        let line = r#"{"id":"7","type":"teleport"}"#;
        let err = serde_json::from_str::<crate::Command>(line).unwrap_err();
        let answer = Response::unreadable(line, &err);
        assert_eq!(answer.id.as_deref(), Some("7"));
        assert_eq!(answer.command, "teleport");
        assert!(!answer.success);
        assert!(
            answer
                .error
                .unwrap()
                .starts_with("unknown command \"teleport\"; the commands are prompt, steer")
        );
        let line = r#"{"id":"8","type":"prompt"}"#;
        let err = serde_json::from_str::<crate::Command>(line).unwrap_err();
        let answer = Response::unreadable(line, &err);
        assert_eq!(answer.command, "prompt");
        assert!(answer.error.unwrap().contains("message"));
        let line = "{not json";
        let err = serde_json::from_str::<crate::Command>(line).unwrap_err();
        let answer = Response::unreadable(line, &err);
        assert_eq!((answer.id, answer.command.as_str()), (None, "parse"));
    }
}
