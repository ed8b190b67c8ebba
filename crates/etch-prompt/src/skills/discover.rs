//! Skill discovery (E-CTX-06, C10, G21): the skill roots in precedence order,
//! the `*/SKILL.md` files under each, and nearest-wins de-duplication.
//!
//! Roots, nearest first: `.etch/skills` then `.agents/skills` in the cwd, the
//! same in each ancestor up to `/`, and last the global `~/.etch/skills`. Only
//! each file's frontmatter is read (metadata only). This module must not know
//! how the catalog is rendered or which tools are active.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::diagnostic;
use crate::paths::slash_path;
use crate::read::{ReadError, is_absent, open_regular};
use crate::skills::frontmatter::{self, is_delimiter};
use crate::skills::validate::validate;
use crate::skills::{Rejection, Skill};

/// The valid skills, sorted by name, and what was left out and why.
#[derive(Debug, Default)]
pub(crate) struct Discovered {
    /// Valid skills, one per name, sorted by name.
    pub skills: Vec<Skill>,
    /// `"{path}: {reason}"` for unreadable roots and rejected or shadowed skills.
    pub diagnostics: Vec<String>,
    /// The subset of `diagnostics` that are problems to fix (unreadable
    /// roots and files, invalid frontmatter), not notes (a shadowed skill
    /// is precedence working as meant).
    pub problems: Vec<String>,
}

