//! The Chat Completions request body (G19, E-MOD-11).
//!
//! The narrow compatibility shape every OpenAI-compatible server accepts:
//! `{model, messages, tools, stream, stream_options}` and nothing else: no
//! `store`, reasoning or cache fields, which many local servers reject.
//! The one addition is `tool_choice: "required"` with
//! `parallel_tool_calls: false` on a request that must call a tool
//! (`RequestOptions::require_tool`, the loop's grounding): OpenAI, vLLM,
//! Ollama and llama.cpp (whose `--jinja` servers turn it into a grammar
//! that only admits tool calls) take both. All pinned system layers travel as one `system` message;
//! tools are sorted by name; tool-call arguments are sent as JSON text;
//! provider items of other APIs are left out.

use etch_model::{ContentPart, Message, ModelRequest};
use serde::Serialize;
use serde_json::Value;

/// The request body, borrowed from the provider-neutral request.
#[derive(Debug, Serialize)]
pub struct ChatBody<'a> {
    /// Model name.
    pub model: &'a str,
    /// Conversation, system message first.
    pub messages: Vec<ChatMessage<'a>>,
    /// Tool schemas; omitted when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ChatTool<'a>>,
    /// Always true: etch streams.
    pub stream: bool,
    /// Asks for a final usage chunk (G19); omitted when disabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// `required` when the answer must be a tool call; omitted otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
    /// `false`, sent with `tool_choice`: a forced answer is one call,
    /// whose result the model sees before it calls again (a small model
    /// forced to call otherwise emits calls until its output limit cuts
    /// one in half); omitted otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// `RequestOptions::max_output_tokens`; omitted when unset. Servers
    /// that speak this API (llama.cpp, vLLM, Ollama) take `max_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// `stream_options`.
#[derive(Debug, Serialize)]
pub struct StreamOptions {
    /// Ask for usage in the last chunk.
    pub include_usage: bool,
}

/// One message on the wire.
#[derive(Debug, Serialize)]
pub struct ChatMessage<'a> {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: &'static str,
    /// Text content, or text and image parts for a user message with
    /// images; `null` for an assistant message that only calls tools.
    pub content: Option<ChatContent>,
    /// Assistant tool calls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireToolCall<'a>>,
    /// The call a tool result answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
}

/// A message's content: a string, or parts when images come with it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ChatContent {
    /// Plain text.
    Text(String),
    /// Text and `image_url` parts, in order.
    Parts(Vec<ChatPart>),
}

/// One part of a user message.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image as a `data:` URL.
    ImageUrl {
        /// `{"url": "data:image/png;base64,…"}`.
        image_url: ImageUrl,
    },
}

/// The `image_url` object.
#[derive(Debug, Serialize)]
pub struct ImageUrl {
    /// The data URL.
    pub url: String,
}

/// What introduces the images of tool results, sent as a user message
/// after the results: a `tool` message takes text only (Pi does the same).
pub const TOOL_IMAGES_INTRO: &str = "Attached image(s) from tool result:";

/// What a tool message says when its result was only images.
pub const SEE_ATTACHED: &str = "(see attached image)";

/// An assistant tool call on the wire.
#[derive(Debug, Serialize)]
pub struct WireToolCall<'a> {
    /// Call id.
    pub id: &'a str,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Name and arguments.
    pub function: WireFunction<'a>,
}

/// The function part of a tool call.
#[derive(Debug, Serialize)]
pub struct WireFunction<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Arguments as JSON text (raw text when the model sent invalid JSON).
    pub arguments: String,
}

/// A tool schema on the wire.
#[derive(Debug, Serialize)]
pub struct ChatTool<'a> {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Name, description, parameters.
    pub function: ToolFunction<'a>,
}

/// The function part of a tool schema.
#[derive(Debug, Serialize)]
pub struct ToolFunction<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Tool description.
    pub description: &'a str,
    /// JSON Schema of the arguments.
    pub parameters: &'a Value,
}

/// Concatenated text of content parts.
fn text_of(parts: &[ContentPart]) -> String {
    etch_model::content::joined_text(parts)
}

