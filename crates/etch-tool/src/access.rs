//! Per-call access classes and the conflict rule of C19.
//!
//! Two calls of one assistant message conflict when either is a barrier, or
//! when both touch overlapping paths and at least one writes. Paths overlap
//! when they are equal or one contains the other: a read-only call over a
//! directory conflicts with a write inside it (decisions.md, further rulings).

use std::path::PathBuf;

/// What one concrete tool call touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Reads these resolved paths (files or directory roots).
    Read(Vec<PathBuf>),
    /// Writes these resolved paths.
    Write(Vec<PathBuf>),
    /// May touch anything (bash, unknown or serial plugin tools): runs alone
    /// relative to every other call of its batch.
    Barrier,
}

impl Access {
    /// Whether calls with these accesses must run in source order.
    pub fn conflicts_with(&self, other: &Access) -> bool {
        match (self, other) {
            (Access::Barrier, _) | (_, Access::Barrier) => true,
            (Access::Read(_), Access::Read(_)) => false,
            (Access::Read(a) | Access::Write(a), Access::Write(b))
            | (Access::Write(a), Access::Read(b)) => a
                .iter()
                .any(|x| b.iter().any(|y| x.starts_with(y) || y.starts_with(x))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a path list.
    fn p(paths: &[&str]) -> Vec<PathBuf> {
        paths.iter().map(PathBuf::from).collect()
    }

    /// C19: reads never conflict, writes conflict on overlap, barriers with
    /// everything, and a directory read conflicts with a write inside it.
    #[test]
    fn conflict_rule() {
        let read_a = Access::Read(p(&["/w/a"]));
        let write_a = Access::Write(p(&["/w/a"]));
        let write_b = Access::Write(p(&["/w/b"]));
        let read_dir = Access::Read(p(&["/w"]));
        assert!(!read_a.conflicts_with(&read_dir));
        assert!(read_a.conflicts_with(&write_a));
        assert!(write_a.conflicts_with(&read_a));
        assert!(!write_a.conflicts_with(&write_b));
        assert!(read_dir.conflicts_with(&write_b));
        assert!(Access::Barrier.conflicts_with(&read_a));
        assert!(read_a.conflicts_with(&Access::Barrier));
        assert!(!Access::Read(p(&["/w/ab"])).conflicts_with(&write_a));
    }
}
