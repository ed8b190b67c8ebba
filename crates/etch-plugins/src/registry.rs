//! The process groups of every running plugin in this process, so an
//! exit that skips destructors (a second Ctrl-C) can still take them
//! along: plugins run in their own process groups and never see the
//! terminal's SIGINT.

use std::sync::Mutex;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Live plugin process groups.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Records a live group.
pub(crate) fn add(pgid: Pid) {
    if let Ok(mut groups) = GROUPS.lock() {
        groups.push(pgid.as_raw());
    }
}

/// Forgets a group that was killed.
pub(crate) fn remove(pgid: Pid) {
    if let Ok(mut groups) = GROUPS.lock() {
        groups.retain(|g| *g != pgid.as_raw());
    }
}

/// Kills every live plugin process group now: for exits that do not run
/// destructors.
pub fn kill_all() {
    if let Ok(groups) = GROUPS.lock() {
        for pgid in groups.iter() {
            let _ = killpg(Pid::from_raw(*pgid), Signal::SIGKILL);
        }
    }
}
