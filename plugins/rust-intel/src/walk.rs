//! Finding the Rust files of a query and naming them: the walk over the
//! given paths (skipping build output, VCS and hidden directories), each
//! file's three path spellings, its crate (from the nearest Cargo.toml
//! with a `[package] name`) and its module path (from its place under
//! `src/`).

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use etch_plugin_sdk::ToolError;

/// Directories the walk does not enter (besides hidden ones).
pub const SKIPPED: [&str; 4] = ["target", ".git", ".etch", "node_modules"];

/// Most files one query looks at.
pub const MAX_FILES: usize = 20_000;

/// One Rust file to parse, with everything its items are matched on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Where to read it.
    pub path: PathBuf,
    /// How it is shown: relative to the working directory when under it,
    /// else the raw path.
    pub label: String,
    /// Relative to the given path it was found under (its file name when
    /// the given path was the file itself).
    pub under_root: String,
    /// The given path joined with `under_root`, as written.
    pub raw: String,
    /// The crate name, dashes as underscores.
    pub krate: String,
    /// The package name as written in Cargo.toml.
    pub package: String,
    /// The crate's directory, shown like `label`.
    pub crate_dir: String,
    /// The file's module path, crate name first (`etch_core::agent`).
    pub module: String,
}

/// The files of a query.
#[derive(Debug, Default)]
pub struct Walked {
    /// The files, in the given paths' order, each directory sorted.
    pub files: Vec<SourceFile>,
    /// Whether the walk stopped at [`MAX_FILES`].
    pub truncated: bool,
}

