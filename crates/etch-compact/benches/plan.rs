//! Planning a compaction over a large session: the cost paid before every
//! summarizer call, and by `etch compact` on a long-running session.
//!
//! The session has 100,000 events on one linear branch in the mix of the
//! session-load bench (user prompts, assistant tool calls, usage, metrics,
//! tool results of about 0.2, 1.5 and 4 KB, final answers). Planning parses
//! every replayed message event, measures it with a `ceil(bytes / 4)`
//! estimator, finds the cut and collects the prefix and file lists.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use etch_compact::{Settings, estimate_context, plan};
use etch_session::parse_session;
use serde_json::json;

/// Number of events in the generated session.
const EVENTS: usize = 100_000;

/// The estimator used by the bench: one token per four bytes, rounded up.
fn estimate(text: &str) -> u64 {
    text.len().div_ceil(4) as u64
}

/// Tokens of the pinned context (system layers, tools) in the generated usage.
const PINNED: u64 = 2_000;

/// Builds the JSONL text of a session with `EVENTS` events. Usage totals
/// grow with the conversation, as a provider would report them.
fn generate() -> Vec<u8> {
    let mut out = String::new();
    let mut parent: Option<String> = None;
    let mut context = PINNED;
    let snippet = "    let value = compute(\"input\", 42)?; // keep the old behaviour\n";
    let results: Vec<String> = [3, 24, 64].iter().map(|n| snippet.repeat(*n)).collect();
    for i in 0..EVENTS {
        let id = format!("01K{i:023}");
        let (kind, data) = match i % 6 {
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
                json!({"content": [{"type": "text", "text": "Let me read it."}, {"type": "tool_call", "id": format!("call_{i}"), "name": if i % 4 == 1 { "edit" } else { "read" }, "arguments": {"path": format!("src/file{}.rs", i % 5000)}}], "provider": "openai", "model": "m", "stopReason": "toolUse"}),
            ),
            2 => (
                "model.usage",
                json!({"inputTokens": context - 40, "cachedInputTokens": 800, "outputTokens": 40, "reasoningOutputTokens": 0, "totalTokens": context}),
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
        if kind.starts_with("message.") {
            context += data["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|part| match part["text"].as_str() {
                    Some(text) => estimate(text),
                    None => {
                        estimate(part["name"].as_str().unwrap())
                            + estimate(&part["arguments"].to_string())
                    }
                })
                .sum::<u64>();
        }
        let line = json!({"type": kind, "id": id, "parentId": parent, "time": "2026-12-02T10:00:00.000Z", "data": data});
        out.push_str(&line.to_string());
        out.push('\n');
        parent = Some(id);
    }
    out.into_bytes()
}

/// Measures planning (and the context estimate alone) on the loaded session.
fn bench_plan(c: &mut Criterion) {
    let bytes = generate();
    let session = parse_session(Path::new("bench.jsonl"), &bytes).unwrap();
    let settings = Settings::new(estimate);
    let planned = plan(&session, &settings).unwrap();
    eprintln!(
        "plan: {} messages summarized, {} read / {} modified files, {} -> {} tokens kept",
        planned.summarized.len(),
        planned.read_files.len(),
        planned.modified_files.len(),
        planned.tokens_before,
        planned.tokens_kept
    );
    let mut group = c.benchmark_group("compact");
    group.sample_size(10);
    group.bench_function("plan_100k_events", |b| {
        b.iter(|| {
            black_box(
                plan(black_box(&session), &settings)
                    .unwrap()
                    .summarized
                    .len(),
            )
        });
    });
    group.bench_function("estimate_context_100k_events", |b| {
        b.iter(|| black_box(estimate_context(black_box(&session), estimate)));
    });
    group.finish();
}

criterion_group!(benches, bench_plan);
criterion_main!(benches);
