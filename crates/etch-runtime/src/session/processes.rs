//! A session's background processes as the runtime sees them: the inbox
//! that hands their output to each run's requests (with `[process]
//! wake_on_output` deciding whether news keeps a finishing run going),
//! the `process.exited` records of ends nobody logged yet, and on resume
//! the processes of an earlier life, listed as lost.
//!
//! This module must not know how processes run (`etch-process` does) or
//! how a front end shows them.

use std::collections::HashSet;
use std::sync::Arc;

use etch_core::{Delivery, Inbox};
use etch_process::{Processes, State, Table, signal_name};
use etch_session::{LoadedSession, ProcessExitedData, ProcessStartedData, types};
use serde_json::Value;

/// The `process.exited` data of `id` ending in `state`.
pub(crate) fn exited_data(id: &str, state: State) -> ProcessExitedData {
    let (code, signal) = match state {
        State::Exited(code) => (Some(code), None),
        State::Killed(signal) => (None, Some(signal_name(signal))),
        State::Running | State::Lost => (None, None),
    };
    ProcessExitedData {
        process_id: id.to_owned(),
        state: state.word().to_owned(),
        code,
        signal,
    }
}

/// The `process.exited` records of `table`'s ends not logged yet.
pub(crate) fn unlogged_ends(table: &Table) -> Vec<(&'static str, Value)> {
    table
        .take_unlogged_ends()
        .into_iter()
        .filter_map(|(id, state)| {
            serde_json::to_value(exited_data(&id, state))
                .ok()
                .map(|data| (types::PROCESS_EXITED, data))
        })
        .collect()
}

/// The inbox of one run.
pub(crate) struct ProcessInbox {
    /// Every session's processes.
    processes: Arc<Processes>,
    /// This session.
    session: String,
    /// The processes known when the run started (the rest it started).
    before: HashSet<String>,
    /// `[process] wake_on_output`.
    wake: bool,
}

impl ProcessInbox {
    /// The inbox of a run of `session` starting now.
    pub(crate) fn new(processes: Arc<Processes>, session: &str, wake: bool) -> Self {
        let before = processes
            .get(session)
            .map(|table| table.list().into_iter().map(|row| row.id).collect())
            .unwrap_or_default();
        Self {
            processes,
            session: session.to_owned(),
            before,
            wake,
        }
    }

    /// The session's table, if it has one yet.
    fn table(&self) -> Option<Arc<Table>> {
        self.processes.get(&self.session)
    }
}

impl Inbox for ProcessInbox {
    fn take(&self) -> Delivery {
        let Some(table) = self.table() else {
            return Delivery::default();
        };
        let records = unlogged_ends(&table);
        let update = table.take_update();
        Delivery {
            text: update.as_ref().map(|u| u.text.clone()),
            ids: update.map(|u| u.ids).unwrap_or_default(),
            records,
        }
    }

    fn wakes(&self) -> bool {
        if !self.wake {
            return false;
        }
        let Some(table) = self.table() else {
            return false;
        };
        let started: Vec<String> = table
            .running()
            .into_iter()
            .filter(|id| !self.before.contains(id))
            .collect();
        !started.is_empty() && table.has_news(&started)
    }
}

/// Lists the processes `loaded` started and never saw end as lost in
/// `table` (they belonged to an earlier life of the session, which
/// killed them when it ended), and numbers new ones after all of them.
pub(crate) fn mark_lost(loaded: &LoadedSession, table: &Table) {
    let mut started: Vec<ProcessStartedData> = Vec::new();
    let mut ended: HashSet<String> = HashSet::new();
    for event in &loaded.events {
        match event.kind.as_str() {
            types::PROCESS_STARTED => started.extend(event.parse_data().ok()),
            types::PROCESS_EXITED => {
                if let Ok(data) = event.parse_data::<ProcessExitedData>() {
                    ended.insert(data.process_id);
                }
            }
            _ => {}
        }
    }
    for start in started {
        // Ids stay unique in the log: new processes come after these.
        table.skip_past(&start.process_id);
        if !ended.contains(&start.process_id) {
            table.add_lost(&start.process_id, start.pid, &start.command);
        }
    }
}
