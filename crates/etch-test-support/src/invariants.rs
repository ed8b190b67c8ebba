//! Request invariants the fake server checks on every model request, the
//! way a real provider rejects a malformed conversation: each tool result
//! must answer a tool call made earlier in the same request and not yet
//! answered, and every call must be answered before the conversation moves
//! on. A request that breaks this is a bug in the client that a lenient
//! fake would hide.
//!
//! Three wire shapes are understood, by their top-level keys: Chat
//! Completions (`messages` with `tool_calls` and `role: "tool"`), Responses
//! (`input` with `function_call` and `function_call_output` items) and
//! Anthropic Messages (`messages` with `tool_use` and `tool_result`
//! blocks). Anything else (auth endpoints, bodies that are not JSON) is not
//! checked. This module must not know etch's own types.
//!
//! Images are checked as providers check them: each is base64 of the
//! type it declares (a PNG sent as `image/jpeg` is a 400), in the shape
//! its API takes (`image_url: {url}` for Chat Completions, a string for
//! Responses, a base64 `source` for Anthropic), and a Chat Completions
//! `tool` message carries text only.

use std::collections::HashSet;

use serde_json::Value;

/// Why `body` breaks the tool-result invariant, or `None` when it does not
/// (or is not a model request this module understands).
pub fn tool_pairing_violation(body: &[u8]) -> Option<String> {
    let request: Value = serde_json::from_slice(body).ok()?;
    if let Some(input) = request.get("input").and_then(Value::as_array) {
        return responses(input);
    }
    let messages = request.get("messages").and_then(Value::as_array)?;
    let anthropic = messages.iter().any(|m| {
        m.get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks.iter().any(|b| {
                    matches!(
                        b.get("type").and_then(Value::as_str),
                        Some("tool_use" | "tool_result")
                    )
                })
            })
    });
    if anthropic {
        anthropic_messages(messages)
    } else {
        chat(messages)
    }
}

/// Why `body` breaks the image rules, or `None` when it does not.
pub fn image_violation(body: &[u8]) -> Option<String> {
    let request: Value = serde_json::from_slice(body).ok()?;
    if let Some(messages) = request.get("messages").and_then(Value::as_array) {
        for (i, message) in messages.iter().enumerate() {
            let tool = message.get("role").and_then(Value::as_str) == Some("tool");
            if tool && !message.get("content").is_some_and(Value::is_string) {
                return Some(format!(
                    "messages[{i}]: a tool message's content must be text (Chat Completions takes no image there)"
                ));
            }
        }
    }
    images_in(&request, "$")
}

/// The first bad image anywhere in `value` (at JSON path `at`).
fn images_in(value: &Value, at: &str) -> Option<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| images_in(item, &format!("{at}[{i}]"))),
        Value::Object(map) => {
            let problem = match map.get("type").and_then(Value::as_str) {
                Some("image_url") => match map.get("image_url").and_then(|u| u.get("url")) {
                    Some(Value::String(url)) => data_url(url),
                    _ => Some("an image_url part needs \"image_url\": {\"url\": …}".to_owned()),
                },
                Some("input_image") => match map.get("image_url") {
                    Some(Value::String(url)) => data_url(url),
                    _ => Some("an input_image part needs \"image_url\" as a string".to_owned()),
                },
                Some("image") if map.contains_key("source") => {
                    let source = &map["source"];
                    let kind = source.get("type").and_then(Value::as_str);
                    let media = source.get("media_type").and_then(Value::as_str);
                    let data = source.get("data").and_then(Value::as_str);
                    match (kind, media, data) {
                        (Some("base64"), Some(media), Some(data)) => matches_type(media, data),
                        _ => Some(
                            "an image block needs a source of type base64 with media_type and data"
                                .to_owned(),
                        ),
                    }
                }
                _ => None,
            };
            if let Some(problem) = problem {
                return Some(format!("{at}: {problem}"));
            }
            map.iter()
                .find_map(|(key, item)| images_in(item, &format!("{at}.{key}")))
        }
        _ => None,
    }
}

/// Checks a `data:<type>;base64,<data>` URL.
fn data_url(url: &str) -> Option<String> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Some(format!("an image URL must be a data: URL, not {url:.40}"));
    };
    let Some((media, data)) = rest.split_once(";base64,") else {
        return Some("an image data: URL must be base64".to_owned());
    };
    matches_type(media, data)
}

