//! Running the summarizer: one model pass with the request of G24, its text
//! collected into the summary (P-COMP-08/09).
//!
//! Any provider error, a pass that ends with stop reason `error` or
//! `aborted`, or a stream that stops without `Done` fails the summary; the
//! caller then appends nothing. This module knows the model stream, not the
//! session log.

use etch_model::{ErrorKind, ModelClient, ModelError, ModelStream, StopReason, StreamEvent};
use tokio_util::sync::CancellationToken;

use crate::error::CompactError;
use crate::files::{FileLists, with_file_blocks};
use crate::plan::Plan;
use crate::prompt::request;
use crate::spent::Spent;

/// Asks `client` to summarize `plan` and returns the summary text: the
/// model's answer, trimmed, followed by the `<read-files>` and
/// `<modified-files>` blocks of the plan when they are not empty.
///
/// `focus` (from `/compact <instructions>`) is appended to the request as
/// `Additional focus: …`; blank focus text counts as none. `session_id` goes
/// into the request options for cache affinity. Cancelling `cancel` drops the
/// request and returns [`CompactError::Cancelled`].
pub async fn summarize(
    client: &dyn ModelClient,
    plan: &Plan,
    focus: Option<&str>,
    session_id: &str,
    cancel: &CancellationToken,
) -> Result<String, CompactError> {
    summarize_counted(
        client,
        plan,
        focus,
        session_id,
        cancel,
        &mut Spent::default(),
    )
    .await
}

/// [`summarize`], keeping in `spent` the usage and metrics the request
/// reported (also when it fails), for the caller to record with the
/// summary.
pub async fn summarize_counted(
    client: &dyn ModelClient,
    plan: &Plan,
    focus: Option<&str>,
    session_id: &str,
    cancel: &CancellationToken,
    spent: &mut Spent,
) -> Result<String, CompactError> {
    let focus = focus.map(str::trim).filter(|f| !f.is_empty());
    let stream = client.stream(request(plan, focus, session_id), cancel.child_token());
    let text = collect(stream, cancel, spent).await?;
    let text = text.trim();
    if text.is_empty() {
        return Err(CompactError::Empty);
    }
    let files = FileLists {
        read: plan.read_files.clone(),
        modified: plan.modified_files.clone(),
    };
    Ok(with_file_blocks(text, &files))
}

/// Reads the stream to its end and joins its text deltas, keeping usage
/// and metrics in `spent`; reasoning and any tool calls (none were
/// offered) are ignored.
async fn collect(
    mut stream: ModelStream,
    cancel: &CancellationToken,
    spent: &mut Spent,
) -> Result<String, CompactError> {
    let mut text = String::new();
    loop {
        let event = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(CompactError::Cancelled),
            event = stream.next() => event,
        };
        match event {
            Some(StreamEvent::TextDelta(delta)) => text.push_str(&delta),
            Some(StreamEvent::Usage(usage)) => spent.usage = Some(usage),
            Some(StreamEvent::Metrics(metrics)) => spent.metrics = Some(metrics),
            Some(StreamEvent::Error(err)) => return Err(CompactError::Model(err)),
            Some(StreamEvent::Done { stop_reason }) => {
                return match stop_reason {
                    StopReason::Error => Err(CompactError::Model(ModelError::new(
                        ErrorKind::Other,
                        "the model ended the summary with stop reason error",
                    ))),
                    StopReason::Aborted => Err(CompactError::Model(ModelError::new(
                        ErrorKind::Other,
                        "the model aborted the summary",
                    ))),
                    StopReason::Stop | StopReason::Length | StopReason::ToolUse => Ok(text),
                };
            }
            Some(_) => {}
            None => {
                return Err(CompactError::Model(ModelError::new(
                    ErrorKind::Protocol,
                    "the model stream ended without a done event (connection closed early?)",
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests;
