//! The bridge from the loop's borrowed, in-process lifecycle events to the
//! protocol's owned events: an [`Observer`] that converts each callback
//! into an [`Event`] tagged with the id of the command that started the
//! run, and hands it to a sink (a channel, a writer, a test's vector).
//!
//! Messages become the protocol's wire shape here, once, so every front end
//! shows the same thing. The conversion is cheap and allocation-bound by
//! the event itself: deltas stay deltas. It must not know where events go.

use etch_core::{AgentEvent, CompactionResult, Delta as CoreDelta, Observer};
use etch_model::{ContentPart, Message};
use etch_protocol::{CompactionOutcome, Delta, Event, EventBody, WireMessage, WirePart};

/// Where converted events go.
pub type EventSink = Box<dyn FnMut(Event) + Send>;

/// An observer that turns a run's events into protocol events.
pub struct EventBridge {
    /// The id of the command that caused the run, put on every event.
    command_id: Option<String>,
    /// Where events go.
    sink: EventSink,
}

impl EventBridge {
    /// A bridge tagging events with `command_id` and handing them to `sink`.
    pub fn new(command_id: Option<String>, sink: EventSink) -> Self {
        Self { command_id, sink }
    }

    /// Sends one event with the command id.
    pub fn emit_body(&mut self, body: EventBody) {
        (self.sink)(Event {
            id: self.command_id.clone(),
            body,
        });
    }
}

impl Observer for EventBridge {
    fn agent_event(&mut self, event: &AgentEvent<'_>) {
        if let Some(body) = convert(event) {
            self.emit_body(body);
        }
    }

    /// Usage and metrics exist only as log lines; they become events so a
    /// front end's counters move as requests finish (E-CHAT-16).
    fn durable_line(&mut self, line: &str) {
        if let Some(body) = line_event(line) {
            self.emit_body(body);
        }
    }
}

/// The event a front end sees for a log line: usage and metrics (its
/// counters move), a blocked or failed hook, a plugin's diagnostic;
/// `None` for the lines other events already cover.
pub fn line_event(line: &str) -> Option<EventBody> {
    counters(line).or_else(|| {
        line_notice(line).map(|message| EventBody::Notice {
            level: etch_protocol::NoticeLevel::Warning,
            message,
        })
    })
}

/// The warning a log line carries for the user, the same record the log
/// keeps: a `hook.run` whose hook blocked or failed (why a prompt or call
/// did not go through), a `plugin.diagnostic`; `None` for other lines.
pub fn line_notice(line: &str) -> Option<String> {
    if line.contains("\"type\":\"plugin.diagnostic\"") {
        let event: serde_json::Value = serde_json::from_str(line).ok()?;
        let data: etch_session::PluginDiagnosticData =
            serde_json::from_value(event.get("data")?.clone()).ok()?;
        return Some(format!(
            "{}: {}",
            etch_plugins::who(&data.plugin),
            data.message
        ));
    }
    if !line.contains("\"type\":\"hook.run\"") {
        return None;
    }
    let event: serde_json::Value = serde_json::from_str(line).ok()?;
    let data: etch_session::HookRunData =
        serde_json::from_value(event.get("data")?.clone()).ok()?;
    let what = match data.outcome.as_str() {
        "blocked" => "blocked",
        "failed" => "failed",
        _ => return None,
    };
    let mut message = format!("{} hook `{}` {what}", data.event, data.command);
    if let Some(reason) = data.reason {
        message = format!("{message}: {reason}");
    }
    Some(message)
}

/// The `model_usage` or `model_metrics` event for a log line of that
/// type; `None` for every other line (cheaply: the type is looked for
/// before anything is parsed).
pub fn counters(line: &str) -> Option<EventBody> {
    if !line.contains("\"type\":\"model.usage\"") && !line.contains("\"type\":\"model.metrics\"") {
        return None;
    }
    let mut value: serde_json::Value = serde_json::from_str(line).ok()?;
    let data = value.get_mut("data").map(serde_json::Value::take)?;
    match value.get("type").and_then(serde_json::Value::as_str)? {
        "model.usage" => Some(EventBody::ModelUsage { usage: data }),
        "model.metrics" => Some(EventBody::ModelMetrics { metrics: data }),
        _ => None,
    }
}

