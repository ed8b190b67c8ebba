//! The Anthropic Messages request body (G19, C29, C35).
//!
//! It owns the mapping from the provider-neutral [`ModelRequest`] to the
//! native `/v1/messages` shape: the joined system prompt as `system`, content
//! blocks per message (`text`, `tool_use`, `tool_result`), the thinking
//! blocks replayed from Anthropic's own `model.provider_item`s, tools sorted
//! by name, and the `thinking` parameter. Anthropic requires user and
//! assistant turns to alternate, so consecutive same-role messages are merged
//! (tool results become user content).
//!
//! It must not know about HTTP, streaming or retries, nor interpret the
//! provider items of other providers: those are skipped, so opaque state of
//! one vendor never reaches another as text.

use std::borrow::Cow;

use etch_model::{ContentPart, Message, ModelRequest, ProviderItem};
use serde::Serialize;
use serde_json::Value;

/// The `provider` of the items this provider replays.
pub const PROVIDER: &str = "anthropic";

/// The `api` of the items this provider replays.
pub const API: &str = "messages";

/// Output tokens kept for the answer on top of the thinking budget, since
/// Anthropic requires `max_tokens` to exceed `budget_tokens`.
const ANSWER_TOKENS_OVER_BUDGET: u32 = 4096;

/// The request body, borrowed from the provider-neutral request.
#[derive(Debug, Serialize)]
pub struct MessagesBody<'a> {
    /// Model name.
    pub model: &'a str,
    /// Output token limit (thinking included).
    pub max_tokens: u32,
    /// The joined system layers; omitted when empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation, strictly alternating user and assistant.
    pub messages: Vec<WireMessage<'a>>,
    /// Tool schemas sorted by name; omitted when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<WireTool<'a>>,
    /// Always true: etch streams.
    pub stream: bool,
    /// Extended thinking, only when a budget is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// `{"type": "any"}` when the answer must be a tool call; omitted
    /// otherwise, and always with thinking on, which only allows `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

/// The `tool_choice` parameter.
#[derive(Debug, Serialize)]
pub struct ToolChoice {
    /// Always `any`: some tool, the model's pick.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// The `thinking` parameter.
#[derive(Debug, Serialize)]
pub struct Thinking {
    /// Always `enabled`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Most tokens the model may spend thinking.
    pub budget_tokens: u32,
}

/// One message on the wire.
#[derive(Debug, Serialize)]
pub struct WireMessage<'a> {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// Content blocks, never empty.
    pub content: Vec<Block<'a>>,
}

/// One content block. Untagged because a replayed block is sent verbatim and
/// already carries its own `type`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Block<'a> {
    /// `{"type":"text","text"}`.
    Text(TextBlock),
    /// `{"type":"tool_use","id","name","input"}`.
    ToolUse(ToolUseBlock<'a>),
    /// `{"type":"tool_result","tool_use_id","content","is_error"}`.
    ToolResult(ToolResultBlock<'a>),
    /// `{"type":"image","source":{"type":"base64","media_type","data"}}`.
    Image(ImageBlock),
    /// A `thinking` or `redacted_thinking` block exactly as Anthropic sent
    /// it (its signature must come back unchanged).
    Replay(&'a Value),
}

/// A text block.
#[derive(Debug, Serialize)]
pub struct TextBlock {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The text (never empty: Anthropic rejects empty text blocks).
    pub text: String,
}

/// A tool call made by the assistant.
#[derive(Debug, Serialize)]
pub struct ToolUseBlock<'a> {
    /// Always `tool_use`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Call id, restricted to the characters Anthropic accepts.
    pub id: Cow<'a, str>,
    /// Tool name.
    pub name: &'a str,
    /// The arguments object (`{}` when the model sent invalid JSON).
    pub input: Cow<'a, Value>,
}

/// The result of one tool call, sent as user content.
#[derive(Debug, Serialize)]
pub struct ToolResultBlock<'a> {
    /// Always `tool_result`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The call this answers (same mapping as [`ToolUseBlock::id`]).
    pub tool_use_id: Cow<'a, str>,
    /// The result text, or its text and images as blocks.
    pub content: ToolResultContent,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// What a tool result holds.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// Text alone.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<Block<'static>>),
}

/// An image block.
#[derive(Debug, Serialize)]
pub struct ImageBlock {
    /// Always `image`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The bytes.
    pub source: ImageSource,
}

