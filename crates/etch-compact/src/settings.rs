//! What a compaction is asked to keep, how tokens are counted, and why it runs.
//!
//! The token estimator (E-CTX-21) lives in the prompt crate; this module only
//! knows its signature, so compaction never depends on prompt assembly.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A text token estimator: approximate tokens of one piece of text.
///
/// A plain function pointer so settings stay `Copy` and the estimator's owner
/// (the prompt crate) need not be a dependency.
pub type Estimator = fn(&str) -> u64;

/// Default of `keep_recent_tokens`: Pi's `keepRecentTokens` (P-COMP-01, C22).
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;

/// Default of `keep_messages`, the fallback when the token budget is off
/// (E-CTX-17).
pub const DEFAULT_KEEP_MESSAGES: usize = 12;

/// How much recent context a compaction keeps raw, and how it measures it.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Approximate tokens of recent messages kept raw; `0` disables the token
    /// budget in favour of `keep_messages` (E-CTX-17).
    pub keep_recent_tokens: u64,
    /// Message events kept raw when `keep_recent_tokens` is `0`.
    pub keep_messages: usize,
    /// The text token estimator (E-CTX-21).
    pub estimate: Estimator,
    /// Asked for explicitly (`/compact force`, or a focus given): keep
    /// only the last turn raw and compact even when little would be
    /// saved.
    pub force: bool,
}

impl Settings {
    /// The default budgets with the given estimator; there is no `Default`
    /// because this crate has no estimator of its own to default to.
    pub fn new(estimate: Estimator) -> Self {
        Self {
            keep_recent_tokens: DEFAULT_KEEP_RECENT_TOKENS,
            keep_messages: DEFAULT_KEEP_MESSAGES,
            estimate,
            force: false,
        }
    }
}

/// Why a compaction runs; recorded as `trigger` in `context.summary` (C22) and
/// matched by compaction hooks (C41).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    /// `etch compact` or `/compact`.
    Manual,
    /// The estimated context reached the configured threshold.
    Auto,
    /// The provider rejected a request as too long (P-OVF).
    Overflow,
}

impl Trigger {
    /// The logged name: `manual`, `auto` or `overflow`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manual => "manual",
            Self::Auto => "auto",
            Self::Overflow => "overflow",
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serialized names are the log's `trigger` values (C22).
    #[test]
    fn triggers_serialize_to_their_log_names() {
        for (trigger, name) in [
            (Trigger::Manual, "manual"),
            (Trigger::Auto, "auto"),
            (Trigger::Overflow, "overflow"),
        ] {
            assert_eq!(
                serde_json::to_string(&trigger).unwrap(),
                format!("\"{name}\"")
            );
            assert_eq!(trigger.to_string(), name);
        }
    }

    /// The defaults are Pi's keep-recent budget and etch's message fallback.
    #[test]
    fn defaults() {
        let s = Settings::new(|t| t.len() as u64);
        assert_eq!(s.keep_recent_tokens, 20_000);
        assert_eq!(s.keep_messages, 12);
    }
}