/// The protocol event for a loop event; `None` for loop events the
/// protocol has no counterpart for (the batch start, provider items).
pub fn convert(event: &AgentEvent<'_>) -> Option<EventBody> {
    Some(match *event {
        AgentEvent::AgentStart => EventBody::AgentStart,
        AgentEvent::ProcessUpdate { text } => EventBody::ProcessUpdate {
            text: text.to_owned(),
        },
        AgentEvent::TurnStart { round } => EventBody::TurnStart { round },
        AgentEvent::MessageStart { message } => EventBody::MessageStart {
            message: Some(match message {
                Some(message) => wire_message(message)?,
                // The streaming answer starts empty, with its role, as
                // Pi's clients expect.
                None => WireMessage::Assistant {
                    content: Vec::new(),
                    stop_reason: None,
                    error_message: None,
                },
            }),
        },
        AgentEvent::MessageUpdate { delta } => EventBody::MessageUpdate {
            delta: match delta {
                CoreDelta::Text(text) => Delta::TextDelta {
                    delta: text.to_owned(),
                },
                CoreDelta::Reasoning(text) => Delta::ThinkingDelta {
                    delta: text.to_owned(),
                },
                CoreDelta::ToolCallStart { id, name } => Delta::ToolcallStart {
                    id: id.to_owned(),
                    name: name.to_owned(),
                },
                CoreDelta::ToolCallArguments(text) => Delta::ToolcallDelta {
                    delta: text.to_owned(),
                },
            },
        },
        AgentEvent::MessageEnd {
            message,
            stop_reason,
        } => EventBody::MessageEnd {
            message: match (wire_message(message)?, stop_reason) {
                (
                    WireMessage::Assistant {
                        content,
                        error_message,
                        ..
                    },
                    Some(etch_model::StopReason::Aborted),
                ) => WireMessage::Assistant {
                    content,
                    stop_reason: Some(etch_protocol::StopReason::Aborted),
                    error_message,
                },
                (message, _) => message,
            },
        },
        AgentEvent::ToolBatchStart { .. } => return None,
        AgentEvent::ToolExecutionStart { call } => EventBody::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
        },
        AgentEvent::ToolExecutionUpdate { call_id, text } => EventBody::ToolExecutionUpdate {
            tool_call_id: call_id.to_owned(),
            partial_result: text.to_owned(),
        },
        // A subagent's request: the same counters, marked with the
        // parent's call, so clients can tell them apart (E-SUB-16).
        AgentEvent::ToolCounters { call_id, line } => match counters(line)? {
            EventBody::ModelUsage { mut usage } => {
                usage["toolCallId"] = serde_json::json!(call_id);
                EventBody::ModelUsage { usage }
            }
            EventBody::ModelMetrics { mut metrics } => {
                metrics["toolCallId"] = serde_json::json!(call_id);
                EventBody::ModelMetrics { metrics }
            }
            _ => return None,
        },
        AgentEvent::ToolExecutionEnd {
            call_id,
            text,
            is_error,
            elapsed,
            details,
        } => EventBody::ToolExecutionEnd {
            tool_call_id: call_id.to_owned(),
            result: text.to_owned(),
            is_error,
            duration_ms: millis(elapsed),
            details: details.cloned(),
        },
        AgentEvent::TurnEnd {
            round,
            elapsed,
            tool_results,
        } => EventBody::TurnEnd {
            round,
            tool_results: u32::try_from(tool_results).unwrap_or(u32::MAX),
            duration_ms: millis(elapsed),
        },
        AgentEvent::CompactionStart { trigger } => EventBody::CompactionStart {
            reason: trigger.to_string(),
        },
        AgentEvent::CompactionEnd { trigger, result } => EventBody::CompactionEnd {
            reason: trigger.to_string(),
            outcome: match result {
                CompactionResult::Compacted {
                    tokens_before,
                    tokens_after,
                } => CompactionOutcome::Compacted {
                    tokens_before,
                    tokens_after,
                },
                CompactionResult::Skipped(why) => CompactionOutcome::Skipped {
                    reason: why.to_owned(),
                },
                CompactionResult::Failed(why) => CompactionOutcome::Failed {
                    reason: why.to_owned(),
                },
            },
        },
        AgentEvent::Retrying {
            attempt,
            max_retries,
            delay,
            reason,
        } => EventBody::AutoRetryStart {
            attempt,
            max_attempts: max_retries,
            delay_ms: millis(delay),
            error_message: reason.to_owned(),
        },
        AgentEvent::RetryEnd {
            success,
            attempt,
            final_error,
        } => EventBody::AutoRetryEnd {
            success,
            attempt,
            final_error: final_error.map(str::to_owned),
        },
        AgentEvent::AgentEnd { error } => EventBody::AgentEnd {
            error: error.map(str::to_owned),
        },
    })
}

/// A model message in the protocol's wire shape; provider-native replay
/// items have none (they are not conversation).
pub fn wire_message(message: &Message) -> Option<WireMessage> {
    Some(match message {
        Message::User { content } => WireMessage::User {
            content: wire_parts(content),
        },
        Message::Assistant { content } => WireMessage::Assistant {
            content: wire_parts(content),
            stop_reason: None,
            error_message: None,
        },
        Message::Tool {
            tool_call_id,
            tool_name,
            content,
            is_error,
        } => WireMessage::ToolResult {
            tool_call_id: tool_call_id.clone(),
            tool_name: tool_name.clone(),
            content: wire_parts(content),
            is_error: *is_error,
        },
        Message::ProviderItem(_) => return None,
    })
}

