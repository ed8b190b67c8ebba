//! Chat Completions stream decoding (E-MOD-06, E-MOD-23): the `data` of each
//! SSE frame of a `/chat/completions` stream becomes provider-neutral
//! [`StreamEvent`]s, and error bodies become typed [`ModelError`]s.
//!
//! It owns the wire shapes of OpenAI-compatible chunks (as sent by OpenAI,
//! llama.cpp, vLLM, DeepSeek, Ollama…): text and reasoning deltas, tool-call
//! fragments assembled per call index, `finish_reason`, usage, in-stream
//! error objects, and the classification of provider error messages. It is
//! lenient where real servers differ (null content, missing ids, extra
//! fields, a missing `[DONE]` after a `finish_reason`) and strict where a
//! silent failure would pass for an answer (bad JSON, a stream that just
//! stops).
//!
//! It must not know about SSE framing (see [`crate::sse`]), HTTP, retries or
//! the session: the caller feeds it frame data and decides what to do with
//! the events and errors.

use std::borrow::Cow;

use etch_model::{ErrorKind, ModelError, StopReason, StreamEvent, Usage};
use serde::Deserialize;
use serde_json::Value;

/// Frame data that ends an OpenAI-style stream.
const DONE: &str = "[DONE]";

/// How many characters of a bad frame or error body a message quotes, so a
/// huge payload cannot flood the terminal.
const QUOTE_CHARS: usize = 200;

/// Lower-case fragments of error messages that mean "the prompt does not fit
/// the context window", across the servers etch talks to.
const OVERFLOW_PHRASES: &[&str] = &[
    // llama.cpp: "request (9030 tokens) exceeds the available context size
    // (8192 tokens), try increasing it".
    "exceeds the available context size",
    // OpenAI, vLLM, OpenRouter, Mistral, Ollama: "This model's maximum
    // context length is 8192 tokens…".
    "maximum context length",
    "context length exceeded",
    "context_length_exceeded",
    // OpenAI Responses and others: "Your input exceeds the context window".
    "exceeds the context window",
    "context window exceeded",
    // Anthropic: "prompt is too long: 210000 tokens > 200000 maximum".
    "prompt is too long",
    // LM Studio and older llama.cpp builds.
    "greater than the context length",
    // Gemini's OpenAI-compatible endpoint.
    "exceeds the maximum number of tokens allowed",
];

/// Error codes or types that mean a context overflow without the wording.
const OVERFLOW_CODES: &[&str] = &["context_length_exceeded", "exceed_context_size_error"];

/// Deepest nesting the chunk parser follows (serde_json's own limit).
const MAX_DEPTH: usize = 128;

/// The parts of one `chat.completion.chunk` the decoder reads. It is filled
/// in place while parsing (moving nested structs around was a measurable
/// share of the decoding time).
#[derive(Debug, Default)]
struct Chunk<'a> {
    /// Whether `choices` had a first element (etch asks for one choice, so
    /// only the first counts); not for `null` or the `[]` of the usage-only
    /// last chunk.
    choice: bool,
    /// The first choice's increment (empty when the server omits it or sends
    /// `null`).
    delta: Delta<'a>,
    /// The first choice's `finish_reason`; `None` until the last content
    /// chunk.
    finish_reason: Option<Cow<'a, str>>,
    /// `usage`, on the last chunk with `include_usage` (`null` on the others
    /// with some servers).
    usage: Option<Usage>,
    /// `error`, an in-stream error object or string; rare, so a generic
    /// (boxed, to keep the chunk small) value is fine.
    error: Option<Box<Value>>,
}

/// The increment a choice carries. Strings borrow from the frame unless they
/// contain escapes.
#[derive(Debug, Default)]
struct Delta<'a> {
    /// Answer text (`null` or `""` on role-only and tool-call chunks).
    content: Option<Cow<'a, str>>,
    /// Reasoning text as llama.cpp, vLLM and DeepSeek send it.
    reasoning_content: Option<Cow<'a, str>>,
    /// Reasoning text as OpenRouter and newer vLLM name it (used only when
    /// `reasoning_content` is absent, since some servers send both).
    reasoning: Option<Cow<'a, str>>,
    /// Tool-call fragments (no allocation when there are none).
    tool_calls: Vec<ToolFragment<'a>>,
}

/// A fragment of one tool call.
#[derive(Debug, Default)]
struct ToolFragment<'a> {
    /// Which call the fragment belongs to; servers that omit it are read as
    /// using the fragment's position in the array.
    index: Option<usize>,
    /// Provider call id, normally only on the first fragment.
    id: Option<Cow<'a, str>>,
    /// Tool name, normally only on the first fragment.
    name: Option<Cow<'a, str>>,
    /// A fragment of the JSON argument text.
    arguments: Option<Cow<'a, str>>,
}

/// Parses a chunk.
///
/// A hand-written single pass rather than serde: most of a chunk's bytes are
/// an envelope etch does not use (`id`, `model`, `created`,
/// `system_fingerprint`, `object`, llama.cpp's `timings`…), and the few
/// fields it reads are short strings. Skipping with an eight-bytes-at-a-time
/// string scan and borrowing unescaped strings makes this about twice as fast
/// as derived borrowed serde structs, which is what lets the stream path keep
/// up with fast local servers (the `chat_stream` bench). The structure of the
/// whole document is checked (brackets, separators, literals, string
/// termination, escapes in the strings it decodes); what is not checked is
/// the fine grammar of skipped values (control characters inside strings,
/// number syntax, escapes in skipped strings). Only the rare `usage` and
/// `error` values go through serde.
///
/// Unexpected shapes are tolerated, as real servers send them: `null`
/// anywhere, non-string content (ignored), tool arguments sent as a JSON
/// object (kept as its JSON text), unknown fields.
fn parse_chunk(text: &str) -> Result<Chunk<'_>, String> {
    let mut scan = Scanner {
        text,
        pos: 0,
        detail: None,
    };
    let mut chunk = Chunk::default();
    let parsed = scan.chunk(&mut chunk);
    parsed
        .map(|()| chunk)
        .map_err(|error| match (error.reason, scan.detail.take()) {
            (Reason::Serde, Some(detail)) => detail,
            (reason, _) => format!("{} at byte {}", reason.message(), error.at),
        })
}

/// What was wrong with a frame's JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    /// The frame is not an object.
    ExpectedObject,
    /// No valid value where one must be.
    ExpectedValue,
    /// No string where a key must be.
    ExpectedString,
    /// No `:` after a key.
    ExpectedColon,
    /// No `,` or closing bracket after a member or element.
    ExpectedSeparator,
    /// Text after the object.
    Trailing,
    /// More than `MAX_DEPTH` levels of nesting.
    TooDeep,
    /// A string without its closing quote.
    Unterminated,
    /// An invalid escape in a string the decoder reads.
    BadEscape,
    /// serde rejected `usage` or `error` (its message is kept aside).
    Serde,
}

