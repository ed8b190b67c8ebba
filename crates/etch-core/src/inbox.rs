//! What reaches the model by itself between requests: the output and
//! ends of the session's background processes. Before each request the
//! loop asks the run's [`Inbox`]; what it hands over is logged (its
//! records, then a `process.update` event holding the text) and joins
//! the history as a user message, so that resuming the session, or
//! `etch show`, gives the model the same context.
//!
//! This module must not know what produces the text.

use serde_json::Value;

/// One delivery.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Delivery {
    /// The text for the model, if any.
    pub text: Option<String>,
    /// The processes it is about.
    pub ids: Vec<String>,
    /// Records to log before it (event type, data): the ends of
    /// processes not logged yet.
    pub records: Vec<(&'static str, Value)>,
}

impl Delivery {
    /// Whether there is nothing in it.
    pub fn is_empty(&self) -> bool {
        self.text.is_none() && self.records.is_empty()
    }
}

/// What the loop asks before each request.
pub trait Inbox: Send + Sync {
    /// What arrived since the last look; each piece is handed over once.
    fn take(&self) -> Delivery;

    /// Whether a run about to end should go on for what has arrived
    /// (`[process] wake_on_output` and new output of a process the run
    /// started).
    fn wakes(&self) -> bool;
}
