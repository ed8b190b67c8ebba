//! One session's background processes: starting each under the guard in
//! a process group of its own, reading its output into a ring and a
//! spill file, the model's operations on it (list, read with a wait,
//! write to stdin, stop the whole group, dismiss), the updates pushed to
//! the model before each request, and stopping all of them when the
//! session ends.
//!
//! Output is read by a task per process whether or not anyone looks;
//! one cursor per process marks what the model has been given, by a push
//! or by a read, so it is never given the same output twice. Exited
//! processes are dropped ten minutes after they were last read.
//!
//! This module must not know the loop, the log or the protocol: it says
//! what happened ([`Notice`], [`Update`]) and others record and show it.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};
use tokio::sync::watch;

use crate::error::ProcessError;
use crate::guard::GUARD;
use crate::ring::Ring;

/// The bounds of a session's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes running at once (`[process] max_running`).
    pub max_running: usize,
    /// Output kept in memory per process.
    pub ring_bytes: usize,
    /// Output saved per process in its spill file.
    pub max_spill: u64,
    /// Most bytes of one process in one push (the tail).
    pub push_each: usize,
    /// Most bytes of all processes in one push.
    pub push_total: usize,
    /// How long an exited process is kept after it was last read.
    pub keep_exited: Duration,
    /// How long a stopped group has between SIGTERM and SIGKILL.
    pub term_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_running: 16,
            ring_bytes: 1 << 20,
            max_spill: 64 << 20,
            push_each: 4 << 10,
            push_total: 16 << 10,
            keep_exited: Duration::from_secs(600),
            term_grace: Duration::from_secs(2),
        }
    }
}

/// Where a process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Still running.
    Running,
    /// Exited by itself with this code.
    Exited(i32),
    /// Ended by this signal.
    Killed(i32),
    /// Started in an earlier life of the session; etch stopped before it
    /// ended, so how it ended is unknown (and it was killed with etch).
    Lost,
}

impl State {
    /// The one word of the state: `running`, `exited`, `killed`, `lost`.
    pub fn word(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Exited(_) => "exited",
            Self::Killed(_) => "killed",
            Self::Lost => "lost",
        }
    }

    /// The state in words: `exited (code 0)`, `killed (SIGTERM)`.
    pub fn describe(self) -> String {
        match self {
            Self::Exited(code) => format!("exited (code {code})"),
            Self::Killed(signal) => format!("killed ({})", signal_name(signal)),
            Self::Lost => "lost (etch stopped before it ended)".to_owned(),
            Self::Running => "running".to_owned(),
        }
    }

    /// The state of a process that ended with `status`.
    fn of(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Exited(code),
            (None, Some(signal)) => Self::Killed(signal),
            (None, None) => Self::Killed(0),
        }
    }
}

/// The name of signal number `signal` (`SIGTERM`), or its number.
pub fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map_or_else(|_| format!("signal {signal}"), |s| s.as_str().to_owned())
}

/// What to start.
#[derive(Debug, Clone)]
pub struct Start {
    /// The command line as the model wrote it, for lists and the log.
    pub command: String,
    /// The program to run (a shell, or the sandbox's helper).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Exactly its environment.
    pub env: Vec<(OsString, OsString)>,
}

/// A process as a list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its id (`p3`).
    pub id: String,
    /// Its process id (the guard's, which leads its group).
    pub pid: u32,
    /// The command line.
    pub command: String,
    /// Where it is.
    pub state: State,
    /// How long ago it started.
    pub age: Duration,
    /// Bytes printed that the model has not been given.
    pub unread: u64,
}

/// Something that happened to a process, for whoever watches the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// It started.
    Started {
        /// Its id.
        id: String,
        /// Its process id.
        pid: u32,
        /// The command line.
        command: String,
    },
    /// It ended.
    Exited {
        /// Its id.
        id: String,
        /// How.
        state: State,
    },
}

/// Who is told what happens.
pub type Listener = Arc<dyn Fn(Notice) + Send + Sync>;

