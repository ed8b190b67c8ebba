//! Responses API stream decoding (E-MOD-07, E-MOD-18, E-MOD-19, E-MOD-23):
//! the JSON `data` of each SSE frame of a `/responses` stream becomes
//! provider-neutral [`StreamEvent`]s.
//!
//! It owns the semantic event types of the Responses stream: response
//! identity (`response.created`), answer text, displayable reasoning
//! summaries, function calls assembled from argument deltas, encrypted
//! reasoning items surfaced as replayable provider items, usage, the stop
//! reason of `response.completed` / `response.incomplete`, and failures
//! (`response.failed`, `error`) classified like every OpenAI error. The
//! event type is read from the data's `type` (the SSE `event:` name is only
//! a fallback). Unknown event types are ignored, so new server features do
//! not break old clients; a stream that stops before the response finished
//! is an error, never an answer.
//!
//! It must not know about SSE framing, HTTP, retries, the request shape or
//! the session: the caller feeds it frame data and decides what to do with
//! the events and errors. Error bodies of non-2xx replies are decoded by
//! [`crate::openai::chat_decode::decode_error_body`], shared with Chat
//! Completions.

use etch_model::{ErrorKind, ModelError, ProviderItem, StopReason, StreamEvent, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::http::quote;
use crate::openai::chat_decode::classify_error_message;

/// A function call seen in this response.
#[derive(Debug)]
struct Call {
    /// The `output_index` of its item: the index its stream events carry.
    index: usize,
    /// The item id (`fc_…`), for argument events without an output index.
    item_id: Option<String>,
    /// Whether any argument text was emitted for it.
    streamed: bool,
    /// Whether `ToolCallEnd` was emitted.
    ended: bool,
}

/// The text-like block currently open.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// Neither text nor reasoning.
    #[default]
    Nothing,
    /// A text block.
    Text,
    /// A reasoning block.
    Reasoning,
}

/// Decodes one Responses API stream into [`StreamEvent`]s.
///
/// Feed it each SSE frame with [`frame`](Self::frame), then call
/// [`finish`](Self::finish) when the body ends. Events come out as the
/// server streams them: `ResponseInfo` once, text and reasoning blocks
/// (never overlapping: one starting closes the other), tool calls indexed by
/// their `output_index`, `ProviderItem`s for encrypted reasoning; then at
/// `response.completed` the remaining ends, one `Usage` if reported, and
/// `Done`.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    /// `Done` was appended; later frames are ignored.
    ended: bool,
    /// `ResponseInfo` was emitted (it is emitted once).
    info_sent: bool,
    /// Which of text or reasoning is open (they never overlap).
    open: Open,
    /// Text deltas since the last message item finished. Output items
    /// stream one after another, so a finished message with none had its
    /// text only in the item.
    item_text_deltas: usize,
    /// Function calls in order of appearance.
    calls: Vec<Call>,
    /// Any model output (text, reasoning, a call, a provider item) emitted.
    output: bool,
}

/// `usage` of a finished response. Every field is optional: compatible
/// servers leave some out.
#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    /// Prompt tokens, cached ones included.
    #[serde(default)]
    input_tokens: Option<u64>,
    /// Prompt breakdown.
    #[serde(default)]
    input_tokens_details: Option<WireInputDetails>,
    /// Output tokens, reasoning included.
    #[serde(default)]
    output_tokens: Option<u64>,
    /// Output breakdown.
    #[serde(default)]
    output_tokens_details: Option<WireOutputDetails>,
    /// Total as the provider counts it.
    #[serde(default)]
    total_tokens: Option<u64>,
}

