//! Observer callbacks: Pi's lifecycle events plus durable lines (E-LOOP-14,
//! P-EVT-01, C26).
//!
//! Callbacks are synchronous and called in order from the loop's task, so an
//! observer sees `agent_end` only after every earlier event returned
//! (P-EVT-02). Renderers, JSON output and (later) RPC attach here; the core
//! never depends on them.

use std::time::Duration;

use etch_compact::Trigger;
use etch_model::{Message, ToolCall};

/// A streamed piece of the assistant message in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delta<'a> {
    /// Assistant text.
    Text(&'a str),
    /// Reasoning summary text.
    Reasoning(&'a str),
    /// A tool call began.
    ToolCallStart {
        /// Call id.
        id: &'a str,
        /// Tool name.
        name: &'a str,
    },
    /// A fragment of tool-call arguments.
    ToolCallArguments(&'a str),
}

/// Pi's lifecycle events, in the order Pi emits them.
#[derive(Debug, Clone, Copy)]
pub enum AgentEvent<'a> {
    /// The run began.
    AgentStart,
    /// A round (model pass plus its tools) began; rounds count from 1.
    TurnStart {
        /// Round number.
        round: u32,
    },
    /// A message began: the user prompt, the streaming assistant message or a
    /// tool result. `message` is `None` while the assistant is streaming.
    MessageStart {
        /// The message, when already complete.
        message: Option<&'a Message>,
    },
    /// The streaming assistant message grew.
    MessageUpdate {
        /// What was added.
        delta: Delta<'a>,
    },
    /// A message is complete and appended.
    MessageEnd {
        /// The final message.
        message: &'a Message,
        /// Why an assistant message ended, when that is not plain: an
        /// interrupted answer is `Aborted`.
        stop_reason: Option<etch_model::StopReason>,
    },
    /// The calls of one assistant message are about to run.
    ToolBatchStart {
        /// The calls, in the model's order.
        calls: &'a [ToolCall],
    },
    /// One call started.
    ToolExecutionStart {
        /// The call.
        call: &'a ToolCall,
    },
    /// The background processes' new output and ends went to the model
    /// (logged as `process.update`).
    ProcessUpdate {
        /// The text as the model got it.
        text: &'a str,
    },
    /// A running call reported partial output.
    ToolExecutionUpdate {
        /// Call id.
        call_id: &'a str,
        /// Partial output.
        text: &'a str,
    },
    /// A running call's own model request finished (a subagent's): its
    /// `model.usage` or `model.metrics` log line, from the child's log,
    /// so live counters include it (E-SUB-16).
    ToolCounters {
        /// Call id.
        call_id: &'a str,
        /// The log line.
        line: &'a str,
    },
    /// One call finished (completion order).
    ToolExecutionEnd {
        /// Call id.
        call_id: &'a str,
        /// Result text as the model receives it.
        text: &'a str,
        /// Whether it failed.
        is_error: bool,
        /// How long it ran.
        elapsed: Duration,
        /// Structured data the tool returned beside the text.
        details: Option<&'a serde_json::Value>,
    },
    /// The round ended.
    TurnEnd {
        /// Round number.
        round: u32,
        /// Wall time of the round.
        elapsed: Duration,
        /// Tool results appended in this round.
        tool_results: usize,
    },
    /// A compaction began (Pi's `compaction_start`): threshold (`auto`) or
    /// overflow recovery.
    CompactionStart {
        /// Why it runs.
        trigger: Trigger,
    },
    /// A compaction ended (Pi's `compaction_end`).
    CompactionEnd {
        /// Why it ran.
        trigger: Trigger,
        /// What happened.
        result: CompactionResult<'a>,
    },
    /// A model request failed before any output and is sent again after
    /// `delay` (Pi's `auto_retry_start`).
    Retrying {
        /// Which retry, from 1.
        attempt: u32,
        /// Retries allowed in all.
        max_retries: u32,
        /// The wait before it.
        delay: Duration,
        /// Why the request failed.
        reason: &'a str,
    },
    /// Retrying ended (Pi's `auto_retry_end`): the request went through
    /// (`final_error` is `None`) or the retries ran out.
    RetryEnd {
        /// Whether a retried request went through.
        success: bool,
        /// The last retry made.
        attempt: u32,
        /// Why the last attempt failed, when it did.
        final_error: Option<&'a str>,
    },
    /// The run ended; `error` says why when it did not succeed.
    AgentEnd {
        /// Failure message, if any.
        error: Option<&'a str>,
    },
}

/// How a compaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionResult<'a> {
    /// A `context.summary` was appended; estimates before and after.
    Compacted {
        /// Estimated tokens before.
        tokens_before: u64,
        /// Estimated tokens after.
        tokens_after: u64,
    },
    /// Nothing worth compacting; why.
    Skipped(&'a str),
    /// The summary could not be made; the log is unchanged.
    Failed(&'a str),
}

/// Receives a run's events. All methods have no-op defaults.
pub trait Observer: Send {
    /// A lifecycle event.
    fn agent_event(&mut self, event: &AgentEvent<'_>) {
        let _ = event;
    }

    /// A line was appended to the session file (exactly as written).
    fn durable_line(&mut self, line: &str) {
        let _ = line;
    }

    /// Steering prompts queued since the last call (text and images),
    /// admitted after a tool batch, before the next model request (the
    /// seed's DrainSteering).
    fn drain_steering(&mut self) -> Vec<crate::Prompt> {
        Vec::new()
    }

    /// Follow-up prompts queued explicitly (Pi's follow-up queue, RPC
    /// `follow_up`), taken only when the run would otherwise stop: each
    /// becomes its own user message and the run goes on. The queue's owner
    /// decides how many to hand over at a time (`all` or `one-at-a-time`).
    fn drain_follow_up(&mut self) -> Vec<crate::Prompt> {
        Vec::new()
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopObserver;

impl Observer for NoopObserver {}
