//! The offline `echo` model (E-NS-08, G9).
//!
//! It answers with the text of the latest user message, verbatim, with no
//! tool calls and no usage, and reports `model.metrics` with transport
//! `echo`. It exercises prompt admission, stream collection, event chaining,
//! persistence and rendering without network or credentials, and is the
//! fallback model when no credentials are found (C42).

use std::time::{Duration, Instant};

use etch_model::{
    Message, Metrics, ModelClient, ModelRequest, ModelStream, StopReason, StreamEvent,
    stream_channel,
};
use tokio_util::sync::CancellationToken;

/// Provider name of the echo model.
pub const NAME: &str = "echo";

/// The echo model client.
#[derive(Debug, Clone)]
pub struct EchoClient {
    /// Model name to record (defaults to `echo`).
    model: String,
    /// Pause before the reply, so tests can interrupt a run in flight.
    delay: Duration,
}

impl EchoClient {
    /// An echo client recording `model` as the model name.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            delay: Duration::ZERO,
        }
    }

    /// Waits `delay` before replying (cancellation still ends the wait at
    /// once). The CLI sets this from `ETCH_ECHO_DELAY_MS`, a testing knob for
    /// exercising interruption of a live run offline.
    #[must_use]
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

impl Default for EchoClient {
    fn default() -> Self {
        Self::new(NAME)
    }
}

/// The text of the latest user message in the request, or empty: its
/// last text part, so that the project context the loop puts before the
/// first prompt (its own part) is not echoed.
fn latest_user_text(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { content } => content.iter().rev().find_map(|p| match p {
                etch_model::ContentPart::Text { text } => Some(text.clone()),
                etch_model::ContentPart::ToolCall(_) | etch_model::ContentPart::Image(_) => None,
            }),
            _ => None,
        })
        .unwrap_or_default()
}

impl ModelClient for EchoClient {
    fn provider(&self) -> &str {
        NAME
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let started = Instant::now();
        let (tx, stream) = stream_channel();
        let text = latest_user_text(&request);
        let metrics = Metrics {
            transport: NAME.to_string(),
            requests: 1,
            input_messages: request.messages.len() as u64,
            tool_schemas: request.tools.len() as u64,
            instruction_bytes: request.system_prompt().len() as u64,
            ..Metrics::default()
        };
        let delay = self.delay;
        tokio::spawn(async move {
            if !delay.is_zero() {
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = cancel.cancelled() => return,
                }
            }
            let events = [
                StreamEvent::TextStart,
                StreamEvent::TextDelta(text),
                StreamEvent::TextEnd,
            ];
            for event in events {
                if cancel.is_cancelled() || !tx.send(event).await {
                    return;
                }
            }
            let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let metrics = Metrics {
                duration_ms: elapsed,
                first_event_ms: elapsed,
                ..metrics
            };
            if tx.send(StreamEvent::Metrics(metrics)).await {
                tx.send(StreamEvent::Done {
                    stop_reason: StopReason::Stop,
                })
                .await;
            }
        });
        stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etch_model::RequestOptions;

    /// G9: the reply is the latest user text verbatim, then metrics, then done.
    #[tokio::test]
    async fn echoes_latest_user_text() {
        let request = ModelRequest {
            system: Vec::new(),
            messages: vec![
                Message::user_text("first"),
                Message::user_text("héllo\nworld"),
            ],
            tools: Vec::new(),
            options: RequestOptions::default(),
        };
        let mut stream = EchoClient::default().stream(request, CancellationToken::new());
        let mut events = Vec::new();
        while let Some(e) = stream.next().await {
            events.push(e);
        }
        assert_eq!(events[1], StreamEvent::TextDelta("héllo\nworld".into()));
        assert!(
            matches!(&events[3], StreamEvent::Metrics(m) if m.transport == "echo" && m.input_messages == 2)
        );
        assert_eq!(events.len(), 5);
        assert!(matches!(
            events[4],
            StreamEvent::Done {
                stop_reason: StopReason::Stop
            }
        ));
    }
}
