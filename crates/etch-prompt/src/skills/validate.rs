//! Skill validation (E-CTX-08, E-CTX-09, C10): the name pattern, its length
//! and its directory, and the description's presence and length.
//!
//! This module owns the rules that decide whether parsed frontmatter becomes
//! a [`Skill`]. It must not read files or render anything.

use std::path::Path;

use crate::skills::frontmatter::Frontmatter;
use crate::skills::{Rejection, Skill};

/// Longest allowed name, in characters (E-CTX-08).
const MAX_NAME: usize = 64;

/// Longest allowed description, in characters (E-CTX-09).
const MAX_DESCRIPTION: usize = 1024;

/// Turns the frontmatter of the `SKILL.md` at `location` into a skill, or
/// says why it is left out.
pub(crate) fn validate(front: Frontmatter, location: &Path) -> Result<Skill, Rejection> {
    let name = front
        .name
        .filter(|n| !n.is_empty())
        .ok_or(Rejection::MissingName)?;
    if !is_valid_name(&name) {
        return Err(Rejection::BadName(name));
    }
    if name.len() > MAX_NAME {
        return Err(Rejection::NameTooLong(name.len()));
    }
    let dir = location
        .parent()
        .and_then(Path::file_name)
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    if dir != name {
        return Err(Rejection::NameMismatch { name, dir });
    }
    let description = front
        .description
        .filter(|d| !d.trim().is_empty())
        .ok_or(Rejection::MissingDescription)?;
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION {
        return Err(Rejection::DescriptionTooLong(chars));
    }
    Ok(Skill {
        name,
        description,
        location: location.to_path_buf(),
    })
}

/// `^[a-z0-9]+(-[a-z0-9]+)*$`, checked by hand: only lowercase ASCII letters,
/// digits and hyphens, with no leading, trailing or doubled hyphen.
fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frontmatter with the given values.
    fn front(name: Option<&str>, description: Option<&str>) -> Frontmatter {
        Frontmatter {
            name: name.map(str::to_string),
            description: description.map(str::to_string),
            body_start: 0,
        }
    }

    /// The name pattern, by hand.
    #[test]
    fn name_pattern() {
        for good in ["a", "pdf", "a-b", "x1-2y", "0"] {
            assert!(is_valid_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b", "é", "a.b"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    /// Each rule in order, and a valid skill.
    #[test]
    fn rules() {
        let at = |dir: &str| format!("/s/{dir}/SKILL.md");
        let check = |n: Option<&str>, d: Option<&str>, dir: &str| {
            validate(front(n, d), Path::new(&at(dir)))
        };
        assert_eq!(check(None, Some("d"), "a"), Err(Rejection::MissingName));
        assert_eq!(check(Some(""), Some("d"), "a"), Err(Rejection::MissingName));
        assert_eq!(
            check(Some("Bad"), Some("d"), "Bad"),
            Err(Rejection::BadName("Bad".into()))
        );
        let long = "a".repeat(65);
        assert_eq!(
            check(Some(&long), Some("d"), &long),
            Err(Rejection::NameTooLong(65))
        );
        let max = "a".repeat(64);
        assert!(check(Some(&max), Some("d"), &max).is_ok());
        assert_eq!(
            check(Some("a"), Some("d"), "b"),
            Err(Rejection::NameMismatch {
                name: "a".into(),
                dir: "b".into()
            })
        );
        assert_eq!(
            check(Some("a"), None, "a"),
            Err(Rejection::MissingDescription)
        );
        assert_eq!(
            check(Some("a"), Some("  "), "a"),
            Err(Rejection::MissingDescription)
        );
        let desc = "é".repeat(1025);
        assert_eq!(
            check(Some("a"), Some(&desc), "a"),
            Err(Rejection::DescriptionTooLong(1025))
        );
        assert_eq!(
            check(Some("a"), Some(&"é".repeat(1024)), "a"),
            Ok(Skill {
                name: "a".into(),
                description: "é".repeat(1024),
                location: at("a").into()
            })
        );
    }
}
