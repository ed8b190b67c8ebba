//! The `bash` tool: runs one shell command and reports what it printed (C16,
//! G11, G18).
//!
//! This module owns the whole life of the command's processes: spawning
//! `bash -lc <command>` in the working directory with stdin closed, in its own
//! process group and with the provider credentials scrubbed from its
//! environment; capturing stdout and stderr separately (each keeps its last
//! [`BASH_STREAM_MAX_BYTES`]; a stream that outgrows that is streamed in full
//! to a file in the session temp directory); sending throttled progress;
//! enforcing the timeout and cancellation; and rendering the result text.
//!
//! Processes are always handled as a group. On timeout or cancellation the
//! group gets `SIGTERM`, a short grace period, then `SIGKILL`, so commands
//! that ignore `SIGTERM` or fork children still end. When the shell exits on
//! its own, background children it left behind may still hold the output
//! pipes open (`sleep 300 & echo started`). The tool does not wait for their
//! end-of-file: it drains the pipes for a short window
//! ([`EXIT_DRAIN_WINDOW`]), then kills whatever is left of the group with
//! `SIGKILL` and returns. A call therefore never leaves a process of its group
//! behind; a command that really wants a daemon must leave the group itself
//! (`setsid`). The same group kill runs if the call's future is dropped.
//!
//! This module must not know about the agent loop, sessions, providers or how
//! results are displayed; it only produces the result text.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use etch_model::ToolSpec;
use etch_tool::{Access, ProgressSink, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Deserialize;
use serde_json::{Number, Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use crate::args;
use crate::limits::{BASH_DEFAULT_TIMEOUT_SECS, BASH_MAX_TIMEOUT_SECS, BASH_STREAM_MAX_BYTES};

/// Description shown to the model.
const DESCRIPTION: &str = "Run a shell command with `bash -lc` in the working directory and \
return its output. stdout comes first, then stderr after a `--- stderr ---` line, then \
`Command exited with code N` when the exit code is not 0. stdin is closed, so interactive \
commands fail; pass non-interactive flags. Each stream keeps its last 65536 bytes; when a \
stream is longer, the result says where its full output was saved. The default timeout is 30 \
seconds and the maximum 120; on timeout the whole process tree is killed. Background processes \
(`cmd &`) are killed when the command returns, so do not start long-running servers here. \
Prefer the read, grep, find and ls tools for looking at files.";

/// Environment variables holding provider credentials, removed from the
/// command's environment unless credentials are inherited (G18).
const CREDENTIAL_VARS: [&str; 4] = [
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "CODEX_ACCESS_TOKEN",
    "ANTHROPIC_API_KEY",
];

/// How often progress may be reported while the command runs.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Most bytes of recent output a progress update carries.
const PROGRESS_MAX_BYTES: usize = 4096;

/// Bytes asked for per pipe read.
const READ_CHUNK: usize = 16 * 1024;

/// After the shell exits on its own, how long to wait for the pipes to reach
/// end-of-file before the rest of its group is killed. Long enough for output
/// already in flight, short enough that a background child holding the pipes
/// open does not delay the result noticeably.
const EXIT_DRAIN_WINDOW: Duration = Duration::from_millis(200);

/// How long the group has between `SIGTERM` and `SIGKILL` on timeout or
/// cancellation.
const TERM_GRACE: Duration = Duration::from_secs(1);

/// How long to wait for the shell to be reaped after `SIGKILL`; only a process
/// stuck in the kernel takes this long.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// After the group is killed, how long to keep reading what is left in the
/// pipes (a process that left the group could hold them open forever).
const KILLED_DRAIN_WINDOW: Duration = Duration::from_millis(250);

/// The `bash` tool.
#[derive(Debug, Clone)]
pub struct BashTool {
    /// Name, description and schema shown to the model.
    spec: ToolSpec,
    /// Whether commands see the provider credential variables (G18).
    inherit_credentials: bool,
}

impl BashTool {
    /// A `bash` tool; `inherit_credentials` keeps the provider credential
    /// variables in the command's environment instead of removing them.
    pub fn new(inherit_credentials: bool) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Shell command to run with bash -lc in the working directory"
                },
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "seconds, default 30, max 120"
                }
            },
            "required": ["command"],
            "additionalProperties": false
        });
        Self {
            spec: args::spec("bash", DESCRIPTION, schema),
            inherit_credentials,
        }
    }
}

