//! Tests of single entries: Pi's wording for what it sends the model.

#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

/// Images are not read here.
fn no_images(_: &str, _: &str) -> Result<Image, String> {
    Err("not in this test".to_owned())
}

/// `bashExecution` reads as Pi's `bashExecutionToText`.
#[test]
fn bash_executions_read_as_pi_sends_them() {
    let text = |m: serde_json::Value| bash_execution_text(&m);
    assert_eq!(
        text(json!({"command": "true", "output": "", "exitCode": 0})),
        "Ran `true`\n(no output)"
    );
    assert_eq!(
        text(json!({"command": "sleep 9", "output": "x", "cancelled": true, "exitCode": 130})),
        "Ran `sleep 9`\n```\nx\n```\n\n(command cancelled)"
    );
    assert_eq!(
        text(
            json!({"command": "cat big", "output": "tail", "exitCode": 0, "truncated": true, "fullOutputPath": "/tmp/o.log"})
        ),
        "Ran `cat big`\n```\ntail\n```\n\n[Output truncated. Full output: /tmp/o.log]"
    );
}

/// A command kept out of the context stays out; other providers'
/// reasoning is display text only; a model change to a provider etch
/// does not have is kept opaque.
#[test]
fn what_pi_keeps_from_the_model_stays_out() {
    let excluded = entry(
        &json!({"type": "message", "message": {"role": "bashExecution", "command": "ls", "output": "", "excludeFromContext": true}}),
        &no_images,
    );
    assert_eq!(excluded.main.unwrap().kind, "pi.bash_execution");
    let google = entry(
        &json!({"type": "message", "message": {"role": "assistant", "provider": "google", "api": "google-generative-ai",
            "model": "g", "stopReason": "stop",
            "content": [{"type": "thinking", "thinking": "hm", "thinkingSignature": "abc"}, {"type": "text", "text": "ok"}]}}),
        &no_images,
    );
    assert_eq!(google.before[0].kind, "model.reasoning");
    assert!(google.after.iter().all(|o| o.kind != "model.provider_item"));
    let change = entry(
        &json!({"type": "model_change", "provider": "google", "modelId": "g"}),
        &no_images,
    );
    assert_eq!(change.main.unwrap().kind, "pi.model_change");
    let responses = entry(
        &json!({"type": "model_change", "provider": "openrouter", "modelId": "x"}),
        &no_images,
    );
    assert_eq!(responses.main.unwrap().kind, "pi.model_change");
}

/// A Responses reasoning item kept in the signature replays as itself.
#[test]
fn responses_reasoning_replays() {
    let item =
        json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "xyz", "summary": []});
    let converted = entry(
        &json!({"type": "message", "message": {"role": "assistant", "provider": "openai", "api": "openai-responses",
            "model": "gpt", "stopReason": "stop",
            "content": [{"type": "thinking", "thinking": "", "thinkingSignature": item.to_string()}, {"type": "text", "text": "ok"}]}}),
        &no_images,
    );
    let replay = converted
        .after
        .iter()
        .find(|o| o.kind == "model.provider_item")
        .unwrap();
    assert_eq!(replay.data["item"], item);
    assert_eq!(replay.data["api"], "responses");
    assert!(converted.before.is_empty(), "no text to show");
}
