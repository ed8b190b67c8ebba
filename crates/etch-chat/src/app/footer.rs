//! The live footer (E-CHAT-16, E-CHAT-17 in docs/requirements.md): the
//! model and the thinking level asked for (said to be ignored where the
//! API sends none); token counters, the cost when the model's price is
//! configured (`[[prices]]`), requests and bytes up and down, moving as
//! each request's `model_usage` and `model_metrics` arrive (the
//! conversation's passes, subagents' and summary requests alike); the
//! share of the context budget the last pass used; the working directory
//! with its git branch, and the auth label. On resume the counters start
//! from the session's totals. This module must not know about the
//! terminal.

use ratatui_core::text::{Line, Span};
use serde_json::Value;

use crate::render::theme;
use crate::render::wrap::truncate;

/// The footer's counters.
#[derive(Debug, Clone, Default, PartialEq)]
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
    /// USD spent on the requests whose model had a price.
    pub cost: f64,
    /// Whether any request was priced.
    pub priced: bool,
}

impl Counters {
    /// Adds a `model.usage` record, priced with `price` when known. A
    /// subagent's (marked with its parent's `toolCallId`) and a summary
    /// request's (marked with its `purpose`) count toward the totals but
    /// say nothing of the conversation's own context, so they leave
    /// `last_input` alone.
    pub fn usage(&mut self, usage: &Value, price: Option<&Price>) {
        let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        self.input += n("inputTokens");
        self.output += n("outputTokens");
        self.cached += n("cachedInputTokens");
        if usage.get("toolCallId").is_none() && usage.get("purpose").is_none() {
            self.last_input = n("inputTokens");
        }
        if let Some(price) = price {
            self.cost += price.cost(n("inputTokens"), n("cachedInputTokens"), n("outputTokens"));
            self.priced = true;
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

/// What a model costs, in USD per million tokens (`[[prices]]`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Price {
    /// Input tokens not served from cache.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cached input tokens; `None` prices them as `input`.
    pub cached_input: Option<f64>,
}

impl Price {
    /// The USD cost of a request: `input` tokens in all, `cached` of them
    /// served from cache, and `output` tokens.
    pub fn cost(&self, input: u64, cached: u64, output: u64) -> f64 {
        let million = 1_000_000.0;
        // Token counts are far below 2^52: exact as f64.
        #[allow(clippy::cast_precision_loss)]
        let (fresh, cached, output) = (
            input.saturating_sub(cached) as f64,
            cached.min(input) as f64,
            output as f64,
        );
        (fresh * self.input
            + cached * self.cached_input.unwrap_or(self.input)
            + output * self.output)
            / million
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
    /// The git branch of the working directory, if any.
    pub branch: Option<String>,
    /// The reasoning effort asked for (a flag, `/thinking`, or the one
    /// the API is sent by default), if any.
    pub thinking: Option<String>,
    /// The OpenAI API in use (`chat`, `responses`), which decides whether
    /// a reasoning effort is sent at all.
    pub openai_api: Option<String>,
    /// Model prices, by model name; the last entry for a name wins.
    pub prices: Vec<(String, Price)>,
    /// The sandbox's short label (`sandbox workspace-write`,
    /// `sandbox off`); empty when unknown (an attached chat: the server
    /// runs the commands).
    pub sandbox: String,
}

impl Footer {
    /// Adds a `model.usage` record, priced with the current model's price.
    pub fn usage(&mut self, usage: &Value) {
        let price = self.price().copied();
        self.counters.usage(usage, price.as_ref());
    }

    /// The current model's price, when configured.
    pub fn price(&self) -> Option<&Price> {
        price_of(&self.prices, &self.model)
    }

    /// The footer row at `width`: what changes turn by turn first, as a
    /// narrow terminal cuts the end (the header names the directory and
    /// the auth too).
    pub fn render(&self, width: usize) -> Line<'static> {
        let c = &self.counters;
        let mut parts = vec![self.model.clone()];
        if let Some(thinking) = self.thinking_label() {
            parts.push(thinking);
        }
        parts.push(format!("↑{} ↓{} tok", short(c.input), short(c.output)));
        if c.priced || self.price().is_some() {
            parts.push(dollars(c.cost));
        }
        parts.push(format!("{} req", c.requests));
        parts.push(format!("↑{} ↓{}", bytes(c.up), bytes(c.down)));
        if self.budget > 0 && c.last_input > 0 {
            let pct = (c.last_input.saturating_mul(100) / self.budget).min(999);
            parts.push(format!("ctx {pct}% of {}", short(self.budget)));
        }
        match &self.branch {
            Some(branch) => parts.push(format!("{} ({branch})", self.cwd)),
            None if !self.cwd.is_empty() => parts.push(self.cwd.clone()),
            None => {}
        }
        if !self.sandbox.is_empty() {
            parts.push(self.sandbox.clone());
        }
        if !self.auth.is_empty() {
            parts.push(self.auth.clone());
        }
        Line::from(Span::styled(
            truncate(&parts.join(" · "), width),
            theme::muted(),
        ))
    }

    /// `think LEVEL`, and whether the API takes no effort at all (Chat
    /// Completions requests and the echo model carry none; Anthropic
    /// thinks only when an effort was asked for).
    fn thinking_label(&self) -> Option<String> {
        let level = self.thinking.as_deref()?;
        let ignored = match self.provider.as_str() {
            "anthropic" => None,
            "openai" if self.openai_api.as_deref() == Some("responses") => None,
            "openai" => Some("the chat API sends none"),
            _ => Some("this model takes none"),
        };
        Some(match ignored {
            Some(why) => format!("think {level} (ignored: {why})"),
            None => format!("think {level}"),
        })
    }
}

/// The price of `model` in `prices`; the last entry for it wins.
pub fn price_of<'a>(prices: &'a [(String, Price)], model: &str) -> Option<&'a Price> {
    prices
        .iter()
        .rev()
        .find(|(m, _)| m == model)
        .map(|(_, p)| p)
}

