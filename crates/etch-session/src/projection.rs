//! Projection of the active branch into model-visible messages.
//!
//! Only message events and provider items enter the projection; usage,
//! reasoning, response and metrics events are transcript metadata
//! (E-CTX-23). Assistant passes that failed are kept in the log for
//! inspection but never replayed; an answer the user interrupted is
//! replayed with the text it had (never a tool call), so the model sees
//! what the user saw and two user messages never follow each other. When a `context.summary` is on the
//! branch, the projection is one user message in Pi's summary wrapper followed
//! by the raw events from its `firstKeptEventId` (C23). The projection never
//! fails: events whose data cannot be read are skipped with a warning
//! (P-DATA-09), and tool calls left without results (a crash mid-batch) get a
//! synthetic `tool error: Operation aborted` so the history stays valid for
//! every provider.

use etch_model::{ContentPart, Message, ProviderItem, StopReason, ToolCall};

use crate::assets::Assets;
use crate::event::{
    AssistantData, BranchSummaryData, Event, GroundingData, SummaryData, ToolData, UserData, types,
};
use crate::loader::LoadedSession;

/// The text of a tool result synthesized for a call that never got one (G20).
pub const ABORTED_RESULT: &str = "tool error: Operation aborted";

/// The model-visible view of a session branch.
#[derive(Debug, Clone, Default)]
pub struct Projection {
    /// Messages in order, ready for a request.
    pub messages: Vec<Message>,
    /// The active summary, if the branch was compacted.
    pub summary: Option<SummaryData>,
    /// Events that could not be projected, and why.
    pub warnings: Vec<String>,
}

/// Wraps a compaction summary as the user message Pi sends (P-DATA-06).
pub fn summary_message(summary: &str) -> Message {
    Message::user_text(format!(
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\n{summary}\n</summary>"
    ))
}

/// Wraps a branch summary as the user message Pi sends (P-DATA-07: no
/// newline before the closing tag).
pub fn branch_summary_message(summary: &str) -> Message {
    Message::user_text(format!(
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n{summary}</summary>"
    ))
}

/// Projects the active branch of `session` into messages.
pub fn project_messages(session: &LoadedSession) -> Projection {
    let path: Vec<&Event> = session.active_events().collect();
    let mut out = project_path(&path);
    out.load_images(&Assets::of(&session.path));
    out
}

/// Projects the branch that ends at the event `leaf`, as the model would
/// see the conversation had it continued from there; `None` when no event
/// has that id.
pub fn project_messages_at(session: &LoadedSession, leaf: &str) -> Option<Projection> {
    let branch = crate::tree::branch_to(session, leaf)?;
    let path: Vec<&Event> = branch.iter().map(|&i| &session.events[i]).collect();
    let mut out = project_path(&path);
    out.load_images(&Assets::of(&session.path));
    Some(out)
}

impl Projection {
    /// Loads the bytes of every image the messages refer to from the
    /// session's store. An image that cannot be loaded stays without
    /// bytes (a provider sends a marker in its place) and is named in a
    /// warning: a lost file never stops a session from resuming.
    pub fn load_images(&mut self, assets: &Assets) {
        for message in &mut self.messages {
            for part in message.parts_mut() {
                let ContentPart::Image(image) = part else {
                    continue;
                };
                match assets.load(image) {
                    Ok(loaded) => *image = loaded,
                    Err(err) => self.warnings.push(format!(
                        "image {} is not sent again: {err}",
                        image.describe()
                    )),
                }
            }
        }
    }
}

/// Projects one root-first run of events (a whole branch, or the part of
/// one that a navigation leaves behind).
pub fn project_path(path: &[&Event]) -> Projection {
    let mut out = Projection::default();
    let mut start = 0;
    // The latest summary on the branch decides where raw replay begins.
    if let Some((pos, event)) = path
        .iter()
        .enumerate()
        .rev()
        .find(|(_, e)| e.kind == types::CONTEXT_SUMMARY)
    {
        match event.parse_data::<SummaryData>() {
            Ok(summary) => {
                out.messages.push(summary_message(&summary.summary));
                start = summary
                    .first_kept_event_id
                    .as_deref()
                    .and_then(|id| path.iter().position(|e| e.id == id))
                    .unwrap_or(pos + 1);
                out.summary = Some(summary);
            }
            Err(err) => out.warnings.push(format!(
                "line {}: unreadable context.summary skipped: {err}",
                event.line
            )),
        }
    }
    let mut pending: Vec<(String, String)> = Vec::new();
    for event in &path[start..] {
        project_event(event, &mut out, &mut pending);
    }
    close_pending(&mut out.messages, &mut pending);
    out
}

