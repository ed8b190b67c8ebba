//! MCP shapes to plugin-protocol shapes, read from JSON so that rmcp's
//! type renames never reach this logic: a tool becomes a plugin tool
//! (its schema passed through, `read_only` when the server's annotation
//! says so, else serial), a `tools/call` result becomes text content with
//! `isError` kept, its structured content when it has no text. Images,
//! audio and binary resources become a text placeholder, since etch's
//! tool results are text for now.
//!
//! This module must not know how the server is reached or how the
//! answer travels to etch.

use std::fmt::Write as _;

use etch_protocol::plugin::{ContentPart, ExecuteResult, ParallelSafety, PluginTool};
use serde_json::Value;

/// A server tool as a plugin tool named `name`.
pub fn tool(name: String, tool: &Value) -> PluginTool {
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .or_else(|| tool.get("title").and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned();
    let read_only = tool
        .pointer("/annotations/readOnlyHint")
        .and_then(Value::as_bool)
        == Some(true);
    PluginTool {
        name,
        description,
        parameters: tool.get("inputSchema").cloned().unwrap_or(Value::Null),
        parallel_safety: if read_only {
            ParallelSafety::ReadOnly
        } else {
            ParallelSafety::Serial
        },
    }
}

/// A `tools/call` result as a plugin result.
pub fn result(result: &Value) -> ExecuteResult {
    let mut texts: Vec<String> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|parts| parts.iter().map(part).collect())
        .unwrap_or_default();
    // Servers are asked to repeat structured content as text; it is the
    // result only when they sent no text.
    if texts.is_empty()
        && let Some(structured) = result.get("structuredContent")
        && !structured.is_null()
    {
        texts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    ExecuteResult {
        content: vec![ContentPart::text(texts.join("\n"))],
        is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
    }
}

/// One content block as text.
fn part(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => field("text").to_owned(),
        kind @ ("image" | "audio") => format!(
            "[{kind} ({}, {} bytes) left out: etch does not pass {kind}s to the model yet]",
            mime(field("mimeType")),
            base64_len(field("data")),
        ),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
            if let Some(text) = resource.get("text").and_then(Value::as_str) {
                return format!("[resource {uri}]\n{text}");
            }
            let mime_type = resource
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let size = base64_len(
                resource
                    .get("blob")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            );
            format!(
                "[resource {uri} ({}, {size} bytes) left out: etch does not pass binary resources to the model yet]",
                mime(mime_type)
            )
        }
        "resource_link" => {
            let mut text = format!("[resource link {}", field("uri"));
            if !field("name").is_empty() {
                let _ = write!(text, " ({})", field("name"));
            }
            text.push(']');
            text
        }
        other => format!("[{other:?} content left out: etch does not know this MCP content type]"),
    }
}

/// A MIME type for a message.
fn mime(text: &str) -> &str {
    if text.is_empty() {
        "no MIME type"
    } else {
        text
    }
}

/// Bytes encoded by base64 `data`.
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_keep_schema_and_read_only_hint() {
        let t = tool(
            "mcp__s__a".into(),
            &json!({"name":"a","description":"A.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}),
        );
        assert_eq!(t.parallel_safety, ParallelSafety::ReadOnly);
        assert_eq!(t.parameters, json!({"type":"object"}));
        let t = tool(
            "x".into(),
            &json!({"name":"b","title":"B","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false}}),
        );
        assert_eq!(t.parallel_safety, ParallelSafety::Serial);
        assert_eq!(t.description, "B");
    }

    #[test]
    fn results_become_text() {
        let r = result(&json!({"content":[
            {"type":"text","text":"hi"},
            {"type":"image","data":"aGVsbG8=","mimeType":"image/png"},
            {"type":"resource","resource":{"uri":"file:///a","text":"body"}},
            {"type":"resource","resource":{"uri":"file:///b","blob":"AAAA","mimeType":"application/zip"}},
            {"type":"resource_link","uri":"file:///c","name":"c"}
        ],"isError":true}));
        assert!(r.is_error);
        let text = &r.content[0].text;
        assert!(
            text.starts_with("hi\n[image (image/png, 5 bytes) left out"),
            "{text}"
        );
        assert!(text.contains("[resource file:///a]\nbody"));
        assert!(text.contains("[resource file:///b (application/zip, 3 bytes) left out"));
        assert!(text.ends_with("[resource link file:///c (c)]"));
    }

    #[test]
    fn structured_content_stands_in_for_missing_text() {
        let only = result(&json!({"content":[],"structuredContent":{"sum":3}}));
        assert_eq!(only.content[0].text, "{\n  \"sum\": 3\n}");
        let both =
            result(&json!({"content":[{"type":"text","text":"3"}],"structuredContent":{"sum":3}}));
        assert_eq!(both.content[0].text, "3");
        assert!(!both.is_error);
    }
}
