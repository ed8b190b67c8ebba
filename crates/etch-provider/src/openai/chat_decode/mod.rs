//! Chat Completions stream decoding (E-MOD-06, E-MOD-23): the `data` of each
//! SSE frame of a `/chat/completions` stream becomes provider-neutral
//! [`StreamEvent`]s, and error bodies become typed [`ModelError`]s.
//!
//! It owns the wire shapes of OpenAI-compatible chunks (as sent by OpenAI,
//! llama.cpp, vLLM, DeepSeek, Ollama…): text and reasoning deltas, tool-call
//! fragments assembled per call index, `finish_reason`, usage, in-stream
//! error objects, and the classification of provider error messages. It is
//! lenient where real servers differ (null content, missing ids, extra
//! fields, a missing `[DONE]` after a `finish_reason`) and strict where a
//! silent failure would pass for an answer (bad JSON, a stream that just
//! stops).
//!
//! It must not know about SSE framing (see [`crate::sse`]), HTTP, retries or
//! the session: the caller feeds it frame data and decides what to do with
//! the events and errors.
//!
//! This module holds the decoder itself; the chunk parser lives in
//! `scan` and the error classification and error bodies in `errors`.

mod errors;
mod scan;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_fixtures;

use std::borrow::Cow;

use etch_model::{ErrorKind, ModelError, StopReason, StreamEvent, Usage};

pub use self::errors::{classify_error_message, decode_error_body};
use self::errors::{error_from_value, generic_error};
use self::scan::{Delta, ToolFragment, parse_chunk};
use crate::http::quote;

/// Frame data that ends an OpenAI-style stream.
const DONE: &str = "[DONE]";

/// A tool call being assembled from fragments.
#[derive(Debug)]
struct CallState {
    /// The `index` the server uses for it.
    wire_index: usize,
    /// Provider id (empty until one arrives; synthesized at start if none).
    id: String,
    /// Whether `id` came from the provider rather than being synthesized.
    provider_id: bool,
    /// Tool name (empty until one arrives).
    name: String,
    /// Whether `ToolCallStart` was emitted (it waits for the name).
    started: bool,
    /// Argument text received before the name, flushed at start.
    pending: String,
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

/// Decodes one Chat Completions stream into [`StreamEvent`]s.
///
/// Feed it each SSE frame's data with [`frame`](Self::frame), then call
/// [`finish`](Self::finish) when the body ends. Events come out in this
/// order: text, reasoning and tool-call events as they arrive (reasoning,
/// text and tool calls never overlap: starting one closes the others, except
/// that tool calls stay open together until the end), then `TextEnd` /
/// `ToolCallEnd`s, then one `Usage` if the server reported any, then `Done`.
/// Output indices of tool calls are their order of first appearance.
#[derive(Debug, Default)]
pub struct ChatDecoder {
    /// `Done` was appended (at `[DONE]` or by `finish`); later input is
    /// ignored.
    ended: bool,
    /// Which of text or reasoning is open (they never overlap).
    open: Open,
    /// Tool calls in order of first appearance; the position is the output
    /// index.
    calls: Vec<CallState>,
    /// The last `finish_reason` seen, mapped.
    finish_reason: Option<StopReason>,
    /// The last usage seen (emitted once, at the end).
    usage: Option<Usage>,
    /// Any model output decoded yet.
    output: bool,
}

impl ChatDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one SSE frame's data; appends stream events to `out`.
    ///
    /// Fails on data that is not JSON (`Protocol`) and on an in-stream
    /// `error` object (classified by [`classify_error_message`]). Blank data
    /// (a keep-alive) is ignored, as is everything after `[DONE]`.
    pub fn frame(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        if self.ended {
            return Ok(());
        }
        let data = data.trim_ascii();
        if data.is_empty() {
            return Ok(());
        }
        if data == DONE {
            self.end(out);
            return Ok(());
        }
        let chunk = parse_chunk(data).map_err(|reason| {
            ModelError::new(
                ErrorKind::Protocol,
                format!("invalid JSON in stream frame: {} ({reason})", quote(data)),
            )
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(error_from_value(None, &error, true)
                .unwrap_or_else(|| generic_error(None, &error.to_string())));
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        if !chunk.choice {
            return Ok(());
        }
        self.delta(chunk.delta, out);
        if let Some(reason) = non_empty(chunk.finish_reason) {
            self.finish_reason = Some(map_finish_reason(&reason));
        }
        Ok(())
    }

    /// The body ended: closes open blocks and appends Done, or returns the
    /// error for a stream that never finished.
    ///
    /// A stream without `[DONE]` still ends normally if a `finish_reason`
    /// arrived (some servers drop the terminator); one with neither was cut
    /// off and is a `Protocol` error. After `[DONE]` this does nothing.
    pub fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        if self.ended {
            return Ok(());
        }
        if self.finish_reason.is_none() {
            return Err(ModelError::new(
                ErrorKind::Protocol,
                "the stream ended before the model finished (no finish_reason or [DONE])",
            ));
        }
        self.end(out);
        Ok(())
    }

    /// Whether any model output (text, reasoning or a tool call) was decoded
    /// yet (retries are only allowed before that).
    pub fn has_output(&self) -> bool {
        self.output
    }

    /// Applies one delta: reasoning, then text, then tool-call fragments.
    fn delta(&mut self, delta: Delta<'_>, out: &mut Vec<StreamEvent>) {
        let reasoning = match delta.reasoning_content {
            Some(text) => Some(text),
            None => delta.reasoning,
        };
        if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
            self.close_text(out);
            if self.open != Open::Reasoning {
                self.open = Open::Reasoning;
                out.push(StreamEvent::ReasoningStart);
            }
            out.push(StreamEvent::ReasoningDelta(text.into_owned()));
            self.output = true;
        }
        if let Some(text) = non_empty(delta.content) {
            self.close_reasoning(out);
            if self.open != Open::Text {
                self.open = Open::Text;
                out.push(StreamEvent::TextStart);
            }
            out.push(StreamEvent::TextDelta(text.into_owned()));
            self.output = true;
        }
        for (position, call) in delta.tool_calls.into_iter().enumerate() {
            self.tool_fragment(position, call, out);
        }
    }

