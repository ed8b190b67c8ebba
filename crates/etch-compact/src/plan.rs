//! Deciding what a compaction keeps and what it summarizes (E-CTX-17/18/20,
//! P-COMP-05/06), without calling any model.
//!
//! The cut walks the replayed message events backward from the newest,
//! accumulating estimated tokens until the keep budget is reached, then moves
//! to the closest valid cut point at or after that message: a user or
//! assistant message, never a tool result. Failed passes are invisible here as
//! they are in the projection. This module does not know how the summary is
//! written or stored.

use etch_model::Message;
use etch_session::LoadedSession;
use etch_session::projection::summary_message;

use crate::files::{file_lists, without_file_blocks};
use crate::settings::Settings;
use crate::skip::{Budget, Skip};
use crate::tokens::{Anchor, context_tokens, message_tokens, usage_anchor};
use crate::window::{Branch, Entry};

/// A compaction ready to be summarized: where replay will resume, what the
/// summarizer reads, and the estimates the summary records.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Id of the first event replayed raw after the summary (inclusive).
    pub first_kept_event_id: String,
    /// The prefix to summarize, as projected messages (failed passes left out).
    pub summarized: Vec<Message>,
    /// The active summary's text, without its file blocks, for an update.
    pub previous_summary: Option<String>,
    /// Estimated tokens of the context now (C22).
    pub tokens_before: u64,
    /// Estimated tokens of what stays after compaction besides the new
    /// summary: the kept messages plus the pinned context (system layers and
    /// tools, as far as provider usage reveals them).
    pub tokens_kept: u64,
    /// Files read in the summarized prefix and earlier summaries, sorted.
    pub read_files: Vec<String>,
    /// Files modified in the summarized prefix and earlier summaries, sorted.
    pub modified_files: Vec<String>,
}

/// Plans a compaction of the active branch of `session`.
///
/// Returns [`Skip::NothingToSummarize`] when no message lies before the cut,
/// and [`Skip::WouldNotShrink`] when the result would save less than a tenth
/// of the estimated context, counting the previous summary as the size of
/// the new one (E-CTX-18).
pub fn plan(session: &LoadedSession, settings: &Settings) -> Result<Plan, Skip> {
    let estimate = settings.estimate;
    let branch = Branch::of(session);
    let mut entries = branch.entries(estimate);
    let cut = match cut_index(&entries, settings) {
        Some(cut) if cut > 0 => cut,
        _ => {
            return Err(Skip::NothingToSummarize {
                budget: budget(settings),
                since_summary: branch.summary.is_some(),
            });
        }
    };
    let previous = branch.summary.as_ref().map(|(_, data)| data);
    let previous_tokens = previous.map_or(0, |data| {
        message_tokens(&summary_message(&data.summary), estimate)
    });
    let anchor = usage_anchor(&branch);
    let tokens_before = context_tokens(session, &branch, anchor, estimate);
    let kept: u64 = entries[cut..].iter().map(|e| e.tokens).sum();
    let tokens_kept = pinned_tokens(anchor, &entries, previous_tokens) + kept;
    let tokens_after = tokens_kept + previous_tokens;
    if !settings.force && tokens_after.saturating_mul(10) > tokens_before.saturating_mul(9) {
        return Err(Skip::WouldNotShrink {
            tokens_before,
            tokens_after,
        });
    }
    let first_kept_event_id = entries[cut].id.to_string();
    let summarized: Vec<Message> = entries.drain(..cut).map(|e| e.message).collect();
    let files = file_lists(&summarized, previous);
    Ok(Plan {
        first_kept_event_id,
        summarized,
        previous_summary: previous.map(|data| without_file_blocks(&data.summary).to_string()),
        tokens_before,
        tokens_kept,
        read_files: files.read,
        modified_files: files.modified,
    })
}

/// The keep budget in force, for messages.
fn budget(settings: &Settings) -> Budget {
    if settings.keep_recent_tokens > 0 {
        Budget::Tokens(settings.keep_recent_tokens)
    } else {
        Budget::Messages(settings.keep_messages)
    }
}

/// Index into `entries` of the first kept message, or `None` when the whole
/// window fits in the budget.
///
/// The oldest message the budget reaches is the target; the cut is the first
/// cut point at or after it. When only tool results follow the target (one
/// huge batch at the end), the cut falls back to the closest cut point before
/// it, the call that produced them, so the older prefix can still go.
fn cut_index(entries: &[Entry<'_>], settings: &Settings) -> Option<usize> {
    // Forced: everything before the last turn, which starts at its user
    // message (else at the last place replay may start).
    if settings.force {
        return entries
            .iter()
            .rposition(|e| matches!(e.message, Message::User { .. }))
            .filter(|&at| at > 0)
            .or_else(|| entries.iter().rposition(Entry::is_cut_point));
    }
    let target = if settings.keep_recent_tokens > 0 {
        let mut accumulated = 0u64;
        entries.iter().rposition(|e| {
            accumulated += e.tokens;
            accumulated >= settings.keep_recent_tokens
        })?
    } else {
        entries.len().checked_sub(settings.keep_messages)?
    };
    entries[target..]
        .iter()
        .position(Entry::is_cut_point)
        .map(|offset| target + offset)
        .or_else(|| entries[..target].iter().rposition(Entry::is_cut_point))
}

/// Estimated tokens of the pinned context (system layers, tool specs): what
/// the last trusted usage counted beyond the messages it covered. Zero when
/// no usage is known, as the context estimate then covers messages only.
fn pinned_tokens(anchor: Option<Anchor>, entries: &[Entry<'_>], previous_tokens: u64) -> u64 {
    let Some(anchor) = anchor else {
        return 0;
    };
    let covered: u64 = entries
        .iter()
        .take_while(|e| e.pos < anchor.pos)
        .map(|e| e.tokens)
        .sum();
    anchor.tokens.saturating_sub(previous_tokens + covered)
}

#[cfg(test)]
mod tests;
