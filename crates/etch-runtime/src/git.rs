//! The branch a directory's repository has checked out, for front ends'
//! status rows (the chat's footer): read from `HEAD` in the nearest `.git`
//! (a directory in a clone; a `gitdir:` file in a worktree or submodule),
//! without running git, so it costs a file read and never a process.
//!
//! `HEAD` comes from the repository, which may be hostile: only a plain
//! branch name (printable, no spaces, at most [`MAX_NAME`] bytes) or a
//! commit id is taken; anything else reads as no branch. This module must
//! not know who shows the name.

use std::path::{Path, PathBuf};

/// The longest branch name shown, in bytes.
const MAX_NAME: usize = 100;

/// The largest `HEAD` or `.git` file read: both are one short line.
const MAX_FILE: u64 = 4096;

/// The branch checked out in the repository holding `dir`; a detached
/// `HEAD` reads as the commit's first 7 hex digits. `None` outside a
/// repository or when `HEAD` is not understood.
pub fn branch(dir: &Path) -> Option<String> {
    let git = dir
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|g| g.exists())?;
    let head = read_small(&git_dir(&git)?.join("HEAD"))?;
    let head = head.trim_end();
    if let Some(reference) = head.strip_prefix("ref: ") {
        let name = reference.strip_prefix("refs/heads/").unwrap_or(reference);
        let fit = !name.is_empty()
            && name.len() <= MAX_NAME
            && !name
                .chars()
                .any(|c| c.is_control() || c.is_whitespace() || etch_sanitize::is_bidi_control(c));
        return fit.then(|| name.to_owned());
    }
    let hex = head.len() >= 7 && head.chars().all(|c| c.is_ascii_hexdigit());
    hex.then(|| head[..7].to_owned())
}

/// The git directory a `.git` entry stands for.
fn git_dir(git: &Path) -> Option<PathBuf> {
    if git.is_dir() {
        return Some(git.to_path_buf());
    }
    let text = read_small(git)?;
    let target = text.trim_end().strip_prefix("gitdir: ")?;
    let target = Path::new(target);
    // A relative `gitdir:` is relative to the `.git` file's directory.
    Some(match git.parent() {
        Some(parent) if target.is_relative() => parent.join(target),
        _ => target.to_path_buf(),
    })
}

/// The text of a small file; `None` when it is missing, large or not
/// UTF-8.
fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn branches_detached_heads_and_worktrees() {
        let repo = tempfile::tempdir().unwrap();
        let git = repo.path().join(".git");
        std::fs::create_dir_all(&git).unwrap();
        let deep = repo.path().join("src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/feature/parser\n").unwrap();
        assert_eq!(branch(&deep).as_deref(), Some("feature/parser"));
        std::fs::write(
            git.join("HEAD"),
            "0123456789abcdef0123456789abcdef01234567\n",
        )
        .unwrap();
        assert_eq!(branch(&deep).as_deref(), Some("0123456"));
        // A worktree's `.git` file points at its own git directory.
        let worktree = tempfile::tempdir().unwrap();
        let own = repo.path().join(".git/worktrees/wt");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("HEAD"), "ref: refs/heads/wt-branch\n").unwrap();
        std::fs::write(
            worktree.path().join(".git"),
            format!("gitdir: {}\n", own.display()),
        )
        .unwrap();
        assert_eq!(branch(worktree.path()).as_deref(), Some("wt-branch"));
        let bare = tempfile::tempdir().unwrap();
        assert_eq!(branch(bare.path()), None);
    }

    /// A hostile `HEAD` never reaches a status row.
    #[test]
    fn odd_heads_read_as_no_branch() {
        let repo = tempfile::tempdir().unwrap();
        let git = repo.path().join(".git");
        std::fs::create_dir_all(&git).unwrap();
        for head in [
            "ref: refs/heads/evil\u{1b}[2J\n",
            "ref: refs/heads/with space\n",
            "ref: refs/heads/spoof\u{202e}\n",
            "ref: \n",
            "garbage\n",
        ] {
            std::fs::write(git.join("HEAD"), head).unwrap();
            assert_eq!(branch(repo.path()), None, "{head:?}");
        }
        let long = format!("ref: refs/heads/{}\n", "b".repeat(MAX_NAME + 1));
        std::fs::write(git.join("HEAD"), long).unwrap();
        assert_eq!(branch(repo.path()), None);
    }
}
