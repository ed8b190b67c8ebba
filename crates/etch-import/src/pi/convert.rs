//! One Pi entry as etch events: what each entry type and message role
//! becomes, in the wording Pi sends it to the model (a `bashExecution` as
//! `Ran \`cmd\`` and its output, a custom message as the user's text, a
//! compaction as `context.summary` keeping its first kept entry). Images
//! come out as image parts (their bytes stored by the caller); anything
//! etch has no event for is kept whole as an opaque `pi.<type>` event,
//! never dropped.
//!
//! This module must not know about files or the session store: it maps
//! JSON values to events.

use etch_model::{ContentPart, Image, StopReason, ToolCall, Usage};
use etch_session::event::{
    AssistantData, BranchSummaryData, LabelData, ModelChangeData, ReasoningData, SummaryData,
    ThinkingLevelData, ToolData, UserData, types,
};
use serde_json::{Value, json};

/// One event to write, before its id and parent are placed.
#[derive(Debug, Clone, PartialEq)]
pub struct Out {
    /// The event type.
    pub kind: String,
    /// Its data.
    pub data: Value,
}

impl Out {
    /// An event of `kind` with `data` serialized.
    fn of<T: serde::Serialize>(kind: &str, data: &T) -> Self {
        Self {
            kind: kind.to_owned(),
            data: serde_json::to_value(data).unwrap_or(Value::Null),
        }
    }
}

/// What one entry becomes: events written before the entry's own (its
/// reasoning), the entry's own event (which keeps the entry's id), and
/// events after it (usage, replayable reasoning items), chained in that
/// order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Converted {
    /// Events before the entry's own.
    pub before: Vec<Out>,
    /// The entry's own event.
    pub main: Option<Out>,
    /// Events after it.
    pub after: Vec<Out>,
    /// The session's name, for a `session_info` entry.
    pub name: Option<String>,
    /// The images the entry's event names, with their bytes (which its
    /// data, being serialized, no longer holds): to store first.
    pub images: Vec<Image>,
    /// Images that could not be read, and why.
    pub lost_images: Vec<String>,
}

impl Converted {
    /// Keeps the images among `content` to be stored.
    fn keep_images(&mut self, content: &[ContentPart]) {
        self.images
            .extend(content.iter().filter_map(|part| match part {
                ContentPart::Image(image) => Some(image.clone()),
                _ => None,
            }));
    }
}

/// Decodes a Pi image block's base64 into an image; `Err` with why not.
pub type ImageReader<'a> = dyn Fn(&str, &str) -> Result<Image, String> + 'a;

/// The etch provider name of a Pi provider and API, when etch has that
/// provider; `None` otherwise (the model change is then kept opaque).
pub fn etch_provider(
    provider: &str,
    api: Option<&str>,
) -> Option<(&'static str, Option<&'static str>)> {
    match (provider, api) {
        ("anthropic", _) => Some(("anthropic", None)),
        (_, Some("openai-responses")) => Some(("openai", Some("responses"))),
        // Which API a model change meant is not recorded: the
        // configuration (or --openai-api) decides, as for a new session.
        ("openai" | "openai-codex", None) => Some(("openai", None)),
        (_, Some("openai-completions")) => Some(("openai", Some("chat"))),
        _ => None,
    }
}

