//! The provider-neutral request the core hands to a [`crate::ModelClient`].
//!
//! A request carries the full projected context every time (E-MOD-14): any
//! transport-specific shortcut such as continuation is a provider's business,
//! never a reason to drop context here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::Message;

/// Everything a provider needs to produce one model pass.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// Pinned system layers in prompt order (base prompt first).
    pub system: Vec<SystemLayer>,
    /// The projected conversation.
    pub messages: Vec<Message>,
    /// Tools the model may call, sorted by name.
    pub tools: Vec<ToolSpec>,
    /// Per-request options.
    pub options: RequestOptions,
}

impl ModelRequest {
    /// Joins the system layers with blank lines, the single system prompt text
    /// that Chat Completions and Responses send (G22).
    pub fn system_prompt(&self) -> String {
        let texts: Vec<&str> = self
            .system
            .iter()
            .map(|l| l.text.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        texts.join("\n\n")
    }
}

/// One named layer of the system prompt (base prompt, SYSTEM.md, AGENTS.md…).
///
/// Layers stay separate so context statistics and dumps can name them; the
/// provider sees them joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemLayer {
    /// Short label, e.g. `base prompt` or `AGENTS.md: /repo/AGENTS.md`.
    pub name: String,
    /// The layer text, verbatim.
    pub text: String,
}

/// A tool's model-facing description: name, prose and JSON Schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Provider-compatible identifier (`^[A-Za-z0-9_-]{1,64}$`).
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// Options that shape one request but are not conversation content.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestOptions {
    /// Durable session id, used by providers for cache affinity.
    pub session_id: String,
    /// Reasoning effort (`none`, `minimal`, … `xhigh`); `None` omits reasoning.
    pub reasoning_effort: Option<String>,
    /// Reasoning summary mode (`auto`, `concise`, `detailed`).
    pub reasoning_summary: Option<String>,
    /// Send the whole context even where a transport could continue an
    /// earlier response: the history was rewritten by something the
    /// provider's own safe-suffix check cannot see (a `ContextBuild` hook,
    /// E-HOOK-11).
    pub no_continuation: bool,
    /// The model must answer with a tool call (`tool_choice: required`,
    /// Anthropic's `any`): the loop's grounding asks for one when a
    /// prompt names a file nothing has looked at yet. Off by default,
    /// and left out of the request then.
    pub require_tool: bool,
    /// The most tokens this reply may take, or `None` for the provider's
    /// own limit. The loop sets it on a reply it requires to be a tool
    /// call to a server on this machine or network: llama.cpp enforces
    /// `tool_choice: required` with a grammar that lets a model write
    /// prose first and forbids it to stop before a call, so a small
    /// model that meant to answer writes blank lines until its context
    /// is full (minutes) unless the reply is capped.
    pub max_output_tokens: Option<u32>,
    /// The model cannot see images (`[provider] vision = false`, or its
    /// entry in the model list): every image is sent as a text marker
    /// saying it was left out, never as bytes.
    pub no_vision: bool,
}
