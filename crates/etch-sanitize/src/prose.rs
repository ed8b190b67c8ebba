//! Prose from the outside world made safe to put on a terminal.
//!
//! A file's contents, a command's output and a model's reply may hold
//! escape sequences that would move the cursor, retitle the window,
//! write the clipboard (OSC 52), switch character sets or hide text if
//! they reached the terminal as they are. [`sanitize`] removes escape
//! sequences (CSI, OSC, DCS and the rest) whole, drops other control
//! characters and removes bidirectional overrides (which can make text
//! read differently from what it is). Newlines and tabs stay, so code
//! keeps its shape. This module must not know where the text goes.

use std::borrow::Cow;

/// `text` with nothing a terminal would act on: see the module docs.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_work) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => skip_escape(&mut chars),
            // CSI, OSC, DCS, SOS, PM and APC as single C1 characters
            // introduce sequences just like their ESC forms.
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{9d}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if needs_work(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether `c` is a control character (other than newline and tab) or an
/// invisible direction override.
fn needs_work(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// Unicode's explicit directional embeddings, overrides and isolates.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Skips the rest of a sequence that began with ESC.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_csi(chars),
        Some(']' | 'P' | 'X' | '^' | '_') => skip_string(chars),
        // Two-character sequences with an intermediate byte (character
        // set designations such as `ESC ( 0`).
        Some(' '..='/') => {
            chars.next();
        }
        _ => {}
    }
}

/// Skips a control sequence's parameters and its final byte.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return;
        }
    }
}

/// Skips a string sequence (OSC, DCS, …) up to BEL, ST (`ESC \`) or the
/// C1 ST; an unterminated one swallows the rest, as a terminal would.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text with nothing to remove is not copied.
    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(sanitize("hello\n\tworld"), Cow::Borrowed(_)));
    }

    /// Each kind of sequence a hostile file or model could send.
    #[test]
    fn escape_sequences_are_removed_whole() {
        let cases = [
            ("a\u{1b}[2J\u{1b}[3Jb", "ab"),
            ("a\u{1b}[31;1mred\u{1b}[0m", "ared"),
            ("x\u{1b}]0;evil title\u{7}y", "xy"),
            ("x\u{1b}]52;c;aGVsbG8=\u{1b}\\y", "xy"),
            ("x\u{1b}P1$qm\u{1b}\\y", "xy"),
            ("x\u{9b}2Ky", "xy"),
            ("x\u{1b}(0y", "xy"),
            ("hide\u{1b}[8mme", "hideme"),
            ("x\u{1b}]8;;http://e\u{1b}\\link\u{1b}]8;;\u{1b}\\", "xlink"),
            ("unterminated \u{1b}]0;title", "unterminated "),
        ];
        for (input, want) in cases {
            assert_eq!(sanitize(input), want, "{input:?}");
        }
    }

    /// Lone controls and direction overrides go; layout characters stay.
    #[test]
    fn controls_go_tabs_and_newlines_stay() {
        assert_eq!(sanitize("a\tb\r\nc\u{8}d\u{7f}"), "a\tb\ncd");
        assert_eq!(sanitize("abc\u{202e}fed"), "abcfed");
    }
}
