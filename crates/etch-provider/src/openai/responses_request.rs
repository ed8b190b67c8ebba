//! The Responses API request body (G19, E-MOD-09/10/17/18).
//!
//! It owns the wire shape of a full-context `POST /responses`:
//! `{model, instructions, input, tools, stream, store:false,
//! prompt_cache_key}` plus `reasoning` and `include` when reasoning is
//! configured. Conversation messages become Responses input items (user and
//! assistant `message` items, `function_call` and `function_call_output`
//! items); OpenAI Responses provider items (encrypted reasoning) are replayed
//! verbatim as native input items, and every other provider's items are
//! skipped, so opaque state never leaks into a prompt as text.
//!
//! It must not know about HTTP, SSE, retries, the session log or
//! continuation: it never sends `previous_response_id` (continuation belongs
//! to the WebSocket transport, E-MOD-12/13).

use etch_model::{ContentPart, Message, ModelRequest, ProviderItem, ToolCall};
use serde::Serialize;
use serde_json::Value;

/// The `include` entry that asks for reasoning ciphertext (E-MOD-18).
pub const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// OpenAI's documented limit on `prompt_cache_key`, in characters (E-MOD-10).
pub const PROMPT_CACHE_KEY_CHARS: usize = 64;

/// The provider name whose items this API replays.
const PROVIDER: &str = "openai";

/// The API name whose items this API replays.
const API: &str = "responses";

/// The request body, borrowed from the provider-neutral request.
#[derive(Debug, Serialize)]
pub struct ResponsesBody<'a> {
    /// Model name.
    pub model: &'a str,
    /// All pinned system layers joined (G22). Always sent, even empty,
    /// because the ChatGPT/Codex backend requires the field.
    pub instructions: String,
    /// The full conversation as input items (E-MOD-09).
    pub input: Vec<InputItem<'a>>,
    /// Function tools sorted by name; omitted when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<FunctionTool<'a>>,
    /// True over HTTP, where etch always streams; false (and left out) in a
    /// WebSocket `response.create`, where streaming is implicit and the
    /// field is not accepted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// Always false: nothing is stored server-side, which ChatGPT/Codex
    /// OAuth requires (E-AUTH-06).
    pub store: bool,
    /// The session id clamped to [`PROMPT_CACHE_KEY_CHARS`], for prompt-cache
    /// affinity across turns; omitted when the session id is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<&'a str>,
    /// Reasoning effort and summary; omitted unless reasoning is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning<'a>>,
    /// Extra output to return: the reasoning ciphertext when reasoning is
    /// configured, so it can be replayed with `store:false`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<&'static str>,
    /// `required` when the answer must be a tool call; omitted otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
    /// `RequestOptions::max_output_tokens`; omitted when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

/// The `reasoning` object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reasoning<'a> {
    /// `none`, `minimal`, `low`, `medium`, `high` or `xhigh` (C35), passed
    /// through as configured (`config check` validates values).
    pub effort: &'a str,
    /// `auto`, `concise` or `detailed`; omitted for `none` or when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<&'a str>,
}

/// One input item on the wire.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum InputItem<'a> {
    /// A user or assistant `message` item.
    Message(MessageItem),
    /// An assistant `function_call` item.
    FunctionCall(FunctionCallItem<'a>),
    /// A `function_call_output` item (a tool result).
    FunctionCallOutput(FunctionCallOutputItem<'a>),
    /// A native item replayed verbatim (encrypted reasoning, E-MOD-18).
    Native(&'a Value),
}

/// A `message` input item.
#[derive(Debug, Serialize)]
pub struct MessageItem {
    /// Always `message`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `user` or `assistant`.
    pub role: &'static str,
    /// Text parts (`input_text` for the user, `output_text` for the
    /// assistant) and the user's `input_image` parts, in order.
    pub content: Vec<Part>,
}

/// A content part of a message item or a tool result.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Part {
    /// Text.
    Text(TextPart),
    /// An image.
    Image(ImagePart),
}

/// A text content part of a message item.
#[derive(Debug, Serialize)]
pub struct TextPart {
    /// `input_text` or `output_text`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The text, verbatim.
    pub text: String,
}

/// An `input_image` part.
#[derive(Debug, Serialize)]
pub struct ImagePart {
    /// Always `input_image`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Always `auto`.
    pub detail: &'static str,
    /// A `data:` URL (a string here, unlike Chat Completions' object).
    pub image_url: String,
}

/// What a tool result holds: text, or text and images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Output {
    /// Text alone.
    Text(String),
    /// `input_text` and `input_image` parts.
    Parts(Vec<Part>),
}

