//! The plugin protocol, JSONL-RPC 0.1.0 over a plugin's stdio (E-PLUG-06
//! to E-PLUG-08, G15): one JSON request per line on the plugin's stdin,
//! one JSON response per line on its stdout, string ids.
//!
//! ```text
//! → {"id":"1","method":"initialize","params":{"protocolVersion":"0.1.0"}}
//! ← {"id":"1","result":{"name":"git","tools":[{"name":"git_status","description":"…",
//!      "parameters":{"type":"object","properties":{}},"parallelSafety":"read_only"}]}}
//! → {"id":"2","method":"tool.execute","params":{"callID":"call_1","name":"git_status","arguments":{}}}
//! ← {"id":"2","result":{"content":[{"type":"text","text":"clean"}]}}
//! ```
//!
//! A tool's own failure is `"isError": true` in the result, or an
//! `error` object instead of the result; both are ordinary tool errors.
//! These are the types both sides share (etch's supervisor and the plugin
//! SDK); this module must not know how a plugin is started or served.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this etch speaks.
pub const PROTOCOL_VERSION: &str = "0.1.0";

/// The method that starts the exchange.
pub const INITIALIZE: &str = "initialize";

/// The method that runs one tool call.
pub const TOOL_EXECUTE: &str = "tool.execute";

/// One request from etch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginRequest {
    /// The request id, echoed by the response.
    pub id: String,
    /// `initialize` or `tool.execute`.
    pub method: String,
    /// The method's parameters.
    #[serde(default)]
    pub params: Value,
}

/// One response from a plugin: `result` or `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginResponse {
    /// The id of the request answered; a response without one is a
    /// protocol violation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The method's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// A failure of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<PluginError>,
}

/// A request that failed; for `tool.execute`, an ordinary tool error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginError {
    /// What went wrong, for the model or the user.
    #[serde(default)]
    pub message: String,
    /// The plugin cannot go on (what it serves is gone): etch stops it
    /// after this answer and withdraws its tools at once. Optional, so
    /// 0.1.0 plugins that never send it are unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fatal: bool,
}

impl PluginError {
    /// An ordinary failure of the request.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            fatal: false,
        }
    }
}

/// `initialize` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The protocol version etch speaks.
    pub protocol_version: String,
}

/// `initialize` result: the plugin's name and tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitializeResult {
    /// The plugin's name.
    #[serde(default)]
    pub name: String,
    /// The tools it offers.
    #[serde(default)]
    pub tools: Vec<PluginTool>,
}

/// How a plugin tool may be scheduled (E-PLUG-11, C19).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ParallelSafety {
    /// A barrier: runs alone among the calls of one answer (the default).
    #[default]
    Serial,
    /// Only reads: overlaps with other calls.
    ReadOnly,
    /// Safe to overlap with other calls.
    ParallelSafe,
}

/// One tool a plugin offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginTool {
    /// Name, `^[A-Za-z0-9_-]{1,64}$`.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON schema of the arguments (an object schema).
    pub parameters: Value,
    /// How it may be scheduled; `serial` when left out.
    #[serde(default)]
    pub parallel_safety: ParallelSafety,
}

/// `tool.execute` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecuteParams {
    /// The model's call id.
    #[serde(rename = "callID")]
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// The arguments, validated against the tool's schema.
    pub arguments: Value,
}

/// `tool.execute` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteResult {
    /// Content parts; only `text` in 0.1.0.
    pub content: Vec<ContentPart>,
    /// Whether the call failed as a tool (a recoverable error).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// One content part of a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentPart {
    /// `text` (the only type in 0.1.0).
    #[serde(rename = "type")]
    pub kind: String,
    /// The text.
    #[serde(default)]
    pub text: String,
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            kind: "text".to_owned(),
            text: text.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The seed's examples read and write as written.
    #[test]
    fn wire_examples_round_trip() {
        let init: PluginResponse = serde_json::from_value(json!({"id":"1","result":{"name":"git","tools":[{"name":"git_status","description":"Show git status.","parameters":{"type":"object","properties":{}},"parallelSafety":"read_only"}]}})).unwrap();
        let result: InitializeResult = serde_json::from_value(init.result.unwrap()).unwrap();
        assert_eq!(result.tools[0].parallel_safety, ParallelSafety::ReadOnly);
        let request = PluginRequest {
            id: "2".into(),
            method: TOOL_EXECUTE.into(),
            params: serde_json::to_value(ExecuteParams {
                call_id: "call_1".into(),
                name: "git_status".into(),
                arguments: json!({}),
            })
            .unwrap(),
        };
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({"id":"2","method":"tool.execute","params":{"callID":"call_1","name":"git_status","arguments":{}}})
        );
        let ok = ExecuteResult {
            content: vec![ContentPart::text("clean")],
            is_error: false,
        };
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"content":[{"type":"text","text":"clean"}]})
        );
        let tool: PluginTool =
            serde_json::from_value(json!({"name":"t","parameters":{"type":"object"}})).unwrap();
        assert_eq!(tool.parallel_safety, ParallelSafety::Serial);
        // `fatal` is optional both ways: absent means false, and false is
        // not written.
        let error: PluginError = serde_json::from_value(json!({"message":"m"})).unwrap();
        assert_eq!(error, PluginError::new("m"));
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"message":"m"})
        );
        let fatal = PluginError {
            message: "gone".into(),
            fatal: true,
        };
        assert_eq!(
            serde_json::to_value(&fatal).unwrap(),
            json!({"message":"gone","fatal":true})
        );
    }
}
