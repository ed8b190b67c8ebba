//! The live footer (E-CHAT-16, E-CHAT-17 in docs/requirements.md): model,
//! working directory and auth label from the start; token counters,
//! requests and bytes up and down moving as each model pass's
//! `model_usage` and `model_metrics` arrive; the share of the context
//! budget the last request used. On resume the counters start from the
//! session's totals. This module must not know about the terminal.

use ratatui_core::text::{Line, Span};
use serde_json::Value;

use crate::render::theme;
use crate::render::wrap::truncate;

/// The footer's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Input tokens over all passes.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Cached input tokens.
    pub cached: u64,
    /// HTTP or WebSocket requests.
    pub requests: u64,
    /// Request bytes sent.
    pub up: u64,
    /// Response bytes read.
    pub down: u64,
    /// Input tokens of the latest pass (the context's size then).
    pub last_input: u64,
}

impl Counters {
    /// Adds a `model.usage` record. A subagent's (marked with its
    /// parent's `toolCallId`) counts toward the totals but says nothing
    /// of the parent's own context, so it leaves `last_input` alone.
    pub fn usage(&mut self, usage: &Value) {
        let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        self.input += n("inputTokens");
        self.output += n("outputTokens");
        self.cached += n("cachedInputTokens");
        if usage.get("toolCallId").is_none() {
            self.last_input = n("inputTokens");
        }
    }

    /// Adds a `model.metrics` record.
    pub fn metrics(&mut self, metrics: &Value) {
        let n = |key: &str| metrics.get(key).and_then(Value::as_u64).unwrap_or(0);
        self.requests += n("requests");
        self.up += n("requestBytes");
        self.down += n("responseBytes");
    }
}

/// What the footer shows besides the counters.
#[derive(Debug, Clone, Default)]
pub struct Footer {
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// Working directory, shortened with `~`.
    pub cwd: String,
    /// The auth label (`OpenAI: Platform API key`, …).
    pub auth: String,
    /// Tokens kept before compaction: the context budget.
    pub budget: u64,
    /// Counters.
    pub counters: Counters,
}

impl Footer {
    /// The footer row at `width`.
    pub fn render(&self, width: usize) -> Line<'static> {
        let c = &self.counters;
        let mut parts = vec![self.model.clone(), self.cwd.clone()];
        if !self.auth.is_empty() {
            parts.push(self.auth.clone());
        }
        parts.push(format!("↑{} ↓{} tok", short(c.input), short(c.output)));
        parts.push(format!("{} req", c.requests));
        parts.push(format!("↑{} ↓{}", bytes(c.up), bytes(c.down)));
        if self.budget > 0 && c.last_input > 0 {
            let pct = (c.last_input.saturating_mul(100) / self.budget).min(999);
            parts.push(format!("ctx {pct}% of {}", short(self.budget)));
        }
        Line::from(Span::styled(
            truncate(&parts.join(" · "), width),
            theme::muted(),
        ))
    }
}

/// A count shortened: `950`, `12.3k`, `4.1M`.
pub fn short(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{}.{}k", n / 1000, n % 1000 / 100),
        _ => format!("{}.{}M", n / 1_000_000, n % 1_000_000 / 100_000),
    }
}

/// A byte count shortened: `512B`, `3.4KB`, `1.2MB`.
pub fn bytes(n: u64) -> String {
    match n {
        0..=999 => format!("{n}B"),
        1_000..=999_999 => format!("{}.{}KB", n / 1000, n % 1000 / 100),
        _ => format!("{}.{}MB", n / 1_000_000, n % 1_000_000 / 100_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counters_add_up_and_render() {
        let mut footer = Footer {
            provider: "openai".into(),
            model: "qwen".into(),
            cwd: "~/src".into(),
            auth: "OpenAI: Platform API key".into(),
            budget: 100_000,
            counters: Counters::default(),
        };
        footer
            .counters
            .usage(&json!({"inputTokens": 12_000, "outputTokens": 300}));
        footer
            .counters
            .usage(&json!({"inputTokens": 15_000, "outputTokens": 200}));
        footer
            .counters
            .metrics(&json!({"requests": 2, "requestBytes": 4_500, "responseBytes": 1_200_000}));
        insta::assert_snapshot!(footer.render(200).to_string(), @"qwen · ~/src · OpenAI: Platform API key · ↑27.0k ↓500 tok · 2 req · ↑4.5KB ↓1.2MB · ctx 15% of 100.0k");
        assert_eq!(footer.render(10).to_string(), "qwen · ~/…");
    }

    /// A subagent's request adds to the totals but not to the share of
    /// the parent's context budget.
    #[test]
    fn a_childs_usage_adds_up_but_leaves_the_context_share() {
        let mut counters = Counters::default();
        counters.usage(&json!({"inputTokens": 10_000, "outputTokens": 100}));
        counters.usage(&json!({"inputTokens": 50_000, "outputTokens": 900, "toolCallId": "c1"}));
        counters.metrics(&json!({"requests": 1, "toolCallId": "c1"}));
        assert_eq!(counters.input, 60_000);
        assert_eq!(counters.output, 1_000);
        assert_eq!(counters.requests, 1);
        assert_eq!(counters.last_input, 10_000);
    }
}