/// An `input_text` part.
fn input_text(text: String) -> Part {
    Part::Text(TextPart {
        kind: "input_text",
        text,
    })
}

/// The user-side parts of `content`: text and images in order, an image
/// that cannot be sent replaced by its marker.
fn input_parts(content: &[ContentPart], no_vision: bool) -> Vec<Part> {
    let mut parts = Vec::with_capacity(content.len());
    for part in content {
        match part {
            ContentPart::Text { text } => parts.push(input_text(text.clone())),
            ContentPart::Image(image) => {
                parts.push(
                    match image.sendable(no_vision).map(etch_model::Image::data_url) {
                        Ok(Some(image_url)) => Part::Image(ImagePart {
                            kind: "input_image",
                            detail: "auto",
                            image_url,
                        }),
                        Ok(None) => input_text(image.omitted(etch_model::image::MISSING)),
                        Err(marker) => input_text(marker),
                    },
                );
            }
            ContentPart::ToolCall(_) => {}
        }
    }
    parts
}

/// A `function_call` input item.
#[derive(Debug, Serialize)]
pub struct FunctionCallItem<'a> {
    /// Always `function_call`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The call id the result answers.
    pub call_id: &'a str,
    /// Tool name.
    pub name: &'a str,
    /// Arguments as JSON text (raw text when the model sent invalid JSON).
    pub arguments: String,
}

/// A `function_call_output` input item.
#[derive(Debug, Serialize)]
pub struct FunctionCallOutputItem<'a> {
    /// Always `function_call_output`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The call this result answers.
    pub call_id: &'a str,
    /// The result text (a failure's text starts `tool error: `, C36), or
    /// its text and images as parts.
    pub output: Output,
}

/// A function tool schema on the wire.
#[derive(Debug, Serialize)]
pub struct FunctionTool<'a> {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Tool name.
    pub name: &'a str,
    /// Tool description.
    pub description: &'a str,
    /// JSON Schema of the arguments.
    pub parameters: &'a Value,
    /// Always false. The Responses API defaults function tools to strict
    /// mode, which rejects (or rewrites) ordinary schemas with optional
    /// properties; etch's schemas are not written for strict mode, and
    /// Pi and Codex send `false` as well.
    pub strict: bool,
}

/// The reasoning settings to send, or `None` when reasoning is not
/// configured: no effort, an empty one, or `off` (C35). A summary of `none`
/// (or an empty one) is left out of the object.
pub fn reasoning<'a>(effort: Option<&'a str>, summary: Option<&'a str>) -> Option<Reasoning<'a>> {
    let effort = effort
        .map(str::trim)
        .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("off"))?;
    let summary = summary
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.eq_ignore_ascii_case("none"));
    Some(Reasoning { effort, summary })
}

/// `session_id` cut to at most [`PROMPT_CACHE_KEY_CHARS`] characters (on a
/// character boundary), or `None` when it is empty.
pub fn prompt_cache_key(session_id: &str) -> Option<&str> {
    if session_id.is_empty() {
        return None;
    }
    Some(
        match session_id.char_indices().nth(PROMPT_CACHE_KEY_CHARS) {
            Some((cut, _)) => &session_id[..cut],
            None => session_id,
        },
    )
}