impl Reason {
    /// The human-readable reason.
    fn message(self) -> &'static str {
        match self {
            Reason::ExpectedObject => "expected an object",
            Reason::ExpectedValue => "expected a value",
            Reason::ExpectedString => "expected a string",
            Reason::ExpectedColon => "expected `:`",
            Reason::ExpectedSeparator => "expected `,` or a closing bracket",
            Reason::Trailing => "trailing characters",
            Reason::TooDeep => "nesting too deep",
            Reason::Unterminated => "unterminated string",
            Reason::BadEscape => "invalid escape in string",
            Reason::Serde => "invalid value",
        }
    }
}

/// A syntax error: where, and what. Eight bytes, so results carrying it
/// are returned in registers on the hot path.
#[derive(Debug, Clone, Copy)]
struct SyntaxError {
    /// Byte position (saturated at `u32::MAX`).
    at: u32,
    /// What was wrong.
    reason: Reason,
}

/// Builds a [`SyntaxError`].
fn syntax(at: usize, reason: Reason) -> SyntaxError {
    SyntaxError {
        at: u32::try_from(at).unwrap_or(u32::MAX),
        reason,
    }
}

/// A cursor over one frame's JSON text.
///
/// The structured walk (`chunk`, `choice`, `delta`…) goes through `pos`;
/// the hot byte-level work ([`skip_ws`], [`scan_string`], [`skip_value`])
/// takes and returns positions by value, so they stay in registers instead
/// of making every byte step a store and reload of `pos`.
struct Scanner<'a> {
    /// The whole frame data.
    text: &'a str,
    /// Byte position of the cursor.
    pos: usize,
    /// serde's message, when serde rejected a value.
    detail: Option<String>,
}

impl<'a> Scanner<'a> {
    /// Reads the top-level object and the end of input.
    fn chunk(&mut self, chunk: &mut Chunk<'a>) -> Result<(), SyntaxError> {
        self.pos = skip_ws(self.bytes(), 0);
        if self.peek() != Some(b'{') {
            return Err(syntax(self.pos, Reason::ExpectedObject));
        }
        self.object(0, |scan, key| {
            match key {
                "choices" => scan.choices(chunk)?,
                "usage" => chunk.usage = scan.usage()?,
                "error" => chunk.error = scan.serde()?,
                _ => scan.value(1)?,
            }
            Ok(())
        })?;
        self.pos = skip_ws(self.bytes(), self.pos);
        if self.pos == self.text.len() {
            Ok(())
        } else {
            Err(syntax(self.pos, Reason::Trailing))
        }
    }

    /// `usage`; a value of an unexpected shape (say, fractional counts) is
    /// skipped rather than failing the frame, since usage is informational.
    fn usage(&mut self) -> Result<Option<Usage>, SyntaxError> {
        let start = self.pos;
        if let Ok(usage) = self.serde::<Option<WireUsage>>() {
            return Ok(usage.map(Usage::from));
        }
        self.detail = None;
        self.pos = start;
        self.value(1)?;
        Ok(None)
    }

    /// `choices`: the first element if it is an object; the rest skipped.
    fn choices(&mut self, chunk: &mut Chunk<'a>) -> Result<(), SyntaxError> {
        if self.peek() != Some(b'[') {
            return self.value(1);
        }
        self.array(1, |scan, position| {
            if position == 0 && scan.peek() == Some(b'{') {
                chunk.choice = true;
                scan.choice(chunk)
            } else {
                scan.value(2)
            }
        })
    }

    /// One choice object.
    fn choice(&mut self, chunk: &mut Chunk<'a>) -> Result<(), SyntaxError> {
        self.object(2, |scan, key| match key {
            "delta" if scan.peek() == Some(b'{') => scan.delta(&mut chunk.delta),
            "finish_reason" => {
                chunk.finish_reason = scan.text_value(3)?;
                Ok(())
            }
            _ => scan.value(3),
        })
    }

    /// A delta object.
    fn delta(&mut self, delta: &mut Delta<'a>) -> Result<(), SyntaxError> {
        self.object(3, |scan, key| {
            match key {
                "content" => delta.content = scan.text_value(4)?,
                "reasoning_content" => delta.reasoning_content = scan.text_value(4)?,
                "reasoning" => delta.reasoning = scan.text_value(4)?,
                "tool_calls" if scan.peek() == Some(b'[') => {
                    scan.array(4, |scan, _| {
                        if scan.peek() == Some(b'{') {
                            delta.tool_calls.push(scan.tool_fragment()?);
                            Ok(())
                        } else {
                            scan.value(5)
                        }
                    })?;
                }
                _ => scan.value(4)?,
            }
            Ok(())
        })
    }