/// A wire message as a model message (a hook's rewritten context):
/// thinking parts have no place in a request and are left out.
pub fn message_from_wire(message: WireMessage) -> Message {
    let parts = |content: Vec<WirePart>| -> Vec<ContentPart> {
        content
            .into_iter()
            .filter_map(|part| match part {
                WirePart::Text { text } => Some(ContentPart::Text { text }),
                WirePart::ToolCall {
                    id,
                    name,
                    arguments,
                } => Some(ContentPart::ToolCall(etch_model::ToolCall {
                    id,
                    name,
                    arguments,
                })),
                WirePart::Thinking { .. } => None,
                // The bytes of the image the hook kept are found again
                // by their hash below.
                WirePart::Image {
                    media_type,
                    sha256,
                    width,
                    height,
                } => etch_model::MediaType::from_mime(&media_type)
                    .filter(|_| etch_model::image::is_sha256(&sha256))
                    .map(|media_type| {
                        ContentPart::Image(etch_model::Image::reference(
                            media_type, sha256, width, height,
                        ))
                    }),
            })
            .collect()
    };
    match message {
        WireMessage::User { content } => Message::User {
            content: parts(content),
        },
        WireMessage::Assistant { content, .. } => Message::Assistant {
            content: parts(content),
        },
        WireMessage::ToolResult {
            tool_call_id,
            tool_name,
            content,
            is_error,
        } => Message::Tool {
            tool_call_id,
            tool_name,
            content: parts(content),
            is_error,
        },
    }
}

/// Content parts in the wire shape.
fn wire_parts(parts: &[ContentPart]) -> Vec<WirePart> {
    parts
        .iter()
        .map(|part| match part {
            ContentPart::Text { text } => WirePart::Text { text: text.clone() },
            ContentPart::ToolCall(call) => WirePart::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
            ContentPart::Image(image) => wire_image(image),
        })
        .collect()
}

/// Gives the images of `rewritten` (a hook's messages, images by
/// reference) the bytes of the same images in `original`: a hook may keep,
/// move or drop an image, never bring new bytes.
pub fn reload_images(rewritten: &mut [Message], original: &[Message]) {
    let known: std::collections::HashMap<&str, &etch_model::Image> = original
        .iter()
        .flat_map(Message::parts)
        .filter_map(|part| match part {
            ContentPart::Image(image) if image.data().is_some() => {
                Some((image.sha256.as_str(), image))
            }
            _ => None,
        })
        .collect();
    for part in rewritten.iter_mut().flat_map(Message::parts_mut) {
        if let ContentPart::Image(image) = part
            && let Some(found) = known.get(image.sha256.as_str())
        {
            *image = (*found).clone();
        }
    }
}

/// An image part in the wire shape (by reference).
pub fn wire_image(image: &etch_model::Image) -> WirePart {
    WirePart::Image {
        media_type: image.media_type.mime().to_owned(),
        sha256: image.sha256.clone(),
        width: image.width,
        height: image.height,
    }
}

/// Whole milliseconds of a duration, saturating.
fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A real run (the echo model, a session on disk) seen through the
    /// bridge: Pi's event order, every event tagged with the command id,
    /// messages in the wire shape, the answer as a text delta.
    #[test]
    fn a_run_becomes_tagged_protocol_events() {
        let dir = tempfile::tempdir().unwrap();
        let (mut writer, agent) = crate::testkit::echo_run(dir.path());
        let seen: Arc<Mutex<Vec<Event>>> = Arc::default();
        let sink = Arc::clone(&seen);
        let mut bridge = EventBridge::new(
            Some("c1".into()),
            Box::new(move |event| sink.lock().unwrap().push(event)),
        );
        crate::testkit::block(agent.run(
            &mut writer,
            &mut Vec::new(),
            "hello there",
            &mut bridge,
            &tokio_util::sync::CancellationToken::new(),
        ))
        .unwrap();
        let events = seen.lock().unwrap();
        assert!(events.iter().all(|e| e.id.as_deref() == Some("c1")));
        let kinds: Vec<String> = events
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "agent_start",
                "turn_start",
                "message_start",
                "message_end",
                "message_start",
                "message_update",
                "message_end",
                "model_metrics",
                "turn_end",
                "agent_end"
            ]
        );
        let metrics = serde_json::to_value(&events[7]).unwrap();
        assert_eq!(metrics["metrics"]["transport"], "echo");
        let user = serde_json::to_value(&events[3]).unwrap();
        assert_eq!(user["message"]["role"], "user");
        assert_eq!(user["message"]["content"][0]["text"], "hello there");
        let delta = serde_json::to_value(&events[5]).unwrap();
        assert_eq!(delta["delta"]["type"], "text_delta");
        assert_eq!(delta["delta"]["delta"], "hello there");
        assert!(
            serde_json::to_value(&events[9])
                .unwrap()
                .get("error")
                .is_none()
        );
    }

    /// Provider replay items are not conversation: no wire message.
    #[test]
    fn provider_items_have_no_wire_shape() {
        let item = Message::ProviderItem(etch_model::ProviderItem {
            provider: "openai".into(),
            api: "responses".into(),
            item_type: "reasoning".into(),
            item: serde_json::json!({}),
            model: None,
        });
        assert!(wire_message(&item).is_none());
    }
}
