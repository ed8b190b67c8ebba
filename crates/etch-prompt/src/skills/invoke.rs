//! Explicit skill invocation (P-SKILL-10, C28): loading a skill's body,
//! expanding it into the exact `<skill …>` user-message block, and
//! recognizing that block at the start of a message.
//!
//! This module owns the block format. It must not decide when a skill is
//! invoked (the `--skill` flag or a slash command is the caller's business).

use crate::paths::slash_path;
use crate::read::read_text;
use crate::skills::frontmatter;
use crate::skills::{Skill, SkillError};

/// Closes the skill body; searched for lazily, like Pi's parser.
const CLOSE: &str = "\n</skill>";

/// The parts of a `<skill>` block found at the start of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillBlock<'a> {
    /// The `name` attribute.
    pub name: &'a str,
    /// The `location` attribute (the `SKILL.md` path).
    pub location: &'a str,
    /// The skill content between the tags.
    pub body: &'a str,
    /// The user's message after the block; empty when there is none.
    pub message: &'a str,
}

/// Reads the `SKILL.md` of `skill` and returns the text after its
/// frontmatter (the skill body), for `expand_skill`.
pub fn load_skill_body(skill: &Skill) -> Result<String, SkillError> {
    let path = &skill.location;
    let text = read_text(path)
        .map_err(|source| SkillError::Read {
            path: path.clone(),
            source,
        })?
        .ok_or_else(|| SkillError::Missing { path: path.clone() })?;
    let front = frontmatter::parse(&text).map_err(|source| SkillError::Invalid {
        path: path.clone(),
        source,
    })?;
    Ok(text[front.body_start..].to_string())
}

/// The user message that invokes `skill` explicitly, exactly
/// `<skill name="{name}" location="{location}">\n{content}\n</skill>\n\n{message}`
/// where content is `body` without leading and trailing blank lines; with an
/// empty `message` the block ends at `</skill>`.
pub fn expand_skill(skill: &Skill, body: &str, message: &str) -> String {
    let content = trim_blank_lines(body);
    let location = slash_path(&skill.location);
    let mut out = String::with_capacity(content.len() + message.len() + location.len() + 48);
    out.push_str("<skill name=\"");
    out.push_str(&skill.name);
    out.push_str("\" location=\"");
    out.push_str(&location);
    out.push_str("\">\n");
    out.push_str(content);
    out.push_str(CLOSE);
    if !message.is_empty() {
        out.push_str("\n\n");
        out.push_str(message);
    }
    out
}

/// Recognizes exactly the block of [`expand_skill`] at the start of `text`:
/// the body ends at the first `\n</skill>` that is followed by the end of the
/// text or by `\n\n` and a non-empty message.
pub fn parse_skill_block(text: &str) -> Option<SkillBlock<'_>> {
    let rest = text.strip_prefix("<skill name=\"")?;
    let (name, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(" location=\"")?;
    let (location, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(">\n")?;
    if name.is_empty() || location.is_empty() {
        return None;
    }
    let mut from = 0;
    while let Some(found) = rest[from..].find(CLOSE) {
        let at = from + found;
        let after = &rest[at + CLOSE.len()..];
        let message = if after.is_empty() {
            Some("")
        } else {
            after.strip_prefix("\n\n").filter(|m| !m.is_empty())
        };
        if let Some(message) = message {
            return Some(SkillBlock {
                name,
                location,
                body: &rest[..at],
                message,
            });
        }
        from = at + 1;
    }
    None
}

/// `body` without its leading and trailing blank (whitespace-only) lines;
/// indentation of the first kept line and inner blank lines stay.
fn trim_blank_lines(body: &str) -> &str {
    let Some(first) = body.find(|c: char| !c.is_whitespace()) else {
        return "";
    };
    let start = body[..first].rfind('\n').map_or(0, |i| i + 1);
    let last = body.trim_end().len();
    let end = body[last..].find('\n').map_or(body.len(), |i| last + i);
    let kept = &body[start..end];
    kept.strip_suffix('\r').unwrap_or(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fs::{skill, write};

    /// A skill at `/s/{name}/SKILL.md`.
    fn at(name: &str) -> Skill {
        Skill {
            name: name.into(),
            description: "d".into(),
            location: format!("/s/{name}/SKILL.md").into(),
        }
    }

    /// The exact expansion, with and without a message.
    #[test]
    fn expansion_is_exact() {
        let skill = at("pdf");
        assert_eq!(
            expand_skill(&skill, "\n\n  # PDF\n\nSteps\n\n\n", "fill the form"),
            "<skill name=\"pdf\" location=\"/s/pdf/SKILL.md\">\n  # PDF\n\nSteps\n</skill>\n\nfill the form"
        );
        assert_eq!(
            expand_skill(&skill, "Body\r\n", ""),
            "<skill name=\"pdf\" location=\"/s/pdf/SKILL.md\">\nBody\n</skill>"
        );
    }

    /// parse(expand(x)) gives back the parts, including bodies that contain
    /// a `</skill>` line and an empty body. (A body containing `\n</skill>\n\n`
    /// is ambiguous by design of the format; the first such close wins.)
    #[test]
    fn round_trip() {
        let skill = at("a-b");
        for (body, message) in [
            ("Body", "do it\n\nplease"),
            ("Body", ""),
            ("", "msg"),
            ("", ""),
            ("x\n</skill>\ny", "m"),
            ("x\n</skill>\ny", ""),
        ] {
            let text = expand_skill(&skill, body, message);
            let block = parse_skill_block(&text).unwrap();
            assert_eq!(
                block,
                SkillBlock {
                    name: "a-b",
                    location: "/s/a-b/SKILL.md",
                    body,
                    message
                },
                "{text:?}"
            );
        }
    }

    /// Anything else is not a block.
    #[test]
    fn rejects_other_text() {
        for text in [
            "hello",
            " <skill name=\"a\" location=\"/l\">\nb\n</skill>",
            "<skill name=\"\" location=\"/l\">\nb\n</skill>",
            "<skill name=\"a\" location=\"/l\">b\n</skill>",
            "<skill name=\"a\" location=\"/l\">\nb\n</skill>x",
            "<skill name=\"a\" location=\"/l\">\nb\n</skill>\n\n",
            "<skill name=\"a\" location=\"/l\">\nb",
        ] {
            assert_eq!(parse_skill_block(text), None, "{text:?}");
        }
    }

    /// The body is the text after the frontmatter; a broken file is typed.
    #[test]
    fn loads_body() {
        let tmp = tempfile::tempdir().unwrap();
        let path = skill(tmp.path(), "pdf", "d");
        write(&path, "---\nname: pdf\ndescription: d\n---\n\n# PDF\n");
        let s = Skill {
            name: "pdf".into(),
            description: "d".into(),
            location: path.clone(),
        };
        assert_eq!(load_skill_body(&s).unwrap(), "\n# PDF\n");
        write(&path, "no frontmatter");
        assert!(matches!(
            load_skill_body(&s),
            Err(SkillError::Invalid { .. })
        ));
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            load_skill_body(&s),
            Err(SkillError::Missing { .. })
        ));
    }
}
