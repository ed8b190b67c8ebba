//! The model stream decoders: `sse_frames` (the `text/event-stream`
//! parser alone) and `sse_chat`, `sse_responses`, `sse_anthropic` (the
//! parser and each provider's decoder). The input's first byte picks a
//! chunking of the rest; the same bytes in one piece and in those
//! chunks must give the same frames, the same events and the same
//! error.

use etch_model::StreamEvent;
use etch_provider::driver::StreamDecoder;
use etch_provider::sse::{SseFrame, SseParser};

use crate::chunks;

/// A small frame limit, so the limit's own path is reached.
const MAX_FRAME: usize = 64 * 1024;

/// The frames of `pieces`, and whether the frame limit was hit.
fn frames(pieces: &[&[u8]]) -> (Vec<SseFrame>, bool) {
    let mut parser = SseParser::with_max_frame(MAX_FRAME);
    let mut out = Vec::new();
    for piece in pieces {
        if parser.push(piece, &mut out).is_err() {
            return (out, true);
        }
    }
    let over = parser.finish(&mut out).is_err();
    (out, over)
}

/// `sse_frames`: the parser alone.
pub fn check_frames(data: &[u8]) {
    let (sizes, body) = chunks::split(data);
    let whole = frames(&[body]);
    let cut = frames(&chunks::pieces(body, &sizes));
    assert_eq!(whole, cut, "the frames depend on the chunking");
}

/// What a decoder made of a stream: its events, and its error's text.
type Decoded = (Vec<StreamEvent>, Option<String>);

/// Runs `decoder` over the frames of `pieces`.
fn decode<D: StreamDecoder>(mut decoder: D, pieces: &[&[u8]]) -> Decoded {
    let (frames, over) = frames(pieces);
    let mut out = Vec::new();
    for frame in &frames {
        if let Err(e) = decoder.frame(frame, &mut out) {
            return (out, Some(e.to_string()));
        }
    }
    if over {
        return (out, Some("frame too large".to_owned()));
    }
    match decoder.finish(&mut out) {
        Ok(()) => (out, None),
        Err(e) => (out, Some(e.to_string())),
    }
}

/// The same stream whole and in the input's chunking.
fn same<D: StreamDecoder>(new: fn() -> D, data: &[u8]) {
    let (sizes, body) = chunks::split(data);
    let whole = decode(new(), &[body]);
    let cut = decode(new(), &chunks::pieces(body, &sizes));
    assert_eq!(whole, cut, "the events depend on the chunking");
}

/// `sse_chat`: Chat Completions.
pub fn check_chat(data: &[u8]) {
    same(etch_provider::openai::chat_decode::ChatDecoder::new, data);
}

/// `sse_responses`: Responses.
pub fn check_responses(data: &[u8]) {
    same(
        etch_provider::openai::responses_decode::ResponsesDecoder::new,
        data,
    );
}

/// `sse_anthropic`: Anthropic Messages.
pub fn check_anthropic(data: &[u8]) {
    same(etch_provider::anthropic::AnthropicDecoder::new, data);
}

/// `responses_ws`: the input cut at 0xFF bytes into WebSocket text
/// messages, each one Responses event as `responses_ws` hands them to
/// the decoder; the same messages sent as server-sent events give the
/// same events and error up to the response's end.
pub fn check_responses_ws(data: &[u8]) {
    use etch_provider::openai::responses_decode::ResponsesDecoder;
    let messages: Vec<&str> = data
        .split(|&b| b == 0xFF)
        .filter_map(|m| std::str::from_utf8(m).ok())
        // A carriage return ends a line in SSE and nothing in a message.
        .filter(|m| !m.contains('\r'))
        .collect();
    let run = |texts: &mut dyn Iterator<Item = String>| -> Decoded {
        let mut decoder = ResponsesDecoder::new();
        let mut out = Vec::new();
        for text in texts {
            if let Err(e) = decoder.frame(None, &text, &mut out) {
                return (out, Some(e.to_string()));
            }
            if decoder.is_finished() {
                break;
            }
        }
        (out, None)
    };
    let over_ws = run(&mut messages.iter().map(|m| (*m).to_owned()));
    let mut body = String::new();
    for message in &messages {
        for line in message.split('\n') {
            body.push_str("data: ");
            body.push_str(line);
            body.push('\n');
        }
        body.push('\n');
    }
    let (frames, _) = frames(&[body.as_bytes()]);
    let over_sse = run(&mut frames.into_iter().map(|f| f.data));
    assert_eq!(over_ws, over_sse, "WebSocket and SSE disagree");
}