/// An image block's `source`.
#[derive(Debug, Serialize)]
pub struct ImageSource {
    /// Always `base64`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: &'static str,
    /// The bytes in base64.
    pub data: String,
}

/// What a result made only of images says as its text (Pi does the same:
/// a result block with no text reads as empty to some models).
pub const SEE_ATTACHED: &str = "(see attached image)";

/// An image as a block, or its marker as a text block.
fn image_block(image: &etch_model::Image, no_vision: bool) -> Block<'static> {
    let data = image.sendable(no_vision).map(etch_model::Image::base64);
    match data {
        Ok(Some(data)) => Block::Image(ImageBlock {
            kind: "image",
            source: ImageSource {
                kind: "base64",
                media_type: image.media_type.mime(),
                data,
            },
        }),
        Ok(None) => text_block(image.omitted(etch_model::image::MISSING)),
        Err(marker) => text_block(marker),
    }
}

/// The blocks of a user message: text and images in order.
fn user_blocks(content: &[ContentPart], no_vision: bool) -> Vec<Block<'static>> {
    content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } if text.is_empty() => None,
            ContentPart::Text { text } => Some(text_block(text.clone())),
            ContentPart::Image(image) => Some(image_block(image, no_vision)),
            ContentPart::ToolCall(_) => None,
        })
        .collect()
}

/// A tool result's content: its text alone, or its text and images as
/// blocks.
fn tool_result_content(content: &[ContentPart], no_vision: bool) -> ToolResultContent {
    if !content.iter().any(|p| matches!(p, ContentPart::Image(_))) {
        return ToolResultContent::Text(etch_model::content::joined_text(content));
    }
    let mut blocks = user_blocks(content, no_vision);
    if !blocks.iter().any(|b| matches!(b, Block::Text(_))) {
        blocks.insert(0, text_block(SEE_ATTACHED.to_owned()));
    }
    ToolResultContent::Blocks(blocks)
}

/// A tool schema on the wire.
#[derive(Debug, Serialize)]
pub struct WireTool<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Tool description.
    pub description: &'a str,
    /// JSON Schema of the arguments.
    pub input_schema: &'a Value,
}

/// Builds the body for `request`.
///
/// With a `thinking_budget`, `max_tokens` is raised to leave room for an
/// answer beyond the budget. Thinking is left off for a request that
/// continues a tool round whose assistant message has no thinking block (one
/// made with thinking off, or by another provider): Anthropic rejects such a
/// request rather than thinking anew.
pub fn build<'a>(
    request: &'a ModelRequest,
    model: &'a str,
    max_tokens: u32,
    thinking_budget: Option<u32>,
) -> MessagesBody<'a> {
    let messages = messages(&request.messages, model, request.options.no_vision);
    let thinking = thinking_budget
        .filter(|_| !continues_unthought_tool_round(&messages))
        .map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        });
    let max_tokens = match &thinking {
        Some(t) => max_tokens.max(t.budget_tokens.saturating_add(ANSWER_TOKENS_OVER_BUDGET)),
        None => request
            .options
            .max_output_tokens
            .map_or(max_tokens, |cap| max_tokens.min(cap.max(1))),
    };
    let mut tools: Vec<WireTool<'a>> = request
        .tools
        .iter()
        .map(|t| WireTool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.parameters,
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(b.name));
    let system = request.system_prompt();
    let tool_choice = (request.options.require_tool && !tools.is_empty() && thinking.is_none())
        .then_some(ToolChoice { kind: "any" });
    MessagesBody {
        model,
        max_tokens,
        system: (!system.is_empty()).then_some(system),
        messages,
        tools,
        stream: true,
        thinking,
        tool_choice,
    }
}