/// A cost in dollars: cents from a dollar up, a tenth of a cent below.
pub fn dollars(cost: f64) -> String {
    if cost >= 1.0 {
        format!("${cost:.2}")
    } else {
        format!("${cost:.3}")
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
            branch: Some("main".into()),
            ..Footer::default()
        };
        footer.usage(&json!({"inputTokens": 12_000, "outputTokens": 300}));
        footer.usage(&json!({"inputTokens": 15_000, "outputTokens": 200}));
        footer
            .counters
            .metrics(&json!({"requests": 2, "requestBytes": 4_500, "responseBytes": 1_200_000}));
        insta::assert_snapshot!(footer.render(200).to_string(), @"qwen · ↑27.0k ↓500 tok · 2 req · ↑4.5KB ↓1.2MB · ctx 15% of 100.0k · ~/src (main) · OpenAI: Platform API key");
        assert_eq!(footer.render(10).to_string(), "qwen · ↑2…");
    }

    /// With a price for the model, the footer adds up what each request
    /// cost (cached input at its own price); a summary request's usage
    /// is counted and priced but is not the context's size.
    #[test]
    fn cost_is_shown_when_the_model_has_a_price() {
        let mut footer = Footer {
            model: "gpt-x".into(),
            prices: vec![
                (
                    "gpt-x".into(),
                    Price {
                        input: 100.0,
                        output: 100.0,
                        cached_input: None,
                    },
                ),
                (
                    "gpt-x".into(),
                    Price {
                        input: 2.0,
                        output: 10.0,
                        cached_input: Some(0.5),
                    },
                ),
            ],
            budget: 100_000,
            ..Footer::default()
        };
        assert!(
            footer
                .render(200)
                .to_string()
                .contains("tok · $0.000 · 0 req")
        );
        footer.usage(
            &json!({"inputTokens": 100_000, "cachedInputTokens": 40_000, "outputTokens": 2_000}),
        );
        // 60k fresh at $2/M + 40k cached at $0.5/M + 2k out at $10/M.
        assert!(
            (footer.counters.cost - 0.16).abs() < 1e-9,
            "{}",
            footer.counters.cost
        );
        footer
            .usage(&json!({"inputTokens": 9_000_000, "outputTokens": 0, "purpose": "compaction"}));
        assert_eq!(footer.counters.last_input, 100_000);
        insta::assert_snapshot!(footer.render(200).to_string(), @"gpt-x · ↑9.1M ↓2.0k tok · $18.16 · 0 req · ↑0B ↓0B · ctx 100% of 100.0k");
        footer.model = "unpriced".into();
        footer.usage(&json!({"inputTokens": 1_000, "outputTokens": 1_000}));
        assert!(footer.render(200).to_string().contains("$18.16"));
        assert!(!Footer::default().render(200).to_string().contains('$'));
    }

    /// The thinking level is shown, and said to be ignored where the API
    /// sends no effort.
    #[test]
    fn thinking_says_when_it_is_ignored() {
        let mut footer = Footer {
            provider: "openai".into(),
            model: "m".into(),
            thinking: Some("high".into()),
            openai_api: Some("responses".into()),
            ..Footer::default()
        };
        assert!(
            footer
                .render(200)
                .to_string()
                .starts_with("m · think high · ")
        );
        footer.openai_api = Some("chat".into());
        assert!(
            footer
                .render(200)
                .to_string()
                .starts_with("m · think high (ignored: the chat API sends none) · ")
        );
        footer.provider = "anthropic".into();
        assert!(
            footer
                .render(200)
                .to_string()
                .starts_with("m · think high · ")
        );
        footer.thinking = None;
        assert!(footer.render(200).to_string().starts_with("m · ↑0"));
    }

    /// A subagent's request adds to the totals but not to the share of
    /// the parent's context budget.
    #[test]
    fn a_childs_usage_adds_up_but_leaves_the_context_share() {
        let mut counters = Counters::default();
        counters.usage(&json!({"inputTokens": 10_000, "outputTokens": 100}), None);
        counters.usage(
            &json!({"inputTokens": 50_000, "outputTokens": 900, "toolCallId": "c1"}),
            None,
        );
        counters.metrics(&json!({"requests": 1, "toolCallId": "c1"}));
        assert_eq!(counters.input, 60_000);
        assert_eq!(counters.output, 1_000);
        assert_eq!(counters.requests, 1);
        assert_eq!(counters.last_input, 10_000);
    }
}
