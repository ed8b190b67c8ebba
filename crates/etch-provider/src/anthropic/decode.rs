//! Anthropic Messages stream decoding (E-MOD-04, E-MOD-19, E-MOD-23): the
//! JSON `data` of each SSE event of a `/v1/messages` stream becomes
//! provider-neutral [`StreamEvent`]s, and error bodies become typed
//! [`ModelError`]s.
//!
//! It owns the wire shapes of Anthropic's events (`message_start`,
//! `content_block_start|delta|stop`, `message_delta`, `message_stop`,
//! `ping`, `error`): text, thinking (with its signature, surfaced as a
//! `model.provider_item` for replay to Anthropic only), redacted thinking,
//! `tool_use` blocks with partial JSON input, stop reasons and usage. It is
//! lenient with what Anthropic may add (unknown events, block and delta
//! types are ignored) and strict where a silent failure would pass for an
//! answer (bad JSON, a stream that stops before the model finished).
//!
//! It must not know about SSE framing, HTTP, retries or the session; error
//! wording is classified by the shared
//! [`classify_error_message`](crate::openai::chat_decode::classify_error_message).

use etch_model::{ErrorKind, ModelError, ProviderItem, StopReason, StreamEvent, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::quote;
use crate::openai::chat_decode::{classify_error_message, decode_error_body as generic_body};

use super::request::{API, PROVIDER};

/// One stream event, tagged by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    /// The response begins: its id, model and input usage.
    MessageStart {
        /// The (empty) message being produced.
        message: StartMessage,
    },
    /// A content block begins.
    ContentBlockStart {
        /// Position of the block in the message.
        index: usize,
        /// The block's initial state.
        content_block: StartBlock,
    },
    /// More content for an open block.
    ContentBlockDelta {
        /// Which block.
        index: usize,
        /// The increment.
        delta: BlockDelta,
    },
    /// A content block is complete.
    ContentBlockStop {
        /// Which block.
        index: usize,
    },
    /// Top-level changes: the stop reason and cumulative usage.
    MessageDelta {
        /// The changes to the message.
        #[serde(default)]
        delta: MessageChanges,
        /// Cumulative usage so far.
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    /// The stream is complete.
    MessageStop,
    /// An in-stream failure (e.g. `overloaded_error`).
    Error {
        /// What failed.
        error: WireError,
    },
    /// `ping` and any event type added later: ignored.
    #[serde(other)]
    Other,
}

/// The message of `message_start`.
#[derive(Debug, Deserialize)]
struct StartMessage {
    /// Response id (`msg_…`).
    #[serde(default)]
    id: String,
    /// Model that answers.
    #[serde(default)]
    model: String,
    /// Input usage (and a provisional output count).
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// The initial state of a content block.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    /// Answer text.
    Text {
        /// Initial text (normally empty).
        #[serde(default)]
        text: String,
    },
    /// Extended thinking.
    Thinking {
        /// Initial thinking text (normally empty).
        #[serde(default)]
        thinking: String,
        /// Initial signature (normally empty).
        #[serde(default)]
        signature: String,
    },
    /// Thinking the safety system encrypted; only replayable.
    RedactedThinking {
        /// The encrypted thinking.
        #[serde(default)]
        data: String,
    },
    /// A tool call.
    ToolUse {
        /// Call id (`toolu_…`).
        id: String,
        /// Tool name.
        name: String,
        /// Initial input (normally `{}`, filled by `input_json_delta`s).
        #[serde(default)]
        input: Value,
    },
    /// Server tools, citations and anything later: ignored.
    #[serde(other)]
    Other,
}

/// An increment of a content block.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    /// More answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// More thinking text.
    ThinkingDelta {
        /// The text.
        thinking: String,
    },
    /// The signature of a thinking block.
    SignatureDelta {
        /// The signature (or a piece of it).
        signature: String,
    },
    /// A fragment of a tool call's input JSON.
    InputJsonDelta {
        /// The fragment.
        partial_json: String,
    },
    /// Citations and anything later: ignored.
    #[serde(other)]
    Other,
}

