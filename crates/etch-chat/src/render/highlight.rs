//! Syntax highlighting of fenced code, through syntect's grammars plus
//! two-face's extra ones (TypeScript, TOML, Dockerfile, …), coloured with
//! the terminal's own palette (bat's `ansi` theme), so code matches the
//! user's terminal theme.
//!
//! Loading the grammars takes tens of milliseconds, so it never happens
//! on the start-up path: the set is loaded on first use, or on a
//! background thread the chat starts after its first frame ([`warm`]).
//! An unknown language or a grammar that fails is shown in the plain
//! code style. This module must not know where the rows go.

use std::sync::OnceLock;

use ratatui_core::style::{Color, Modifier, Style};
use ratatui_core::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme};
use syntect::parsing::{SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;
use two_face::theme::EmbeddedThemeName;

use super::theme;
use super::wrap::Spans;

/// The grammars and theme, once loaded.
struct Assets {
    /// Grammars.
    syntaxes: SyntaxSet,
    /// The terminal-palette theme.
    theme: Theme,
}

/// Loaded on first use.
static ASSETS: OnceLock<Assets> = OnceLock::new();

/// Whether a caller may wait for the grammars to load. Off until the
/// chat has drawn its first frame ([`warm`]), so a resumed transcript
/// with code in it never delays start-up: such code is shown plain.
static MAY_LOAD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Whether the grammars are loading on a thread: code drawn meanwhile is
/// plain rather than waiting for them.
static WARMING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Code drawn before [`warm`] is shown plain instead of loading the
/// grammars (the chat calls this before its first frame).
pub fn defer() {
    MAY_LOAD.store(false, std::sync::atomic::Ordering::Relaxed);
}

/// The assets, loading them if this is the first use.
fn assets() -> &'static Assets {
    ASSETS.get_or_init(|| Assets {
        syntaxes: two_face::syntax::extra_newlines(),
        theme: two_face::theme::extra()
            .get(EmbeddedThemeName::Ansi)
            .clone(),
    })
}

/// Loads the grammars on a background thread, so the first code block
/// does not wait for them.
pub fn warm() {
    MAY_LOAD.store(true, std::sync::atomic::Ordering::Relaxed);
    if ASSETS.get().is_none() && !WARMING.swap(true, std::sync::atomic::Ordering::Relaxed) {
        let _ = std::thread::Builder::new()
            .name("etch-highlight".into())
            .spawn(|| {
                assets();
            });
    }
}

/// `code` as rows of styled spans, highlighted as `lang` (a fence's info
/// word: a name such as `rust` or an extension such as `rs`).
pub fn highlight(code: &str, lang: &str) -> Vec<Spans> {
    let plain = || {
        code.split('\n')
            .map(|line| vec![Span::styled(line.to_owned(), theme::code())])
            .collect()
    };
    let loading = ASSETS.get().is_none()
        && (WARMING.load(std::sync::atomic::Ordering::Relaxed)
            || !MAY_LOAD.load(std::sync::atomic::Ordering::Relaxed));
    if lang.is_empty() || loading {
        return plain();
    }
    let assets = assets();
    let Some(syntax) = find(&assets.syntaxes, lang) else {
        return plain();
    };
    let mut lines = HighlightLines::new(syntax, &assets.theme);
    let mut rows = Vec::new();
    for line in LinesWithEndings::from(code) {
        let Ok(ranges) = lines.highlight_line(line, &assets.syntaxes) else {
            return plain();
        };
        let row: Spans = ranges
            .into_iter()
            .map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']).to_owned();
                Span::styled(text, convert(style))
            })
            .filter(|span| !span.content.is_empty())
            .collect();
        rows.push(row);
    }
    if code.ends_with('\n') || code.is_empty() {
        rows.push(Vec::new());
    }
    rows
}

/// The grammar for a fence's language word.
fn find<'a>(syntaxes: &'a SyntaxSet, lang: &str) -> Option<&'a SyntaxReference> {
    let lower = lang.to_ascii_lowercase();
    syntaxes
        .find_syntax_by_token(&lower)
        .or_else(|| syntaxes.find_syntax_by_extension(&lower))
        .or_else(|| {
            let alias = match lower.as_str() {
                "sh" | "shell" | "zsh" | "console" => "bash",
                "ts" | "typescript" => "ts",
                "py" | "python3" => "py",
                "golang" => "go",
                "rs" => "rs",
                _ => return None,
            };
            syntaxes.find_syntax_by_extension(alias)
        })
}

/// A syntect style in the terminal's terms. bat's `ansi` theme stores a
/// palette index in the red channel with alpha 0, and "the default
/// colour" as alpha 1.
fn convert(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::new();
    out = match fg.a {
        0 => out.fg(Color::Indexed(fg.r)),
        1 => out,
        _ => out.fg(Color::Rgb(fg.r, fg.g, fg.b)),
    };
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    if style.font_style.contains(FontStyle::UNDERLINE) {
        out = out.add_modifier(Modifier::UNDERLINED);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A known language gets more than one colour; the text is intact.
    #[test]
    fn rust_and_toml_are_highlighted() {
        for (lang, code) in [
            ("rust", "fn main() { let x = 1; }"),
            ("toml", "[a]\nb = \"c\""),
        ] {
            let rows = highlight(code, lang);
            let text: Vec<String> = rows
                .iter()
                .map(|r| r.iter().map(|s| s.content.as_ref()).collect())
                .collect();
            assert_eq!(text.join("\n"), code, "{lang}");
            let styles: std::collections::HashSet<_> = rows
                .iter()
                .flatten()
                .map(|s| format!("{:?}", s.style))
                .collect();
            assert!(styles.len() > 1, "{lang}: {styles:?}");
        }
    }

    #[test]
    fn unknown_languages_are_plain_code() {
        let rows = highlight("a\nb", "no-such-language");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0][0].style, theme::code());
    }
}
