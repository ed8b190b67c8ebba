//! The wire loop against the seed's exchanges.

use serde_json::{Value, json};

use super::*;

/// A plugin with one tool that echoes, fails on request, or panics.
fn plugin() -> Plugin {
    Plugin::new("test").tool(
        Tool::new(
            "say",
            "Say the text.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            |call| match call.str("text")? {
                "fail" => Err("asked to fail".into()),
                "panic" => panic!("boom"),
                text => Ok(format!("{text} ({})", call.call_id)),
            },
        )
        .parallel_safety(ParallelSafety::ReadOnly),
    )
}

/// Runs the loop over `lines` and returns the responses.
fn exchange(lines: &[Value]) -> Vec<Value> {
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut output = Vec::new();
    serve(&plugin(), input.as_bytes(), &mut output).unwrap();
    String::from_utf8(output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn initialize_then_calls() {
    let responses = exchange(&[
        json!({"id":"1","method":"initialize","params":{"protocolVersion":"0.1.0"}}),
        json!({"id":"2","method":"tool.execute","params":{"callID":"c1","name":"say","arguments":{"text":"hi"}}}),
        json!({"id":"3","method":"tool.execute","params":{"callID":"c2","name":"say","arguments":{"text":"fail"}}}),
        json!({"id":"4","method":"tool.execute","params":{"callID":"c3","name":"say","arguments":{"text":"panic"}}}),
        json!({"id":"5","method":"tool.execute","params":{"callID":"c4","name":"nope","arguments":{}}}),
        json!({"id":"6","method":"shutdown"}),
    ]);
    assert_eq!(responses[0]["id"], "1");
    assert_eq!(responses[0]["result"]["name"], "test");
    assert_eq!(
        responses[0]["result"]["tools"][0]["parallelSafety"],
        "read_only"
    );
    assert_eq!(
        responses[1],
        json!({"id":"2","result":{"content":[{"type":"text","text":"hi (c1)"}]}})
    );
    assert_eq!(responses[2]["result"]["isError"], true);
    assert_eq!(
        responses[2]["result"]["content"][0]["text"],
        "asked to fail"
    );
    assert_eq!(
        responses[3]["result"]["content"][0]["text"],
        "tool say panicked"
    );
    assert_eq!(responses[4]["error"]["message"], "test has no tool nope");
    assert_eq!(responses[5]["error"]["message"], "unknown method shutdown");
}

#[test]
fn bad_lines_are_skipped_and_blank_lines_ignored() {
    let input = "not json\n\n{\"id\":\"1\",\"method\":\"initialize\"}\n";
    let mut output = Vec::new();
    serve(&plugin(), input.as_bytes(), &mut output).unwrap();
    let text = String::from_utf8(output).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains("\"id\":\"1\""));
}
