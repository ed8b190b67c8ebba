//! Path resolution and the mutation policy (C18, E-TOOL-08).
//!
//! Relative paths resolve against the working directory; `~` expands to the
//! home directory. Read-only tools accept any path but etch's credential
//! store (see [`crate::protect`]). `write` and `edit` refuse targets under
//! `~/.etch`, targets that resolve, after following symlinks, outside the
//! working directory, and targets inside the internal `.git` or `.etch`
//! directories.

use std::path::{Component, Path, PathBuf};

use etch_tool::ToolError;

/// Internal directories that mutations never touch.
const INTERNAL_DIRS: [&str; 2] = [".git", ".etch"];

/// Resolves a tool's path argument against `cwd`, lexically (no symlinks
/// followed): `~` and `~/x` expand to the home directory, `.` and `..` are
/// folded.
pub fn resolve(cwd: &Path, raw: &str) -> PathBuf {
    let expanded = if raw == "~" || raw.starts_with("~/") {
        match std::env::var_os("HOME") {
            Some(home) => {
                PathBuf::from(home).join(raw.trim_start_matches('~').trim_start_matches('/'))
            }
            None => PathBuf::from(raw),
        }
    } else {
        PathBuf::from(raw)
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    normalize(&joined)
}

/// Folds `.` and `..` components without touching the filesystem.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Follows symlinks as far as the path exists, then appends the rest, so a
/// file that does not exist yet still resolves through symlinked parents.
pub fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(real) => {
                let mut out = real;
                for part in rest.iter().rev() {
                    out.push(part);
                }
                return Ok(normalize(&out));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                let Some(name) = existing.file_name().map(ToOwned::to_owned) else {
                    return Err(err);
                };
                rest.push(name);
                if !existing.pop() {
                    return Err(err);
                }
            }
            Err(err) => return Err(err),
        }
    }
}

/// Resolves the target of `write` or `edit` and checks the mutation policy,
/// `~/.etch` (as `protected` knows it) first, whatever the working
/// directory. Returns the real path to operate on.
pub fn mutation_target(
    cwd: &Path,
    raw: &str,
    protected: &crate::protect::Protected,
) -> Result<PathBuf, ToolError> {
    if raw.trim().is_empty() {
        return Err(ToolError::new("path must not be empty"));
    }
    let lexical = resolve(cwd, raw);
    protected.check_write(raw, &lexical)?;
    let real =
        real_path(&lexical).map_err(|e| ToolError::new(format!("cannot resolve {raw}: {e}")))?;
    protected.check_write(raw, &real)?;
    let root = cwd.canonicalize().map_err(|e| {
        ToolError::new(format!(
            "cannot resolve the working directory {}: {e}",
            cwd.display()
        ))
    })?;
    let Ok(inside) = real.strip_prefix(&root) else {
        return Err(ToolError::new(format!(
            "refusing to modify {raw}: it resolves to {}, outside the working directory {}; write and edit only change files inside it",
            real.display(),
            root.display()
        )));
    };
    if let Some(dir) = inside
        .components()
        .filter_map(|c| c.as_os_str().to_str())
        .find(|c| INTERNAL_DIRS.contains(c))
    {
        return Err(ToolError::new(format!(
            "refusing to modify {raw}: it is inside the internal {dir} directory"
        )));
    }
    if inside.as_os_str().is_empty() {
        return Err(ToolError::new(format!(
            "refusing to modify {raw}: it is the working directory itself"
        )));
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lexical resolution folds dots and keeps absolute paths.
    #[test]
    fn resolves_relative_and_absolute() {
        let cwd = Path::new("/w/p");
        assert_eq!(resolve(cwd, "a/./b/../c"), PathBuf::from("/w/p/a/c"));
        assert_eq!(resolve(cwd, "/etc/x"), PathBuf::from("/etc/x"));
        assert_eq!(resolve(cwd, "../q"), PathBuf::from("/w/q"));
    }

    /// Checks the mutation policy with no home to protect.
    fn mutation_target(cwd: &Path, raw: &str) -> Result<PathBuf, ToolError> {
        super::mutation_target(cwd, raw, &crate::protect::Protected::new(None))
    }

    /// E-TOOL-22: `~/.etch` is refused whatever the working directory: an
    /// ancestor of it, `~/.etch` itself, or elsewhere with an absolute path.
    #[test]
    fn home_state_is_refused_from_anywhere() {
        let home = tempfile::tempdir().unwrap();
        let state = home.path().join(".etch");
        std::fs::create_dir_all(state.join("auth")).unwrap();
        let protected = crate::protect::Protected::new(Some(home.path().to_path_buf()));
        let trust = state.join("trust.json");
        let trust = trust.to_str().unwrap();
        for cwd in [home.path().parent().unwrap(), home.path(), &state] {
            let err = super::mutation_target(cwd, trust, &protected)
                .unwrap_err()
                .0;
            assert!(err.contains("etch's own state"), "{cwd:?}: {err}");
        }
        let err = super::mutation_target(&state.join("auth"), "openai.json", &protected)
            .unwrap_err()
            .0;
        assert!(err.contains("etch's own state"), "{err}");
        let err = super::mutation_target(&state, "trust.json", &protected)
            .unwrap_err()
            .0;
        assert!(
            err.starts_with("refusing to modify trust.json: it is inside "),
            "{err}"
        );
        let project = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&state, project.path().join("st")).unwrap();
        let err = super::mutation_target(project.path(), "st/trust.json", &protected)
            .unwrap_err()
            .0;
        assert!(err.contains("etch's own state"), "{err}");
        assert!(super::mutation_target(project.path(), "notes.txt", &protected).is_ok());
    }

    /// C18: outside paths, symlinks pointing outside, and internal
    /// directories are refused; new files inside are fine.
    #[test]
    fn mutation_policy() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), cwd.join("link")).unwrap();
        assert!(
            mutation_target(cwd, "new/file.txt")
                .unwrap()
                .ends_with("new/file.txt")
        );
        let err = mutation_target(cwd, "../x").unwrap_err().0;
        assert!(err.contains("outside the working directory"), "{err}");
        let err = mutation_target(cwd, "link/f").unwrap_err().0;
        assert!(err.contains("outside the working directory"), "{err}");
        let err = mutation_target(cwd, ".git/config").unwrap_err().0;
        assert!(err.contains("internal .git directory"), "{err}");
        let err = mutation_target(cwd, "sub/.etch/x").unwrap_err().0;
        assert!(err.contains("internal .etch directory"), "{err}");
        assert!(mutation_target(cwd, "").is_err());
        assert!(mutation_target(cwd, ".").is_err());
    }
}