/// Whether base64 `data` starts with the magic bytes of `media`.
fn matches_type(media: &str, data: &str) -> Option<String> {
    let head = base64_head(data)?;
    let actual = if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        "image/jpeg"
    } else if head.starts_with(b"GIF8") {
        "image/gif"
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        "image/webp"
    } else {
        return Some(format!("the image data declared {media} is no image"));
    };
    (actual != media).then(|| format!("the image declared {media} is {actual}"))
}

/// The first bytes of standard base64 `data` (16 characters, 12 bytes),
/// or `None` when they are not base64.
fn base64_head(data: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(
            match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' => 62,
                b'/' => 63,
                _ => return None,
            }
            .into(),
        )
    };
    let mut out = Vec::new();
    for chunk in data.as_bytes().chunks(4).take(4) {
        if chunk.len() < 4 || chunk.contains(&b'=') {
            break;
        }
        let mut n = 0u32;
        for &c in chunk {
            n = (n << 6) | value(c)?;
        }
        out.extend_from_slice(&n.to_be_bytes()[1..]);
    }
    Some(out)
}

/// Calls made and not answered yet, in the order they were made.
#[derive(Default)]
struct Pending {
    /// Unanswered call ids.
    open: Vec<String>,
    /// Every call id seen so far.
    seen: HashSet<String>,
}

impl Pending {
    /// A call was made.
    fn call(&mut self, id: &str) -> Option<String> {
        if !self.seen.insert(id.to_owned()) {
            return Some(format!("tool call id {id:?} is used twice"));
        }
        self.open.push(id.to_owned());
        None
    }

    /// A result for `id` arrived at `position`.
    fn answer(&mut self, id: &str, position: usize) -> Option<String> {
        match self.open.iter().position(|open| open == id) {
            Some(index) => {
                self.open.remove(index);
                None
            }
            None if self.seen.contains(id) => Some(format!(
                "the tool result at {position} answers call {id:?} a second time"
            )),
            None => Some(format!(
                "the tool result at {position} answers call {id:?}, which no earlier message made"
            )),
        }
    }

    /// The conversation moves on at `position`: every call must have its
    /// result by now.
    fn settle(&self, position: usize) -> Option<String> {
        (!self.open.is_empty())
            .then(|| format!("calls {:?} have no result before {position}", self.open))
    }
}

/// Chat Completions: tool messages must follow the assistant message whose
/// `tool_calls` they answer, before any other message.
fn chat(messages: &[Value]) -> Option<String> {
    let mut pending = Pending::default();
    for (i, message) in messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        if message.get("role").and_then(Value::as_str) == Some("tool") {
            let id = message
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Some(problem) = pending.answer(id, i) {
                return Some(format!("{at}: {problem}"));
            }
            continue;
        }
        if let Some(problem) = pending.settle(i) {
            return Some(format!("{at}: {problem}"));
        }
        let calls = message.get("tool_calls").and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
            if let Some(problem) = pending.call(id) {
                return Some(format!("{at}: {problem}"));
            }
        }
    }
    pending.settle(messages.len())
}

/// Responses: a `function_call_output` must answer an earlier
/// `function_call`; a `message` item may not come while calls are open.
fn responses(input: &[Value]) -> Option<String> {
    let mut pending = Pending::default();
    for (i, item) in input.iter().enumerate() {
        let at = format!("input[{i}]");
        let id = item
            .get("call_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        let problem = match kind {
            "function_call" => pending.call(id),
            "function_call_output" => pending.answer(id, i),
            "message" => pending.settle(i),
            _ => None,
        };
        if let Some(problem) = problem {
            return Some(format!("{at}: {problem}"));
        }
    }
    pending.settle(input.len())
}

