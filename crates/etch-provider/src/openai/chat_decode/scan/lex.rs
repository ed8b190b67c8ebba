//! Byte-level JSON lexing for the chunk parser: skipping whitespace and
//! whole values, finding the end of a string eight bytes at a time, and
//! decoding string escapes, with the syntax errors these report.
//!
//! It owns the speed-critical inner loops and the nesting limit. It must
//! not know the shape of a chunk (which keys matter, what a delta is): the
//! parser in [`super`] walks the structure and calls in here.

use std::borrow::Cow;

/// Deepest nesting the chunk parser follows (serde_json's own limit).
pub(super) const MAX_DEPTH: usize = 128;

/// What was wrong with a frame's JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reason {
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
    pub(super) fn message(self) -> &'static str {
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
pub(super) struct SyntaxError {
    /// Byte position (saturated at `u32::MAX`).
    pub(super) at: u32,
    /// What was wrong.
    pub(super) reason: Reason,
}

/// Builds a [`SyntaxError`].
pub(super) fn syntax(at: usize, reason: Reason) -> SyntaxError {
    SyntaxError {
        at: u32::try_from(at).unwrap_or(u32::MAX),
        reason,
    }
}

/// The position of the first non-whitespace byte at or after `at`.
#[inline]
pub(super) fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Scans the string whose opening quote is at `at`; returns the position of
/// its closing quote and whether it contains escapes (which are not
/// validated here).
#[inline]
pub(super) fn scan_string(bytes: &[u8], at: usize) -> Result<(usize, bool), SyntaxError> {
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
pub(super) fn skip_value(bytes: &[u8], at: usize, depth: usize) -> Result<usize, SyntaxError> {
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
pub(super) fn quote_or_backslash(bytes: &[u8], from: usize) -> usize {
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
pub(super) fn unescape(raw: &str) -> Result<Cow<'_, str>, &'static str> {
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