/// What a read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The output (lossy UTF-8).
    pub text: String,
    /// Bytes asked for that were let go before the read (only the last
    /// ones are kept in memory; the spill file has the start).
    pub skipped: u64,
    /// The offset after the text, to read on from.
    pub next: u64,
    /// Where the process is.
    pub state: State,
    /// The spill file, once anything was written to it.
    pub spill: Option<PathBuf>,
}

/// The updates of one push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// The text for the model: one `<process-update>` block per process.
    pub text: String,
    /// The processes it is about.
    pub ids: Vec<String>,
}

/// How to stop a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM to the group, SIGKILL after the grace.
    Term,
    /// SIGKILL to the group.
    Kill,
}

/// One process.
struct Entry {
    /// Its number (`p{number}`).
    number: u64,
    /// Its process id (the guard's); its group's id too.
    pid: u32,
    /// The command line.
    command: String,
    /// When it started.
    started: Instant,
    /// Where it is.
    state: State,
    /// When it was last read (or ended, if never read since).
    touched: Instant,
    /// Its output.
    output: Ring,
    /// What the model has been given (an offset into the output).
    delivered: u64,
    /// Its spill file, once opened.
    spill: Option<PathBuf>,
    /// Whether its end was pushed to the model.
    end_pushed: bool,
    /// Whether its end was recorded in the log.
    end_logged: bool,
    /// Its stdin, while it runs.
    stdin: Option<Arc<tokio::sync::Mutex<ChildStdin>>>,
}

impl Entry {
    /// Its id.
    fn id(&self) -> String {
        format!("p{}", self.number)
    }

    /// Its process group.
    fn group(&self) -> Option<Pid> {
        i32::try_from(self.pid).ok().map(Pid::from_raw)
    }
}

/// The processes and the counter waiters watch.
#[derive(Default)]
struct Inner {
    /// Every process kept, oldest first.
    entries: Vec<Entry>,
    /// The next process number.
    next: u64,
    /// Whether the session ended: nothing more starts.
    closed: bool,
    /// Ends of dismissed processes not logged yet.
    dismissed: Vec<(String, State)>,
}

/// One session's background processes.
pub struct Table {
    /// The etch executable, which runs the guard.
    exe: PathBuf,
    /// Where spill files go (the session's temp directory).
    dir: PathBuf,
    /// The bounds.
    limits: Limits,
    /// The processes.
    inner: Mutex<Inner>,
    /// Bumped whenever output arrives or a process ends.
    changed: watch::Sender<u64>,
    /// Who is told what happens.
    listener: Mutex<Option<Listener>>,
}

impl Table {
    /// A table whose guard is run by `exe`, spilling output into `dir`.
    pub fn new(exe: PathBuf, dir: PathBuf, limits: Limits) -> Arc<Self> {
        Arc::new(Self {
            exe,
            dir,
            limits,
            inner: Mutex::default(),
            changed: watch::channel(0).0,
            listener: Mutex::default(),
        })
    }

    /// The processes, whatever a panic elsewhere left (every change is
    /// complete under the lock).
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells `listener` what happens from now on.
    pub fn listen(&self, listener: Listener) {
        *self.listener.lock().unwrap_or_else(PoisonError::into_inner) = Some(listener);
    }

    /// Tells the listener.
    fn tell(&self, notice: Notice) {
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(listener) = listener {
            listener(notice);
        }
    }