/// The `delta` of `message_delta`.
#[derive(Debug, Default, Deserialize)]
struct MessageChanges {
    /// Why the model stopped, once known.
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Usage as Anthropic reports it. Counts are cumulative; `input_tokens`
/// excludes the tokens read from or written to the prompt cache.
#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    /// Uncached input tokens.
    #[serde(default, rename = "input_tokens")]
    input: Option<u64>,
    /// Input tokens read from the prompt cache.
    #[serde(default, rename = "cache_read_input_tokens")]
    cache_read: Option<u64>,
    /// Input tokens written to the prompt cache.
    #[serde(default, rename = "cache_creation_input_tokens")]
    cache_creation: Option<u64>,
    /// Output tokens so far.
    #[serde(default, rename = "output_tokens")]
    output: Option<u64>,
}

/// The `error` object of an error event or body.
#[derive(Debug, Deserialize)]
struct WireError {
    /// Anthropic's error type (`overloaded_error`, `invalid_request_error`…).
    #[serde(rename = "type", default)]
    kind: String,
    /// The human-readable message.
    #[serde(default)]
    message: String,
}

/// A content block being received.
#[derive(Debug)]
enum Open {
    /// A text block.
    Text,
    /// A thinking block and what it said so far.
    Thinking {
        /// The thinking text.
        text: String,
        /// The signature.
        signature: String,
    },
    /// A redacted thinking block.
    Redacted {
        /// The encrypted thinking.
        data: String,
    },
    /// A tool call.
    ToolUse {
        /// Whether an `input_json_delta` arrived.
        streamed: bool,
        /// The input of the start event, sent at the stop when nothing was
        /// streamed.
        initial: Value,
    },
    /// A block etch does not use.
    Ignored,
}

/// Usage counts seen so far.
#[derive(Debug, Default)]
struct Counts {
    /// Whether the stream reported any usage.
    seen: bool,
    /// Uncached input tokens.
    input: u64,
    /// Cache-read input tokens.
    cache_read: u64,
    /// Cache-write input tokens.
    cache_creation: u64,
    /// Output tokens.
    output: u64,
}

impl Counts {
    /// Takes the counts a usage object carries (later values replace
    /// earlier ones: Anthropic's counts are cumulative).
    fn update(&mut self, usage: &WireUsage) {
        self.seen = true;
        let fields = [
            (usage.input, &mut self.input),
            (usage.cache_read, &mut self.cache_read),
            (usage.cache_creation, &mut self.cache_creation),
            (usage.output, &mut self.output),
        ];
        for (value, slot) in fields {
            if let Some(value) = value {
                *slot = value;
            }
        }
    }

    /// The provider-neutral usage. `input_tokens` is the whole prompt,
    /// cached parts included, so that (as with OpenAI) cached tokens are a
    /// part of the input and the input measures the context size.
    fn usage(&self) -> Usage {
        let input_tokens = self
            .input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_creation);
        Usage {
            input_tokens,
            cached_input_tokens: self.cache_read,
            output_tokens: self.output,
            reasoning_output_tokens: 0,
            total_tokens: input_tokens.saturating_add(self.output),
        }
    }
}

/// Decodes one Anthropic Messages stream into [`StreamEvent`]s.
///
/// Feed it each SSE frame's data with [`frame`](Self::frame), then call
/// [`finish`](Self::finish) when the body ends. Events come out as the
/// blocks arrive: `ResponseInfo` at `message_start`; `TextStart/Delta/End`,
/// `ReasoningStart/Delta/End` (plus a `ProviderItem` with the signed block
/// at its end) and `ToolCallStart/Delta/End` (indexed by block index) per
/// block; then one `Usage` and `Done` at `message_stop`.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    /// Open content blocks by block index, in start order.
    open: Vec<(usize, Open)>,
    /// Usage so far.
    counts: Counts,
    /// The stop reason of `message_delta`, mapped.
    stop_reason: Option<StopReason>,
    /// Whether a tool call was started.
    called: bool,
    /// `Done` was appended; later input is ignored.
    ended: bool,
    /// Whether model output was decoded (no retry after that).
    output: bool,
}