/// The text of a `bashExecution` message as Pi sends it to the model.
pub fn bash_execution_text(message: &Value) -> String {
    use std::fmt::Write as _;
    let text_of = |key: &str| message.get(key).and_then(Value::as_str).unwrap_or("");
    let mut text = format!("Ran `{}`\n", text_of("command"));
    let output = text_of("output");
    if output.is_empty() {
        text.push_str("(no output)");
    } else {
        let _ = write!(text, "```\n{output}\n```");
    }
    let flag = |key: &str| message.get(key).and_then(Value::as_bool).unwrap_or(false);
    if flag("cancelled") {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = message.get("exitCode").and_then(Value::as_i64)
        && code != 0
    {
        let _ = write!(text, "\n\nCommand exited with code {code}");
    }
    let full = text_of("fullOutputPath");
    if flag("truncated") && !full.is_empty() {
        let _ = write!(text, "\n\n[Output truncated. Full output: {full}]");
    }
    text
}

/// A Pi tool call id as etch keeps it: the part before `|` (Pi joins
/// the Responses API's call and item ids).
pub fn call_id(id: &str) -> String {
    id.split('|').next().unwrap_or(id).to_owned()
}

/// Converts one entry (already migrated to v3).
pub fn entry(entry: &Value, images: &ImageReader<'_>) -> Converted {
    let kind = entry.get("type").and_then(Value::as_str).unwrap_or("");
    let str_of = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut out = Converted::default();
    match kind {
        "message" => {
            let message = entry.get("message").cloned().unwrap_or(Value::Null);
            return self::message(entry, &message, images);
        }
        "custom_message" => {
            let content = user_content(entry.get("content"), images, &mut out.lost_images);
            out.keep_images(&content);
            out.main = Some(Out::of(types::MESSAGE_USER, &UserData { content }));
        }
        "model_change" => {
            let provider = str_of("provider").unwrap_or_default();
            let model = str_of("modelId")
                .or_else(|| str_of("model"))
                .unwrap_or_default();
            out.main = Some(match etch_provider(&provider, None) {
                Some((provider, openai_api)) => Out::of(
                    types::MODEL_CHANGE,
                    &ModelChangeData {
                        provider: provider.to_owned(),
                        model,
                        openai_api: openai_api.map(str::to_owned),
                        base_url: None,
                    },
                ),
                None => opaque(kind, entry),
            });
        }
        "thinking_level_change" => {
            let level = str_of("thinkingLevel").unwrap_or_default();
            out.main = Some(Out::of(
                types::THINKING_LEVEL_CHANGE,
                &ThinkingLevelData { level },
            ));
        }
        "compaction" => {
            let details = entry.get("details");
            let files = |key: &str| -> Vec<String> {
                details
                    .and_then(|d| d.get(key))
                    .and_then(Value::as_array)
                    .map(|list| {
                        list.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            out.main = Some(Out::of(
                types::CONTEXT_SUMMARY,
                &SummaryData {
                    summary: str_of("summary").unwrap_or_default(),
                    trigger: "pi".to_owned(),
                    first_kept_event_id: str_of("firstKeptEntryId"),
                    tokens_before: entry
                        .get("tokensBefore")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                    tokens_after: 0,
                    read_files: files("readFiles"),
                    modified_files: files("modifiedFiles"),
                    instructions: None,
                },
            ));
        }
        "branch_summary" => {
            out.main = Some(Out::of(
                types::CONTEXT_BRANCH_SUMMARY,
                &BranchSummaryData {
                    summary: str_of("summary").unwrap_or_default(),
                    from_id: str_of("fromId").unwrap_or_default(),
                },
            ));
        }
        "label" => {
            out.main = Some(Out::of(
                types::SESSION_LABEL,
                &LabelData {
                    target_id: str_of("targetId").unwrap_or_default(),
                    label: str_of("label").unwrap_or_default(),
                },
            ));
        }
        "session_info" => {
            out.name = str_of("name");
            out.main = Some(opaque(kind, entry));
        }
        _ => out.main = Some(opaque(kind, entry)),
    }
    out
}

/// An entry etch has no event for, kept whole as `pi.<type>`.
fn opaque(kind: &str, entry: &Value) -> Out {
    let name = if kind.is_empty() { "unknown" } else { kind };
    Out {
        kind: format!("pi.{name}"),
        data: entry.clone(),
    }
}

/// A `message` entry.
fn message(entry: &Value, message: &Value, images: &ImageReader<'_>) -> Converted {
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    let mut out = Converted::default();
    match role {
        "user" | "custom" => {
            let content = user_content(message.get("content"), images, &mut out.lost_images);
            out.keep_images(&content);
            out.main = Some(Out::of(types::MESSAGE_USER, &UserData { content }));
        }
        "bashExecution" => {
            if message.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                out.main = Some(opaque("bash_execution", entry));
            } else {
                let content = vec![ContentPart::text(bash_execution_text(message))];
                out.main = Some(Out::of(types::MESSAGE_USER, &UserData { content }));
            }
        }
        "assistant" => assistant(message, &mut out),
        "toolResult" => {
            let str_of = |key: &str| message.get(key).and_then(Value::as_str).unwrap_or("");
            let content = user_content(message.get("content"), images, &mut out.lost_images);
            out.keep_images(&content);
            out.main = Some(Out::of(
                types::MESSAGE_TOOL,
                &ToolData {
                    tool_call_id: call_id(str_of("toolCallId")),
                    tool_name: str_of("toolName").to_owned(),
                    content,
                    is_error: message
                        .get("isError")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    details: message.get("details").filter(|d| !d.is_null()).cloned(),
                },
            ));
        }
        _ => {
            out.main = Some(opaque(
                &format!("message.{}", if role.is_empty() { "unknown" } else { role }),
                entry,
            ));
        }
    }
    out
}

/// An assistant message: its reasoning before it, its usage and the
/// reasoning items its own provider can replay after it.
fn assistant(message: &Value, out: &mut Converted) {
    let str_of = |key: &str| message.get(key).and_then(Value::as_str);
    let provider = str_of("provider").unwrap_or("").to_owned();
    let api = str_of("api");
    let mut content = Vec::new();
    let mut reasoning = String::new();
    let blocks = message.get("content").and_then(Value::as_array);
    for block in blocks.into_iter().flatten() {
        let text_at = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
        match block.get("type").and_then(Value::as_str) {
            Some("text") => content.push(ContentPart::text(text_at("text"))),
            Some("toolCall") => content.push(ContentPart::ToolCall(ToolCall {
                id: call_id(text_at("id")),
                name: text_at("name").to_owned(),
                arguments: block.get("arguments").cloned().unwrap_or_else(|| json!({})),
            })),
            Some("thinking") => {
                if !text_at("thinking").is_empty() {
                    if !reasoning.is_empty() {
                        reasoning.push_str("\n\n");
                    }
                    reasoning.push_str(text_at("thinking"));
                }
                if let Some(item) = replay_item(block, &provider, api, str_of("model")) {
                    out.after.push(Out::of(types::MODEL_PROVIDER_ITEM, &item));
                }
            }
            _ => {}
        }
    }
    if !reasoning.is_empty() {
        out.before.push(Out::of(
            types::MODEL_REASONING,
            &ReasoningData { text: reasoning },
        ));
    }
    let stop_reason: StopReason = message
        .get("stopReason")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or(StopReason::Stop);
    out.main = Some(Out::of(
        types::MESSAGE_ASSISTANT,
        &AssistantData {
            content,
            provider,
            model: str_of("model").unwrap_or("").to_owned(),
            stop_reason,
            error_message: str_of("errorMessage").map(str::to_owned),
            recovered_text: None,
        },
    ));
    if let Some(usage) = message.get("usage").and_then(usage) {
        // Usage goes first after the answer, as etch records a pass.
        out.after.insert(0, Out::of(types::MODEL_USAGE, &usage));
    }
}

/// Pi's usage (`input` without cache reads) as etch counts it.
fn usage(value: &Value) -> Option<Usage> {
    let n = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
    let input = n("input") + n("cacheRead") + n("cacheWrite");
    let output = n("output");
    let total = match n("totalTokens") {
        0 => input + output,
        total => total,
    };
    (total > 0).then_some(Usage {
        input_tokens: input,
        cached_input_tokens: n("cacheRead"),
        output_tokens: output,
        reasoning_output_tokens: 0,
        total_tokens: total,
    })
}

/// The provider item that lets a thinking block go back to the provider
/// that wrote it (its signature), when etch speaks that provider's API;
/// other providers get the reasoning as display text only, as Pi does.
/// The item names `model`: like Pi, etch sends a signature back only to
/// the model that made it.
fn replay_item(
    block: &Value,
    provider: &str,
    api: Option<&str>,
    model: Option<&str>,
) -> Option<etch_model::ProviderItem> {
    let signature = block.get("thinkingSignature").and_then(Value::as_str)?;
    if signature.is_empty() {
        return None;
    }
    let redacted = block.get("redacted").and_then(Value::as_bool) == Some(true);
    match (provider, api) {
        ("anthropic", _) | (_, Some("anthropic-messages")) => {
            let item = if redacted {
                json!({"type": "redacted_thinking", "data": signature})
            } else {
                json!({
                    "type": "thinking",
                    "thinking": block.get("thinking").and_then(Value::as_str).unwrap_or(""),
                    "signature": signature,
                })
            };
            Some(etch_model::ProviderItem {
                provider: "anthropic".to_owned(),
                api: "messages".to_owned(),
                item_type: if redacted {
                    "redacted_thinking"
                } else {
                    "thinking"
                }
                .to_owned(),
                item,
                model: model.map(str::to_owned),
            })
        }
        (_, Some("openai-responses")) => {
            // Pi keeps the whole reasoning item, as JSON, in the signature.
            let item: Value = serde_json::from_str(signature)
                .ok()
                .filter(Value::is_object)?;
            Some(etch_model::ProviderItem {
                provider: "openai".to_owned(),
                api: "responses".to_owned(),
                item_type: "reasoning".to_owned(),
                item,
                model: model.map(str::to_owned),
            })
        }
        _ => None,
    }
}

/// A user-side content: a string, or text and image blocks.
fn user_content(
    content: Option<&Value>,
    images: &ImageReader<'_>,
    lost: &mut Vec<String>,
) -> Vec<ContentPart> {
    match content {
        Some(Value::String(text)) => vec![ContentPart::text(text.clone())],
        Some(Value::Array(blocks)) => {
            let mut parts = Vec::with_capacity(blocks.len());
            for block in blocks {
                let text_at = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => parts.push(ContentPart::text(text_at("text"))),
                    Some("image") => match images(text_at("data"), text_at("mimeType")) {
                        Ok(image) => parts.push(ContentPart::Image(image)),
                        Err(why) => {
                            parts.push(ContentPart::text(format!(
                                "[image omitted ({}): it could not be imported: {why}]",
                                text_at("mimeType")
                            )));
                            lost.push(why);
                        }
                    },
                    _ => {}
                }
            }
            parts
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
