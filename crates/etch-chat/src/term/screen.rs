//! The inline screen: history written once into the terminal's own
//! scrollback, and a live area at the bottom redrawn in place.
//!
//! The invariant that makes resizes safe: between frames the (hidden)
//! cursor rests at column 0 of the live area's first row. A terminal that
//! reflows lines on a width change (tmux, VTE, kitty, iTerm) keeps the
//! cursor on that cell, and one that does not (xterm) leaves it there
//! too, so the next frame's "return to column 0, erase everything below"
//! removes the whole old live area however it was rewrapped, and never
//! touches a history row above it. No absolute positions, no scroll
//! regions, never `ESC[2J` or `ESC[3J`: the history is the terminal's
//! once written. The caret in the editor is drawn as a reversed cell.
//!
//! Each frame is one write wrapped in a synchronized update (DEC mode
//! 2026), so terminals that support it show no half-drawn frames; the
//! others ignore the mode. The cost of a frame is the live area's size,
//! whatever the length of the session. This module must not know what
//! the lines mean.

use std::fmt::Write as _;
use std::io::{self, Write};

use ratatui_core::text::Line;

use super::ansi;

/// Begin and end of a synchronized update.
const SYNC_BEGIN: &str = "\u{1b}[?2026h";
/// See [`SYNC_BEGIN`].
const SYNC_END: &str = "\u{1b}[?2026l";
/// Erase from the cursor to the end of the screen.
const ERASE_BELOW: &str = "\u{1b}[J";

/// The terminal as the chat draws on it.
pub struct Screen {
    /// Where bytes go (the terminal, or a test's buffer).
    out: Box<dyn Write + Send>,
    /// Columns.
    width: u16,
    /// Rows.
    height: u16,
    /// Rows of the live area now on screen (the cursor is on its first).
    live_rows: u16,
    /// Whether to write colours and attributes.
    color: bool,
    /// Bytes written, for benchmarks and tests.
    written: u64,
}

impl Screen {
    /// A screen of `width` x `height` writing to `out`.
    pub fn new(out: Box<dyn Write + Send>, width: u16, height: u16, color: bool) -> Self {
        Self {
            out,
            width: width.max(1),
            height: height.max(1),
            live_rows: 0,
            color,
            written: 0,
        }
    }

    /// Columns.
    pub fn width(&self) -> u16 {
        self.width
    }

    /// Rows.
    pub fn height(&self) -> u16 {
        self.height
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The terminal's new size; the next frame draws at it.
    pub fn resize(&mut self, width: u16, height: u16) {
        self.width = width.max(1);
        self.height = height.max(1);
    }

    /// Draws one frame: `history` lines (already wrapped to the width) go
    /// into the scrollback for good, then `live` replaces the live area.
    /// The live area is cut to the screen's height, keeping its last rows
    /// (the editor and footer live at the bottom), so it never scrolls
    /// into the history.
    pub fn frame(&mut self, history: &[Line<'_>], live: &[Line<'_>]) -> io::Result<()> {
        let width = usize::from(self.width);
        let keep = live.len().min(usize::from(self.height));
        let live = &live[live.len() - keep..];
        let mut buf = String::with_capacity(64 + (history.len() + live.len()) * (width + 16));
        buf.push_str(SYNC_BEGIN);
        buf.push('\r');
        buf.push_str(ERASE_BELOW);
        for line in history {
            ansi::push_line(&mut buf, line, width, self.color);
            buf.push_str("\r\n");
        }
        // Live rows leave the last column empty: a character the terminal
        // draws wider than Unicode says (an emoji with a variation
        // selector, an ambiguous-width symbol in a CJK terminal) then
        // still fits, and the row never wraps, which would put the cursor
        // off the live area's first row.
        let live_width = width.saturating_sub(1).max(1);
        for (i, line) in live.iter().enumerate() {
            if i > 0 {
                buf.push_str("\r\n");
            }
            ansi::push_line(&mut buf, line, live_width, self.color);
        }
        let rows = u16::try_from(keep).unwrap_or(u16::MAX);
        if rows > 1 {
            let _ = write!(buf, "\u{1b}[{}A", rows - 1);
        }
        buf.push('\r');
        buf.push_str(SYNC_END);
        self.live_rows = rows;
        self.emit(&buf)
    }

    /// Removes the live area and writes `lines` as the last history, with
    /// the cursor left below them: what the terminal keeps after the chat.
    pub fn close(&mut self, lines: &[Line<'_>]) -> io::Result<()> {
        let width = usize::from(self.width);
        let mut buf = String::new();
        buf.push('\r');
        buf.push_str(ERASE_BELOW);
        for line in lines {
            ansi::push_line(&mut buf, line, width, self.color);
            buf.push_str("\r\n");
        }
        self.live_rows = 0;
        self.emit(&buf)
    }

    /// Rows the live area had at the last frame.
    pub fn live_rows(&self) -> u16 {
        self.live_rows
    }

    /// Writes and flushes `text`.
    fn emit(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(text.as_bytes())?;
        self.out.flush()?;
        self.written += text.len() as u64;
        Ok(())
    }
}