    /// A tool-call fragment object.
    fn tool_fragment(&mut self) -> Result<ToolFragment<'a>, SyntaxError> {
        let mut fragment = ToolFragment::default();
        self.object(5, |scan, key| {
            match key {
                "index" => fragment.index = scan.index_value(6)?,
                "id" => fragment.id = scan.text_value(6)?,
                "function" if scan.peek() == Some(b'{') => {
                    scan.object(6, |scan, key| {
                        match key {
                            "name" => fragment.name = scan.text_value(7)?,
                            "arguments" => fragment.arguments = scan.json_text_value(7)?,
                            _ => scan.value(7)?,
                        }
                        Ok(())
                    })?;
                }
                _ => scan.value(6)?,
            }
            Ok(())
        })?;
        Ok(fragment)
    }

    /// Walks the object at the cursor, calling `member` with each raw key
    /// (escapes not decoded; the keys etch reads never need them) with the
    /// cursor on the value, which `member` must consume.
    fn object(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Self, &'a str) -> Result<(), SyntaxError>,
    ) -> Result<(), SyntaxError> {
        let text = self.text;
        let bytes = text.as_bytes();
        debug_assert_eq!(bytes.get(self.pos), Some(&b'{'));
        if depth >= MAX_DEPTH {
            return Err(syntax(self.pos, Reason::TooDeep));
        }
        let mut at = skip_ws(bytes, self.pos + 1); // past `{`
        if bytes.get(at) == Some(&b'}') {
            self.pos = at + 1;
            return Ok(());
        }
        loop {
            let (end, _) = scan_string(bytes, at)?;
            let key = &text[at + 1..end];
            at = skip_ws(bytes, end + 1);
            if bytes.get(at) != Some(&b':') {
                return Err(syntax(at, Reason::ExpectedColon));
            }
            self.pos = skip_ws(bytes, at + 1);
            member(self, key)?;
            at = skip_ws(bytes, self.pos);
            match bytes.get(at) {
                Some(b',') => at = skip_ws(bytes, at + 1),
                Some(b'}') => {
                    self.pos = at + 1;
                    return Ok(());
                }
                _ => return Err(syntax(at, Reason::ExpectedSeparator)),
            }
        }
    }

    /// Walks the array at the cursor, calling `element` with each position
    /// and the cursor on the element, which `element` must consume.
    fn array(
        &mut self,
        depth: usize,
        mut element: impl FnMut(&mut Self, usize) -> Result<(), SyntaxError>,
    ) -> Result<(), SyntaxError> {
        let bytes = self.text.as_bytes();
        debug_assert_eq!(bytes.get(self.pos), Some(&b'['));
        if depth >= MAX_DEPTH {
            return Err(syntax(self.pos, Reason::TooDeep));
        }
        let mut at = skip_ws(bytes, self.pos + 1); // past `[`
        if bytes.get(at) == Some(&b']') {
            self.pos = at + 1;
            return Ok(());
        }
        let mut position = 0;
        loop {
            self.pos = at;
            element(self, position)?;
            position += 1;
            at = skip_ws(bytes, self.pos);
            match bytes.get(at) {
                Some(b',') => at = skip_ws(bytes, at + 1),
                Some(b']') => {
                    self.pos = at + 1;
                    return Ok(());
                }
                _ => return Err(syntax(at, Reason::ExpectedSeparator)),
            }
        }
    }

    /// A string value, decoded; `None` for `null` or any non-string value
    /// (which is skipped).
    fn text_value(&mut self, depth: usize) -> Result<Option<Cow<'a, str>>, SyntaxError> {
        if self.peek() != Some(b'"') {
            self.value(depth)?;
            return Ok(None);
        }
        let (end, escaped) = scan_string(self.bytes(), self.pos)?;
        let raw = &self.text[self.pos + 1..end];
        if escaped {
            let text = unescape(raw).map_err(|_| syntax(self.pos, Reason::BadEscape))?;
            self.pos = end + 1;
            Ok(Some(text))
        } else {
            self.pos = end + 1;
            Ok(Some(Cow::Borrowed(raw)))
        }
    }

    /// Like [`text_value`](Self::text_value), but an object or array (tool
    /// arguments sent as JSON rather than as a JSON string) is kept as its
    /// JSON text.
    fn json_text_value(&mut self, depth: usize) -> Result<Option<Cow<'a, str>>, SyntaxError> {
        if matches!(self.peek(), Some(b'{' | b'[')) {
            let start = self.pos;
            self.value(depth)?;
            return Ok(Some(Cow::Borrowed(&self.text[start..self.pos])));
        }
        self.text_value(depth)
    }

    /// A non-negative integer value; `None` for anything else (skipped).
    fn index_value(&mut self, depth: usize) -> Result<Option<usize>, SyntaxError> {
        let start = self.pos;
        self.value(depth)?;
        Ok(self.text[start..self.pos].parse().ok())
    }

    /// Deserializes the value at the cursor with serde and moves past it.
    fn serde<T: Deserialize<'a>>(&mut self) -> Result<T, SyntaxError> {
        let rest = &self.text[self.pos..];
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<T>();
        match values.next() {
            Some(Ok(value)) => {
                self.pos += values.byte_offset();
                Ok(value)
            }
            Some(Err(err)) => {
                self.detail = Some(err.to_string());
                Err(syntax(self.pos, Reason::Serde))
            }
            None => Err(syntax(self.pos, Reason::ExpectedValue)),
        }
    }

    /// Moves past one value of any kind.
    fn value(&mut self, depth: usize) -> Result<(), SyntaxError> {
        self.pos = skip_value(self.bytes(), self.pos, depth)?;
        Ok(())
    }

    /// The frame as bytes.
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The byte at the cursor.
    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }
}

/// The position of the first non-whitespace byte at or after `at`.
#[inline]
fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Scans the string whose opening quote is at `at`; returns the position of
/// its closing quote and whether it contains escapes (which are not
/// validated here).
#[inline]
fn scan_string(bytes: &[u8], at: usize) -> Result<(usize, bool), SyntaxError> {
    if bytes.get(at) != Some(&b'"') {
        return Err(syntax(at, Reason::ExpectedString));
    }
    let mut at = at + 1;
    let mut escaped = false;
    loop {
        at = quote_or_backslash(bytes, at);
        match bytes.get(at) {
            Some(b'"') => return Ok((at, escaped)),
            Some(_) => {
                // A backslash and the byte it escapes.
                escaped = true;
                at += 2;
            }
            None => return Err(syntax(bytes.len(), Reason::Unterminated)),
        }
    }
}

/// Moves past the value at `at` (at most `MAX_DEPTH` deep); returns the
/// position after it.
fn skip_value(bytes: &[u8], at: usize, depth: usize) -> Result<usize, SyntaxError> {
    let literal = |word: &[u8]| {
        if bytes.get(at..at + word.len()) == Some(word) {
            Ok(at + word.len())
        } else {
            Err(syntax(at, Reason::ExpectedValue))
        }
    };
    match bytes.get(at) {
        Some(b'"') => scan_string(bytes, at).map(|(end, _)| end + 1),
        Some(&open @ (b'{' | b'[')) => {
            if depth >= MAX_DEPTH {
                return Err(syntax(at, Reason::TooDeep));
            }
            let close = if open == b'{' { b'}' } else { b']' };
            let mut at = skip_ws(bytes, at + 1);
            if bytes.get(at) == Some(&close) {
                return Ok(at + 1);
            }
            loop {
                if open == b'{' {
                    let (end, _) = scan_string(bytes, at)?;
                    at = skip_ws(bytes, end + 1);
                    if bytes.get(at) != Some(&b':') {
                        return Err(syntax(at, Reason::ExpectedColon));
                    }
                    at = skip_ws(bytes, at + 1);
                }
                at = skip_ws(bytes, skip_value(bytes, at, depth + 1)?);
                match bytes.get(at) {
                    Some(b',') => at = skip_ws(bytes, at + 1),
                    Some(&byte) if byte == close => return Ok(at + 1),
                    _ => return Err(syntax(at, Reason::ExpectedSeparator)),
                }
            }
        }
        Some(b't') => literal(b"true"),
        Some(b'f') => literal(b"false"),
        Some(b'n') => literal(b"null"),
        Some(b'-' | b'0'..=b'9') => {
            let mut at = at + 1;
            while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = bytes.get(at) {
                at += 1;
            }
            Ok(at)
        }
        _ => Err(syntax(at, Reason::ExpectedValue)),
    }
}