/// `usage.input_tokens_details`.
#[derive(Debug, Default, Deserialize)]
struct WireInputDetails {
    /// Prompt tokens served from the prompt cache.
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// `usage.output_tokens_details`.
#[derive(Debug, Default, Deserialize)]
struct WireOutputDetails {
    /// Output tokens spent on reasoning.
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(wire: WireUsage) -> Self {
        let input_tokens = wire.input_tokens.unwrap_or(0);
        let output_tokens = wire.output_tokens.unwrap_or(0);
        Usage {
            input_tokens,
            cached_input_tokens: wire
                .input_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            output_tokens,
            reasoning_output_tokens: wire
                .output_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            // A server that leaves out the total still means the sum.
            total_tokens: wire
                .total_tokens
                .unwrap_or(input_tokens.saturating_add(output_tokens)),
        }
    }
}

impl ResponsesDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one SSE frame (its `event:` name, if any, and its data);
    /// appends stream events to `out`.
    ///
    /// Fails on data that is not JSON (`Protocol`), on `response.failed` and
    /// on `error` events (classified by
    /// [`classify_error_message`]). Blank data and a stray `[DONE]` are
    /// ignored, as is everything after the response finished.
    pub fn frame(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ModelError> {
        if self.ended {
            return Ok(());
        }
        let data = data.trim_ascii();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|err| {
            ModelError::new(
                ErrorKind::Protocol,
                format!("invalid JSON in stream frame: {} ({err})", quote(data)),
            )
        })?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event)
            .unwrap_or_default();
        match kind {
            "response.created" | "response.in_progress" => {
                self.response_info(value.get("response"), out);
            }
            "response.output_item.added" => self.item_added(&value, out),
            "response.output_text.delta" | "response.refusal.delta" => {
                self.text_delta(&value, out);
            }
            "response.output_text.done"
            | "response.refusal.done"
            | "response.content_part.done" => {
                self.close_text(out);
            }
            "response.reasoning_summary_text.delta" => {
                if let Some(delta) = text_field(&value, "delta") {
                    self.open_reasoning(out);
                    out.push(StreamEvent::ReasoningDelta(delta.to_owned()));
                    self.output = true;
                }
            }
            "response.reasoning_summary_text.done" | "response.reasoning_summary_part.done" => {
                self.close_reasoning(out);
            }
            "response.function_call_arguments.delta" => {
                if let Some(slot) = self.find_call(&value) {
                    let delta = text_field(&value, "delta");
                    self.arguments(slot, delta, out);
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(slot) = self.find_call(&value)
                    && !self.calls[slot].streamed
                {
                    self.arguments(slot, text_field(&value, "arguments"), out);
                }
            }
            "response.output_item.done" => self.item_done(&value, out),
            // `response.done` is what some WebSocket backends send instead.
            "response.completed" | "response.incomplete" | "response.done" => {
                self.complete(kind, value.get("response"), out);
            }
            "response.failed" => return Err(failed_error(value.get("response"))),
            "error" => return Err(stream_error(&value)),
            _ => {}
        }
        Ok(())
    }

