//! The [`Tool`] trait and what a tool receives and returns.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use etch_model::ToolSpec;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::access::Access;
use crate::gate::Decision;

/// The future a tool's execution returns.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;

/// A model-callable tool.
pub trait Tool: Send + Sync {
    /// Name, description and argument schema shown to the model.
    fn spec(&self) -> &ToolSpec;

    /// The spec shown to the model under the compact profile (small
    /// context windows, local servers): a shorter description and schema
    /// that keep every parameter. Arguments are still validated against
    /// [`Self::spec`]. `None` shows the full spec under either profile.
    fn compact_spec(&self) -> Option<&ToolSpec> {
        None
    }

    /// What this concrete call touches, for scheduling (E-LOOP-09). The
    /// default is the conservative barrier; read-only tools and path-bound
    /// mutations override it. Arguments have already passed validation.
    fn access(&self, args: &Value, cwd: &Path) -> Access {
        let _ = (args, cwd);
        Access::Barrier
    }

    /// Runs the call. Must return promptly once `ctx.cancel` fires, leaving no
    /// child process or half-written file behind.
    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_>;

    /// Whether the tool can run now. A tool whose backing process died (a
    /// plugin) says no, and the registry stops offering it to the model;
    /// built-in tools always can.
    fn available(&self) -> bool {
        true
    }

    /// Whether every call only reads (the built-in `read`, `grep`,
    /// `find`, `ls`; an MCP tool annotated `readOnlyHint`): such calls
    /// never ask under the `untrusted` policy and stay offered under
    /// `--read-only`. The default is no: a tool that does not say so may
    /// change something.
    fn read_only(&self) -> bool {
        false
    }
}

/// Where a call comes from: the session and the assistant message that
/// asked for it, for tools that act on the session (subagents fork from
/// it, plugins log against it). Empty outside a session (`etch tool`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallOrigin {
    /// The session's id.
    pub session_id: String,
    /// The session file.
    pub session_path: PathBuf,
    /// Id of the `message.assistant` event holding the call.
    pub assistant_event_id: String,
}

/// Everything a running call may use besides its arguments.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The call id, as the model sent it.
    pub call_id: String,
    /// Working directory that relative paths resolve against.
    pub cwd: PathBuf,
    /// Fires when the run is cancelled.
    pub cancel: CancellationToken,
    /// Where streamed progress goes.
    pub progress: ProgressSink,
    /// Session temp directory for large outputs (`.etch/tmp/<session-id>/`).
    pub temp_dir: PathBuf,
    /// The session and assistant message the call belongs to.
    pub origin: CallOrigin,
    /// Whether someone approved this very call (a gated tool's approver
    /// said yes): what a call that leaves the sandbox requires.
    pub approved: bool,
}

/// Receives partial results of running calls (`tool_execution_update`).
#[derive(Debug, Clone, Default)]
pub struct ProgressSink {
    /// Channel to the loop; `None` discards updates (direct CLI use).
    tx: Option<mpsc::UnboundedSender<(String, String)>>,
    /// Id of the call this sink reports for.
    call_id: String,
    /// Channel for the usage and metrics records of model requests a
    /// call makes itself (a subagent's), as log lines; `None` discards.
    counters: Option<mpsc::UnboundedSender<(String, String)>>,
    /// Channel for the log records of the call (an approval decision, a
    /// background process started), logged before its result; `None`
    /// discards.
    records: Option<mpsc::UnboundedSender<Record>>,
}

/// A log record a call asks the loop to append before its result.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The call it belongs to.
    pub call_id: String,
    /// The event type (`process.started`).
    pub kind: &'static str,
    /// The event's data.
    pub data: Value,
}

impl ProgressSink {
    /// A sink reporting `call_id`'s updates into `tx`.
    pub fn new(call_id: impl Into<String>, tx: mpsc::UnboundedSender<(String, String)>) -> Self {
        Self {
            tx: Some(tx),
            call_id: call_id.into(),
            counters: None,
            records: None,
        }
    }

    /// Also takes the call's log records, into `tx`.
    #[must_use]
    pub fn with_records(mut self, tx: mpsc::UnboundedSender<Record>) -> Self {
        self.records = Some(tx);
        self
    }

    /// Asks the loop to log an event of type `kind` with `data` before
    /// the call's result; dropped when nobody listens (direct CLI use).
    pub fn record(&self, kind: &'static str, data: Value) {
        if let Some(tx) = &self.records {
            let _ = tx.send(Record {
                call_id: self.call_id.clone(),
                kind,
                data,
            });
        }
    }

    /// Records an approval decision about the call for the log
    /// (`approval.decision`); dropped when nobody listens.
    pub fn decided(&self, decision: &Decision) {
        if let Ok(data) = serde_json::to_value(decision) {
            self.record(crate::gate::APPROVAL_DECISION, data);
        }
    }

    /// Also takes the `model.usage` / `model.metrics` log lines of the
    /// call's own model requests, into `tx`.
    #[must_use]
    pub fn with_counters(mut self, tx: mpsc::UnboundedSender<(String, String)>) -> Self {
        self.counters = Some(tx);
        self
    }

    /// Reports a usage or metrics log line of a model request the call
    /// made (a subagent's), so the session's counters include it;
    /// dropped when nobody listens.
    pub fn counters(&self, line: impl Into<String>) {
        if let Some(tx) = &self.counters {
            let _ = tx.send((self.call_id.clone(), line.into()));
        }
    }

    /// Reports partial output; silently dropped when nobody listens.
    pub fn update(&self, text: impl Into<String>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send((self.call_id.clone(), text.into()));
        }
    }
}

/// A successful result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text the model receives.
    pub text: String,
    /// Structured data beside the text for front ends and the log (the
    /// edit diff as lines with their kind), never sent to the model.
    pub details: Option<Value>,
    /// Images the model receives after the text (a `read` of a
    /// picture), already made fit for a model.
    pub images: Vec<etch_model::Image>,
}

impl ToolOutput {
    /// Wraps result text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            details: None,
            images: Vec::new(),
        }
    }

    /// Adds an image after the text.
    #[must_use]
    pub fn with_image(mut self, image: etch_model::Image) -> Self {
        self.images.push(image);
        self
    }

    /// Adds structured details.
    ///
    /// (A plain `String` converts into a text-only output.)
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

/// An ordinary tool failure. The loop turns it into a `message.tool` whose
/// text is `tool error: {message}` with `isError: true` (C36); it never ends
/// the turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    /// Builds an error from any message.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}
