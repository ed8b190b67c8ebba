//! What a summary request cost: its `model.usage` and `model.metrics`,
//! recorded in the log beside the summary they paid for, so every request
//! counts in the chat's footer, in `etch status` and in a resumed chat,
//! like the conversation's own passes. Each record is marked with a
//! `purpose` (`compaction`, `branch_summary`): the size of a summary
//! request is never read as the size of the conversation's context
//! ([`is_marked`]).
//!
//! Records are written only with a summary that is appended: a failed
//! or skipped summary appends nothing (P-COMP-09: the compaction fails
//! and the log stays byte for byte as it was).

use etch_model::{Metrics, Usage};
use etch_session::{SessionError, SessionWriter, types};
use serde::Serialize;

/// The purpose of a compaction's summary request.
pub const PURPOSE_COMPACTION: &str = "compaction";

/// The purpose of the request summarizing a branch being left.
pub const PURPOSE_BRANCH_SUMMARY: &str = "branch_summary";

/// The usage and metrics a summary request reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spent {
    /// Token usage, when the provider reported it.
    pub usage: Option<Usage>,
    /// Transport metrics, when the provider reported them.
    pub metrics: Option<Metrics>,
}

impl Spent {
    /// Appends the records through `writer`, marked with `purpose`;
    /// returns their lines as written, for observers that mirror the log.
    pub fn record(
        &self,
        writer: &mut SessionWriter,
        purpose: &str,
    ) -> Result<Vec<String>, SessionError> {
        let mut lines = Vec::new();
        if let Some(usage) = &self.usage {
            lines.push(
                writer
                    .append(types::MODEL_USAGE, &marked(usage, purpose))?
                    .line,
            );
        }
        if let Some(metrics) = &self.metrics {
            lines.push(
                writer
                    .append(types::MODEL_METRICS, &marked(metrics, purpose))?
                    .line,
            );
        }
        Ok(lines)
    }
}

/// `data` as a JSON object with `purpose` added.
fn marked<T: Serialize>(data: &T, purpose: &str) -> serde_json::Value {
    let mut value = serde_json::to_value(data).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.insert("purpose".to_owned(), purpose.into());
    }
    value
}

/// Whether a `model.usage` or `model.metrics` record's data belongs to a
/// summary request rather than to a pass of the conversation.
pub fn is_marked(data: &serde_json::Value) -> bool {
    data.get("purpose").is_some()
}