/// Anthropic Messages: the `tool_result` blocks answering an assistant's
/// `tool_use` blocks must all be in the next (user) message.
fn anthropic_messages(messages: &[Value]) -> Option<String> {
    let mut pending = Pending::default();
    for (i, message) in messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        let blocks: &[Value] = message
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let mut answered_here = false;
        for block in blocks {
            let problem = match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    pending.call(block.get("id").and_then(Value::as_str).unwrap_or_default())
                }
                Some("tool_result") => {
                    answered_here = true;
                    pending.answer(
                        block
                            .get("tool_use_id")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                        i,
                    )
                }
                _ => None,
            };
            if let Some(problem) = problem {
                return Some(format!("{at}: {problem}"));
            }
        }
        let is_assistant = message.get("role").and_then(Value::as_str) == Some("assistant");
        if (answered_here || !is_assistant)
            && let Some(problem) = pending.settle(i + 1)
        {
            return Some(format!("{at}: {problem}"));
        }
    }
    pending.settle(messages.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Checks a JSON request body.
    fn check(body: &Value) -> Option<String> {
        tool_pairing_violation(body.to_string().as_bytes())
    }

    /// Images are checked in every API's shape: a tool message with an
    /// image, a type that is not the bytes' and a URL that is no data URL
    /// are violations; the right shapes pass.
    #[test]
    fn images_are_checked() {
        // "iVBORw0KGgoAAAAN" is the start of every PNG in base64.
        let png = "iVBORw0KGgoAAAANSUhEUg==";
        let images = |body: &Value| image_violation(body.to_string().as_bytes());
        let chat_user = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}}
        ]}]});
        assert_eq!(images(&chat_user), None);
        let chat_tool = json!({"messages": [{"role": "tool", "tool_call_id": "c", "content": [
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}}
        ]}]});
        assert!(
            images(&chat_tool)
                .unwrap()
                .contains("a tool message's content must be text")
        );
        let wrong = json!({"input": [{"type": "message", "role": "user", "content": [
            {"type": "input_image", "detail": "auto", "image_url": format!("data:image/jpeg;base64,{png}")}
        ]}]});
        assert!(
            images(&wrong)
                .unwrap()
                .contains("declared image/jpeg is image/png")
        );
        let object_url = json!({"input": [{"type": "function_call_output", "call_id": "c", "output": [
            {"type": "input_image", "image_url": {"url": "data:image/png;base64,x"}}
        ]}]});
        assert!(images(&object_url).unwrap().contains("as a string"));
        let anthropic = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
        ]}]}]});
        assert_eq!(images(&anthropic), None);
        let remote = json!({"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
        ]}]});
        assert!(images(&remote).unwrap().contains("must be a data: URL"));
    }

    /// Chat Completions: results right after their calls pass; a result
    /// without its call, a missing result and a twice-answered call fail.
    #[test]
    fn chat_pairs() {
        let call = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{}"}}]});
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "x"});
        let user = json!({"role": "user", "content": "hi"});
        assert_eq!(
            check(&json!({"messages": [user, call, result("b"), result("a")]})),
            None
        );
        assert!(
            check(&json!({"messages": [user, result("a")]}))
                .unwrap()
                .contains("no earlier message")
        );
        assert!(
            check(&json!({"messages": [user, call, result("a"), user]}))
                .unwrap()
                .contains("\"b\"")
        );
        assert!(check(&json!({"messages": [user, call, result("a")]})).is_some());
        assert!(
            check(&json!({"messages": [user, call, result("a"), result("b"), result("a")]}))
                .unwrap()
                .contains("second time")
        );
        assert_eq!(check(&json!({"messages": [user]})), None);
    }

    /// Responses: outputs answer earlier calls; reasoning items may sit
    /// between; a message while calls are open fails.
    #[test]
    fn responses_pairs() {
        let call = |id: &str| json!({"type": "function_call", "call_id": id, "name": "read", "arguments": "{}"});
        let output =
            |id: &str| json!({"type": "function_call_output", "call_id": id, "output": "x"});
        let user = json!({"role": "user", "content": "hi"});
        let reasoning = json!({"type": "reasoning", "encrypted_content": "z"});
        assert_eq!(
            check(&json!({"input": [user, reasoning, call("a"), output("a"), user]})),
            None
        );
        assert!(check(&json!({"input": [user, output("a")]})).is_some());
        assert!(check(&json!({"input": [user, call("a"), user]})).is_some());
        assert!(check(&json!({"input": [user, call("a")]})).is_some());
    }

    /// Anthropic: results go in the next message; one left out fails.
    #[test]
    fn anthropic_pairs() {
        let user = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
        let calls = json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "read", "input": {}},
            {"type": "tool_use", "id": "b", "name": "read", "input": {}}]});
        let results = |ids: &[&str]| json!({"role": "user", "content": ids.iter().map(|id| json!({"type": "tool_result", "tool_use_id": id, "content": "x"})).collect::<Vec<_>>()});
        assert_eq!(
            check(&json!({"messages": [user, calls, results(&["a", "b"])]})),
            None
        );
        assert!(check(&json!({"messages": [user, calls, results(&["a"])]})).is_some());
        assert!(check(&json!({"messages": [user, results(&["a"])]})).is_some());
    }

    /// Bodies that are not model requests are not checked.
    #[test]
    fn other_bodies_pass() {
        assert_eq!(tool_pairing_violation(b"not json"), None);
        assert_eq!(check(&json!({"grant_type": "refresh_token"})), None);
    }
}
