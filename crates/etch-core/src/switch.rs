//! Switching the model client in the middle of a run (Pi's `set_model`
//! and `set_thinking_level` during a run apply to the next request): a
//! front end offers a new client with the log records that say so
//! (`model.change`, `thinking_level.change`); the loop takes it before
//! its next request, appends the records first, and asks with it from
//! then on. An offer no request took stays for whoever owns the session
//! once the run has ended.
//!
//! This module must not know how a client is chosen.

use std::sync::{Arc, Mutex, PoisonError};

use etch_model::ModelClient;
use serde_json::Value;

/// A client to ask with from the next request on.
pub struct Switch {
    /// The client.
    pub client: Arc<dyn ModelClient>,
    /// The records to log before the request (event type, data).
    pub records: Vec<(&'static str, Value)>,
}

/// Where a switch waits for the loop.
#[derive(Default)]
pub struct ClientSwitch {
    /// The switch offered and not taken yet; a later offer replaces it.
    next: Mutex<Option<Switch>>,
}

impl ClientSwitch {
    /// An empty switch point.
    pub fn new() -> Self {
        Self::default()
    }

    /// Offers `switch` for the next request (replacing one not taken).
    pub fn offer(&self, switch: Switch) {
        *self.next.lock().unwrap_or_else(PoisonError::into_inner) = Some(switch);
    }

    /// The switch offered, if any, taken.
    pub fn take(&self) -> Option<Switch> {
        self.next
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}
