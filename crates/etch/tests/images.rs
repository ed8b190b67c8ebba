//! Images (issue 34) through the real binary against the fake model
//! server, whose request invariants check every image's shape and type
//! as providers do: `read` returns an image to each provider in its own
//! shape; `-p --image` attaches one; the log stays small while the bytes
//! live in the session's assets, and a resume sends the same bytes again
//! (a lost file becomes a marker, never a failure); a model without
//! vision gets a marker; RPC takes Pi's `images` (with `steer` and
//! `follow_up` too, queued with their text during a run); a prompt's image
//! reaches each provider in its shape; `etch show` and
//! `export html` carry them. Fixtures are written by the test with the
//! `image` crate's encoders (through `etch-image`).

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use etch_model::MediaType;
use etch_test_support::{
    FakeServer, Reply, anthropic_text, anthropic_tool_uses, chat_text, chat_tool_call,
    responses_function_calls, responses_text,
};
use serde_json::{Value, json};
use support::rpc::RpcClient;
use support::{Workspace, jsonl, model_args};

/// Writes an image of `width` × `height` in `media_type` at `name`.
fn write_image(
    ws: &Workspace,
    name: &str,
    width: u32,
    height: u32,
    media_type: MediaType,
) -> Vec<u8> {
    let bytes = etch_image::sample(width, height, media_type).unwrap();
    std::fs::write(ws.path().join(name), &bytes).unwrap();
    bytes
}

/// `bytes` as a data URL of `mime`.
fn data_url(bytes: &[u8], media_type: MediaType) -> String {
    etch_model::Image::new(bytes.to_vec(), media_type, 1, 1)
        .data_url()
        .unwrap()
}

