//! The terminal side of the chat: making outside text safe to show
//! ([`sanitize`]), styled lines as bytes ([`ansi`]), and the inline
//! screen that writes history once and redraws only the live area
//! ([`screen`]). This module must not know what the chat shows.

pub mod ansi;
pub mod screen;

use std::borrow::Cow;

pub use etch_sanitize::is_bidi_control;
pub use screen::Screen;

/// The columns a tab expands to in the chat's rows.
const TAB: &str = "    ";

/// `text` with nothing a terminal would act on (`etch_sanitize`'s rules,
/// shared with every other place etch shows outside text), tabs expanded
/// to spaces so the chat's width arithmetic holds. Newlines stay; the
/// caller splits on them.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    match etch_sanitize::sanitize(text) {
        Cow::Borrowed(clean) if !clean.contains('\t') => Cow::Borrowed(clean),
        clean => Cow::Owned(clean.replace('\t', TAB)),
    }
}

/// Whether the terminal rewraps its lines when its width changes, from
/// the environment `var` reads: most do (tmux, VTE, kitty, iTerm2,
/// Alacritty, WezTerm, Windows Terminal); xterm and the Linux console cut
/// them instead. Inside tmux, tmux is the terminal, whatever runs it.
pub fn reflows(var: impl Fn(&str) -> Option<String>) -> bool {
    if var("TMUX").is_some() {
        return true;
    }
    if var("XTERM_VERSION").is_some() {
        return false;
    }
    var("TERM").is_none_or(|term| term != "linux")
}

#[cfg(test)]
mod tests {
    use super::{reflows, sanitize};

    #[test]
    fn xterm_and_the_console_do_not_reflow() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |key: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert!(reflows(env(&[("TERM", "xterm-256color")])));
        assert!(!reflows(env(&[("XTERM_VERSION", "XTerm(390)")])));
        assert!(reflows(env(&[
            ("XTERM_VERSION", "XTerm(390)"),
            ("TMUX", "/tmp/tmux-1000/default,1,0")
        ])));
        assert!(!reflows(env(&[("TERM", "linux")])));
    }

    /// The chat's rows never hold a tab or an escape sequence.
    #[test]
    fn tabs_expand_and_escapes_go() {
        assert_eq!(sanitize("a\tb\u{1b}[2Jc\r\n"), "a    bc\n");
        assert!(matches!(sanitize("plain"), std::borrow::Cow::Borrowed(_)));
    }
}