/// Arguments of a `bash` call.
#[derive(Debug, Deserialize)]
struct BashArgs {
    /// The command line handed to `bash -lc`.
    command: String,
    /// Requested timeout in seconds; a number so that an integral float
    /// (`60.0`), which the schema accepts as an integer, also works.
    timeout: Option<Number>,
}

impl Tool for BashTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self, _args: &Value, _cwd: &Path) -> Access {
        Access::Barrier
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let args: BashArgs = args::parse(&self.spec, args)?;
            let (timeout, clamped) = match &args.timeout {
                Some(requested) => effective_timeout(requested),
                None => (BASH_DEFAULT_TIMEOUT_SECS, false),
            };
            let note = match &args.timeout {
                Some(requested) if clamped => Some(format!(
                    "[timeout {requested} exceeds the maximum; clamped to {timeout} seconds]"
                )),
                _ => None,
            };
            let env = child_env(std::env::vars_os(), self.inherit_credentials);
            run_command(&args.command, timeout, note.as_deref(), env, &ctx).await
        })
    }
}

/// The timeout to use for a requested (schema-validated, integral, >= 1)
/// number of seconds, and whether it had to be clamped to the maximum.
fn effective_timeout(requested: &Number) -> (u64, bool) {
    if let Some(secs) = requested.as_u64() {
        return (
            secs.min(BASH_MAX_TIMEOUT_SECS),
            secs > BASH_MAX_TIMEOUT_SECS,
        );
    }
    // An integral float such as `60.0`: find the whole seconds it names
    // without lossy casts.
    let secs = requested.as_f64().unwrap_or(f64::INFINITY);
    let max = u32::try_from(BASH_MAX_TIMEOUT_SECS).unwrap_or(u32::MAX);
    match (1..=max).find(|s| f64::from(*s) >= secs) {
        Some(s) => (u64::from(s), false),
        None => (BASH_MAX_TIMEOUT_SECS, true),
    }
}

/// The environment for the command: `vars` minus the provider credential
/// variables, unless `inherit_credentials` (G18).
fn child_env<I>(vars: I, inherit_credentials: bool) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    vars.into_iter()
        .filter(|(key, _)| inherit_credentials || !CREDENTIAL_VARS.iter().any(|c| key == *c))
        .collect()
}

/// Runs `command` with exactly `env` as its environment and turns the
/// outcome into the tool result.
async fn run_command(
    command: &str,
    timeout_secs: u64,
    note: Option<&str>,
    env: Vec<(OsString, OsString)>,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new("Operation aborted"));
    }
    let mut run = Run::spawn(command, env, ctx)?;
    let deadline = Instant::now() + Duration::from_secs(timeout_secs);
    match run.pump(deadline, Some(&ctx.cancel), Goal::Exit).await {
        Wake::Reached => {
            run.finish_after_exit().await;
            let status = match run.exit.take() {
                Some(Ok(status)) => status_line(status),
                Some(Err(e)) => {
                    return Err(ToolError::new(format!("failed to wait for bash: {e}")));
                }
                None => None,
            };
            Ok(ToolOutput::text(run.render(note, status.as_deref())))
        }
        Wake::Deadline => {
            run.terminate().await;
            let line = format!("Command timed out after {timeout_secs} seconds");
            Err(ToolError::new(run.render(note, Some(&line))))
        }
        Wake::Cancelled => {
            run.terminate().await;
            Err(ToolError::new(run.render(None, Some("Operation aborted"))))
        }
    }
}

/// The final status line for a shell that exited on its own: nothing for
/// code 0.
fn status_line(status: ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("Command exited with code {code}")),
        (None, Some(signal)) => Some(format!("Command terminated by signal {signal}")),
        (None, None) => Some("Command ended abnormally".to_string()),
    }
}

/// What [`Run::pump`] waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Goal {
    /// The shell has exited and been reaped.
    Exit,
    /// Both output pipes reached end-of-file.
    Eof,
}

/// Why [`Run::pump`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// The goal was reached.
    Reached,
    /// The deadline passed first.
    Deadline,
    /// The call was cancelled first.
    Cancelled,
}

