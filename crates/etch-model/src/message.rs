//! Provider-neutral conversation messages, as projected from the session log.
//!
//! The core builds a `Vec<Message>` for every request; each provider maps it to
//! its own wire format. Provider-native replay items travel in the same list so
//! their position is kept, and providers that do not understand them skip them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::{ContentPart, ToolCall};

/// One model-visible message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Input from the user (or a summary/steering text projected as user input).
    User {
        /// The message content (text parts).
        content: Vec<ContentPart>,
    },
    /// A model answer: text and tool calls.
    Assistant {
        /// The message content (text and tool-call parts).
        content: Vec<ContentPart>,
    },
    /// The result of one tool call.
    Tool {
        /// Id of the tool call this answers.
        tool_call_id: String,
        /// Name of the tool that ran.
        tool_name: String,
        /// Result content (text parts); a failure's text starts `tool error: `.
        content: Vec<ContentPart>,
        /// Whether the result is an error (C36).
        is_error: bool,
    },
    /// Opaque provider-native state (for example encrypted reasoning) that only
    /// the provider and API named inside may send back (E-MOD-18).
    ProviderItem(ProviderItem),
}

impl Message {
    /// Builds a user message from plain text.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::User {
            content: vec![ContentPart::text(text)],
        }
    }

    /// Returns the tool calls of an assistant message (empty for other roles).
    pub fn tool_calls(&self) -> Vec<&ToolCall> {
        match self {
            Self::Assistant { content } => content
                .iter()
                .filter_map(|p| match p {
                    ContentPart::ToolCall(call) => Some(call),
                    ContentPart::Text { .. } | ContentPart::Image(_) => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

impl Message {
    /// The parts of this message, whatever its role (none for a provider
    /// item).
    pub fn parts(&self) -> &[ContentPart] {
        match self {
            Self::User { content } | Self::Assistant { content } | Self::Tool { content, .. } => {
                content
            }
            Self::ProviderItem(_) => &[],
        }
    }

    /// The mutable parts of this message (none for a provider item).
    pub fn parts_mut(&mut self) -> &mut [ContentPart] {
        match self {
            Self::User { content } | Self::Assistant { content } | Self::Tool { content, .. } => {
                content
            }
            Self::ProviderItem(_) => &mut [],
        }
    }
}

/// An opaque provider-native replay item (`model.provider_item`, G4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderItem {
    /// Provider that produced the item, e.g. `openai`.
    pub provider: String,
    /// API of that provider, e.g. `responses`.
    pub api: String,
    /// Kind of item, e.g. `reasoning`.
    pub item_type: String,
    /// The item exactly as the provider returned it.
    pub item: Value,
    /// The model that produced it, when it is only valid for that model
    /// (a reasoning signature imported from Pi, which replays one only
    /// to the same provider and model); `None`: any model of the
    /// provider's API takes it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl ProviderItem {
    /// Whether a request to `api` of `provider` for `model` may send the
    /// item back.
    pub fn replays_to(&self, provider: &str, api: &str, model: &str) -> bool {
        self.provider == provider
            && self.api == api
            && self.model.as_deref().is_none_or(|m| m == model)
    }
}