    /// Wakes those waiting for output or an end.
    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Starts `start` under the guard.
    ///
    /// # Errors
    /// When the session ended, [`Limits::max_running`] run already, or it
    /// cannot be started.
    pub fn start(self: &Arc<Self>, start: Start) -> Result<(String, u32), ProcessError> {
        let mut inner = self.lock();
        self.prune(&mut inner);
        if inner.closed {
            return Err(ProcessError::Closed);
        }
        let running = inner
            .entries
            .iter()
            .filter(|e| e.state == State::Running)
            .count();
        if running >= self.limits.max_running {
            return Err(ProcessError::TooMany {
                max: self.limits.max_running,
            });
        }
        let mut args: Vec<OsString> = vec![
            GUARD.into(),
            std::process::id().to_string().into(),
            "--".into(),
            start.program,
        ];
        args.extend(start.args);
        let mut command = etch_spawn::command(&self.exe, args, &start.cwd, start.env);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // The table stops the group itself; the handle only waits.
            .kill_on_drop(false);
        let mut child = command.spawn().map_err(|e| {
            ProcessError::Spawn(format!("cannot start it in {}: {e}", start.cwd.display()))
        })?;
        let pid = child
            .id()
            .ok_or_else(|| ProcessError::Spawn("it ended before it started".to_owned()))?;
        inner.next += 1;
        let number = inner.next;
        let now = Instant::now();
        inner.entries.push(Entry {
            number,
            pid,
            command: start.command.clone(),
            started: now,
            state: State::Running,
            touched: now,
            output: Ring::new(self.limits.ring_bytes),
            delivered: 0,
            spill: None,
            end_pushed: false,
            end_logged: false,
            stdin: child
                .stdin
                .take()
                .map(|s| Arc::new(tokio::sync::Mutex::new(s))),
        });
        drop(inner);
        let id = format!("p{number}");
        let pipes = (child.stdout.take(), child.stderr.take());
        tokio::spawn(pump(Arc::downgrade(self), number, child, pipes));
        self.tell(Notice::Started {
            id: id.clone(),
            pid,
            command: start.command,
        });
        Ok((id, pid))
    }

