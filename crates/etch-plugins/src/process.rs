//! A plugin process: started through `sh -c` from the project directory
//! in its own process group (E-PLUG-02, E-PLUG-04), its stdout read as
//! bounded frames (one JSON line each, at most [`crate::MAX_FRAME`]
//! bytes), its stderr kept as the last lines for diagnostics, and the
//! group signalled as a whole, so grandchildren a shell started cannot
//! keep the pipes open. Stopping follows E-PLUG-04: close stdin, a brief
//! wait, SIGTERM, SIGKILL.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::registry;
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use crate::MAX_FRAME;

/// Stderr lines kept for diagnostics.
const STDERR_LINES: usize = 20;

/// What the stdout reader saw.
#[derive(Debug)]
pub(crate) enum Frame {
    /// One line (without its newline).
    Line(String),
    /// A line longer than the bound; reading stopped.
    TooLong,
    /// stdout closed.
    Eof,
}

/// A started plugin process.
pub(crate) struct Process {
    /// The child (the shell).
    pub(crate) child: Child,
    /// Its stdin, until closed.
    pub(crate) stdin: Option<ChildStdin>,
    /// Frames from its stdout.
    pub(crate) frames: mpsc::Receiver<Frame>,
    /// The last lines of its stderr.
    pub(crate) stderr: Arc<Mutex<VecDeque<String>>>,
    /// Its process group.
    pub(crate) group: Group,
}

/// A process group, killed when dropped.
#[derive(Debug)]
pub(crate) struct Group(Option<Pid>);

impl Group {
    /// Sends `signal` to the whole group.
    pub(crate) fn signal(&self, signal: Signal) {
        etch_spawn::signal_group(self.0, signal);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
        if let Some(pgid) = self.0 {
            registry::remove(pgid);
        }
    }
}

/// Starts `command` in `cwd` with exactly `env`.
pub(crate) fn spawn(
    command: &str,
    cwd: &Path,
    env: &[(OsString, OsString)],
) -> std::io::Result<Process> {
    let mut child =
        etch_spawn::command("sh", ["-c", command], cwd, env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
    let group = Group(etch_spawn::group_of(&child));
    if let Some(pgid) = group.0 {
        registry::add(pgid);
    }
    let (tx, frames) = mpsc::channel(16);
    if let Some(stdout) = child.stdout.take() {
        tokio::spawn(read_frames(stdout, tx));
    }
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    if let Some(err) = child.stderr.take() {
        tokio::spawn(keep_tail(err, Arc::clone(&stderr)));
    }
    Ok(Process {
        stdin: child.stdin.take(),
        child,
        frames,
        stderr,
        group,
    })
}

/// Reads `stdout` line by line into `tx`, each line bounded.
async fn read_frames(stdout: impl AsyncRead + Unpin, tx: mpsc::Sender<Frame>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        let (done, used) = match reader.fill_buf().await {
            Ok([]) | Err(_) => {
                let _ = tx.send(Frame::Eof).await;
                return;
            }
            Ok(buf) => {
                if let Some(end) = buf.iter().position(|b| *b == b'\n') {
                    line.extend_from_slice(&buf[..end]);
                    (true, end + 1)
                } else {
                    line.extend_from_slice(buf);
                    (false, buf.len())
                }
            }
        };
        reader.consume(used);
        if line.len() > MAX_FRAME {
            let _ = tx.send(Frame::TooLong).await;
            return;
        }
        if done {
            let text = String::from_utf8_lossy(&line).into_owned();
            line.clear();
            if tx.send(Frame::Line(text)).await.is_err() {
                return;
            }
        }
    }
}

/// Longest stderr line kept (the rest of a longer one is dropped).
const STDERR_LINE: usize = 4096;

/// Keeps the last lines of `stderr`, reading it to its end whatever it
/// holds (invalid UTF-8, endless lines), so the plugin never writes into
/// a closed pipe.
async fn keep_tail(stderr: impl AsyncRead + Unpin, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        line.truncate(STDERR_LINE);
        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == STDERR_LINES {
                tail.pop_front();
            }
            tail.push_back(text);
        }
    }
}

impl Process {
    /// The last stderr line that says something, for a diagnostic.
    pub(crate) fn last_stderr(&self) -> Option<String> {
        let tail = self.stderr.lock().ok()?;
        tail.iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_owned())
    }

    /// How it exited, if it did.
    pub(crate) fn exit_status(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(match status.code() {
                Some(code) => format!("exited with code {code}"),
                None => "was killed by a signal".to_owned(),
            }),
            _ => None,
        }
    }

    /// Stops it now: the whole group gets SIGKILL.
    pub(crate) fn kill(&mut self) {
        self.stdin = None;
        self.group.signal(Signal::SIGKILL);
    }

    /// Stops it politely (E-PLUG-04): stdin closed, `grace` to exit, then
    /// SIGTERM and the same again, then SIGKILL for the group.
    pub(crate) async fn stop(&mut self, grace: Duration) {
        self.stdin = None;
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            self.group.signal(Signal::SIGTERM);
            if tokio::time::timeout(grace, self.child.wait())
                .await
                .is_err()
            {
                self.group.signal(Signal::SIGKILL);
            }
        }
        // Whatever the shell left in its group goes with it.
        self.group.signal(Signal::SIGKILL);
    }
}