/// The content of a user message: its text alone when it has no image
/// (what every server takes), else its parts in order, an image that
/// cannot be sent replaced by its marker.
fn user_content(parts: &[ContentPart], no_vision: bool) -> ChatContent {
    if !parts.iter().any(|p| matches!(p, ContentPart::Image(_))) {
        return ChatContent::Text(text_of(parts));
    }
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            ContentPart::Text { text } if text.is_empty() => {}
            ContentPart::Text { text } => out.push(ChatPart::Text { text: text.clone() }),
            ContentPart::Image(image) => out.push(image_part(image, no_vision)),
            ContentPart::ToolCall(_) => {}
        }
    }
    ChatContent::Parts(out)
}

/// An image as an `image_url` part, or its marker as text.
fn image_part(image: &etch_model::Image, no_vision: bool) -> ChatPart {
    match image.sendable(no_vision).map(etch_model::Image::data_url) {
        Ok(Some(url)) => ChatPart::ImageUrl {
            image_url: ImageUrl { url },
        },
        Ok(None) => ChatPart::Text {
            text: image.omitted(etch_model::image::MISSING),
        },
        Err(marker) => ChatPart::Text { text: marker },
    }
}

/// Sends the images gathered from a run of tool messages as one user
/// message after them.
fn flush_tool_images(messages: &mut Vec<ChatMessage<'_>>, images: &mut Vec<ChatPart>) {
    if images.is_empty() {
        return;
    }
    let mut parts = vec![ChatPart::Text {
        text: TOOL_IMAGES_INTRO.to_owned(),
    }];
    parts.append(images);
    messages.push(ChatMessage {
        role: "user",
        content: Some(ChatContent::Parts(parts)),
        tool_calls: Vec::new(),
        tool_call_id: None,
    });
}

/// Builds the body for `request` and `model`.
pub fn build<'a>(request: &'a ModelRequest, model: &'a str, stream_usage: bool) -> ChatBody<'a> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let system = request.system_prompt();
    if !system.is_empty() {
        messages.push(ChatMessage {
            role: "system",
            content: Some(ChatContent::Text(system)),
            tool_calls: Vec::new(),
            tool_call_id: None,
        });
    }
    let no_vision = request.options.no_vision;
    // Images of tool results wait until the run of tool messages ends:
    // a user message between two results would break the run.
    let mut tool_images: Vec<ChatPart> = Vec::new();
    for message in &request.messages {
        if !matches!(message, Message::Tool { .. } | Message::ProviderItem(_)) {
            flush_tool_images(&mut messages, &mut tool_images);
        }
        match message {
            Message::User { content } => messages.push(ChatMessage {
                role: "user",
                content: Some(user_content(content, no_vision)),
                tool_calls: Vec::new(),
                tool_call_id: None,
            }),
            Message::Assistant { content } => {
                let tool_calls: Vec<WireToolCall<'a>> = content
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::ToolCall(call) => Some(WireToolCall {
                            id: &call.id,
                            kind: "function",
                            function: WireFunction {
                                name: &call.name,
                                arguments: wire_arguments(&call.arguments),
                            },
                        }),
                        ContentPart::Text { .. } | ContentPart::Image(_) => None,
                    })
                    .collect();
                let text = text_of(content);
                let content = if text.is_empty() && !tool_calls.is_empty() {
                    None
                } else {
                    Some(ChatContent::Text(text))
                };
                messages.push(ChatMessage {
                    role: "assistant",
                    content,
                    tool_calls,
                    tool_call_id: None,
                });
            }
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => {
                let mut text = text_of(content);
                let mut images = Vec::new();
                for part in content {
                    let ContentPart::Image(image) = part else {
                        continue;
                    };
                    // A marker belongs with the result's text.
                    match image_part(image, no_vision) {
                        ChatPart::Text { text: marker } => {
                            text.push('\n');
                            text.push_str(&marker);
                        }
                        url @ ChatPart::ImageUrl { .. } => images.push(url),
                    }
                }
                if text.is_empty() && !images.is_empty() {
                    SEE_ATTACHED.clone_into(&mut text);
                }
                tool_images.extend(images);
                messages.push(ChatMessage {
                    role: "tool",
                    content: Some(ChatContent::Text(text)),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(tool_call_id),
                });
            }
            Message::ProviderItem(_) => {}
        }
    }
    flush_tool_images(&mut messages, &mut tool_images);
    let mut tools: Vec<ChatTool<'a>> = request
        .tools
        .iter()
        .map(|t| ChatTool {
            kind: "function",
            function: ToolFunction {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        })
        .collect();
    tools.sort_by(|a, b| a.function.name.cmp(b.function.name));
    let require = request.options.require_tool && !tools.is_empty();
    ChatBody {
        model,
        messages,
        tools,
        stream: true,
        stream_options: stream_usage.then_some(StreamOptions {
            include_usage: true,
        }),
        tool_choice: require.then_some("required"),
        parallel_tool_calls: require.then_some(false),
        max_tokens: request.options.max_output_tokens,
    }
}

