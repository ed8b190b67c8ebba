//! Loading and projecting a large session (issue 2 target: at least 100 MB/s
//! of JSONL for 100,000 events; issue 5 target: projecting a compacted
//! 100,000-event session in under 50 ms; issue 11: the context at an early
//! leaf no slower than loading).
//!
//! The file is generated with a realistic mix of events on one linear
//! branch: user prompts, assistant tool calls, tool results cycling through
//! small, medium and large outputs (about 0.2, 1.5 and 4 KB of code-like
//! text, as grep, read and bash results tend to be), usage and metrics.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use etch_session::{parse_session, project_messages, project_messages_at};
use serde_json::json;

/// Number of events in the generated session.
const EVENTS: usize = 100_000;

/// Where the compacted variant has its `context.summary` (a `model.usage`
/// slot), and the user message its raw replay starts from.
const SUMMARY_AT: usize = 95_000;

/// The first event kept raw after the summary (a `message.user` slot).
const FIRST_KEPT: usize = 93_996;

/// Builds the JSONL text of a session with `EVENTS` events; with `compacted`,
/// one event near the end is a `context.summary` (issue 5).
fn generate(compacted: bool) -> Vec<u8> {
    let mut out = String::new();
    let mut parent: Option<String> = None;
    let snippet = "    let value = compute(\"input\", 42)?; // keep the old behaviour\n";
    let results: Vec<String> = [3, 24, 64].iter().map(|n| snippet.repeat(*n)).collect();
    for i in 0..EVENTS {
        let id = format!("01K{i:023}");
        let (kind, data) = match i % 6 {
            _ if compacted && i == SUMMARY_AT => (
                "context.summary",
                json!({"summary": "## Goal\nFix the failing tests.", "trigger": "auto", "firstKeptEventId": format!("01K{FIRST_KEPT:023}"), "tokensBefore": 120_000, "tokensAfter": 20_000, "readFiles": [], "modifiedFiles": []}),
            ),
            _ if i == 0 => (
                "session.started",
                json!({"sessionId": "S", "formatVersion": 1, "cwd": "/w", "etchVersion": "0.1.0", "provider": "openai", "model": "m"}),
            ),
            0 => (
                "message.user",
                json!({"content": [{"type": "text", "text": format!("please look at file {i} and fix the failing test")}]}),
            ),
            1 => (
                "message.assistant",
                json!({"content": [{"type": "text", "text": "Let me read it."}, {"type": "tool_call", "id": format!("call_{i}"), "name": "read", "arguments": {"path": format!("src/file{i}.rs")}}], "provider": "openai", "model": "m", "stopReason": "toolUse"}),
            ),
            2 => (
                "model.usage",
                json!({"inputTokens": 1200, "cachedInputTokens": 800, "outputTokens": 40, "reasoningOutputTokens": 0, "totalTokens": 1240}),
            ),
            3 => (
                "model.metrics",
                json!({"transport": "chat-sse", "requests": 1, "requestBytes": 5000, "responseBytes": 900}),
            ),
            4 => (
                "message.tool",
                json!({"toolCallId": format!("call_{}", i - 3), "toolName": "read", "content": [{"type": "text", "text": results[(i / 6) % 3]}], "isError": false}),
            ),
            _ => (
                "message.assistant",
                json!({"content": [{"type": "text", "text": "The test fails because the fixture path is wrong; I fixed it."}], "provider": "openai", "model": "m", "stopReason": "stop"}),
            ),
        };
        let line = json!({"type": kind, "id": id, "parentId": parent, "time": "2026-12-02T10:00:00.000Z", "data": data});
        out.push_str(&line.to_string());
        out.push('\n');
        parent = Some(id);
    }
    out.into_bytes()
}

/// Measures load plus projection throughput in bytes of JSONL.
fn bench_load(c: &mut Criterion) {
    let bytes = generate(false);
    let mut group = c.benchmark_group("session");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("load_and_project_100k_events", |b| {
        b.iter(|| {
            let session = parse_session(Path::new("bench.jsonl"), black_box(&bytes)).unwrap();
            let projection = project_messages(&session);
            black_box(projection.messages.len())
        });
    });
    let session = parse_session(Path::new("bench.jsonl"), &bytes).unwrap();
    group.bench_function("project_only_100k_events", |b| {
        b.iter(|| black_box(project_messages(black_box(&session)).messages.len()));
    });
    // Issue 11: the context at an early leaf (navigating back), which
    // walks the tree from that event rather than from the file's end.
    let early = format!("01K{:023}", EVENTS / 10);
    assert!(project_messages_at(&session, &early).is_some());
    group.bench_function("project_at_an_early_leaf_100k_events", |b| {
        b.iter(|| {
            black_box(project_messages_at(black_box(&session), &early).map(|p| p.messages.len()))
        });
    });
    // Issue 5 target: projecting a compacted 100,000-event session under
    // 50 ms (the summary plus the raw events it keeps).
    let compacted = parse_session(Path::new("bench.jsonl"), &generate(true)).unwrap();
    assert!(project_messages(&compacted).summary.is_some());
    group.bench_function("project_100k_events_with_summary", |b| {
        b.iter(|| black_box(project_messages(black_box(&compacted)).messages.len()));
    });
    group.finish();
}

criterion_group!(benches, bench_load);
criterion_main!(benches);
