//! Pinned instruction files (E-CTX-02..05, C7, C8, P-PROMPT-09): `SYSTEM.md`
//! from the root down to the cwd, and `AGENTS.md` (or a directory's
//! `CLAUDE.md` when it has no `AGENTS.md`) after `~/.etch/AGENTS.md`, plus the
//! exact `<project_context>` wrapper of the AGENTS layer.
//!
//! This module owns which instruction files are read, in what order, and how
//! the AGENTS layer is rendered. It must not know about skills, the base
//! prompt or how layers are joined; unreadable files become diagnostics, never
//! errors.

use std::path::{Path, PathBuf};

use crate::diagnostic;
use crate::paths::{root_first, slash_path};
use crate::read::read_text;

/// One instruction file read in full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PinnedFile {
    /// Absolute path of the file, as discovered (symlinks not resolved).
    pub path: PathBuf,
    /// The whole file text.
    pub text: String,
}

/// The instruction files found for one cwd, in prompt order.
#[derive(Debug, Default)]
pub(crate) struct Instructions {
    /// `SYSTEM.md` files, root → cwd.
    pub system: Vec<PinnedFile>,
    /// `~/.etch/AGENTS.md`, then `AGENTS.md`/`CLAUDE.md` root → cwd.
    pub agents: Vec<PinnedFile>,
    /// `"{path}: {reason}"` for each file that exists but could not be read.
    pub diagnostics: Vec<String>,
}

/// Finds and reads the instruction files for `cwd` (absolute) and `home`.
pub(crate) fn discover(cwd: &Path, home: Option<&Path>) -> Instructions {
    let mut found = Instructions::default();
    let dirs = root_first(cwd);
    for dir in &dirs {
        found.pin(dir.join("SYSTEM.md"), Layer::System);
    }
    let global = home.map(|home| home.join(".etch").join("AGENTS.md"));
    if let Some(global) = &global {
        found.pin(global.clone(), Layer::Agents);
    }
    for dir in &dirs {
        let agents = dir.join("AGENTS.md");
        // `~/.etch/AGENTS.md` is already first when the cwd is inside `~/.etch`.
        if global.as_ref() == Some(&agents) {
            continue;
        }
        // Any entry named AGENTS.md, even an unreadable one, means the
        // directory has an AGENTS.md: its CLAUDE.md is not a fallback then.
        if !found.pin(agents, Layer::Agents) {
            found.pin(dir.join("CLAUDE.md"), Layer::Agents);
        }
    }
    found
}

/// Which list a pinned file joins.
#[derive(Debug, Clone, Copy)]
enum Layer {
    /// A `SYSTEM.md` file.
    System,
    /// An `AGENTS.md` or `CLAUDE.md` file.
    Agents,
}

impl Instructions {
    /// Reads `path` into `layer`; returns whether anything exists at `path`
    /// (read, or unreadable and reported).
    fn pin(&mut self, path: PathBuf, layer: Layer) -> bool {
        match read_text(&path) {
            Ok(Some(text)) => {
                let file = PinnedFile { path, text };
                match layer {
                    Layer::System => self.system.push(file),
                    Layer::Agents => self.agents.push(file),
                }
                true
            }
            Ok(None) => false,
            Err(err) => {
                self.diagnostics.push(diagnostic(&path, err));
                true
            }
        }
    }
}

/// Renders the AGENTS layer in Pi's wrapper (P-PROMPT-09, C8): one
/// `<project_instructions path="ABS">` element per file, in order, separated
/// by blank lines. `None` when no file was found, so the layer is left out.
pub(crate) fn render_agents(files: &[PinnedFile]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut out =
        String::from("<project_context>\nProject-specific instructions and guidelines:\n");
    for file in files {
        out.push_str("\n<project_instructions path=\"");
        out.push_str(&slash_path(&file.path));
        out.push_str("\">\n");
        out.push_str(layer_text(&file.text));
        out.push_str("\n</project_instructions>\n");
    }
    out.push_str("</project_context>");
    Some(out)
}

