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
