//! Server-sent events framing (E-MOD-08), shared by every HTTP streaming
//! provider.
//!
//! [`SseParser`] turns raw response-body bytes, in chunks of any size, into
//! complete [`SseFrame`]s following the WHATWG `text/event-stream` rules:
//! lines end with `\n`, `\r\n` or `\r`; a blank line dispatches the frame;
//! `data:` lines are joined with `\n`; `event:` and `id:` are kept; comments
//! and unknown fields are dropped; empty frames are never emitted. It is
//! frame-oriented: a line may be split at any byte, even inside a UTF-8
//! character, because bytes are buffered and a line is decoded only once
//! complete. What it holds of one frame (its unfinished line, data, event
//! and id) is capped ([`DEFAULT_MAX_FRAME_BYTES`] unless set): past the cap
//! it stops buffering and fails with [`FrameTooLarge`], so a server cannot
//! make it hold an endless line in memory before the caller sees it.
//!
//! It owns only the framing. It must not know what the data means (JSON,
//! `[DONE]`, vendor event names), nor anything about HTTP or the network:
//! the caller feeds it bytes and interprets the frames.

/// The default cap on one frame: far above any real model event (the
/// largest, a Responses `response.completed` repeating a whole answer, is
/// well under a megabyte for a 128k-token answer), small enough that a
/// hostile server cannot take the memory.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 << 20;

/// A frame grew past the parser's cap; the parser dropped what it held
/// and must not be fed again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTooLarge {
    /// The cap, in bytes.
    pub limit: usize,
    /// How many bytes of the frame had arrived when it was stopped (at
    /// least this many; the rest was never read into memory).
    pub reached: usize,
}

impl std::fmt::Display for FrameTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "one stream frame passed {} bytes ({} had arrived)",
            self.limit, self.reached
        )
    }
}

impl std::error::Error for FrameTooLarge {}

/// One dispatched server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseFrame {
    /// The `event:` field of this frame, if it had one.
    pub event: Option<String>,
    /// All `data:` lines of the frame, joined with `\n`.
    pub data: String,
    /// The `id:` field of this frame, if it had one. Unlike a browser's
    /// "last event ID" it does not carry over to later frames: nothing here
    /// reconnects, so only the frame's own id is meaningful.
    pub id: Option<String>,
}

/// Incremental `text/event-stream` parser; see the module docs for the rules.
#[derive(Debug)]
pub struct SseParser {
    /// Most bytes of one frame held at a time.
    max_frame: usize,
    /// Bytes of a line that has started but whose line ending has not arrived
    /// yet. Complete lines inside one chunk never go through this buffer.
    partial: Vec<u8>,
    /// The previous chunk ended with `\r`, so a `\n` opening the next chunk
    /// belongs to that same line ending and must be skipped.
    pending_cr: bool,
    /// Whether the first line was seen yet (a leading byte-order mark is only
    /// stripped from the very first line).
    seen_line: bool,
    /// Data of the frame being assembled.
    data: String,
    /// Whether the frame being assembled had at least one `data` line (so an
    /// explicit empty `data:` still yields a frame).
    has_data: bool,
    /// `event` field of the frame being assembled.
    event: Option<String>,
    /// `id` field of the frame being assembled.
    id: Option<String>,
    /// Body bytes fed so far.
    bytes: u64,
}

/// UTF-8 byte-order mark, which the event-stream format allows (and strips)
/// at the very start of the stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Default for SseParser {
    /// A parser capped at [`DEFAULT_MAX_FRAME_BYTES`].
    fn default() -> Self {
        Self::with_max_frame(DEFAULT_MAX_FRAME_BYTES)
    }
}

impl SseParser {
    /// A parser at the start of a body, capped at
    /// [`DEFAULT_MAX_FRAME_BYTES`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser that holds at most `max_frame` bytes of one frame.
    pub fn with_max_frame(max_frame: usize) -> Self {
        Self {
            max_frame,
            partial: Vec::new(),
            pending_cr: false,
            seen_line: false,
            data: String::new(),
            has_data: false,
            event: None,
            id: None,
            bytes: 0,
        }
    }

