//! The children running now, by the parent's `task` call id, so a front
//! end can list them and stop one without stopping the others (the
//! chat's list of children, RPC's `abort_subagent`). Shared between a
//! session's `task` tool and whoever holds the session's context.
//!
//! This module must not know how children run.

use std::collections::BTreeMap;
use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

/// Running children.
#[derive(Debug, Default)]
pub struct Children(Mutex<BTreeMap<String, (String, CancellationToken)>>);

impl Children {
    /// Records the child of call `call_id`, shown as `label`, stopped by
    /// `stop`; it is forgotten when the returned guard drops.
    pub(crate) fn enter<'a>(
        &'a self,
        call_id: &str,
        label: String,
        stop: CancellationToken,
    ) -> Entered<'a> {
        if let Ok(mut map) = self.0.lock() {
            map.insert(call_id.to_owned(), (label, stop));
        }
        Entered {
            children: self,
            call_id: call_id.to_owned(),
        }
    }

    /// The running children: call id and label, by call id.
    pub fn list(&self) -> Vec<(String, String)> {
        self.0
            .lock()
            .map(|map| {
                map.iter()
                    .map(|(id, (label, _))| (id.clone(), label.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Stops the child of call `call_id`; `false` when none runs.
    pub fn cancel(&self, call_id: &str) -> bool {
        self.0
            .lock()
            .ok()
            .and_then(|map| map.get(call_id).map(|(_, stop)| stop.clone()))
            .is_some_and(|stop| {
                stop.cancel();
                true
            })
    }
}

/// A child recorded in [`Children`] while it runs.
pub(crate) struct Entered<'a> {
    /// Where it is recorded.
    children: &'a Children,
    /// Its call.
    call_id: String,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        if let Ok(mut map) = self.children.0.lock() {
            map.remove(&self.call_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entered_children_can_be_listed_and_stopped_one_by_one() {
        let children = Children::default();
        let (a, b) = (CancellationToken::new(), CancellationToken::new());
        let first = children.enter("c1", "Ada / explore".into(), a.clone());
        let second = children.enter("c2", "Curie / review".into(), b.clone());
        assert_eq!(children.list().len(), 2);
        assert!(children.cancel("c2"));
        assert!(b.is_cancelled() && !a.is_cancelled());
        assert!(!children.cancel("c9"));
        drop(second);
        drop(first);
        assert!(children.list().is_empty());
        assert!(!children.cancel("c1"));
    }
}
