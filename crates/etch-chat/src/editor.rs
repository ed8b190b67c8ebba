//! The prompt editor: multi-line text with a caret, prompt history, and
//! large pastes kept out of the way as one marker each.
//!
//! Keys are mapped to these operations in `app::keys`, not here, so the
//! keymap stays the chat's (Enter sends, Alt+Enter or Shift+Enter a new
//! line, Emacs-style line keys). History (E-CHAT-07 in
//! docs/requirements.md) is the session's earlier prompts plus the ones
//! sent since; walking it keeps the draft being typed and gives it back
//! past the newest entry. A paste of more than [`PASTE_LINES`] lines or
//! [`PASTE_CHARS`] characters shows as `[paste #N +L lines]` and is
//! expanded when the prompt is sent, so a 1 MB paste costs one row to
//! draw. This module must not know about the terminal.

use ratatui_core::style::Style;
use ratatui_core::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use crate::render::theme;
use crate::term::sanitize;

/// Pastes with more lines than this become a marker.
pub const PASTE_LINES: usize = 5;
/// Pastes with more characters than this become a marker.
pub const PASTE_CHARS: usize = 1000;

/// What leads the editor's first row (later rows get two spaces).
const LEAD: &str = "› ";

/// The editor's state.
#[derive(Debug, Default, Clone)]
pub struct Editor {
    /// Logical lines (at least one).
    lines: Vec<String>,
    /// Caret line.
    row: usize,
    /// Caret position in characters within the line.
    col: usize,
    /// Earlier prompts, oldest first.
    history: Vec<String>,
    /// Where history navigation is, when it is.
    at: Option<usize>,
    /// The draft put aside while walking the history.
    draft: Option<String>,
    /// Large pastes: the marker shown and the text it stands for.
    pastes: Vec<(String, String)>,
    /// Attached images: the marker shown and the image it stands for.
    images: Vec<(String, etch_model::Image)>,
    /// Whether all the text is selected: the next typed character or
    /// paste replaces it (what a refused command leaves behind).
    selected: bool,
}

impl Editor {
    /// An empty editor with `history` (oldest first).
    pub fn new(history: Vec<String>) -> Self {
        Self {
            lines: vec![String::new()],
            history,
            ..Self::default()
        }
    }

    /// Whether nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// The text as typed (paste markers not expanded).
    pub fn raw(&self) -> String {
        self.lines.join("\n")
    }

    /// The text to send, each paste marker still whole replaced by its
    /// paste (a marker the user edited is text as typed: the paste went
    /// with it).
    pub fn text(&self) -> String {
        let raw = self.raw();
        if self.pastes.is_empty() {
            return raw;
        }
        // One pass, left to right, over the typed text only: a paste that
        // itself holds a marker's words is never expanded again, and each
        // marker is expanded once (its last whole occurrence).
        let mut at: Vec<(usize, usize)> = self
            .pastes
            .iter()
            .enumerate()
            .filter_map(|(i, (marker, _))| raw.rfind(marker.as_str()).map(|start| (start, i)))
            .collect();
        at.sort_unstable();
        let mut out = String::with_capacity(raw.len());
        let mut done = 0;
        for (start, i) in at {
            if start < done {
                continue;
            }
            let (marker, paste) = &self.pastes[i];
            out.push_str(&raw[done..start]);
            out.push_str(paste);
            done = start + marker.len();
        }
        out.push_str(&raw[done..]);
        out
    }

    /// Selects all the text: the next typed character, paste, Backspace
    /// or Delete replaces or removes it; a movement key keeps it.
    pub fn select_all(&mut self) {
        self.selected = !self.is_empty();
    }

    /// Whether all the text is selected.
    pub fn is_selected(&self) -> bool {
        self.selected
    }

    /// Ends a selection, keeping the text.
    pub fn deselect(&mut self) {
        self.selected = false;
    }

    /// Empties the editor (history stays).
    pub fn clear(&mut self) {
        self.selected = false;
        self.lines = vec![String::new()];
        self.row = 0;
        self.col = 0;
        self.at = None;
        self.draft = None;
        self.pastes.clear();
        self.images.clear();
    }

