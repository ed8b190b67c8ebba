//! The inline screen: history written once into the terminal's own
//! scrollback, and a live area at the bottom redrawn in place.
//!
//! Between frames the terminal's cursor is shown at the editor's caret
//! (IME candidate windows and screen readers follow it), and the screen
//! remembers where that is in the live area. The next frame hides it,
//! moves up to column 0 of the live area's first row and erases
//! everything below: that removes the whole old live area and never
//! touches a history row above it. When the width changes, a terminal
//! that reflows lines (tmux, VTE, kitty, iTerm) rewraps the rows above
//! the caret, so the way up is counted from the widths the rows were
//! written at and the new width ([`Screen::rest_rows`]); one that does
//! not (xterm) leaves them as they were. No absolute positions, no scroll
//! regions, never `ESC[2J` or `ESC[3J`: the history is the terminal's
//! once written.
//!
//! What that alone does not survive: a reflowing terminal that narrows
//! makes the live area's rows wrap, and tmux (like others) keeps the
//! screen's bottom where it was and pushes the top rows into the
//! scrollback to make room, blank rows below notwithstanding. When the
//! live area sits near the top of the screen (a new chat), a few narrowing
//! steps push its own first rows into the scrollback, where no erase can
//! reach them: stacked stale copies of the rule, editor and footer. So
//! once the terminal has been resized, the live area is kept at the bottom
//! of the screen: the rows between the last history row and the live area
//! are blank padding the screen owns (later history fills them), and a
//! reflow pushes history or padding, never the live area. The screen
//! knows the rows it is on from the terminal (a cursor position report at
//! start and after each resize, [`Screen::locate`]); without one (a
//! terminal that does not answer) it draws inline as before.
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
/// Erase the cursor's row and every row below it, the cursor staying put.
/// Not a plain `ESC[J`: at the screen's top-left corner tmux takes that
/// for clearing the whole screen and moves every row into the scrollback
/// (a stale copy of the live area each time). So: save the cursor, erase
/// its row, erase from the row below, restore.
const ERASE_BELOW: &str = "\u{1b}7\u{1b}[2K\u{1b}[1B\u{1b}[J\u{1b}8";

/// Columns a live row leaves free at the right besides the last one.
/// tmux rewraps its lines the moment a window narrows but tells the
/// program (the new size, SIGWINCH) up to 250 ms later, while a drag
/// goes on: frames drawn meanwhile are laid out for the old width. A row
/// wider than the terminal then wraps, the live area is a row taller than
/// the screen counts, and each such frame leaves its first row (the
/// working line) behind in the scrollback. Rows this much narrower
/// survive a narrowing of up to this many columns unseen (bench
/// `chat_resize.sh`: 28 stale working lines with none, 0 with 4).
const MARGIN: u16 = 4;

/// The narrowest screen that keeps [`MARGIN`].
const MARGIN_FROM: u16 = 40;