impl AnthropicDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one SSE frame's data, appending events to `out`.
    ///
    /// Fails on data that is not a JSON event (`Protocol`) and on an `error`
    /// event (classified by its type and message). Blank data is ignored,
    /// as is everything after `message_stop`.
    pub fn frame(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        let data = data.trim_ascii();
        if self.ended || data.is_empty() {
            return Ok(());
        }
        let event: Event = serde_json::from_str(data).map_err(|err| {
            ModelError::new(
                ErrorKind::Protocol,
                format!("invalid JSON in stream frame: {} ({err})", quote(data)),
            )
        })?;
        match event {
            Event::MessageStart { message } => {
                if let Some(usage) = &message.usage {
                    self.counts.update(usage);
                }
                out.push(StreamEvent::ResponseInfo {
                    response_id: message.id,
                    model: message.model,
                });
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.start(index, content_block, out),
            Event::ContentBlockDelta { index, delta } => self.delta(index, delta, out),
            Event::ContentBlockStop { index } => {
                if let Some(slot) = self.open.iter().position(|(i, _)| *i == index) {
                    let (index, block) = self.open.remove(slot);
                    close(index, block, out);
                }
            }
            Event::MessageDelta { delta, usage } => {
                if let Some(usage) = &usage {
                    self.counts.update(usage);
                }
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(map_stop_reason(&reason));
                }
            }
            Event::MessageStop => self.end(out),
            Event::Error { error } => return Err(stream_error(&error)),
            Event::Other => {}
        }
        Ok(())
    }

    /// The body ended: appends `Done` if the stream was complete, or fails.
    ///
    /// A stream without `message_stop` still ends normally if a stop reason
    /// arrived; one with neither was cut off and is a `Protocol` error.
    pub fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        if self.ended {
            return Ok(());
        }
        if self.stop_reason.is_none() {
            return Err(ModelError::new(
                ErrorKind::Protocol,
                "the stream ended before the model finished (no message_stop)",
            ));
        }
        self.end(out);
        Ok(())
    }

    /// Whether any model output was decoded yet (retries are only allowed
    /// before that).
    pub fn has_output(&self) -> bool {
        self.output
    }

    /// Opens block `index`, closing a block left open at the same index.
    fn start(&mut self, index: usize, block: StartBlock, out: &mut Vec<StreamEvent>) {
        if let Some(slot) = self.open.iter().position(|(i, _)| *i == index) {
            let (index, block) = self.open.remove(slot);
            close(index, block, out);
        }
        let open = match block {
            StartBlock::Text { text } => {
                out.push(StreamEvent::TextStart);
                if !text.is_empty() {
                    out.push(StreamEvent::TextDelta(text));
                }
                Open::Text
            }
            StartBlock::Thinking {
                thinking,
                signature,
            } => {
                out.push(StreamEvent::ReasoningStart);
                if !thinking.is_empty() {
                    out.push(StreamEvent::ReasoningDelta(thinking.clone()));
                }
                Open::Thinking {
                    text: thinking,
                    signature,
                }
            }
            StartBlock::RedactedThinking { data } => Open::Redacted { data },
            StartBlock::ToolUse { id, name, input } => {
                self.called = true;
                out.push(StreamEvent::ToolCallStart { index, id, name });
                Open::ToolUse {
                    streamed: false,
                    initial: input,
                }
            }
            StartBlock::Other => Open::Ignored,
        };
        self.output |= !matches!(open, Open::Ignored);
        self.open.push((index, open));
    }

    /// Applies an increment to open block `index` (increments for blocks
    /// that are not open, or of a kind the block does not take, are
    /// ignored).
    fn delta(&mut self, index: usize, delta: BlockDelta, out: &mut Vec<StreamEvent>) {
        let Some((_, block)) = self.open.iter_mut().find(|(i, _)| *i == index) else {
            return;
        };
        match (block, delta) {
            (Open::Text, BlockDelta::TextDelta { text }) if !text.is_empty() => {
                out.push(StreamEvent::TextDelta(text));
            }
            (Open::Thinking { text, .. }, BlockDelta::ThinkingDelta { thinking })
                if !thinking.is_empty() =>
            {
                text.push_str(&thinking);
                out.push(StreamEvent::ReasoningDelta(thinking));
            }
            (Open::Thinking { signature, .. }, BlockDelta::SignatureDelta { signature: part }) => {
                signature.push_str(&part);
            }
            (Open::ToolUse { streamed, .. }, BlockDelta::InputJsonDelta { partial_json })
                if !partial_json.is_empty() =>
            {
                *streamed = true;
                out.push(StreamEvent::ToolCallDelta {
                    index,
                    arguments: partial_json,
                });
            }
            _ => {}
        }
    }

    /// Ends the stream: closes open blocks, then `Usage`, then `Done`.
    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        self.ended = true;
        for (index, block) in std::mem::take(&mut self.open) {
            close(index, block, out);
        }
        if self.counts.seen {
            out.push(StreamEvent::Usage(self.counts.usage()));
        }
        let stop_reason = if self.called {
            // Calls must be answered whatever ended the message (a call cut
            // off by max_tokens included), or the history would hold calls
            // without results.
            StopReason::ToolUse
        } else {
            self.stop_reason.unwrap_or(StopReason::Stop)
        };
        out.push(StreamEvent::Done { stop_reason });
    }
}

