//! The stdout of the JSON-lines front ends (`etch rpc`, `etch acp`): a
//! thread of its own writes the lines, so a client that stops reading
//! never stalls the sessions, and what waits for it is capped (64 MiB by
//! default, or the front end's environment variable): past the cap
//! `overflow` fires and later lines are dropped, so memory stays bounded.
//! `closed` fires when stdout is gone. It must not know what the lines
//! say.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;

/// Default cap on output waiting for the client.
const DEFAULT_LIMIT: usize = 64 << 20;

/// Queues a line (without its LF) within the cap.
pub type LineSink = Arc<dyn Fn(String) + Send + Sync>;

/// The line writer.
pub struct Outbox {
    /// Lines to write.
    tx: std::sync::mpsc::Sender<String>,
    /// Bytes handed over and not yet written.
    pending: Arc<AtomicUsize>,
    /// The cap on `pending`.
    pub limit: usize,
    /// Fired when the cap was exceeded (the client is not reading).
    pub overflow: CancellationToken,
    /// Fired when stdout is closed (the client went away).
    pub closed: CancellationToken,
}

impl Outbox {
    /// Starts the writer thread, capped by the environment variable
    /// `limit_var` (bytes) or 64 MiB; the receiver gets a message when it
    /// has written everything (all senders dropped).
    pub fn start(limit_var: &str) -> (Self, std::sync::mpsc::Receiver<()>) {
        let limit = std::env::var(limit_var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_LIMIT);
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let closed = CancellationToken::new();
        let (counter, gone) = (Arc::clone(&pending), closed.clone());
        std::thread::spawn(move || {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for mut line in rx {
                let size = line.len();
                line.push('\n');
                if !gone.is_cancelled()
                    && (out.write_all(line.as_bytes()).is_err() || out.flush().is_err())
                {
                    gone.cancel();
                }
                counter.fetch_sub(size, Ordering::SeqCst);
            }
            let _ = done_tx.send(());
        });
        (
            Self {
                tx,
                pending,
                limit,
                overflow: CancellationToken::new(),
                closed,
            },
            done_rx,
        )
    }

    /// Queues one line; past the cap, the line is dropped and the
    /// overflow fires (one line larger than the cap still goes out when
    /// nothing else is waiting).
    pub fn send(&self, line: String) {
        queue(&self.tx, &self.pending, self.limit, &self.overflow, line);
    }

    /// A sink onto this outbox, for other threads and tasks.
    pub fn sink(&self) -> LineSink {
        let (tx, pending, limit, overflow) = (
            self.tx.clone(),
            Arc::clone(&self.pending),
            self.limit,
            self.overflow.clone(),
        );
        Arc::new(move |line: String| queue(&tx, &pending, limit, &overflow, line))
    }
}

/// Queues `line` on `tx` within the cap (see [`Outbox::send`]).
fn queue(
    tx: &std::sync::mpsc::Sender<String>,
    pending: &AtomicUsize,
    limit: usize,
    overflow: &CancellationToken,
    line: String,
) {
    if overflow.is_cancelled() {
        return;
    }
    let waiting = pending.fetch_add(line.len(), Ordering::SeqCst);
    if waiting > 0 && waiting + line.len() > limit {
        pending.fetch_sub(line.len(), Ordering::SeqCst);
        overflow.cancel();
        return;
    }
    if tx.send(line).is_err() {
        overflow.cancel();
    }
}
