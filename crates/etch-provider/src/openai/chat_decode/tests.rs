//! Unit tests of [`ChatDecoder`] on hand-written frames: event order,
//! reasoning, text and tool-call assembly, finish reasons, usage, in-stream
//! errors and leniency. They must not depend on recorded fixtures (see
//! `tests_fixtures`) or on the parser's internals (see `scan`).

use etch_model::{ErrorKind, ModelError, StopReason, StreamEvent, Usage};

use super::{ChatDecoder, DONE};

/// Feeds frame data strings to a fresh decoder, then `finish`; returns
/// the events and the first error.
fn decode(frames: &[&str]) -> (Vec<StreamEvent>, Result<(), ModelError>) {
    let mut decoder = ChatDecoder::new();
    let mut out = Vec::new();
    for data in frames {
        if let Err(err) = decoder.frame(data, &mut out) {
            return (out, Err(err));
        }
    }
    let result = decoder.finish(&mut out);
    (out, result)
}

/// A chunk whose first choice has the given delta JSON and finish reason.
fn chunk(delta: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    format!(
        r#"{{"choices":[{{"finish_reason":{finish},"index":0,"delta":{delta}}}],"object":"chat.completion.chunk"}}"#
    )
}

/// A text-delta chunk.
fn text(content: &str) -> String {
    chunk(
        &format!(r#"{{"content":{}}}"#, serde_json::json!(content)),
        None,
    )
}

/// A tool-call fragment chunk.
fn call(index: usize, id: Option<&str>, name: Option<&str>, arguments: &str) -> String {
    let mut fragment = serde_json::json!({"index": index, "function": {"arguments": arguments}});
    if let Some(id) = id {
        fragment["id"] = id.into();
        fragment["type"] = "function".into();
    }
    if let Some(name) = name {
        fragment["function"]["name"] = name.into();
    }
    chunk(
        &serde_json::json!({"tool_calls": [fragment]}).to_string(),
        None,
    )
}

/// Shorthand for a text delta event.
fn td(text: &str) -> StreamEvent {
    StreamEvent::TextDelta(text.into())
}

/// Shorthand for a tool-call delta event.
fn cd(index: usize, arguments: &str) -> StreamEvent {
    StreamEvent::ToolCallDelta {
        index,
        arguments: arguments.into(),
    }
}

/// Shorthand for a tool-call start event.
fn cs(index: usize, id: &str, name: &str) -> StreamEvent {
    StreamEvent::ToolCallStart {
        index,
        id: id.into(),
        name: name.into(),
    }
}

/// Shorthand for `Done`.
fn done(stop_reason: StopReason) -> StreamEvent {
    StreamEvent::Done { stop_reason }
}

/// Plain text: the role chunk with `content: null` and empty strings emit
/// nothing, `[DONE]` closes the block and appends `Done`, and frames
/// after it (and `finish`) change nothing.
#[test]
fn text_stream_until_done() {
    let role = chunk(r#"{"role":"assistant","content":null}"#, None);
    let stop = chunk("{}", Some("stop"));
    let (events, result) = decode(&[
        &role,
        &text(""),
        &text("Hel"),
        &text("lo"),
        &stop,
        DONE,
        &text("late"),
    ]);
    result.unwrap();
    assert_eq!(
        events,
        vec![
            StreamEvent::TextStart,
            td("Hel"),
            td("lo"),
            StreamEvent::TextEnd,
            done(StopReason::Stop),
        ]
    );
}

/// `has_output` turns true with the first real delta, not with the role
/// chunk, so a failure before it may be retried.
#[test]
fn has_output_only_after_model_output() {
    let mut decoder = ChatDecoder::new();
    let mut out = Vec::new();
    decoder
        .frame(
            &chunk(r#"{"role":"assistant","content":null}"#, None),
            &mut out,
        )
        .unwrap();
    decoder.frame(&text(""), &mut out).unwrap();
    assert!(!decoder.has_output());
    decoder.frame(&text("x"), &mut out).unwrap();
    assert!(decoder.has_output());
    let mut decoder = ChatDecoder::new();
    decoder
        .frame(&call(0, Some("c"), Some("read"), ""), &mut out)
        .unwrap();
    assert!(decoder.has_output());
    let mut decoder = ChatDecoder::new();
    decoder
        .frame(&chunk(r#"{"reasoning_content":"hm"}"#, None), &mut out)
        .unwrap();
    assert!(decoder.has_output());
}

/// `reasoning_content` (or `reasoning`) opens a reasoning block that the
/// first text closes; when both fields carry the same text it is used
/// once.
#[test]
fn reasoning_then_text() {
    let (events, result) = decode(&[
        &chunk(r#"{"reasoning_content":"Let me"}"#, None),
        &chunk(r#"{"reasoning":" think","reasoning_content":null}"#, None),
        &chunk(r#"{"reasoning":"x","reasoning_content":"!"}"#, None),
        &text("Answer"),
        &chunk("{}", Some("stop")),
    ]);
    result.unwrap();
    assert_eq!(
        events,
        vec![
            StreamEvent::ReasoningStart,
            StreamEvent::ReasoningDelta("Let me".into()),
            StreamEvent::ReasoningDelta(" think".into()),
            StreamEvent::ReasoningDelta("!".into()),
            StreamEvent::ReasoningEnd,
            StreamEvent::TextStart,
            td("Answer"),
            StreamEvent::TextEnd,
            done(StopReason::Stop),
        ]
    );
}

/// A tool call closes an open reasoning block.
#[test]
fn tool_call_closes_reasoning() {
    let (events, result) = decode(&[
        &chunk(r#"{"reasoning_content":"plan"}"#, None),
        &call(0, Some("c1"), Some("read"), "{}"),
        &chunk("{}", Some("tool_calls")),
    ]);
    result.unwrap();
    assert_eq!(
        events,
        vec![
            StreamEvent::ReasoningStart,
            StreamEvent::ReasoningDelta("plan".into()),
            StreamEvent::ReasoningEnd,
            cs(0, "c1", "read"),
            cd(0, "{}"),
            StreamEvent::ToolCallEnd { index: 0 },
            done(StopReason::ToolUse),
        ]
    );
}

/// Fragments are assembled by index: id and name from the first, empty
/// argument fragments skipped; with calls present the stop reason is
/// `ToolUse` even when the server says `stop`.
#[test]
fn assembles_tool_call_fragments() {
    let (events, result) = decode(&[
        &call(0, Some("abc"), Some("read"), "{"),
        &call(0, None, None, ""),
        &call(0, None, None, "\"path\": "),
        &call(0, None, None, "\"a.txt\"}"),
        &chunk("{}", Some("stop")),
        DONE,
    ]);
    result.unwrap();
    assert_eq!(
        events,
        vec![
            cs(0, "abc", "read"),
            cd(0, "{"),
            cd(0, "\"path\": "),
            cd(0, "\"a.txt\"}"),
            StreamEvent::ToolCallEnd { index: 0 },
            done(StopReason::ToolUse),
        ]
    );
}

/// Parallel calls with interleaved fragments go to their own calls, and
/// each is closed at the end in order.
#[test]
fn parallel_tool_calls() {
    let (events, result) = decode(&[
        &call(0, Some("a"), Some("read"), "{\"path\":"),
        &call(1, Some("b"), Some("grep"), "{\"q\":"),
        &call(0, None, None, "\"x\"}"),
        &call(1, None, None, "\"y\"}"),
        &chunk("{}", Some("tool_calls")),
    ]);
    result.unwrap();
    assert_eq!(
        events,
        vec![
            cs(0, "a", "read"),
            cd(0, "{\"path\":"),
            cs(1, "b", "grep"),
            cd(1, "{\"q\":"),
            cd(0, "\"x\"}"),
            cd(1, "\"y\"}"),
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::ToolCallEnd { index: 1 },
            done(StopReason::ToolUse),
        ]
    );
}

/// Several calls in one chunk, and a server numbering every call 0 but
/// giving each its own id, still yield separate calls.
#[test]
fn calls_in_one_chunk_and_reused_index() {
    let both = chunk(
        r#"{"tool_calls":[{"index":0,"id":"a","function":{"name":"read","arguments":"{}"}},{"index":1,"id":"b","function":{"name":"ls","arguments":"{}"}}]}"#,
        None,
    );
    let (events, result) = decode(&[
        &both,
        &call(0, Some("c"), Some("find"), "{}"),
        &call(0, Some("c"), None, ""),
    ]);
    assert!(result.is_err(), "no finish reason");
    assert_eq!(
        events,
        vec![
            cs(0, "a", "read"),
            cd(0, "{}"),
            cs(1, "b", "ls"),
            cd(1, "{}"),
            cs(2, "c", "find"),
            cd(2, "{}"),
        ]
    );
}

/// A call without an id gets a stable synthesized one; argument text that
/// arrives before the name is held and flushed at start; a call whose
/// name never arrives is still surfaced at the end.
#[test]
fn synthesized_ids_and_late_names() {
    let (events, result) = decode(&[
        &call(0, None, Some("read"), "{}"),
        &call(1, Some("x1"), None, "{\"a\""),
        &call(1, None, Some("write"), ":1}"),
        &call(2, None, None, "{}"),
        &chunk("{}", Some("tool_calls")),
    ]);
    result.unwrap();
    assert_eq!(
        events,
        vec![
            cs(0, "call_0", "read"),
            cd(0, "{}"),
            cs(1, "x1", "write"),
            cd(1, "{\"a\":1}"),
            cs(2, "call_2", ""),
            cd(2, "{}"),
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::ToolCallEnd { index: 1 },
            StreamEvent::ToolCallEnd { index: 2 },
            done(StopReason::ToolUse),
        ]
    );
}

/// Text before a call (llama.cpp with `tool_choice: required`) is closed
/// when the call starts.
#[test]
fn text_before_tool_call() {
    let (events, result) = decode(&[
        &text("I'll read it."),
        &call(0, Some("id"), Some("read"), "{}"),
        &chunk("{}", Some("tool_calls")),
    ]);
    result.unwrap();
    assert_eq!(
        events,
        vec![
            StreamEvent::TextStart,
            td("I'll read it."),
            StreamEvent::TextEnd,
            cs(0, "id", "read"),
            cd(0, "{}"),
            StreamEvent::ToolCallEnd { index: 0 },
            done(StopReason::ToolUse),
        ]
    );
}

/// Every documented `finish_reason` maps as specified; an unknown one is
/// a stop; the last one seen counts.
#[test]
fn maps_finish_reasons() {
    for (reason, expected) in [
        ("stop", StopReason::Stop),
        ("length", StopReason::Length),
        ("tool_calls", StopReason::ToolUse),
        ("function_call", StopReason::ToolUse),
        ("content_filter", StopReason::Stop),
        ("eos_token", StopReason::Stop),
    ] {
        let (events, result) = decode(&[&text("a"), &chunk("{}", Some(reason))]);
        result.unwrap();
        assert_eq!(events.last(), Some(&done(expected)), "{reason}");
    }
    let (events, _) = decode(&[
        &chunk(r#"{"content":"a"}"#, Some("length")),
        &chunk("{}", Some("stop")),
    ]);
    assert_eq!(events.last(), Some(&done(StopReason::Stop)));
}

/// Usage from a `choices: []` chunk is emitted once, after the blocks and
/// before `Done`; the last report wins; missing fields are zero (the
/// total defaults to the sum).
#[test]
fn usage_is_emitted_once_before_done() {
    let first =
        r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;
    let last = r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":3}},"timings":{"prompt_n":2}}"#;
    let null_usage =
        r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],"usage":null}"#;
    let (events, result) = decode(&[null_usage, first, last, DONE]);
    result.unwrap();
    assert_eq!(
        events,
        vec![
            StreamEvent::TextStart,
            td("hi"),
            StreamEvent::TextEnd,
            StreamEvent::Usage(Usage {
                input_tokens: 10,
                cached_input_tokens: 8,
                output_tokens: 5,
                reasoning_output_tokens: 3,
                total_tokens: 15,
            }),
            done(StopReason::Stop),
        ]
    );
    let (events, _) = decode(&[
        r#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}}"#,
        DONE,
    ]);
    assert_eq!(
        events[0],
        StreamEvent::Usage(Usage {
            input_tokens: 4,
            output_tokens: 2,
            total_tokens: 6,
            ..Usage::default()
        })
    );
}

/// An in-stream error object or string fails the pass with the
/// provider's message, classified.
#[test]
fn in_stream_errors() {
    let (_, result) = decode(&[
        &text("partial"),
        r#"{"error":{"message":"The server had an error","type":"server_error","code":null}}"#,
    ]);
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Transient);
    assert_eq!(err.message, "The server had an error");
    let (_, result) = decode(&[r#"{"error":"model is overloaded"}"#]);
    let err = result.unwrap_err();
    assert_eq!(
        (err.kind, err.message.as_str()),
        (ErrorKind::Other, "model is overloaded")
    );
    let overflow = r#"{"error":{"code":400,"message":"request (9030 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error"}}"#;
    assert_eq!(
        decode(&[overflow]).1.unwrap_err().kind,
        ErrorKind::ContextOverflow
    );
    let llama_500 = r#"{"error":{"code":500,"message":"slot unavailable","type":"server_error"}}"#;
    assert_eq!(
        decode(&[llama_500]).1.unwrap_err().kind,
        ErrorKind::Transient
    );
    let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    assert_eq!(
        decode(&[openai]).1.unwrap_err().kind,
        ErrorKind::ContextOverflow
    );
    // `"error": null` (some servers send it on every chunk) is no error.
    let (_, result) =
        decode(&[r#"{"error":null,"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#]);
    result.unwrap();
}

/// Data that is not JSON is a protocol error quoting at most 200
/// characters of the frame.
#[test]
fn invalid_json_is_a_protocol_error() {
    let bad = format!("{{\"choices\": [{}", "é".repeat(500));
    let err = decode(&[&bad]).1.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Protocol);
    assert!(
        err.message
            .starts_with("invalid JSON in stream frame: {\"choices\": [é"),
        "{}",
        err.message
    );
    assert!(err.message.chars().count() < 300, "{}", err.message);
    assert!(err.message.contains('…'));
    assert_eq!(
        decode(&["not json"]).1.unwrap_err().kind,
        ErrorKind::Protocol
    );
}

/// Without `[DONE]`: a seen `finish_reason` is a normal end; with neither
/// the stream was cut off.
#[test]
fn end_without_done() {
    let (events, result) = decode(&[&text("a"), &chunk("{}", Some("length"))]);
    result.unwrap();
    assert_eq!(events.last(), Some(&done(StopReason::Length)));
    let (events, result) = decode(&[&text("a")]);
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Protocol);
    assert_eq!(
        err.message,
        "the stream ended before the model finished (no finish_reason or [DONE])"
    );
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done { .. })));
    // `[DONE]` alone is a normal (if empty) end.
    assert_eq!(decode(&[DONE]).0, vec![done(StopReason::Stop)]);
}

/// Odd but harmless shapes are tolerated: a missing delta, `choices:
/// null`, unknown fields, non-string content, arguments sent as an
/// object, keep-alive blank data.
#[test]
fn tolerates_odd_shapes() {
    let (events, result) = decode(&[
        r#"{"choices":[{"index":0,"finish_reason":null}]}"#,
        r#"{"choices":null,"timings":{"a":1},"x_groq":{"id":"q"}}"#,
        "  ",
        r#"{"choices":[{"index":0,"delta":{"content":["odd"],"refusal":null,"extra":{"k":[1,2]}},"logprobs":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"i","type":"function","function":{"name":"read","arguments":{"path":"a"}}}]}}]}"#,
        r#"{"choices":[{"index":0,"finish_reason":"tool_calls"}]}"#,
    ]);
    result.unwrap();
    assert_eq!(
        events,
        vec![
            cs(0, "i", "read"),
            cd(0, r#"{"path":"a"}"#),
            StreamEvent::ToolCallEnd { index: 0 },
            done(StopReason::ToolUse),
        ]
    );
}

/// Escaped strings (which cannot be borrowed) decode like plain ones.
#[test]
fn escaped_text() {
    let (events, _) = decode(&[&text("line\n\"quoted\" é 🦀"), DONE]);
    assert_eq!(events[1], td("line\n\"quoted\" é 🦀"));
}

/// A usage value of an unexpected shape is skipped, not fatal.
#[test]
fn odd_usage_is_skipped() {
    let (events, result) = decode(&[
        r#"{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1.5}}"#,
    ]);
    result.unwrap();
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Usage(_))));
}
