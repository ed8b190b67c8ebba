//! The hand-written single-pass parser of one `chat.completion.chunk`
//! frame: it reads the few fields the decoder needs (first choice's delta,
//! `finish_reason`, `usage`, `error`) into a borrowed [`Chunk`] and checks
//! the structure of the rest without building it.
//!
//! It owns the chunk's wire shape and the walk over it; the byte-level
//! lexing (whitespace, strings, skipped values, escapes) is in [`lex`]. It
//! must not know what the fields mean for the stream (block order, tool-call
//! assembly, stop reasons: that is the decoder's), nor about SSE framing,
//! HTTP or error classification.

mod lex;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use etch_model::Usage;
use serde::Deserialize;
use serde_json::Value;

use self::lex::{
    MAX_DEPTH, Reason, SyntaxError, scan_string, skip_value, skip_ws, syntax, unescape,
};

/// The parts of one `chat.completion.chunk` the decoder reads. It is filled
/// in place while parsing (moving nested structs around was a measurable
/// share of the decoding time).
#[derive(Debug, Default)]
pub(super) struct Chunk<'a> {
    /// Whether `choices` had a first element (etch asks for one choice, so
    /// only the first counts); not for `null` or the `[]` of the usage-only
    /// last chunk.
    pub(super) choice: bool,
    /// The first choice's increment (empty when the server omits it or sends
    /// `null`).
    pub(super) delta: Delta<'a>,
    /// The first choice's `finish_reason`; `None` until the last content
    /// chunk.
    pub(super) finish_reason: Option<Cow<'a, str>>,
    /// `usage`, on the last chunk with `include_usage` (`null` on the others
    /// with some servers).
    pub(super) usage: Option<Usage>,
    /// `error`, an in-stream error object or string; rare, so a generic
    /// (boxed, to keep the chunk small) value is fine.
    pub(super) error: Option<Box<Value>>,
}

/// The increment a choice carries. Strings borrow from the frame unless they
/// contain escapes.
#[derive(Debug, Default)]
pub(super) struct Delta<'a> {
    /// Answer text (`null` or `""` on role-only and tool-call chunks).
    pub(super) content: Option<Cow<'a, str>>,
    /// Reasoning text as llama.cpp, vLLM and DeepSeek send it.
    pub(super) reasoning_content: Option<Cow<'a, str>>,
    /// Reasoning text as OpenRouter and newer vLLM name it (used only when
    /// `reasoning_content` is absent, since some servers send both).
    pub(super) reasoning: Option<Cow<'a, str>>,
    /// Tool-call fragments (no allocation when there are none).
    pub(super) tool_calls: Vec<ToolFragment<'a>>,
}

/// A fragment of one tool call.
#[derive(Debug, Default)]
pub(super) struct ToolFragment<'a> {
    /// Which call the fragment belongs to; servers that omit it are read as
    /// using the fragment's position in the array.
    pub(super) index: Option<usize>,
    /// Provider call id, normally only on the first fragment.
    pub(super) id: Option<Cow<'a, str>>,
    /// Tool name, normally only on the first fragment.
    pub(super) name: Option<Cow<'a, str>>,
    /// A fragment of the JSON argument text.
    pub(super) arguments: Option<Cow<'a, str>>,
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
pub(super) fn parse_chunk(text: &str) -> Result<Chunk<'_>, String> {
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
