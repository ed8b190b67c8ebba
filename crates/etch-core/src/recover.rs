//! Tool calls a model sent as text (issue 30): a server that did not
//! parse the model's call (no `--jinja` on llama.cpp, a template without
//! tool support, a small model that leaves its tags out) passes it on as
//! the answer, and the run would end on a JSON object. Two shapes are
//! taken back as calls:
//!
//! - **`<tool_call>` blocks** (Hermes and Qwen's format), whatever tool
//!   they name: the tags say what they are. Text before the first block
//!   stays as text.
//! - **A bare call**: the whole answer (in a ``` fence or not) is one
//!   JSON object `{"name", "arguments"}` (or `"parameters"`), a list of
//!   them, or one per line, and every name is an active tool. Anything
//!   else, such as an answer that shows JSON to the user, stays text.
//!
//! The loop records the original text beside the recovered calls
//! (`recoveredText` on the assistant message). This module only parses;
//! it must not know about the log or the provider.

use etch_model::{ContentPart, ToolCall};
use serde_json::Value;

/// The opening tag of a Hermes-style call.
const OPEN: &str = "<tool_call>";
/// Its closing tag.
const CLOSE: &str = "</tool_call>";

/// The content a text answer stands for when it carries tool calls:
/// the prose before them (if any) and the calls, with ids from `id`.
/// `None` when it carries none.
pub fn recover(
    text: &str,
    tools: &[String],
    mut id: impl FnMut(usize) -> String,
) -> Option<Vec<ContentPart>> {
    let (prose, calls) = tagged(text).or_else(|| bare(text, tools))?;
    let mut content = Vec::with_capacity(calls.len() + 1);
    if !prose.trim().is_empty() {
        content.push(ContentPart::text(prose.trim_end()));
    }
    content.extend(calls.into_iter().enumerate().map(|(i, (name, arguments))| {
        ContentPart::ToolCall(ToolCall {
            id: id(i),
            name,
            arguments,
        })
    }));
    Some(content)
}

/// `<tool_call>` blocks: the prose before the first, and each block's
/// call; the last block may lack its closing tag (a stop sequence ate
/// it). A block that is not a call makes the whole text plain.
fn tagged(text: &str) -> Option<(&str, Vec<(String, Value)>)> {
    let first = text.find(OPEN)?;
    let mut calls = Vec::new();
    let mut rest = &text[first..];
    while let Some(start) = rest.find(OPEN) {
        let body = &rest[start + OPEN.len()..];
        let (inner, after) = match body.find(CLOSE) {
            Some(end) => (&body[..end], &body[end + CLOSE.len()..]),
            None => (body, ""),
        };
        calls.push(call(&serde_json::from_str::<Value>(inner.trim()).ok()?)?);
        rest = after;
    }
    Some((&text[..first], calls))
}

/// A whole answer that is nothing but calls of active tools.
fn bare(text: &str, tools: &[String]) -> Option<(&'static str, Vec<(String, Value)>)> {
    let inner = unfenced(text.trim());
    let values: Vec<Value> = match serde_json::from_str::<Value>(inner) {
        Ok(Value::Array(items)) => items,
        Ok(one) => vec![one],
        Err(_) => inner
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line.trim()).ok())
            .collect::<Option<_>>()?,
    };
    if values.is_empty() {
        return None;
    }
    let calls = values.iter().map(call).collect::<Option<Vec<_>>>()?;
    calls
        .iter()
        .all(|(name, _)| tools.contains(name))
        .then_some(("", calls))
}

/// The text inside one ``` fence (with or without a language), else the
/// text itself.
fn unfenced(text: &str) -> &str {
    let Some(body) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = body.strip_suffix("```") else {
        return text;
    };
    // The language tag runs to the first newline.
    body.split_once('\n').map_or(body, |(_, rest)| rest).trim()
}

/// A call object: `name` and `arguments` (or `parameters`), the
/// arguments an object or JSON text of one; absent arguments are `{}`.
fn call(value: &Value) -> Option<(String, Value)> {
    let object = value.as_object()?;
    let name = object.get("name")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        None => Value::Object(serde_json::Map::new()),
        Some(Value::String(raw)) => serde_json::from_str::<Value>(raw)
            .ok()
            .filter(Value::is_object)?,
        Some(args @ Value::Object(_)) => args.clone(),
        Some(_) => return None,
    };
    // Only the call's own keys: anything else means it is no call.
    if object
        .keys()
        .any(|k| !["name", "arguments", "parameters", "id", "type"].contains(&k.as_str()))
    {
        return None;
    }
    Some((name.to_owned(), arguments))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<String> {
        ["bash", "read"].map(str::to_owned).to_vec()
    }

    fn calls(content: &[ContentPart]) -> Vec<(String, Value)> {
        content
            .iter()
            .filter_map(|p| match p {
                ContentPart::ToolCall(c) => Some((c.name.clone(), c.arguments.clone())),
                ContentPart::Text { .. } | ContentPart::Image(_) => None,
            })
            .collect()
    }

    fn ids(i: usize) -> String {
        format!("r{i}")
    }

    /// Tagged blocks are calls whatever they name; the prose before
    /// them stays; an unclosed last block counts.
    #[test]
    fn tagged_blocks_are_calls() {
        let text = "Let me look.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>\n<tool_call>{\"name\": \"grep\", \"arguments\": \"{\\\"pattern\\\": \\\"x\\\"}\"}";
        let content = recover(text, &tools(), ids).unwrap();
        assert_eq!(content[0], ContentPart::text("Let me look."));
        assert_eq!(
            calls(&content),
            [
                ("read".to_owned(), json!({"path": "a.txt"})),
                ("grep".to_owned(), json!({"pattern": "x"}))
            ]
        );
        assert!(matches!(&content[1], ContentPart::ToolCall(c) if c.id == "r0"));
        assert_eq!(
            recover("<tool_call>not json</tool_call>", &tools(), ids),
            None
        );
    }

    /// A whole answer that is a call of an active tool is recovered, in a
    /// fence or not, one or several; `parameters` works like `arguments`.
    #[test]
    fn bare_calls_of_active_tools_are_calls() {
        for text in [
            "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}",
            "```json\n{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}\n```",
            "[{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}]",
        ] {
            let content = recover(text, &tools(), ids).unwrap();
            assert_eq!(
                calls(&content),
                [("bash".to_owned(), json!({"command": "ls"}))],
                "{text}"
            );
        }
        let two = "{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n{\"name\": \"read\", \"arguments\": {\"path\": \"b\"}}";
        assert_eq!(calls(&recover(two, &tools(), ids).unwrap()).len(), 2);
    }

    /// Text that only shows JSON stays text: an unknown tool, extra keys,
    /// prose around the object, arguments that are no object.
    #[test]
    fn json_that_is_no_call_stays_text() {
        for text in [
            "{\"name\": \"test1\", \"arguments\": {\"timeout\": 30}}",
            "{\"name\": \"bash\", \"arguments\": {}, \"version\": 2}",
            "Here it is: {\"name\": \"bash\", \"arguments\": {}}",
            "{\"name\": \"bash\", \"arguments\": [1]}",
            "{\"plugins\": [\"alpha\"]}",
            "42",
            "",
        ] {
            assert_eq!(recover(text, &tools(), ids), None, "{text}");
        }
    }
}
