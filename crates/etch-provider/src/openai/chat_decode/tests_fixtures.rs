//! Fixture tests: raw llama-server exchanges recorded under
//! `tests/fixtures/llama-server` (copied from the team's shared recordings) are run through [`SseParser`] and
//! [`ChatDecoder`] (streams) or [`decode_error_body`] (error replies) and
//! checked against a naive `serde_json` reading. They are skipped, with a
//! note, when the fixtures are not checked out; they must not depend on the
//! decoder's internals beyond [`map_finish_reason`].

use std::path::{Path, PathBuf};

use etch_model::{ErrorKind, ModelError, StopReason, StreamEvent, Usage};
use serde_json::Value;

use super::{ChatDecoder, decode_error_body, map_finish_reason};
use crate::sse::{SseFrame, SseParser};

/// A raw recorded HTTP response.
struct Recorded {
    /// File name, for messages.
    name: String,
    /// HTTP status code.
    status: u16,
    /// Body bytes, de-chunked if needed.
    body: Vec<u8>,
}

/// The fixture root, checked into the repository so the vectors always
/// run (a missing directory is a failure, not a skip).
fn fixture_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llama-server");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    dir
}

/// Every fixture file whose name matches `wanted`, across model folders,
/// sorted.
fn fixture_files(root: &Path, wanted: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for folder in std::fs::read_dir(root).unwrap() {
        let folder = folder.unwrap().path();
        if !folder.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&folder).unwrap() {
            let path = file.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.extension().is_some_and(|e| e == "resp") && wanted(&name) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Splits a `.resp` file into status and body, de-chunking the body only
/// if it really is in chunked framing (the recorder already de-chunked
/// these, though the header still says `chunked`).
fn read_recorded(path: &Path) -> Recorded {
    let raw = std::fs::read(path).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let body = raw[split + 4..].to_vec();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked && looks_chunked(&body) {
        dechunk(&body)
    } else {
        body
    };
    let name = format!(
        "{}/{}",
        path.parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy(),
        path.file_name().unwrap().to_string_lossy()
    );
    Recorded { name, status, body }
}

/// Whether the body starts with a hex chunk-size line.
fn looks_chunked(body: &[u8]) -> bool {
    let Some(end) = body.windows(2).position(|w| w == b"\r\n") else {
        return false;
    };
    let size = body[..end].split(|b| *b == b';').next().unwrap_or_default();
    !size.is_empty() && size.iter().all(u8::is_ascii_hexdigit)
}

/// Removes chunked transfer framing.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let end = body.windows(2).position(|w| w == b"\r\n").unwrap();
        let size_text = String::from_utf8_lossy(&body[..end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        body = &body[end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

/// Runs a body through `SseParser` (in chunks of the given sizes, cycled)
/// and `ChatDecoder`.
fn decode_body(body: &[u8], sizes: &[usize]) -> (Vec<StreamEvent>, Result<(), ModelError>) {
    let mut parser = SseParser::new();
    let mut decoder = ChatDecoder::new();
    let mut frames = Vec::new();
    let mut events = Vec::new();
    let mut rest = body;
    let mut feed =
        |frames: &mut Vec<SseFrame>, events: &mut Vec<StreamEvent>| -> Result<(), ModelError> {
            for frame in frames.drain(..) {
                decoder.frame(&frame.data, events)?;
            }
            Ok(())
        };
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (now, later) = rest.split_at((*size).min(rest.len()));
        rest = later;
        parser.push(now, &mut frames).unwrap();
        if let Err(err) = feed(&mut frames, &mut events) {
            return (events, Err(err));
        }
    }
    parser.finish(&mut frames).unwrap();
    assert_eq!(parser.bytes_read(), body.len() as u64);
    if let Err(err) = feed(&mut frames, &mut events) {
        return (events, Err(err));
    }
    let result = decoder.finish(&mut events);
    (events, result)
}

/// What a stream decoded to, folded from its events.
#[derive(Debug, Default, PartialEq)]
struct Folded {
    /// All text deltas joined.
    text: String,
    /// Calls as (id, name, joined arguments), by index.
    calls: Vec<(String, String, String)>,
    /// Usage events seen.
    usage: Vec<Usage>,
    /// The stop reason of `Done`.
    done: Option<StopReason>,
}

/// Folds events, checking they are well formed: deltas only inside open
/// blocks, every started call ended once, `Usage` right before `Done`,
/// `Done` last.
fn fold(events: &[StreamEvent]) -> Folded {
    let mut folded = Folded::default();
    let mut text_open = false;
    let mut ended = Vec::new();
    for (i, event) in events.iter().enumerate() {
        assert!(folded.done.is_none(), "event after Done: {event:?}");
        match event {
            StreamEvent::TextStart => {
                assert!(!text_open);
                text_open = true;
            }
            StreamEvent::TextEnd => {
                assert!(text_open);
                text_open = false;
            }
            StreamEvent::TextDelta(t) => {
                assert!(text_open && !t.is_empty());
                folded.text.push_str(t);
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                assert_eq!(*index, folded.calls.len());
                assert!(!id.is_empty());
                folded.calls.push((id.clone(), name.clone(), String::new()));
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                assert!(!ended.contains(index) && !arguments.is_empty());
                folded.calls[*index].2.push_str(arguments);
            }
            StreamEvent::ToolCallEnd { index } => {
                assert!(*index < folded.calls.len() && !ended.contains(index));
                ended.push(*index);
            }
            StreamEvent::Usage(usage) => {
                assert!(matches!(events.get(i + 1), Some(StreamEvent::Done { .. })));
                folded.usage.push(*usage);
            }
            StreamEvent::Done { stop_reason } => folded.done = Some(*stop_reason),
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert!(!text_open);
    assert_eq!(ended.len(), folded.calls.len());
    folded
}

/// An independent, naive reading of an SSE body with `serde_json::Value`
/// (the fixtures use `\n\n` between frames): text, calls by wire index,
/// last finish_reason, whether usage came.
fn oracle(body: &[u8]) -> (String, Vec<(String, String)>, Option<String>, bool) {
    let body = String::from_utf8(body.to_vec()).unwrap();
    let mut text = String::new();
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut finish = None;
    let mut usage = false;
    for frame in body.split("\n\n").filter(|f| !f.trim().is_empty()) {
        let data = frame.strip_prefix("data: ").unwrap();
        if data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(data).unwrap();
        usage |= chunk.get("usage").is_some_and(|u| !u.is_null());
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        if let Some(content) = choice["delta"]["content"].as_str() {
            text.push_str(content);
        }
        for call in choice["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let index = usize::try_from(call["index"].as_u64().unwrap()).unwrap();
            if calls.len() <= index {
                calls.resize(index + 1, Default::default());
            }
            calls[index]
                .0
                .push_str(call["function"]["name"].as_str().unwrap_or(""));
            calls[index]
                .1
                .push_str(call["function"]["arguments"].as_str().unwrap_or(""));
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            finish = Some(reason.to_owned());
        }
    }
    (text, calls, finish, usage)
}

/// Whether the request next to a `.resp` asked for stream usage.
fn asked_for_usage(resp: &Path) -> bool {
    let name = resp
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace(".resp", ".req.json");
    let request: Value =
        serde_json::from_slice(&std::fs::read(resp.with_file_name(name)).unwrap()).unwrap();
    request["stream_options"]["include_usage"] == Value::Bool(true)
}

/// Every recorded stream decodes, in odd-sized chunks, to the same text,
/// calls, finish reason and usage as a naive independent reading, with
/// well-formed events, and meets the case's own expectations.
#[test]
fn fixture_streams() {
    let root = fixture_dir();
    let files = fixture_files(&root, |name| {
        name.contains("stream") && !name.contains("nonstream")
    });
    assert!(files.len() >= 10, "too few stream fixtures: {files:?}");
    let mut calls_seen = 0;
    for path in &files {
        let recorded = read_recorded(path);
        let name = recorded.name.as_str();
        if recorded.status >= 400 {
            // Errors come as plain JSON even for stream requests; the HTTP
            // layer sends those through `decode_error_body`.
            assert!(recorded.body.starts_with(b"{"), "{name}");
            let err = decode_error_body(recorded.status, &String::from_utf8_lossy(&recorded.body));
            if name.contains("ctx_overflow") {
                assert_eq!(err.kind, ErrorKind::ContextOverflow, "{name}");
            }
            continue;
        }
        let (events, result) = decode_body(&recorded.body, &[1, 7, 64, 3, 500, 13]);
        result.unwrap_or_else(|err| panic!("{name}: {err:?}"));
        let (whole, _) = decode_body(&recorded.body, &[usize::MAX]);
        assert_eq!(events, whole, "{name}: chunking changed the events");
        let folded = fold(&events);
        let (text, calls, finish, usage) = oracle(&recorded.body);
        assert_eq!(folded.text, text, "{name}");
        let names_args: Vec<_> = folded
            .calls
            .iter()
            .map(|(_, n, a)| (n.clone(), a.clone()))
            .collect();
        assert_eq!(names_args, calls, "{name}");
        let finish = finish.unwrap_or_else(|| panic!("{name}: no finish_reason"));
        let expected_stop = if calls.is_empty() {
            map_finish_reason(&finish)
        } else {
            StopReason::ToolUse
        };
        assert_eq!(folded.done, Some(expected_stop), "{name}");
        assert_eq!(folded.usage.len(), usize::from(usage), "{name}");
        assert_eq!(
            usage,
            asked_for_usage(path),
            "{name}: usage iff include_usage"
        );
        if let Some(usage) = folded.usage.first() {
            assert!(usage.input_tokens > 0 && usage.output_tokens > 0, "{name}");
            assert_eq!(
                usage.total_tokens,
                usage.input_tokens + usage.output_tokens,
                "{name}"
            );
        }
        assert!(
            !folded.text.is_empty() || !folded.calls.is_empty(),
            "{name}: no output"
        );
        if name.ends_with("stream_plain.resp") {
            assert!(!folded.text.is_empty(), "{name}");
            assert_eq!(folded.done, Some(StopReason::Stop), "{name}");
        }
        if name.ends_with("stream_length.resp") {
            assert_eq!(folded.done, Some(StopReason::Length), "{name}");
        }
        if name.ends_with("stream_no_usage.resp") {
            assert!(folded.usage.is_empty(), "{name}");
        }
        if name.contains("/llama-server.tools_") {
            if folded.calls.is_empty() {
                println!("note: {name}: this template made the model answer in text, no tool call");
                assert!(!folded.text.is_empty(), "{name}");
            }
            for (id, tool, arguments) in &folded.calls {
                assert!(!id.is_empty() && !tool.is_empty(), "{name}");
                let parsed = serde_json::from_str::<Value>(arguments);
                if finish == "length" {
                    continue; // a call cut off by max_tokens, e.g. `{`
                }
                assert!(
                    parsed.is_ok_and(|v| v.is_object()),
                    "{name}: arguments {arguments:?}"
                );
            }
            calls_seen += folded.calls.len();
        }
        if name.ends_with("tools_parallel_stream.resp") && folded.calls.len() < 2 {
            println!(
                "note: {name}: the recorded server made {} call(s) despite parallel_tool_calls",
                folded.calls.len()
            );
        }
    }
    assert!(calls_seen > 0, "no fixture exercised tool calls");
}

/// Every `err_*` fixture: error statuses decode to the server's message
/// with the right kind; the ones the server accepted (200) are a normal
/// stream or answer.
#[test]
fn fixture_error_bodies() {
    let root = fixture_dir();
    let files = fixture_files(&root, |name| name.contains(".err_"));
    assert!(!files.is_empty());
    let mut errors = 0;
    for path in &files {
        let recorded = read_recorded(path);
        let name = recorded.name.as_str();
        let body = String::from_utf8_lossy(&recorded.body);
        if recorded.status < 400 {
            if body.starts_with("data:") {
                let (events, result) = decode_body(&recorded.body, &[5, 100]);
                result.unwrap_or_else(|err| panic!("{name}: {err:?}"));
                assert!(
                    matches!(events.last(), Some(StreamEvent::Done { .. })),
                    "{name}"
                );
            } else {
                let answer: Value = serde_json::from_str(&body).unwrap();
                assert!(answer["choices"].is_array(), "{name}");
            }
            println!(
                "note: {name}: the server accepted this request (HTTP {})",
                recorded.status
            );
            continue;
        }
        errors += 1;
        let err = decode_error_body(recorded.status, &body);
        let expected: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            err.message,
            expected["error"]["message"].as_str().unwrap(),
            "{name}"
        );
        let kind = if name.contains("ctx_overflow") {
            ErrorKind::ContextOverflow
        } else if recorded.status >= 500 {
            ErrorKind::Transient
        } else {
            ErrorKind::InvalidRequest
        };
        assert_eq!(err.kind, kind, "{name}");
    }
    assert!(errors >= 4, "too few error fixtures");
}