/// Maps the conversation to alternating wire messages.
fn messages<'a>(messages: &'a [Message], model: &str, no_vision: bool) -> Vec<WireMessage<'a>> {
    let mut replays = replays_by_owner(messages, model);
    let mut out: Vec<WireMessage<'_>> = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        match message {
            Message::User { content } => {
                let blocks = user_blocks(content, no_vision);
                if !blocks.is_empty() {
                    push(&mut out, "user", blocks);
                }
            }
            Message::Assistant { content } => {
                let answer = assistant_blocks(content);
                // A message of thinking alone (cut off before any answer) is
                // dropped whole: it answers nothing.
                if !answer.is_empty() {
                    let mut blocks: Vec<Block<'_>> = std::mem::take(&mut replays[index])
                        .into_iter()
                        .map(Block::Replay)
                        .collect();
                    blocks.extend(answer);
                    push(&mut out, "assistant", blocks);
                }
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => push(
                &mut out,
                "user",
                vec![Block::ToolResult(ToolResultBlock {
                    kind: "tool_result",
                    tool_use_id: wire_id(tool_call_id),
                    content: tool_result_content(content, no_vision),
                    is_error: *is_error,
                })],
            ),
            Message::ProviderItem(_) => {}
        }
    }
    for message in &mut out {
        if message.role == "user" {
            // Tool results must lead the user message that answers a
            // `tool_use`; a stable partition keeps every other order.
            message
                .content
                .sort_by_key(|b| !matches!(b, Block::ToolResult(_)));
        }
    }
    out
}

/// The text and `tool_use` blocks of an assistant message, in order.
fn assistant_blocks(content: &[ContentPart]) -> Vec<Block<'_>> {
    content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } if text.is_empty() => None,
            ContentPart::Text { text } => Some(text_block(text.clone())),
            ContentPart::ToolCall(call) => Some(Block::ToolUse(ToolUseBlock {
                kind: "tool_use",
                id: wire_id(&call.id),
                name: &call.name,
                input: tool_input(&call.arguments),
            })),
            // The model's own messages carry no images.
            ContentPart::Image(_) => None,
        })
        .collect()
}

/// A text block.
fn text_block(text: String) -> Block<'static> {
    Block::Text(TextBlock { kind: "text", text })
}

/// Appends `blocks` as a `role` message, merged into the previous message
/// when it has the same role (Anthropic requires alternation).
fn push<'a>(out: &mut Vec<WireMessage<'a>>, role: &'static str, blocks: Vec<Block<'a>>) {
    match out.last_mut() {
        Some(last) if last.role == role => last.content.extend(blocks),
        _ => out.push(WireMessage {
            role,
            content: blocks,
        }),
    }
}

/// The replayable thinking blocks of each assistant message, by message
/// index.
///
/// The core records a pass's provider items right after its assistant
/// message (E-SES-15), so a run of items belongs to the assistant message
/// just before it; a run that instead directly precedes an assistant message
/// (and follows none) belongs to that one. Items of a pass whose assistant
/// message was dropped (a failed pass) follow a user or tool message and
/// precede none, so they are not replayed.
fn replays_by_owner<'a>(messages: &'a [Message], model: &str) -> Vec<Vec<&'a Value>> {
    let mut by_owner: Vec<Vec<&Value>> = vec![Vec::new(); messages.len()];
    let mut index = 0;
    while index < messages.len() {
        if !matches!(messages[index], Message::ProviderItem(_)) {
            index += 1;
            continue;
        }
        let start = index;
        while matches!(messages.get(index), Some(Message::ProviderItem(_))) {
            index += 1;
        }
        let is_assistant = |i: usize| matches!(messages.get(i), Some(Message::Assistant { .. }));
        let owner = match start.checked_sub(1) {
            Some(before) if is_assistant(before) => before,
            _ if is_assistant(index) => index,
            _ => continue,
        };
        let items = messages[start..index].iter().filter_map(|m| match m {
            Message::ProviderItem(item) => replayable(item, model),
            _ => None,
        });
        by_owner[owner].extend(items);
    }
    by_owner
}

/// The block to send back for an item, if it is an Anthropic Messages
/// thinking or redacted-thinking block that `model` takes.
fn replayable<'a>(item: &'a ProviderItem, model: &str) -> Option<&'a Value> {
    let ours = item.replays_to(PROVIDER, API, model);
    let kind = item.item.get("type").and_then(Value::as_str);
    (ours && matches!(kind, Some("thinking" | "redacted_thinking"))).then_some(&item.item)
}

