//! Per-path mutation locks (E-TOOL-24, P-TOOL-28).
//!
//! The scheduler already keeps conflicting calls of one batch in order; this
//! lock is the second line of defence for everything else that mutates files
//! (a later batch while a cancelled call is still winding down, direct use of
//! the tools, future plugins): two mutations of one real path never
//! interleave, so no update is lost.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::OwnedMutexGuard;

/// Shared table of one async mutex per real path.
#[derive(Debug, Default, Clone)]
pub struct MutationLocks {
    /// Locks by real path; entries are few and small, so they are kept.
    table: Arc<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>>,
}

impl MutationLocks {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits for exclusive access to `path`; released when the guard drops.
    pub async fn lock(&self, path: &Path) -> OwnedMutexGuard<()> {
        let mutex = {
            let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(table.entry(path.to_path_buf()).or_default())
        };
        mutex.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A second locker of the same path waits; another path does not.
    #[tokio::test]
    async fn same_path_waits_other_path_does_not() {
        let locks = MutationLocks::new();
        let guard = locks.lock(Path::new("/a")).await;
        let other =
            tokio::time::timeout(Duration::from_millis(50), locks.lock(Path::new("/b"))).await;
        assert!(other.is_ok());
        let same =
            tokio::time::timeout(Duration::from_millis(50), locks.lock(Path::new("/a"))).await;
        assert!(same.is_err());
        drop(guard);
        let again =
            tokio::time::timeout(Duration::from_millis(50), locks.lock(Path::new("/a"))).await;
        assert!(again.is_ok());
    }
}
