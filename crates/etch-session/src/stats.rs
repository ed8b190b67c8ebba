//! Session status counters (the seed's `/status` paragraph, E-CTX-22):
//! what happened in a session, read from the same log as everything else.
//!
//! It owns counting: age, events, user turns, model calls (from
//! `model.metrics`, falling back to assistant messages for logs without
//! them), tool calls and batches, compactions by trigger, message bytes,
//! approximate model and tool time from the gaps between events, summed
//! provider usage and transport metrics. It is separate from context
//! projection: it says what the session consumed, not what the next request
//! will contain. It must not format anything for a terminal.

use std::collections::BTreeMap;

use chrono::{DateTime, FixedOffset};
use etch_model::{ContentPart, Metrics, Usage};
use serde::Serialize;

use crate::event::{AssistantData, Event, SummaryData, types};
use crate::loader::LoadedSession;

/// Counters of one session's active branch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    /// The session id.
    pub session_id: String,
    /// Time of the first event.
    pub started: Option<String>,
    /// Time of the last event.
    pub last_event: Option<String>,
    /// Milliseconds from the first to the last event.
    pub age_ms: u64,
    /// Events on the active branch.
    pub events: usize,
    /// `message.user` events.
    pub user_turns: usize,
    /// Model passes: `model.metrics` events, or assistant messages when the
    /// log has no metrics (older logs).
    pub model_calls: usize,
    /// Provider requests, retries included (sum of `requests`).
    pub model_requests: u64,
    /// Assistant messages that ended in an error.
    pub model_errors: usize,
    /// Tool calls the model made.
    pub tool_calls: usize,
    /// Assistant messages with at least one tool call.
    pub tool_batches: usize,
    /// Tool results marked as errors.
    pub tool_errors: usize,
    /// Compactions by trigger (`manual`, `auto`, `overflow`).
    pub compactions: BTreeMap<String, usize>,
    /// `hook.run` events by outcome (`ok`, `rewrote`, `blocked`,
    /// `failed`).
    pub hook_runs: BTreeMap<String, usize>,
    /// Bytes of the `data` of message events.
    pub message_bytes: u64,
    /// Approximate time waiting for the model: gaps ending at assistant
    /// messages.
    pub model_wait_ms: u64,
    /// Approximate time running tools: gaps ending at tool results.
    pub tool_wait_ms: u64,
    /// Provider-reported usage, summed.
    pub usage: Usage,
    /// The last request's usage, if any was reported.
    pub last_usage: Option<Usage>,
    /// Transport metrics, summed; `transport` lists each transport seen.
    pub transport: TransportTotals,
}

/// Transport metrics summed over a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransportTotals {
    /// Passes per transport name.
    pub passes: BTreeMap<String, usize>,
    /// Request body bytes.
    pub request_bytes: u64,
    /// Response bytes.
    pub response_bytes: u64,
    /// Sum of time-to-headers, for the average.
    pub headers_ms: u64,
    /// Sum of time-to-first-event, for the average.
    pub first_event_ms: u64,
    /// Sum of pass durations.
    pub duration_ms: u64,
    /// WebSocket connections opened.
    pub ws_opens: u64,
    /// WebSocket connections reused.
    pub ws_reuses: u64,
    /// Continuation attempts.
    pub continuation_attempts: u64,
    /// Continuation fallbacks.
    pub continuation_fallbacks: u64,
    /// The latest fallback diagnostic.
    pub last_fallback: Option<String>,
}

/// Parses an event time; unreadable times count as no gap.
fn time(event: &Event) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(&event.time).ok()
}

/// Milliseconds from `a` to `b`, zero if either is unknown or time went
/// backwards (a hand-edited log).
fn gap(a: Option<DateTime<FixedOffset>>, b: Option<DateTime<FixedOffset>>) -> u64 {
    match (a, b) {
        (Some(a), Some(b)) => u64::try_from((b - a).num_milliseconds()).unwrap_or(0),
        _ => 0,
    }
}

