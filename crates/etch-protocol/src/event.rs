//! Events a session emits, one JSON object per line, tagged by `type`:
//! Pi's lifecycle events (`agent_start` … `agent_end`) and AgentSession's
//! additions (queue, compaction, retry, model and thinking changes, session
//! info), plus `notice` for warnings the runtime would otherwise print.
//!
//! Events are owned and serializable so they can cross a channel, a pipe
//! or a socket. An event caused by a command carries the command's `id`
//! (Pi's events carry none). Streaming text travels as deltas only: Pi
//! repeats the whole partial message in every update, which makes its
//! stream grow with the square of the answer. This module must not know
//! who emits events or how they are shown.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::command::ThinkingLevel;
use crate::message::WireMessage;

/// One event with the id of the command that caused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Event {
    /// The causing command's id, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub body: EventBody,
}

/// The events, tagged by `type` in snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EventBody {
    /// A run began.
    AgentStart,
    /// A round (one model response and its tools) began; from 1.
    TurnStart {
        /// Round number within the run.
        round: u32,
    },
    /// A message began; `None` while the assistant message streams.
    MessageStart {
        /// The message, when already complete (user and tool results).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<WireMessage>,
    },
    /// The streaming assistant message grew by `delta`.
    MessageUpdate {
        /// What was added.
        delta: Delta,
    },
    /// A message is complete and in the session log.
    MessageEnd {
        /// The final message.
        message: WireMessage,
    },
    /// A tool call started.
    ToolExecutionStart {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// The arguments it runs with.
        args: Value,
    },
    /// A running tool reported output so far (accumulated, not a delta).
    ToolExecutionUpdate {
        /// The call's id.
        tool_call_id: String,
        /// Output so far.
        partial_result: String,
    },
    /// A tool call finished (completion order).
    ToolExecutionEnd {
        /// The call's id.
        tool_call_id: String,
        /// The result text the model receives.
        result: String,
        /// Whether it failed.
        is_error: bool,
        /// How long it ran, in milliseconds.
        duration_ms: u64,
        /// Structured data the tool returned beside the text (the edit
        /// diff as lines), for display.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    /// A round ended.
    TurnEnd {
        /// Round number within the run.
        round: u32,
        /// Tool results appended in the round.
        tool_results: u32,
        /// Wall time of the round, in milliseconds.
        duration_ms: u64,
    },
    /// The run ended; `error` says why when it failed.
    AgentEnd {
        /// The failure, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The steering or follow-up queue changed.
    QueueUpdate {
        /// Pending steering texts, oldest first.
        steering: Vec<String>,
        /// Pending follow-ups, oldest first.
        follow_up: Vec<String>,
    },
    /// A compaction began.
    CompactionStart {
        /// `manual`, `auto` (threshold) or `overflow`.
        reason: String,
    },
    /// A compaction ended.
    CompactionEnd {
        /// `manual`, `auto` or `overflow`.
        reason: String,
        /// What happened.
        outcome: CompactionOutcome,
    },
    /// A failed model request will be sent again after `delay_ms`.
    AutoRetryStart {
        /// Which retry, from 1.
        attempt: u32,
        /// Retries allowed in all.
        max_attempts: u32,
        /// The wait before it.
        delay_ms: u64,
        /// Why the request failed.
        error_message: String,
    },
    /// Retrying ended: the request went through or retries ran out.
    AutoRetryEnd {
        /// Whether a retry succeeded.
        success: bool,
        /// The last attempt made.
        attempt: u32,
        /// The error that ended the retries, if they failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
    /// Later requests use another model (`model.change` in the log).
    ModelChanged {
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
    },
    /// Later requests use another reasoning effort.
    ThinkingLevelChanged {
        /// The new level.
        level: ThinkingLevel,
    },
    /// Which session the front end is attached to.
    SessionInfo {
        /// Session id.
        session_id: String,
        /// Session file path.
        session_file: String,
        /// Display name, if set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A model pass reported its token usage (`model.usage` in the log,
    /// camelCase fields as there), so a front end keeps live counters.
    ModelUsage {
        /// The usage record.
        usage: serde_json::Value,
    },
    /// A model pass's transport metrics (`model.metrics` in the log):
    /// requests and bytes up and down.
    ModelMetrics {
        /// The metrics record.
        metrics: serde_json::Value,
    },
    /// A tool call waits for the user's approval; answer it with an
    /// `approve` command naming `toolCallId`. It waits until answered or
    /// the run is aborted.
    ApprovalRequest {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// The arguments it would run with.
        args: Value,
        /// Why it asks, in words (it asks to run outside the sandbox,
        /// the policy asks for every call, ...).
        reason: String,
    },
    /// A background process started (`bash` with `background`).
    ProcessStarted {
        /// Its id in the session (`p3`).
        process_id: String,
        /// Its process id.
        pid: u32,
        /// The command line.
        command: String,
    },
    /// A background process ended.
    ProcessExited {
        /// Its id.
        process_id: String,
        /// `exited`, `killed` or `lost`.
        state: String,
        /// Its exit code, when it exited.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        /// The signal that ended it, when killed (`SIGTERM`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
    },
    /// The background processes' new output and ends went to the model,
    /// as this text (`<process-update>` blocks).
    ProcessUpdate {
        /// The text.
        text: String,
    },
    /// Something the user should know that is not an error of a command
    /// (a skipped instruction file, a switched endpoint).
    Notice {
        /// How serious it is.
        level: NoticeLevel,
        /// The text, saying what to do.
        message: String,
    },
}

/// A piece of the streaming assistant message, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// More answer text.
    TextDelta {
        /// The added text.
        delta: String,
    },
    /// More reasoning text.
    ThinkingDelta {
        /// The added text.
        delta: String,
    },
    /// A tool call began.
    ToolcallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// More argument text of the current tool call.
    ToolcallDelta {
        /// The added JSON text.
        delta: String,
    },
}

/// How a compaction ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum CompactionOutcome {
    /// A summary was appended.
    Compacted {
        /// Estimated context tokens before.
        tokens_before: u64,
        /// Estimated context tokens after.
        tokens_after: u64,
    },
    /// Nothing worth compacting.
    Skipped {
        /// Why.
        reason: String,
    },
    /// The summary could not be made; the log is unchanged.
    Failed {
        /// Why.
        reason: String,
    },
}

/// Severity of a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    /// Worth knowing.
    Info,
    /// Probably not what the user wanted.
    Warning,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every event kind serializes to its Pi name with camelCase fields and
    /// the command id, and reads back equal.
    #[test]
    fn events_round_trip() {
        let cases = [
            json!({"id": "c1", "type": "agent_start"}),
            json!({"id": "c1", "type": "turn_start", "round": 1}),
            json!({"id": "c1", "type": "message_start"}),
            json!({"id": "c1", "type": "message_start", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}),
            json!({"id": "c1", "type": "message_update", "delta": {"type": "text_delta", "delta": "He"}}),
            json!({"type": "message_update", "delta": {"type": "thinking_delta", "delta": "hm"}}),
            json!({"type": "message_update", "delta": {"type": "toolcall_start", "id": "t1", "name": "read"}}),
            json!({"type": "message_update", "delta": {"type": "toolcall_delta", "delta": "{\"pa"}}),
            json!({"type": "message_end", "message": {"role": "assistant", "content": [], "stopReason": "stop"}}),
            json!({"type": "tool_execution_start", "toolCallId": "t1", "toolName": "read", "args": {"path": "a"}}),
            json!({"type": "tool_execution_update", "toolCallId": "t1", "partialResult": "lin"}),
            json!({"type": "tool_execution_end", "toolCallId": "t1", "result": "x", "isError": false, "durationMs": 3}),
            json!({"type": "tool_execution_end", "toolCallId": "t2", "result": "ok", "isError": false, "durationMs": 1, "details": {"diff": []}}),
            json!({"type": "turn_end", "round": 1, "toolResults": 1, "durationMs": 12}),
            json!({"type": "agent_end"}),
            json!({"type": "agent_end", "error": "round limit"}),
            json!({"type": "queue_update", "steering": ["a"], "followUp": []}),
            json!({"type": "compaction_start", "reason": "overflow"}),
            json!({"type": "compaction_end", "reason": "auto", "outcome": {"kind": "compacted", "tokensBefore": 9, "tokensAfter": 3}}),
            json!({"type": "compaction_end", "reason": "manual", "outcome": {"kind": "skipped", "reason": "nothing to compact"}}),
            json!({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "503"}),
            json!({"type": "auto_retry_end", "success": false, "attempt": 3, "finalError": "503"}),
            json!({"type": "model_changed", "provider": "openai", "model": "gpt-5.5"}),
            json!({"type": "thinking_level_changed", "level": "low"}),
            json!({"type": "session_info", "sessionId": "01J", "sessionFile": "/s.jsonl"}),
            json!({"type": "approval_request", "toolCallId": "t1", "toolName": "bash", "args": {"command": "git commit", "bypass_sandbox": true}, "reason": "it asks to run outside the sandbox"}),
            json!({"type": "process_started", "processId": "p1", "pid": 42, "command": "npm run dev"}),
            json!({"type": "process_exited", "processId": "p1", "state": "killed", "signal": "SIGTERM"}),
            json!({"type": "process_update", "text": "<process-update id=\"p1\" state=\"running\">\nready\n</process-update>"}),
            json!({"type": "notice", "level": "warning", "message": "AGENTS.md unreadable"}),
        ];
        for case in cases {
            let event: Event = serde_json::from_value(case.clone()).unwrap();
            assert_eq!(serde_json::to_value(&event).unwrap(), case);
        }
    }
}