/// The text of a file as it appears in a layer: verbatim, except that the
/// newline ending the last line is dropped, because layers and wrapper tags
/// supply their own line breaks (otherwise every file would add a stray blank
/// line before the next layer or `</project_instructions>`).
pub(crate) fn layer_text(text: &str) -> &str {
    text.strip_suffix('\n')
        .map_or(text, |t| t.strip_suffix('\r').unwrap_or(t))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::test_fs::write;

    /// AGENTS.md wins over CLAUDE.md in the same directory; a directory with
    /// only CLAUDE.md contributes it; the global file comes first.
    #[test]
    fn agents_order_and_claude_fallback() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let repo = tmp.path().join("repo");
        let cwd = repo.join("sub");
        write(&home.join(".etch/AGENTS.md"), "global\n");
        write(&repo.join("AGENTS.md"), "repo\n");
        write(&repo.join("CLAUDE.md"), "ignored claude\n");
        write(&cwd.join("CLAUDE.md"), "sub claude\n");
        let found = discover(&cwd, Some(&home));
        let paths: Vec<&Path> = found.agents.iter().map(|f| f.path.as_path()).collect();
        assert_eq!(
            paths,
            [
                home.join(".etch/AGENTS.md").as_path(),
                &repo.join("AGENTS.md"),
                &cwd.join("CLAUDE.md"),
            ]
        );
        assert!(found.diagnostics.is_empty());
    }

    /// When home is an ancestor, ~/AGENTS.md is read once, after
    /// ~/.etch/AGENTS.md; a cwd inside ~/.etch does not read the global file
    /// twice.
    #[test]
    fn home_files_are_read_once() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        write(&home.join(".etch/AGENTS.md"), "global");
        write(&home.join("AGENTS.md"), "home");
        let cwd = home.join("proj");
        fs::create_dir_all(&cwd).unwrap();
        let texts = |cwd: &Path| -> Vec<String> {
            discover(cwd, Some(&home))
                .agents
                .into_iter()
                .map(|f| f.text)
                .collect()
        };
        assert_eq!(texts(&cwd), ["global", "home"]);
        assert_eq!(texts(&home.join(".etch")), ["global", "home"]);
    }

    /// SYSTEM.md files are collected root → cwd.
    #[test]
    fn system_files_root_first() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("a/b");
        write(&tmp.path().join("a/SYSTEM.md"), "outer");
        write(&cwd.join("SYSTEM.md"), "inner");
        let found = discover(&cwd, None);
        let texts: Vec<&str> = found.system.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["outer", "inner"]);
    }

    /// A directory named AGENTS.md and an invalid UTF-8 file are reported
    /// with their path and skipped; the directory's CLAUDE.md is not used.
    #[test]
    fn unreadable_files_are_diagnosed() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("a/b");
        fs::create_dir_all(tmp.path().join("a/AGENTS.md")).unwrap();
        write(&tmp.path().join("a/CLAUDE.md"), "not a fallback");
        fs::create_dir_all(&cwd).unwrap();
        fs::write(cwd.join("AGENTS.md"), b"bad \xc3\x28").unwrap();
        let found = discover(&cwd, None);
        assert!(found.agents.is_empty());
        assert_eq!(
            found.diagnostics,
            [
                format!(
                    "{}: is a directory, not a file",
                    tmp.path().join("a/AGENTS.md").display()
                ),
                format!(
                    "{}: is not valid UTF-8 text",
                    cwd.join("AGENTS.md").display()
                ),
            ]
        );
    }

    /// The wrapper is exact, elements separated by a blank line.
    #[test]
    fn wrapper_is_exact() {
        let files = [
            PinnedFile {
                path: "/r/AGENTS.md".into(),
                text: "one\n".into(),
            },
            PinnedFile {
                path: "/r/s/CLAUDE.md".into(),
                text: "two".into(),
            },
        ];
        assert_eq!(
            render_agents(&files).unwrap(),
            "<project_context>\nProject-specific instructions and guidelines:\n\n\
             <project_instructions path=\"/r/AGENTS.md\">\none\n</project_instructions>\n\n\
             <project_instructions path=\"/r/s/CLAUDE.md\">\ntwo\n</project_instructions>\n\
             </project_context>"
        );
        assert_eq!(render_agents(&[]), None);
    }

    /// Only the final line break is dropped.
    #[test]
    fn layer_text_drops_one_final_newline() {
        assert_eq!(layer_text("a\n\n"), "a\n");
        assert_eq!(layer_text("a\r\n"), "a");
        assert_eq!(layer_text("a"), "a");
    }
}