/// Builds the full-context body for `request`, `model` and the resolved
/// reasoning settings (see [`reasoning`]).
pub fn build<'a>(
    request: &'a ModelRequest,
    model: &'a str,
    reasoning: Option<Reasoning<'a>>,
) -> ResponsesBody<'a> {
    build_from(request, 0, model, reasoning)
}

/// Builds a body whose input holds only `request.messages[from..]`: the
/// delta a continuation sends after `previous_response_id` (E-MOD-12). The
/// instructions and tools are always complete, since a continued response
/// does not inherit them.
pub fn build_from<'a>(
    request: &'a ModelRequest,
    from: usize,
    model: &'a str,
    reasoning: Option<Reasoning<'a>>,
) -> ResponsesBody<'a> {
    let mut tools: Vec<FunctionTool<'a>> = request
        .tools
        .iter()
        .map(|t| FunctionTool {
            kind: "function",
            name: &t.name,
            description: &t.description,
            parameters: &t.parameters,
            strict: false,
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(b.name));
    let tool_choice = (request.options.require_tool && !tools.is_empty()).then_some("required");
    let include = if reasoning.is_some() {
        vec![ENCRYPTED_REASONING]
    } else {
        Vec::new()
    };
    ResponsesBody {
        model,
        instructions: request.system_prompt(),
        input: input_items(
            request.messages.get(from..).unwrap_or_default(),
            model,
            request.options.no_vision,
        ),
        tools,
        stream: true,
        store: false,
        prompt_cache_key: prompt_cache_key(&request.options.session_id),
        reasoning,
        include,
        tool_choice,
        max_output_tokens: request.options.max_output_tokens,
    }
}

/// Whether this API may replay `item` to `model`: only OpenAI Responses
/// items that model takes, and only JSON objects (anything else would be
/// rejected by the server).
fn replayable(item: &ProviderItem, model: &str) -> bool {
    item.replays_to(PROVIDER, API, model) && item.item.is_object()
}

/// Converts the conversation into input items.
///
/// The session log records a pass's provider items after its assistant
/// message (E-SES-15), but the Responses API wants a reasoning item before
/// the output it led to. So the run of provider items right after an
/// assistant message is sent ahead of that message's items; if the
/// assistant message yields no items at all, its reasoning is dropped too,
/// since a reasoning item without its following output is rejected.
fn input_items<'a>(messages: &'a [Message], model: &str, no_vision: bool) -> Vec<InputItem<'a>> {
    let mut items = Vec::with_capacity(messages.len());
    let mut at = 0;
    while let Some(message) = messages.get(at) {
        at += 1;
        match message {
            Message::User { content } => {
                let content = if content.iter().any(|p| matches!(p, ContentPart::Image(_))) {
                    input_parts(content, no_vision)
                } else {
                    vec![input_text(etch_model::content::joined_text(content))]
                };
                items.push(InputItem::Message(MessageItem {
                    kind: "message",
                    role: "user",
                    content,
                }));
            }
            Message::Assistant { content } => {
                let pass_items = at;
                while matches!(messages.get(at), Some(Message::ProviderItem(_))) {
                    at += 1;
                }
                let answer = assistant_items(content);
                if !answer.is_empty() {
                    items.extend(messages[pass_items..at].iter().filter_map(|m| match m {
                        Message::ProviderItem(item) if replayable(item, model) => {
                            Some(InputItem::Native(&item.item))
                        }
                        _ => None,
                    }));
                    items.extend(answer);
                }
            }
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => items.push(InputItem::FunctionCallOutput(FunctionCallOutputItem {
                kind: "function_call_output",
                call_id: tool_call_id,
                output: if content.iter().any(|p| matches!(p, ContentPart::Image(_))) {
                    Output::Parts(input_parts(content, no_vision))
                } else {
                    Output::Text(etch_model::content::joined_text(content))
                },
            })),
            Message::ProviderItem(item) => {
                if replayable(item, model) {
                    items.push(InputItem::Native(&item.item));
                }
            }
        }
    }
    items
}