    /// Replaces the text, caret at the end.
    pub fn set(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].chars().count();
    }

    /// Adds a sent prompt to the history (not twice in a row).
    pub fn remember(&mut self, text: &str) {
        if text.trim().is_empty() || self.history.last().is_some_and(|last| last == text) {
            return;
        }
        self.history.push(text.to_owned());
    }

    /// Inserts typed text at the caret.
    pub fn insert(&mut self, text: &str) {
        self.at = None;
        let mut parts = text.split('\n');
        if let Some(first) = parts.next() {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col);
            line.insert_str(at, first);
            self.col += first.chars().count();
        }
        for part in parts {
            self.newline();
            let line = &mut self.lines[self.row];
            line.insert_str(0, part);
            self.col = part.chars().count();
        }
    }

    /// Inserts a paste: as it is when small, else as a marker.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines > PASTE_LINES || text.chars().count() > PASTE_CHARS {
            let n = self.pastes.len() + 1;
            let marker = if lines > 1 {
                format!("[paste #{n} +{lines} lines]")
            } else {
                format!("[paste #{n} {} chars]", text.chars().count())
            };
            self.insert(&marker);
            self.pastes.push((marker, text));
        } else {
            self.insert(&text);
        }
    }

    /// Attaches `image` (from the file at `path`): its marker goes in at
    /// the caret, and the image goes with the prompt while the marker
    /// stays whole.
    pub fn attach(&mut self, path: &std::path::Path, image: etch_model::Image) {
        let marker = crate::attach::marker(self.images.len() + 1, path, &image);
        self.at = None;
        self.insert(&marker);
        self.images.push((marker, image));
    }

    /// The attached images whose markers are still in the text, in the
    /// order they were attached.
    pub fn attached(&self) -> Vec<etch_model::Image> {
        let raw = self.raw();
        self.images
            .iter()
            .filter(|(marker, _)| raw.contains(marker.as_str()))
            .map(|(_, image)| image.clone())
            .collect()
    }

    /// `text` without the markers of attached images (which name their
    /// files, and must not attach them a second time).
    pub fn without_image_markers(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (marker, _) in &self.images {
            out = out.replace(marker.as_str(), "");
        }
        out
    }

    /// Splits the line at the caret.
    pub fn newline(&mut self) {
        let line = &mut self.lines[self.row];
        let rest = line.split_off(byte_at(line, self.col));
        self.row += 1;
        self.lines.insert(self.row, rest);
        self.col = 0;
    }

    /// Deletes the character before the caret (joining lines at a line's
    /// start).
    pub fn backspace(&mut self) {
        if self.col > 0 {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col - 1);
            line.remove(at);
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
            self.lines[self.row].push_str(&line);
        }
    }

    /// Deletes the character under the caret.
    pub fn delete(&mut self) {
        let len = self.lines[self.row].chars().count();
        if self.col < len {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col);
            line.remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    /// Deletes the word before the caret.
    pub fn delete_word(&mut self) {
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut start = self.col;
        while start > 0 && chars[start - 1] == ' ' {
            start -= 1;
        }
        while start > 0 && chars[start - 1] != ' ' {
            start -= 1;
        }
        if start == self.col {
            self.backspace();
            return;
        }
        let line = &mut self.lines[self.row];
        let (a, b) = (byte_at(line, start), byte_at(line, self.col));
        line.replace_range(a..b, "");
        self.col = start;
    }

    /// Deletes from the line's start to the caret.
    pub fn kill_before(&mut self) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.replace_range(..at, "");
        self.col = 0;
    }

    /// Deletes from the caret to the line's end.
    pub fn kill_after(&mut self) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.truncate(at);
    }

    /// Moves the caret one character left (to the previous line's end).
    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
        }
    }

    /// Moves the caret one character right.
    pub fn right(&mut self) {
        if self.col < self.lines[self.row].chars().count() {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// To the start of the word before the caret.
    pub fn word_left(&mut self) {
        if self.col == 0 {
            self.left();
            return;
        }
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut c = self.col;
        while c > 0 && chars[c - 1].is_whitespace() {
            c -= 1;
        }
        while c > 0 && !chars[c - 1].is_whitespace() {
            c -= 1;
        }
        self.col = c;
    }

    /// To the end of the word after the caret.
    pub fn word_right(&mut self) {
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        if self.col >= chars.len() {
            self.right();
            return;
        }
        let mut c = self.col;
        while c < chars.len() && chars[c].is_whitespace() {
            c += 1;
        }
        while c < chars.len() && !chars[c].is_whitespace() {
            c += 1;
        }
        self.col = c;
    }

    /// To the line's start.
    pub fn home(&mut self) {
        self.col = 0;
    }

    /// To the line's end.
    pub fn end(&mut self) {
        self.col = self.lines[self.row].chars().count();
    }

    /// Up a line, or to the previous prompt of the history from the
    /// first line.
    pub fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let next = match self.at {
            Some(0) => return,
            Some(i) => i - 1,
            None if self.history.is_empty() => return,
            None => {
                self.draft = Some(self.raw());
                self.history.len() - 1
            }
        };
        self.at = Some(next);
        let text = self.history[next].clone();
        self.set(&text);
        self.at = Some(next);
    }

    /// Down a line, or to the next prompt of the history (the draft past
    /// the newest) from the last line.
    pub fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let Some(i) = self.at else {
            return;
        };
        if i + 1 < self.history.len() {
            let text = self.history[i + 1].clone();
            self.set(&text);
            self.at = Some(i + 1);
        } else {
            let draft = self.draft.take().unwrap_or_default();
            self.set(&draft);
            self.at = None;
        }
    }

    /// The word the caret ends (for completion): its start column and
    /// text.
    pub fn word_at_caret(&self) -> (usize, String) {
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut start = self.col;
        while start > 0 && !chars[start - 1].is_whitespace() {
            start -= 1;
        }
        (start, chars[start..self.col].iter().collect())
    }

    /// Replaces the caret line's characters `start..caret` with `text`.
    pub fn replace_before_caret(&mut self, start: usize, text: &str) {
        let start = start.min(self.col);
        let line = &mut self.lines[self.row];
        let (a, b) = (byte_at(line, start), byte_at(line, self.col));
        line.replace_range(a..b, text);
        self.col = start + text.chars().count();
    }

    /// Whether the caret is on the first line.
    pub fn on_first_line(&self) -> bool {
        self.row == 0
    }

    /// The editor's rows at `width` columns, at most `max_rows` (the rows
    /// around the caret), each led by `› ` or two spaces, and where the
    /// caret is among them (row, display column). The caret is not drawn:
    /// the terminal's own cursor goes there, which IME candidate windows
    /// and screen readers follow.
    pub fn render(&self, width: usize, max_rows: usize) -> (Vec<Line<'static>>, (usize, usize)) {
        let inner = width.saturating_sub(2).max(1);
        let mut rows: Vec<Vec<Span<'static>>> = Vec::new();
        let mut caret = (0, 0);
        // Selected text (a refused command's) shows as such.
        let plain = |text: String| {
            if self.selected {
                Span::styled(text, theme::selected())
            } else {
                Span::raw(text)
            }
        };
        for (r, line) in self.lines.iter().enumerate() {
            // One shown character per typed one, so the caret stays on
            // its character: a tab shows as a space, other controls as �.
            let chars: Vec<char> = line.chars().map(shown).collect();
            let mut row: Vec<Span<'static>> = Vec::new();
            let mut text = String::new();
            let mut used = 0;
            let caret_here = r == self.row;
            for (i, c) in chars.iter().enumerate() {
                let w = c.width().unwrap_or(0);
                if used + w > inner {
                    row.push(plain(std::mem::take(&mut text)));
                    rows.push(std::mem::take(&mut row));
                    used = 0;
                }
                if caret_here && i == self.col {
                    caret = (rows.len(), used);
                }
                text.push(*c);
                used += w;
            }
            if caret_here && self.col >= chars.len() {
                // The cursor after the last character needs a cell of
                // its own.
                if used + 1 > inner {
                    row.push(plain(std::mem::take(&mut text)));
                    rows.push(std::mem::take(&mut row));
                    used = 0;
                }
                caret = (rows.len(), used);
            }
            row.push(plain(text));
            rows.push(row);
        }
        let max_rows = max_rows.max(1);
        let first = if rows.len() <= max_rows {
            0
        } else {
            caret
                .0
                .saturating_sub(max_rows - 1)
                .min(rows.len() - max_rows)
        };
        let lines = rows
            .into_iter()
            .enumerate()
            .skip(first)
            .take(max_rows)
            .map(|(i, row)| {
                let lead = if i == 0 { LEAD } else { "  " };
                let mut spans = vec![Span::styled(
                    lead,
                    Style::new().fg(ratatui_core::style::Color::Cyan),
                )];
                spans.extend(row.into_iter().filter(|s| !s.content.is_empty()));
                Line::from(spans)
            })
            .collect();
        // Both leads are two columns wide.
        (lines, (caret.0 - first, caret.1 + 2))
    }
}

