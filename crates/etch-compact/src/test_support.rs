//! Test fixtures: sessions written with a real `SessionWriter` in a temporary
//! directory, and a scripted model client that records its requests.
//!
//! Test-only; it knows the session log and model stream as a caller does and
//! nothing of the compaction internals.

use std::sync::Mutex;

use etch_model::{
    ContentPart, ModelClient, ModelRequest, ModelStream, StopReason, StreamEvent, ToolCall, Usage,
    stream_channel,
};
use etch_session::store::NewSession;
use etch_session::{
    AssistantData, LoadedSession, SessionStore, SessionWriter, SummaryData, ToolData, UserData,
    load_session, types,
};
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The tests' estimator: one token per four bytes, rounded up.
pub(crate) fn est(text: &str) -> u64 {
    text.len().div_ceil(4) as u64
}

/// A session file being written, in a directory removed on drop.
pub(crate) struct Log {
    /// Keeps the directory alive.
    _dir: tempfile::TempDir,
    /// The open writer.
    pub(crate) writer: SessionWriter,
}

impl Log {
    /// Creates a session with its `session.started` event.
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        let (writer, _) = store
            .create(&NewSession {
                cwd: "/work".into(),
                provider: "scripted".into(),
                model: "script-1".into(),
                openai_api: None,
                base_url: None,
                etch_version: "0.0.0".into(),
                first_prompt: "test".into(),
            })
            .unwrap();
        Self { _dir: dir, writer }
    }

    /// Appends one event; returns its id.
    pub(crate) fn append<T: Serialize>(&mut self, kind: &str, data: &T) -> String {
        self.writer.append(kind, data).unwrap().id
    }

    /// Appends a user message.
    pub(crate) fn user(&mut self, text: &str) -> String {
        self.append(
            types::MESSAGE_USER,
            &UserData {
                content: vec![ContentPart::text(text)],
            },
        )
    }

    /// Appends an assistant text answer.
    pub(crate) fn assistant(&mut self, text: &str) -> String {
        self.append(types::MESSAGE_ASSISTANT, &assistant_text(text))
    }

    /// Appends an assistant message calling tools.
    pub(crate) fn calls(&mut self, calls: &[(&str, &str, Value)]) -> String {
        self.append(types::MESSAGE_ASSISTANT, &assistant_calls(calls))
    }

    /// Appends a tool result.
    pub(crate) fn tool(&mut self, call_id: &str, name: &str, text: &str) -> String {
        self.append(
            types::MESSAGE_TOOL,
            &ToolData {
                tool_call_id: call_id.into(),
                tool_name: name.into(),
                content: vec![ContentPart::text(text)],
                is_error: false,
                details: None,
            },
        )
    }

    /// Appends a `context.summary` keeping events from `first_kept`.
    pub(crate) fn summary(&mut self, text: &str, first_kept: &str) -> String {
        self.summary_data(&SummaryData {
            summary: text.into(),
            trigger: "manual".into(),
            first_kept_event_id: Some(first_kept.into()),
            tokens_before: 0,
            tokens_after: 0,
            read_files: Vec::new(),
            modified_files: Vec::new(),
            instructions: None,
        })
    }

    /// Appends a `context.summary` with the given data.
    pub(crate) fn summary_data(&mut self, data: &SummaryData) -> String {
        self.append(types::CONTEXT_SUMMARY, data)
    }

    /// Loads the file as written so far.
    pub(crate) fn load(&self) -> LoadedSession {
        load_session(self.writer.path()).unwrap()
    }

    /// The file's bytes.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        std::fs::read(self.writer.path()).unwrap()
    }
}

/// A finished assistant answer.
pub(crate) fn assistant_text(text: &str) -> AssistantData {
    AssistantData {
        content: vec![ContentPart::text(text)],
        provider: "scripted".into(),
        model: "script-1".into(),
        stop_reason: StopReason::Stop,
        error_message: None,
        recovered_text: None,
    }
}

/// An assistant message calling tools `(id, name, arguments)`.
pub(crate) fn assistant_calls(calls: &[(&str, &str, Value)]) -> AssistantData {
    AssistantData {
        content: calls
            .iter()
            .map(|(id, name, arguments)| {
                ContentPart::ToolCall(ToolCall {
                    id: (*id).into(),
                    name: (*name).into(),
                    arguments: arguments.clone(),
                })
            })
            .collect(),
        stop_reason: StopReason::ToolUse,
        ..assistant_text("")
    }
}

/// A failed pass with partial text.
pub(crate) fn assistant_failed(text: &str) -> AssistantData {
    AssistantData {
        stop_reason: StopReason::Error,
        error_message: Some("boom".into()),
        recovered_text: None,
        ..assistant_text(text)
    }
}

/// A `model.usage` payload.
pub(crate) fn usage(total: u64, input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: total,
        ..Usage::default()
    }
}

/// A model that answers every pass with the same scripted events and
/// records the requests it receives.
pub(crate) struct Scripted {
    /// Events of each pass.
    events: Vec<StreamEvent>,
    /// Requests seen, in order.
    pub(crate) requests: Mutex<Vec<ModelRequest>>,
}

impl Scripted {
    /// A model that streams `events`.
    pub(crate) fn new(events: Vec<StreamEvent>) -> Self {
        Self {
            events,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// A model that answers `text` in two deltas, then `Done`.
    pub(crate) fn replying(text: &str) -> Self {
        let mid = text.len() / 2;
        Self::new(vec![
            StreamEvent::TextStart,
            StreamEvent::TextDelta(text[..mid].into()),
            StreamEvent::TextDelta(text[mid..].into()),
            StreamEvent::TextEnd,
            StreamEvent::Done {
                stop_reason: StopReason::Stop,
            },
        ])
    }

    /// The one request received.
    pub(crate) fn request(&self) -> ModelRequest {
        let requests = self.requests.lock().unwrap();
        assert_eq!(requests.len(), 1, "expected exactly one request");
        requests[0].clone()
    }
}

impl ModelClient for Scripted {
    fn provider(&self) -> &'static str {
        "scripted"
    }

    fn model(&self) -> &'static str {
        "script-1"
    }

    fn stream(&self, request: ModelRequest, _cancel: CancellationToken) -> ModelStream {
        self.requests.lock().unwrap().push(request);
        let events = self.events.clone();
        let (tx, stream) = stream_channel();
        tokio::spawn(async move {
            for event in events {
                if !tx.send(event).await {
                    return;
                }
            }
        });
        stream
    }
}