/// A call's arguments as JSON text. Arguments that never parsed (a
/// stream cut mid-call; the call got an error result saying so) go as
/// `{}`: servers that read the history's calls (llama.cpp) refuse the
/// whole request over one broken call, which would end the session.
fn wire_arguments(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) if serde_json::from_str::<Value>(raw).is_ok_and(|v| v.is_object()) => {
            raw.clone()
        }
        Value::String(_) => "{}".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etch_model::{RequestOptions, SystemLayer, ToolCall, ToolSpec};
    use serde_json::json;

    /// G19: the exact wire shape for a conversation with a tool round trip.
    #[test]
    fn body_has_the_compatibility_shape() {
        let request = ModelRequest {
            system: vec![
                SystemLayer {
                    name: "base".into(),
                    text: "Be brief.".into(),
                },
                SystemLayer {
                    name: "env".into(),
                    text: "cwd: /w".into(),
                },
            ],
            messages: vec![
                Message::user_text("read a"),
                Message::Assistant {
                    content: vec![ContentPart::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a"}),
                    })],
                },
                Message::Tool {
                    tool_call_id: "c1".into(),
                    tool_name: "read".into(),
                    content: vec![ContentPart::text("x")],
                    is_error: false,
                },
                Message::ProviderItem(etch_model::ProviderItem {
                    provider: "openai".into(),
                    api: "responses".into(),
                    item_type: "reasoning".into(),
                    item: json!({}),
                    model: None,
                }),
            ],
            tools: vec![
                ToolSpec {
                    name: "read".into(),
                    description: "r".into(),
                    parameters: json!({"type": "object"}),
                },
                ToolSpec {
                    name: "bash".into(),
                    description: "b".into(),
                    parameters: json!({"type": "object"}),
                },
            ],
            options: RequestOptions::default(),
        };
        let body = serde_json::to_value(build(&request, "m", true)).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "Be brief.\n\ncwd: /w"},
                    {"role": "user", "content": "read a"},
                    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}]},
                    {"role": "tool", "content": "x", "tool_call_id": "c1"}
                ],
                "tools": [
                    {"type": "function", "function": {"name": "bash", "description": "b", "parameters": {"type": "object"}}},
                    {"type": "function", "function": {"name": "read", "description": "r", "parameters": {"type": "object"}}}
                ],
                "stream": true,
                "stream_options": {"include_usage": true}
            })
        );
        let no_usage = serde_json::to_value(build(&request, "m", false)).unwrap();
        assert!(no_usage.get("stream_options").is_none());

        // A request that must call a tool says so, and only then.
        let mut required = request.clone();
        required.options.require_tool = true;
        let body = serde_json::to_value(build(&required, "m", true)).unwrap();
        assert_eq!(body["tool_choice"], "required");
        assert_eq!(body["parallel_tool_calls"], false);
        assert!(body.get("max_tokens").is_none(), "no cap unless asked");
        required.options.max_output_tokens = Some(512);
        let body = serde_json::to_value(build(&required, "m", true)).unwrap();
        assert_eq!(body["max_tokens"], 512);
        // A call whose arguments never parsed goes as `{}`.
        required.messages[1] = Message::Assistant {
            content: vec![ContentPart::ToolCall(ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: Value::String("{\"pa".into()),
            })],
        };
        let body = serde_json::to_value(build(&required, "m", true)).unwrap();
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{}"
        );
        required.tools.clear();
        let body = serde_json::to_value(build(&required, "m", true)).unwrap();
        assert!(body.get("tool_choice").is_none(), "no tools, no choice");
    }
}
