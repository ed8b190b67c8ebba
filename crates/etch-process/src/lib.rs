//! Background processes of a session (`bash` with `background: true`):
//! each runs under a guard (`etch __proc-guard`, see [`guard`]) in a
//! process group of its own, so that it can be stopped whole and dies
//! with etch; its output is read as it comes, kept (the last MiB in
//! memory, the start in a spill file) and pushed to the model before
//! each request as `<process-update>` blocks ([`Table::take_update`]).
//!
//! - `guard`: the helper's side, run before any thread starts.
//! - `ring`: the kept tail of an output, addressed by offset.
//! - `table`: one session's processes and their operations.
//! - `error`: what the model is told when an operation fails.
//!
//! [`Processes`] holds the table of every session of a context (`etch
//! serve` serves several at once from one). This crate must not know
//! the loop, the log, the protocol or the sandbox: it is given the
//! program to run (already wrapped by the sandbox when there is one).

mod error;
pub mod guard;
mod ring;
mod table;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

pub use error::ProcessError;
pub use guard::GUARD;
pub use table::{
    Limits, Listener, Notice, READ_MAX, Read, Row, Start, State, Stop, Table, Update, signal_name,
};

/// The tables of every session of this etch process, by session id:
/// one map for all contexts, so that a context built again (the chat's
/// `/reload`) finds the processes its session already runs.
type Tables = Arc<Mutex<HashMap<String, Arc<Table>>>>;

/// The one map of tables of this etch process.
fn all_tables() -> Tables {
    static TABLES: std::sync::OnceLock<Tables> = std::sync::OnceLock::new();
    Arc::clone(TABLES.get_or_init(Tables::default))
}

/// The background processes of sessions, by session id, as a context
/// sees them (its executable and limits for the tables it makes).
pub struct Processes {
    /// The etch executable, which runs the guard.
    exe: PathBuf,
    /// The bounds of each session's processes.
    limits: Limits,
    /// The tables, by session id (shared by every context).
    tables: Tables,
}

impl std::fmt::Debug for Processes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processes")
            .field("exe", &self.exe)
            .field("limits", &self.limits)
            .field("sessions", &self.tables().len())
            .finish_non_exhaustive()
    }
}

impl Processes {
    /// The processes of sessions whose guard `exe` runs, under `limits`.
    pub fn new(exe: PathBuf, limits: Limits) -> Self {
        Self {
            exe,
            limits,
            tables: all_tables(),
        }
    }

    /// The tables, whatever a panic elsewhere left.
    fn tables(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Table>>> {
        self.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Session `session`'s table, made on first use with its spill files
    /// in `dir`.
    pub fn table(&self, session: &str, dir: &Path) -> Arc<Table> {
        Arc::clone(
            self.tables()
                .entry(session.to_owned())
                .or_insert_with(|| Table::new(self.exe.clone(), dir.to_path_buf(), self.limits)),
        )
    }

    /// Session `session`'s table, when it has one.
    pub fn get(&self, session: &str) -> Option<Arc<Table>> {
        self.tables().get(session).cloned()
    }

    /// Forgets session `session`'s table at once; its processes are
    /// killed (SIGKILL) when the last holder lets it go. For paths that
    /// cannot wait for [`Self::close`] (a task that was dropped).
    pub fn forget(&self, session: &str) {
        self.tables().remove(session);
    }

    /// Stops session `session`'s processes and forgets them: the session
    /// ended. Returns its table, whose ends the caller may still log.
    pub async fn close(&self, session: &str) -> Option<Arc<Table>> {
        let table = self.tables().remove(session)?;
        table.close().await;
        Some(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two registries (a context and the one built again by `/reload`)
    /// see the same table of a session; closing forgets it for both.
    #[tokio::test]
    async fn contexts_share_the_tables() {
        let dir = std::env::temp_dir();
        let first = Processes::new("etch".into(), Limits::default());
        let second = Processes::new("etch".into(), Limits::default());
        let session = "shared-tables-test-session";
        let table = first.table(session, &dir);
        assert!(second.get(session).is_some_and(|t| Arc::ptr_eq(&t, &table)));
        assert!(second.close(session).await.is_some());
        assert!(first.get(session).is_none());
    }
}