    /// The number of id `p{n}`, when it is one a table could have made.
    fn number_of(id: &str) -> Option<u64> {
        id.strip_prefix('p')
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|n| *n < 1 << 32)
    }

    /// Makes the next process's id come after `id` (a process of an
    /// earlier life of the session): ids stay unique in a session's log.
    pub fn skip_past(&self, id: &str) {
        if let Some(number) = Self::number_of(id) {
            let mut inner = self.lock();
            inner.next = inner.next.max(number);
        }
    }

    /// Keeps a process of an earlier life of the session, as lost.
    pub fn add_lost(&self, id: &str, pid: u32, command: &str) {
        let Some(number) = Self::number_of(id) else {
            return;
        };
        let mut inner = self.lock();
        if inner.entries.iter().any(|e| e.number == number) {
            return;
        }
        inner.next = inner.next.max(number);
        let now = Instant::now();
        inner.entries.push(Entry {
            number,
            pid,
            command: command.to_owned(),
            started: now,
            state: State::Lost,
            touched: now,
            output: Ring::new(1),
            delivered: 0,
            spill: None,
            end_pushed: true,
            end_logged: true,
            stdin: None,
        });
        inner.entries.sort_by_key(|e| e.number);
    }

    /// Drops the exited processes not read for [`Limits::keep_exited`].
    fn prune(&self, inner: &mut Inner) {
        let keep = self.limits.keep_exited;
        inner.entries.retain(|e| {
            e.state == State::Running
                || !e.end_pushed
                || !e.end_logged
                || e.touched.elapsed() < keep
        });
    }

    /// The processes kept, oldest first.
    pub fn list(&self) -> Vec<Row> {
        let mut inner = self.lock();
        self.prune(&mut inner);
        inner
            .entries
            .iter()
            .map(|e| Row {
                id: e.id(),
                pid: e.pid,
                command: e.command.clone(),
                state: e.state,
                age: e.started.elapsed(),
                unread: e.output.end().saturating_sub(e.delivered),
            })
            .collect()
    }

    /// The index of process `id`, or the error naming the ones kept.
    fn find(inner: &Inner, id: &str) -> Result<usize, ProcessError> {
        inner
            .entries
            .iter()
            .position(|e| e.id() == id)
            .ok_or_else(|| ProcessError::Unknown {
                id: id.to_owned(),
                known: inner.entries.iter().map(Entry::id).collect(),
            })
    }

    /// The output of `id` since the model was last given any (or from
    /// `offset`), waiting up to `wait` for some when there is none and
    /// it runs.
    ///
    /// # Errors
    /// When there is no such process.
    pub async fn output(
        &self,
        id: &str,
        wait: Duration,
        offset: Option<u64>,
    ) -> Result<Read, ProcessError> {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            changes.borrow_and_update();
            {
                let mut inner = self.lock();
                let i = Self::find(&inner, id)?;
                let entry = &mut inner.entries[i];
                let from = offset.unwrap_or(entry.delivered);
                let ready = entry.output.end() > from || entry.state != State::Running;
                if ready || tokio::time::Instant::now() >= deadline {
                    let (start, mut bytes) = entry.output.since(from);
                    // One read returns at most READ_MAX; the rest waits for
                    // the next (its offset says where).
                    bytes.truncate(READ_MAX);
                    let next = start + bytes.len() as u64;
                    entry.delivered = entry.delivered.max(next);
                    entry.touched = Instant::now();
                    if entry.state != State::Running && next == entry.output.end() {
                        entry.end_pushed = true;
                    }
                    return Ok(Read {
                        text: String::from_utf8_lossy(&bytes).into_owned(),
                        skipped: start - from.min(start),
                        next,
                        state: entry.state,
                        spill: entry.spill.clone(),
                    });
                }
            }
            tokio::select! {
                woke = changes.changed() => if woke.is_err() { return Err(ProcessError::Closed) },
                () = tokio::time::sleep_until(deadline) => {}
            }
        }
    }

    /// Writes `text` to the stdin of `id`.
    ///
    /// # Errors
    /// When there is no such process, it ended, or its stdin is closed.
    pub async fn write(&self, id: &str, text: &str) -> Result<(), ProcessError> {
        let stdin = {
            let inner = self.lock();
            let entry = &inner.entries[Self::find(&inner, id)?];
            if entry.state != State::Running {
                return Err(ProcessError::NotRunning {
                    id: id.to_owned(),
                    state: entry.state.describe(),
                });
            }
            entry.stdin.clone()
        };
        let Some(stdin) = stdin else {
            return Err(ProcessError::Stdin(format!("{id} has no stdin")));
        };
        let mut stdin = stdin.lock().await;
        stdin
            .write_all(text.as_bytes())
            .await
            .and(stdin.flush().await)
            .map_err(|e| ProcessError::Stdin(format!("writing to {id} failed: {e}")))
    }

    /// Stops the whole group of `id` (SIGTERM then, after the grace,
    /// SIGKILL; or SIGKILL at once) and waits for its end; how it ended.
    ///
    /// # Errors
    /// When there is no such process.
    pub async fn stop(&self, id: &str, how: Stop) -> Result<State, ProcessError> {
        let group = {
            let inner = self.lock();
            let entry = &inner.entries[Self::find(&inner, id)?];
            if entry.state != State::Running {
                return Ok(entry.state);
            }
            entry.group()
        };
        if how == Stop::Term {
            etch_spawn::signal_group(group, Signal::SIGTERM);
            if let Some(state) = self.ended(id, self.limits.term_grace).await {
                return Ok(state);
            }
        }
        etch_spawn::signal_group(group, Signal::SIGKILL);
        Ok(self
            .ended(id, Duration::from_secs(5))
            .await
            .unwrap_or(State::Running))
    }

    /// Waits up to `wait` for `id` to end; its state then.
    async fn ended(&self, id: &str, wait: Duration) -> Option<State> {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            changes.borrow_and_update();
            let state = {
                let inner = self.lock();
                let i = Self::find(&inner, id).ok()?;
                inner.entries[i].state
            };
            if state != State::Running {
                return Some(state);
            }
            tokio::select! {
                woke = changes.changed() => if woke.is_err() { return None },
                () = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }

    /// Forgets `id`, which has ended.
    ///
    /// # Errors
    /// When there is no such process, or it still runs.
    pub fn dismiss(&self, id: &str) -> Result<(), ProcessError> {
        let mut inner = self.lock();
        let i = Self::find(&inner, id)?;
        if inner.entries[i].state == State::Running {
            return Err(ProcessError::StillRunning { id: id.to_owned() });
        }
        let entry = inner.entries.remove(i);
        if !entry.end_logged {
            inner.dismissed.push((entry.id(), entry.state));
        }
        Ok(())
    }

    /// The ids of the processes running now.
    pub fn running(&self) -> Vec<String> {
        self.lock()
            .entries
            .iter()
            .filter(|e| e.state == State::Running)
            .map(Entry::id)
            .collect()
    }

    /// Whether any of `ids` has output or an end the model was not given.
    pub fn has_news(&self, ids: &[String]) -> bool {
        self.lock().entries.iter().any(|e| {
            ids.contains(&e.id())
                && (e.output.end() > e.delivered || (e.state != State::Running && !e.end_pushed))
        })
    }

    /// The ends not yet recorded in the log, marked recorded now.
    pub fn take_unlogged_ends(&self) -> Vec<(String, State)> {
        let mut inner = self.lock();
        let mut ends = std::mem::take(&mut inner.dismissed);
        ends.extend(
            inner
                .entries
                .iter_mut()
                .filter(|e| e.state != State::Running && !e.end_logged)
                .map(|e| {
                    e.end_logged = true;
                    (e.id(), e.state)
                }),
        );
        ends
    }

    /// What the model has not been given, as one text: for each process
    /// with new output or a new end, a block
    /// `<process-update id="p3" state="running">…</process-update>`
    /// holding the tail of its new output (within the push caps; the
    /// spill file named when some was left out). `None` when there is
    /// nothing new.
    pub fn take_update(&self) -> Option<Update> {
        let mut inner = self.lock();
        self.prune(&mut inner);
        let mut budget = self.limits.push_total;
        let mut text = String::new();
        let mut ids = Vec::new();
        for entry in &mut inner.entries {
            let end = entry.output.end();
            let new = end > entry.delivered;
            let ended = entry.state != State::Running && !entry.end_pushed;
            if !new && !ended {
                continue;
            }
            let cap = self.limits.push_each.min(budget);
            let want = usize::try_from(end - entry.delivered)
                .unwrap_or(usize::MAX)
                .min(self.limits.push_each);
            if new && cap < want {
                // Not enough left of this push for its share: the next
                // push takes it whole.
                continue;
            }
            let (mut start, mut kept) = entry.output.tail_since(entry.delivered, cap);
            // While it runs, a last line not finished yet waits for its
            // end (a secret or a character is never cut in two by a
            // push), unless it is all there is.
            let mut upto = end;
            if entry.state == State::Running
                && let Some(last) = kept.iter().rposition(|&b| b == b'\n')
                && last + 1 < kept.len()
            {
                upto = start + last as u64 + 1;
                kept.truncate(last + 1);
            }
            // A tail cut from longer output starts at a line's start.
            if start > entry.delivered
                && let Some(first) = kept.iter().position(|&b| b == b'\n')
                && first + 1 < kept.len()
            {
                kept.drain(..=first);
                start += first as u64 + 1;
            }
            let left_out = start - entry.delivered;
            budget -= kept.len().min(budget);
            entry.delivered = upto;
            entry.end_pushed |= entry.state != State::Running && upto == end;
            let attributes = match entry.state {
                State::Running => "state=\"running\"".to_owned(),
                State::Exited(code) => format!("state=\"exited\" code=\"{code}\""),
                State::Killed(signal) => {
                    format!("state=\"killed\" signal=\"{}\"", signal_name(signal))
                }
                State::Lost => "state=\"lost\"".to_owned(),
            };
            let _ = writeln!(text, "<process-update id=\"{}\" {attributes}>", entry.id());
            if left_out > 0 {
                let whole = entry.spill.as_ref().map_or_else(String::new, |path| {
                    format!("; the output so far is in {}", path.display())
                });
                let _ = writeln!(text, "[{left_out} earlier bytes left out{whole}]");
            }
            let body = String::from_utf8_lossy(&kept);
            text.push_str(&body);
            if !body.is_empty() && !body.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("</process-update>\n");
            ids.push(entry.id());
        }
        (!ids.is_empty()).then(|| Update {
            text: text.trim_end().to_owned(),
            ids,
        })
    }

    /// Stops every process (SIGTERM, SIGKILL after the grace) and starts
    /// no more: the session ended.
    pub async fn close(&self) {
        let groups: Vec<Option<Pid>> = {
            let mut inner = self.lock();
            inner.closed = true;
            inner
                .entries
                .iter()
                .filter(|e| e.state == State::Running)
                .map(Entry::group)
                .collect()
        };
        if groups.is_empty() {
            return;
        }
        for group in &groups {
            etch_spawn::signal_group(*group, Signal::SIGTERM);
        }
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + self.limits.term_grace;
        while !self.running().is_empty() {
            changes.borrow_and_update();
            tokio::select! {
                woke = changes.changed() => if woke.is_err() { break },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        for group in groups {
            etch_spawn::signal_group(group, Signal::SIGKILL);
        }
        // Their ends are recorded by their readers a moment later.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        while !self.running().is_empty() {
            changes.borrow_and_update();
            tokio::select! {
                woke = changes.changed() => if woke.is_err() { break },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
    }

    /// Adds output of process `number`: into its ring under the lock,
    /// then (outside it, so a push never waits for the disk) into its
    /// spill file; a byte in the file is always in the ring already.
    fn append(&self, number: u64, bytes: &[u8], spill: &mut Spill) {
        let mut inner = self.lock();
        let Some(entry) = inner.entries.iter_mut().find(|e| e.number == number) else {
            return;
        };
        entry.output.push(bytes);
        if spill.file.is_none() && !spill.failed {
            let path = self.dir.join(format!("process-p{number}.log"));
            let opened = std::fs::create_dir_all(&self.dir).and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .truncate(true)
                    .open(&path)
            });
            match opened {
                Ok(file) => {
                    spill.file = Some(file);
                    entry.spill = Some(path);
                }
                Err(_) => spill.failed = true,
            }
        }
        drop(inner);
        if let Some(file) = &mut spill.file {
            let room = usize::try_from(self.limits.max_spill.saturating_sub(spill.written))
                .unwrap_or(usize::MAX);
            let part = &bytes[..bytes.len().min(room)];
            if !part.is_empty() && file.write_all(part).is_ok() {
                spill.written += part.len() as u64;
            }
        }
        self.bump();
    }

    /// Records that process `number` ended with `status`.
    fn finish(&self, number: u64, state: State) {
        let id = {
            let mut inner = self.lock();
            let Some(entry) = inner.entries.iter_mut().find(|e| e.number == number) else {
                return;
            };
            entry.state = state;
            entry.touched = Instant::now();
            entry.stdin = None;
            entry.id()
        };
        self.bump();
        self.tell(Notice::Exited { id, state });
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // Whatever was not stopped by `close` goes now.
        for entry in &self.lock().entries {
            if entry.state == State::Running {
                etch_spawn::signal_group(entry.group(), Signal::SIGKILL);
            }
        }
    }
}

/// The most bytes one `output` read returns.
pub const READ_MAX: usize = 48 << 10;

/// After the guard ended, how long what is left in its pipes may take
/// (a process that left the group could hold them open forever).
const DRAIN: Duration = Duration::from_millis(200);

/// Bytes asked for per pipe read.
const CHUNK: usize = 16 * 1024;

/// A process's spill file, owned by its reader.
#[derive(Default)]
struct Spill {
    /// The file, once opened.
    file: Option<std::fs::File>,
    /// Bytes written to it.
    written: u64,
    /// Whether it could not be opened (not tried again).
    failed: bool,
}

/// Reads process `number`'s pipes into the table until it ended, then
/// kills what is left of its group and records the end.
async fn pump(
    table: Weak<Table>,
    number: u64,
    mut child: Child,
    pipes: (
        Option<tokio::process::ChildStdout>,
        Option<tokio::process::ChildStderr>,
    ),
) {
    let (mut out, mut err) = pipes;
    let group = etch_spawn::group_of(&child);
    let (mut out_buf, mut err_buf) = (vec![0; CHUNK], vec![0; CHUNK]);
    let mut status = None;
    let mut drain_until = None;
    let mut spill = Spill::default();
    loop {
        if out.is_none() && err.is_none() && status.is_some() {
            break;
        }
        let drained = async {
            match drain_until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            read = read_some(&mut out, &mut out_buf) => {
                match read {
                    Ok(n) if n > 0 => match table.upgrade() {
                        Some(table) => table.append(number, &out_buf[..n], &mut spill),
                        None => break,
                    },
                    _ => out = None,
                }
            }
            read = read_some(&mut err, &mut err_buf) => {
                match read {
                    Ok(n) if n > 0 => match table.upgrade() {
                        Some(table) => table.append(number, &err_buf[..n], &mut spill),
                        None => break,
                    },
                    _ => err = None,
                }
            }
            waited = child.wait(), if status.is_none() => {
                status = Some(waited.map_or(State::Killed(0), State::of));
                // The command is done: so is anything it left running.
                etch_spawn::signal_group(group, Signal::SIGKILL);
                drain_until = Some(tokio::time::Instant::now() + DRAIN);
            }
            () = drained => break,
        }
    }
    if status.is_none() {
        etch_spawn::signal_group(group, Signal::SIGKILL);
        status = Some(child.wait().await.map_or(State::Killed(0), State::of));
    }
    if let (Some(table), Some(state)) = (table.upgrade(), status) {
        table.finish(number, state);
    }
}

/// Reads from `pipe` while it is open; pending forever once it is closed.
async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(reader) => reader.read(buf).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A table whose "guard" is a script that runs the command as is (the
    /// real guard is the etch binary's, tested through it), with `limits`.
    fn table(dir: &tempfile::TempDir, limits: Limits) -> Arc<Table> {
        let guard = dir.path().join("guard.sh");
        std::fs::write(&guard, "#!/bin/sh\nshift 3\nexec \"$@\"\n").unwrap();
        std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).unwrap();
        Table::new(guard, dir.path().join("tmp"), limits)
    }

    /// `sh -c script` to start.
    fn sh(script: &str) -> Start {
        Start {
            command: script.to_owned(),
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: std::env::temp_dir(),
            env: vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
        }
    }

    /// Output is pushed once, reads wait for it, stdin reaches the
    /// command, and the end is pushed with its code.
    #[tokio::test(flavor = "multi_thread")]
    async fn output_is_read_pushed_once_and_the_end_told() {
        let dir = tempfile::tempdir().unwrap();
        let table = table(&dir, Limits::default());
        let (id, _) = table
            .start(sh("echo ready; read line; echo got $line; exit 3"))
            .unwrap();
        assert_eq!(id, "p1");
        let read = table
            .output(&id, Duration::from_secs(20), None)
            .await
            .unwrap();
        assert_eq!(
            (read.text.as_str(), read.state),
            ("ready\n", State::Running)
        );
        assert!(
            table.take_update().is_none(),
            "read output is not pushed again"
        );
        table.write(&id, "hello\n").await.unwrap();
        assert_eq!(
            table.ended(&id, Duration::from_secs(20)).await,
            Some(State::Exited(3))
        );
        let update = table.take_update().unwrap();
        assert_eq!(
            update.text,
            "<process-update id=\"p1\" state=\"exited\" code=\"3\">\ngot hello\n</process-update>"
        );
        assert!(table.take_update().is_none());
        assert_eq!(
            table.take_unlogged_ends(),
            [("p1".to_owned(), State::Exited(3))]
        );
        assert!(table.take_unlogged_ends().is_empty());
        let spill = std::fs::read_to_string(dir.path().join("tmp/process-p1.log")).unwrap();
        assert_eq!(spill, "ready\ngot hello\n");
        table.dismiss(&id).unwrap();
        assert!(table.list().is_empty());
    }

    /// A push keeps each process's tail within its cap and says how much
    /// was left out; the limit on running processes holds; a stop by
    /// SIGTERM of a command that ignores it ends with SIGKILL.
    #[tokio::test(flavor = "multi_thread")]
    async fn caps_limits_and_stops() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_running: 2,
            push_each: 10,
            term_grace: Duration::from_millis(300),
            ..Limits::default()
        };
        let table = table(&dir, limits);
        let (chatty, _) = table
            .start(sh("printf '0123456789ABCDEFGHIJ'; exec sleep 60"))
            .unwrap();
        let (stubborn, _) = table
            .start(sh("trap '' TERM; echo armed; while :; do sleep 1; done"))
            .unwrap();
        let refused = table.start(sh("true")).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("2 background processes run already"),
            "{refused}"
        );
        table
            .output(&stubborn, Duration::from_secs(20), None)
            .await
            .unwrap();
        // Wait until all 20 bytes of the chatty one arrived.
        while table.list()[0].unread < 20 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let update = table.take_update().unwrap();
        assert!(
            update
                .text
                .contains("[10 earlier bytes left out; the output so far is in ")
                && update.text.contains("ABCDEFGHIJ\n</process-update>"),
            "{}",
            update.text
        );
        assert_eq!(
            table.stop(&stubborn, Stop::Term).await.unwrap(),
            State::Killed(9)
        );
        assert_eq!(
            table.stop(&chatty, Stop::Term).await.unwrap(),
            State::Killed(15)
        );
        let err = table.output("p9", Duration::ZERO, None).await.unwrap_err();
        assert!(err.to_string().contains("kept: p1, p2"), "{err}");
        table.close().await;
        assert!(matches!(table.start(sh("true")), Err(ProcessError::Closed)));
    }

    /// A push holds back a last line still being written, gives each
    /// process its turn when the budget ran out (nothing is skipped), and
    /// a dismissed process's end is still logged.
    #[tokio::test(flavor = "multi_thread")]
    async fn pushes_keep_lines_whole_and_nothing_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            push_total: 12,
            push_each: 12,
            ..Limits::default()
        };
        let table = table(&dir, limits);
        let (a, _) = table
            .start(sh("printf 'one\\ntwo\\npart'; read x; echo ial; sleep 60"))
            .unwrap();
        let (b, _) = table.start(sh("echo other; sleep 60")).unwrap();
        for id in [&a, &b] {
            while table.list().iter().find(|r| &r.id == id).unwrap().unread == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        while table.list()[0].unread < 12 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let first = table.take_update().unwrap();
        assert_eq!(
            first.text, "<process-update id=\"p1\" state=\"running\">\none\ntwo\n</process-update>",
            "the unfinished line waits; p2 waits for the next push"
        );
        // Next: p2 whole, and p1's unfinished line, now all it has.
        let second = table.take_update().unwrap();
        assert!(
            second
                .text
                .contains("<process-update id=\"p1\" state=\"running\">\npart\n")
                && second
                    .text
                    .contains("<process-update id=\"p2\" state=\"running\">\nother\n"),
            "{}",
            second.text
        );
        table.write(&a, "x\n").await.unwrap();
        let read = table
            .output(&a, Duration::from_secs(20), None)
            .await
            .unwrap();
        assert_eq!(read.text, "ial\n");
        table.stop(&b, Stop::Kill).await.unwrap();
        table.dismiss(&b).unwrap();
        assert_eq!(table.take_unlogged_ends(), [(b.clone(), State::Killed(9))]);
        table.skip_past("p7");
        table.skip_past("p99999999999999999999");
        let (next, _) = table.start(sh("true")).unwrap();
        assert_eq!(next, "p8");
        table.close().await;
    }
}