/// The parts of `message` of type `kind`.
fn parts_of(message: &Value, kind: &str) -> Vec<Value> {
    message["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p["type"] == kind)
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The last message of request `n` that `server` got.
fn last_message(server: &FakeServer, n: usize) -> Value {
    let request = server.requests()[n].json();
    request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

/// The URL of the first `image_url` part of `message`.
fn image_url(message: &Value) -> Value {
    parts_of(message, "image_url")
        .first()
        .map_or(Value::Null, |p| p["image_url"]["url"].clone())
}

/// The files of the only session's assets directory.
fn assets(ws: &Workspace) -> Vec<std::path::PathBuf> {
    let dir = ws.only_session().with_extension("assets");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Chat Completions: the tool message is text; the image follows the
/// results as one user message, as Pi sends it.
#[test]
fn read_returns_an_image_over_chat_completions() {
    let ws = Workspace::new();
    let bytes = write_image(&ws, "shot.png", 64, 32, MediaType::Png);
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_call("c1", "read", r#"{"path":"shot.png"}"#)),
        Reply::sse(chat_text("A gradient.")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "what is in shot.png?"], &[]);
    assert_eq!(out.ok(), "A gradient.\n");
    let second = server.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["content"], "Read image file [image/png], 64x32");
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(
        last["content"],
        json!([
            {"type": "text", "text": "Attached image(s) from tool result:"},
            {"type": "image_url", "image_url": {"url": data_url(&bytes, MediaType::Png)}}
        ])
    );
    // The log names the image; the bytes are in the assets, private.
    let result = jsonl(&ws.only_session())
        .into_iter()
        .find(|e| e["type"] == "message.tool")
        .unwrap();
    let part = &result["data"]["content"][1];
    assert_eq!(part["type"], "image");
    assert_eq!(part["mediaType"], "image/png");
    assert_eq!(
        (part["width"].as_u64(), part["height"].as_u64()),
        (Some(64), Some(32))
    );
    let files = assets(&ws);
    assert_eq!(files.len(), 1);
    assert_eq!(std::fs::read(&files[0]).unwrap(), bytes);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&files[0]).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

/// Responses: the image goes inside the `function_call_output` as an
/// `input_image` part with a string URL.
#[test]
fn read_returns_an_image_over_responses() {
    let ws = Workspace::new();
    let bytes = write_image(&ws, "photo.jpg", 40, 30, MediaType::Jpeg);
    let server = FakeServer::start(vec![
        Reply::sse(responses_function_calls(&[(
            "c1",
            "read",
            r#"{"path":"photo.jpg"}"#,
        )])),
        Reply::sse(responses_text("A photo.")),
    ])
    .unwrap();
    let out = ws.run_model(
        &server,
        &["--openai-api", "responses", "-p", "look at photo.jpg"],
        &[],
    );
    assert_eq!(out.ok(), "A photo.\n");
    let second = server.requests()[1].json();
    let output = second["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap()["output"]
        .clone();
    assert_eq!(
        output,
        json!([
            {"type": "input_text", "text": "Read image file [image/jpeg], 40x30"},
            {"type": "input_image", "detail": "auto", "image_url": data_url(&bytes, MediaType::Jpeg)}
        ])
    );
}

/// Anthropic: a base64 `image` block inside the `tool_result`.
#[test]
fn read_returns_an_image_over_anthropic() {
    let ws = Workspace::new();
    let bytes = write_image(&ws, "anim.gif", 20, 10, MediaType::Gif);
    let server = FakeServer::start(vec![
        Reply::sse(anthropic_tool_uses(&[(
            "toolu_1",
            "read",
            r#"{"path":"anim.gif"}"#,
        )])),
        Reply::sse(anthropic_text("A GIF.")),
    ])
    .unwrap();
    let base = server.url();
    let out = ws.run(&[
        "--provider",
        "anthropic",
        "--base-url",
        &base,
        "--api-key",
        "ak",
        "-p",
        "see anim.gif",
    ]);
    assert_eq!(out.ok(), "A GIF.\n");
    let last = last_message(&server, 1);
    let result = &last["content"][0];
    assert_eq!(result["type"], "tool_result");
    let encoded = etch_model::Image::new(bytes, MediaType::Gif, 1, 1)
        .base64()
        .unwrap();
    assert_eq!(
        result["content"],
        json!([
            {"type": "text", "text": "Read image file [image/gif], 20x10"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": encoded}}
        ])
    );
}

/// `-p --image`: the prompt carries the image (resized to the long
/// edge); the log stays small however large the image; a resume sends
/// the same bytes again; with the file lost, a marker goes instead and
/// the run goes on.
#[test]
fn prompt_images_are_stored_beside_the_log_and_sent_again() {
    let ws = Workspace::new();
    write_image(&ws, "big.png", 3000, 2000, MediaType::Png);
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("first")),
        Reply::sse(chat_text("second")),
        Reply::sse(chat_text("third")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "what is this?", "--image", "big.png"], &[]);
    assert_eq!(out.ok(), "first\n");
    let user = |n: usize| -> Value {
        server.requests()[n].json()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rfind(|m| m["role"] == "user")
            .cloned()
            .unwrap()
    };
    let first = user(0);
    // The project context leads; then the prompt and its image.
    assert_eq!(
        parts_of(&first, "text").last().unwrap()["text"],
        "what is this?"
    );
    let url = image_url(&first).as_str().unwrap().to_owned();
    let log = ws.only_session();
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(
        size < 16 * 1024,
        "the log holds no image bytes: {size} bytes"
    );
    let part = jsonl(&log)
        .into_iter()
        .find(|e| e["type"] == "message.user")
        .unwrap()["data"]["content"][1]
        .clone();
    assert_eq!(
        (part["width"].as_u64(), part["height"].as_u64()),
        (Some(2000), Some(1333))
    );
    // A PNG that stays over the size cap once resized goes as JPEG.
    let media = part["mediaType"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("data:{media};base64,")),
        "{url:.60}"
    );
    let id = jsonl(&log)[0]["data"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = ws.run_model(&server, &["resume", &id, "-p", "and now?"], &[]);
    assert_eq!(out.ok(), "second\n");
    let again = server.requests()[1].json();
    let resent = again["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .map(image_url)
        .unwrap();
    assert_eq!(resent, url, "the same bytes go again");
    for file in assets(&ws) {
        std::fs::remove_file(file).unwrap();
    }
    let out = ws.run_model(&server, &["resume", &id, "-p", "still there?"], &[]);
    assert_eq!(out.ok(), "third\n");
    assert!(
        out.stderr().contains("is not sent again"),
        "{}",
        out.stderr()
    );
    let third = server.requests()[2].json();
    let marker = third["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .map(|m| parts_of(m, "text").last().unwrap().clone())
        .unwrap();
    assert_eq!(
        marker["text"],
        format!(
            "[image omitted ({media} 2000x1333): its file is missing from the session's assets]"
        )
    );
}

/// A model configured without vision never receives image bytes.
#[test]
fn a_model_without_vision_gets_a_marker() {
    let ws = Workspace::new();
    ws.user_config("[provider]\nvision = false\n");
    write_image(&ws, "shot.webp", 16, 16, MediaType::Webp);
    let server = FakeServer::start(vec![
        Reply::sse(chat_tool_call("c1", "read", r#"{"path":"shot.webp"}"#)),
        Reply::sse(chat_text("I cannot see it.")),
    ])
    .unwrap();
    let out = ws.run_model(&server, &["-p", "look", "--image", "shot.webp"], &[]);
    assert_eq!(out.ok(), "I cannot see it.\n");
    for request in server.requests() {
        let body = request.body_text();
        assert!(!body.contains("image_url"), "no image bytes: {body:.300}");
        assert!(!body.contains("base64"), "no image bytes: {body:.300}");
    }
    let second = server.requests()[1].json();
    let tool = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(
        tool["content"],
        "Read image file [image/webp], 16x16\n[image omitted (image/webp 16x16): this model does not take images (vision = false in its configuration)]"
    );
}

/// Bad `--image` files are usage errors naming the file and what is
/// wrong, before any request.
#[test]
fn bad_image_flags_are_refused() {
    let ws = Workspace::new();
    std::fs::write(ws.path().join("notes.png"), "just some notes\n").unwrap();
    let server = FakeServer::start(vec![]).unwrap();
    let out = ws.run_model(&server, &["-p", "x", "--image", "notes.png"], &[]);
    assert_eq!(out.code(), 2, "{}", out.stderr());
    assert!(
        out.stderr()
            .contains("--image: image notes.png: it is not a PNG, JPEG, GIF or WebP image"),
        "{}",
        out.stderr()
    );
    let out = ws.run_model(&server, &["-p", "x", "--image", "missing.png"], &[]);
    assert_eq!(out.code(), 2);
    assert!(
        out.stderr().contains("cannot read image missing.png"),
        "{}",
        out.stderr()
    );
    let out = ws.run(&["--image", "notes.png", "rpc"]);
    assert_eq!(out.code(), 2);
    assert!(
        out.stderr().contains("etch rpc does not take --image"),
        "{}",
        out.stderr()
    );
    assert!(server.requests().is_empty());
}

/// RPC `prompt` takes Pi's `images`; bad ones are refused in the
/// response, naming the image.
#[test]
fn rpc_prompts_take_images() {
    let ws = Workspace::new();
    let bytes = etch_image::sample(30, 20, MediaType::Png).unwrap();
    let encoded = etch_model::Image::new(bytes.clone(), MediaType::Png, 1, 1)
        .base64()
        .unwrap();
    let server = FakeServer::start(vec![Reply::sse(chat_text("seen"))]).unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut rpc = RpcClient::start(&ws, &args, &[]);
    let refused = rpc.call(&json!({
        "id": "bad", "type": "prompt", "message": "x",
        "images": [{"type": "image", "data": "!!", "mimeType": "image/png"}]
    }));
    assert_eq!(refused["success"], false, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("image #1: `data` is not base64"),
        "{refused}"
    );
    let svg = rpc.call(&json!({
        "id": "svg", "type": "prompt", "message": "x",
        "images": [{"type": "image", "data": encoded, "mimeType": "image/svg+xml"}]
    }));
    assert!(
        svg["error"].as_str().unwrap().contains("is not taken"),
        "{svg}"
    );
    let ok = rpc.call(&json!({
        "id": "p1", "type": "prompt", "message": "what is this?",
        "images": [{"type": "image", "data": encoded, "mimeType": "image/png"}]
    }));
    assert_eq!(ok["success"], true, "{ok}");
    rpc.event("agent_end");
    let user = last_message(&server, 0);
    assert_eq!(image_url(&user), data_url(&bytes, MediaType::Png));
    // The message events carry the image by reference.
    let messages = rpc.call(&json!({"id": "m", "type": "get_messages"}));
    let text = messages.to_string();
    assert!(text.contains("\"type\":\"image\""), "{text:.400}");
    assert!(!text.contains(&encoded[..40]), "no bytes in events");
    let _ = rpc.finish();
}

/// Pi's client sends images with `steer` and `follow_up` too: a steer
/// during a run is queued with its image and reaches the model with it;
/// with no run active, a follow-up starts one that carries its image.
#[test]
fn steer_and_follow_up_carry_images() {
    let ws = Workspace::new();
    let gates = tempfile::tempdir().unwrap();
    let gate = gates.path().join("go");
    let bytes = etch_image::sample(30, 20, MediaType::Png).unwrap();
    let encoded = etch_model::Image::new(bytes.clone(), MediaType::Png, 1, 1)
        .base64()
        .unwrap();
    let server = FakeServer::start(vec![
        support::held("held answer", &gate),
        Reply::sse(chat_text("steered")),
        Reply::sse(chat_text("seen")),
    ])
    .unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut rpc = RpcClient::start(&ws, &args, &[]);
    let images = json!([{"type": "image", "data": encoded, "mimeType": "image/png"}]);
    let started = rpc.call(&json!({"id": "p", "type": "prompt", "message": "go"}));
    assert_eq!(started["success"], true, "{started}");
    let bad = rpc.call(&json!({
        "id": "b", "type": "steer", "message": "and this",
        "images": [{"type": "image", "data": "!!", "mimeType": "image/png"}]
    }));
    assert_eq!(bad["success"], false, "a bad image is refused: {bad}");
    let queued = rpc.call(&json!({
        "id": "s", "type": "steer", "message": "and this", "images": images
    }));
    assert_eq!(queued["success"], true, "{queued}");
    // What is queued may become one message: all of it counts against
    // the 20 images of one request.
    let twenty = Value::Array(vec![images[0].clone(); 20]);
    let over = rpc.call(&json!({
        "id": "o", "type": "follow_up", "message": "and all these", "images": twenty
    }));
    assert_eq!(over["success"], false, "{over}");
    assert!(
        over["error"]
            .as_str()
            .unwrap()
            .contains("1 are queued already"),
        "{over}"
    );
    std::fs::write(&gate, "").unwrap();
    rpc.event("agent_end");
    let steered = last_message(&server, 1);
    assert!(steered.to_string().contains("and this"), "{steered}");
    assert_eq!(image_url(&steered), data_url(&bytes, MediaType::Png));
    let follow = rpc.call(&json!({
        "id": "f", "type": "follow_up", "message": "what is this?", "images": images
    }));
    assert_eq!(follow["success"], true, "{follow}");
    rpc.event("agent_end");
    let user = last_message(&server, 2);
    assert_eq!(image_url(&user), data_url(&bytes, MediaType::Png));
    let _ = rpc.finish();
}

/// `-p --image` over Responses (an `input_image` in the user message)
/// and Anthropic (a base64 `image` block in it).
#[test]
fn prompt_images_reach_responses_and_anthropic() {
    let ws = Workspace::new();
    let bytes = write_image(&ws, "shot.png", 24, 16, MediaType::Png);
    let server = FakeServer::start(vec![Reply::sse(responses_text("seen"))]).unwrap();
    let out = ws.run_model(
        &server,
        &[
            "--openai-api",
            "responses",
            "-p",
            "what is this?",
            "--image",
            "shot.png",
        ],
        &[],
    );
    assert_eq!(out.ok(), "seen\n");
    let input = server.requests()[0].json()["input"].clone();
    let user = input
        .as_array()
        .unwrap()
        .iter()
        .rfind(|i| i["role"] == "user")
        .unwrap()
        .clone();
    let image = json!({
        "type": "input_image", "detail": "auto",
        "image_url": data_url(&bytes, MediaType::Png)
    });
    assert!(
        user["content"].as_array().unwrap().contains(&image),
        "{user}"
    );

    let server = FakeServer::start(vec![Reply::sse(anthropic_text("seen too"))]).unwrap();
    let base = server.url();
    let out = ws.run(&[
        "--provider",
        "anthropic",
        "--base-url",
        &base,
        "--api-key",
        "ak",
        "-p",
        "and this?",
        "--image",
        "shot.png",
    ]);
    assert_eq!(out.ok(), "seen too\n");
    let user = last_message(&server, 0);
    let encoded = etch_model::Image::new(bytes, MediaType::Png, 1, 1)
        .base64()
        .unwrap();
    let block = json!({
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": encoded}
    });
    assert!(
        user["content"].as_array().unwrap().contains(&block),
        "{user}"
    );
}

/// Compaction keeps what it keeps by reference: a kept turn's image is
/// sent again, whole, after the summary.
#[test]
fn a_kept_image_survives_compaction() {
    let ws = Workspace::new();
    // The last exchange kept: the prompt with its image and the answer.
    ws.user_config("[context]\nkeep_recent_tokens = 0\n[session]\nkeep_messages = 2\n");
    let bytes = write_image(&ws, "shot.png", 24, 16, MediaType::Png);
    // No usage chunks: the fake's fixed token counts would make the
    // history look tiny, and the estimate measures the messages instead.
    let unmetered = |text: &str| {
        let mut frames = chat_text(text);
        frames.retain(|f| !f.contains("\"prompt_tokens\""));
        Reply::sse(frames)
    };
    let server = FakeServer::start(vec![
        unmetered("first answer"),
        unmetered("a picture"),
        Reply::sse(chat_text("## Goal\nLook at a picture.")),
        Reply::sse(chat_text("still the picture")),
    ])
    .unwrap();
    // Long enough that a summary is smaller than what it replaces.
    let first = "a first question about the whole codebase ".repeat(40);
    ws.run_model(&server, &["-p", &first], &[]).ok();
    let log = ws.only_session();
    let id = jsonl(&log)[0]["data"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = ws.run_model(
        &server,
        &["resume", &id, "-p", "what is this?", "--image", "shot.png"],
        &[],
    );
    assert_eq!(out.ok(), "a picture\n");
    let out = ws.run_model(&server, &["compact", "--session", &id], &[]);
    assert!(
        out.ok().starts_with("compacted session"),
        "{}",
        out.stdout()
    );
    let out = ws.run_model(&server, &["resume", &id, "-p", "and now?"], &[]);
    assert_eq!(out.ok(), "still the picture\n");
    let request = server.requests()[3].json();
    let messages = request["messages"].as_array().unwrap();
    let text = serde_json::to_string(messages).unwrap();
    assert!(
        text.contains("Look at a picture."),
        "the summary: {text:.600}"
    );
    assert!(
        !text.contains("a first question"),
        "summarized: {text:.600}"
    );
    let kept = messages
        .iter()
        .find(|m| m["role"] == "user" && !parts_of(m, "image_url").is_empty())
        .unwrap_or_else(|| {
            panic!(
                "no image kept: {}",
                &text[text.len().saturating_sub(1500)..]
            )
        });
    assert_eq!(image_url(kept), data_url(&bytes, MediaType::Png));
}

/// `etch show` prints the marker and the file; `export html` embeds the
/// picture.
#[test]
fn show_and_export_carry_images() {
    let ws = Workspace::new();
    let bytes = write_image(&ws, "shot.png", 24, 12, MediaType::Png);
    let server = FakeServer::start(vec![Reply::sse(chat_text("ok"))]).unwrap();
    ws.run_model(&server, &["-p", "see", "--image", "shot.png"], &[])
        .ok();
    let shown = ws.run(&["show"]).ok();
    let file = &assets(&ws)[0];
    assert!(
        shown.contains(&format!("[image image/png 24x12: {}]", file.display())),
        "{shown}"
    );
    let page = ws.run(&["export", "--format", "html", "-o", "-"]).ok();
    assert!(
        page.contains(&format!("src=\"{}\"", data_url(&bytes, MediaType::Png))),
        "{page:.600}"
    );
}
