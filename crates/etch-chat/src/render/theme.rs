//! The chat's few styles, in one place so blocks agree: a terminal tone
//! (the terminal's own colours, bold and dim), green for success and
//! insertions, red for errors and deletions. This module must not know
//! where the styles are used.

use ratatui_core::style::{Color, Modifier, Style};

/// Muted text: reasoning, notices, counters.
pub fn muted() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// Muted and italic: reasoning blocks.
pub fn reasoning() -> Style {
    muted().add_modifier(Modifier::ITALIC)
}

/// Bold.
pub fn strong() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

/// The user's dot and prompt text.
pub fn user() -> Style {
    Style::new().fg(Color::Cyan)
}

/// The assistant's dot.
pub fn assistant() -> Style {
    Style::new()
}

/// A tool that succeeded.
pub fn ok() -> Style {
    Style::new().fg(Color::Green)
}

/// A tool or command that failed; warnings.
pub fn error() -> Style {
    Style::new().fg(Color::Red)
}

/// Warnings.
pub fn warning() -> Style {
    Style::new().fg(Color::Yellow)
}

/// Headings.
pub fn heading() -> Style {
    Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD)
}

/// Inline code and code blocks without a grammar.
pub fn code() -> Style {
    Style::new().fg(Color::Yellow)
}

/// Links.
pub fn link() -> Style {
    Style::new()
        .fg(Color::Blue)
        .add_modifier(Modifier::UNDERLINED)
}

/// Inserted diff rows.
pub fn added() -> Style {
    Style::new().fg(Color::Green)
}

/// Deleted diff rows.
pub fn removed() -> Style {
    Style::new().fg(Color::Red)
}

/// Text selected in the editor (the next key replaces it).
pub fn selected() -> Style {
    Style::new().add_modifier(Modifier::REVERSED | Modifier::DIM)
}

/// The editor's caret cell.
pub fn caret() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}
