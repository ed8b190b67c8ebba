//! The small `SKILL.md` frontmatter parser (E-CTX-07): a `---` line, then
//! `key: value` lines up to the closing `---`.
//!
//! Only `name` and `description` are read; other keys (and their indented
//! continuation lines) are ignored. Values may be plain, single- or
//! double-quoted, continue on indented lines, or use a `|`/`>` block scalar,
//! which covers the YAML real skills use without a YAML crate. This module
//! must not know validation rules or where files live.

use crate::skills::Rejection;

/// The two keys that matter and where the body starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Frontmatter {
    /// The `name:` value, if present.
    pub name: Option<String>,
    /// The `description:` value, if present.
    pub description: Option<String>,
    /// Byte offset just after the closing `---` line.
    pub body_start: usize,
}

/// Whether `line` (with or without its line break) is a `---` delimiter.
pub(crate) fn is_delimiter(line: &str) -> bool {
    line.trim_end() == "---"
}

/// Parses the frontmatter at the start of `text`.
pub(crate) fn parse(text: &str) -> Result<Frontmatter, Rejection> {
    let start = if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    let mut offset = start;
    let mut lines = text[start..].split_inclusive('\n');
    match lines.next() {
        Some(first) if is_delimiter(first) => offset += first.len(),
        _ => return Err(Rejection::MissingFrontmatter),
    }
    let mut found = Frontmatter::default();
    let mut pending: Option<Pending<'_>> = None;
    for line in lines {
        offset += line.len();
        if is_delimiter(line) {
            if let Some(done) = pending.take() {
                done.finish(&mut found);
            }
            found.body_start = offset;
            return Ok(found);
        }
        let content = line.trim_end_matches(['\n', '\r']);
        if content.trim().is_empty() || content.starts_with([' ', '\t']) {
            if let Some(open) = pending.as_mut() {
                open.more.push(content.trim());
            }
            continue;
        }
        if let Some(done) = pending.take() {
            done.finish(&mut found);
        }
        if content.starts_with('#') {
            continue;
        }
        if let Some((key, value)) = content.split_once(':') {
            let key = match key.trim() {
                "name" => Key::Name,
                "description" => Key::Description,
                _ => Key::Other,
            };
            pending = Some(Pending {
                key,
                first: value.trim(),
                more: Vec::new(),
            });
        }
    }
    Err(Rejection::UnterminatedFrontmatter)
}

/// Which key a value belongs to.
#[derive(Debug, Clone, Copy)]
enum Key {
    /// `name:`.
    Name,
    /// `description:`.
    Description,
    /// Any other key: parsed past, then dropped.
    Other,
}

/// A key whose value may still continue on the following indented lines.
#[derive(Debug)]
struct Pending<'a> {
    /// The key.
    key: Key,
    /// The text after the colon, trimmed.
    first: &'a str,
    /// Continuation lines, trimmed (blank ones kept as `""`).
    more: Vec<&'a str>,
}

impl Pending<'_> {
    /// Stores the finished value under its key (the last occurrence wins).
    fn finish(self, into: &mut Frontmatter) {
        let slot = match self.key {
            Key::Name => &mut into.name,
            Key::Description => &mut into.description,
            Key::Other => return,
        };
        *slot = Some(self.value());
    }

    /// The value: a block scalar (`|` keeps line breaks, `>` folds them), or
    /// a plain/quoted scalar whose continuation lines fold into spaces.
    fn value(&self) -> String {
        let lines = || self.more.iter().copied().filter(|l| !l.is_empty());
        match self.first.trim_end_matches(['-', '+']) {
            "|" => self.more.join("\n").trim().to_string(),
            ">" => lines().collect::<Vec<_>>().join(" "),
            _ => {
                let joined: Vec<&str> = std::iter::once(self.first).chain(lines()).collect();
                scalar(&joined.join(" "))
            }
        }
    }
}

/// One scalar: the inside of a `"…"` (with `\"`, `\\`, `\n`, `\t` escapes)
/// or `'…'` (with `''`) string, or a plain value up to a ` #` comment. An
/// unterminated quote is kept literally.
fn scalar(value: &str) -> String {
    let mut chars = value.chars();
    match chars.next() {
        Some('"') => {
            let mut out = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '"' => return out,
                    '\\' => match chars.next() {
                        Some('n') => out.push('\n'),
                        Some('t') => out.push('\t'),
                        Some(other) => out.push(other),
                        None => break,
                    },
                    c => out.push(c),
                }
            }
            value.to_string()
        }
        Some('\'') => {
            let mut out = String::new();
            let mut chars = chars.peekable();
            while let Some(c) = chars.next() {
                if c == '\'' {
                    if chars.peek() == Some(&'\'') {
                        chars.next();
                    } else {
                        return out;
                    }
                }
                out.push(c);
            }
            value.to_string()
        }
        _ => {
            let end = value
                .find(" #")
                .or_else(|| value.find("\t#"))
                .unwrap_or(value.len());
            value[..end].trim_end().to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `text`, panicking on rejection.
    fn ok(text: &str) -> Frontmatter {
        parse(text).unwrap()
    }

    /// Plain keys, other keys ignored, body offset after the closing line.
    #[test]
    fn plain_keys() {
        let text = "---\nname: pdf\nlicense: MIT\ndescription: Fill PDF forms\n---\nBody\n";
        let fm = ok(text);
        assert_eq!(fm.name.as_deref(), Some("pdf"));
        assert_eq!(fm.description.as_deref(), Some("Fill PDF forms"));
        assert_eq!(&text[fm.body_start..], "Body\n");
    }

    /// Quotes of both kinds, escapes, comments, CRLF and a BOM.
    #[test]
    fn quoting_and_line_endings() {
        let fm =
            ok("\u{feff}---\r\nname: 'it''s'\r\ndescription: \"say \\\"hi\\\"\" # c\r\n---\r\n");
        assert_eq!(fm.name.as_deref(), Some("it's"));
        assert_eq!(fm.description.as_deref(), Some("say \"hi\""));
        let fm = ok("---\nname: a # comment\ndescription: \"open\n---\n");
        assert_eq!(fm.name.as_deref(), Some("a"));
        assert_eq!(fm.description.as_deref(), Some("\"open"));
    }

    /// Continuation lines and block scalars; nested keys of other entries
    /// are not mistaken for ours.
    #[test]
    fn multi_line_values() {
        let fm = ok("---\ndescription: one\n  two\nmetadata:\n  name: nested\nname: x\n---\n");
        assert_eq!(fm.description.as_deref(), Some("one two"));
        assert_eq!(fm.name.as_deref(), Some("x"));
        let fm = ok("---\ndescription: >-\n  folded\n  text\n---\n");
        assert_eq!(fm.description.as_deref(), Some("folded text"));
        let fm = ok("---\ndescription: |\n  line 1\n  line 2\n\n---\n");
        assert_eq!(fm.description.as_deref(), Some("line 1\nline 2"));
    }

    /// Missing and unterminated blocks are rejected; empty values stay empty.
    #[test]
    fn rejections() {
        assert_eq!(parse("name: x\n"), Err(Rejection::MissingFrontmatter));
        assert_eq!(parse(""), Err(Rejection::MissingFrontmatter));
        assert_eq!(
            parse("---\nname: x\n"),
            Err(Rejection::UnterminatedFrontmatter)
        );
        assert_eq!(
            parse("---\nname: x\n----\n"),
            Err(Rejection::UnterminatedFrontmatter)
        );
        let fm = ok("---\nname:\n---");
        assert_eq!(fm.name.as_deref(), Some(""));
        assert_eq!(fm.description, None);
    }
}
