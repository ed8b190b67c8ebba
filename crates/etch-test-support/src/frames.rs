//! Helpers that format the SSE frames of the streaming APIs the fake server
//! imitates, for use as the `events` of a [`Reply::Sse`](crate::Reply::Sse).
//!
//! Every helper is deterministic: fixed ids ([`FAKE_MODEL`], `chatcmpl-fake`,
//! `msg_fake`, `resp_fake`), `created` 0, and usage of [`PROMPT_TOKENS`] input
//! tokens and one output token per content delta. Text is split on character
//! boundaries, never inside a UTF-8 sequence.

use serde_json::{Value, json};

/// The model name every generated frame reports.
pub const FAKE_MODEL: &str = "fake-model";

/// The input token count every generated usage reports.
pub const PROMPT_TOKENS: u64 = 10;

/// How many characters of text [`chat_text`] (and the other text helpers) put
/// into one delta.
pub const DEFAULT_CHUNK_CHARS: usize = 8;

/// Into how many deltas the tool-call helpers split each call's arguments (fewer
/// if the arguments are shorter than this many characters).
pub const ARGUMENT_PIECES: usize = 3;

/// The terminating frame of an OpenAI Chat Completions stream.
pub const CHAT_DONE: &str = "data: [DONE]\n\n";

/// One SSE event carrying `data`: `data: <line>\n` for each line of `data`
/// (split on `\n`, as SSE requires for multi-line data), then a blank line.
pub fn sse_data(data: &str) -> String {
    let mut frame = String::with_capacity(data.len() + 8);
    for line in data.split('\n') {
        frame.push_str("data: ");
        frame.push_str(line);
        frame.push('\n');
    }
    frame.push('\n');
    frame
}

/// One SSE event with an `event:` type line, as Anthropic and the OpenAI
/// Responses API send them.
pub fn sse_event(event: &str, data: &str) -> String {
    format!("event: {event}\n{}", sse_data(data))
}

/// The WebSocket messages carrying the same JSON as `sse_frames` (as produced by
/// [`sse_data`], [`sse_event`] and the stream helpers), for the `turns` of a
/// [`Reply::WebSocket`](crate::Reply::WebSocket): the Responses WebSocket mode
/// sends each event's JSON as one text message, without SSE framing. Following
/// the SSE rules, each event's `data` lines are joined with `\n` (one space
/// after the colon dropped) and other fields (`event:`, comments) are ignored;
/// events without data and the `[DONE]` sentinel give no message. A string
/// holding several events (separated by a blank line) gives one message each.
pub fn ws_messages(sse_frames: &[String]) -> Vec<String> {
    let mut messages = Vec::new();
    for frame in sse_frames {
        let mut data: Vec<&str> = Vec::new();
        // A trailing empty "line" stands for the end of the string, which ends
        // an event just as a blank line does.
        for line in frame.lines().chain([""]) {
            if line.is_empty() {
                if !data.is_empty() {
                    let message = data.join("\n");
                    if message != "[DONE]" {
                        messages.push(message);
                    }
                    data.clear();
                }
            } else if line == "data" {
                data.push("");
            } else if let Some(value) = line.strip_prefix("data:") {
                data.push(value.strip_prefix(' ').unwrap_or(value));
            }
        }
    }
    messages
}

/// Splits `text` into pieces of at most `size` characters (at least 1). Empty
/// text gives no pieces.
fn split_chars(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|piece| piece.iter().collect())
        .collect()
}

/// Splits tool-call arguments into at most [`ARGUMENT_PIECES`] pieces of similar
/// length, so clients must join several deltas.
fn split_arguments(arguments: &str) -> Vec<String> {
    let count = arguments.chars().count();
    split_chars(arguments, count.div_ceil(ARGUMENT_PIECES))
}

/// The usage a stream with `deltas` content deltas reports, as a count to add to
/// [`PROMPT_TOKENS`].
fn output_tokens(deltas: usize) -> u64 {
    u64::try_from(deltas).unwrap_or(u64::MAX)
}

/// One Chat Completions chunk with a single choice.
fn chat_chunk(delta: &Value, finish_reason: Option<&str>) -> String {
    sse_data(
        &json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": FAKE_MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
        .to_string(),
    )
}

