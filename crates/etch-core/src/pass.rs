//! Collecting one model pass from a provider stream into a finished answer.
//!
//! Text blocks and tool calls are kept in arrival order; tool-call argument
//! fragments are joined per call index and parsed once the pass ends. A stream
//! that stops without `Done` or `Error` is a protocol error, never an answer.

use std::collections::HashMap;
use std::time::Duration;

use etch_model::{
    ContentPart, ErrorKind, Metrics, ModelError, ModelStream, ProviderItem, StopReason,
    StreamEvent, ToolCall, Usage,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::observer::{AgentEvent, Delta, Observer};

/// Everything one model pass produced.
#[derive(Debug, Default)]
pub struct Pass {
    /// Text and tool-call parts in arrival order.
    pub content: Vec<ContentPart>,
    /// Completed reasoning summaries.
    pub reasoning: Vec<String>,
    /// Provider usage.
    pub usage: Option<Usage>,
    /// Provider response id and model.
    pub response: Option<(String, String)>,
    /// Opaque items to persist.
    pub provider_items: Vec<ProviderItem>,
    /// Transport metrics.
    pub metrics: Option<Metrics>,
    /// Why the pass stopped, or how it failed.
    pub outcome: Option<Result<StopReason, ModelError>>,
    /// Argument parse errors by call id, for calls whose JSON was invalid.
    pub argument_errors: HashMap<String, String>,
    /// Id of the `message.assistant` event the pass was logged as, once it
    /// is (tools receive it as the origin of their call).
    pub assistant_event_id: String,
    /// Cancelled before it ended: `content` holds what had streamed.
    pub aborted: bool,
}

/// A tool call being assembled from deltas.
#[derive(Debug)]
struct PartialCall {
    /// Position of the call's part in `Pass::content`.
    slot: usize,
    /// Raw argument text so far.
    arguments: String,
}

/// Reads a stream to its end. When `cancel` fires first the pass comes
/// back `aborted` with what had streamed, which the loop logs as an
/// interrupted answer (G20 as issue 28 changed it: what the user saw is
/// kept).
pub async fn collect(
    mut stream: ModelStream,
    cancel: &CancellationToken,
    observer: &mut dyn Observer,
) -> Option<Pass> {
    let mut pass = Pass::default();
    let mut calls: HashMap<usize, PartialCall> = HashMap::new();
    let mut text_open = false;
    let mut reasoning: Option<String> = None;
    // The last retry announced and not yet settled.
    let mut retrying: Option<u32> = None;
    loop {
        let event = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                pass.aborted = true;
                return Some(pass);
            }
            event = stream.next() => event,
        };
        let Some(event) = event else {
            pass.outcome = Some(Err(ModelError::new(
                ErrorKind::Protocol,
                "the model stream ended without a done event (connection closed early?)",
            )));
            break;
        };
        if let Some(attempt) = retrying
            && !matches!(
                event,
                StreamEvent::Retrying { .. } | StreamEvent::Metrics(_)
            )
        {
            retrying = None;
            let final_error = match &event {
                StreamEvent::Error(err) => Some(err.message.as_str()),
                _ => None,
            };
            observer.agent_event(&AgentEvent::RetryEnd {
                success: final_error.is_none(),
                attempt,
                final_error,
            });
        }
        match event {
            StreamEvent::TextStart | StreamEvent::TextEnd => text_open = false,
            StreamEvent::TextDelta(delta) => {
                observer.agent_event(&AgentEvent::MessageUpdate {
                    delta: Delta::Text(&delta),
                });
                match pass.content.last_mut() {
                    Some(ContentPart::Text { text }) if text_open => text.push_str(&delta),
                    _ => pass.content.push(ContentPart::Text { text: delta }),
                }
                text_open = true;
            }
            StreamEvent::ReasoningStart => reasoning = Some(String::new()),
            StreamEvent::ReasoningDelta(delta) => {
                observer.agent_event(&AgentEvent::MessageUpdate {
                    delta: Delta::Reasoning(&delta),
                });
                reasoning.get_or_insert_with(String::new).push_str(&delta);
            }
            StreamEvent::ReasoningEnd => {
                if let Some(text) = reasoning.take().filter(|t| !t.is_empty()) {
                    pass.reasoning.push(text);
                }
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                text_open = false;
                observer.agent_event(&AgentEvent::MessageUpdate {
                    delta: Delta::ToolCallStart {
                        id: &id,
                        name: &name,
                    },
                });
                calls.insert(
                    index,
                    PartialCall {
                        slot: pass.content.len(),
                        arguments: String::new(),
                    },
                );
                pass.content.push(ContentPart::ToolCall(ToolCall {
                    id,
                    name,
                    arguments: Value::Null,
                }));
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                observer.agent_event(&AgentEvent::MessageUpdate {
                    delta: Delta::ToolCallArguments(&arguments),
                });
                if let Some(call) = calls.get_mut(&index) {
                    call.arguments.push_str(&arguments);
                }
            }
            StreamEvent::ToolCallEnd { .. } => {}
            StreamEvent::Usage(usage) => pass.usage = Some(usage),
            StreamEvent::ResponseInfo { response_id, model } => {
                pass.response = Some((response_id, model));
            }
            StreamEvent::ProviderItem(item) => pass.provider_items.push(item),
            StreamEvent::Metrics(metrics) => pass.metrics = Some(metrics),
            StreamEvent::Retrying {
                attempt,
                max_retries,
                delay_ms,
                reason,
            } => {
                retrying = Some(attempt);
                observer.agent_event(&AgentEvent::Retrying {
                    attempt,
                    max_retries,
                    delay: Duration::from_millis(delay_ms),
                    reason: &reason,
                });
            }
            StreamEvent::Error(err) => {
                pass.outcome = Some(Err(err));
                break;
            }
            StreamEvent::Done { stop_reason } => {
                pass.outcome = Some(Ok(stop_reason));
                break;
            }
        }
    }
    if let Some(text) = reasoning.take().filter(|t| !t.is_empty()) {
        pass.reasoning.push(text);
    }
    finish_calls(&mut pass, calls);
    Some(pass)
}

/// Parses each call's joined argument text. Empty text means `{}`; text that
/// is not a JSON object is kept verbatim as a JSON string and remembered as an
/// argument error, so the call is answered with a tool error, not run.
fn finish_calls(pass: &mut Pass, calls: HashMap<usize, PartialCall>) {
    for call in calls.into_values() {
        let Some(ContentPart::ToolCall(tool_call)) = pass.content.get_mut(call.slot) else {
            continue;
        };
        let raw = call.arguments;
        if raw.trim().is_empty() {
            tool_call.arguments = Value::Object(serde_json::Map::new());
            continue;
        }
        match serde_json::from_str::<Value>(&raw) {
            Ok(value @ Value::Object(_)) => tool_call.arguments = value,
            Ok(_) => {
                pass.argument_errors.insert(
                    tool_call.id.clone(),
                    "the arguments must be a JSON object".to_string(),
                );
                tool_call.arguments = Value::String(raw);
            }
            Err(err) => {
                pass.argument_errors
                    .insert(tool_call.id.clone(), format!("invalid JSON ({err})"));
                tool_call.arguments = Value::String(raw);
            }
        }
    }
}
