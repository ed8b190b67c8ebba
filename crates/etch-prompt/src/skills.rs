//! Skills (E-CTX-06..11, C10, G21, P-SKILL-07/08/10): instruction bundles in
//! `*/SKILL.md` directories that the model loads on demand with `read`.
//!
//! This module owns the [`Skill`] metadata, its typed errors and the lookup by
//! name; discovery, the frontmatter parser, validation, the catalog text and
//! explicit invocation live in the submodules. It must not know about the
//! other prompt layers or which tools exist beyond what callers pass in.

mod catalog;
mod discover;
mod frontmatter;
mod invoke;
mod validate;

use std::path::PathBuf;

pub use catalog::{CATALOG_LEAD, catalog};
pub(crate) use discover::discover;
pub use invoke::{SkillBlock, expand_skill, load_skill_body, parse_skill_block};

use crate::read::ReadError;

/// One valid skill, as listed in the catalog (metadata only, E-CTX-06).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The skill name, equal to its directory name (E-CTX-08).
    pub name: String,
    /// What the skill is for; the model matches tasks against it (E-CTX-09).
    pub description: String,
    /// Absolute path of the `SKILL.md`, which the model reads to load it.
    pub location: PathBuf,
}

/// Every skill problem visible from `cwd` (absolute) with `home`, each as
/// `"{path}: {reason}"`: unreadable skill directories and files, and
/// `SKILL.md` files whose frontmatter breaks a rule (bad or mismatched
/// name, missing or over-long description). `etch config check` reports
/// them as errors; a run only warns and leaves such skills out.
pub fn skill_problems(cwd: &std::path::Path, home: Option<&std::path::Path>) -> Vec<String> {
    discover(cwd, home).problems
}

/// Finds the skill called `name`, e.g. for `--skill NAME`.
pub fn find_skill<'a>(skills: &'a [Skill], name: &str) -> Option<&'a Skill> {
    skills.iter().find(|s| s.name == name)
}

/// Why a `SKILL.md` is left out of the catalog (E-CTX-07..10); the text is
/// the reason part of its diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The file does not start with a `---` line.
    #[error("no frontmatter: SKILL.md must start with a `---` line")]
    MissingFrontmatter,
    /// The opening `---` has no closing `---` line.
    #[error("frontmatter is not closed by a `---` line")]
    UnterminatedFrontmatter,
    /// No `name:` key, or an empty one.
    #[error("frontmatter has no `name`")]
    MissingName,
    /// The name breaks `^[a-z0-9]+(-[a-z0-9]+)*$`.
    // Debug quoting escapes newlines and control characters: a hostile
    // name stays on the problem's one line.
    #[error("invalid name {0:?}: use lowercase letters, digits and single hyphens between them")]
    BadName(String),
    /// The name has more than 64 characters.
    #[error("name is {0} characters long; the limit is 64")]
    NameTooLong(usize),
    /// The name differs from the directory holding the `SKILL.md`.
    #[error("name {name:?} does not match its directory {dir:?}")]
    NameMismatch {
        /// The `name:` value.
        name: String,
        /// The parent directory's name.
        dir: String,
    },
    /// No `description:` key, or an empty one.
    #[error("frontmatter has no `description`")]
    MissingDescription,
    /// The description has more than 1024 characters.
    #[error("description is {0} characters long; the limit is 1024")]
    DescriptionTooLong(usize),
}

/// A failure loading a skill's body for explicit invocation.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// The `SKILL.md` exists but could not be read.
    #[error("could not read {}: {source}", path.display())]
    Read {
        /// The `SKILL.md` path.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: ReadError,
    },
    /// The `SKILL.md` is gone since discovery.
    #[error("{}: file not found", path.display())]
    Missing {
        /// The `SKILL.md` path.
        path: PathBuf,
    },
    /// The `SKILL.md` no longer has a valid frontmatter block.
    #[error("{}: {source}", path.display())]
    Invalid {
        /// The `SKILL.md` path.
        path: PathBuf,
        /// Why it was rejected.
        #[source]
        source: Rejection,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lookup is by exact name.
    #[test]
    fn find_by_name() {
        let skills = [Skill {
            name: "pdf".into(),
            description: "d".into(),
            location: "/s/pdf/SKILL.md".into(),
        }];
        assert_eq!(find_skill(&skills, "pdf"), Some(&skills[0]));
        assert_eq!(find_skill(&skills, "PDF"), None);
    }
}