/// The closing frames of a Chat Completions stream: the finish chunk, the usage
/// chunk (as sent with `stream_options.include_usage`) and `[DONE]`.
fn chat_finish(frames: &mut Vec<String>, finish_reason: &str, deltas: usize) {
    frames.push(chat_chunk(&json!({}), Some(finish_reason)));
    let completion = output_tokens(deltas);
    frames.push(sse_data(
        &json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": FAKE_MODEL,
            "choices": [],
            "usage": {
                "prompt_tokens": PROMPT_TOKENS,
                "completion_tokens": completion,
                "total_tokens": PROMPT_TOKENS + completion,
            },
        })
        .to_string(),
    ));
    frames.push(CHAT_DONE.to_owned());
}

/// An OpenAI Chat Completions stream answering `text`, in deltas of
/// [`DEFAULT_CHUNK_CHARS`] characters. See [`chat_text_chunks`].
pub fn chat_text(text: &str) -> Vec<String> {
    chat_text_chunks(text, DEFAULT_CHUNK_CHARS)
}

/// An OpenAI Chat Completions stream answering `text` in `delta.content` pieces
/// of `chunk_size` characters (the first delta also carries
/// `role: "assistant"`; empty text gives one empty delta), then a chunk with
/// `finish_reason: "stop"`, a usage chunk and `data: [DONE]`.
pub fn chat_text_chunks(text: &str, chunk_size: usize) -> Vec<String> {
    let mut pieces = split_chars(text, chunk_size);
    if pieces.is_empty() {
        pieces.push(String::new());
    }
    let mut frames = Vec::with_capacity(pieces.len() + 3);
    for (i, piece) in pieces.iter().enumerate() {
        let delta = if i == 0 {
            json!({"role": "assistant", "content": piece})
        } else {
            json!({"content": piece})
        };
        frames.push(chat_chunk(&delta, None));
    }
    chat_finish(&mut frames, "stop", pieces.len());
    frames
}

/// An OpenAI Chat Completions stream calling one tool. See [`chat_tool_calls`].
pub fn chat_tool_call(id: &str, name: &str, arguments: &str) -> Vec<String> {
    chat_tool_calls(&[(id, name, arguments)])
}

/// An OpenAI Chat Completions stream calling several tools in one message. Each
/// `(id, name, arguments JSON text)` gets its own `index` (its position): a delta
/// with id, type and name and empty arguments, then the arguments split over up
/// to [`ARGUMENT_PIECES`] deltas carrying only the index. The first delta also
/// carries `role: "assistant"` and `content: null`. Then a chunk with
/// `finish_reason: "tool_calls"`, a usage chunk and `data: [DONE]`.
pub fn chat_tool_calls(calls: &[(&str, &str, &str)]) -> Vec<String> {
    let mut frames = Vec::new();
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let start = json!({
            "index": index,
            "id": id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        });
        let delta = if index == 0 {
            json!({"role": "assistant", "content": null, "tool_calls": [start]})
        } else {
            json!({"tool_calls": [start]})
        };
        frames.push(chat_chunk(&delta, None));
        for piece in split_arguments(arguments) {
            let delta = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
            frames.push(chat_chunk(&delta, None));
        }
    }
    let deltas = frames.len();
    chat_finish(&mut frames, "tool_calls", deltas);
    frames
}

/// The `message_start` event of an Anthropic Messages stream.
fn anthropic_start() -> String {
    sse_event(
        "message_start",
        &json!({
            "type": "message_start",
            "message": {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": FAKE_MODEL,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": PROMPT_TOKENS, "output_tokens": 1},
            },
        })
        .to_string(),
    )
}

/// The closing `message_delta` (stop reason and output usage) and `message_stop`
/// events of an Anthropic Messages stream.
fn anthropic_finish(frames: &mut Vec<String>, stop_reason: &str, deltas: usize) {
    frames.push(sse_event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": output_tokens(deltas)},
        })
        .to_string(),
    ));
    frames.push(sse_event(
        "message_stop",
        &json!({"type": "message_stop"}).to_string(),
    ));
}

/// The `content_block_stop` event for block `index`.
fn anthropic_block_stop(index: usize) -> String {
    sse_event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}).to_string(),
    )
}

/// An Anthropic Messages stream answering `text`: `message_start`, one text
/// content block whose `text_delta`s carry [`DEFAULT_CHUNK_CHARS`] characters
/// each (none for empty text), a `ping`, then `message_delta` with
/// `stop_reason: "end_turn"` and `message_stop`.
pub fn anthropic_text(text: &str) -> Vec<String> {
    let pieces = split_chars(text, DEFAULT_CHUNK_CHARS);
    let mut frames = vec![
        anthropic_start(),
        sse_event(
            "content_block_start",
            &json!({
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            })
            .to_string(),
        ),
        sse_event("ping", &json!({"type": "ping"}).to_string()),
    ];
    for piece in &pieces {
        frames.push(sse_event(
            "content_block_delta",
            &json!({
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            })
            .to_string(),
        ));
    }
    frames.push(anthropic_block_stop(0));
    anthropic_finish(&mut frames, "end_turn", pieces.len());
    frames
}

