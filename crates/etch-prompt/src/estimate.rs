//! The etch token estimator (E-CTX-21, C22): a dependency-free approximation
//! used for context statistics and the compaction trigger.
//!
//! Rules: an ASCII word-like run (letters, digits, `_`) counts one token per
//! four characters, rounded up; every other non-whitespace ASCII character
//! counts one; ASCII whitespace counts nothing; every non-ASCII character
//! counts one. This module owns only that arithmetic; it must not know where
//! text comes from beyond the [`Message`] shape.

use std::fmt;

use etch_model::{ContentPart, Message};

/// Byte classes: whether a byte continues an ASCII word run.
static WORD: [bool; 256] = word_table();

/// Tokens a byte costs when it is not part of a word run: 1 for ASCII
/// punctuation and control characters and for the first byte of a non-ASCII
/// character; 0 for ASCII whitespace and UTF-8 continuation bytes.
static COST: [u8; 256] = cost_table();

/// Builds [`WORD`].
const fn word_table() -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        // `b < 256`, so the cast is lossless.
        #[allow(clippy::cast_possible_truncation)]
        let byte = b as u8;
        table[b] = byte.is_ascii_alphanumeric() || byte == b'_';
        b += 1;
    }
    table
}

/// Builds [`COST`].
const fn cost_table() -> [u8; 256] {
    let mut table = [0; 256];
    let mut b = 0;
    while b < 256 {
        #[allow(clippy::cast_possible_truncation)]
        let byte = b as u8;
        let whitespace = matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
        let continuation = byte & 0xc0 == 0x80;
        let word = byte.is_ascii_alphanumeric() || byte == b'_';
        table[b] = if whitespace || continuation || word {
            0
        } else {
            1
        };
        b += 1;
    }
    table
}

/// A streaming estimator: text may arrive in pieces split anywhere (even
/// inside a word), and the total is the same as for the joined text. It also
/// implements [`fmt::Write`], so JSON can be measured without building a
/// string.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokenCounter {
    /// Tokens counted so far.
    total: u64,
    /// Position inside the current word run, modulo 4; 0 outside a run.
    phase: u8,
}

impl TokenCounter {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `text`.
    ///
    /// A run of `n` word bytes costs `ceil(n / 4)`: one token at every fourth
    /// byte of the run, starting with its first. Counting it that way needs no
    /// flush at the end of a run and keeps the loop free of branches.
    pub fn feed(&mut self, text: &str) {
        let mut total = 0;
        let mut phase = self.phase;
        for &byte in text.as_bytes() {
            let index = usize::from(byte);
            let word = WORD[index];
            total += u64::from(COST[index]) + u64::from(word && phase == 0);
            phase = if word { (phase + 1) & 3 } else { 0 };
        }
        self.total += total;
        self.phase = phase;
    }

    /// The estimate of everything fed so far.
    pub fn total(&self) -> u64 {
        self.total
    }
}

impl fmt::Write for TokenCounter {
    /// Feeds each formatted piece; never fails.
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.feed(text);
        Ok(())
    }
}

/// The estimated token count of `text`.
pub fn tokens(text: &str) -> u64 {
    let mut counter = TokenCounter::new();
    counter.feed(text);
    counter.total()
}

/// The estimated token count of one message: its text parts; a tool call
/// costs its name plus its JSON arguments text; a provider item costs its
/// JSON text. Parts are counted separately, as they are separate on the wire.
pub fn message_tokens(message: &Message) -> u64 {
    match message {
        Message::User { content }
        | Message::Assistant { content }
        | Message::Tool { content, .. } => content.iter().map(part_tokens).sum(),
        Message::ProviderItem(item) => json_tokens(&item.item),
    }
}

/// The estimate of one content part.
fn part_tokens(part: &ContentPart) -> u64 {
    match part {
        ContentPart::Text { text } => tokens(text),
        ContentPart::ToolCall(call) => tokens(&call.name) + json_tokens(&call.arguments),
        ContentPart::Image(image) => image.estimated_tokens(),
    }
}

/// The estimate of a value's compact JSON text, streamed through the counter.
fn json_tokens(value: &impl fmt::Display) -> u64 {
    let mut counter = TokenCounter::new();
    // `TokenCounter` never fails to write; a failing `Display` would only
    // shorten the estimate.
    let _ = fmt::write(&mut counter, format_args!("{value}"));
    counter.total()
}

#[cfg(test)]
mod tests {
    use etch_model::{ProviderItem, ToolCall};
    use serde_json::json;

    use super::*;

    /// The cases of the brief and E-CTX-21.
    #[test]
    fn rules() {
        assert_eq!(tokens(""), 0);
        assert_eq!(tokens("hello world"), 4);
        assert_eq!(tokens("a.b"), 3);
        assert_eq!(tokens("héllo"), 3); // h, é, llo
        assert_eq!(tokens("日本語"), 3);
        assert_eq!(tokens(" \t\n\r\x0b\x0c"), 0);
        assert_eq!(tokens("abcd"), 1);
        assert_eq!(tokens("abcde"), 2);
        assert_eq!(tokens("snake_case_identifier"), 6); // 21 chars
        assert_eq!(tokens(&"x".repeat(4000)), 1000);
        assert_eq!(tokens(&"x".repeat(4001)), 1001);
        assert_eq!(tokens("fn main() {}"), 1 + 1 + 4);
        assert_eq!(tokens("\u{0}"), 1);
    }

    /// Feeding pieces split inside a word gives the joined result.
    #[test]
    fn streaming_matches_whole() {
        let text = "internationalization é déjà-vu, x_y_z 12345678901";
        for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let mut counter = TokenCounter::new();
            counter.feed(&text[..cut]);
            counter.feed(&text[cut..]);
            assert_eq!(counter.total(), tokens(text), "cut at {cut}");
        }
    }

    /// Messages: text parts, tool calls as name + JSON, provider items as JSON.
    #[test]
    fn messages() {
        assert_eq!(message_tokens(&Message::user_text("hello world")), 4);
        let call = ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "a.rs"}),
        };
        // read = 1; {"path":"a.rs"} = { " path " : " a . rs " } = 11
        let assistant = Message::Assistant {
            content: vec![ContentPart::text("ok"), ContentPart::ToolCall(call)],
        };
        assert_eq!(message_tokens(&assistant), 1 + 1 + 11);
        let tool = Message::Tool {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![ContentPart::text("abc")],
            is_error: false,
        };
        assert_eq!(message_tokens(&tool), 1);
        let item = Message::ProviderItem(ProviderItem {
            provider: "openai".into(),
            api: "responses".into(),
            item_type: "reasoning".into(),
            item: json!({"a": 1}),
            model: None,
        });
        assert_eq!(message_tokens(&item), 7); // { " a " : 1 }
    }
}