/// Finds the `.rs` files under `paths` (relative to `base`, the working
/// directory). A path that does not exist is a tool error; a given file
/// is taken whatever its extension, except that a `Cargo.toml` stands for
/// its directory.
pub fn walk(base: &Path, paths: &[String]) -> Result<Walked, ToolError> {
    let base = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
    let mut crates = CrateFinder::default();
    let mut seen = HashSet::new();
    let mut walked = Walked::default();
    for given in paths {
        let mut given_path = PathBuf::from(given);
        let mut root = base.join(&given_path).canonicalize().map_err(|_| {
            ToolError::new(format!(
                "`paths`: {given} does not exist (paths are relative to the working directory {})",
                base.display()
            ))
        })?;
        if root.is_file() && root.file_name().is_some_and(|n| n == "Cargo.toml") {
            root.pop();
            given_path.pop();
        }
        let mut found = Vec::new();
        if root.is_dir() {
            collect(&root, &mut found, &mut walked.truncated);
        } else {
            found.push(root.clone());
        }
        for path in found {
            if walked.files.len() >= MAX_FILES {
                walked.truncated = true;
                break;
            }
            if !seen.insert(path.clone()) {
                continue;
            }
            let (under_root, raw) = if path == root {
                let name = path.file_name().map(PathBuf::from).unwrap_or_default();
                (to_slash(&name), to_slash(&given_path))
            } else {
                let rel = path.strip_prefix(&root).unwrap_or(&path);
                (to_slash(rel), to_slash(&given_path.join(rel)))
            };
            let label = relative(&base, &path).unwrap_or_else(|| raw.clone());
            let home = if root.is_dir() {
                root.clone()
            } else {
                path.parent().map(Path::to_path_buf).unwrap_or_default()
            };
            let (crate_dir, package) =
                crates
                    .find(path.parent().unwrap_or(&path))
                    .unwrap_or_else(|| {
                        let name = home.file_name().map_or_else(
                            || "crate".to_owned(),
                            |n| n.to_string_lossy().into_owned(),
                        );
                        (home.clone(), name)
                    });
            let krate: String = package
                .chars()
                .map(|c| {
                    if c.is_alphanumeric() || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let module = module_path(&krate, path.strip_prefix(&crate_dir).unwrap_or(&path));
            let crate_label = relative(&base, &crate_dir).unwrap_or_else(|| to_slash(&crate_dir));
            walked.files.push(SourceFile {
                path,
                label,
                under_root,
                raw,
                krate,
                package,
                crate_dir: crate_label,
                module,
            });
        }
    }
    Ok(walked)
}

/// Collects the `.rs` files under `dir`, sorted, skipping [`SKIPPED`] and
/// hidden directories; sets `truncated` past [`MAX_FILES`].
fn collect(dir: &Path, found: &mut Vec<PathBuf>, truncated: &mut bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        if found.len() >= MAX_FILES {
            *truncated = true;
            return;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        if kind.is_dir() {
            if !name.starts_with('.') && !SKIPPED.contains(&name.as_ref()) {
                collect(&path, found, truncated);
            }
        } else if name.ends_with(".rs") && path.is_file() {
            found.push(path);
        }
    }
}

/// The module path of a file at `rel` inside its crate's directory:
/// `src/lib.rs` and `src/main.rs` are the crate root, `src/a/mod.rs` is
/// `a`, `src/a/b.rs` is `a::b`; files outside `src/` keep their
/// directories (`tests/x.rs` is `tests::x`).
pub fn module_path(krate: &str, rel: &Path) -> String {
    let mut segments: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    if segments.len() > 1 && segments[0] == "src" {
        segments.remove(0);
    }
    let stem = segments.pop().map_or_else(String::new, |last| {
        last.strip_suffix(".rs").unwrap_or(&last).to_owned()
    });
    let root = segments.is_empty() && (stem == "lib" || stem == "main");
    if stem != "mod" && !root && !stem.is_empty() {
        segments.push(stem);
    }
    std::iter::once(krate.to_owned())
        .chain(segments.iter().map(|s| s.replace(['-', '.'], "_")))
        .collect::<Vec<_>>()
        .join("::")
}

/// `path` relative to `base` with `/` separators, if it is under it.
fn relative(base: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(base).ok()?;
    let shown = to_slash(rel);
    Some(if shown.is_empty() {
        ".".to_owned()
    } else {
        shown
    })
}

/// A path with `/` separators.
fn to_slash(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
        .replace("//", "/")
}

/// Finds the package a directory belongs to, remembering every answer.
#[derive(Debug, Default)]
struct CrateFinder {
    /// Directory → its package's directory and name.
    cache: HashMap<PathBuf, Option<(PathBuf, String)>>,
}

impl CrateFinder {
    /// The nearest directory at or above `dir` whose Cargo.toml has a
    /// `[package] name`, with that name.
    fn find(&mut self, dir: &Path) -> Option<(PathBuf, String)> {
        if let Some(known) = self.cache.get(dir) {
            return known.clone();
        }
        let found = match package_name(&dir.join("Cargo.toml")) {
            Some(name) => Some((dir.to_path_buf(), name)),
            None => dir.parent().and_then(|parent| self.find(parent)),
        };
        self.cache.insert(dir.to_path_buf(), found.clone());
        found
    }
}

/// The `[package] name` of a Cargo.toml, if it has one.
fn package_name(manifest: &Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let table: toml::Table = toml::from_str(&text).ok()?;
    table
        .get("package")?
        .get("name")?
        .as_str()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::fixture;

    #[test]
    fn module_paths_follow_the_file_layout() {
        let m = |p: &str| module_path("demo", Path::new(p));
        assert_eq!(m("src/lib.rs"), "demo");
        assert_eq!(m("src/main.rs"), "demo");
        assert_eq!(m("src/a/mod.rs"), "demo::a");
        assert_eq!(m("src/a/b.rs"), "demo::a::b");
        assert_eq!(m("src/a/main.rs"), "demo::a::main");
        assert_eq!(m("tests/it-works.rs"), "demo::tests::it_works");
        assert_eq!(m("build.rs"), "demo::build");
    }

    #[test]
    fn walk_names_files_crates_and_modules_and_skips_build_output() {
        let dir = fixture::crate_dir();
        let walked = walk(dir.path(), &[".".to_owned()]).unwrap();
        let labels: Vec<&str> = walked.files.iter().map(|f| f.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "demo/src/bad.rs",
                "demo/src/lib.rs",
                "demo/src/util/deep.rs",
                "demo/src/util/mod.rs",
                "demo/tests/smoke.rs",
                "loose.rs",
            ]
        );
        let deep = &walked.files[2];
        assert_eq!(deep.krate, "demo_crate");
        assert_eq!(deep.package, "demo-crate");
        assert_eq!(deep.crate_dir, "demo");
        assert_eq!(deep.module, "demo_crate::util::deep");
        assert_eq!(deep.under_root, "demo/src/util/deep.rs");
        assert_eq!(deep.raw, "./demo/src/util/deep.rs");
        // No Cargo.toml above: the given directory names the crate.
        let loose = &walked.files[5];
        assert_eq!(loose.crate_dir, ".");
        assert_eq!(loose.module, format!("{}::loose", loose.krate));

        // A subdirectory, a file and a Cargo.toml as given paths.
        let walked = walk(
            dir.path(),
            &[
                "demo/src/util".to_owned(),
                "demo/src/lib.rs".to_owned(),
                "demo/Cargo.toml".to_owned(),
            ],
        )
        .unwrap();
        let rows: Vec<(&str, &str, &str)> = walked
            .files
            .iter()
            .map(|f| (f.label.as_str(), f.under_root.as_str(), f.raw.as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                ("demo/src/util/deep.rs", "deep.rs", "demo/src/util/deep.rs"),
                ("demo/src/util/mod.rs", "mod.rs", "demo/src/util/mod.rs"),
                ("demo/src/lib.rs", "lib.rs", "demo/src/lib.rs"),
                ("demo/src/bad.rs", "src/bad.rs", "demo/src/bad.rs"),
                (
                    "demo/tests/smoke.rs",
                    "tests/smoke.rs",
                    "demo/tests/smoke.rs"
                ),
            ]
        );
    }

    #[test]
    fn a_missing_path_is_an_error_naming_it() {
        let dir = fixture::crate_dir();
        let err = walk(dir.path(), &["nope".to_owned()]).unwrap_err();
        assert!(err.0.contains("nope does not exist"), "{}", err.0);
        assert!(
            err.0.contains("relative to the working directory"),
            "{}",
            err.0
        );
    }
}
