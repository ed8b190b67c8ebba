//! `session/load`: an etch session's active branch told again as the
//! updates a client would have seen live, so an editor shows the whole
//! conversation: the user's prompts, the answers and reasoning, each
//! tool call with its result.
//!
//! This module must not know how updates are sent.

use agent_client_protocol_schema::v1::SessionUpdate;
use etch_protocol::{Replay, ReplayEntry};

use crate::update::{Updates, chunk};

/// The updates replaying `replay`'s active branch.
pub fn replay(replay: &Replay, updates: &mut Updates) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    for entry in &replay.entries {
        match entry {
            ReplayEntry::User { text, .. } => {
                out.push(SessionUpdate::UserMessageChunk(chunk(text)));
            }
            ReplayEntry::Reasoning { text } => {
                if !text.is_empty() {
                    out.push(SessionUpdate::AgentThoughtChunk(chunk(text)));
                }
            }
            ReplayEntry::Assistant {
                text, tool_calls, ..
            } => {
                if !text.is_empty() {
                    out.push(SessionUpdate::AgentMessageChunk(chunk(text)));
                }
                for call in tool_calls {
                    out.push(updates.announce(&call.id, &call.name, &call.arguments));
                }
            }
            ReplayEntry::ToolResult {
                tool_call_id,
                text,
                is_error,
                details,
                ..
            } => out.push(updates.finish(tool_call_id, text, *is_error, details.as_ref())),
        }
    }
    out
}