/// Emits the end of block `index`. A signed thinking block and a redacted
/// one also become a provider item, to be replayed to Anthropic only; an
/// unsigned thinking block (cut off) is not kept, since Anthropic would
/// reject it.
fn close(index: usize, block: Open, out: &mut Vec<StreamEvent>) {
    match block {
        Open::Text => out.push(StreamEvent::TextEnd),
        Open::Thinking { text, signature } => {
            out.push(StreamEvent::ReasoningEnd);
            if !signature.is_empty() {
                out.push(provider_item(
                    "thinking",
                    json!({"type": "thinking", "thinking": text, "signature": signature}),
                ));
            }
        }
        Open::Redacted { data } => out.push(provider_item(
            "redacted_thinking",
            json!({"type": "redacted_thinking", "data": data}),
        )),
        Open::ToolUse { streamed, initial } => {
            if !streamed && initial.as_object().is_some_and(|o| !o.is_empty()) {
                out.push(StreamEvent::ToolCallDelta {
                    index,
                    arguments: initial.to_string(),
                });
            }
            out.push(StreamEvent::ToolCallEnd { index });
        }
        Open::Ignored => {}
    }
}

/// An Anthropic Messages provider item.
fn provider_item(item_type: &str, item: Value) -> StreamEvent {
    StreamEvent::ProviderItem(ProviderItem {
        provider: PROVIDER.to_string(),
        api: API.to_string(),
        item_type: item_type.to_string(),
        item,
        model: None,
    })
}

/// Maps Anthropic's `stop_reason`.
fn map_stop_reason(reason: &str) -> StopReason {
    match reason {
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        "tool_use" => StopReason::ToolUse,
        // `end_turn`, `stop_sequence`, `refusal`, `pause_turn` and anything
        // new end the answer where it is.
        _ => StopReason::Stop,
    }
}

/// The typed error of an `error` event: classified by Anthropic's error
/// type (`overloaded_error` and `api_error` are transient) and message
/// (`prompt is too long` is an overflow).
fn stream_error(error: &WireError) -> ModelError {
    let kind = classify_error_message(None, &error.message, Some(&error.kind));
    let message = match (error.message.is_empty(), error.kind.is_empty()) {
        (false, false) => format!("{} ({})", error.message, error.kind),
        (false, true) => error.message.clone(),
        (true, false) => error.kind.clone(),
        (true, true) => "the stream reported an error without a message".to_string(),
    };
    ModelError::new(kind, message)
}