/// Adds one event's contribution to the projection.
fn project_event(event: &Event, out: &mut Projection, pending: &mut Vec<(String, String)>) {
    let bad = |out: &mut Projection, err: serde_json::Error| {
        out.warnings.push(format!(
            "line {}: unreadable {} skipped: {err}",
            event.line, event.kind
        ));
    };
    match event.kind.as_str() {
        types::MESSAGE_USER => match event.parse_data::<UserData>() {
            Ok(data) => {
                close_pending(&mut out.messages, pending);
                out.messages.push(Message::User {
                    content: data.content,
                });
            }
            Err(err) => bad(out, err),
        },
        types::MESSAGE_ASSISTANT => match event.parse_data::<AssistantData>() {
            Ok(data) if data.stop_reason == StopReason::Error => {}
            Ok(data) if data.stop_reason == StopReason::Aborted => {
                let text: Vec<ContentPart> = data
                    .content
                    .into_iter()
                    .filter(|p| matches!(p, ContentPart::Text { text } if !text.trim().is_empty()))
                    .collect();
                if !text.is_empty() {
                    close_pending(&mut out.messages, pending);
                    out.messages.push(Message::Assistant { content: text });
                }
            }
            Ok(data) => {
                close_pending(&mut out.messages, pending);
                for part in &data.content {
                    if let ContentPart::ToolCall(call) = part {
                        pending.push((call.id.clone(), call.name.clone()));
                    }
                }
                out.messages.push(Message::Assistant {
                    content: data.content,
                });
            }
            Err(err) => bad(out, err),
        },
        types::MESSAGE_TOOL => match event.parse_data::<ToolData>() {
            // A result no call awaits (its call unreadable or not on
            // this branch, or already answered) would make every
            // provider refuse the request: it is left out.
            Ok(data) if !pending.iter().any(|(id, _)| *id == data.tool_call_id) => {
                out.warnings.push(format!(
                    "line {}: tool result for call {} skipped: no call on this branch awaits it",
                    event.line, data.tool_call_id
                ));
            }
            Ok(data) => {
                pending.retain(|(id, _)| *id != data.tool_call_id);
                out.messages.push(Message::Tool {
                    tool_call_id: data.tool_call_id,
                    tool_name: data.tool_name,
                    content: data.content,
                    is_error: data.is_error,
                });
            }
            Err(err) => bad(out, err),
        },
        types::PROCESS_UPDATE => match event.parse_data::<crate::event::ProcessUpdateData>() {
            Ok(data) => {
                close_pending(&mut out.messages, pending);
                out.messages.push(Message::user_text(data.text));
            }
            Err(err) => bad(out, err),
        },
        types::LOOP_GROUNDING => match event.parse_data::<GroundingData>() {
            Ok(data) => {
                close_pending(&mut out.messages, pending);
                out.messages.push(Message::user_text(data.note));
            }
            Err(err) => bad(out, err),
        },
        types::CONTEXT_BRANCH_SUMMARY => match event.parse_data::<BranchSummaryData>() {
            Ok(data) => {
                close_pending(&mut out.messages, pending);
                out.messages.push(branch_summary_message(&data.summary));
            }
            Err(err) => bad(out, err),
        },
        types::MODEL_PROVIDER_ITEM => match event.parse_data::<ProviderItem>() {
            Ok(item) => out.messages.push(Message::ProviderItem(item)),
            Err(err) => bad(out, err),
        },
        _ => {}
    }
}

/// Answers calls that never got a result before the conversation moved on.
fn close_pending(messages: &mut Vec<Message>, pending: &mut Vec<(String, String)>) {
    for (id, name) in pending.drain(..) {
        messages.push(Message::Tool {
            tool_call_id: id,
            tool_name: name,
            content: vec![ContentPart::text(ABORTED_RESULT)],
            is_error: true,
        });
    }
}

