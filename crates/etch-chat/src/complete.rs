//! Completion candidates: slash commands and skill names after `/`,
//! paths for the word at the caret, and project files matching an `@`
//! query by fuzzy search. The project's files are listed once, the way
//! `git` sees them (ignore files honoured, hidden files and `.git` left
//! out), capped at [`MAX_FILES`]. This module must not know about the
//! editor or the terminal.

use std::path::Path;

use crate::slash;

/// The most files listed for `@` search.
pub const MAX_FILES: usize = 50_000;

/// The most directory entries looked at for a path completion.
const MAX_ENTRIES: usize = 5000;

/// The most candidates offered at once.
pub const MAX_CHOICES: usize = 8;

/// Commands and `/skill:NAME`s starting with `prefix` (which starts
/// with `/`).
pub fn commands(prefix: &str, skills: &[String]) -> Vec<String> {
    let mut out: Vec<String> = slash::complete(prefix)
        .into_iter()
        .map(str::to_owned)
        .collect();
    for skill in skills {
        let name = format!("/skill:{skill}");
        if name.starts_with(prefix) {
            out.push(name);
        }
    }
    out
}

/// Entries of the directory part of `word` (relative to `cwd`) whose name
/// starts with its last part; directories end with `/`.
pub fn paths(cwd: &Path, word: &str) -> Vec<String> {
    let (dir, stem) = match word.rfind('/') {
        Some(i) => (&word[..=i], &word[i + 1..]),
        None => ("", word),
    };
    let base = if dir.starts_with('/') {
        Path::new(dir).to_path_buf()
    } else if let Some(rest) = dir.strip_prefix("~/") {
        match std::env::var_os("HOME") {
            Some(home) => Path::new(&home).join(rest),
            None => return Vec::new(),
        }
    } else {
        cwd.join(dir)
    };
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .filter_map(Result::ok)
        .take(MAX_ENTRIES)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if !name.starts_with(stem) || (name.starts_with('.') && !stem.starts_with('.')) {
                return None;
            }
            let slash = if entry.file_type().ok()?.is_dir() {
                "/"
            } else {
                ""
            };
            Some(format!("{dir}{name}{slash}"))
        })
        .collect();
    out.sort();
    out
}

/// The project's files, listed on a thread of their own (a large tree
/// takes long to walk, and the chat must keep drawing and reading keys).
#[derive(Debug, Clone)]
pub struct FileIndex {
    /// Filled once the walk is done.
    files: std::sync::Arc<std::sync::OnceLock<Vec<String>>>,
}

impl FileIndex {
    /// Starts listing the files under `cwd`.
    pub fn start(cwd: &Path) -> Self {
        let files = std::sync::Arc::new(std::sync::OnceLock::new());
        let slot = std::sync::Arc::clone(&files);
        let cwd = cwd.to_path_buf();
        let spawned = std::thread::Builder::new()
            .name("etch-files".into())
            .spawn(move || {
                let _ = slot.set(project_files(&cwd));
            });
        if spawned.is_err() {
            let _ = files.set(Vec::new());
        }
        Self { files }
    }

    /// The files, once listed.
    pub fn get(&self) -> Option<&[String]> {
        self.files.get().map(Vec::as_slice)
    }
}

/// The project's files, relative to `cwd`, as git would list them.
pub fn project_files(cwd: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(cwd)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build();
    for entry in walker.filter_map(Result::ok) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(rel) = entry.path().strip_prefix(cwd) {
            out.push(rel.to_string_lossy().into_owned());
        }
        if out.len() >= MAX_FILES {
            break;
        }
    }
    out.sort();
    out
}

/// The best [`MAX_CHOICES`] files for `query`: its characters in order
/// (ignoring case), preferring matches in the file name, at word starts,
/// close together, and shorter paths.
pub fn fuzzy<'a>(files: &'a [String], query: &str) -> Vec<&'a str> {
    let query: Vec<char> = query.to_lowercase().chars().collect();
    let mut scored: Vec<(i64, &str)> = files
        .iter()
        .filter_map(|file| score(file, &query).map(|s| (s, file.as_str())))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(MAX_CHOICES)
        .map(|(_, f)| f)
        .collect()
}

/// How well `file` matches `query` (higher is better), if at all.
fn score(file: &str, query: &[char]) -> Option<i64> {
    let lower: Vec<char> = file.to_lowercase().chars().collect();
    let name_start = lower.iter().rposition(|&c| c == '/').map_or(0, |i| i + 1);
    let mut score: i64 = 0;
    let mut at = 0;
    let mut last: Option<usize> = None;
    for &q in query {
        let found = (at..lower.len()).find(|&i| lower[i] == q)?;
        if found >= name_start {
            score += 10;
        }
        if found == 0 || matches!(lower[found - 1], '/' | '_' | '-' | '.') {
            score += 8;
        }
        if last.is_some_and(|l| l + 1 == found) {
            score += 5;
        }
        last = Some(found);
        at = found + 1;
    }
    Some(score - i64::try_from(lower.len()).unwrap_or(i64::MAX) / 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_skills_complete() {
        let skills = vec!["review".to_owned(), "release".to_owned()];
        assert_eq!(commands("/re", &skills), ["/resume", "/reload"]);
        assert_eq!(
            commands("/skill:re", &skills),
            ["/skill:review", "/skill:release"]
        );
    }

    /// `@` search lists files git would see, and ranks file-name matches
    /// first.
    #[test]
    fn files_are_listed_and_ranked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/app")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        for f in [
            "src/app/main.rs",
            "src/lib.rs",
            "README.md",
            "target/main.rs",
            "src/app/mainline.txt",
        ] {
            std::fs::write(root.join(f), "").unwrap();
        }
        let files = project_files(root);
        assert_eq!(
            files,
            [
                "README.md",
                "src/app/main.rs",
                "src/app/mainline.txt",
                "src/lib.rs"
            ]
        );
        assert_eq!(fuzzy(&files, "main")[0], "src/app/main.rs");
        assert_eq!(fuzzy(&files, "slib"), ["src/lib.rs"]);
        assert!(fuzzy(&files, "zzz").is_empty());
        assert_eq!(paths(root, "src/"), ["src/app/", "src/lib.rs"]);
        assert_eq!(paths(root, "src/l"), ["src/lib.rs"]);
    }
}