/// Which output stream a read came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    /// Standard output.
    Out,
    /// Standard error.
    Err,
}

/// One running command: the shell, its pipes and what they delivered so far.
/// Everything lives in the call's own future, so dropping the future drops
/// the pipes and (through [`Drop`]) kills the group.
struct Run {
    /// The `bash` process, leader of the group.
    child: Child,
    /// Id of the command's process group (the shell's pid).
    pgid: Pid,
    /// stdout pipe until it reaches end-of-file.
    stdout: Option<ChildStdout>,
    /// stderr pipe until it reaches end-of-file.
    stderr: Option<ChildStderr>,
    /// Read buffer for stdout.
    out_buf: Vec<u8>,
    /// Read buffer for stderr.
    err_buf: Vec<u8>,
    /// Captured stdout.
    out: StreamCapture,
    /// Captured stderr.
    err: StreamCapture,
    /// Recent output of both streams in arrival order, for progress.
    recent: Vec<u8>,
    /// Whether `recent` lost its oldest bytes (so it may start mid-character).
    recent_trimmed: bool,
    /// Whether output arrived since the last progress update.
    changed: bool,
    /// Where progress goes.
    progress: ProgressSink,
    /// Throttles progress updates.
    ticker: Interval,
    /// How the shell ended, once it has been reaped.
    exit: Option<io::Result<ExitStatus>>,
    /// Whether the group may still have members that have not been sent
    /// `SIGKILL`.
    group_live: bool,
}

impl Run {
    /// Starts `bash -lc command` for the call.
    fn spawn(
        command: &str,
        env: Vec<(OsString, OsString)>,
        ctx: &ToolContext,
    ) -> Result<Self, ToolError> {
        let mut cmd = Command::new("bash");
        cmd.arg("-lc")
            .arg(command)
            .current_dir(&ctx.cwd)
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| {
            ToolError::new(format!(
                "failed to start bash in {}: {e}",
                ctx.cwd.display()
            ))
        })?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| ToolError::new("failed to start bash: no process id"))?;
        let mut ticker = tokio::time::interval(PROGRESS_INTERVAL);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Ok(Self {
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            child,
            pgid: Pid::from_raw(pid),
            out_buf: vec![0; READ_CHUNK],
            err_buf: vec![0; READ_CHUNK],
            out: StreamCapture::new("stdout", spill_path(&ctx.temp_dir, &ctx.call_id, "stdout")),
            err: StreamCapture::new("stderr", spill_path(&ctx.temp_dir, &ctx.call_id, "stderr")),
            recent: Vec::new(),
            recent_trimmed: false,
            changed: false,
            progress: ctx.progress.clone(),
            ticker,
            exit: None,
            group_live: true,
        })
    }

    /// Reads the pipes, reaps the shell and reports progress until `goal` is
    /// reached, `until` passes or (when given) `cancel` fires.
    async fn pump(
        &mut self,
        until: Instant,
        cancel: Option<&CancellationToken>,
        goal: Goal,
    ) -> Wake {
        loop {
            let reached = match goal {
                Goal::Exit => self.exit.is_some(),
                Goal::Eof => self.stdout.is_none() && self.stderr.is_none(),
            };
            if reached {
                return Wake::Reached;
            }
            tokio::select! {
                () = cancelled(cancel) => return Wake::Cancelled,
                read = read_some(&mut self.stdout, &mut self.out_buf) => {
                    self.on_read(Stream::Out, read);
                }
                read = read_some(&mut self.stderr, &mut self.err_buf) => {
                    self.on_read(Stream::Err, read);
                }
                status = self.child.wait(), if self.exit.is_none() => {
                    self.exit = Some(status);
                }
                () = tokio::time::sleep_until(until) => return Wake::Deadline,
                _ = self.ticker.tick() => self.report(),
            }
        }
    }

    /// Records the result of one read from `stream`'s pipe; end-of-file or a
    /// read error closes the pipe.
    fn on_read(&mut self, stream: Stream, read: io::Result<usize>) {
        let n = match read {
            Ok(0) => 0,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return,
            Err(_) => 0,
        };
        if n == 0 {
            match stream {
                Stream::Out => self.stdout = None,
                Stream::Err => self.stderr = None,
            }
            return;
        }
        let (buf, capture) = match stream {
            Stream::Out => (&self.out_buf, &mut self.out),
            Stream::Err => (&self.err_buf, &mut self.err),
        };
        let chunk = &buf[..n];
        capture.push(chunk);
        self.recent.extend_from_slice(chunk);
        if self.recent.len() > 2 * PROGRESS_MAX_BYTES {
            let excess = self.recent.len() - PROGRESS_MAX_BYTES;
            self.recent.drain(..excess);
            self.recent_trimmed = true;
        }
        self.changed = true;
    }

    /// Sends the recent output as progress if anything arrived since the last
    /// update.
    fn report(&mut self) {
        if !self.changed {
            return;
        }
        self.changed = false;
        let start = self.recent.len().saturating_sub(PROGRESS_MAX_BYTES);
        let bytes = skip_partial_char(&self.recent[start..], start > 0 || self.recent_trimmed);
        self.progress
            .update(String::from_utf8_lossy(bytes).into_owned());
    }

    /// After the shell exited on its own: drain the pipes briefly, kill what
    /// is left of the group (background children holding the pipes open) and
    /// collect the remaining buffered output.
    async fn finish_after_exit(&mut self) {
        self.pump(Instant::now() + EXIT_DRAIN_WINDOW, None, Goal::Eof)
            .await;
        self.kill_group();
        self.pump(Instant::now() + KILLED_DRAIN_WINDOW, None, Goal::Eof)
            .await;
    }

    /// On timeout or cancellation: `SIGTERM` to the group, a grace period for
    /// the shell to exit, then `SIGKILL` to the group, reaping the shell and
    /// collecting the remaining buffered output.
    async fn terminate(&mut self) {
        let _ = killpg(self.pgid, Signal::SIGTERM);
        self.pump(Instant::now() + TERM_GRACE, None, Goal::Exit)
            .await;
        self.kill_group();
        self.pump(Instant::now() + KILL_WAIT, None, Goal::Exit)
            .await;
        self.pump(Instant::now() + KILLED_DRAIN_WINDOW, None, Goal::Eof)
            .await;
    }

    /// Sends `SIGKILL` to every process of the group. The group may already
    /// be empty (`ESRCH`, ignored). Its id cannot have been reused while any
    /// member lives, since the kernel keeps a pid allocated while it names a
    /// group.
    fn kill_group(&mut self) {
        if self.group_live {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            self.group_live = false;
        }
    }

    /// The result text: the streams, then `note`, then `status`.
    fn render(&self, note: Option<&str>, status: Option<&str>) -> String {
        render(&self.out, &self.err, note, status)
    }
}