/// Position of the first `"` or `\` in `bytes` at or after `from`, or
/// `bytes.len()`. Eight bytes at a time (SWAR): JSON strings in chunks are
/// mostly 10–40 bytes, too short for memchr's setup cost to pay off and long
/// enough for a byte loop to dominate the decoding time.
#[inline]
fn quote_or_backslash(bytes: &[u8], from: usize) -> usize {
    /// Each byte 0x01.
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    /// Each byte 0x80.
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    /// Each byte `"`.
    const QUOTES: u64 = u64::from_le_bytes([b'"'; 8]);
    /// Each byte `\`.
    const BACKSLASHES: u64 = u64::from_le_bytes([b'\\'; 8]);
    let mut at = from;
    while let Some(word) = bytes.get(at..at + 8) {
        let mut eight = [0; 8];
        eight.copy_from_slice(word);
        let word = u64::from_le_bytes(eight);
        let (q, b) = (word ^ QUOTES, word ^ BACKSLASHES);
        // The lowest set high bit marks the first zero byte exactly (borrows
        // only cause false hits above a true one).
        let hits = (q.wrapping_sub(ONES) & !q | b.wrapping_sub(ONES) & !b) & HIGHS;
        if hits != 0 {
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(&byte) = bytes.get(at) {
        if byte == b'"' || byte == b'\\' {
            return at;
        }
        at += 1;
    }
    bytes.len()
}

/// Decodes the escapes of a JSON string's raw contents. A lone UTF-16
/// surrogate (which models do emit when a multi-byte character is split
/// between tokens) becomes U+FFFD instead of failing the frame.
fn unescape(raw: &str) -> Result<Cow<'_, str>, &'static str> {
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut at = 0;
    while at < bytes.len() {
        let next = memchr::memchr(b'\\', &bytes[at..]).map_or(bytes.len(), |n| at + n);
        out.push_str(&raw[at..next]);
        if next == bytes.len() {
            break;
        }
        let escape = bytes.get(next + 1).copied();
        at = next + 2;
        out.push(match escape {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let high = hex4(bytes, at)?;
                at += 4;
                if (0xD800..0xDC00).contains(&high) && bytes.get(at..at + 2) == Some(b"\\u") {
                    let low = hex4(bytes, at + 2)?;
                    if (0xDC00..0xE000).contains(&low) {
                        at += 6;
                        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                            .unwrap_or(char::REPLACEMENT_CHARACTER)
                    } else {
                        char::REPLACEMENT_CHARACTER
                    }
                } else {
                    char::from_u32(high).unwrap_or(char::REPLACEMENT_CHARACTER)
                }
            }
            _ => return Err("invalid escape in string"),
        });
    }
    Ok(Cow::Owned(out))
}

/// The four hex digits of a `\u` escape starting at `at`.
fn hex4(bytes: &[u8], at: usize) -> Result<u32, &'static str> {
    let digits = bytes.get(at..at + 4).ok_or("truncated \\u escape")?;
    digits.iter().try_fold(0, |value, digit| {
        let nibble = char::from(*digit)
            .to_digit(16)
            .ok_or("invalid \\u escape")?;
        Ok(value << 4 | nibble)
    })
}

/// Usage as Chat Completions reports it.
#[derive(Debug, Deserialize)]
struct WireUsage {
    /// Prompt tokens.
    #[serde(default)]
    prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default)]
    completion_tokens: Option<u64>,
    /// Total as the provider counts it.
    #[serde(default)]
    total_tokens: Option<u64>,
    /// Prompt breakdown (cached tokens).
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
    /// Completion breakdown (reasoning tokens).
    #[serde(default)]
    completion_tokens_details: Option<WireCompletionDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Deserialize)]
struct WirePromptDetails {
    /// Prompt tokens served from the prompt cache.
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Deserialize)]
struct WireCompletionDetails {
    /// Completion tokens spent on reasoning.
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(wire: WireUsage) -> Self {
        let input_tokens = wire.prompt_tokens.unwrap_or(0);
        let output_tokens = wire.completion_tokens.unwrap_or(0);
        Usage {
            input_tokens,
            cached_input_tokens: wire
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            output_tokens,
            reasoning_output_tokens: wire
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            // A server that leaves out the total still means the sum.
            total_tokens: wire
                .total_tokens
                .unwrap_or(input_tokens.saturating_add(output_tokens)),
        }
    }
}

/// A tool call being assembled from fragments.
#[derive(Debug)]
struct CallState {
    /// The `index` the server uses for it.
    wire_index: usize,
    /// Provider id (empty until one arrives; synthesized at start if none).
    id: String,
    /// Whether `id` came from the provider rather than being synthesized.
    provider_id: bool,
    /// Tool name (empty until one arrives).
    name: String,
    /// Whether `ToolCallStart` was emitted (it waits for the name).
    started: bool,
    /// Argument text received before the name, flushed at start.
    pending: String,
}

/// The text-like block currently open.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// Neither text nor reasoning.
    #[default]
    Nothing,
    /// A text block.
    Text,
    /// A reasoning block.
    Reasoning,
}

/// Decodes one Chat Completions stream into [`StreamEvent`]s.
///
/// Feed it each SSE frame's data with [`frame`](Self::frame), then call
/// [`finish`](Self::finish) when the body ends. Events come out in this
/// order: text, reasoning and tool-call events as they arrive (reasoning,
/// text and tool calls never overlap: starting one closes the others, except
/// that tool calls stay open together until the end), then `TextEnd` /
/// `ToolCallEnd`s, then one `Usage` if the server reported any, then `Done`.
/// Output indices of tool calls are their order of first appearance.
#[derive(Debug, Default)]
pub struct ChatDecoder {
    /// `Done` was appended (at `[DONE]` or by `finish`); later input is
    /// ignored.
    ended: bool,
    /// Which of text or reasoning is open (they never overlap).
    open: Open,
    /// Tool calls in order of first appearance; the position is the output
    /// index.
    calls: Vec<CallState>,
    /// The last `finish_reason` seen, mapped.
    finish_reason: Option<StopReason>,
    /// The last usage seen (emitted once, at the end).
    usage: Option<Usage>,
    /// Any model output decoded yet.
    output: bool,
}