/// Counts the active branch of `session`. Unreadable event data is skipped,
/// as projection skips it.
pub fn session_stats(session: &LoadedSession) -> SessionStats {
    let mut stats = SessionStats {
        session_id: session.session_id().to_owned(),
        ..SessionStats::default()
    };
    let mut assistant_messages = 0;
    let mut metrics_events = 0;
    let mut first = None;
    let mut previous = None;
    for event in session.active_events() {
        stats.events += 1;
        let at = time(event);
        if stats.started.is_none() {
            stats.started = Some(event.time.clone());
            first = at;
        }
        stats.last_event = Some(event.time.clone());
        if event.kind.starts_with("message.") {
            stats.message_bytes += event.data.get().len() as u64;
        }
        match event.kind.as_str() {
            types::MESSAGE_USER => stats.user_turns += 1,
            types::MESSAGE_ASSISTANT => {
                assistant_messages += 1;
                stats.model_wait_ms += gap(previous, at);
                if let Ok(data) = event.parse_data::<AssistantData>() {
                    count_assistant(&mut stats, &data);
                }
            }
            types::MESSAGE_TOOL => {
                stats.tool_wait_ms += gap(previous, at);
                if let Ok(data) = event.parse_data::<crate::event::ToolData>()
                    && data.is_error
                {
                    stats.tool_errors += 1;
                }
            }
            types::MODEL_USAGE => {
                if let Ok(usage) = event.parse_data::<Usage>() {
                    add_usage(&mut stats.usage, &usage);
                    stats.last_usage = Some(usage);
                }
            }
            types::MODEL_METRICS => {
                if let Ok(metrics) = event.parse_data::<Metrics>() {
                    metrics_events += 1;
                    stats.model_requests += metrics.requests;
                    add_metrics(&mut stats.transport, metrics);
                }
            }
            types::CONTEXT_SUMMARY => {
                if let Ok(summary) = event.parse_data::<SummaryData>() {
                    *stats.compactions.entry(summary.trigger).or_default() += 1;
                }
            }
            types::HOOK_RUN => {
                if let Ok(run) = event.parse_data::<crate::event::HookRunData>() {
                    *stats.hook_runs.entry(run.outcome).or_default() += 1;
                }
            }
            _ => {}
        }
        previous = at;
    }
    stats.age_ms = gap(first, previous);
    stats.model_calls = if metrics_events > 0 {
        metrics_events
    } else {
        assistant_messages
    };
    if metrics_events == 0 {
        stats.model_requests = assistant_messages as u64;
    }
    stats
}

/// Tool calls, batches and errors of one assistant message.
fn count_assistant(stats: &mut SessionStats, data: &AssistantData) {
    let calls = data
        .content
        .iter()
        .filter(|p| matches!(p, ContentPart::ToolCall(_)))
        .count();
    stats.tool_calls += calls;
    if calls > 0 {
        stats.tool_batches += 1;
    }
    if data.stop_reason == etch_model::StopReason::Error {
        stats.model_errors += 1;
    }
}

/// Adds one pass's usage.
fn add_usage(total: &mut Usage, usage: &Usage) {
    total.input_tokens += usage.input_tokens;
    total.cached_input_tokens += usage.cached_input_tokens;
    total.output_tokens += usage.output_tokens;
    total.reasoning_output_tokens += usage.reasoning_output_tokens;
    total.total_tokens += usage.total_tokens;
}