    /// Feeds raw body bytes; appends every completed frame to `out`.
    ///
    /// Fails once the frame being assembled would hold more than the cap;
    /// frames completed earlier in `chunk` are in `out` all the same.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseFrame>) -> Result<(), FrameTooLarge> {
        self.bytes += chunk.len() as u64;
        let mut pos = 0;
        if self.pending_cr && !chunk.is_empty() {
            self.pending_cr = false;
            if chunk[0] == b'\n' {
                pos = 1;
            }
        }
        while pos < chunk.len() {
            let rest = &chunk[pos..];
            // The blank line closing a frame is the most common line of all;
            // spare it the search.
            let found = if self.partial.is_empty() && matches!(rest[0], b'\n' | b'\r') {
                Some(0)
            } else {
                memchr::memchr2(b'\n', b'\r', rest)
            };
            let Some(end) = found else {
                self.room(rest.len())?;
                self.partial.extend_from_slice(rest);
                break;
            };
            if self.partial.is_empty() {
                self.line(&rest[..end], out)?;
            } else {
                // The line started in an earlier chunk: finish it in the
                // buffer, then hand the buffer back (keeping its capacity).
                self.room(end)?;
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..end]);
                self.line(&line, out)?;
                line.clear();
                self.partial = line;
            }
            pos += end + 1;
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => pos += 1,
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
        }
        Ok(())
    }

    /// Fails, dropping everything held, if `extra` more bytes would take
    /// the frame being assembled past the cap. The line a byte belongs to
    /// is counted once: while it is unfinished in `partial` (field name
    /// included), or once it is taken out of `partial` to be interpreted
    /// (its value only).
    fn room(&mut self, extra: usize) -> Result<(), FrameTooLarge> {
        let held = self.partial.len()
            + self.data.len()
            + self.event.as_ref().map_or(0, String::len)
            + self.id.as_ref().map_or(0, String::len);
        let reached = held.saturating_add(extra);
        if reached <= self.max_frame {
            return Ok(());
        }
        self.partial = Vec::new();
        self.data = String::new();
        self.event = None;
        self.id = None;
        self.has_data = false;
        Err(FrameTooLarge {
            limit: self.max_frame,
            reached,
        })
    }

    /// End of body: returns an unterminated trailing frame, if any.
    ///
    /// A last line without a line ending is processed as a line, and a frame
    /// that had fields but no closing blank line is dispatched. The parser is
    /// then ready for a new body (the byte count is kept).
    pub fn finish(&mut self, out: &mut Vec<SseFrame>) -> Result<(), FrameTooLarge> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, out)?;
        }
        self.pending_cr = false;
        self.seen_line = false;
        self.dispatch(out);
        Ok(())
    }

    /// Body bytes fed so far (the real byte count, for metrics).
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// Interprets one complete line (without its line ending).
    fn line(&mut self, mut line: &[u8], out: &mut Vec<SseFrame>) -> Result<(), FrameTooLarge> {
        if !self.seen_line {
            self.seen_line = true;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        // Fast path for the line nearly every frame consists of.
        if let Some(value) = line.strip_prefix(b"data:") {
            return self.data_line(value.strip_prefix(b" ").unwrap_or(value));
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(0) => return Ok(()), // a comment
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => return self.data_line(value),
            b"event" => {
                self.event = None;
                self.room(value.len())?;
                self.event = Some(String::from_utf8_lossy(value).into_owned());
            }
            // An id containing NUL is ignored by the standard.
            b"id" if !value.contains(&0) => {
                self.id = None;
                self.room(value.len())?;
                self.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            _ => {} // `retry` and unknown fields are not needed here.
        }
        Ok(())
    }

    /// Appends the value of a `data` line to the frame being assembled.
    fn data_line(&mut self, value: &[u8]) -> Result<(), FrameTooLarge> {
        self.room(value.len() + usize::from(self.has_data))?;
        if self.has_data {
            self.data.push('\n');
        }
        self.has_data = true;
        push_lossy(&mut self.data, value);
        Ok(())
    }

    /// Ends the frame being assembled, emitting it unless it is empty.
    fn dispatch(&mut self, out: &mut Vec<SseFrame>) {
        if self.has_data || self.event.is_some() {
            out.push(SseFrame {
                event: self.event.take(),
                data: std::mem::take(&mut self.data),
                id: self.id.take(),
            });
        } else {
            self.id = None;
        }
        self.has_data = false;
    }
}

/// Appends `bytes` as text, replacing invalid UTF-8 with U+FFFD, without an
/// intermediate allocation in the (usual) valid case.
fn push_lossy(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => out.push_str(text),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `body` fed in one piece and returns the frames (finish included).
    fn parse_whole(body: &[u8]) -> Vec<SseFrame> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.push(body, &mut out).unwrap();
        parser.finish(&mut out).unwrap();
        out
    }

    /// A data-only frame, to keep expectations short.
    fn data(text: &str) -> SseFrame {
        SseFrame {
            event: None,
            data: text.to_owned(),
            id: None,
        }
    }

    /// A stream mixing every line ending, comments, fields and multi-byte
    /// UTF-8, used by the split tests.
    const SAMPLE: &str = ": hello comment\n\
        data: {\"a\":\"héllo — 世界 🦀\"}\n\n\
        event: update\r\nid: 7\r\ndata: first\r\ndata:second\r\n\r\n\
        data: lone cr\rdata: 🦀🦀\r\r\
        \n\n\n\
        retry: 100\nunknown: x\ndata\n\n\
        data: tail without blank line";

    /// Multiple `data:` lines join with `\n`; one leading space is stripped,
    /// and only one.
    #[test]
    fn joins_multiline_data() {
        let frames = parse_whole(b"data: one\ndata:two\ndata:  three\n\n");
        assert_eq!(frames, vec![data("one\ntwo\n three")]);
    }

    /// Comments and unknown fields never reach the caller.
    #[test]
    fn ignores_comments_and_unknown_fields() {
        let frames = parse_whole(b": keep-alive\n\ndata: x\n: mid\nfoo: bar\nretry: 5\n\n");
        assert_eq!(frames, vec![data("x")]);
    }

    /// Blank lines with no fields in between, or frames with only comments or
    /// ids, produce nothing; an event with no data does produce a frame.
    #[test]
    fn skips_empty_frames() {
        let frames = parse_whole(b"\n\n\n: c\n\nid: 1\n\nevent: ping\n\ndata:\n\n");
        assert_eq!(
            frames,
            vec![
                SseFrame {
                    event: Some("ping".into()),
                    data: String::new(),
                    id: None,
                },
                data(""),
            ]
        );
    }

    /// `event:` and `id:` are reported with their frame and do not leak into
    /// the next one.
    #[test]
    fn keeps_event_and_id() {
        let frames = parse_whole(b"event: delta\nid: 42\ndata: d\n\ndata: e\n\n");
        assert_eq!(
            frames,
            vec![
                SseFrame {
                    event: Some("delta".into()),
                    data: "d".into(),
                    id: Some("42".into()),
                },
                data("e"),
            ]
        );
    }

    /// `\r\n` and a lone `\r` both end lines, also mixed in one stream.
    #[test]
    fn handles_crlf_and_lone_cr() {
        assert_eq!(
            parse_whole(b"data: a\r\ndata: b\r\n\r\n"),
            vec![data("a\nb")]
        );
        assert_eq!(
            parse_whole(b"data: a\rdata: b\r\rdata: c\n\n"),
            vec![data("a\nb"), data("c")]
        );
    }

    /// A `\r` ending one chunk and a `\n` opening the next are one line
    /// ending, not a blank line that would split the frame; a lone `\r` is
    /// a full line ending on its own.
    #[test]
    fn crlf_split_across_chunks_is_one_line_ending() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.push(b"data: a\r", &mut out).unwrap();
        parser.push(b"\ndata: b\r", &mut out).unwrap();
        parser.push(b"", &mut out).unwrap();
        assert!(out.is_empty());
        parser.push(b"\n\r", &mut out).unwrap();
        assert_eq!(out, vec![data("a\nb")]);
        parser.push(b"\n", &mut out).unwrap();
        parser.finish(&mut out).unwrap();
        assert_eq!(out, vec![data("a\nb")]);

        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.push(b"data: c\r", &mut out).unwrap();
        parser.push(b"\n", &mut out).unwrap();
        assert!(out.is_empty());
        parser.push(b"\n", &mut out).unwrap();
        assert_eq!(out, vec![data("c")]);
    }

    /// Splitting the sample at every byte position (including inside
    /// multi-byte characters and between `\r` and `\n`) gives the same frames
    /// as parsing it whole, and so does feeding it byte by byte.
    #[test]
    fn split_at_every_byte_matches_unsplit() {
        let whole = parse_whole(SAMPLE.as_bytes());
        assert_eq!(whole.len(), 5, "{whole:#?}");
        assert_eq!(whole[0], data("{\"a\":\"héllo — 世界 🦀\"}"));
        assert_eq!(
            whole[1],
            SseFrame {
                event: Some("update".into()),
                data: "first\nsecond".into(),
                id: Some("7".into()),
            }
        );
        assert_eq!(whole[2], data("lone cr\n🦀🦀"));
        assert_eq!(whole[3], data(""));
        assert_eq!(whole[4], data("tail without blank line"));
        let bytes = SAMPLE.as_bytes();
        for split in 0..=bytes.len() {
            let mut parser = SseParser::new();
            let mut out = Vec::new();
            parser.push(&bytes[..split], &mut out).unwrap();
            parser.push(&bytes[split..], &mut out).unwrap();
            parser.finish(&mut out).unwrap();
            assert_eq!(out, whole, "split at byte {split}");
        }
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for byte in bytes {
            parser.push(std::slice::from_ref(byte), &mut out).unwrap();
        }
        parser.finish(&mut out).unwrap();
        assert_eq!(out, whole, "byte by byte");
    }

    /// A frame whose blank line never came is surfaced by `finish`, also when
    /// its last line has no line ending at all.
    #[test]
    fn trailing_frame_at_eof() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser
            .push(b"data: done\n\ndata: last\n", &mut out)
            .unwrap();
        assert_eq!(out, vec![data("done")]);
        parser.finish(&mut out).unwrap();
        assert_eq!(out, vec![data("done"), data("last")]);
        assert_eq!(parse_whole(b"data: no newline"), vec![data("no newline")]);
        assert_eq!(parse_whole(b"data: x\n\n: comment only"), vec![data("x")]);
    }

    /// The byte count is the real body size, whatever the chunking.
    #[test]
    fn counts_bytes_read() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        assert_eq!(parser.bytes_read(), 0);
        for chunk in SAMPLE.as_bytes().chunks(7) {
            parser.push(chunk, &mut out).unwrap();
        }
        parser.finish(&mut out).unwrap();
        assert_eq!(parser.bytes_read(), SAMPLE.len() as u64);
    }

    /// Invalid UTF-8 is replaced, not rejected, and a leading BOM is dropped.
    #[test]
    fn lossy_utf8_and_bom() {
        assert_eq!(
            parse_whole(b"\xEF\xBB\xBFdata: a\xFFb\n\n"),
            vec![data("a\u{FFFD}b")]
        );
    }

    /// A line well under the cap has no other limit: a 2 MB data line
    /// arrives intact, also when fed in small chunks.
    #[test]
    fn two_megabyte_line() {
        let payload = "x".repeat(2 * 1024 * 1024);
        let body = format!("data: {payload}\n\n");
        assert_eq!(parse_whole(body.as_bytes()), vec![data(&payload)]);
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in body.as_bytes().chunks(4093) {
            parser.push(chunk, &mut out).unwrap();
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data.len(), payload.len());
    }

    /// A frame of exactly the cap passes; one byte more fails naming the
    /// cap and the size reached, whether the bytes come in one line or
    /// several `data:` lines (joined with `\n`, which counts).
    #[test]
    fn frame_just_under_and_just_over_the_cap() {
        let fits = format!("data: {}\n\n", "x".repeat(64));
        let mut parser = SseParser::with_max_frame(64);
        let mut out = Vec::new();
        parser.push(fits.as_bytes(), &mut out).unwrap();
        assert_eq!(out, vec![data(&"x".repeat(64))]);

        let over = format!("data: {}\n\n", "x".repeat(65));
        let mut parser = SseParser::with_max_frame(64);
        let mut out = Vec::new();
        let err = parser.push(over.as_bytes(), &mut out).unwrap_err();
        assert_eq!(
            err,
            FrameTooLarge {
                limit: 64,
                reached: 65
            }
        );
        assert!(out.is_empty());
        assert!(err.to_string().contains("passed 64 bytes"), "{err}");

        let lines = format!("data: {}\ndata: {}\n\n", "a".repeat(32), "b".repeat(31));
        let mut parser = SseParser::with_max_frame(64);
        let mut out = Vec::new();
        parser.push(lines.as_bytes(), &mut out).unwrap();
        assert_eq!(out[0].data.len(), 64);
        let lines = format!("data: {}\ndata: {}\n\n", "a".repeat(32), "b".repeat(32));
        let mut parser = SseParser::with_max_frame(64);
        let err = parser.push(lines.as_bytes(), &mut Vec::new()).unwrap_err();
        assert_eq!(err.reached, 65);
    }

    /// A line split across chunks is stopped as soon as what is held would
    /// pass the cap, not once the whole line is in: the parser never holds
    /// more than the cap, and frames before it in the stream still arrive.
    #[test]
    fn a_long_line_split_across_chunks_stops_at_the_cap() {
        let mut parser = SseParser::with_max_frame(1024);
        let mut out = Vec::new();
        parser.push(b"data: first\n\n", &mut out).unwrap();
        let line = format!("data: {}", "y".repeat(4096));
        let mut chunks = line.as_bytes().chunks(100);
        let mut fed = 0;
        let err = loop {
            let chunk = chunks.next().expect("the cap was never hit");
            match parser.push(chunk, &mut out) {
                Ok(()) => {
                    fed += chunk.len();
                    assert!(parser.partial.len() <= 1024, "{}", parser.partial.len());
                }
                Err(err) => break err,
            }
        };
        assert_eq!(fed, 1000, "stopped at the first chunk past the cap");
        assert_eq!(err.limit, 1024);
        assert_eq!(err.reached, 1100);
        assert_eq!(parser.partial.capacity(), 0, "what was held is dropped");
        assert_eq!(out, vec![data("first")]);

        // A line of exactly the cap (its field name counts while it is
        // unfinished), split the same way, arrives whole.
        let mut parser = SseParser::with_max_frame(1024);
        let mut out = Vec::new();
        let line = format!("data: {}\n\n", "y".repeat(1018));
        for chunk in line.as_bytes().chunks(100) {
            parser.push(chunk, &mut out).unwrap();
        }
        assert_eq!(out, vec![data(&"y".repeat(1018))]);
    }

    /// Comments, `event:` and a last line without an ending count too:
    /// nothing the parser buffers escapes the cap.
    #[test]
    fn every_buffered_field_counts() {
        let mut parser = SseParser::with_max_frame(16);
        let err = parser
            .push(format!(": {}", "c".repeat(40)).as_bytes(), &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.reached, 42);
        let mut parser = SseParser::with_max_frame(16);
        let err = parser
            .push(
                format!("event: {}\n", "e".repeat(17)).as_bytes(),
                &mut Vec::new(),
            )
            .unwrap_err();
        assert_eq!(err.reached, 17);
        let mut parser = SseParser::with_max_frame(16);
        let mut out = Vec::new();
        parser.push(b"data: 0123456789", &mut out).unwrap();
        parser.finish(&mut out).unwrap();
        assert_eq!(out, vec![data("0123456789")]);
    }
}