/// The items of one assistant message, in order: each run of text becomes
/// an assistant `message` item (empty text is left out), each tool call a
/// `function_call` item.
fn assistant_items(content: &[ContentPart]) -> Vec<InputItem<'_>> {
    let mut items = Vec::new();
    let mut text = String::new();
    for part in content {
        match part {
            ContentPart::Text { text: piece } => text.push_str(piece),
            ContentPart::ToolCall(call) => {
                flush_text(&mut text, &mut items);
                items.push(InputItem::FunctionCall(function_call(call)));
            }
            // The model's own messages carry no images.
            ContentPart::Image(_) => {}
        }
    }
    flush_text(&mut text, &mut items);
    items
}

/// Appends the pending assistant text as a `message` item, if any.
fn flush_text(text: &mut String, items: &mut Vec<InputItem<'_>>) {
    if text.is_empty() {
        return;
    }
    items.push(InputItem::Message(MessageItem {
        kind: "message",
        role: "assistant",
        content: vec![Part::Text(TextPart {
            kind: "output_text",
            text: std::mem::take(text),
        })],
    }));
}

/// A `function_call` item for a logged tool call. Invalid argument text kept
/// as a JSON string goes back verbatim; a missing value is sent as `{}`.
fn function_call(call: &ToolCall) -> FunctionCallItem<'_> {
    FunctionCallItem {
        kind: "function_call",
        call_id: &call.id,
        name: &call.name,
        arguments: match &call.arguments {
            Value::String(raw) => raw.clone(),
            Value::Null => "{}".to_owned(),
            other => other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etch_model::{RequestOptions, SystemLayer, ToolSpec};
    use serde_json::json;

    /// An OpenAI Responses reasoning item carrying `ciphertext`.
    fn reasoning_item(ciphertext: &str) -> Message {
        Message::ProviderItem(ProviderItem {
            provider: "openai".into(),
            api: "responses".into(),
            item_type: "reasoning".into(),
            item: json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": ciphertext}),
            model: None,
        })
    }

    /// A request with two system layers, two tools and `messages`.
    fn request(messages: Vec<Message>, session_id: &str) -> ModelRequest {
        ModelRequest {
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
            messages,
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
            options: RequestOptions {
                session_id: session_id.into(),
                ..RequestOptions::default()
            },
        }
    }

    /// G19: the exact wire shape of a tool round trip without reasoning:
    /// instructions, input items, sorted non-strict tools, `store:false`,
    /// the cache key, and no reasoning, include or previous_response_id.
    #[test]
    fn body_has_the_responses_shape() {
        let request = request(
            vec![
                Message::user_text("read a"),
                Message::Assistant {
                    content: vec![
                        ContentPart::text("Reading."),
                        ContentPart::ToolCall(ToolCall {
                            id: "c1".into(),
                            name: "read".into(),
                            arguments: json!({"path": "a"}),
                        }),
                        ContentPart::ToolCall(ToolCall {
                            id: "c2".into(),
                            name: "bash".into(),
                            arguments: json!("{not json"),
                        }),
                    ],
                },
                Message::Tool {
                    tool_call_id: "c1".into(),
                    tool_name: "read".into(),
                    content: vec![ContentPart::text("x")],
                    is_error: false,
                },
                Message::Tool {
                    tool_call_id: "c2".into(),
                    tool_name: "bash".into(),
                    content: vec![ContentPart::text("tool error: bad arguments")],
                    is_error: true,
                },
                Message::Assistant {
                    content: vec![ContentPart::text("Done.")],
                },
            ],
            "sess-1",
        );
        let body = serde_json::to_value(build(&request, "gpt-5", None)).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "gpt-5",
                "instructions": "Be brief.\n\ncwd: /w",
                "input": [
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read a"}]},
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
                    {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"},
                    {"type": "function_call", "call_id": "c2", "name": "bash", "arguments": "{not json"},
                    {"type": "function_call_output", "call_id": "c1", "output": "x"},
                    {"type": "function_call_output", "call_id": "c2", "output": "tool error: bad arguments"},
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}
                ],
                "tools": [
                    {"type": "function", "name": "bash", "description": "b", "parameters": {"type": "object"}, "strict": false},
                    {"type": "function", "name": "read", "description": "r", "parameters": {"type": "object"}, "strict": false}
                ],
                "stream": true,
                "store": false,
                "prompt_cache_key": "sess-1"
            })
        );
    }

    /// A reply that must be a call says so, and carries its cap when one
    /// is set; neither appears otherwise.
    #[test]
    fn a_required_call_and_its_cap_are_sent_only_when_set() {
        let mut request = request(vec![Message::user_text("read a")], "s");
        let body = serde_json::to_value(build(&request, "m", None)).unwrap();
        assert!(body.get("tool_choice").is_none() && body.get("max_output_tokens").is_none());
        request.options.require_tool = true;
        request.options.max_output_tokens = Some(512);
        let body = serde_json::to_value(build(&request, "m", None)).unwrap();
        assert_eq!(body["tool_choice"], "required");
        assert_eq!(body["max_output_tokens"], 512);
    }

    /// E-MOD-10: the cache key is the session id cut at 64 characters (on a
    /// character boundary), and absent for an empty session id.
    #[test]
    fn prompt_cache_key_is_clamped_at_64_chars() {
        let long = "a".repeat(70);
        assert_eq!(prompt_cache_key(&long), Some(&long[..64]));
        let exact = "b".repeat(64);
        assert_eq!(prompt_cache_key(&exact), Some(exact.as_str()));
        let wide = "é".repeat(65);
        assert_eq!(prompt_cache_key(&wide).map(|k| k.chars().count()), Some(64));
        assert_eq!(prompt_cache_key(""), None);
        let body = serde_json::to_value(build(&request(Vec::new(), &long), "m", None)).unwrap();
        assert_eq!(body["prompt_cache_key"], json!("a".repeat(64)));
        let body = serde_json::to_value(build(&request(Vec::new(), ""), "m", None)).unwrap();
        assert!(body.get("prompt_cache_key").is_none());
    }

    /// C35/E-MOD-18: reasoning and include appear only when an effort other
    /// than `off` is set; a `none` summary is left out of the object.
    #[test]
    fn reasoning_and_include_only_when_configured() {
        assert_eq!(reasoning(None, Some("auto")), None);
        assert_eq!(reasoning(Some("off"), Some("auto")), None);
        assert_eq!(reasoning(Some("OFF"), None), None);
        assert_eq!(reasoning(Some(""), None), None);
        assert_eq!(
            reasoning(Some("minimal"), Some("none")),
            Some(Reasoning {
                effort: "minimal",
                summary: None
            })
        );
        let request = request(vec![Message::user_text("hi")], "s");
        let body =
            serde_json::to_value(build(&request, "m", reasoning(Some("high"), Some("auto"))))
                .unwrap();
        assert_eq!(
            body["reasoning"],
            json!({"effort": "high", "summary": "auto"})
        );
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        let body =
            serde_json::to_value(build(&request, "m", reasoning(Some("low"), None))).unwrap();
        assert_eq!(body["reasoning"], json!({"effort": "low"}));
        let body = serde_json::to_value(build(&request, "m", reasoning(Some("off"), Some("auto"))))
            .unwrap();
        assert!(body.get("reasoning").is_none() && body.get("include").is_none());
    }

    /// E-MOD-18: OpenAI Responses items go back verbatim, ahead of the
    /// assistant output they were logged after; other providers' items,
    /// Chat Completions items, non-object items and items bound to
    /// another model are skipped.
    #[test]
    fn provider_items_are_replayed_or_skipped() {
        let foreign = Message::ProviderItem(ProviderItem {
            provider: "anthropic".into(),
            api: "messages".into(),
            item_type: "thinking".into(),
            item: json!({"type": "thinking", "signature": "s"}),
            model: None,
        });
        let chat = Message::ProviderItem(ProviderItem {
            provider: "openai".into(),
            api: "chat".into(),
            item_type: "reasoning".into(),
            item: json!({"type": "reasoning"}),
            model: None,
        });
        let null = Message::ProviderItem(ProviderItem {
            provider: "openai".into(),
            api: "responses".into(),
            item_type: "reasoning".into(),
            item: Value::Null,
            model: None,
        });
        // Bound to another model (a signature imported from Pi).
        let other_model = Message::ProviderItem(ProviderItem {
            provider: "openai".into(),
            api: "responses".into(),
            item_type: "reasoning".into(),
            item: json!({"type": "reasoning", "encrypted_content": "OTHER_MODEL"}),
            model: Some("gpt-older".into()),
        });
        let request = request(
            vec![
                Message::user_text("q"),
                Message::Assistant {
                    content: vec![ContentPart::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "ls".into(),
                        arguments: json!({}),
                    })],
                },
                reasoning_item("ENC1"),
                foreign,
                chat,
                null,
                other_model,
                Message::Tool {
                    tool_call_id: "c1".into(),
                    tool_name: "ls".into(),
                    content: vec![ContentPart::text("a b")],
                    is_error: false,
                },
                Message::Assistant {
                    content: vec![ContentPart::text("two files")],
                },
                reasoning_item("ENC2"),
            ],
            "s",
        );
        let body = serde_json::to_value(build(&request, "m", None)).unwrap();
        assert!(!body.to_string().contains("OTHER_MODEL"));
        let types: Vec<&str> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "message",
                "reasoning",
                "function_call",
                "function_call_output",
                "reasoning",
                "message"
            ]
        );
        assert_eq!(
            body["input"][1],
            json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "ENC1"})
        );
        assert_eq!(body["input"][4]["encrypted_content"], "ENC2");
        assert!(!body.to_string().contains("signature"));
    }

    /// A reasoning item whose pass produced no output is dropped with it
    /// (the API rejects reasoning without its following item); a provider
    /// item that follows no assistant message is sent where it is.
    #[test]
    fn reasoning_of_an_empty_pass_is_dropped() {
        let request = request(
            vec![
                reasoning_item("LONE"),
                Message::user_text("q"),
                Message::Assistant {
                    content: vec![ContentPart::text("")],
                },
                reasoning_item("EMPTY"),
                Message::user_text("again"),
            ],
            "s",
        );
        let body = serde_json::to_value(build(&request, "m", None)).unwrap();
        let input = body["input"].as_array().unwrap();
        assert_eq!(input.len(), 3);
        assert_eq!(input[0]["encrypted_content"], "LONE");
        assert_eq!(input[1]["content"][0]["text"], "q");
        assert_eq!(input[2]["content"][0]["text"], "again");
    }

    /// Text and calls keep their order inside one assistant message, each
    /// text run becoming its own message item.
    #[test]
    fn assistant_text_and_calls_keep_their_order() {
        let content = vec![
            ContentPart::text("a"),
            ContentPart::text("b"),
            ContentPart::ToolCall(ToolCall {
                id: "c".into(),
                name: "ls".into(),
                arguments: Value::Null,
            }),
            ContentPart::text("c"),
        ];
        let items = serde_json::to_value(assistant_items(&content)).unwrap();
        assert_eq!(
            items,
            json!([
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ab"}]},
                {"type": "function_call", "call_id": "c", "name": "ls", "arguments": "{}"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "c"}]}
            ])
        );
    }
}