impl ChatDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one SSE frame's data; appends stream events to `out`.
    ///
    /// Fails on data that is not JSON (`Protocol`) and on an in-stream
    /// `error` object (classified by [`classify_error_message`]). Blank data
    /// (a keep-alive) is ignored, as is everything after `[DONE]`.
    pub fn frame(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        if self.ended {
            return Ok(());
        }
        let data = data.trim_ascii();
        if data.is_empty() {
            return Ok(());
        }
        if data == DONE {
            self.end(out);
            return Ok(());
        }
        let chunk = parse_chunk(data).map_err(|reason| {
            ModelError::new(
                ErrorKind::Protocol,
                format!("invalid JSON in stream frame: {} ({reason})", quote(data)),
            )
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(error_from_value(None, &error, true)
                .unwrap_or_else(|| generic_error(None, &error.to_string())));
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        if !chunk.choice {
            return Ok(());
        }
        self.delta(chunk.delta, out);
        if let Some(reason) = non_empty(chunk.finish_reason) {
            self.finish_reason = Some(map_finish_reason(&reason));
        }
        Ok(())
    }

    /// The body ended: closes open blocks and appends Done, or returns the
    /// error for a stream that never finished.
    ///
    /// A stream without `[DONE]` still ends normally if a `finish_reason`
    /// arrived (some servers drop the terminator); one with neither was cut
    /// off and is a `Protocol` error. After `[DONE]` this does nothing.
    pub fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        if self.ended {
            return Ok(());
        }
        if self.finish_reason.is_none() {
            return Err(ModelError::new(
                ErrorKind::Protocol,
                "the stream ended before the model finished (no finish_reason or [DONE])",
            ));
        }
        self.end(out);
        Ok(())
    }

    /// Whether any model output (text, reasoning or a tool call) was decoded
    /// yet (retries are only allowed before that).
    pub fn has_output(&self) -> bool {
        self.output
    }

    /// Applies one delta: reasoning, then text, then tool-call fragments.
    fn delta(&mut self, delta: Delta<'_>, out: &mut Vec<StreamEvent>) {
        let reasoning = match delta.reasoning_content {
            Some(text) => Some(text),
            None => delta.reasoning,
        };
        if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
            self.close_text(out);
            if self.open != Open::Reasoning {
                self.open = Open::Reasoning;
                out.push(StreamEvent::ReasoningStart);
            }
            out.push(StreamEvent::ReasoningDelta(text.into_owned()));
            self.output = true;
        }
        if let Some(text) = non_empty(delta.content) {
            self.close_reasoning(out);
            if self.open != Open::Text {
                self.open = Open::Text;
                out.push(StreamEvent::TextStart);
            }
            out.push(StreamEvent::TextDelta(text.into_owned()));
            self.output = true;
        }
        for (position, call) in delta.tool_calls.into_iter().enumerate() {
            self.tool_fragment(position, call, out);
        }
    }

    /// Routes one tool-call fragment to its call, starting the call once its
    /// name is known.
    fn tool_fragment(
        &mut self,
        position: usize,
        call: ToolFragment<'_>,
        out: &mut Vec<StreamEvent>,
    ) {
        self.output = true;
        let wire_index = call.index.unwrap_or(position);
        let id = non_empty(call.id);
        let name = non_empty(call.name);
        let arguments = non_empty(call.arguments);
        let existing = self.calls.iter().rposition(|c| c.wire_index == wire_index);
        let slot = match existing {
            // Some servers number every call 0; a fresh provider id with a
            // name on a started call can only be a new call.
            Some(slot)
                if !(self.calls[slot].started
                    && self.calls[slot].provider_id
                    && name.is_some()
                    && id.as_deref().is_some_and(|id| id != self.calls[slot].id)) =>
            {
                slot
            }
            _ => {
                self.calls.push(CallState {
                    wire_index,
                    id: String::new(),
                    provider_id: false,
                    name: String::new(),
                    started: false,
                    pending: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let state = &mut self.calls[slot];
        if state.started {
            if let Some(arguments) = arguments {
                out.push(StreamEvent::ToolCallDelta {
                    index: slot,
                    arguments: arguments.into_owned(),
                });
            }
            return;
        }
        if let Some(id) = id.filter(|_| state.id.is_empty()) {
            state.id = id.into_owned();
            state.provider_id = true;
        }
        if let Some(name) = name.filter(|_| state.name.is_empty()) {
            state.name = name.into_owned();
        }
        if let Some(arguments) = arguments {
            state.pending.push_str(&arguments);
        }
        if !state.name.is_empty() {
            self.start_call(slot, out);
        }
    }

    /// Emits `ToolCallStart` for a call (closing text and reasoning first)
    /// and flushes argument text that arrived before its name.
    fn start_call(&mut self, slot: usize, out: &mut Vec<StreamEvent>) {
        self.close_reasoning(out);
        self.close_text(out);
        let state = &mut self.calls[slot];
        state.started = true;
        if state.id.is_empty() {
            // Stable within the response, so deltas and results line up.
            state.id = format!("call_{slot}");
        }
        out.push(StreamEvent::ToolCallStart {
            index: slot,
            id: state.id.clone(),
            name: state.name.clone(),
        });
        if !state.pending.is_empty() {
            out.push(StreamEvent::ToolCallDelta {
                index: slot,
                arguments: std::mem::take(&mut state.pending),
            });
        }
    }

    /// Closes the text block if one is open.
    fn close_text(&mut self, out: &mut Vec<StreamEvent>) {
        if self.open == Open::Text {
            self.open = Open::Nothing;
            out.push(StreamEvent::TextEnd);
        }
    }

    /// Closes the reasoning block if one is open.
    fn close_reasoning(&mut self, out: &mut Vec<StreamEvent>) {
        if self.open == Open::Reasoning {
            self.open = Open::Nothing;
            out.push(StreamEvent::ReasoningEnd);
        }
    }

    /// Ends the stream: closes every block, then `Usage`, then `Done`.
    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        self.ended = true;
        self.close_reasoning(out);
        self.close_text(out);
        // A call whose name never came still gets surfaced (with an empty
        // name) so its arguments are not silently lost; the core answers it
        // with an unknown-tool error.
        for slot in 0..self.calls.len() {
            if !self.calls[slot].started {
                self.start_call(slot, out);
            }
        }
        for index in 0..self.calls.len() {
            out.push(StreamEvent::ToolCallEnd { index });
        }
        if let Some(usage) = self.usage.take() {
            out.push(StreamEvent::Usage(usage));
        }
        let stop_reason = if self.calls.is_empty() {
            self.finish_reason.unwrap_or(StopReason::Stop)
        } else {
            // Calls must be answered whatever the server says (llama.cpp
            // reports `length` for a cut-off call, others `stop`), or the
            // history would hold calls without results.
            StopReason::ToolUse
        };
        out.push(StreamEvent::Done { stop_reason });
    }
}

/// `text` unless it is empty.
fn non_empty(text: Option<Cow<'_, str>>) -> Option<Cow<'_, str>> {
    text.filter(|t| !t.is_empty())
}

/// Maps a Chat Completions `finish_reason` to a stop reason.
fn map_finish_reason(reason: &str) -> StopReason {
    match reason {
        "length" => StopReason::Length,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        // `content_filter` ends the answer where the provider cut it; there is
        // no separate stop reason for it, so it reads as a normal stop (the
        // text so far is kept). `stop` and anything unknown are a stop too.
        _ => StopReason::Stop,
    }
}

/// Classifies a provider error from its HTTP status (if any), message and
/// code (or type).
///
/// Context-overflow wording wins over the status (servers report it as 400
/// or 413); then 429, 408 and 5xx are `Transient`, 401/403 `Auth`, other 4xx
/// `InvalidRequest`. Without a status (an in-stream error) the code or type
/// decides. An exhausted quota (`insufficient_quota`, sent with 429) is not
/// worth retrying and is `Other`.
pub fn classify_error_message(status: Option<u16>, message: &str, code: Option<&str>) -> ErrorKind {
    let code = code.map(str::to_ascii_lowercase);
    let code = code.as_deref();
    if code.is_some_and(|c| OVERFLOW_CODES.contains(&c)) {
        return ErrorKind::ContextOverflow;
    }
    let lower = message.to_ascii_lowercase();
    if OVERFLOW_PHRASES.iter().any(|phrase| lower.contains(phrase)) {
        return ErrorKind::ContextOverflow;
    }
    if code == Some("insufficient_quota") {
        return ErrorKind::Other;
    }
    match status {
        Some(408 | 429 | 500..=599) => ErrorKind::Transient,
        Some(401 | 403) => ErrorKind::Auth,
        Some(400..=499) => ErrorKind::InvalidRequest,
        Some(_) => ErrorKind::Other,
        None => match code {
            Some(
                "rate_limit_exceeded"
                | "rate_limit_error"
                | "server_error"
                | "api_error"
                | "overloaded_error"
                | "timeout"
                | "service_unavailable",
            ) => ErrorKind::Transient,
            Some(
                "invalid_api_key"
                | "authentication_error"
                | "permission_error"
                | "permission_denied"
                | "unauthorized",
            ) => ErrorKind::Auth,
            Some("invalid_request_error" | "not_found_error" | "bad_request") => {
                ErrorKind::InvalidRequest
            }
            _ => ErrorKind::Other,
        },
    }
}

/// Decodes a non-SSE error body (a non-2xx reply, which servers send as plain
/// JSON even when a stream was asked for) into a typed error.
///
/// Understands OpenAI's and llama.cpp's `{"error": {"message", "type",
/// "code"}}`, `{"error": "text"}` (Ollama), Anthropic's `{"type": "error",
/// "error": {…}}`, and top-level `{"message"}` / `{"detail"}` (older vLLM,
/// FastAPI servers). The message is the provider's own text; anything else
/// (plain text, HTML from a proxy) is quoted after `HTTP <status>:`.
pub fn decode_error_body(status: u16, body: &str) -> ModelError {
    let body = body.trim();
    if body.is_empty() {
        return ModelError::new(
            classify_error_message(Some(status), "", None),
            format!("HTTP {status} with an empty body"),
        );
    }
    if let Ok(value) = serde_json::from_str::<Value>(body)
        && let Some(error) = error_from_value(Some(status), &value, true)
    {
        return error;
    }
    generic_error(Some(status), body)
}

/// An error for a body or object whose message could not be found: the text
/// itself, quoted.
fn generic_error(status: Option<u16>, text: &str) -> ModelError {
    let kind = classify_error_message(status, text, None);
    match status {
        Some(status) => ModelError::new(kind, format!("HTTP {status}: {}", quote(text))),
        None => ModelError::new(kind, format!("provider error: {}", quote(text))),
    }
}

/// Reads the provider error out of a JSON value: `{"error": …}`, or with
/// `top_level` also `{"message": …}` / `{"detail": …}` at the top. A numeric
/// `code` (llama.cpp puts the HTTP status there) stands in for a missing
/// status; a string `code` (or else `type`) is the classification hint.
fn error_from_value(status: Option<u16>, value: &Value, top_level: bool) -> Option<ModelError> {
    let (object, message) = match value.get("error").unwrap_or(value) {
        Value::String(text) => (None, text.clone()),
        Value::Object(object) => {
            let message = ["message", "detail", "error"]
                .iter()
                .find_map(|key| object.get(*key).and_then(Value::as_str))
                .map(str::to_owned);
            let is_error = value.get("error").is_some() || top_level;
            match message {
                Some(message) if is_error => (Some(object), message),
                // An error object without a readable message: show its JSON.
                None if value.get("error").is_some() => (Some(object), quote(&value.to_string())),
                _ => return None,
            }
        }
        _ => return None,
    };
    let code = object.and_then(|o| o.get("code"));
    let numeric = code
        .and_then(|c| {
            c.as_u64()
                .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
        })
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| (400..=599).contains(n));
    let hint = code
        .and_then(Value::as_str)
        .filter(|_| numeric.is_none())
        .or_else(|| object.and_then(|o| o.get("type")).and_then(Value::as_str));
    let message = if message.trim().is_empty() {
        quote(&value.to_string())
    } else {
        message
    };
    let kind = classify_error_message(status.or(numeric), &message, hint);
    Some(ModelError::new(kind, message))
}

/// The first [`QUOTE_CHARS`] characters of `text`, with `…` if cut.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::sse::{SseFrame, SseParser};

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
        let mut fragment =
            serde_json::json!({"index": index, "function": {"arguments": arguments}});
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
        let null_usage = r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],"usage":null}"#;
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
        let llama_500 =
            r#"{"error":{"code":500,"message":"slot unavailable","type":"server_error"}}"#;
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
        let (_, result) = decode(&[
            r#"{"error":null,"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
        ]);
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

    /// The classifier: overflow wording and codes first, then the status,
    /// then code hints for in-stream errors.
    #[test]
    fn classifies_errors() {
        use ErrorKind::{Auth, ContextOverflow, InvalidRequest, Other, Transient};
        let cases: &[(Option<u16>, &str, Option<&str>, ErrorKind)] = &[
            (
                Some(400),
                "request (9030 tokens) exceeds the available context size (8192 tokens)",
                None,
                ContextOverflow,
            ),
            (
                Some(400),
                "This model's maximum context length is 8192 tokens",
                None,
                ContextOverflow,
            ),
            (
                Some(400),
                "bad",
                Some("context_length_exceeded"),
                ContextOverflow,
            ),
            (
                Some(400),
                "prompt is too long: 210000 tokens > 200000 maximum",
                None,
                ContextOverflow,
            ),
            (
                None,
                "x",
                Some("exceed_context_size_error"),
                ContextOverflow,
            ),
            (
                Some(429),
                "slow down",
                Some("rate_limit_exceeded"),
                Transient,
            ),
            (
                Some(429),
                "You exceeded your current quota",
                Some("insufficient_quota"),
                Other,
            ),
            (
                Some(500),
                "[json.exception.parse_error.101] parse error",
                None,
                Transient,
            ),
            (Some(503), "overloaded", None, Transient),
            (Some(408), "timeout", None, Transient),
            (Some(401), "Incorrect API key", None, Auth),
            (Some(403), "forbidden", None, Auth),
            (Some(400), "'messages' is required", None, InvalidRequest),
            (Some(404), "model not found", None, InvalidRequest),
            (Some(302), "moved", None, Other),
            (None, "x", Some("server_error"), Transient),
            (None, "x", Some("authentication_error"), Auth),
            (None, "x", Some("invalid_request_error"), InvalidRequest),
            (None, "x", None, Other),
        ];
        for (status, message, code, expected) in cases {
            assert_eq!(
                classify_error_message(*status, message, *code),
                *expected,
                "{status:?} {message} {code:?}"
            );
        }
    }

    /// Error bodies in the shapes real servers send.
    #[test]
    fn decodes_error_bodies() {
        let openai = r#"{"error":{"message":"Incorrect API key provided: sk-…","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        let err = decode_error_body(401, openai);
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::Auth, "Incorrect API key provided: sk-…")
        );
        let err = decode_error_body(404, r#"{"error":"model 'qwen' not found"}"#);
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::InvalidRequest, "model 'qwen' not found")
        );
        let anthropic =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(decode_error_body(529, anthropic).kind, ErrorKind::Transient);
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(
            decode_error_body(400, vllm).kind,
            ErrorKind::ContextOverflow
        );
        let err = decode_error_body(422, r#"{"detail":"Unprocessable"}"#);
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::InvalidRequest, "Unprocessable")
        );
        let err = decode_error_body(502, "<html><body>Bad Gateway</body></html>\n");
        assert_eq!(
            (err.kind, err.message.as_str()),
            (
                ErrorKind::Transient,
                "HTTP 502: <html><body>Bad Gateway</body></html>"
            )
        );
        let err = decode_error_body(500, "  ");
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::Transient, "HTTP 500 with an empty body")
        );
        let err = decode_error_body(400, r#"{"unexpected":true}"#);
        assert_eq!(err.message, r#"HTTP 400: {"unexpected":true}"#);
        let err = decode_error_body(400, &"x".repeat(1000));
        assert_eq!(
            err.message.chars().count(),
            "HTTP 400: ".len() + QUOTE_CHARS + 1
        );
    }

    // ---- The hand-written chunk parser. ----

    /// A small deterministic generator (xorshift64), so the randomized tests
    /// need no extra dependency and always see the same cases.
    struct Rng(u64);

    impl Rng {
        /// The next pseudo-random number.
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// A number below `n`.
        fn below(&mut self, n: u64) -> usize {
            usize::try_from(self.next() % n).unwrap()
        }

        /// A string mixing ASCII, JSON-escaped characters, multi-byte UTF-8
        /// and astral characters (escaped as surrogate pairs by nobody, but
        /// long enough to cross the eight-byte scan boundary).
        fn string(&mut self) -> String {
            const PIECES: &[&str] = &[
                "a",
                "Zz",
                " ",
                "\"",
                "\\",
                "/",
                "\n",
                "\t",
                "\u{1}",
                "é",
                "世界",
                "🦀",
                "{",
                "}",
                "[",
                ",",
                ":",
                "null",
                "0123456789",
            ];
            let len = self.below(12);
            (0..len)
                .map(|_| PIECES[self.below(PIECES.len() as u64)])
                .collect()
        }

        /// A random JSON value for the envelope, nested up to `depth`.
        fn value(&mut self, depth: usize) -> Value {
            match self.below(if depth == 0 { 5 } else { 7 }) {
                0 => Value::Null,
                1 => Value::Bool(self.below(2) == 0),
                2 => serde_json::json!(self.next() % 100_000),
                3 => serde_json::json!(-1.5e3),
                4 => Value::String(self.string()),
                5 => (0..self.below(4)).map(|_| self.value(depth - 1)).collect(),
                _ => {
                    let mut object = serde_json::Map::new();
                    for _ in 0..self.below(4) {
                        object.insert(self.string(), self.value(depth - 1));
                    }
                    Value::Object(object)
                }
            }
        }

        /// A text field as servers send it: usually a string, sometimes
        /// `null` or something odd.
        fn text_field(&mut self) -> Value {
            match self.below(6) {
                0 => Value::Null,
                1 => self.value(1),
                _ => Value::String(self.string()),
            }
        }

        /// A random chunk, with the fields the decoder reads among envelope
        /// noise.
        fn chunk(&mut self) -> Value {
            let mut delta = serde_json::Map::new();
            for key in ["content", "reasoning_content", "reasoning", "role"] {
                if self.below(2) == 0 {
                    delta.insert(key.into(), self.text_field());
                }
            }
            if self.below(2) == 0 {
                let calls: Vec<Value> = (0..self.below(3))
                    .map(|i| {
                        let arguments = if self.below(4) == 0 {
                            serde_json::json!({"path": self.string(), "n": [1, {"k": null}]})
                        } else {
                            self.text_field()
                        };
                        serde_json::json!({
                            "index": if self.below(5) == 0 { Value::Null } else { serde_json::json!(i) },
                            "id": self.text_field(),
                            "type": "function",
                            "function": {"name": self.text_field(), "arguments": arguments},
                        })
                    })
                    .collect();
                delta.insert("tool_calls".into(), calls.into());
            }
            let choice = serde_json::json!({
                "index": 0,
                "finish_reason": self.text_field(),
                "delta": if self.below(6) == 0 { Value::Null } else { Value::Object(delta) },
                "logprobs": self.value(2),
            });
            let choices = match self.below(6) {
                0 => Value::Null,
                1 => serde_json::json!([]),
                _ => serde_json::json!([choice, {"index": 1, "delta": {"content": "second"}}]),
            };
            let mut chunk = serde_json::Map::new();
            chunk.insert("id".into(), Value::String(self.string()));
            chunk.insert("noise".into(), self.value(3));
            chunk.insert("choices".into(), choices);
            chunk.insert(self.string(), self.value(2));
            if self.below(3) == 0 {
                chunk.insert(
                    "usage".into(),
                    serde_json::json!({"prompt_tokens": 3, "completion_tokens": 4}),
                );
            }
            Value::Object(chunk)
        }
    }

    /// What the decoder should read from a text field per the leniency
    /// rules: strings as they are, anything else as absent.
    fn expected_text(value: &Value) -> Option<String> {
        value.as_str().map(str::to_owned)
    }

    /// The parser reads exactly what `serde_json::Value` sees in thousands of
    /// random chunks, compact and pretty-printed: text fields, tool-call
    /// fragments (object arguments kept as equivalent JSON text), finish
    /// reason, usage.
    #[test]
    fn parser_matches_serde_json_on_random_chunks() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for case in 0..3000 {
            let value = rng.chunk();
            let compact = value.to_string();
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            for text in [&compact, &pretty] {
                let chunk =
                    parse_chunk(text).unwrap_or_else(|e| panic!("case {case}: {e}: {text}"));
                let first = value["choices"].get(0).filter(|c| c.is_object());
                assert_eq!(chunk.choice, first.is_some(), "case {case}");
                assert_eq!(
                    chunk.usage.is_some(),
                    value.get("usage").is_some(),
                    "case {case}"
                );
                let Some(first) = first else { continue };
                let choice = &chunk;
                let delta = &first["delta"];
                let got = |field: &Option<Cow<'_, str>>| field.as_deref().map(str::to_owned);
                assert_eq!(
                    got(&choice.finish_reason),
                    expected_text(&first["finish_reason"])
                );
                assert_eq!(
                    got(&choice.delta.content),
                    expected_text(&delta["content"]),
                    "case {case}"
                );
                assert_eq!(
                    got(&choice.delta.reasoning_content),
                    expected_text(&delta["reasoning_content"])
                );
                assert_eq!(
                    got(&choice.delta.reasoning),
                    expected_text(&delta["reasoning"])
                );
                let calls = delta["tool_calls"].as_array().cloned().unwrap_or_default();
                assert_eq!(choice.delta.tool_calls.len(), calls.len(), "case {case}");
                for (fragment, call) in choice.delta.tool_calls.iter().zip(&calls) {
                    assert_eq!(
                        fragment.index,
                        call["index"].as_u64().map(|i| usize::try_from(i).unwrap())
                    );
                    assert_eq!(got(&fragment.id), expected_text(&call["id"]));
                    assert_eq!(
                        got(&fragment.name),
                        expected_text(&call["function"]["name"])
                    );
                    let arguments = &call["function"]["arguments"];
                    match fragment.arguments.as_deref() {
                        Some(text) if arguments.is_object() || arguments.is_array() => {
                            assert_eq!(&serde_json::from_str::<Value>(text).unwrap(), arguments);
                        }
                        other => assert_eq!(other.map(str::to_owned), expected_text(arguments)),
                    }
                }
            }
        }
    }

    /// Broken frames fail cleanly, never panic: every strict prefix of a
    /// chunk is rejected, and no single-byte corruption panics; whenever
    /// serde_json still accepts the corrupted text as an object, so does the
    /// parser.
    #[test]
    fn parser_rejects_truncation_and_survives_corruption() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for _ in 0..200 {
            let text = rng.chunk().to_string();
            for cut in (0..text.len()).filter(|cut| text.is_char_boundary(*cut)) {
                assert!(
                    parse_chunk(&text[..cut]).is_err(),
                    "prefix accepted: {}",
                    &text[..cut]
                );
            }
            let mut bytes = text.into_bytes();
            for _ in 0..40 {
                let at = rng.below(bytes.len() as u64);
                let old = bytes[at];
                bytes[at] = b"\"\\{}[],:0 ntfu-"[rng.below(15)];
                if let Ok(corrupt) = std::str::from_utf8(&bytes) {
                    let parsed = parse_chunk(corrupt);
                    if serde_json::from_str::<Value>(corrupt).is_ok_and(|v| v.is_object()) {
                        assert!(parsed.is_ok(), "{corrupt}: {parsed:?}");
                    }
                }
                bytes[at] = old;
            }
        }
        for bad in [
            "",
            "[]",
            "\"x\"",
            "{",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\":1,}",
            "{\"a\":1} x",
            "{\"a\":tru}",
            "{\"a\":[1 2]}",
        ] {
            assert!(parse_chunk(bad).is_err(), "{bad}");
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(200), "]".repeat(200));
        assert!(parse_chunk(&deep).unwrap_err().contains("too deep"));
    }

    /// Escapes decode like JSON's: simple ones, `\u`, surrogate pairs; a
    /// lone surrogate becomes U+FFFD; a bad escape is an error.
    #[test]
    fn unescapes_strings() {
        let cases = [
            (r#"a\"b\\c\/d\b\f\n\r\t"#, "a\"b\\c/d\u{8}\u{c}\n\r\t"),
            (r"\u00e9\u4e16 \uD83E\uDD80!", "é世 🦀!"),
            (r"x\uD83Ey", "x\u{FFFD}y"),
            (r"\uDD80", "\u{FFFD}"),
            (r"\uD83E\u0041", "\u{FFFD}A"),
        ];
        for (raw, expected) in cases {
            assert_eq!(unescape(raw).unwrap(), expected, "{raw}");
        }
        for bad in [r"\x", r"\u12", r"\uZZZZ", "\\é"] {
            assert!(unescape(bad).is_err(), "{bad}");
        }
    }

    /// The eight-bytes-at-a-time scan finds the same position as a plain
    /// search, at every offset and alignment.
    #[test]
    fn swar_scan_matches_naive_search() {
        let mut rng = Rng(7);
        for _ in 0..2000 {
            let len = rng.below(40);
            let bytes: Vec<u8> = (0..len)
                .map(|_| match rng.below(20) {
                    0 => b'"',
                    1 => b'\\',
                    2 => 0x80 | u8::try_from(rng.below(64)).unwrap(),
                    _ => b' ' + u8::try_from(rng.below(90)).unwrap(),
                })
                .collect();
            for from in 0..=len {
                let naive = bytes[from..]
                    .iter()
                    .position(|b| *b == b'"' || *b == b'\\')
                    .map_or(len, |p| from + p);
                assert_eq!(
                    quote_or_backslash(&bytes, from),
                    naive,
                    "{bytes:?} from {from}"
                );
            }
        }
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

    // ---- Fixture tests: raw llama-server exchanges. ----

    /// A raw recorded HTTP response.
    struct Recorded {
        /// File name, for messages.
        name: String,
        /// HTTP status code.
        status: u16,
        /// Body bytes, de-chunked if needed.
        body: Vec<u8>,
    }

    /// The fixture root, or `None` (with a note) when it is not checked out.
    fn fixture_dir() -> Option<PathBuf> {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/llama-server");
        if dir.is_dir() {
            Some(dir)
        } else {
            println!("note: {} is missing; fixture tests skipped", dir.display());
            None
        }
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
            let size =
                usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
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
            parser.push(now, &mut frames);
            if let Err(err) = feed(&mut frames, &mut events) {
                return (events, Err(err));
            }
        }
        parser.finish(&mut frames);
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
        let Some(root) = fixture_dir() else { return };
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
                let err =
                    decode_error_body(recorded.status, &String::from_utf8_lossy(&recorded.body));
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
                    println!(
                        "note: {name}: this template made the model answer in text, no tool call"
                    );
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
        let Some(root) = fixture_dir() else { return };
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
}