/// Decodes a non-2xx body, `{"type":"error","error":{"type","message"}}`,
/// into a typed error with Anthropic's message: 429, 529 (`overloaded_error`)
/// and 5xx are `Transient`, `prompt is too long` is `ContextOverflow`,
/// 401/403 `Auth`, other 4xx `InvalidRequest`. Other bodies (a proxy's HTML,
/// plain text) are read as the OpenAI-compatible decoder reads them.
pub fn decode_error_body(status: u16, body: &str) -> ModelError {
    /// The envelope of an Anthropic error body.
    #[derive(Deserialize)]
    struct Envelope {
        /// The error.
        error: WireError,
    }
    match serde_json::from_str::<Envelope>(body.trim()) {
        Ok(Envelope { error }) if !error.message.is_empty() => {
            let hint = (!error.kind.is_empty()).then_some(error.kind.as_str());
            let kind = classify_error_message(Some(status), &error.message, hint);
            ModelError::new(kind, error.message)
        }
        _ => generic_body(status, body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::{SseFrame, SseParser};
    use etch_test_support::{anthropic_text, anthropic_tool_uses, sse_event};

    /// Runs SSE frame strings through the SSE parser and a fresh decoder,
    /// then `finish`; returns the events and the first error.
    fn decode(frames: &[String]) -> (Vec<StreamEvent>, Result<(), ModelError>) {
        let mut parser = SseParser::new();
        let mut parsed: Vec<SseFrame> = Vec::new();
        for frame in frames {
            parser.push(frame.as_bytes(), &mut parsed).unwrap();
        }
        parser.finish(&mut parsed).unwrap();
        let mut decoder = AnthropicDecoder::new();
        let mut events = Vec::new();
        for frame in &parsed {
            if let Err(err) = decoder.frame(&frame.data, &mut events) {
                return (events, Err(err));
            }
        }
        let result = decoder.finish(&mut events);
        (events, result)
    }

    /// One SSE event whose data is `value`, named after its `type`.
    fn event(value: &Value) -> String {
        sse_event(value["type"].as_str().unwrap_or("x"), &value.to_string())
    }

    /// `message_start` with this usage.
    fn start(usage: &Value) -> String {
        event(&json!({
            "type": "message_start",
            "message": {"id": "msg_1", "type": "message", "role": "assistant",
                        "model": "claude-x", "content": [], "usage": usage},
        }))
    }

    /// `message_delta` with this stop reason and output count, then
    /// `message_stop`.
    fn finish(stop_reason: &str, output: u64) -> Vec<String> {
        vec![
            event(&json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": output}})),
            event(&json!({"type": "message_stop"})),
        ]
    }

    /// A text stream decodes to response info, one text block, usage and a
    /// stop (the `ping` is ignored).
    #[test]
    fn text_stream() {
        let (events, result) = decode(&anthropic_text("Hello there, friend"));
        result.unwrap();
        assert_eq!(
            events,
            [
                StreamEvent::ResponseInfo {
                    response_id: "msg_fake".into(),
                    model: "fake-model".into()
                },
                StreamEvent::TextStart,
                StreamEvent::TextDelta("Hello th".into()),
                StreamEvent::TextDelta("ere, fri".into()),
                StreamEvent::TextDelta("end".into()),
                StreamEvent::TextEnd,
                StreamEvent::Usage(Usage {
                    input_tokens: 10,
                    cached_input_tokens: 0,
                    output_tokens: 3,
                    reasoning_output_tokens: 0,
                    total_tokens: 13,
                }),
                StreamEvent::Done {
                    stop_reason: StopReason::Stop
                },
            ]
        );
    }

    /// A thinking block streams as reasoning, and at its end becomes a
    /// signed `thinking` provider item for Anthropic Messages; a redacted
    /// block becomes a `redacted_thinking` item.
    #[test]
    fn thinking_with_signature_becomes_a_provider_item() {
        let mut frames = vec![
            start(&json!({"input_tokens": 5, "output_tokens": 1})),
            event(&json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""}})),
            event(&json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Let me "}})),
            event(&json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "think."}})),
            event(&json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "signature_delta", "signature": "EqQB=="}})),
            event(&json!({"type": "content_block_stop", "index": 0})),
            event(&json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "redacted_thinking", "data": "enc"}})),
            event(&json!({"type": "content_block_stop", "index": 1})),
            event(&json!({"type": "content_block_start", "index": 2,
                "content_block": {"type": "text", "text": ""}})),
            event(&json!({"type": "content_block_delta", "index": 2,
                "delta": {"type": "text_delta", "text": "42"}})),
            event(&json!({"type": "content_block_stop", "index": 2})),
        ];
        frames.extend(finish("end_turn", 9));
        let (events, result) = decode(&frames);
        result.unwrap();
        assert_eq!(
            events[1..9],
            [
                StreamEvent::ReasoningStart,
                StreamEvent::ReasoningDelta("Let me ".into()),
                StreamEvent::ReasoningDelta("think.".into()),
                StreamEvent::ReasoningEnd,
                StreamEvent::ProviderItem(ProviderItem {
                    provider: "anthropic".into(),
                    api: "messages".into(),
                    item_type: "thinking".into(),
                    item: json!({"type": "thinking", "thinking": "Let me think.", "signature": "EqQB=="}),
                    model: None,
                }),
                StreamEvent::ProviderItem(ProviderItem {
                    provider: "anthropic".into(),
                    api: "messages".into(),
                    item_type: "redacted_thinking".into(),
                    item: json!({"type": "redacted_thinking", "data": "enc"}),
                    model: None,
                }),
                StreamEvent::TextStart,
                StreamEvent::TextDelta("42".into()),
            ]
        );
        assert!(matches!(
            events.last(),
            Some(StreamEvent::Done {
                stop_reason: StopReason::Stop
            })
        ));
    }

    /// A thinking block that never got a signature is shown but not kept
    /// for replay (Anthropic would reject it).
    #[test]
    fn unsigned_thinking_is_not_kept() {
        let mut frames = vec![
            start(&json!({"input_tokens": 5})),
            event(&json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": "hm", "signature": ""}})),
        ];
        frames.extend(finish("max_tokens", 9));
        let (events, result) = decode(&frames);
        result.unwrap();
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::ProviderItem(_)))
        );
        assert!(events.contains(&StreamEvent::ReasoningDelta("hm".into())));
        assert!(events.contains(&StreamEvent::ReasoningEnd));
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Done {
                stop_reason: StopReason::Length
            })
        );
    }

    /// Tool uses start with their id and name at their block index, their
    /// partial JSON arrives as deltas, and the stop reason is tool use.
    #[test]
    fn tool_use_partial_json() {
        let (events, result) = decode(&anthropic_tool_uses(&[
            ("toolu_1", "read", r#"{"path":"src/main.rs"}"#),
            ("toolu_2", "ls", "{}"),
        ]));
        result.unwrap();
        let mut args = [String::new(), String::new()];
        for event in &events {
            if let StreamEvent::ToolCallDelta { index, arguments } = event {
                args[*index].push_str(arguments);
            }
        }
        assert_eq!(args, [r#"{"path":"src/main.rs"}"#, "{}"]);
        assert!(events.contains(&StreamEvent::ToolCallStart {
            index: 1,
            id: "toolu_2".into(),
            name: "ls".into()
        }));
        let ends: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallEnd { .. }))
            .collect();
        assert_eq!(ends.len(), 2);
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Done {
                stop_reason: StopReason::ToolUse
            })
        );
    }

    /// A text block followed by a tool use keeps the block index as the
    /// call index; a call cut off by max_tokens still ends as tool use.
    #[test]
    fn call_index_is_the_block_index() {
        let mut frames = vec![
            start(&json!({"input_tokens": 1})),
            event(&json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": "Let me look."}})),
            event(&json!({"type": "content_block_stop", "index": 0})),
            event(&json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_9", "name": "read", "input": {}}})),
            event(&json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}})),
        ];
        frames.extend(finish("max_tokens", 4));
        let (events, result) = decode(&frames);
        result.unwrap();
        assert_eq!(
            events[1..],
            [
                StreamEvent::TextStart,
                StreamEvent::TextDelta("Let me look.".into()),
                StreamEvent::TextEnd,
                StreamEvent::ToolCallStart {
                    index: 1,
                    id: "toolu_9".into(),
                    name: "read".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 1,
                    arguments: "{\"pa".into()
                },
                StreamEvent::ToolCallEnd { index: 1 },
                StreamEvent::Usage(Usage {
                    input_tokens: 1,
                    cached_input_tokens: 0,
                    output_tokens: 4,
                    reasoning_output_tokens: 0,
                    total_tokens: 5,
                }),
                StreamEvent::Done {
                    stop_reason: StopReason::ToolUse
                },
            ]
        );
    }

    /// A tool_use whose input came whole in the start event (no deltas)
    /// still delivers it.
    #[test]
    fn whole_input_in_start_event_is_delivered() {
        let mut frames = vec![
            start(&json!({"input_tokens": 1})),
            event(&json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "ls", "input": {"path": "."}}})),
            event(&json!({"type": "content_block_stop", "index": 0})),
        ];
        frames.extend(finish("tool_use", 2));
        let (events, result) = decode(&frames);
        result.unwrap();
        assert!(events.contains(&StreamEvent::ToolCallDelta {
            index: 0,
            arguments: r#"{"path":"."}"#.into()
        }));
    }

    /// Usage: the prompt includes cache reads and writes, cached counts the
    /// reads, output is the last cumulative count, total is input + output.
    #[test]
    fn usage_counts_cached_input() {
        let mut frames = vec![start(&json!({
            "input_tokens": 3, "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 20, "output_tokens": 1,
        }))];
        frames.extend(finish("end_turn", 7));
        let (events, result) = decode(&frames);
        result.unwrap();
        assert!(events.contains(&StreamEvent::Usage(Usage {
            input_tokens: 123,
            cached_input_tokens: 100,
            output_tokens: 7,
            reasoning_output_tokens: 0,
            total_tokens: 130,
        })));
    }

    /// Stop reasons map to etch's.
    #[test]
    fn stop_reasons_map() {
        for (wire, expected) in [
            ("end_turn", StopReason::Stop),
            ("stop_sequence", StopReason::Stop),
            ("max_tokens", StopReason::Length),
            ("tool_use", StopReason::ToolUse),
            ("refusal", StopReason::Stop),
        ] {
            let mut frames = vec![start(&json!({"input_tokens": 1}))];
            frames.extend(finish(wire, 1));
            let (events, result) = decode(&frames);
            result.unwrap();
            assert_eq!(
                events.last(),
                Some(&StreamEvent::Done {
                    stop_reason: expected
                }),
                "{wire}"
            );
        }
    }

    /// An `error` event is a typed error: overloaded is transient (retried
    /// before output), an overflow message is a context overflow.
    #[test]
    fn error_events_are_classified() {
        let overloaded = event(&json!({"type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"}}));
        let (_, result) = decode(&[start(&json!({})), overloaded]);
        let err = result.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Transient);
        assert_eq!(err.message, "Overloaded (overloaded_error)");
        let overflow = event(&json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum"}}));
        let (_, result) = decode(&[overflow]);
        assert_eq!(result.unwrap_err().kind, ErrorKind::ContextOverflow);
    }

    /// A stream cut off before `message_stop` and any stop reason is a
    /// protocol error; one with a stop reason but no `message_stop` ends.
    #[test]
    fn unterminated_stream_is_a_protocol_error() {
        let mut frames = anthropic_text("Hello there");
        frames.truncate(frames.len() - 2);
        let (events, result) = decode(&frames);
        let err = result.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Protocol);
        assert!(
            err.message
                .contains("the stream ended before the model finished"),
            "{}",
            err.message
        );
        assert!(events.contains(&StreamEvent::TextDelta("Hello th".into())));
        let mut frames = anthropic_text("Hello");
        frames.pop();
        let (events, result) = decode(&frames);
        result.unwrap();
        assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
    }

    /// Data that is not JSON is a protocol error; unknown events, blocks
    /// and deltas are ignored, and so is anything after `message_stop`.
    #[test]
    fn bad_json_fails_and_unknown_shapes_are_ignored() {
        let (_, result) = decode(&["data: {not json\n\n".to_string()]);
        let err = result.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Protocol);
        assert!(err.message.starts_with("invalid JSON in stream frame"));
        let mut frames = vec![
            start(&json!({"input_tokens": 1})),
            event(&json!({"type": "future_event", "x": 1})),
            event(&json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "server_tool_use", "id": "s", "name": "web_search"}})),
            event(&json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{}"}})),
            event(&json!({"type": "content_block_stop", "index": 0})),
            event(&json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "text", "text": ""}})),
            event(&json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "citations_delta", "citation": {}}})),
            event(&json!({"type": "content_block_stop", "index": 1})),
        ];
        frames.extend(finish("end_turn", 1));
        frames.push("data: {not json either\n\n".to_string());
        let (events, result) = decode(&frames);
        result.unwrap();
        assert_eq!(events[1..3], [StreamEvent::TextStart, StreamEvent::TextEnd]);
        assert_eq!(events.len(), 5);
    }

    /// No output is reported before a content block starts, so transient
    /// failures up to then may be retried.
    #[test]
    fn output_starts_with_the_first_block() {
        let mut decoder = AnthropicDecoder::new();
        let mut out = Vec::new();
        let frames = anthropic_text("hi");
        let data = |frame: &str| {
            frame
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap()
                .to_string()
        };
        decoder.frame(&data(&frames[0]), &mut out).unwrap();
        assert!(!decoder.has_output());
        decoder.frame(&data(&frames[1]), &mut out).unwrap();
        assert!(decoder.has_output());
    }

    /// Error bodies keep Anthropic's message and classify by status, type
    /// and wording.
    #[test]
    fn error_bodies_are_classified() {
        let body = |kind: &str, message: &str| {
            json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
        };
        let cases = [
            (
                429,
                body("rate_limit_error", "slow down"),
                ErrorKind::Transient,
            ),
            (
                529,
                body("overloaded_error", "Overloaded"),
                ErrorKind::Transient,
            ),
            (500, body("api_error", "Internal"), ErrorKind::Transient),
            (
                400,
                body(
                    "invalid_request_error",
                    "prompt is too long: 210000 tokens > 200000 maximum",
                ),
                ErrorKind::ContextOverflow,
            ),
            (
                401,
                body("authentication_error", "invalid x-api-key"),
                ErrorKind::Auth,
            ),
            (403, body("permission_error", "no"), ErrorKind::Auth),
            (
                400,
                body("invalid_request_error", "bad"),
                ErrorKind::InvalidRequest,
            ),
        ];
        for (status, text, kind) in cases {
            let err = decode_error_body(status, &text);
            assert_eq!(err.kind, kind, "{status} {text}");
            let expected: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(err.message, expected["error"]["message"].as_str().unwrap());
        }
        let html = decode_error_body(502, "<html>bad gateway</html>");
        assert_eq!(html.kind, ErrorKind::Transient);
        assert!(html.message.contains("bad gateway"));
    }
}
