//! A whole compaction: plan, summarize, append `context.summary` (P-COMP-11,
//! C23).
//!
//! The event is appended only after the summary is complete, in one write, so
//! a failure or cancellation at any earlier point leaves the file exactly as
//! it was. This module does not decide when to compact, and it does not
//! rebuild the context afterwards: the caller reloads or re-projects.

use etch_model::ModelClient;
use etch_session::projection::summary_message;
use etch_session::{LoadedSession, SessionWriter, SummaryData, types};
use tokio_util::sync::CancellationToken;

use crate::error::CompactError;
use crate::plan::{Plan, plan};
use crate::settings::{Settings, Trigger};
use crate::skip::Skip;
use crate::spent::{PURPOSE_COMPACTION, Spent};
use crate::summarize::summarize_counted;
use crate::tokens::message_tokens;

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A `context.summary` event was appended.
    Compacted {
        /// The event's data, as written.
        data: SummaryData,
        /// The new event's id (the writer's new leaf).
        event_id: String,
        /// The JSON line as written, for observers that mirror the log.
        line: String,
        /// The lines of the summary request's usage and metrics, written
        /// just before it (see [`Spent`]).
        counted: Vec<String>,
    },
    /// Nothing was worth compacting; the session is unchanged.
    Skipped(Skip),
}

/// Compacts the active branch of `session` and appends the summary through
/// `writer`, which must be open on the same file.
///
/// Events appended through `writer` after `session` was loaded are simply
/// kept raw: they come after the cut. The recorded `tokensAfter` is the
/// estimate of the new projection (summary message, kept messages, pinned
/// context). On error nothing is appended.
pub async fn compact(
    session: &LoadedSession,
    writer: &mut SessionWriter,
    client: &dyn ModelClient,
    trigger: Trigger,
    focus: Option<&str>,
    settings: &Settings,
    cancel: &CancellationToken,
) -> Result<Outcome, CompactError> {
    let plan = match plan(session, settings) {
        Ok(plan) => plan,
        Err(skip) => return Ok(Outcome::Skipped(skip)),
    };
    let focus = focus.map(str::trim).filter(|f| !f.is_empty());
    let mut spent = Spent::default();
    let summary = summarize_counted(
        client,
        &plan,
        focus,
        session.session_id(),
        cancel,
        &mut spent,
    )
    .await?;
    if cancel.is_cancelled() {
        return Err(CompactError::Cancelled);
    }
    finish(writer, plan, summary, &spent, trigger, focus, settings)
}

/// The last step of [`compact`], for callers that make or change the
/// summary themselves between [`plan`] and here (compaction hooks):
/// appends `summary` as the `context.summary` of `plan`, after what its
/// request cost (`spent`, empty when no request was made), unless it
/// would not shrink the context.
pub fn finish(
    writer: &mut SessionWriter,
    plan: Plan,
    summary: String,
    spent: &Spent,
    trigger: Trigger,
    focus: Option<&str>,
    settings: &Settings,
) -> Result<Outcome, CompactError> {
    let focus = focus.map(str::trim).filter(|f| !f.is_empty());
    let tokens_after =
        plan.tokens_kept + message_tokens(&summary_message(&summary), settings.estimate);
    // Forced, the user asked for the summary whatever it saves.
    if !settings.force && tokens_after >= plan.tokens_before {
        return Ok(Outcome::Skipped(Skip::SummaryTooLong {
            tokens_before: plan.tokens_before,
            tokens_after,
        }));
    }
    let data = SummaryData {
        summary,
        trigger: trigger.as_str().to_string(),
        first_kept_event_id: Some(plan.first_kept_event_id),
        tokens_before: plan.tokens_before,
        tokens_after,
        read_files: plan.read_files,
        modified_files: plan.modified_files,
        instructions: focus.map(str::to_string),
    };
    let counted = spent.record(writer, PURPOSE_COMPACTION)?;
    let appended = writer.append(types::CONTEXT_SUMMARY, &data)?;
    Ok(Outcome::Compacted {
        data,
        event_id: appended.id,
        line: appended.line,
        counted,
    })
}

#[cfg(test)]
mod tests;
