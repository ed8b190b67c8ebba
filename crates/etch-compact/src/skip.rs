//! Reasons a compaction declines to run, phrased for the user.
//!
//! A skip is not an error: `etch compact` reports it and exits normally, and
//! automatic compaction simply proceeds uncompacted (E-CTX-18).

use std::fmt;

/// What a compaction keeps raw, as configured (E-CTX-17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// The most recent approximate tokens.
    Tokens(u64),
    /// The most recent message events (token budget disabled).
    Messages(usize),
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tokens(n) => write!(f, "the {n} most recent tokens"),
            Self::Messages(n) => write!(f, "the {n} most recent messages"),
        }
    }
}

/// Why no summary was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Everything that would be summarized is kept raw anyway: no message
    /// lies before the cut point.
    NothingToSummarize {
        /// What the settings keep raw.
        budget: Budget,
        /// Whether the branch already has a summary, so only the messages
        /// replayed after it were candidates.
        since_summary: bool,
    },
    /// The result would not be materially smaller than the current context
    /// (less than a tenth saved): the kept messages, the previous summary and
    /// the pinned context dominate (E-CTX-18).
    WouldNotShrink {
        /// Estimated tokens of the context now.
        tokens_before: u64,
        /// Estimated tokens after compaction, counting the previous summary
        /// as the size of the new one.
        tokens_after: u64,
    },
    /// The summary came back no smaller than what it would replace, so
    /// appending it would grow the next request; nothing was appended.
    SummaryTooLong {
        /// Estimated tokens of the context now.
        tokens_before: u64,
        /// Estimated tokens with the summary in place.
        tokens_after: u64,
    },
    /// A `PreCompact` hook cancelled the compaction (G5), with its reason.
    CancelledByHook {
        /// What the hook said, if anything.
        reason: Option<String>,
    },
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NothingToSummarize {
                budget,
                since_summary,
            } => {
                let scope = if *since_summary {
                    "everything since the last summary"
                } else {
                    "the whole session"
                };
                write!(f, "nothing to compact: {scope} fits in {budget}")
            }
            Self::WouldNotShrink {
                tokens_before,
                tokens_after,
            } => write!(
                f,
                "compaction skipped: it would only shrink the context from about {tokens_before} to {tokens_after} estimated tokens (less than 10%); the recent messages, the previous summary and the pinned context already dominate"
            ),
            Self::SummaryTooLong {
                tokens_before,
                tokens_after,
            } => write!(
                f,
                "compaction skipped: the summary is no smaller than the history it would replace (about {tokens_before} -> {tokens_after} estimated tokens); the session was not changed"
            ),
            Self::CancelledByHook { reason } => {
                write!(f, "compaction cancelled by a PreCompact hook")?;
                if let Some(reason) = reason {
                    write!(f, ": {reason}")?;
                }
                write!(f, "; no summary was appended")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts say why, with the numbers the user needs.
    #[test]
    fn texts_say_why() {
        let skip = Skip::NothingToSummarize {
            budget: Budget::Tokens(20_000),
            since_summary: false,
        };
        assert_eq!(
            skip.to_string(),
            "nothing to compact: the whole session fits in the 20000 most recent tokens"
        );
        let skip = Skip::NothingToSummarize {
            budget: Budget::Messages(12),
            since_summary: true,
        };
        assert_eq!(
            skip.to_string(),
            "nothing to compact: everything since the last summary fits in the 12 most recent messages"
        );
        let skip = Skip::WouldNotShrink {
            tokens_before: 1000,
            tokens_after: 950,
        };
        assert!(
            skip.to_string().contains("from about 1000 to 950"),
            "{skip}"
        );
    }
}
