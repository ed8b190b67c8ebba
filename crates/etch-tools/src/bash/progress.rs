//! Progress of a running `bash` command (G11): the recent output of both
//! streams in arrival order, sent to the call's progress sink at most every
//! [`PROGRESS_INTERVAL`] and only when something new arrived.
//!
//! It must not know where the output comes from, how it is kept for the
//! result, nor how progress is displayed.

use std::time::Duration;

use etch_tool::ProgressSink;
use tokio::time::{Interval, MissedTickBehavior};

use super::capture::skip_partial_char;

/// How often progress may be reported while the command runs.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Most bytes of recent output a progress update carries.
const PROGRESS_MAX_BYTES: usize = 4096;

/// Recent output and the throttle deciding when to report it.
pub(super) struct Progress {
    /// Recent output of both streams in arrival order, for progress.
    recent: Vec<u8>,
    /// Whether `recent` lost its oldest bytes (so it may start mid-character).
    recent_trimmed: bool,
    /// Whether output arrived since the last progress update.
    changed: bool,
    /// Where progress goes.
    sink: ProgressSink,
    /// Throttles progress updates.
    ticker: Interval,
}

impl Progress {
    /// Starts throttled reporting to `sink`; must run inside the runtime.
    pub(super) fn new(sink: ProgressSink) -> Self {
        let mut ticker = tokio::time::interval(PROGRESS_INTERVAL);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self {
            recent: Vec::new(),
            recent_trimmed: false,
            changed: false,
            sink,
            ticker,
        }
    }

    /// Records a chunk of output from either stream.
    pub(super) fn record(&mut self, chunk: &[u8]) {
        self.recent.extend_from_slice(chunk);
        if self.recent.len() > 2 * PROGRESS_MAX_BYTES {
            let excess = self.recent.len() - PROGRESS_MAX_BYTES;
            self.recent.drain(..excess);
            self.recent_trimmed = true;
        }
        self.changed = true;
    }

    /// Completes when the next update may be sent.
    pub(super) async fn tick(&mut self) {
        self.ticker.tick().await;
    }

    /// Sends the recent output as progress if anything arrived since the last
    /// update.
    pub(super) fn report(&mut self) {
        if !self.changed {
            return;
        }
        self.changed = false;
        let start = self.recent.len().saturating_sub(PROGRESS_MAX_BYTES);
        let bytes = skip_partial_char(&self.recent[start..], start > 0 || self.recent_trimmed);
        self.sink
            .update(String::from_utf8_lossy(bytes).into_owned());
    }
}

#[cfg(test)]
mod tests {
    use crate::bash::BashTool;
    use crate::bash::testutil::ctx;
    use etch_tool::{ProgressSink, Tool};
    use serde_json::json;
    use tempfile::TempDir;
    use tokio::sync::mpsc;

    /// G11: progress updates carry the recent output while the command runs.
    #[tokio::test]
    async fn streams_progress() {
        let dir = TempDir::new().unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut context = ctx(&dir);
        context.progress = ProgressSink::new("call/1", tx);
        let out = BashTool::new(false)
            .execute(
                json!({"command": "echo tick; sleep 0.4; echo tock"}),
                context,
            )
            .await
            .unwrap();
        assert_eq!(out.text, "tick\ntock\n");
        let mut updates = Vec::new();
        while let Ok((id, text)) = rx.try_recv() {
            assert_eq!(id, "call/1");
            updates.push(text);
        }
        assert!(updates.iter().any(|u| u == "tick\n"), "{updates:?}");
    }
}
