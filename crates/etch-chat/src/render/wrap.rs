//! Word wrapping of styled text by display columns.
//!
//! History rows are wrapped by the chat at the width of the moment they
//! are written (they are never rewrapped: the scrollback is the
//! terminal's), so wrapping here decides what a reader sees. Words move
//! to the next row whole unless longer than a row; then they are cut.
//! Spaces at a row's break are dropped. This module must not know what
//! the text is.

use ratatui_core::style::Style;
use ratatui_core::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// One logical line: styled pieces without newlines.
pub type Spans = Vec<Span<'static>>;

/// Wraps one logical line to rows of at most `width` columns (at least
/// one row, possibly empty).
pub fn wrap(spans: &[Span<'static>], width: usize) -> Vec<Spans> {
    let width = width.max(1);
    let mut rows: Vec<Spans> = Vec::new();
    let mut row: Spans = Vec::new();
    let mut used = 0;
    for span in spans {
        for (token, is_space) in tokens(&span.content) {
            let w = text_width(token);
            if is_space {
                if used == 0 && !rows.is_empty() {
                    continue;
                }
                if used + w <= width {
                    push(&mut row, token, span.style);
                    used += w;
                } else {
                    rows.push(std::mem::take(&mut row));
                    used = 0;
                }
                continue;
            }
            if used + w > width && used > 0 {
                trim_end(&mut row);
                rows.push(std::mem::take(&mut row));
                used = 0;
            }
            if w <= width - used {
                push(&mut row, token, span.style);
                used += w;
                continue;
            }
            // Longer than a row: cut it by columns.
            let mut piece = String::new();
            for c in token.chars() {
                let cw = c.width().unwrap_or(0);
                if used + cw > width && used > 0 {
                    push(&mut row, &piece, span.style);
                    piece.clear();
                    rows.push(std::mem::take(&mut row));
                    used = 0;
                }
                piece.push(c);
                used += cw;
            }
            push(&mut row, &piece, span.style);
        }
    }
    trim_end(&mut row);
    rows.push(row);
    rows
}

/// Wraps `paragraphs` (logical lines) to `width`, putting `first` before
/// the first row and `rest` before every other, both taking columns.
pub fn prefixed(
    paragraphs: &[Spans],
    first: &Span<'static>,
    rest: &Span<'static>,
    width: usize,
) -> Vec<Line<'static>> {
    let indent = text_width(&first.content).max(text_width(&rest.content));
    let inner = width.saturating_sub(indent).max(1);
    let mut lines = Vec::new();
    for paragraph in paragraphs {
        for row in wrap(paragraph, inner) {
            let prefix = if lines.is_empty() { first } else { rest };
            let mut spans = Vec::with_capacity(row.len() + 1);
            spans.push(prefix.clone());
            spans.extend(row);
            lines.push(Line::from(spans));
        }
    }
    lines
}

/// Splits plain `text` into logical lines with one style.
pub fn paragraphs(text: &str, style: Style) -> Vec<Spans> {
    text.split('\n')
        .map(|line| vec![Span::styled(line.to_owned(), style)])
        .collect()
}

/// `ms` milliseconds as seconds with one decimal (`1.5s`), without
/// floating point.
pub fn seconds(ms: u64) -> String {
    format!("{}.{}s", ms / 1000, ms % 1000 / 100)
}

/// Display columns of `text`.
pub fn text_width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `text` cut to `width` columns, with `…` when something was cut.
pub fn truncate(text: &str, width: usize) -> String {
    if text_width(text) <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Words and runs of spaces, in order, each marked whether it is space.
fn tokens(text: &str) -> impl Iterator<Item = (&str, bool)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let space = first == ' ';
        let end = rest
            .char_indices()
            .find(|&(_, c)| (c == ' ') != space)
            .map_or(rest.len(), |(i, _)| i);
        let (token, tail) = rest.split_at(end);
        rest = tail;
        Some((token, space))
    })
}

/// Appends `text` in `style`, merging with the last span when it has the
/// same style.
fn push(row: &mut Spans, text: &str, style: Style) {
    if text.is_empty() {
        return;
    }
    if let Some(last) = row.last_mut()
        && last.style == style
    {
        last.content.to_mut().push_str(text);
        return;
    }
    row.push(Span::styled(text.to_owned(), style));
}

/// Drops trailing spaces of a row.
fn trim_end(row: &mut Spans) {
    while let Some(last) = row.last_mut() {
        let trimmed = last.content.trim_end_matches(' ').len();
        if trimmed == 0 {
            row.pop();
            continue;
        }
        last.content.to_mut().truncate(trimmed);
        break;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(rows: &[Spans]) -> Vec<String> {
        rows.iter()
            .map(|r| r.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn words_wrap_and_long_words_are_cut() {
        let rows = wrap(&[Span::raw("the quick brown fox")], 10);
        assert_eq!(plain(&rows), ["the quick", "brown fox"]);
        let rows = wrap(&[Span::raw("abcdefghijklmnop qr")], 6);
        assert_eq!(plain(&rows), ["abcdef", "ghijkl", "mnop", "qr"]);
        assert_eq!(plain(&wrap(&[], 5)), [""]);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let rows = wrap(&[Span::raw("日本語テキスト")], 6);
        assert_eq!(plain(&rows), ["日本語", "テキス", "ト"]);
    }

    #[test]
    fn styles_survive_wrapping() {
        let bold = Style::new().add_modifier(ratatui_core::style::Modifier::BOLD);
        let rows = wrap(&[Span::raw("plain "), Span::styled("bold words", bold)], 11);
        assert_eq!(plain(&rows), ["plain bold", "words"]);
        assert_eq!(rows[1][0].style, bold);
    }

    #[test]
    fn prefixes_take_columns() {
        let lines = prefixed(
            &paragraphs("one two three", Style::new()),
            &Span::raw("• "),
            &Span::raw("  "),
            9,
        );
        let text: Vec<String> = lines.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["• one two", "  three"]);
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