    /// The body ended: fine after the response finished, otherwise the
    /// `Protocol` error of a stream that was cut off.
    pub fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        if self.ended {
            return Ok(());
        }
        Err(ModelError::new(
            ErrorKind::Protocol,
            "the stream ended before the model finished (no response.completed)",
        ))
    }

    /// Whether the response finished (`Done` was emitted). Over a
    /// WebSocket nothing ends the body, so this is how a pass knows it is
    /// over.
    pub fn is_finished(&self) -> bool {
        self.ended
    }

    /// Whether any model output was emitted yet (retries are only allowed
    /// before that, C34). Response identity does not count; a replayable
    /// provider item does, since a retry would log it twice.
    pub fn has_output(&self) -> bool {
        self.output
    }

    /// Emits `ResponseInfo` from a `response` object, once.
    fn response_info(&mut self, response: Option<&Value>, out: &mut Vec<StreamEvent>) {
        if self.info_sent {
            return;
        }
        let Some(id) = response.and_then(|r| text_field(r, "id")) else {
            return;
        };
        self.info_sent = true;
        out.push(StreamEvent::ResponseInfo {
            response_id: id.to_owned(),
            model: response
                .and_then(|r| text_field(r, "model"))
                .unwrap_or_default()
                .to_owned(),
        });
    }

    /// `response.output_item.added`: a function call starts.
    fn item_added(&mut self, value: &Value, out: &mut Vec<StreamEvent>) {
        let Some(item) = value.get("item") else {
            return;
        };
        if item.get("type").and_then(Value::as_str) == Some("function_call") {
            self.start_call(output_index(value), item, out);
        }
    }

    /// Opens a call (closing text and reasoning) and returns its slot. A
    /// missing `call_id` falls back to the item id, then to `call_<index>`.
    fn start_call(
        &mut self,
        index: Option<usize>,
        item: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> usize {
        self.close_reasoning(out);
        self.close_text(out);
        let index = index.unwrap_or_else(|| {
            self.calls
                .iter()
                .map(|c| c.index.saturating_add(1))
                .max()
                .unwrap_or(0)
        });
        let item_id = text_field(item, "id").map(str::to_owned);
        let id = text_field(item, "call_id")
            .or(item_id.as_deref())
            .map_or_else(|| format!("call_{index}"), str::to_owned);
        out.push(StreamEvent::ToolCallStart {
            index,
            id,
            name: text_field(item, "name").unwrap_or_default().to_owned(),
        });
        self.output = true;
        self.calls.push(Call {
            index,
            item_id,
            streamed: false,
            ended: false,
        });
        self.calls.len() - 1
    }

    /// The slot of the call an event refers to: by `output_index`, else by
    /// `item_id`, else the last open call.
    fn find_call(&self, value: &Value) -> Option<usize> {
        if let Some(index) = output_index(value)
            && let Some(slot) = self.calls.iter().position(|c| c.index == index)
        {
            return Some(slot);
        }
        if let Some(item_id) = text_field(value, "item_id")
            && let Some(slot) = self
                .calls
                .iter()
                .position(|c| c.item_id.as_deref() == Some(item_id))
        {
            return Some(slot);
        }
        self.calls.iter().rposition(|c| !c.ended)
    }

    /// Emits argument text for the call in `slot` (nothing for empty text or
    /// an ended call).
    fn arguments(&mut self, slot: usize, text: Option<&str>, out: &mut Vec<StreamEvent>) {
        let call = &mut self.calls[slot];
        let Some(text) = text.filter(|t| !t.is_empty()) else {
            return;
        };
        if call.ended {
            return;
        }
        call.streamed = true;
        out.push(StreamEvent::ToolCallDelta {
            index: call.index,
            arguments: text.to_owned(),
        });
    }

    /// Text (or refusal) delta: opens a text block if needed.
    fn text_delta(&mut self, value: &Value, out: &mut Vec<StreamEvent>) {
        let Some(delta) = text_field(value, "delta") else {
            return;
        };
        self.open_text(out);
        out.push(StreamEvent::TextDelta(delta.to_owned()));
        self.output = true;
        self.item_text_deltas = self.item_text_deltas.saturating_add(1);
    }

    /// `response.output_item.done`: ends a function call (with the item's
    /// arguments if none were streamed), surfaces encrypted reasoning as a
    /// provider item, and closes a message (with its text if none was
    /// streamed).
    fn item_done(&mut self, value: &Value, out: &mut Vec<StreamEvent>) {
        let Some(item) = value.get("item") else {
            return;
        };
        let index = output_index(value);
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let slot = match self.find_done_call(index, item) {
                    Some(slot) => slot,
                    None => self.start_call(index, item, out),
                };
                if !self.calls[slot].streamed {
                    self.arguments(slot, text_field(item, "arguments"), out);
                }
                self.end_call(slot, out);
            }
            Some("reasoning") => {
                self.close_reasoning(out);
                if text_field(item, "encrypted_content").is_some() {
                    out.push(StreamEvent::ProviderItem(ProviderItem {
                        provider: "openai".to_owned(),
                        api: "responses".to_owned(),
                        item_type: "reasoning".to_owned(),
                        item: item.clone(),
                        model: None,
                    }));
                    self.output = true;
                }
            }
            Some("message") => {
                if self.item_text_deltas == 0 {
                    self.message_text(item, out);
                }
                self.item_text_deltas = 0;
                self.close_text(out);
            }
            _ => {}
        }
    }

    /// The call an `output_item.done` item belongs to: by output index or
    /// item id only (a done item never attaches to a different open call).
    fn find_done_call(&self, index: Option<usize>, item: &Value) -> Option<usize> {
        if let Some(index) = index
            && let Some(slot) = self.calls.iter().position(|c| c.index == index)
        {
            return Some(slot);
        }
        let item_id = text_field(item, "id")?;
        self.calls
            .iter()
            .position(|c| c.item_id.as_deref() == Some(item_id))
    }

    /// Emits the text of a finished message item whose text never came as
    /// deltas (servers that only send whole items).
    fn message_text(&mut self, item: &Value, out: &mut Vec<StreamEvent>) {
        let text: String = item
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|part| text_field(part, "text").or_else(|| text_field(part, "refusal")))
            .collect();
        if text.is_empty() {
            return;
        }
        self.open_text(out);
        out.push(StreamEvent::TextDelta(text));
        self.output = true;
    }

    /// Emits `ToolCallEnd` for the call in `slot`, once.
    fn end_call(&mut self, slot: usize, out: &mut Vec<StreamEvent>) {
        let call = &mut self.calls[slot];
        if !call.ended {
            call.ended = true;
            out.push(StreamEvent::ToolCallEnd { index: call.index });
        }
    }

    /// Makes sure a text block is open, closing reasoning first.
    fn open_text(&mut self, out: &mut Vec<StreamEvent>) {
        if self.open != Open::Text {
            self.close_reasoning(out);
            self.open = Open::Text;
            out.push(StreamEvent::TextStart);
        }
    }

    /// Makes sure a reasoning block is open, closing text first.
    fn open_reasoning(&mut self, out: &mut Vec<StreamEvent>) {
        if self.open != Open::Reasoning {
            self.close_text(out);
            self.open = Open::Reasoning;
            out.push(StreamEvent::ReasoningStart);
        }
    }

    /// Closes the text block if one is open.
    fn close_text(&mut self, out: &mut Vec<StreamEvent>) {
        if self.open == Open::Text {
            self.open = Open::Nothing;
            out.push(StreamEvent::TextEnd);
        }
    }

    /// Closes the reasoning block if one is open.
    fn close_reasoning(&mut self, out: &mut Vec<StreamEvent>) {
        if self.open == Open::Reasoning {
            self.open = Open::Nothing;
            out.push(StreamEvent::ReasoningEnd);
        }
    }

    /// `response.completed` / `response.incomplete`: closes everything, then
    /// `Usage` (if reported) and `Done`.
    ///
    /// Calls make it `ToolUse` whatever the status, since every call must be
    /// answered for the history to stay valid; otherwise an incomplete
    /// response cut by `max_output_tokens` is `Length`, and anything else
    /// (including a content-filter stop, whose text so far is kept) `Stop`.
    fn complete(&mut self, kind: &str, response: Option<&Value>, out: &mut Vec<StreamEvent>) {
        self.ended = true;
        self.response_info(response, out);
        self.close_reasoning(out);
        self.close_text(out);
        for slot in 0..self.calls.len() {
            self.end_call(slot, out);
        }
        let usage = response
            .and_then(|r| r.get("usage"))
            .filter(|u| u.is_object())
            .and_then(|u| WireUsage::deserialize(u).ok());
        if let Some(usage) = usage {
            out.push(StreamEvent::Usage(usage.into()));
        }
        let status = response.and_then(|r| text_field(r, "status"));
        let incomplete = kind == "response.incomplete" || status == Some("incomplete");
        let reason = response
            .and_then(|r| r.get("incomplete_details"))
            .and_then(|d| text_field(d, "reason"));
        let stop_reason = if !self.calls.is_empty() {
            StopReason::ToolUse
        } else if incomplete && reason == Some("max_output_tokens") {
            StopReason::Length
        } else {
            StopReason::Stop
        };
        out.push(StreamEvent::Done { stop_reason });
    }
}