/// Adds one pass's transport metrics.
fn add_metrics(total: &mut TransportTotals, metrics: Metrics) {
    *total.passes.entry(metrics.transport).or_default() += 1;
    total.request_bytes += metrics.request_bytes;
    total.response_bytes += metrics.response_bytes;
    total.headers_ms += metrics.headers_ms;
    total.first_event_ms += metrics.first_event_ms;
    total.duration_ms += metrics.duration_ms;
    total.ws_opens += metrics.ws_opens;
    total.ws_reuses += metrics.ws_reuses;
    total.continuation_attempts += metrics.continuation_attempts;
    total.continuation_fallbacks += metrics.continuation_fallbacks;
    if metrics.last_fallback.is_some() {
        total.last_fallback = metrics.last_fallback;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_session;
    use serde_json::json;
    use std::path::Path;

    /// A session text from `(type, time, data)` triples chained in order.
    fn session(events: &[(&str, &str, serde_json::Value)]) -> LoadedSession {
        let mut text = String::new();
        let mut parent: Option<String> = None;
        for (i, (kind, time, data)) in events.iter().enumerate() {
            let id = format!("01K{i:023}");
            let line =
                json!({"type": kind, "id": id, "parentId": parent, "time": time, "data": data});
            text.push_str(&line.to_string());
            text.push('\n');
            parent = Some(id);
        }
        parse_session(Path::new("s.jsonl"), text.as_bytes()).unwrap()
    }

    /// Every counter from a small session with one tool round, one error
    /// result, usage, metrics and a compaction.
    #[test]
    fn counts_a_session() {
        let s = session(&[
            (
                "session.started",
                "2026-12-02T10:00:00.000Z",
                json!({"sessionId": "S1", "formatVersion": 1, "cwd": "/w", "etchVersion": "0", "provider": "openai", "model": "m"}),
            ),
            (
                "message.user",
                "2026-12-02T10:00:00.000Z",
                json!({"content": [{"type": "text", "text": "hi"}]}),
            ),
            (
                "message.assistant",
                "2026-12-02T10:00:02.000Z",
                json!({"content": [{"type": "tool_call", "id": "c1", "name": "ls", "arguments": {}}, {"type": "tool_call", "id": "c2", "name": "read", "arguments": {}}], "provider": "openai", "model": "m", "stopReason": "toolUse"}),
            ),
            (
                "model.usage",
                "2026-12-02T10:00:02.000Z",
                json!({"inputTokens": 100, "cachedInputTokens": 10, "outputTokens": 5, "reasoningOutputTokens": 1, "totalTokens": 105}),
            ),
            (
                "model.metrics",
                "2026-12-02T10:00:02.000Z",
                json!({"transport": "responses-ws", "requests": 2, "requestBytes": 500, "responseBytes": 90, "wsOpens": 1, "lastFallback": "why"}),
            ),
            (
                "message.tool",
                "2026-12-02T10:00:02.500Z",
                json!({"toolCallId": "c1", "toolName": "ls", "content": [], "isError": false}),
            ),
            (
                "message.tool",
                "2026-12-02T10:00:03.000Z",
                json!({"toolCallId": "c2", "toolName": "read", "content": [], "isError": true}),
            ),
            (
                "message.assistant",
                "2026-12-02T10:00:04.000Z",
                json!({"content": [{"type": "text", "text": "done"}], "provider": "openai", "model": "m", "stopReason": "stop"}),
            ),
            (
                "model.metrics",
                "2026-12-02T10:00:04.000Z",
                json!({"transport": "responses-ws", "requests": 1, "wsReuses": 1, "continuationAttempts": 1}),
            ),
            (
                "context.summary",
                "2026-12-02T10:01:00.000Z",
                json!({"summary": "s", "trigger": "manual", "firstKeptEventId": null}),
            ),
        ]);
        let stats = session_stats(&s);
        assert_eq!(stats.session_id, "S1");
        assert_eq!(stats.events, 10);
        assert_eq!(stats.age_ms, 60_000);
        assert_eq!(stats.user_turns, 1);
        assert_eq!((stats.model_calls, stats.model_requests), (2, 3));
        assert_eq!(
            (stats.tool_calls, stats.tool_batches, stats.tool_errors),
            (2, 1, 1)
        );
        assert_eq!(stats.compactions.get("manual"), Some(&1));
        assert_eq!(stats.model_wait_ms, 2000 + 1000);
        assert_eq!(stats.tool_wait_ms, 500 + 500);
        assert_eq!(stats.usage.total_tokens, 105);
        assert_eq!(stats.transport.passes.get("responses-ws"), Some(&2));
        assert_eq!(
            (stats.transport.ws_opens, stats.transport.ws_reuses),
            (1, 1)
        );
        assert_eq!(stats.transport.last_fallback.as_deref(), Some("why"));
        assert!(stats.message_bytes > 0);
    }

    /// Logs without metrics count assistant messages as model calls.
    #[test]
    fn falls_back_to_assistant_messages() {
        let s = session(&[
            (
                "session.started",
                "2026-12-02T10:00:00.000Z",
                json!({"sessionId": "S2", "formatVersion": 1, "cwd": "/w", "etchVersion": "0", "provider": "echo", "model": "m"}),
            ),
            (
                "message.user",
                "not a time",
                json!({"content": [{"type": "text", "text": "hi"}]}),
            ),
            (
                "message.assistant",
                "2026-12-02T10:00:01.000Z",
                json!({"content": [{"type": "text", "text": "hi"}], "provider": "echo", "model": "m", "stopReason": "stop"}),
            ),
        ]);
        let stats = session_stats(&s);
        assert_eq!((stats.model_calls, stats.model_requests), (1, 1));
        assert_eq!(
            stats.model_wait_ms, 0,
            "an unreadable time counts as no gap"
        );
    }
}
