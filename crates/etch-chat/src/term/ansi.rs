//! Styled lines to terminal bytes: SGR attributes for each span, cut to
//! the screen's width by display columns (wide characters count two), so
//! a line never wraps on its own and the chat always knows how many rows
//! it wrote. With colour off (`NO_COLOR`, `TERM=dumb`) only the text is
//! written. This module must not know what the lines mean.

use std::fmt::Write as _;

use ratatui_core::style::{Color, Modifier, Style};
use ratatui_core::text::Line;
use unicode_width::UnicodeWidthChar;

/// Appends `line` to `out`, at most `width` columns wide; styles are reset
/// at its end. Returns the columns written.
pub fn push_line(out: &mut String, line: &Line<'_>, width: usize, color: bool) -> usize {
    let mut used = 0;
    let mut styled = false;
    'spans: for span in &line.spans {
        let style = line.style.patch(span.style);
        let mut opened = false;
        for c in span.content.chars() {
            // The last guard: whatever a caller forgot to sanitize, no
            // control character reaches the terminal from here.
            if c.is_control() || super::is_bidi_control(c) {
                continue;
            }
            let w = c.width().unwrap_or(0);
            if used + w > width {
                break 'spans;
            }
            if color && !opened {
                push_style(out, style);
                opened = true;
                styled = true;
            }
            used += w;
            out.push(c);
        }
    }
    if styled {
        out.push_str("\u{1b}[0m");
    }
    used
}

/// The display width of `line`.
pub fn width(line: &Line<'_>) -> usize {
    line.spans
        .iter()
        .map(|s| {
            s.content
                .chars()
                .map(|c| c.width().unwrap_or(0))
                .sum::<usize>()
        })
        .sum()
}

/// Writes the SGR sequence that sets exactly `style` (after a reset).
fn push_style(out: &mut String, style: Style) {
    out.push_str("\u{1b}[0");
    let m = style.add_modifier;
    for (flag, code) in [
        (Modifier::BOLD, "1"),
        (Modifier::DIM, "2"),
        (Modifier::ITALIC, "3"),
        (Modifier::UNDERLINED, "4"),
        (Modifier::REVERSED, "7"),
        (Modifier::CROSSED_OUT, "9"),
    ] {
        if m.contains(flag) {
            out.push(';');
            out.push_str(code);
        }
    }
    if let Some(fg) = style.fg {
        push_color(out, fg, 30);
    }
    if let Some(bg) = style.bg {
        push_color(out, bg, 40);
    }
    out.push('m');
}

/// Appends `;<code>` for a colour, `base` being 30 (foreground) or 40.
fn push_color(out: &mut String, color: Color, base: u8) {
    let basic = |n: u8| Some(base + n);
    let bright = |n: u8| Some(base + 60 + n);
    let code = match color {
        Color::Reset => Some(base + 9),
        Color::Black => basic(0),
        Color::Red => basic(1),
        Color::Green => basic(2),
        Color::Yellow => basic(3),
        Color::Blue => basic(4),
        Color::Magenta => basic(5),
        Color::Cyan => basic(6),
        Color::Gray => basic(7),
        Color::DarkGray => bright(0),
        Color::LightRed => bright(1),
        Color::LightGreen => bright(2),
        Color::LightYellow => bright(3),
        Color::LightBlue => bright(4),
        Color::LightMagenta => bright(5),
        Color::LightCyan => bright(6),
        Color::White => bright(7),
        Color::Indexed(i) => {
            let _ = write!(out, ";{};5;{i}", base + 8);
            None
        }
        Color::Rgb(r, g, b) => {
            let _ = write!(out, ";{};2;{r};{g};{b}", base + 8);
            None
        }
    };
    if let Some(code) = code {
        let _ = write!(out, ";{code}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui_core::text::Span;

    #[test]
    fn styles_become_sgr_and_are_reset() {
        let line = Line::from(vec![
            Span::styled(
                "ok",
                Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
            ),
            Span::raw(" done"),
        ]);
        let mut out = String::new();
        push_line(&mut out, &line, 80, true);
        assert_eq!(out, "\u{1b}[0;1;32mok\u{1b}[0m done\u{1b}[0m");
        let mut plain = String::new();
        push_line(&mut plain, &line, 80, false);
        assert_eq!(plain, "ok done");
    }

    /// Wide characters count two columns; a line is cut, never wrapped.
    /// Even unsanitized text cannot carry a control character through.
    #[test]
    fn control_characters_never_pass() {
        let line = Line::from("a\u{1b}]52;c;eA==\u{7}b\u{9b}c\u{202e}");
        let mut out = String::new();
        push_line(&mut out, &line, 80, false);
        assert_eq!(out, "a]52;c;eA==bc");
    }

    #[test]
    fn lines_are_cut_to_the_width() {
        let line = Line::from("日本語のテキスト");
        let mut out = String::new();
        push_line(&mut out, &line, 5, false);
        assert_eq!(out, "日本");
        assert_eq!(width(&line), 16);
    }
}
