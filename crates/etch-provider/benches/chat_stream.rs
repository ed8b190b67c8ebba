//! Chat Completions streaming throughput: SSE framing alone, and framing
//! plus chunk decoding into stream events (target: at least 300 MB/s).
//!
//! The body is about 10 MB of synthetic `/chat/completions` SSE shaped like
//! the recorded llama-server frames (`tests/fixtures/llama-server`): many
//! small text-delta chunks carrying the usual `id`/`model`/`created`/
//! `system_fingerprint` envelope, now and then a tool call streamed as a
//! dozen argument fragments, then a `finish_reason` chunk with `timings`, a
//! usage chunk with `choices: []` and `[DONE]`. It is fed in 64 KiB chunks,
//! as a socket read would deliver it.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::missing_docs_in_private_items
)]

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use etch_model::StreamEvent;
use etch_provider::openai::chat_decode::ChatDecoder;
use etch_provider::sse::{SseFrame, SseParser};

/// Size of the generated body.
const BODY_BYTES: usize = 10 * 1024 * 1024;

/// Read size the body is fed in.
const CHUNK: usize = 64 * 1024;

/// Text frames between two tool calls.
const TEXT_FRAMES_PER_CALL: usize = 150;

/// The chunk envelope after `choices`, as llama-server sends it.
const TAIL: &str = r#""created":1796219188,"id":"chatcmpl-r93EmmP9Tsqe1KC5G98Y2oBg8IztvLPh","model":"qwen2.5-coder-1.5b-instruct","system_fingerprint":"b1-0c1e570","object":"chat.completion.chunk"}"#;

/// Token-sized text deltas, some with JSON escapes and non-ASCII text.
const TOKENS: &[&str] = &[
    "The",
    " function",
    " `parse",
    "_config`",
    " reads",
    " the",
    " file",
    r"\n",
    r"\n```",
    "rust",
    r"\n    let",
    " value",
    " =",
    r#" \"input\""#,
    ";",
    " — ",
    "écrit",
    " 完成",
    " ",
    "42",
];

/// Argument fragments of one tool call, as a model streams them.
const ARGUMENT_FRAGMENTS: &[&str] = &[
    "{", r#"\""#, "path", r#"\":"#, r#" \""#, "src", "/config", ".rs", r#"\","#, r#" \""#, "limit",
    r#"\": "#, "200", "}",
];