/// Whether the request continues a tool round (the last message carries tool
/// results) whose assistant message does not start with a thinking block.
fn continues_unthought_tool_round(messages: &[WireMessage<'_>]) -> bool {
    let [.., assistant, results] = messages else {
        return false;
    };
    let answers_tools = results
        .content
        .iter()
        .any(|b| matches!(b, Block::ToolResult(_)));
    let calls_tools = assistant
        .content
        .iter()
        .any(|b| matches!(b, Block::ToolUse(_)));
    let thought = matches!(assistant.content.first(), Some(Block::Replay(_)));
    assistant.role == "assistant" && answers_tools && calls_tools && !thought
}

/// The `input` of a `tool_use`: the arguments object, an object parsed from
/// a JSON string, or `{}` for anything else (invalid raw text the model
/// sent; Anthropic only accepts an object).
fn tool_input(arguments: &Value) -> Cow<'_, Value> {
    match arguments {
        Value::Object(_) => Cow::Borrowed(arguments),
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(value @ Value::Object(_)) => Cow::Owned(value),
            _ => Cow::Owned(Value::Object(serde_json::Map::new())),
        },
        _ => Cow::Owned(Value::Object(serde_json::Map::new())),
    }
}

/// A call id as Anthropic accepts it (`^[a-zA-Z0-9_-]+$`): ids made by other
/// providers may hold other characters, which become `_`. The same mapping
/// is applied to `tool_use` and `tool_result`, so they still pair up.
fn wire_id(id: &str) -> Cow<'_, str> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if id.is_empty() {
        Cow::Borrowed("call")
    } else if id.chars().all(valid) {
        Cow::Borrowed(id)
    } else {
        Cow::Owned(id.chars().map(|c| if valid(c) { c } else { '_' }).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etch_model::{RequestOptions, SystemLayer, ToolCall, ToolSpec};
    use serde_json::json;

    /// A request with these messages and no system layers or tools.
    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            system: Vec::new(),
            messages,
            tools: Vec::new(),
            options: RequestOptions::default(),
        }
    }

    /// An assistant message calling `name` with `arguments` as call `id`.
    fn call(id: &str, name: &str, arguments: Value) -> Message {
        Message::Assistant {
            content: vec![ContentPart::ToolCall(ToolCall {
                id: id.into(),
                name: name.into(),
                arguments,
            })],
        }
    }

    /// A successful tool result.
    fn result(id: &str, text: &str) -> Message {
        Message::Tool {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![ContentPart::text(text)],
            is_error: false,
        }
    }

    /// A provider item holding `item`.
    fn item(provider: &str, api: &str, item: Value) -> Message {
        Message::ProviderItem(ProviderItem {
            provider: provider.into(),
            api: api.into(),
            item_type: item["type"].as_str().unwrap_or("x").into(),
            item,
            model: None,
        })
    }

    /// The body as JSON.
    fn body(request: &ModelRequest, budget: Option<u32>) -> Value {
        serde_json::to_value(build(request, "claude-x", 16384, budget)).unwrap()
    }

    /// G19: the exact native shape for a conversation with a tool round,
    /// tools sorted by name, the joined system prompt, and no `thinking`.
    #[test]
    fn body_has_the_native_shape() {
        let mut request = request(vec![
            Message::user_text("read a"),
            Message::Assistant {
                content: vec![
                    ContentPart::text("Reading."),
                    ContentPart::ToolCall(ToolCall {
                        id: "toolu_1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a"}),
                    }),
                ],
            },
            Message::Tool {
                tool_call_id: "toolu_1".into(),
                tool_name: "read".into(),
                content: vec![ContentPart::text("no such file")],
                is_error: true,
            },
        ]);
        request.system = vec![
            SystemLayer {
                name: "base".into(),
                text: "Be brief.".into(),
            },
            SystemLayer {
                name: "env".into(),
                text: "cwd: /w".into(),
            },
        ];
        request.tools = vec![
            ToolSpec {
                name: "read".into(),
                description: "r".into(),
                parameters: json!({"type": "object"}),
            },
            ToolSpec {
                name: "bash".into(),
                description: "b".into(),
                parameters: json!({"type": "object", "required": ["command"]}),
            },
        ];
        assert_eq!(
            body(&request, None),
            json!({
                "model": "claude-x",
                "max_tokens": 16384,
                "system": "Be brief.\n\ncwd: /w",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "read a"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Reading."},
                        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such file", "is_error": true},
                    ]},
                ],
                "tools": [
                    {"name": "bash", "description": "b", "input_schema": {"type": "object", "required": ["command"]}},
                    {"name": "read", "description": "r", "input_schema": {"type": "object"}},
                ],
                "stream": true,
            })
        );
    }

    /// Empty system prompts and tool lists are left out entirely.
    #[test]
    fn empty_system_and_tools_are_omitted() {
        let body = body(&request(vec![Message::user_text("hi")]), None);
        let mut keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["max_tokens", "messages", "model", "stream"]);
    }

    /// A request that must call a tool asks for `any` tool, unless
    /// thinking is on (which allows only `auto`).
    #[test]
    fn a_required_tool_call_is_any_tool_without_thinking() {
        let mut request = request(vec![Message::user_text("hi")]);
        request.tools = vec![ToolSpec {
            name: "read".into(),
            description: "r".into(),
            parameters: serde_json::json!({"type": "object"}),
        }];
        assert!(body(&request, None).get("tool_choice").is_none());
        request.options.require_tool = true;
        assert_eq!(
            body(&request, None)["tool_choice"],
            serde_json::json!({"type": "any"})
        );
        assert!(body(&request, Some(2048)).get("tool_choice").is_none());
        // A reply cap lowers max_tokens, never raises it.
        let limit = body(&request, None)["max_tokens"].as_u64().unwrap();
        request.options.max_output_tokens = Some(512);
        assert_eq!(body(&request, None)["max_tokens"], 512);
        request.options.max_output_tokens = Some(u32::MAX);
        assert_eq!(body(&request, None)["max_tokens"], limit);
    }

    /// Roles alternate: consecutive tool results become one user message,
    /// a following user text joins it (after the results), and consecutive
    /// user texts merge too.
    #[test]
    fn consecutive_same_role_messages_merge() {
        let request = request(vec![
            Message::user_text("one"),
            Message::user_text("two"),
            Message::Assistant {
                content: vec![
                    ContentPart::ToolCall(ToolCall {
                        id: "a".into(),
                        name: "read".into(),
                        arguments: json!({}),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "b".into(),
                        name: "read".into(),
                        arguments: json!({}),
                    }),
                ],
            },
            result("a", "A"),
            result("b", "B"),
            Message::user_text("and then?"),
        ]);
        let body = body(&request, None);
        let messages = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(
            messages[0]["content"],
            json!([{"type": "text", "text": "one"}, {"type": "text", "text": "two"}])
        );
        assert_eq!(
            messages[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "a", "content": "A", "is_error": false},
                {"type": "tool_result", "tool_use_id": "b", "content": "B", "is_error": false},
                {"type": "text", "text": "and then?"},
            ])
        );
    }

    /// A user text that somehow precedes tool results in one merged message
    /// is moved after them: Anthropic wants the results first.
    #[test]
    fn tool_results_lead_a_merged_user_message() {
        let request = request(vec![
            Message::user_text("go"),
            call("a", "read", json!({})),
            Message::user_text("steer"),
            result("a", "A"),
        ]);
        let body = body(&request, None);
        assert_eq!(
            body["messages"][2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "a", "content": "A", "is_error": false},
                {"type": "text", "text": "steer"},
            ])
        );
    }

    /// Arguments kept as a JSON string of invalid raw text go out as `{}`;
    /// a string holding an object is parsed; ids with characters Anthropic
    /// rejects are mapped the same way in `tool_use` and `tool_result`.
    #[test]
    fn invalid_arguments_and_foreign_ids_are_made_acceptable() {
        let request = request(vec![
            Message::user_text("go"),
            Message::Assistant {
                content: vec![
                    ContentPart::ToolCall(ToolCall {
                        id: "functions.read:0".into(),
                        name: "read".into(),
                        arguments: json!("{\"path\": "),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "c2".into(),
                        name: "read".into(),
                        arguments: json!("{\"path\": \"b\"}"),
                    }),
                ],
            },
            result("functions.read:0", "x"),
            result("c2", "y"),
        ]);
        let body = body(&request, None);
        let calls = &body["messages"][1]["content"];
        assert_eq!(calls[0]["input"], json!({}));
        assert_eq!(calls[0]["id"], "functions_read_0");
        assert_eq!(calls[1]["input"], json!({"path": "b"}));
        assert_eq!(
            body["messages"][2]["content"][0]["tool_use_id"],
            "functions_read_0"
        );
    }

    /// Thinking blocks recorded after an assistant message (the core's
    /// order) are replayed verbatim at the start of that message; items of
    /// other providers and APIs are skipped, and so are items bound to
    /// another model (signatures imported from Pi).
    #[test]
    fn thinking_items_are_replayed_into_their_assistant_message() {
        let thinking = json!({"type": "thinking", "thinking": "hmm", "signature": "sig=="});
        let redacted = json!({"type": "redacted_thinking", "data": "opaque"});
        let for_model = |model: &str, signature: &str| {
            let Message::ProviderItem(mut item) = item(
                "anthropic",
                "messages",
                json!({"type": "thinking", "thinking": "t", "signature": signature}),
            ) else {
                unreachable!()
            };
            item.model = Some(model.to_owned());
            Message::ProviderItem(item)
        };
        let request = request(vec![
            Message::user_text("go"),
            call("a", "read", json!({"path": "x"})),
            item("anthropic", "messages", thinking.clone()),
            for_model("claude-older", "OTHER_MODEL_SIG"),
            item("anthropic", "messages", redacted.clone()),
            item(
                "openai",
                "responses",
                json!({"type": "reasoning", "encrypted_content": "e"}),
            ),
            item(
                "anthropic",
                "other",
                json!({"type": "thinking", "thinking": "no"}),
            ),
            result("a", "A"),
        ]);
        let body = body(&request, Some(1024));
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                thinking,
                redacted,
                {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "x"}},
            ])
        );
        assert!(!body.to_string().contains("OTHER_MODEL_SIG"));
        assert_eq!(body["model"], "claude-x");
        let same = self::request(vec![
            Message::user_text("go"),
            call("a", "read", json!({"path": "x"})),
            for_model("claude-x", "SAME_MODEL_SIG"),
            result("a", "A"),
        ]);
        assert!(
            self::body(&same, Some(1024))
                .to_string()
                .contains("SAME_MODEL_SIG")
        );
        assert_eq!(body["messages"].as_array().unwrap().len(), 3);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
    }

    /// Items placed just before an assistant message are replayed into it;
    /// items of a failed pass (after a user message, before no assistant
    /// message) are not replayed anywhere.
    #[test]
    fn items_before_an_assistant_message_belong_to_it() {
        let first = json!({"type": "thinking", "thinking": "1", "signature": "s1"});
        let orphan = json!({"type": "thinking", "thinking": "lost", "signature": "s0"});
        let request = request(vec![
            Message::user_text("go"),
            item("anthropic", "messages", first.clone()),
            Message::Assistant {
                content: vec![ContentPart::text("done")],
            },
            Message::user_text("again"),
            item("anthropic", "messages", orphan),
            Message::user_text("once more"),
        ]);
        let body = body(&request, None);
        assert_eq!(
            body["messages"][1]["content"],
            json!([first, {"type": "text", "text": "done"}])
        );
        assert!(!body.to_string().contains("lost"));
    }

    /// With a budget, `thinking` is sent and `max_tokens` exceeds the
    /// budget by at least 4096.
    #[test]
    fn thinking_budget_raises_max_tokens() {
        let request = request(vec![Message::user_text("hi")]);
        let small = body(&request, Some(2048));
        assert_eq!(small["max_tokens"], 16384);
        assert_eq!(small["thinking"]["budget_tokens"], 2048);
        let large = body(&request, Some(32000));
        assert_eq!(large["max_tokens"], 36096);
    }

    /// Continuing a tool round whose assistant message has no thinking block
    /// leaves thinking off (Anthropic would reject it); a new user turn gets
    /// thinking again.
    #[test]
    fn thinking_is_off_for_an_unthought_tool_round() {
        let mut messages = vec![
            Message::user_text("go"),
            call("a", "read", json!({})),
            result("a", "A"),
        ];
        assert!(
            body(&request(messages.clone()), Some(1024))
                .get("thinking")
                .is_none()
        );
        messages.push(Message::Assistant {
            content: vec![ContentPart::text("ok")],
        });
        messages.push(Message::user_text("next"));
        assert!(
            body(&request(messages), Some(1024))
                .get("thinking")
                .is_some()
        );
    }

    /// Empty texts and assistant messages with nothing to say are left out,
    /// so no empty block or message reaches Anthropic.
    #[test]
    fn empty_content_is_skipped() {
        let request = request(vec![
            Message::user_text("go"),
            Message::Assistant {
                content: vec![ContentPart::text("")],
            },
            Message::user_text(""),
            Message::user_text("more"),
        ]);
        assert_eq!(
            body(&request, None)["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "go"},
                {"type": "text", "text": "more"},
            ]}])
        );
    }
}
