//! Paths close to one that does not exist, so a tool that was given a
//! wrong path can say what is there instead of only "does not exist"
//! (small models guess `data.csv` for `data/data.csv`, or misspell a
//! name, then guess again).
//!
//! Two kinds of candidates: files with the same name elsewhere under the
//! working directory (a bounded walk that honours ignore files), then
//! entries of the nearest existing directory whose names are close
//! (`similar`'s ratio). This module must not know which tool asks.

use std::path::{Path, PathBuf};

use crate::paths;

/// Entries a walk for same-named files looks at before giving up.
const WALK_BUDGET: usize = 20_000;

/// Entries of one directory compared by name.
const DIR_BUDGET: usize = 2_000;

/// The error text for a path `raw` that does not exist: the closest
/// existing paths when there are any, else `otherwise` (what to do).
pub fn missing(cwd: &Path, raw: &str, otherwise: &str) -> String {
    let near = closest(cwd, raw, 3);
    if near.is_empty() {
        format!("{raw} does not exist; {otherwise}")
    } else {
        format!("{raw} does not exist; did you mean {}?", near.join(", "))
    }
}

/// Up to `n` existing paths close to `raw` (as the model wrote it,
/// resolved against `cwd`), written relative to `cwd` when under it.
pub fn closest(cwd: &Path, raw: &str, n: usize) -> Vec<String> {
    let wanted = paths::resolve(cwd, raw);
    let Some(name) = wanted
        .file_name()
        .map(|s| s.to_string_lossy().to_lowercase())
    else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = same_name(cwd, &name, n);
    if found.len() < n
        && let Some(dir) = wanted.ancestors().skip(1).find(|a| a.is_dir())
    {
        for path in close_names(dir, &name, n) {
            if !found.contains(&path) && found.len() < n {
                found.push(path);
            }
        }
    }
    found.iter().map(|p| display(cwd, p)).collect()
}

/// Files named `name` (case-insensitively) under `cwd`.
fn same_name(cwd: &Path, name: &str, n: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let walk = ignore::WalkBuilder::new(cwd).max_depth(Some(8)).build();
    for entry in walk.take(WALK_BUDGET).flatten() {
        let hit = entry
            .file_name()
            .to_string_lossy()
            .eq_ignore_ascii_case(name);
        if hit && entry.file_type().is_some_and(|t| t.is_file()) {
            found.push(entry.into_path());
            if found.len() == n {
                break;
            }
        }
    }
    found
}

/// Entries of `dir` whose names are close to `name`.
fn close_names(dir: &Path, name: &str, n: usize) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let names: Vec<String> = entries
        .flatten()
        .take(DIR_BUDGET)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let lowered: Vec<String> = names.iter().map(|s| s.to_lowercase()).collect();
    let refs: Vec<&str> = lowered.iter().map(String::as_str).collect();
    similar::get_close_matches(name, &refs, n, 0.6)
        .into_iter()
        .filter_map(|hit| lowered.iter().position(|l| l == hit))
        .map(|i| dir.join(&names[i]))
        .collect()
}

/// `path` relative to `cwd` when under it, else as it is; a directory
/// ends with `/`, as `ls` and `find` print it.
fn display(cwd: &Path, path: &Path) -> String {
    let mut text = path
        .strip_prefix(cwd)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned();
    if path.is_dir() {
        text.push('/');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Same-named files elsewhere come first, then close names in the
    /// nearest existing directory; nothing close gives nothing.
    #[test]
    fn names_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::write(root.join("data/data.csv"), "a\n").unwrap();
        std::fs::write(root.join("README.md"), "").unwrap();
        std::fs::write(root.join("main.rs"), "").unwrap();
        assert_eq!(closest(root, "data.csv", 3), ["data/data.csv", "data/"]);
        assert_eq!(closest(root, "REDME.md", 3), ["README.md"]);
        assert_eq!(closest(root, "src/mian.rs", 3), ["main.rs"]);
        assert!(closest(root, "zzzz.toml", 3).is_empty());
    }
}