/// Builds the synthetic SSE body; returns it with the number of tool calls.
fn generate() -> (Vec<u8>, usize) {
    let mut body = String::with_capacity(BODY_BYTES + 4096);
    body.push_str(r#"data: {"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"#);
    body.push_str(TAIL);
    body.push_str("\n\n");
    let mut calls = 0;
    let mut frame = 0;
    while body.len() < BODY_BYTES {
        frame += 1;
        if frame % TEXT_FRAMES_PER_CALL == 0 {
            for (i, fragment) in ARGUMENT_FRAGMENTS.iter().enumerate() {
                let head = if i == 0 {
                    format!(
                        r#""id":"vlzqOblagXcLnye0E3Nn0M{calls:06}","type":"function","function":{{"name":"read","arguments":"{fragment}"}}"#
                    )
                } else {
                    format!(r#""function":{{"arguments":"{fragment}"}}"#)
                };
                writeln!(
                    body,
                    r#"data: {{"choices":[{{"finish_reason":null,"index":0,"delta":{{"tool_calls":[{{"index":{calls},{head}}}]}}}}],{TAIL}"#
                )
                .unwrap();
                body.push('\n');
            }
            calls += 1;
            continue;
        }
        let token = TOKENS[frame % TOKENS.len()];
        writeln!(
            body,
            r#"data: {{"choices":[{{"finish_reason":null,"index":0,"delta":{{"content":"{token}"}}}}],{TAIL}"#
        )
        .unwrap();
        body.push('\n');
    }
    body.push_str(r#"data: {"choices":[{"finish_reason":"tool_calls","index":0,"delta":{}}],"#);
    body.push_str(&TAIL[..TAIL.len() - 1]);
    body.push_str(r#","timings":{"cache_n":200,"prompt_n":1,"prompt_ms":41.7,"predicted_n":40000,"predicted_ms":800000.5}}"#);
    body.push_str("\n\n");
    body.push_str(r#"data: {"choices":[],"#);
    body.push_str(&TAIL[..TAIL.len() - 1]);
    body.push_str(r#","usage":{"completion_tokens":40000,"prompt_tokens":201,"total_tokens":40201,"prompt_tokens_details":{"cached_tokens":200}}}"#);
    body.push_str("\n\ndata: [DONE]\n\n");
    (body.into_bytes(), calls)
}

/// Frames the body only; returns the frame count.
fn frame_only(body: &[u8]) -> usize {
    let mut parser = SseParser::new();
    let mut frames: Vec<SseFrame> = Vec::new();
    let mut count = 0;
    for chunk in body.chunks(CHUNK) {
        parser.push(chunk, &mut frames).unwrap();
        count += frames.len();
        frames.clear();
    }
    parser.finish(&mut frames).unwrap();
    count + frames.len()
}

/// Frames and decodes the body as the provider does; returns the events.
/// Events are dropped after each read, as if forwarded downstream.
fn frame_and_decode(body: &[u8], keep: bool) -> Vec<StreamEvent> {
    let mut parser = SseParser::new();
    let mut decoder = ChatDecoder::new();
    let mut frames = Vec::new();
    let mut events = Vec::new();
    let mut kept = Vec::new();
    for chunk in body.chunks(CHUNK) {
        parser.push(chunk, &mut frames).unwrap();
        for frame in frames.drain(..) {
            decoder.frame(&frame.data, &mut events).unwrap();
        }
        if keep {
            kept.append(&mut events);
        }
        events.clear();
    }
    parser.finish(&mut frames).unwrap();
    for frame in frames.drain(..) {
        decoder.frame(&frame.data, &mut events).unwrap();
    }
    decoder.finish(&mut events).unwrap();
    kept.append(&mut events);
    kept
}

fn chat_stream(c: &mut Criterion) {
    let (body, calls) = generate();
    // Sanity: the body decodes to the calls and the usage it was built with.
    let events = frame_and_decode(&body, true);
    let started = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallStart { .. }))
        .count();
    assert_eq!(started, calls);
    assert!(events.iter().any(|e| matches!(e, StreamEvent::Usage(_))));
    assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));

    let mut group = c.benchmark_group("chat_stream");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.sample_size(30);
    group.bench_function("sse_framing", |b| b.iter(|| frame_only(black_box(&body))));
    group.bench_function("sse_and_chat_decode", |b| {
        b.iter(|| frame_and_decode(black_box(&body), false));
    });
    group.finish();
}

/// A 10 MB body made of the recorded llama-server stream itself: the
/// content frames of `stream_plain.resp` repeated, then its own ending
/// (finish, usage, `[DONE]`). `None` when the fixtures are not beside the
/// checkout.
fn recorded_body() -> Option<Vec<u8>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/llama-server/qwen2.5-coder-1.5b_tools-template/llama-server.stream_plain.resp"
    );
    let raw = std::fs::read_to_string(path).ok()?;
    let body = raw
        .split_once("\r\n\r\n")
        .or_else(|| raw.split_once("\n\n"))?
        .1;
    let frames: Vec<&str> = body
        .split("\n\n")
        .filter(|f| f.starts_with("data: "))
        .collect();
    let (content, ending): (Vec<&str>, Vec<&str>) = frames
        .iter()
        .partition(|f| f.contains("\"finish_reason\":null") && f.contains("\"content\""));
    if content.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(BODY_BYTES + 4096);
    while out.len() < BODY_BYTES {
        for frame in &content {
            out.push_str(frame);
            out.push_str("\n\n");
        }
    }
    for frame in ending {
        out.push_str(frame);
        out.push_str("\n\n");
    }
    Some(out.into_bytes())
}

/// Framing plus decoding of the repeated recorded stream.
fn recorded_stream(c: &mut Criterion) {
    let Some(body) = recorded_body() else {
        eprintln!("recorded fixtures not found beside the checkout; skipping recorded_stream");
        return;
    };
    let events = frame_and_decode(&body, true);
    assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
    let mut group = c.benchmark_group("chat_stream");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.sample_size(30);
    group.bench_function("recorded_llama_server_10mb", |b| {
        b.iter(|| frame_and_decode(black_box(&body), false));
    });
    group.finish();
}

criterion_group!(benches, chat_stream, recorded_stream);
criterion_main!(benches);
