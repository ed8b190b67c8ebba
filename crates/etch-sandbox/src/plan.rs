//! The Landlock rules a policy becomes. Landlock only allows: a rule on
//! a directory grants its rights to everything beneath it, and nothing
//! can take a right back below. So a denied path under a granted one
//! (`~/.ssh` under `/`) is kept out by granting the directories on the
//! way down to it only the right to list them, and every sibling on that
//! way its full rights: what the denied path holds can then be neither
//! read nor changed, though its names can still be listed.
//!
//! Symbolic links among the siblings get no rule (a rule follows the link
//! and would grant its target, which may be the denied path); what they
//! point to keeps the rights of its own place.
//!
//! This module must not know the Landlock API; it returns paths and
//! rights in its own terms, so that it can be tested on any kernel.

use std::path::{Path, PathBuf};

use crate::policy::{Mode, Policy};

/// What a rule grants beneath its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rights {
    /// Listing directories only.
    List,
    /// Reading and running files, listing directories.
    Read,
    /// Everything: reading, creating, changing, removing.
    Write,
}

/// One rule: `rights` beneath `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The file or directory.
    pub path: PathBuf,
    /// Whether it is a directory (only a directory takes the rights of
    /// what is beneath it); known from the walk, so applying the rule
    /// needs no second look.
    pub dir: bool,
    /// What it grants.
    pub rights: Rights,
}

/// Devices every command may write to, whatever the mode: discarding
/// output, terminals, shared memory for interpreters that need it.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// The rules for `policy` (not for [`Mode::Off`], which has none).
///
/// A denied path that does not exist needs no way around it: nothing
/// granted reaches it but through its parent, which the command may only
/// change where it may write anyway.
pub fn rules(policy: &Policy) -> Vec<Rule> {
    let denied: Vec<PathBuf> = policy
        .deny_read
        .iter()
        .filter(|p| p.symlink_metadata().is_ok())
        .cloned()
        .collect();
    let mut rules = Vec::new();
    let mut root = |path: &Path, rights: Rights| {
        grant(path, path.is_dir(), rights, &denied, &mut rules);
    };
    root(Path::new("/"), Rights::Read);
    if policy.mode == Mode::WorkspaceWrite {
        for writable in &policy.writable {
            root(writable, Rights::Write);
        }
    }
    for device in DEVICES {
        root(Path::new(device), Rights::Write);
    }
    rules
}

/// Adds the rules that give `rights` beneath `root` (a directory when
/// `dir`) except beneath the `denied` paths.
fn grant(root: &Path, dir: bool, rights: Rights, denied: &[PathBuf], rules: &mut Vec<Rule>) {
    if denied.iter().any(|d| root.starts_with(d)) {
        return;
    }
    let inside: Vec<&PathBuf> = denied
        .iter()
        .filter(|d| d.starts_with(root) && d.as_path() != root)
        .collect();
    if inside.is_empty() {
        rules.push(Rule {
            path: root.to_path_buf(),
            dir,
            rights,
        });
        return;
    }
    // On the way down to a denied path: list this directory, and grant
    // each child that is not (and does not hold) a denied path in full.
    rules.push(Rule {
        path: root.to_path_buf(),
        dir,
        rights: Rights::List,
    });
    let Ok(children) = std::fs::read_dir(root) else {
        return;
    };
    for child in children.flatten() {
        let path = child.path();
        let Ok(kind) = child.file_type() else {
            continue;
        };
        if kind.is_symlink() || inside.iter().any(|d| d.as_path() == path) {
            continue;
        }
        grant(&path, kind.is_dir(), rights, denied, rules);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A policy writing in `root/w`, denying `root/home/.ssh`.
    fn policy(root: &Path) -> Policy {
        Policy {
            mode: Mode::WorkspaceWrite,
            network: false,
            writable: vec![root.join("w")],
            deny_read: vec![root.join("home/.ssh")],
            protected: Vec::new(),
        }
    }

    /// The rights the rules give `path` itself (the last matching rule
    /// by path length wins here only for the test's clarity: Landlock
    /// takes the union of all rules above a path).
    fn granted(rules: &[Rule], path: &Path) -> Vec<Rights> {
        rules
            .iter()
            .filter(|r| path.starts_with(&r.path))
            .map(|r| r.rights)
            .collect()
    }

    /// A denied directory gets no rule above it but listing, its siblings
    /// get their rights, and a link to it is left out.
    #[test]
    fn a_denied_path_is_walked_around() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["w", "home/.ssh", "home/src"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("home/notes"), "n").unwrap();
        std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("home/keys")).unwrap();
        let mut rules = Vec::new();
        grant(
            root,
            true,
            Rights::Read,
            &policy(root).deny_read,
            &mut rules,
        );
        assert_eq!(
            granted(&rules, &root.join("home/.ssh/id")),
            [Rights::List, Rights::List]
        );
        assert_eq!(
            granted(&rules, &root.join("home/src/a")),
            [Rights::List, Rights::List, Rights::Read]
        );
        assert!(granted(&rules, &root.join("home/notes")).contains(&Rights::Read));
        assert!(!rules.iter().any(|r| r.path.ends_with("keys")));
        assert!(granted(&rules, &root.join("w/x")).contains(&Rights::Read));
    }

    /// A writable root with nothing denied inside is one rule; inside a
    /// denied path it is none; read-only mode writes only devices.
    #[test]
    fn writable_roots_and_modes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("w")).unwrap();
        std::fs::create_dir_all(root.join("home/.ssh")).unwrap();
        let p = policy(root);
        let rules = rules(&p);
        assert!(rules.contains(&Rule {
            path: root.join("w"),
            dir: true,
            rights: Rights::Write
        }));
        assert!(rules.contains(&Rule {
            path: "/dev/null".into(),
            dir: false,
            rights: Rights::Write
        }));
        let mut inside = Vec::new();
        grant(
            &root.join("home/.ssh/x"),
            false,
            Rights::Write,
            &p.deny_read,
            &mut inside,
        );
        assert!(inside.is_empty());
        let ro = super::rules(&Policy {
            mode: Mode::ReadOnly,
            ..p
        });
        assert!(
            !ro.iter()
                .any(|r| r.rights == Rights::Write && r.path == root.join("w"))
        );
    }
}
