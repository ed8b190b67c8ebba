//! The plain-text form of a conversation that the summarizer reads (G24).
//!
//! Each message becomes one group of `[Role]: …` lines, groups separated by
//! blank lines, so the model sees the conversation as material to summarize
//! rather than as turns to continue. Only tool results are shortened: they
//! are by far the largest and the least worth reading in full.

use etch_model::content::{display_text, joined_text};
use etch_model::{Message, ToolCall};

/// Characters of a tool result kept in the serialized conversation.
const TOOL_RESULT_CHARS: usize = 2000;

/// Serializes messages as `[User]: …`, `[Assistant]: …`,
/// `[Assistant tool calls]: name(args); …` and `[Tool result]: …` line
/// groups separated by blank lines. Tool results longer than 2000 characters
/// end with `…[truncated N chars]`; provider items carry no readable text and
/// are left out.
pub fn serialize(messages: &[Message]) -> String {
    let groups: Vec<String> = messages.iter().filter_map(group).collect();
    groups.join("\n\n")
}

/// The line group of one message, or `None` when it has nothing to show.
fn group(message: &Message) -> Option<String> {
    match message {
        // Images are named by a marker (type and size), so the summary
        // can say what was shown; their bytes are never summarized.
        Message::User { content } => Some(format!("[User]: {}", display_text(content))),
        Message::Assistant { content } => {
            let mut lines = Vec::new();
            let text = joined_text(content);
            if !text.is_empty() {
                lines.push(format!("[Assistant]: {text}"));
            }
            let calls = message.tool_calls();
            if !calls.is_empty() {
                let calls: Vec<String> = calls.into_iter().map(call).collect();
                lines.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
            }
            (!lines.is_empty()).then(|| lines.join("\n"))
        }
        Message::Tool { content, .. } => Some(format!(
            "[Tool result]: {}",
            truncate(&display_text(content), TOOL_RESULT_CHARS)
        )),
        Message::ProviderItem(_) => None,
    }
}

/// `name(args)` with the arguments as compact JSON.
fn call(call: &ToolCall) -> String {
    format!("{}({})", call.name, call.arguments)
}

/// Keeps the first `limit` characters of `text`, noting how many were cut.
fn truncate(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((end, _)) => {
            let cut = text[end..].chars().count();
            format!("{}…[truncated {cut} chars]", &text[..end])
        }
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use etch_model::{ContentPart, ProviderItem};
    use serde_json::json;

    use super::*;

    /// A call part for tests.
    fn part(id: &str, name: &str, arguments: serde_json::Value) -> ContentPart {
        ContentPart::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        })
    }

    /// Images reach the summarizer as markers, never as bytes.
    #[test]
    fn images_are_named_by_markers() {
        let image = etch_model::Image::new(
            b"\x89PNG\r\n\x1a\nx".to_vec(),
            etch_model::MediaType::Png,
            40,
            30,
        );
        let messages = vec![
            Message::User {
                content: vec![
                    ContentPart::text("what is this?"),
                    ContentPart::Image(image.clone()),
                ],
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                tool_name: "read".into(),
                content: vec![
                    ContentPart::text("Read image file [image/png], 40x30"),
                    ContentPart::Image(image),
                ],
                is_error: false,
            },
        ];
        assert_eq!(
            serialize(&messages),
            "[User]: what is this?\n[image image/png 40x30]\n\n\
             [Tool result]: Read image file [image/png], 40x30\n[image image/png 40x30]"
        );
    }

    /// G24: one line group per message, blank lines between groups, calls as
    /// `name(compact JSON)` joined by `; `, provider items left out.
    #[test]
    fn lines_follow_g24() {
        let messages = vec![
            Message::user_text("fix the test"),
            Message::Assistant {
                content: vec![
                    ContentPart::text("Looking."),
                    part("c1", "read", json!({"path": "src/a.rs"})),
                    part(
                        "c2",
                        "bash",
                        json!({"command": "cargo test", "timeout": 60}),
                    ),
                ],
            },
            Message::ProviderItem(ProviderItem {
                provider: "openai".into(),
                api: "responses".into(),
                item_type: "reasoning".into(),
                item: json!({"encrypted": "xyz"}),
                model: None,
            }),
            Message::Tool {
                tool_call_id: "c1".into(),
                tool_name: "read".into(),
                content: vec![ContentPart::text("fn main() {}")],
                is_error: false,
            },
            Message::Assistant {
                content: vec![part("c3", "ls", json!({}))],
            },
            Message::Assistant {
                content: vec![ContentPart::text("Done.")],
            },
        ];
        assert_eq!(
            serialize(&messages),
            "[User]: fix the test\n\n\
             [Assistant]: Looking.\n\
             [Assistant tool calls]: read({\"path\":\"src/a.rs\"}); bash({\"command\":\"cargo test\",\"timeout\":60})\n\n\
             [Tool result]: fn main() {}\n\n\
             [Assistant tool calls]: ls({})\n\n\
             [Assistant]: Done."
        );
    }

    /// Long tool results keep 2000 characters (not bytes) and say how many
    /// were cut; user and assistant text is never cut.
    #[test]
    fn long_tool_results_are_truncated() {
        let long = format!("{}{}", "é".repeat(2000), "x".repeat(500));
        let messages = vec![
            Message::Tool {
                tool_call_id: "c".into(),
                tool_name: "bash".into(),
                content: vec![ContentPart::text(long.clone())],
                is_error: false,
            },
            Message::user_text(long.clone()),
        ];
        let out = serialize(&messages);
        let expected_tool = format!("[Tool result]: {}…[truncated 500 chars]", "é".repeat(2000));
        assert_eq!(out, format!("{expected_tool}\n\n[User]: {long}"));
        assert_eq!(truncate("short", 2000), "short");
        assert_eq!(truncate(&"a".repeat(2000), 2000), "a".repeat(2000));
    }
}