/// An Anthropic Messages stream calling tools: after `message_start`, each
/// `(id, name, input JSON text)` is a `tool_use` content block at its position,
/// with the input split over up to [`ARGUMENT_PIECES`] `input_json_delta`s; then
/// `message_delta` with `stop_reason: "tool_use"` and `message_stop`.
pub fn anthropic_tool_uses(calls: &[(&str, &str, &str)]) -> Vec<String> {
    let mut frames = vec![anthropic_start()];
    let mut deltas = 0;
    for (index, (id, name, input)) in calls.iter().enumerate() {
        frames.push(sse_event(
            "content_block_start",
            &json!({
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}},
            })
            .to_string(),
        ));
        for piece in split_arguments(input) {
            deltas += 1;
            frames.push(sse_event(
                "content_block_delta",
                &json!({
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                })
                .to_string(),
            ));
        }
        frames.push(anthropic_block_stop(index));
    }
    anthropic_finish(&mut frames, "tool_use", deltas);
    frames
}

/// Builds an OpenAI Responses stream, numbering events as the API does.
struct ResponsesStream {
    /// The frames so far.
    frames: Vec<String>,
    /// The `sequence_number` of the next event.
    sequence: u64,
}

impl ResponsesStream {
    /// Starts a stream with its `response.created` event.
    fn new() -> Self {
        let mut stream = Self {
            frames: Vec::new(),
            sequence: 0,
        };
        stream.push(
            "response.created",
            json!({"response": responses_object("in_progress", &[], &Value::Null)}),
        );
        stream
    }

    /// Appends an event of type `kind`, adding `type` and `sequence_number` to
    /// `payload` (which must be an object).
    fn push(&mut self, kind: &str, mut payload: Value) {
        if let Some(object) = payload.as_object_mut() {
            object.insert("type".to_owned(), json!(kind));
            object.insert("sequence_number".to_owned(), json!(self.sequence));
        }
        self.sequence += 1;
        self.frames.push(sse_event(kind, &payload.to_string()));
    }

    /// Appends `response.completed` with the final output and usage, and returns
    /// the frames.
    fn finish(mut self, output: &[Value], deltas: usize) -> Vec<String> {
        let completion = output_tokens(deltas);
        let usage = json!({
            "input_tokens": PROMPT_TOKENS,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": PROMPT_TOKENS + completion,
        });
        self.push(
            "response.completed",
            json!({"response": responses_object("completed", output, &usage)}),
        );
        self.frames
    }
}

/// A Responses API `response` object with this status, output and usage.
fn responses_object(status: &str, output: &[Value], usage: &Value) -> Value {
    json!({
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": FAKE_MODEL,
        "output": output,
        "usage": usage,
    })
}

