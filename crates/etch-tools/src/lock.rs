//! Per-path mutation locks (E-TOOL-24, P-TOOL-28).
//!
//! The scheduler already keeps conflicting calls of one batch in order; this
//! lock is the second line of defence for everything else that mutates files
//! (a later batch while a cancelled call is still winding down, direct use of
//! the tools, future plugins): two mutations of one real path never
//! interleave, so no update is lost.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use etch_tool::{Access, ToolContext, ToolError, ToolOutput};
use serde_json::Value;
use tokio::sync::OwnedMutexGuard;

use crate::paths;
use crate::protect::Protected;

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

    /// The process-wide table: every registry built in this process (a
    /// run's, a subagent's, a plugin host's) takes the same locks, so two
    /// of them never interleave mutations of one file.
    pub fn shared() -> Self {
        static SHARED: OnceLock<MutationLocks> = OnceLock::new();
        SHARED.get_or_init(Self::new).clone()
    }

    /// Whether two handles lock through one table.
    pub fn same_table(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.table, &other.table)
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

/// The access of a call that mutates the file named by its `path` argument:
/// a write of its real path, so two spellings of one file still conflict.
pub fn path_write_access(args: &Value, cwd: &Path) -> Access {
    let raw = args.get("path").and_then(Value::as_str).unwrap_or_default();
    let path = paths::resolve(cwd, raw);
    Access::Write(vec![paths::real_path(&path).unwrap_or(path)])
}

/// Runs the blocking mutation `work` of the file `raw` under its per-path
/// lock, after checking the mutation policy and, once the lock is held, that
/// the call was not cancelled meanwhile; a cancellation while it waits for
/// the lock ends the call at once. `tool` names the tool in messages;
/// `protected` is the home state it must not touch.
pub async fn locked_mutation<F, T>(
    locks: &MutationLocks,
    ctx: &ToolContext,
    raw: &str,
    tool: &str,
    protected: &Protected,
    work: F,
) -> Result<ToolOutput, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Into<ToolOutput> + Send + 'static,
{
    let target = paths::mutation_target(&ctx.cwd, raw, protected)?;
    let _guard = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => return Err(crate::cancel::aborted()),
        guard = locks.lock(&target) => guard,
    };
    if ctx.cancel.is_cancelled() {
        return Err(crate::cancel::aborted());
    }
    // Once started, the mutation is waited for even when the run is
    // cancelled: it is short (one file read, one write and a rename), and
    // answering "aborted" for a change that then lands would mislead.
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::new(format!("{tool} failed: {e}")))?
        .map(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Every `shared()` handle is one process-wide table; `new()` is not.
    #[test]
    fn shared_locks_are_one_table() {
        assert!(MutationLocks::shared().same_table(&MutationLocks::shared()));
        assert!(!MutationLocks::shared().same_table(&MutationLocks::new()));
    }

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