/// Hide and show the cursor.
const HIDE: &str = "\u{1b}[?25l";
/// See [`HIDE`].
const SHOW: &str = "\u{1b}[?25h";

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
    /// The screen row of the live area's first row (where the cursor
    /// rests), when the terminal told; `None` draws inline, unanchored.
    top: Option<u16>,
    /// Blank rows this screen keeps between the last history row and the
    /// live area (see the module docs).
    pad: u16,
    /// Whether the live area is kept at the bottom (after a resize).
    anchored: bool,
    /// The columns each live row took when written: how a reflowing
    /// terminal rewraps them at another width follows from these.
    live_widths: Vec<usize>,
    /// Where the cursor rests between frames: the live row and column it
    /// was put on (the caret, or the first row's start).
    rest: (u16, u16),
    /// Whether the terminal rewraps lines when its width changes.
    reflows: bool,
    /// The height the last frame was drawn at.
    drawn_height: u16,
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
            top: None,
            pad: 0,
            anchored: false,
            live_widths: Vec::new(),
            rest: (0, 0),
            reflows: true,
            drawn_height: height.max(1),
        }
    }

    /// Tells whether the terminal rewraps lines on a width change (most
    /// do; see [`super::reflows`]).
    pub fn set_reflows(&mut self, reflows: bool) {
        self.reflows = reflows;
    }

    /// The terminal reported the cursor (where it rests between frames)
    /// at screen row `row` (0-based): at start, and after a resize, once
    /// the terminal has reflowed. From the first resize on, the live area
    /// is kept at the bottom.
    pub fn locate(&mut self, row: u16, resized: bool) {
        let row = row
            .saturating_sub(self.rest_rows())
            .min(self.height.saturating_sub(1));
        self.top = Some(row);
        // Padding is blank and sits right above the live area; whatever a
        // reflow pushed off the top of the screen is no longer ours.
        self.pad = self.pad.min(row);
        self.anchored |= resized;
    }

    /// Columns.
    pub fn width(&self) -> u16 {
        self.width
    }

    /// Columns a live row may use: all but the last [`MARGIN`] + 1. The
    /// last column stays free so that a character the terminal draws
    /// wider than Unicode says (an emoji with a variation selector, an
    /// ambiguous-width symbol in a CJK terminal) still fits and the row
    /// never wraps, which would put the rows the screen counts out of step
    /// with the terminal's. The margin covers terminals that reflow before
    /// they say the width changed (see [`MARGIN`]); a screen narrower than
    /// [`MARGIN_FROM`] columns keeps every column.
    pub fn live_width(&self) -> u16 {
        let margin = if self.width >= MARGIN_FROM { MARGIN } else { 0 };
        self.width.saturating_sub(1 + margin).max(1)
    }

    /// Rows from the live area's first row down to the cursor's, as the
    /// terminal holds them now: one per live row above the cursor at the
    /// width they were written at; after a reflowing terminal changed
    /// width, as many as each row now wraps into, and the cursor's own
    /// row wraps before its column too.
    fn rest_rows(&self) -> u16 {
        let (row, col) = (usize::from(self.rest.0), usize::from(self.rest.1));
        if !self.reflows {
            return self.rest.0;
        }
        let width = usize::from(self.width);
        let above: usize = self
            .live_widths
            .iter()
            .take(row)
            .map(|&w| w.div_ceil(width).max(1))
            .sum::<usize>()
            + row.saturating_sub(self.live_widths.len());
        u16::try_from(above + col / width).unwrap_or(u16::MAX)
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
        let (width, height) = (width.max(1), height.max(1));
        if (width, height) != (self.width, self.height) {
            // The terminal has reflowed: where the live area is now, only
            // the terminal can say ([`Self::locate`]). Until it does,
            // frames draw inline, which never scrolls padding over
            // history.
            self.top = None;
        }
        self.width = width;
        self.height = height;
    }

    /// Draws one frame: `history` lines (already wrapped to the width) go
    /// into the scrollback for good, then `live` replaces the live area,
    /// and the cursor is shown at `caret` (row of `live`, column), if
    /// any. The live area is cut to the screen's height, keeping its last
    /// rows (the editor and footer live at the bottom), so it never
    /// scrolls into the history.
    pub fn frame(
        &mut self,
        history: &[Line<'_>],
        live: &[Line<'_>],
        caret: Option<(usize, usize)>,
    ) -> io::Result<()> {
        let width = usize::from(self.width);
        let keep = live.len().min(usize::from(self.height));
        let cut = live.len() - keep;
        let live = &live[cut..];
        let caret = caret
            .and_then(|(row, col)| Some((row.checked_sub(cut)?, col)))
            .filter(|&(row, _)| row < keep);
        let mut buf = String::with_capacity(64 + (history.len() + live.len()) * (width + 16));
        buf.push_str(SYNC_BEGIN);
        buf.push_str(HIDE);
        // From the top of the padding: new history fills it first. After
        // a height change the terminal may also have dropped or pulled
        // rows around the cursor, and the reflow estimate is not to be
        // trusted: the way up then counts one row per live row, the fewest
        // there can be, so the erase never starts in a history row (a row
        // a reflow split may stay behind instead).
        let above = if self.height == self.drawn_height {
            self.rest_rows()
        } else {
            self.rest.0
        };
        let up = above.saturating_add(self.pad);
        if up > 0 {
            let _ = write!(buf, "\u{1b}[{up}A");
        }
        buf.push('\r');
        buf.push_str(ERASE_BELOW);
        let bottom = self.height.saturating_sub(1);
        let mut row = self.top.map(|top| top.saturating_sub(self.pad));
        for line in history {
            ansi::push_line(&mut buf, line, width, self.color);
            buf.push_str("\r\n");
            // A line break on the last row scrolls the screen instead.
            row = row.map(|r| r.saturating_add(1).min(bottom));
        }
        let rows = u16::try_from(keep).unwrap_or(u16::MAX);
        // Padding down to where the live area ends on the last row.
        self.pad = match row {
            Some(r) if self.anchored => self.height.saturating_sub(rows).saturating_sub(r),
            _ => 0,
        };
        for _ in 0..self.pad {
            buf.push_str("\r\n");
        }
        let live_width = usize::from(self.live_width());
        self.live_widths.clear();
        for (i, line) in live.iter().enumerate() {
            if i > 0 {
                buf.push_str("\r\n");
            }
            let used = ansi::push_line(&mut buf, line, live_width, self.color);
            self.live_widths.push(used);
        }
        // To the caret, shown; without one the cursor rests, hidden, at
        // the first row's start.
        let (caret_row, caret_col) = caret.map_or((0, 0), |(row, col)| {
            let clamp = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
            (clamp(row), clamp(col.min(live_width)))
        });
        let up = rows.saturating_sub(1).saturating_sub(caret_row);
        if up > 0 {
            let _ = write!(buf, "\u{1b}[{up}A");
        }
        buf.push('\r');
        if caret_col > 0 {
            let _ = write!(buf, "\u{1b}[{caret_col}C");
        }
        if caret.is_some() {
            buf.push_str(SHOW);
        }
        buf.push_str(SYNC_END);
        self.rest = (caret_row, caret_col);
        self.drawn_height = self.height;
        // Live rows that ran past the last row scrolled the screen: the
        // live area then ends on the last row.
        self.top = row.map(|r| {
            let start = r.saturating_add(self.pad);
            start.min(self.height.saturating_sub(rows))
        });
        self.live_rows = rows;
        self.emit(&buf)
    }

    /// Removes the live area and writes `lines` as the last history, with
    /// the cursor left below them: what the terminal keeps after the chat.
    pub fn close(&mut self, lines: &[Line<'_>]) -> io::Result<()> {
        let width = usize::from(self.width);
        let mut buf = String::new();
        let up = self.rest_rows().saturating_add(self.pad);
        if up > 0 {
            let _ = write!(buf, "\u{1b}[{up}A");
        }
        buf.push('\r');
        buf.push_str(ERASE_BELOW);
        for line in lines {
            ansi::push_line(&mut buf, line, width, self.color);
            buf.push_str("\r\n");
        }
        self.live_rows = 0;
        self.pad = 0;
        self.rest = (0, 0);
        self.live_widths.clear();
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A terminal's input, kept for the test to read.
    #[derive(Clone, Default)]
    struct Bytes(Arc<Mutex<Vec<u8>>>);

    impl Write for Bytes {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Lines of plain text.
    fn lines(texts: &[&str]) -> Vec<Line<'static>> {
        texts.iter().map(|t| Line::from((*t).to_owned())).collect()
    }

    /// What a terminal of `width` x `height` shows after `bytes`, row by
    /// row, and its cursor row.
    fn shown(bytes: &Bytes, width: u16, height: u16) -> (Vec<String>, u16) {
        let mut parser = vt100::Parser::new(height, width, 0);
        parser.process(&bytes.0.lock().unwrap());
        let screen = parser.screen();
        let rows = screen.rows(0, width).collect();
        (rows, screen.cursor_position().0)
    }

    /// Drawn inline until the first resize; from then on the live area
    /// ends on the last row, with blank padding above it that later
    /// history fills, and the cursor on the live area's first row.
    #[test]
    fn after_a_resize_the_live_area_stays_at_the_bottom() {
        let bytes = Bytes::default();
        let mut screen = Screen::new(Box::new(bytes.clone()), 30, 10, false);
        screen.locate(0, false);
        screen
            .frame(&lines(&["header"]), &lines(&["rule", "editor"]), None)
            .unwrap();
        let (rows, cursor) = shown(&bytes, 30, 10);
        assert_eq!(&rows[..3], ["header", "rule", "editor"]);
        assert_eq!(cursor, 1);
        screen.resize(30, 10);
        screen.locate(1, true);
        screen
            .frame(&[], &lines(&["rule", "editor"]), None)
            .unwrap();
        let (rows, cursor) = shown(&bytes, 30, 10);
        assert_eq!(rows[0], "header");
        assert!(rows[1..8].iter().all(String::is_empty), "{rows:?}");
        assert_eq!(&rows[8..], ["rule", "editor"]);
        assert_eq!(cursor, 8);
        // New history fills the padding from its top, no gap left.
        screen
            .frame(
                &lines(&["answer one", "answer two"]),
                &lines(&["rule", "editor"]),
                None,
            )
            .unwrap();
        let (rows, cursor) = shown(&bytes, 30, 10);
        assert_eq!(&rows[..3], ["header", "answer one", "answer two"]);
        assert_eq!(&rows[8..], ["rule", "editor"]);
        assert_eq!(cursor, 8);
        screen.close(&lines(&["bye"])).unwrap();
        let (rows, _) = shown(&bytes, 30, 10);
        assert_eq!(&rows[..4], ["header", "answer one", "answer two", "bye"]);
        assert!(rows[4..].iter().all(String::is_empty), "{rows:?}");
    }

    /// The cursor is shown at the caret after a frame and hidden while
    /// the next is written; the way back up to the live area's first row
    /// counts the rows a reflowing terminal rewrapped after narrowing.
    #[test]
    fn the_cursor_rests_at_the_caret() {
        let bytes = Bytes::default();
        let mut screen = Screen::new(Box::new(bytes.clone()), 30, 10, false);
        screen.locate(0, false);
        let wide = "w".repeat(29);
        let live = lines(&[&wide, &wide, "› hi"]);
        screen
            .frame(&lines(&["header"]), &live, Some((2, 4)))
            .unwrap();
        let mut parser = vt100::Parser::new(10, 30, 0);
        parser.process(&bytes.0.lock().unwrap());
        assert_eq!(parser.screen().cursor_position(), (3, 4));
        assert!(!parser.screen().hide_cursor());
        // A cursor report now names the caret's row; the live area starts
        // two rows above it.
        screen.locate(3, false);
        assert_eq!(screen.top, Some(1));
        // Narrowed to 20 columns, each wide row takes two.
        screen.resize(20, 10);
        assert_eq!(screen.rest_rows(), 4);
        screen.locate(5, true);
        assert_eq!(screen.top, Some(1));
        bytes.0.lock().unwrap().clear();
        screen.frame(&[], &live, None).unwrap();
        let text = String::from_utf8_lossy(&bytes.0.lock().unwrap()).into_owned();
        assert!(
            text.starts_with(&format!("{SYNC_BEGIN}{HIDE}\u{1b}[4A\r")),
            "{text:?}"
        );
        assert!(!text.contains(SHOW), "no caret, no cursor: {text:?}");
        // Widened again, the rows are whole once more; a terminal that
        // cuts rows instead of rewrapping them never counts more.
        screen.resize(40, 10);
        assert_eq!(screen.rest_rows(), 0);
        screen.frame(&[], &live, Some((2, 4))).unwrap();
        screen.resize(20, 10);
        assert_eq!(screen.rest_rows(), 4);
        screen.set_reflows(false);
        assert_eq!(screen.rest_rows(), 2);
    }

    /// Without a cursor report the screen draws inline, and never a bare
    /// erase-below, which tmux takes at the top-left corner for "push the
    /// screen into the scrollback".
    #[test]
    fn without_a_report_frames_stay_inline() {
        let bytes = Bytes::default();
        let mut screen = Screen::new(Box::new(bytes.clone()), 30, 10, false);
        screen
            .frame(&lines(&["header"]), &lines(&["rule", "editor"]), None)
            .unwrap();
        screen.resize(28, 10);
        screen
            .frame(&[], &lines(&["rule", "editor"]), None)
            .unwrap();
        let (rows, cursor) = shown(&bytes, 28, 10);
        assert_eq!(&rows[..3], ["header", "rule", "editor"]);
        assert_eq!(cursor, 1);
        let text = String::from_utf8_lossy(&bytes.0.lock().unwrap()).into_owned();
        assert_eq!(
            text.matches("\u{1b}[J").count(),
            text.matches(ERASE_BELOW).count()
        );
    }
}