    /// Routes one tool-call fragment to its call, starting the call once its
    /// name is known.
    fn tool_fragment(
        &mut self,
        position: usize,
        call: ToolFragment<'_>,
        out: &mut Vec<StreamEvent>,
    ) {
        self.output = true;
        let wire_index = call.index.unwrap_or(position);
        let id = non_empty(call.id);
        let name = non_empty(call.name);
        let arguments = non_empty(call.arguments);
        let existing = self.calls.iter().rposition(|c| c.wire_index == wire_index);
        let slot = match existing {
            // Some servers number every call 0; a fresh provider id with a
            // name on a started call can only be a new call.
            Some(slot)
                if !(self.calls[slot].started
                    && self.calls[slot].provider_id
                    && name.is_some()
                    && id.as_deref().is_some_and(|id| id != self.calls[slot].id)) =>
            {
                slot
            }
            _ => {
                self.calls.push(CallState {
                    wire_index,
                    id: String::new(),
                    provider_id: false,
                    name: String::new(),
                    started: false,
                    pending: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let state = &mut self.calls[slot];
        if state.started {
            if let Some(arguments) = arguments {
                out.push(StreamEvent::ToolCallDelta {
                    index: slot,
                    arguments: arguments.into_owned(),
                });
            }
            return;
        }
        if let Some(id) = id.filter(|_| state.id.is_empty()) {
            state.id = id.into_owned();
            state.provider_id = true;
        }
        if let Some(name) = name.filter(|_| state.name.is_empty()) {
            state.name = name.into_owned();
        }
        if let Some(arguments) = arguments {
            state.pending.push_str(&arguments);
        }
        if !state.name.is_empty() {
            self.start_call(slot, out);
        }
    }

    /// Emits `ToolCallStart` for a call (closing text and reasoning first)
    /// and flushes argument text that arrived before its name.
    fn start_call(&mut self, slot: usize, out: &mut Vec<StreamEvent>) {
        self.close_reasoning(out);
        self.close_text(out);
        let state = &mut self.calls[slot];
        state.started = true;
        if state.id.is_empty() {
            // Stable within the response, so deltas and results line up.
            state.id = format!("call_{slot}");
        }
        out.push(StreamEvent::ToolCallStart {
            index: slot,
            id: state.id.clone(),
            name: state.name.clone(),
        });
        if !state.pending.is_empty() {
            out.push(StreamEvent::ToolCallDelta {
                index: slot,
                arguments: std::mem::take(&mut state.pending),
            });
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

    /// Ends the stream: closes every block, then `Usage`, then `Done`.
    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        self.ended = true;
        self.close_reasoning(out);
        self.close_text(out);
        // A call whose name never came still gets surfaced (with an empty
        // name) so its arguments are not silently lost; the core answers it
        // with an unknown-tool error.
        for slot in 0..self.calls.len() {
            if !self.calls[slot].started {
                self.start_call(slot, out);
            }
        }
        for index in 0..self.calls.len() {
            out.push(StreamEvent::ToolCallEnd { index });
        }
        if let Some(usage) = self.usage.take() {
            out.push(StreamEvent::Usage(usage));
        }
        let stop_reason = if self.calls.is_empty() {
            self.finish_reason.unwrap_or(StopReason::Stop)
        } else {
            // Calls must be answered whatever the server says (llama.cpp
            // reports `length` for a cut-off call, others `stop`), or the
            // history would hold calls without results.
            StopReason::ToolUse
        };
        out.push(StreamEvent::Done { stop_reason });
    }
}

/// `text` unless it is empty.
fn non_empty(text: Option<Cow<'_, str>>) -> Option<Cow<'_, str>> {
    text.filter(|t| !t.is_empty())
}

/// Maps a Chat Completions `finish_reason` to a stop reason.
fn map_finish_reason(reason: &str) -> StopReason {
    match reason {
        "length" => StopReason::Length,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        // `content_filter` ends the answer where the provider cut it; there is
        // no separate stop reason for it, so it reads as a normal stop (the
        // text so far is kept). `stop` and anything unknown are a stop too.
        _ => StopReason::Stop,
    }
}