/// Tool calls of the branch's last assistant message that have no result yet.
///
/// A crash or kill during a tool batch leaves such calls; the core appends an
/// aborted result for each before continuing the session, so the log itself
/// becomes valid history again rather than relying on projection repair.
pub fn dangling_tool_calls(session: &LoadedSession) -> Vec<ToolCall> {
    let mut pending: Vec<ToolCall> = Vec::new();
    for event in session.active_events() {
        match event.kind.as_str() {
            types::MESSAGE_ASSISTANT => {
                if let Ok(data) = event.parse_data::<AssistantData>() {
                    if matches!(data.stop_reason, StopReason::Error | StopReason::Aborted) {
                        continue;
                    }
                    pending = data
                        .content
                        .into_iter()
                        .filter_map(|p| match p {
                            ContentPart::ToolCall(call) => Some(call),
                            ContentPart::Text { .. } | ContentPart::Image(_) => None,
                        })
                        .collect();
                }
            }
            types::MESSAGE_TOOL => {
                if let Ok(data) = event.parse_data::<ToolData>() {
                    pending.retain(|c| c.id != data.tool_call_id);
                }
            }
            types::MESSAGE_USER => pending.clear(),
            _ => {}
        }
    }
    pending
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::parse_session;
    use std::path::Path;

    /// Serializes events into a session text with a header and linear parents.
    fn session(events: &[(&str, serde_json::Value)]) -> LoadedSession {
        let mut lines = vec![
            r#"{"type":"session.started","id":"E0","parentId":null,"time":"t","data":{"sessionId":"S","formatVersion":1,"cwd":"/","etchVersion":"0","provider":"echo","model":"echo"}}"#
                .to_string(),
        ];
        for (i, (kind, data)) in events.iter().enumerate() {
            lines.push(
                serde_json::json!({"type": kind, "id": format!("E{}", i + 1), "parentId": format!("E{i}"), "time": "t", "data": data})
                    .to_string(),
            );
        }
        parse_session(Path::new("s.jsonl"), lines.join("\n").as_bytes()).unwrap()
    }

    /// A result no call awaits (its call unreadable, or already answered
    /// by the aborted result a user message left) is left out with a
    /// warning: a provider refuses a result for a call it never saw.
    #[test]
    fn results_no_call_awaits_are_left_out() {
        let call = |id: &str| serde_json::json!({"content":[{"type":"tool_call","id":id,"name":"read","arguments":{}}],"provider":"p","model":"m","stopReason":"toolUse"});
        let result = |id: &str| serde_json::json!({"toolCallId":id,"toolName":"read","content":[{"type":"text","text":"x"}],"isError":false});
        let s = session(&[
            (
                "message.user",
                serde_json::json!({"content":[{"type":"text","text":"hi"}]}),
            ),
            // Unreadable: its result has no call.
            ("message.assistant", serde_json::json!({"content": 7})),
            ("message.tool", result("lost")),
            ("message.assistant", call("c1")),
            (
                "message.user",
                serde_json::json!({"content":[{"type":"text","text":"stop"}]}),
            ),
            // Late: the user message closed c1 with an aborted result.
            ("message.tool", result("c1")),
        ]);
        let p = project_messages(&s);
        let results: Vec<&str> = p
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(results, ["c1"], "only the aborted result of c1");
        let skipped: Vec<_> = p
            .warnings
            .iter()
            .filter(|w| w.contains("no call on this branch awaits it"))
            .collect();
        assert_eq!(skipped.len(), 2, "{:?}", p.warnings);
    }

    /// Messages replay in order; metadata events and failed passes do not.
    #[test]
    fn projects_messages_and_skips_metadata() {
        let s = session(&[
            (
                "message.user",
                serde_json::json!({"content":[{"type":"text","text":"hi"}]}),
            ),
            ("model.reasoning", serde_json::json!({"text":"thinking"})),
            (
                "message.assistant",
                serde_json::json!({"content":[{"type":"tool_call","id":"c1","name":"read","arguments":{"path":"a"}}],"provider":"p","model":"m","stopReason":"toolUse"}),
            ),
            (
                "model.usage",
                serde_json::json!({"inputTokens":1,"cachedInputTokens":0,"outputTokens":1,"reasoningOutputTokens":0,"totalTokens":2}),
            ),
            (
                "message.tool",
                serde_json::json!({"toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x"}],"isError":false}),
            ),
            (
                "message.assistant",
                serde_json::json!({"content":[{"type":"text","text":"partial"}],"provider":"p","model":"m","stopReason":"error","errorMessage":"boom"}),
            ),
            ("model.metrics", serde_json::json!({"transport":"echo"})),
        ]);
        let p = project_messages(&s);
        assert_eq!(p.messages.len(), 3);
        assert!(matches!(p.messages[0], Message::User { .. }));
        assert_eq!(p.messages[1].tool_calls().len(), 1);
        assert!(
            matches!(&p.messages[2], Message::Tool { tool_call_id, .. } if tool_call_id == "c1")
        );
        assert!(p.warnings.is_empty());
        assert!(dangling_tool_calls(&s).is_empty());
    }

    /// A `process.update` replays as the user message the model got; the
    /// start and end records of processes are metadata.
    #[test]
    fn process_updates_replay_as_user_messages() {
        let s = session(&[
            (
                "process.started",
                serde_json::json!({"processId":"p1","pid":7,"command":"make watch","toolCallId":"c1"}),
            ),
            (
                "process.update",
                serde_json::json!({"text":"<process-update id=\"p1\" state=\"running\">\nok\n</process-update>","processes":["p1"]}),
            ),
            (
                "process.exited",
                serde_json::json!({"processId":"p1","state":"exited","code":0}),
            ),
        ]);
        let p = project_messages(&s);
        assert_eq!(p.messages.len(), 1);
        assert!(matches!(&p.messages[0], Message::User { content }
            if etch_model::content::joined_text(content).starts_with("<process-update id=\"p1\"")));
        assert!(p.warnings.is_empty());
    }

    /// P-DATA-07: a branch summary is a user message in Pi's exact wrapper
    /// (no newline before the closing tag), in its place on the branch.
    #[test]
    fn branch_summary_projection_uses_pi_wrapper() {
        let s = session(&[
            (
                "message.user",
                serde_json::json!({"content":[{"type":"text","text":"first"}]}),
            ),
            (
                "context.branch_summary",
                serde_json::json!({"summary":"tried X","fromId":"E9"}),
            ),
        ]);
        let p = project_messages(&s);
        assert_eq!(p.messages.len(), 2);
        assert_eq!(
            p.messages[1],
            Message::user_text(
                "The following is a summary of a branch that this conversation came back from:\n\n<summary>\ntried X</summary>"
            )
        );
    }

    /// C23: a summary replaces the prefix; replay resumes at firstKeptEventId.
    #[test]
    fn summary_projection_uses_pi_wrapper_and_first_kept() {
        let s = session(&[
            (
                "message.user",
                serde_json::json!({"content":[{"type":"text","text":"old"}]}),
            ),
            (
                "message.user",
                serde_json::json!({"content":[{"type":"text","text":"kept"}]}),
            ),
            (
                "context.summary",
                serde_json::json!({"summary":"S1","trigger":"manual","firstKeptEventId":"E2"}),
            ),
            (
                "message.user",
                serde_json::json!({"content":[{"type":"text","text":"new"}]}),
            ),
        ]);
        let p = project_messages(&s);
        let texts: Vec<String> = p
            .messages
            .iter()
            .map(|m| match m {
                Message::User { content } => etch_model::content::joined_text(content),
                _ => String::new(),
            })
            .collect();
        assert_eq!(
            texts,
            [
                "The conversation history before this point was compacted into the following summary:\n\n<summary>\nS1\n</summary>",
                "kept",
                "new"
            ]
        );
    }

    /// A crash between a tool call and its result leaves a dangling call; the
    /// projection answers it so the history stays valid, and the core can
    /// find it to append a durable result.
    #[test]
    fn dangling_calls_are_closed_and_reported() {
        let s = session(&[
            (
                "message.user",
                serde_json::json!({"content":[{"type":"text","text":"hi"}]}),
            ),
            (
                "message.assistant",
                serde_json::json!({"content":[{"type":"tool_call","id":"c1","name":"bash","arguments":{}},{"type":"tool_call","id":"c2","name":"bash","arguments":{}}],"stopReason":"toolUse"}),
            ),
            (
                "message.tool",
                serde_json::json!({"toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"ok"}]}),
            ),
        ]);
        let dangling = dangling_tool_calls(&s);
        assert_eq!(dangling.len(), 1);
        assert_eq!(dangling[0].id, "c2");
        let p = project_messages(&s);
        assert!(
            matches!(p.messages.last(), Some(Message::Tool { tool_call_id, is_error: true, .. }) if tool_call_id == "c2")
        );
    }

    /// Unreadable data is skipped with a warning instead of failing (P-DATA-09).
    #[test]
    fn unreadable_data_is_a_warning() {
        let s = session(&[("message.user", serde_json::json!({"content":"not a list"}))]);
        let p = project_messages(&s);
        assert!(p.messages.is_empty());
        assert_eq!(p.warnings.len(), 1);
    }
}
