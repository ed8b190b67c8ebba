//! The replay window of the active branch: the active summary, if any, and
//! the message events replayed after it, read the same way the projection
//! in `etch-session` reads them.
//!
//! This module must agree with `etch_session::project_messages` on three
//! things, or a cut could name an event the projection never replays: the
//! latest `context.summary` on the branch is the active one (an unreadable
//! one counts as none), replay starts at its `firstKeptEventId` (or right
//! after it), and failed or aborted assistant passes are never replayed. It
//! knows nothing about budgets or prompts.

use etch_model::{Message, StopReason};
use etch_session::{AssistantData, Event, LoadedSession, SummaryData, ToolData, UserData, types};

use crate::settings::Estimator;
use crate::tokens::message_tokens;

/// The active branch, split at its active summary.
#[derive(Debug)]
pub(crate) struct Branch<'a> {
    /// Events of the active branch, root first.
    pub(crate) path: Vec<&'a Event>,
    /// Position in `path` of the active summary and its data.
    pub(crate) summary: Option<(usize, SummaryData)>,
    /// Position in `path` where raw replay starts.
    pub(crate) start: usize,
}

/// One replayed message event, parsed and measured.
#[derive(Debug)]
pub(crate) struct Entry<'a> {
    /// Position of the event in the branch path.
    pub(crate) pos: usize,
    /// The event's id, a candidate `firstKeptEventId`.
    pub(crate) id: &'a str,
    /// The message the projection makes of it.
    pub(crate) message: Message,
    /// Its estimated tokens.
    pub(crate) tokens: u64,
}

impl Entry<'_> {
    /// Whether replay may start here: a user or assistant message, never a
    /// tool result, which must follow the call that made it (E-CTX-20).
    pub(crate) fn is_cut_point(&self) -> bool {
        matches!(
            self.message,
            Message::User { .. } | Message::Assistant { .. }
        )
    }
}

impl<'a> Branch<'a> {
    /// Finds the active summary and the replay start of `session`.
    pub(crate) fn of(session: &'a LoadedSession) -> Self {
        let path: Vec<&Event> = session.active_events().collect();
        let summary = path
            .iter()
            .rposition(|e| e.kind == types::CONTEXT_SUMMARY)
            .and_then(|pos| Some((pos, path[pos].parse_data::<SummaryData>().ok()?)));
        let start = match &summary {
            Some((pos, data)) => data
                .first_kept_event_id
                .as_deref()
                .and_then(|id| path.iter().position(|e| e.id == id))
                .unwrap_or(pos + 1),
            None => 0,
        };
        Self {
            path,
            summary,
            start,
        }
    }

    /// Position of the active summary event, if there is one.
    pub(crate) fn summary_pos(&self) -> Option<usize> {
        self.summary.as_ref().map(|(pos, _)| *pos)
    }

    /// Parses and measures every replayed message event from the start.
    pub(crate) fn entries(&self, estimate: Estimator) -> Vec<Entry<'a>> {
        self.path[self.start..]
            .iter()
            .enumerate()
            .filter_map(|(offset, event)| {
                let message = replayed_message(event)?;
                Some(Entry {
                    pos: self.start + offset,
                    id: event.id.as_str(),
                    tokens: message_tokens(&message, estimate),
                    message,
                })
            })
            .collect()
    }
}

/// The message a message event replays as; `None` for other event types,
/// unreadable data and failed or aborted passes.
pub(crate) fn replayed_message(event: &Event) -> Option<Message> {
    match event.kind.as_str() {
        types::MESSAGE_USER => {
            let data = event.parse_data::<UserData>().ok()?;
            Some(Message::User {
                content: data.content,
            })
        }
        types::MESSAGE_ASSISTANT => {
            let data = event.parse_data::<AssistantData>().ok()?;
            (!failed(data.stop_reason)).then_some(Message::Assistant {
                content: data.content,
            })
        }
        // A branch summary is replayed as a user message (P-DATA-07), and so
        // is summarized and cut like one (P-COMP-05).
        types::CONTEXT_BRANCH_SUMMARY => {
            let data = event.parse_data::<etch_session::BranchSummaryData>().ok()?;
            Some(etch_session::projection::branch_summary_message(
                &data.summary,
            ))
        }
        types::MESSAGE_TOOL => {
            let data = event.parse_data::<ToolData>().ok()?;
            Some(Message::Tool {
                tool_call_id: data.tool_call_id,
                tool_name: data.tool_name,
                content: data.content,
                is_error: data.is_error,
            })
        }
        _ => None,
    }
}

/// Whether an assistant pass with this stop reason is kept out of the
/// context: it failed or was aborted.
pub(crate) fn failed(stop: StopReason) -> bool {
    matches!(stop, StopReason::Error | StopReason::Aborted)
}
