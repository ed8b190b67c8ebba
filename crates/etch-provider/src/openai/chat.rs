//! The Chat Completions client: one streamed `POST {base_url}/chat/completions`
//! per model pass, run by the shared pass driver (retries, idle timeout,
//! metrics) with the Chat Completions decoder.

use std::time::Duration;

use etch_model::{
    ErrorKind, Metrics, ModelClient, ModelError, ModelRequest, ModelStream, StreamEvent,
};
use tokio_util::sync::CancellationToken;

use crate::driver::{self, HttpPass, StreamDecoder};
use crate::http::{RetryPolicy, StreamLimits};
use crate::openai::chat_decode::{ChatDecoder, decode_error_body};
use crate::openai::chat_request;
use crate::sse::SseFrame;

/// Settings of a Chat Completions client.
#[derive(Debug, Clone)]
pub struct ChatConfig {
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Bearer credential; `None` sends no Authorization header.
    pub api_key: Option<String>,
    /// Model name sent in requests.
    pub model: String,
    /// Ask for usage with `stream_options` (G19).
    pub stream_usage: bool,
    /// Retry policy (C34).
    pub retry: RetryPolicy,
    /// How long the stream may be silent before it counts as stalled.
    pub idle_timeout: Duration,
    /// Caps on one stream frame and one assembled message.
    pub limits: StreamLimits,
}

/// An OpenAI-compatible Chat Completions provider.
#[derive(Debug, Clone)]
pub struct ChatClient {
    /// Settings.
    config: ChatConfig,
}

impl ChatClient {
    /// A client with `config`.
    pub fn new(config: ChatConfig) -> Self {
        Self { config }
    }

    /// Serializes `request` into the pass the driver sends.
    pub fn pass(&self, request: &ModelRequest) -> Result<HttpPass, ModelError> {
        let body = chat_request::build(request, &self.config.model, self.config.stream_usage);
        let metrics = Metrics {
            transport: "chat-sse".to_string(),
            input_messages: request.messages.len() as u64,
            tool_schemas: request.tools.len() as u64,
            instruction_bytes: request.system_prompt().len() as u64,
            tool_bytes: serde_json::to_vec(&body.tools).map_or(0, |v| v.len() as u64),
            input_bytes: serde_json::to_vec(&body.messages).map_or(0, |v| v.len() as u64),
            ..Metrics::default()
        };
        let bytes = serde_json::to_vec(&body).map_err(|e| {
            ModelError::new(ErrorKind::Other, format!("cannot encode the request: {e}"))
        })?;
        let mut headers = Vec::new();
        if let Some(key) = &self.config.api_key {
            headers.push(("authorization".to_string(), format!("Bearer {key}")));
        }
        Ok(HttpPass {
            url: format!(
                "{}/chat/completions",
                self.config.base_url.trim_end_matches('/')
            ),
            headers,
            metrics: Metrics {
                request_bytes: bytes.len() as u64,
                ..metrics
            },
            body: bytes,
            retry: self.config.retry.clone(),
            idle_timeout: self.config.idle_timeout,
            limits: self.config.limits,
            error_body: decode_error_body,
        })
    }
}

impl StreamDecoder for ChatDecoder {
    fn frame(&mut self, frame: &SseFrame, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        ChatDecoder::frame(self, &frame.data, out)
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        ChatDecoder::finish(self, out)
    }

    fn has_output(&self) -> bool {
        ChatDecoder::has_output(self)
    }
}

impl ModelClient for ChatClient {
    fn provider(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn api(&self) -> Option<&'static str> {
        Some("chat")
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        driver::spawn(self.pass(&request), ChatDecoder::new, None, cancel)
    }

    fn list_models(&self) -> etch_model::ModelsFuture<'_> {
        Box::pin(async move {
            let url = format!("{}/models", self.config.base_url.trim_end_matches('/'));
            let mut headers = Vec::new();
            if let Some(key) = &self.config.api_key {
                headers.push(("authorization".to_string(), format!("Bearer {key}")));
            }
            crate::models::list(&url, &headers).await
        })
    }
}
