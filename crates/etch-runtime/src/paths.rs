//! Where a project's state lives: the project root and the session directory
//! (G2, C4).
//!
//! The project root is the nearest ancestor of the working directory that
//! holds an `.etch/` directory, other than the user's `~/.etch`; else the
//! repository root (the nearest ancestor with a `.git`); else the working
//! directory itself. Sessions default to `<root>/.etch/sessions`, so running
//! etch from a subdirectory finds the project's sessions instead of
//! starting a second store in that subdirectory.

use std::path::{Path, PathBuf};

/// Finds the project root for `cwd`.
pub fn project_root(cwd: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let home_etch = home.as_ref().map(|h| h.join(".etch"));
    cwd.ancestors()
        .find(|dir| {
            let candidate = dir.join(".etch");
            candidate.is_dir() && home_etch.as_deref() != Some(candidate.as_path())
        })
        // `.git` is a directory in a clone and a file in a worktree. The
        // walk stops below HOME: a home directory kept in git (dotfiles)
        // must not make every loose directory share one store.
        .or_else(|| {
            cwd.ancestors()
                .take_while(|dir| home.as_deref() != Some(*dir))
                .find(|dir| dir.join(".git").exists())
        })
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The session directory: `--session-dir` against the cwd, else the
/// configured `[session] dir` (default `.etch/sessions`) against the project
/// root (G2, E-CFG-21).
pub fn session_dir(cwd: &Path, flag: Option<&Path>, configured: &str) -> PathBuf {
    match flag {
        Some(dir) if dir.is_absolute() => dir.to_path_buf(),
        Some(dir) => cwd.join(dir),
        None => project_root(cwd).join(configured),
    }
}

/// Makes sure the project's `.etch/`, when it exists, has etch's
/// `.gitignore` (a run or a tool may have created `.etch/tmp` there even
/// when sessions live elsewhere); a failure is only worth a warning, which
/// the caller shows.
pub fn keep_state_out_of_git(cwd: &Path) -> Result<(), etch_session::SessionError> {
    let etch = project_root(cwd).join(".etch");
    if etch.is_dir() {
        etch_session::gitignore::ensure(&etch)?;
    }
    Ok(())
}

/// The temp directory of a session: `<project root>/.etch/tmp/<session-id>/`.
pub fn session_temp_dir(cwd: &Path, session_id: &str) -> PathBuf {
    project_root(cwd).join(".etch").join("tmp").join(session_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subdirectory of a project with `.etch/` resolves to the project's
    /// sessions; a flag resolves against the cwd.
    #[test]
    fn nearest_etch_directory_is_the_root() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".etch")).unwrap();
        let sub = root.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(project_root(&sub), root.path());
        assert_eq!(
            session_dir(&sub, None, ".etch/sessions"),
            root.path().join(".etch/sessions")
        );
        assert_eq!(
            session_dir(&sub, Some(Path::new("s")), ".etch/sessions"),
            sub.join("s")
        );
        assert_eq!(session_dir(&sub, None, "/abs/s"), Path::new("/abs/s"));
        let bare = tempfile::tempdir().unwrap();
        assert_eq!(project_root(bare.path()), bare.path());
    }

    /// With no `.etch/` above, a subdirectory of a repository anchors at
    /// the repository root (a `.git` directory, or a worktree's `.git`
    /// file); an `.etch/` nearer than the `.git` wins.
    #[test]
    fn repository_root_without_an_etch_directory() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repo.path().join(".git")).unwrap();
        let deep = repo.path().join("src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(project_root(&deep), repo.path());
        let worktree = tempfile::tempdir().unwrap();
        std::fs::write(worktree.path().join(".git"), "gitdir: /elsewhere\n").unwrap();
        std::fs::create_dir_all(worktree.path().join("a")).unwrap();
        assert_eq!(project_root(&worktree.path().join("a")), worktree.path());
        std::fs::create_dir_all(repo.path().join("src/.etch")).unwrap();
        assert_eq!(project_root(&deep), repo.path().join("src"));
    }
}