/// A string field of a JSON object, if present and a string.
fn text_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The `output_index` of an event, if it has a usable one.
fn output_index(value: &Value) -> Option<usize> {
    value
        .get("output_index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
}

/// The error of a `response.failed` event, from `response.error`.
fn failed_error(response: Option<&Value>) -> ModelError {
    let error = response
        .and_then(|r| r.get("error"))
        .filter(|e| e.is_object());
    let code = error.and_then(|e| text_field(e, "code"));
    let message = error
        .and_then(|e| text_field(e, "message"))
        .filter(|m| !m.trim().is_empty());
    if let Some(message) = message {
        return ModelError::new(classify_error_message(None, message, code), message);
    }
    let shown = error
        .or(response)
        .map_or_else(String::new, Value::to_string);
    ModelError::new(
        classify_error_message(None, &shown, code),
        format!("the response failed: {}", quote(&shown)),
    )
}

/// The error of an `error` event: `{code, message, param}` at the top (the
/// documented shape) or inside an `error` object (as some backends and the
/// WebSocket mode send, the latter with an HTTP-like `status` that decides
/// whether it is worth a retry).
fn stream_error(value: &Value) -> ModelError {
    let status = value
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let nested = value.get("error").filter(|e| e.is_object());
    let object = nested.unwrap_or(value);
    let code = text_field(object, "code").or_else(|| {
        // The top-level `type` is the event type itself, not a hint.
        nested.and_then(|e| text_field(e, "type"))
    });
    if let Some(message) = text_field(object, "message").filter(|m| !m.trim().is_empty()) {
        return ModelError::new(classify_error_message(status, message, code), message);
    }
    let shown = value.to_string();
    ModelError::new(
        classify_error_message(status, &shown, code),
        format!("provider error: {}", quote(&shown)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use etch_test_support::{responses_function_calls, responses_text};
    use serde_json::json;

    /// Runs SSE frames as the test-support helpers format them (an `event:`
    /// line and one `data:` line each) through a decoder, then `finish`.
    fn decode_frames(frames: &[String]) -> (Vec<StreamEvent>, Result<(), ModelError>) {
        let mut decoder = ResponsesDecoder::new();
        let mut out = Vec::new();
        for frame in frames {
            let mut event = None;
            let mut data = String::new();
            for line in frame.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = Some(name);
                } else if let Some(payload) = line.strip_prefix("data: ") {
                    data.push_str(payload);
                }
            }
            if let Err(err) = decoder.frame(event, &data, &mut out) {
                return (out, Err(err));
            }
        }
        let result = decoder.finish(&mut out);
        (out, result)
    }

    /// Runs bare JSON events (data only) through a decoder, then `finish`.
    fn decode(events: &[Value]) -> (Vec<StreamEvent>, Result<(), ModelError>) {
        let mut decoder = ResponsesDecoder::new();
        let mut out = Vec::new();
        for event in events {
            if let Err(err) = decoder.frame(None, &event.to_string(), &mut out) {
                return (out, Err(err));
            }
        }
        let result = decoder.finish(&mut out);
        (out, result)
    }

    /// A `response.created` event for `resp_1` on `gpt-5`.
    fn created() -> Value {
        json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5", "status": "in_progress"}})
    }

    /// A `response.completed` event with `status` and `usage`.
    fn completed(status: &str, usage: &Value) -> Value {
        json!({"type": "response.completed", "response": {"id": "resp_1", "model": "gpt-5", "status": status, "usage": usage}})
    }

    /// The `Done` event with `stop_reason`.
    fn done(stop_reason: StopReason) -> StreamEvent {
        StreamEvent::Done { stop_reason }
    }

    /// The joined text deltas of `events`.
    fn text_of(events: &[StreamEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The response identity event every test stream starts with.
    fn info(model: &str) -> StreamEvent {
        StreamEvent::ResponseInfo {
            response_id: if model == "fake-model" {
                "resp_fake".into()
            } else {
                "resp_1".into()
            },
            model: model.into(),
        }
    }

    /// A text answer: identity once, one text block joining the deltas,
    /// usage of the fake stream, then `Stop`.
    #[test]
    fn text_stream() {
        let (events, result) = decode_frames(&responses_text("Hello there, friend"));
        result.unwrap();
        assert_eq!(
            events,
            vec![
                info("fake-model"),
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
                done(StopReason::Stop),
            ]
        );
    }

    /// Function calls arrive in pieces and are assembled per output index;
    /// `ToolUse` ends the pass.
    #[test]
    fn function_calls_in_pieces() {
        let calls = [
            ("call_1", "read", r#"{"path":"src/main.rs"}"#),
            ("call_2", "bash", r#"{"command":"ls -la"}"#),
        ];
        let (events, result) = decode_frames(&responses_function_calls(&calls));
        result.unwrap();
        let mut arguments = [String::new(), String::new()];
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        for event in &events {
            match event {
                StreamEvent::ToolCallStart { index, id, name } => {
                    starts.push((*index, id.clone(), name.clone()));
                }
                StreamEvent::ToolCallDelta {
                    index,
                    arguments: a,
                } => {
                    assert!(!ends.contains(index));
                    arguments[*index].push_str(a);
                }
                StreamEvent::ToolCallEnd { index } => ends.push(*index),
                _ => {}
            }
        }
        assert_eq!(
            starts,
            vec![
                (0, "call_1".to_owned(), "read".to_owned()),
                (1, "call_2".to_owned(), "bash".to_owned())
            ]
        );
        assert_eq!(arguments, [calls[0].2, calls[1].2]);
        assert_eq!(ends, [0, 1]);
        let deltas = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallDelta { .. }))
            .count();
        assert_eq!(deltas, 6, "arguments are streamed, not repeated at done");
        assert_eq!(events.last(), Some(&done(StopReason::ToolUse)));
    }

    /// A call whose arguments never came as deltas takes them from
    /// `.arguments.done` or the finished item, exactly once; a call that is
    /// only announced at `output_item.done` is started then.
    #[test]
    fn call_arguments_from_done_events() {
        let (events, result) = decode(&[
            created(),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "ls", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.done", "output_index": 1, "item_id": "fc_1", "arguments": "{\"a\":1}"}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "ls", "arguments": "{\"a\":1}"}}),
            json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "pwd", "arguments": "{}"}}),
            completed("completed", &Value::Null),
        ]);
        result.unwrap();
        assert_eq!(
            events,
            vec![
                info("gpt-5"),
                StreamEvent::ToolCallStart {
                    index: 1,
                    id: "c1".into(),
                    name: "ls".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 1,
                    arguments: "{\"a\":1}".into()
                },
                StreamEvent::ToolCallEnd { index: 1 },
                StreamEvent::ToolCallStart {
                    index: 2,
                    id: "c2".into(),
                    name: "pwd".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 2,
                    arguments: "{}".into()
                },
                StreamEvent::ToolCallEnd { index: 2 },
                done(StopReason::ToolUse),
            ]
        );
    }

    /// Reasoning summary parts become reasoning blocks; the encrypted
    /// reasoning item becomes a replayable provider item, verbatim; text
    /// after reasoning opens its own block; reasoning tokens are counted.
    #[test]
    fn reasoning_summary_and_encrypted_item() {
        let item = json!({"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan. Check."}], "encrypted_content": "gAAAA"});
        let (events, result) = decode(&[
            created(),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Plan."}),
            json!({"type": "response.reasoning_summary_text.done", "output_index": 0, "summary_index": 0, "text": "Plan."}),
            json!({"type": "response.reasoning_summary_part.done", "output_index": 0, "summary_index": 0}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": " Check."}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            json!({"type": "response.output_text.delta", "output_index": 1, "delta": "Hi"}),
            json!({"type": "response.output_text.done", "output_index": 1, "text": "Hi"}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}}),
            completed(
                "completed",
                &json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 64}, "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 130}),
            ),
        ]);
        result.unwrap();
        assert_eq!(
            events,
            vec![
                info("gpt-5"),
                StreamEvent::ReasoningStart,
                StreamEvent::ReasoningDelta("Plan.".into()),
                StreamEvent::ReasoningEnd,
                StreamEvent::ReasoningStart,
                StreamEvent::ReasoningDelta(" Check.".into()),
                StreamEvent::ReasoningEnd,
                StreamEvent::ProviderItem(ProviderItem {
                    provider: "openai".into(),
                    api: "responses".into(),
                    item_type: "reasoning".into(),
                    item,
                    model: None,
                }),
                StreamEvent::TextStart,
                StreamEvent::TextDelta("Hi".into()),
                StreamEvent::TextEnd,
                StreamEvent::Usage(Usage {
                    input_tokens: 100,
                    cached_input_tokens: 64,
                    output_tokens: 30,
                    reasoning_output_tokens: 20,
                    total_tokens: 130,
                }),
                done(StopReason::Stop),
            ]
        );
    }

    /// A reasoning item without ciphertext is not replayable and is not
    /// surfaced; it is not output either.
    #[test]
    fn reasoning_without_ciphertext_is_not_an_item() {
        let mut decoder = ResponsesDecoder::new();
        let mut out = Vec::new();
        let done_item = json!({"type": "response.output_item.done", "output_index": 0, "item": {"id": "rs_1", "type": "reasoning", "summary": []}});
        decoder
            .frame(None, &done_item.to_string(), &mut out)
            .unwrap();
        assert!(out.is_empty());
        assert!(!decoder.has_output());
    }

    /// `response.incomplete` for max_output_tokens is `Length`; other
    /// reasons (content filter) keep the text and are `Stop`; calls always
    /// make it `ToolUse`.
    #[test]
    fn incomplete_responses() {
        let incomplete = |reason: &str| json!({"type": "response.incomplete", "response": {"id": "resp_1", "model": "gpt-5", "status": "incomplete", "incomplete_details": {"reason": reason}, "usage": {"input_tokens": 5, "output_tokens": 7}}});
        let text = json!({"type": "response.output_text.delta", "output_index": 0, "delta": "cut"});
        let (events, result) = decode(&[created(), text.clone(), incomplete("max_output_tokens")]);
        result.unwrap();
        assert_eq!(
            &events[events.len() - 3..],
            &[
                StreamEvent::TextEnd,
                StreamEvent::Usage(Usage {
                    input_tokens: 5,
                    output_tokens: 7,
                    total_tokens: 12,
                    ..Usage::default()
                }),
                done(StopReason::Length)
            ]
        );
        let (events, _) = decode(&[created(), text, incomplete("content_filter")]);
        assert_eq!(events.last(), Some(&done(StopReason::Stop)));
        let call = json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "call_id": "c", "name": "ls"}});
        let (events, _) = decode(&[created(), call, incomplete("max_output_tokens")]);
        assert!(events.contains(&StreamEvent::ToolCallEnd { index: 0 }));
        assert_eq!(events.last(), Some(&done(StopReason::ToolUse)));
    }

    /// `response.failed` and `error` events become typed errors with the
    /// provider's message: context overflow, transient rate limits, other.
    #[test]
    fn failed_and_error_events() {
        let failed = |code: &str, message: &str| json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed", "error": {"code": code, "message": message}}});
        let (events, result) = decode(&[
            created(),
            failed(
                "context_length_exceeded",
                "Your input exceeds the context window of this model.",
            ),
        ]);
        let err = result.unwrap_err();
        assert_eq!(err.kind, ErrorKind::ContextOverflow);
        assert_eq!(
            err.message,
            "Your input exceeds the context window of this model."
        );
        assert_eq!(events, vec![info("gpt-5")]);
        let (_, result) = decode(&[failed("server_error", "The server had an error.")]);
        assert_eq!(result.unwrap_err().kind, ErrorKind::Transient);
        let (_, result) =
            decode(&[json!({"type": "response.failed", "response": {"status": "failed"}})]);
        let err = result.unwrap_err();
        assert!(err.message.starts_with("the response failed: "), "{err:?}");
        let (_, result) = decode(&[
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down.", "param": null}),
        ]);
        let err = result.unwrap_err();
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::Transient, "Slow down.")
        );
        let (_, result) = decode(&[
            json!({"type": "error", "error": {"type": "invalid_request_error", "code": "context_length_exceeded", "message": "Too long."}}),
        ]);
        assert_eq!(result.unwrap_err().kind, ErrorKind::ContextOverflow);
        let (_, result) = decode(&[json!({"type": "error", "message": "Boom."})]);
        let err = result.unwrap_err();
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::Other, "Boom.")
        );
        // The WebSocket mode's error events carry an HTTP-like status.
        let ws_error = |status: u16| json!({"type": "error", "status": status, "error": {"type": "x", "code": "x", "message": "No."}});
        let (_, result) = decode(&[ws_error(503)]);
        assert_eq!(result.unwrap_err().kind, ErrorKind::Transient);
        let (_, result) = decode(&[ws_error(400)]);
        assert_eq!(result.unwrap_err().kind, ErrorKind::InvalidRequest);
    }

    /// `response.done` finishes a response like `response.completed`.
    #[test]
    fn response_done_finishes() {
        let mut decoder = ResponsesDecoder::new();
        let mut out = Vec::new();
        assert!(!decoder.is_finished());
        let finished = json!({"type": "response.done", "response": {"id": "r", "model": "m", "status": "completed"}});
        decoder
            .frame(None, &finished.to_string(), &mut out)
            .unwrap();
        assert!(decoder.is_finished());
        assert_eq!(out.last(), Some(&done(StopReason::Stop)));
    }

    /// A stream that stops before `response.completed` is a protocol error,
    /// even after output; invalid JSON is one too.
    #[test]
    fn unterminated_and_invalid_streams() {
        let (events, result) = decode(&[
            created(),
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "half"}),
        ]);
        let err = result.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Protocol);
        assert!(
            err.message
                .starts_with("the stream ended before the model finished")
        );
        assert_eq!(events.len(), 3);
        let mut decoder = ResponsesDecoder::new();
        let err = decoder
            .frame(Some("response.created"), "{not json", &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Protocol);
        assert!(err.message.contains("{not json"), "{err:?}");
    }

    /// Output is tracked for the retry rule: identity alone is not output,
    /// text is; blank data, `[DONE]`, unknown events and anything after the
    /// end are ignored; the SSE event name stands in for a missing `type`.
    #[test]
    fn output_tracking_and_tolerance() {
        let mut decoder = ResponsesDecoder::new();
        let mut out = Vec::new();
        decoder
            .frame(None, &created().to_string(), &mut out)
            .unwrap();
        decoder.frame(None, " ", &mut out).unwrap();
        decoder.frame(None, "[DONE]", &mut out).unwrap();
        decoder
            .frame(
                None,
                r#"{"type":"response.new_feature","x":{"y":1}}"#,
                &mut out,
            )
            .unwrap();
        assert!(!decoder.has_output());
        decoder
            .frame(
                Some("response.output_text.delta"),
                r#"{"output_index":0,"delta":"a"}"#,
                &mut out,
            )
            .unwrap();
        assert!(decoder.has_output());
        decoder
            .frame(
                None,
                &completed("completed", &Value::Null).to_string(),
                &mut out,
            )
            .unwrap();
        let len = out.len();
        decoder
            .frame(None, r#"{"type":"error","message":"late"}"#, &mut out)
            .unwrap();
        decoder.finish(&mut out).unwrap();
        assert_eq!(out.len(), len);
        assert_eq!(out.last(), Some(&done(StopReason::Stop)));
        assert_eq!(
            out.iter()
                .filter(|e| matches!(e, StreamEvent::ResponseInfo { .. }))
                .count(),
            1
        );
    }

    /// A server that sends a whole message item without text deltas still
    /// gets its text shown, while streamed text (even without output
    /// indices) is never repeated from the item; a missing total is the sum.
    #[test]
    fn whole_message_items_and_partial_usage() {
        let (events, result) = decode(&[
            json!({"type": "response.output_text.delta", "delta": "stream"}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "content": [{"type": "output_text", "text": "stream"}]}}),
            completed("completed", &Value::Null),
        ]);
        result.unwrap();
        assert_eq!(text_of(&events), "stream");
        let (events, result) = decode(&[
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "content": [{"type": "output_text", "text": "whole"}]}}),
            json!({"type": "response.completed", "response": {"id": "r", "status": "completed", "usage": {"input_tokens": 2, "output_tokens": 3}}}),
        ]);
        result.unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::TextStart,
                StreamEvent::TextDelta("whole".into()),
                StreamEvent::TextEnd,
                StreamEvent::ResponseInfo {
                    response_id: "r".into(),
                    model: String::new()
                },
                StreamEvent::Usage(Usage {
                    input_tokens: 2,
                    output_tokens: 3,
                    total_tokens: 5,
                    ..Usage::default()
                }),
                done(StopReason::Stop),
            ]
        );
    }
}