/// How a typed character is shown in the editor.
fn shown(c: char) -> char {
    if c == '\t' {
        ' '
    } else if sanitize(c.encode_utf8(&mut [0; 4])).is_empty() {
        '\u{fffd}'
    } else {
        c
    }
}

/// The byte offset of character `col` in `line` (its end past the last).
fn byte_at(line: &str, col: usize) -> usize {
    line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(editor: &Editor, width: usize, max: usize) -> Vec<String> {
        editor
            .render(width, max)
            .0
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn typing_newlines_and_deleting() {
        let mut e = Editor::new(Vec::new());
        e.insert("hello wörld");
        e.newline();
        e.insert("second");
        assert_eq!(e.raw(), "hello wörld\nsecond");
        e.home();
        e.backspace();
        assert_eq!(e.raw(), "hello wörldsecond");
        e.delete_word();
        assert_eq!(e.raw(), "hello second");
        e.kill_after();
        assert_eq!(e.raw(), "hello ");
        e.kill_before();
        assert!(e.is_empty());
    }

    /// E-CHAT-07: Up walks back through history, Down comes forward, and
    /// the draft being typed comes back past the newest.
    #[test]
    fn history_keeps_the_draft() {
        let mut e = Editor::new(vec!["first".into(), "second".into()]);
        e.insert("draft");
        e.up();
        assert_eq!(e.raw(), "second");
        e.up();
        assert_eq!(e.raw(), "first");
        e.up();
        assert_eq!(e.raw(), "first");
        e.down();
        assert_eq!(e.raw(), "second");
        e.down();
        assert_eq!(e.raw(), "draft");
        e.remember("third");
        e.remember("third");
        e.clear();
        e.up();
        assert_eq!(e.raw(), "third");
        e.up();
        assert_eq!(e.raw(), "second");
    }

    /// A 1 MB paste is one marker; the text sent is the paste.
    #[test]
    fn large_pastes_become_markers() {
        let mut e = Editor::new(Vec::new());
        e.insert("see ");
        let big = "x".repeat(1 << 20);
        e.paste(&big);
        e.insert(" and ");
        e.paste("a\r\nb\nc\nd\ne\nf\ng");
        assert_eq!(
            e.raw(),
            "see [paste #1 1048576 chars] and [paste #2 +7 lines]"
        );
        assert_eq!(e.text(), format!("see {big} and a\nb\nc\nd\ne\nf\ng"));
        e.paste("small\npaste");
        assert!(e.raw().ends_with("small\npaste"));
    }

    /// A paste that holds another marker's words is sent as it is.
    #[test]
    fn a_paste_holding_a_marker_is_not_expanded_again() {
        let mut e = Editor::new(Vec::new());
        e.paste(&"a\n".repeat(10));
        e.insert(" ");
        let inner = format!("[paste #1 +10 lines]\n{}", "b\n".repeat(10));
        e.paste(&inner);
        assert_eq!(e.text(), format!("{} {inner}", "a\n".repeat(10)));
    }

    /// An edited marker is text; a typed look-alike is not expanded.
    #[test]
    fn markers_expand_only_when_whole() {
        let mut e = Editor::new(Vec::new());
        e.paste(&"p\n".repeat(10));
        assert_eq!(e.raw(), "[paste #1 +10 lines]");
        e.backspace();
        assert_eq!(e.text(), "[paste #1 +10 lines");
        let mut e = Editor::new(Vec::new());
        e.insert("[paste #1 x] ");
        e.paste(&"q\n".repeat(10));
        assert_eq!(e.text(), format!("[paste #1 x] {}", "q\n".repeat(10)));
    }

    /// Control characters show as one cell each; the caret stays put.
    #[test]
    fn controls_show_without_moving_the_caret() {
        let mut e = Editor::new(Vec::new());
        e.insert("a\tb\u{1b}c");
        e.left();
        let rows = rows(&e, 20, 3);
        assert_eq!(rows, ["› a b\u{fffd}c"]);
    }

    /// Long lines wrap by characters; the window follows the caret, and
    /// the caret's place is counted in display columns after the lead.
    #[test]
    fn rendering_wraps_and_follows_the_caret() {
        let mut e = Editor::new(Vec::new());
        e.insert("abcdefghij");
        assert_eq!(rows(&e, 6, 10), ["› abcd", "  efgh", "  ij"]);
        assert_eq!(e.render(6, 10).1, (2, 4));
        e.left();
        e.left();
        e.left();
        assert_eq!(e.render(6, 10).1, (1, 5));
        // A full row puts the caret after it on a row of its own.
        let mut full = Editor::new(Vec::new());
        full.insert("abcdefgh");
        assert_eq!(rows(&full, 6, 10), ["› abcd", "  efgh", "  "]);
        assert_eq!(full.render(6, 10).1, (2, 2));
        let mut wide = Editor::new(Vec::new());
        wide.insert("日本語");
        assert_eq!(wide.render(20, 2).1, (0, 8));
        e.end();
        for i in 0..5 {
            e.newline();
            e.insert(&format!("line {i}"));
        }
        let shown = rows(&e, 20, 2);
        assert_eq!(shown, ["  line 3", "  line 4"]);
        assert_eq!(e.render(20, 2).1, (1, 8));
    }
}