impl Drop for Run {
    /// Kills the group if the call's future is dropped before finishing.
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Waits for `cancel` to fire; never completes without a token.
async fn cancelled(cancel: Option<&CancellationToken>) {
    match cancel {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Reads once from `pipe` into `buf`; never completes once the pipe is
/// closed.
async fn read_some<R>(pipe: &mut Option<R>, buf: &mut [u8]) -> io::Result<usize>
where
    R: AsyncReadExt + Unpin,
{
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Drops the UTF-8 continuation bytes (at most three) a cut left at the
/// start of `bytes`, when `cut` says the slice does not start the stream.
fn skip_partial_char(bytes: &[u8], cut: bool) -> &[u8] {
    if !cut {
        return bytes;
    }
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count();
    &bytes[skip..]
}

/// Where a stream's full output goes when it outgrows the kept tail:
/// `<temp_dir>/bash-<call id>-<stream>.log`, the id reduced to safe
/// characters.
fn spill_path(temp_dir: &Path, call_id: &str, stream: &str) -> PathBuf {
    let mut id: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if id.is_empty() {
        id.push_str("call");
    }
    temp_dir.join(format!("bash-{id}-{stream}.log"))
}

/// What one output stream delivered: its tail in memory and, once it
/// outgrew the tail, everything in a spill file written as it arrives.
#[derive(Debug)]
struct StreamCapture {
    /// `stdout` or `stderr`, for the notice.
    name: &'static str,
    /// The last bytes of the stream: at least the last
    /// [`BASH_STREAM_MAX_BYTES`], at most twice that.
    tail: Vec<u8>,
    /// Bytes delivered in all.
    total: u64,
    /// Where the full output goes once needed.
    spill_path: PathBuf,
    /// The open spill file while writing to it works.
    spill: Option<File>,
    /// Why the spill file could not be (fully) written, if it could not.
    spill_error: Option<String>,
}

impl StreamCapture {
    /// An empty capture for the stream `name`, spilling to `spill_path`.
    fn new(name: &'static str, spill_path: PathBuf) -> Self {
        Self {
            name,
            tail: Vec::new(),
            total: 0,
            spill_path,
            spill: None,
            spill_error: None,
        }
    }

    /// Whether the stream outgrew the kept tail.
    fn truncated(&self) -> bool {
        self.total > u64::try_from(BASH_STREAM_MAX_BYTES).unwrap_or(u64::MAX)
    }

    /// Adds a chunk of output. The first time the stream outgrows the tail
    /// the spill file is created and gets everything so far (the tail still
    /// holds all of it then); later chunks are appended as they arrive.
    /// Spill writes are small and local, so they are done synchronously.
    fn push(&mut self, chunk: &[u8]) {
        let was_truncated = self.truncated();
        self.total = self
            .total
            .saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
        if !was_truncated && self.truncated() {
            match self.open_spill() {
                Ok(file) => self.spill = Some(file),
                Err(e) => self.spill_error = Some(e.to_string()),
            }
        }
        if let Some(file) = &mut self.spill
            && let Err(e) = file.write_all(chunk)
        {
            self.spill_error = Some(e.to_string());
            self.spill = None;
        }
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > 2 * BASH_STREAM_MAX_BYTES {
            let excess = self.tail.len() - BASH_STREAM_MAX_BYTES;
            self.tail.drain(..excess);
        }
    }

    /// Creates the spill file (and its directory) holding the output so far.
    fn open_spill(&self) -> io::Result<File> {
        if let Some(dir) = self.spill_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = File::create(&self.spill_path)?;
        file.write_all(&self.tail)?;
        Ok(file)
    }

    /// The kept text: the last [`BASH_STREAM_MAX_BYTES`] decoded lossily,
    /// starting on a character boundary, and how many bytes it kept.
    fn kept(&self) -> (String, usize) {
        let start = self.tail.len().saturating_sub(BASH_STREAM_MAX_BYTES);
        let bytes = skip_partial_char(&self.tail[start..], self.truncated());
        (String::from_utf8_lossy(bytes).into_owned(), bytes.len())
    }

    /// The truncation notice, when the stream outgrew the tail.
    fn notice(&self, kept: usize) -> Option<String> {
        if !self.truncated() {
            return None;
        }
        let head = format!(
            "[{} truncated: kept last {kept} of {} bytes.",
            self.name, self.total
        );
        Some(match &self.spill_error {
            None => format!("{head} Full output: {}]", self.spill_path.display()),
            Some(e) => format!("{head} Full output could not be saved: {e}]"),
        })
    }
}

/// Builds result text from parts, with exactly one newline between them.
#[derive(Debug, Default)]
struct Text(String);

impl Text {
    /// Appends `part` on a new line; empty parts are skipped.
    fn part(&mut self, part: &str) {
        if part.is_empty() {
            return;
        }
        if !self.0.is_empty() && !self.0.ends_with('\n') {
            self.0.push('\n');
        }
        self.0.push_str(part);
    }
}

/// The result text (G11): stdout (after its truncation notice), then a
/// `--- stderr ---` section if stderr is non-empty, or `(no output)` when both
/// are empty and there is no status; then `note` and finally `status`.
fn render(
    out: &StreamCapture,
    err: &StreamCapture,
    note: Option<&str>,
    status: Option<&str>,
) -> String {
    let mut text = Text::default();
    let (out_text, out_kept) = out.kept();
    if let Some(notice) = out.notice(out_kept) {
        text.part(&notice);
    }
    text.part(&out_text);
    let (err_text, err_kept) = err.kept();
    let err_notice = err.notice(err_kept);
    if !err_text.is_empty() || err_notice.is_some() {
        text.part("--- stderr ---");
        if let Some(notice) = err_notice {
            text.part(&notice);
        }
        text.part(&err_text);
    }
    if text.0.is_empty() && status.is_none() {
        text.part("(no output)");
    }
    if let Some(note) = note {
        text.part(note);
    }
    if let Some(status) = status {
        text.part(status);
    }
    text.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant as StdInstant;
    use tempfile::TempDir;
    use tokio::sync::mpsc;

    /// A context for `dir` with a quiet progress sink and a fresh token.
    fn ctx(dir: &TempDir) -> ToolContext {
        ToolContext {
            call_id: "call/1".into(),
            cwd: dir.path().to_path_buf(),
            cancel: CancellationToken::new(),
            progress: ProgressSink::default(),
            temp_dir: dir.path().join("tmp"),
        }
    }

    /// Runs the tool with `args` in a fresh directory.
    async fn call(args: Value) -> Result<ToolOutput, ToolError> {
        let dir = TempDir::new().unwrap();
        BashTool::new(false).execute(args, ctx(&dir)).await
    }

    /// Runs `command` and expects success, returning the text.
    async fn ok(command: &str) -> String {
        call(json!({ "command": command })).await.unwrap().text
    }

    /// Whether `pid` is a live (non-zombie) process.
    fn alive(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => false,
            Ok(stat) => {
                let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                !state.starts_with('Z') && !state.starts_with('X')
            }
        }
    }

    /// Waits up to two seconds for `pid` to be gone.
    async fn gone(pid: u32) -> bool {
        for _ in 0..40 {
            if !alive(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// The pid printed on the first line of `text`.
    fn first_pid(text: &str) -> u32 {
        text.lines().next().unwrap().trim().parse().unwrap()
    }

    /// G11: stdout comes back verbatim.
    #[tokio::test]
    async fn echo_returns_stdout() {
        assert_eq!(ok("echo hello").await, "hello\n");
    }

    /// G11: runs in the call's working directory.
    #[tokio::test]
    async fn runs_in_cwd() {
        let dir = TempDir::new().unwrap();
        std::fs::write(dir.path().join("marker.txt"), "x").unwrap();
        let out = BashTool::new(false)
            .execute(json!({"command": "ls"}), ctx(&dir))
            .await
            .unwrap();
        assert_eq!(out.text, "marker.txt\n");
    }

    /// G11: no output and exit code 0 gives exactly `(no output)`.
    #[tokio::test]
    async fn no_output() {
        assert_eq!(ok("true").await, "(no output)");
    }

    /// G11: a non-zero exit is a success result ending in the exit-code line.
    #[tokio::test]
    async fn nonzero_exit_code_line() {
        assert_eq!(
            ok("echo out; exit 3").await,
            "out\nCommand exited with code 3"
        );
        assert_eq!(
            ok("printf out; exit 4").await,
            "out\nCommand exited with code 4"
        );
        assert_eq!(ok("exit 5").await, "Command exited with code 5");
    }

    /// G11: stderr follows stdout after a `--- stderr ---` line.
    #[tokio::test]
    async fn stderr_section() {
        assert_eq!(
            ok("echo out; echo err >&2").await,
            "out\n--- stderr ---\nerr\n"
        );
        assert_eq!(
            ok("echo oops >&2; exit 2").await,
            "--- stderr ---\noops\nCommand exited with code 2"
        );
    }

    /// G11: a shell killed by a signal says so.
    #[tokio::test]
    async fn killed_by_signal() {
        assert_eq!(ok("kill -KILL $$").await, "Command terminated by signal 9");
    }

    /// C16: on timeout the output so far is kept and the error ends with the
    /// exact timeout line.
    #[tokio::test]
    async fn timeout_message_keeps_output() {
        let start = StdInstant::now();
        let err = call(json!({"command": "echo before; sleep 5", "timeout": 1}))
            .await
            .unwrap_err();
        assert_eq!(err.0, "before\nCommand timed out after 1 seconds");
        assert!(start.elapsed() < Duration::from_secs(4));
    }

    /// C16: a command ignoring SIGTERM (and its child) still ends at the
    /// timeout, leaving no process behind.
    #[tokio::test]
    async fn timeout_kills_term_ignoring_tree() {
        let start = StdInstant::now();
        let err = call(json!({
            "command": "trap '' TERM; sleep 300 & echo $!; wait",
            "timeout": 1
        }))
        .await
        .unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(
            err.0.ends_with("\nCommand timed out after 1 seconds"),
            "{}",
            err.0
        );
        assert!(gone(first_pid(&err.0)).await);
    }

    /// C16: a background child holding stdout open neither delays the result
    /// nor survives it.
    #[tokio::test]
    async fn background_child_does_not_hang() {
        let start = StdInstant::now();
        let text = ok("sleep 300 & echo $!; echo started").await;
        assert!(start.elapsed() < Duration::from_secs(2));
        assert!(text.ends_with("\nstarted\n"), "{text}");
        assert!(gone(first_pid(&text)).await);
    }

    /// C16: cancellation returns `Operation aborted` promptly and kills the
    /// process tree.
    #[tokio::test]
    async fn cancel_aborts_and_kills_tree() {
        let dir = TempDir::new().unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut context = ctx(&dir);
        context.progress = ProgressSink::new("call/1", tx);
        let token = context.cancel.clone();
        let start = std::sync::Arc::new(std::sync::Mutex::new(None));
        let cancelled_at = start.clone();
        // Cancel once the command has printed its child's pid, however long
        // the login shell took to start.
        tokio::spawn(async move {
            let _ = rx.recv().await;
            *cancelled_at.lock().unwrap() = Some(StdInstant::now());
            token.cancel();
        });
        let err = BashTool::new(false)
            .execute(json!({"command": "sleep 300 & echo $!; wait"}), context)
            .await
            .unwrap_err();
        let cancelled_at = start.lock().unwrap().unwrap();
        assert!(cancelled_at.elapsed() < Duration::from_secs(2));
        assert!(err.0.ends_with("\nOperation aborted"), "{}", err.0);
        assert!(gone(first_pid(&err.0)).await);
    }

    /// C16: a call cancelled before it starts runs nothing.
    #[tokio::test]
    async fn cancelled_before_start() {
        let dir = TempDir::new().unwrap();
        let context = ctx(&dir);
        context.cancel.cancel();
        let err = BashTool::new(false)
            .execute(json!({"command": "touch ran"}), context)
            .await
            .unwrap_err();
        assert_eq!(err.0, "Operation aborted");
        assert!(!dir.path().join("ran").exists());
    }

    /// G10: a long stdout keeps its last 65536 bytes, with a notice pointing
    /// at a file holding all of it.
    #[tokio::test]
    async fn stdout_truncation_spills_full_output() {
        let dir = TempDir::new().unwrap();
        let out = BashTool::new(false)
            .execute(
                json!({"command": "head -c 200000 /dev/zero | tr '\\0' a"}),
                ctx(&dir),
            )
            .await
            .unwrap()
            .text;
        let path = dir.path().join("tmp").join("bash-call_1-stdout.log");
        let notice = format!(
            "[stdout truncated: kept last 65536 of 200000 bytes. Full output: {}]",
            path.display()
        );
        assert_eq!(out, format!("{notice}\n{}", "a".repeat(65_536)));
        assert_eq!(std::fs::read(&path).unwrap(), vec![b'a'; 200_000]);
    }

    /// G10: a long stderr is truncated the same way, inside its section.
    #[tokio::test]
    async fn stderr_truncation() {
        let dir = TempDir::new().unwrap();
        let out = BashTool::new(false)
            .execute(
                json!({"command": "echo hi; head -c 70000 /dev/zero | tr '\\0' b >&2"}),
                ctx(&dir),
            )
            .await
            .unwrap()
            .text;
        let path = dir.path().join("tmp").join("bash-call_1-stderr.log");
        let expected = format!(
            "hi\n--- stderr ---\n[stderr truncated: kept last 65536 of 70000 bytes. Full output: {}]\n{}",
            path.display(),
            "b".repeat(65_536)
        );
        assert_eq!(out, expected);
        assert_eq!(std::fs::read(&path).unwrap().len(), 70_000);
    }

    /// G10: the kept tail starts on a character boundary.
    #[test]
    fn tail_cut_on_char_boundary() {
        let dir = TempDir::new().unwrap();
        let mut capture = StreamCapture::new("stdout", dir.path().join("s.log"));
        let text = format!("{}a", "é".repeat(40_000));
        for chunk in text.as_bytes().chunks(7000) {
            capture.push(chunk);
        }
        let (kept, n) = capture.kept();
        assert_eq!(n, 65_535);
        assert_eq!(kept, format!("{}a", "é".repeat(32_767)));
        assert!(
            capture
                .notice(n)
                .unwrap()
                .contains("kept last 65535 of 80001 bytes.")
        );
        assert_eq!(
            std::fs::read(dir.path().join("s.log")).unwrap(),
            text.as_bytes()
        );
    }

    /// G18: credential variables are removed unless inherited.
    #[test]
    fn child_env_scrubs_credentials() {
        let vars = || {
            [
                "OPENAI_API_KEY",
                "OPENROUTER_API_KEY",
                "CODEX_ACCESS_TOKEN",
                "ANTHROPIC_API_KEY",
                "HOME",
            ]
            .map(|k| (OsString::from(k), OsString::from("v")))
        };
        let scrubbed = child_env(vars(), false);
        assert_eq!(
            scrubbed,
            vec![(OsString::from("HOME"), OsString::from("v"))]
        );
        assert_eq!(child_env(vars(), true).len(), 5);
    }

    /// G18: the command really sees the scrubbed environment.
    #[tokio::test]
    async fn command_sees_scrubbed_env() {
        let dir = TempDir::new().unwrap();
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !CREDENTIAL_VARS.iter().any(|c| k == *c))
            .collect();
        vars.push(("OPENAI_API_KEY".into(), "sk-test".into()));
        vars.push(("ETCH_KEEP".into(), "kept".into()));
        let command = "echo \"${OPENAI_API_KEY:-unset} $ETCH_KEEP\"";
        let out = run_command(command, 5, None, child_env(vars.clone(), false), &ctx(&dir))
            .await
            .unwrap();
        assert_eq!(out.text, "unset kept\n");
        let out = run_command(command, 5, None, child_env(vars, true), &ctx(&dir))
            .await
            .unwrap();
        assert_eq!(out.text, "sk-test kept\n");
    }

    /// C16: a timeout below 1 fails schema validation.
    #[tokio::test]
    async fn timeout_zero_rejected() {
        for bad in [json!(0), json!(-5)] {
            let err = call(json!({"command": "echo hi", "timeout": bad}))
                .await
                .unwrap_err();
            assert!(
                err.0.starts_with("Validation failed for tool \"bash\""),
                "{}",
                err.0
            );
            assert!(err.0.contains("must be >= 1"), "{}", err.0);
        }
    }

    /// C16: an empty command fails schema validation.
    #[tokio::test]
    async fn empty_command_rejected() {
        let err = call(json!({"command": ""})).await.unwrap_err();
        assert!(
            err.0.contains("must have at least 1 characters"),
            "{}",
            err.0
        );
    }

    /// C16: a timeout above 120 is clamped and the result says so.
    #[tokio::test]
    async fn timeout_clamped_note() {
        let out = call(json!({"command": "echo hi", "timeout": 500}))
            .await
            .unwrap();
        assert_eq!(
            out.text,
            "hi\n[timeout 500 exceeds the maximum; clamped to 120 seconds]"
        );
        assert_eq!(effective_timeout(&Number::from(120)), (120, false));
        let float = Number::from_f64(60.0).unwrap();
        assert_eq!(effective_timeout(&float), (60, false));
        let big = Number::from_f64(1e30).unwrap();
        assert_eq!(effective_timeout(&big), (120, true));
    }

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

    /// C16: the spill file name keeps only safe characters of the call id.
    #[test]
    fn spill_path_sanitized() {
        let dir = Path::new("/t");
        assert_eq!(
            spill_path(dir, "a/../b c", "stdout"),
            dir.join("bash-a____b_c-stdout.log")
        );
        assert_eq!(
            spill_path(dir, "", "stderr"),
            dir.join("bash-call-stderr.log")
        );
    }

    /// E-LOOP-09: bash is a scheduling barrier.
    #[test]
    fn access_is_barrier() {
        let tool = BashTool::new(false);
        assert_eq!(tool.spec().name, "bash");
        assert!(matches!(
            tool.access(&json!({"command": "ls"}), Path::new("/")),
            Access::Barrier
        ));
    }
}
