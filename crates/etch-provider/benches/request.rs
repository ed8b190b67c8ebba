//! Request body serialization of a 200-message context (issue 4 target:
//! under 1 ms), through the same code path a real pass uses.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::missing_docs_in_private_items
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use etch_model::{
    ContentPart, Message, ModelRequest, RequestOptions, SystemLayer, ToolCall, ToolSpec,
};
use etch_provider::http::RetryPolicy;
use etch_provider::openai::chat::{ChatClient, ChatConfig};
use serde_json::json;

fn context() -> ModelRequest {
    let result = "    let total = items.iter().map(|x| x.weight).sum::<u64>();\n".repeat(16);
    let mut messages = Vec::with_capacity(200);
    for i in 0..50 {
        messages.push(Message::user_text(format!(
            "step {i}: look at src/file{i}.rs and fix the bug"
        )));
        messages.push(Message::Assistant {
            content: vec![
                ContentPart::text("Reading the file."),
                ContentPart::ToolCall(ToolCall {
                    id: format!("call_{i}"),
                    name: "read".into(),
                    arguments: json!({"path": format!("src/file{i}.rs")}),
                }),
            ],
        });
        messages.push(Message::Tool {
            tool_call_id: format!("call_{i}"),
            tool_name: "read".into(),
            content: vec![ContentPart::text(result.clone())],
            is_error: false,
        });
        messages.push(Message::Assistant {
            content: vec![ContentPart::text("Fixed the off-by-one in the loop bound.")],
        });
    }
    let tools = ["bash", "edit", "find", "grep", "ls", "read", "write"]
        .iter()
        .map(|n| ToolSpec {
            name: (*n).into(),
            description: "A built-in tool with a description of a few sentences for the model.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string", "description": "a path"}, "limit": {"type": "integer", "minimum": 1}}, "additionalProperties": false}),
        })
        .collect();
    ModelRequest {
        system: vec![SystemLayer {
            name: "base".into(),
            text: "You are an expert coding assistant.\n".repeat(40),
        }],
        messages,
        tools,
        options: RequestOptions::default(),
    }
}

fn bench_request(c: &mut Criterion) {
    let request = context();
    let client = ChatClient::new(ChatConfig {
        base_url: "http://127.0.0.1:1/v1".into(),
        api_key: Some("k".into()),
        model: "m".into(),
        stream_usage: true,
        retry: RetryPolicy::default(),
        idle_timeout: Duration::from_secs(60),
        limits: etch_provider::http::StreamLimits::default(),
    });
    c.bench_function("chat_request_200_messages", |b| {
        b.iter(|| black_box(client.pass(black_box(&request)).unwrap().body.len()));
    });
}

criterion_group!(benches, bench_request);
criterion_main!(benches);