/// An OpenAI Responses API stream answering `text`: `response.created`, a
/// message output item with one `output_text` part whose
/// `response.output_text.delta`s carry [`DEFAULT_CHUNK_CHARS`] characters each,
/// the matching `.done` events, then `response.completed` with usage. Events
/// have `event:` lines and `sequence_number`s from 0; there is no `[DONE]`.
pub fn responses_text(text: &str) -> Vec<String> {
    let pieces = split_chars(text, DEFAULT_CHUNK_CHARS);
    let item_id = "msg_fake";
    let mut stream = ResponsesStream::new();
    stream.push(
        "response.output_item.added",
        json!({
            "output_index": 0,
            "item": {"id": item_id, "type": "message", "status": "in_progress",
                     "role": "assistant", "content": []},
        }),
    );
    stream.push(
        "response.content_part.added",
        json!({
            "item_id": item_id, "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        }),
    );
    for piece in &pieces {
        stream.push(
            "response.output_text.delta",
            json!({"item_id": item_id, "output_index": 0, "content_index": 0, "delta": piece}),
        );
    }
    stream.push(
        "response.output_text.done",
        json!({"item_id": item_id, "output_index": 0, "content_index": 0, "text": text}),
    );
    let part = json!({"type": "output_text", "text": text, "annotations": []});
    stream.push(
        "response.content_part.done",
        json!({"item_id": item_id, "output_index": 0, "content_index": 0, "part": part}),
    );
    let item = json!({
        "id": item_id, "type": "message", "status": "completed",
        "role": "assistant", "content": [part],
    });
    stream.push(
        "response.output_item.done",
        json!({"output_index": 0, "item": item}),
    );
    stream.finish(&[item], pieces.len())
}

/// An OpenAI Responses API stream calling functions: after `response.created`,
/// each `(call_id, name, arguments JSON text)` is a `function_call` output item
/// at its position (item id `fc_fake_<position>`) whose arguments arrive in up to
/// [`ARGUMENT_PIECES`] `response.function_call_arguments.delta`s, followed by
/// `.done` and `response.output_item.done`; then `response.completed`.
pub fn responses_function_calls(calls: &[(&str, &str, &str)]) -> Vec<String> {
    let mut stream = ResponsesStream::new();
    let mut output = Vec::with_capacity(calls.len());
    let mut deltas = 0;
    for (index, (call_id, name, arguments)) in calls.iter().enumerate() {
        let item_id = format!("fc_fake_{index}");
        stream.push(
            "response.output_item.added",
            json!({
                "output_index": index,
                "item": {"id": item_id, "type": "function_call", "status": "in_progress",
                         "call_id": call_id, "name": name, "arguments": ""},
            }),
        );
        for piece in split_arguments(arguments) {
            deltas += 1;
            stream.push(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": index, "delta": piece}),
            );
        }
        stream.push(
            "response.function_call_arguments.done",
            json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
        );
        let item = json!({
            "id": item_id, "type": "function_call", "status": "completed",
            "call_id": call_id, "name": name, "arguments": arguments,
        });
        stream.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
        output.push(item);
    }
    stream.finish(&output, deltas)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses the `data:` payload of each frame as JSON (skipping `[DONE]`), and
    /// returns the `event:` names alongside.
    fn parse(frames: &[String]) -> Vec<(Option<String>, Value)> {
        frames
            .iter()
            .filter(|frame| frame.as_str() != CHAT_DONE)
            .map(|frame| {
                assert!(frame.ends_with("\n\n"), "{frame:?}");
                let mut event = None;
                let mut data = String::new();
                for line in frame.trim_end().lines() {
                    if let Some(name) = line.strip_prefix("event: ") {
                        event = Some(name.to_owned());
                    } else if let Some(payload) = line.strip_prefix("data: ") {
                        data.push_str(payload);
                    } else {
                        panic!("unexpected line {line:?}");
                    }
                }
                (event, serde_json::from_str(&data).unwrap())
            })
            .collect()
    }

    /// `sse_data` prefixes every line and ends with a blank line.
    #[test]
    fn sse_data_frames_multiline_data() {
        assert_eq!(sse_data("x"), "data: x\n\n");
        assert_eq!(sse_data("a\nb"), "data: a\ndata: b\n\n");
        assert_eq!(sse_event("ping", "{}"), "event: ping\ndata: {}\n\n");
    }

    /// Chat text deltas concatenate to the text, respect char boundaries and end
    /// with stop, usage and [DONE].
    #[test]
    fn chat_text_chunks_reassemble() {
        let text = "héllo wörld, this is long";
        let frames = chat_text_chunks(text, 4);
        assert_eq!(frames.last().map(String::as_str), Some(CHAT_DONE));
        let chunks = parse(&frames);
        let content: String = chunks
            .iter()
            .filter_map(|(_, c)| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(content, text);
        assert_eq!(chunks[0].1["choices"][0]["delta"]["role"], "assistant");
        let pieces = text.chars().count().div_ceil(4);
        assert_eq!(chunks.len(), pieces + 2);
        assert_eq!(chunks[pieces].1["choices"][0]["finish_reason"], "stop");
        let usage = &chunks[pieces + 1].1["usage"];
        assert_eq!(usage["completion_tokens"], pieces);
        assert_eq!(usage["total_tokens"], 10 + pieces);
        assert_eq!(chat_text("").len(), 4);
    }

    /// Several chat tool calls keep their own index and their arguments arrive
    /// in several deltas that join to the original text.
    #[test]
    fn chat_tool_calls_split_arguments_per_index() {
        let calls = [
            ("call_1", "read", r#"{"path":"src/main.rs"}"#),
            ("call_2", "bash", r#"{"command":"ls -la"}"#),
        ];
        let chunks = parse(&chat_tool_calls(&calls));
        let mut arguments = [String::new(), String::new()];
        let mut argument_deltas = [0, 0];
        for (_, chunk) in &chunks {
            for call in chunk["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let index = usize::try_from(call["index"].as_u64().unwrap()).unwrap();
                if let Some(id) = call["id"].as_str() {
                    assert_eq!(id, calls[index].0);
                    assert_eq!(call["function"]["name"], calls[index].1);
                } else {
                    argument_deltas[index] += 1;
                }
                arguments[index].push_str(call["function"]["arguments"].as_str().unwrap());
            }
        }
        assert_eq!(arguments, [calls[0].2, calls[1].2]);
        assert_eq!(argument_deltas, [3, 3]);
        let finish = &chunks[chunks.len() - 2].1;
        assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(chat_tool_call("a", "b", "{}").len(), 2 + 2 + 2);
    }

    /// The Anthropic text stream has the documented event sequence.
    #[test]
    fn anthropic_text_event_sequence() {
        let events = parse(&anthropic_text("Hello there, friend"));
        let names: Vec<&str> = events.iter().filter_map(|(e, _)| e.as_deref()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        for (name, data) in &events {
            assert_eq!(data["type"].as_str(), name.as_deref());
        }
        let text: String = events
            .iter()
            .filter_map(|(_, d)| d["delta"]["text"].as_str())
            .collect();
        assert_eq!(text, "Hello there, friend");
        assert_eq!(events[7].1["delta"]["stop_reason"], "end_turn");
    }

    /// Anthropic tool uses are separate blocks with joined partial JSON.
    #[test]
    fn anthropic_tool_uses_blocks() {
        let events = parse(&anthropic_tool_uses(&[
            ("toolu_1", "read", r#"{"path":"a"}"#),
            ("toolu_2", "grep", r#"{"pattern":"b"}"#),
        ]));
        let mut inputs = [String::new(), String::new()];
        for (_, data) in &events {
            if let Some(piece) = data["delta"]["partial_json"].as_str() {
                let index = usize::try_from(data["index"].as_u64().unwrap()).unwrap();
                inputs[index].push_str(piece);
            }
        }
        assert_eq!(inputs, [r#"{"path":"a"}"#, r#"{"pattern":"b"}"#]);
        assert_eq!(events[1].1["content_block"]["id"], "toolu_1");
        assert_eq!(
            events[events.len() - 2].1["delta"]["stop_reason"],
            "tool_use"
        );
    }

    /// `ws_messages` keeps each event's JSON (multi-line data joined) and drops
    /// frames without data and `[DONE]`.
    #[test]
    fn ws_messages_carry_the_data() {
        let frames = responses_text("hi");
        let messages = ws_messages(&frames);
        assert_eq!(messages.len(), frames.len());
        let types: Vec<String> = messages
            .iter()
            .map(|m| {
                let value: Value = serde_json::from_str(m).unwrap();
                value["type"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(
            types,
            [
                "response.created",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let odd = [
            sse_data("a\nb"),
            "event: ping\n\n".to_owned(),
            ": comment\n\n".to_owned(),
            CHAT_DONE.to_owned(),
            "data:x\r\ndata\n\ndata: y".to_owned(),
        ];
        assert_eq!(ws_messages(&odd), ["a\nb", "x\n", "y"]);
        assert_eq!(ws_messages(&chat_text("")).len(), 3);
    }

    /// Responses streams number their events and end with response.completed.
    #[test]
    fn responses_streams_are_sequenced() {
        for frames in [
            responses_text("some answer text"),
            responses_function_calls(&[("call_1", "ls", r#"{"path":"."}"#)]),
        ] {
            let events = parse(&frames);
            for (i, (name, data)) in events.iter().enumerate() {
                assert_eq!(data["sequence_number"], i);
                assert_eq!(data["type"].as_str(), name.as_deref());
            }
            let (last, done) = events.last().unwrap();
            assert_eq!(last.as_deref(), Some("response.completed"));
            assert_eq!(done["response"]["status"], "completed");
        }
        let text: String = parse(&responses_text("some answer text"))
            .iter()
            .filter(|(e, _)| e.as_deref() == Some("response.output_text.delta"))
            .filter_map(|(_, d)| d["delta"].as_str())
            .collect();
        assert_eq!(text, "some answer text");
        let calls = parse(&responses_function_calls(&[("c", "ls", r#"{"p":1}"#)]));
        let output = &calls.last().unwrap().1["response"]["output"][0];
        assert_eq!(output["call_id"], "c");
        assert_eq!(output["arguments"], r#"{"p":1}"#);
    }
}