/// Why one `SKILL.md` is not in the catalog.
#[derive(Debug, thiserror::Error)]
enum Problem {
    /// The file could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The frontmatter broke a rule.
    #[error(transparent)]
    Rejected(#[from] Rejection),
}

/// Discovers the skills visible from `cwd` (absolute) with `home`.
pub(crate) fn discover(cwd: &Path, home: Option<&Path>) -> Discovered {
    let mut roots: Vec<PathBuf> = Vec::new();
    for dir in cwd.ancestors() {
        roots.push(dir.join(".etch").join("skills"));
        roots.push(dir.join(".agents").join("skills"));
    }
    if let Some(home) = home {
        // When home is the cwd or an ancestor, this root is already listed,
        // with the higher precedence of its place in the walk.
        let global = home.join(".etch").join("skills");
        if !roots.contains(&global) {
            roots.push(global);
        }
    }
    let mut found = Discovered::default();
    let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
    for root in &roots {
        for location in found.candidates(root) {
            match load(&location) {
                Ok(None) => {}
                Ok(Some(skill)) => {
                    if let Some(winner) = by_name.get(&skill.name) {
                        let reason = format!(
                            "skill \"{}\" is shadowed by {}",
                            skill.name,
                            slash_path(&winner.location)
                        );
                        found.diagnostics.push(diagnostic(&location, reason));
                    } else {
                        by_name.insert(skill.name.clone(), skill);
                    }
                }
                Err(problem) => {
                    let text = diagnostic(&location, problem);
                    found.problems.push(text.clone());
                    found.diagnostics.push(text);
                }
            }
        }
    }
    found.skills = by_name.into_values().collect();
    found
}

impl Discovered {
    /// The `SKILL.md` paths of every entry of `root`, sorted so discovery and
    /// its diagnostics are deterministic; an unreadable root is reported.
    fn candidates(&mut self, root: &Path) -> Vec<PathBuf> {
        let entries = match fs::read_dir(root) {
            Ok(entries) => entries,
            Err(err) if is_absent(&err) => return Vec::new(),
            Err(err) => {
                let text = diagnostic(root, ReadError::from(err));
                self.problems.push(text.clone());
                self.diagnostics.push(text);
                return Vec::new();
            }
        };
        let mut dirs: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        dirs.sort();
        dirs.into_iter().map(|dir| dir.join("SKILL.md")).collect()
    }
}

/// Reads and validates one `SKILL.md`; `Ok(None)` when the directory has none.
fn load(location: &Path) -> Result<Option<Skill>, Problem> {
    let Some(head) = read_head(location)? else {
        return Ok(None);
    };
    let front = frontmatter::parse(&head)?;
    Ok(Some(validate(front, location)?))
}

/// Reads the file up to and including its closing `---` line (or only its
/// first line when that is not `---`), so large skill bodies cost nothing at
/// discovery.
fn read_head(path: &Path) -> Result<Option<String>, ReadError> {
    let Some((file, _)) = open_regular(path)? else {
        return Ok(None);
    };
    let mut reader = BufReader::new(file);
    let mut head = String::new();
    let mut first = true;
    loop {
        let before = head.len();
        if reader.read_line(&mut head)? == 0 {
            break;
        }
        let line = &head[before..];
        // Stop after a first line that is not `---`, or at the closing `---`.
        if first != is_delimiter(line.trim_start_matches('\u{feff}')) {
            break;
        }
        first = false;
    }
    Ok(Some(head))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fs::{skill, write};

    /// Names and locations of the discovered skills.
    fn listed(found: &Discovered) -> Vec<(&str, &Path)> {
        found
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.location.as_path()))
            .collect()
    }

    /// The nearest root wins a duplicate name, naming both paths; the global
    /// root has the lowest precedence; results are sorted by name.
    #[test]
    fn precedence_and_shadowing() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let repo = tmp.path().join("repo");
        let cwd = repo.join("pkg");
        let near = skill(&cwd.join(".agents/skills"), "lint", "near lint");
        let far = skill(&repo.join(".etch/skills"), "lint", "far lint");
        let global_dup = skill(&home.join(".etch/skills"), "lint", "global lint");
        let global = skill(&home.join(".etch/skills"), "deploy", "global only");
        let same_dir = skill(&cwd.join(".etch/skills"), "beta", "etch root");
        let same_dir_dup = skill(&cwd.join(".agents/skills"), "beta", "agents root");
        let found = discover(&cwd, Some(&home));
        assert_eq!(
            listed(&found),
            [
                ("beta", same_dir.as_path()),
                ("deploy", &global),
                ("lint", &near)
            ]
        );
        let shadow = |loser: &Path, winner: &Path, name: &str| {
            format!(
                "{}: skill \"{name}\" is shadowed by {}",
                loser.display(),
                winner.display()
            )
        };
        assert_eq!(
            found.diagnostics,
            [
                shadow(&same_dir_dup, &same_dir, "beta"),
                shadow(&far, &near, "lint"),
                shadow(&global_dup, &near, "lint"),
            ]
        );
    }

    /// Each rejection is a diagnostic with the path and reason; valid
    /// neighbours are still listed; a directory without SKILL.md is ignored.
    #[test]
    fn rejections_are_diagnosed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(".etch/skills");
        let cases = [
            (
                "a-none",
                "no frontmatter\n",
                "no frontmatter: SKILL.md must start with a `---` line",
            ),
            (
                "b-open",
                "---\nname: b-open\ndescription: d\n",
                "frontmatter is not closed by a `---` line",
            ),
            (
                "c-noname",
                "---\ndescription: d\n---\n",
                "frontmatter has no `name`",
            ),
            (
                "d_bad",
                "---\nname: d_bad\ndescription: d\n---\n",
                "invalid name \"d_bad\": use lowercase letters, digits and single hyphens between them",
            ),
            (
                "e-dir",
                "---\nname: other\ndescription: d\n---\n",
                "name \"other\" does not match its directory \"e-dir\"",
            ),
            (
                "f-nodesc",
                "---\nname: f-nodesc\n---\n",
                "frontmatter has no `description`",
            ),
            (
                "g-empty",
                "---\nname: g-empty\ndescription: \"\"\n---\n",
                "frontmatter has no `description`",
            ),
        ];
        let mut expected = Vec::new();
        for (dir, text, reason) in cases {
            let path = root.join(dir).join("SKILL.md");
            write(&path, text);
            expected.push(format!("{}: {reason}", path.display()));
        }
        let long = "h".repeat(65);
        let path = root.join(&long).join("SKILL.md");
        write(&path, &format!("---\nname: {long}\ndescription: d\n---\n"));
        expected.push(format!(
            "{}: name is 65 characters long; the limit is 64",
            path.display()
        ));
        let path = root.join("i-long/SKILL.md");
        write(
            &path,
            &format!(
                "---\nname: i-long\ndescription: {}\n---\n",
                "x".repeat(1025)
            ),
        );
        expected.push(format!(
            "{}: description is 1025 characters long; the limit is 1024",
            path.display()
        ));
        let path = root.join("j-utf/SKILL.md");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"---\nname: j-utf\ndescription: \xff\n---\n").unwrap();
        expected.push(format!("{}: is not valid UTF-8 text", path.display()));
        std::fs::create_dir_all(root.join("k-empty-dir")).unwrap();
        write(&root.join("l-file"), "not a skill directory");
        let ok = skill(&root, "z-ok", "fine");
        let found = discover(tmp.path(), None);
        assert_eq!(listed(&found), [("z-ok", ok.as_path())]);
        assert_eq!(found.diagnostics, expected);
    }

    /// The head reader stops at the closing delimiter or a non-`---` start.
    #[test]
    fn head_stops_early() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("SKILL.md");
        write(&path, "---\nname: a\n---\nbody \u{1}\n");
        assert_eq!(read_head(&path).unwrap().unwrap(), "---\nname: a\n---\n");
        write(&path, "# Title\n---\n");
        assert_eq!(read_head(&path).unwrap().unwrap(), "# Title\n");
    }
}
