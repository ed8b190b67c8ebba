//! Talking to one plugin process (E-PLUG-05..08, E-PLUG-12..15): one
//! request at a time through a lane (E-LOOP-11: a process is never
//! entered concurrently), string ids, a deadline on every request, and
//! every protocol violation fatal: a timeout, malformed JSON, a response
//! without an id or with another request's id, a closed pipe, EOF. A
//! fatal failure kills the process group and leaves the client stopped,
//! saying why; an `error` answer is the request's ordinary failure.

use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etch_protocol::plugin::{
    INITIALIZE, InitializeParams, PROTOCOL_VERSION, PluginRequest, PluginResponse,
};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::MAX_FRAME;
use crate::error::PluginError;
use crate::process::{Frame, Process, spawn};

/// A running plugin.
pub struct Client {
    /// Its configured name.
    name: String,
    /// Deadline of start-up and of each request.
    timeout: Duration,
    /// The process, while running; holding the lock is holding the lane.
    lane: tokio::sync::Mutex<Option<Process>>,
    /// Why it stopped, once it did.
    stopped: Mutex<Option<String>>,
    /// Its process group, to kill it without waiting for the lane.
    group: Option<Pid>,
    /// The next request id.
    next_id: AtomicU64,
}

impl Client {
    /// Starts the plugin and initializes it. Its tools come back as sent,
    /// each to be checked on its own (one bad tool must not cost the
    /// others).
    pub async fn start(
        name: &str,
        command: &str,
        cwd: &Path,
        env: &[(OsString, OsString)],
        timeout: Duration,
    ) -> Result<(Arc<Self>, Vec<Value>), PluginError> {
        let process = spawn(command, cwd, env).map_err(|e| PluginError::Spawn {
            plugin: name.to_owned(),
            why: e.to_string(),
        })?;
        let group = process
            .child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let client = Arc::new(Self {
            name: name.to_owned(),
            timeout,
            lane: tokio::sync::Mutex::new(Some(process)),
            stopped: Mutex::new(None),
            group,
            next_id: AtomicU64::new(1),
        });
        let params = serde_json::to_value(InitializeParams {
            protocol_version: PROTOCOL_VERSION.to_owned(),
        })
        .unwrap_or(Value::Null);
        let result = match Arc::clone(&client).call(INITIALIZE, params).await {
            Ok(result) => result,
            Err(PluginError::Answered(message)) => {
                let why = format!("it refused initialize: {message}");
                client.fail(&why).await;
                return Err(PluginError::Fatal {
                    plugin: name.to_owned(),
                    why,
                });
            }
            Err(err) => return Err(err),
        };
        if let Some(Value::Array(tools)) = result.get("tools").cloned() {
            return Ok((client, tools));
        }
        let why = "its initialize result has no \"tools\" list ({\"name\": …, \"tools\": [...]})"
            .to_owned();
        client.fail(&why).await;
        Err(PluginError::Fatal {
            plugin: name.to_owned(),
            why,
        })
    }

    /// Its configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it is running.
    pub fn alive(&self) -> bool {
        self.stopped.lock().is_ok_and(|s| s.is_none())
    }

    /// Why it stopped, if it did.
    pub fn stopped_why(&self) -> Option<String> {
        self.stopped.lock().ok().and_then(|s| s.clone())
    }

    /// Sends one request and waits for its answer (in the lane).
    pub async fn call(self: Arc<Self>, method: &str, params: Value) -> Result<Value, PluginError> {
        let mut lane = self.lane.lock().await;
        if !self.alive() {
            // Stopped while this call queued: it must not reach the process.
            if let Some(mut process) = lane.take() {
                process.kill();
            }
            return Err(self.stopped_error());
        }
        let Some(process) = lane.as_mut() else {
            return Err(self.stopped_error());
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        let request = PluginRequest {
            id: id.clone(),
            method: method.to_owned(),
            params,
        };
        let mut encoded = serde_json::to_vec(&request).unwrap_or_default();
        encoded.push(b'\n');
        let answer = match exchange(process, &encoded, &id, method, self.timeout).await {
            Ok(answer) => answer,
            Err(why) => {
                let why = self.explain(process, why).await;
                process.kill();
                *lane = None;
                return Err(self.set_stopped(why));
            }
        };
        match (answer.result, answer.error) {
            (_, Some(error)) if error.fatal => {
                process.kill();
                *lane = None;
                Err(self.set_stopped(error.message))
            }
            (_, Some(error)) => Err(PluginError::Answered(error.message)),
            (Some(result), None) => Ok(result),
            (None, None) => {
                process.kill();
                *lane = None;
                Err(self.set_stopped(format!(
                    "its answer to {method} has neither \"result\" nor \"error\""
                )))
            }
        }
    }

    /// Stops it: politely (stdin closed, `grace` to exit, SIGTERM, then
    /// SIGKILL) when no request is in flight, at once otherwise.
    pub async fn stop(&self, grace: Duration) {
        self.mark_stopped("etch shut it down");
        match self.lane.try_lock() {
            Ok(mut lane) => {
                if let Some(mut process) = lane.take() {
                    process.stop(grace).await;
                }
            }
            Err(_) => self.kill_group(),
        }
    }

    /// Stops it at once, without a word to it (etch is shutting down).
    pub(crate) fn abandon(&self) {
        self.mark_stopped("etch shut it down");
        self.kill_group();
    }

    /// Kills its process group now.
    pub fn kill_group(&self) {
        if let Some(pgid) = self.group {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }

    /// Stops it after a failure found outside a request (an answer that
    /// broke the protocol only once read), recording why.
    pub(crate) async fn fail(&self, why: &str) {
        self.mark_stopped(why);
        // Now, not once the lane is free: calls may be queued behind.
        self.kill_group();
        if let Some(mut process) = self.lane.lock().await.take() {
            process.kill();
        }
    }

    /// Records why it stopped (the first reason wins).
    fn mark_stopped(&self, why: &str) {
        if let Ok(mut stopped) = self.stopped.lock()
            && stopped.is_none()
        {
            *stopped = Some(why.to_owned());
        }
    }

    /// Records a fatal failure and returns its error.
    fn set_stopped(&self, why: String) -> PluginError {
        self.mark_stopped(&why);
        PluginError::Fatal {
            plugin: self.name.clone(),
            why,
        }
    }

    /// The error for a request to a stopped plugin.
    fn stopped_error(&self) -> PluginError {
        PluginError::Stopped {
            plugin: self.name.clone(),
            why: self.stopped_why().unwrap_or_else(|| "unknown".to_owned()),
        }
    }

    /// `why`, with how the process exited and its last stderr line.
    async fn explain(&self, process: &mut Process, why: String) -> String {
        let mut out = why;
        if out.contains("closed its stdout") {
            // Closed stdout usually means it is exiting: give it a moment,
            // so the message can say how.
            let _ = tokio::time::timeout(Duration::from_millis(200), process.child.wait()).await;
        }
        if let Some(status) = process.exit_status() {
            out = format!("{out}; it {status}");
        }
        if let Some(line) = process.last_stderr() {
            out = format!("{out}; its last stderr line: {line}");
        }
        if self.timeout.as_secs() > 0 && out.contains("did not answer") {
            out.push_str("; raise timeout_seconds if it needs longer");
        }
        out
    }
}

/// Writes `line` and reads the answer to request `id`; `Err` is why the
/// exchange broke the protocol.
async fn exchange(
    process: &mut Process,
    line: &[u8],
    id: &str,
    method: &str,
    timeout: Duration,
) -> Result<PluginResponse, String> {
    let now = tokio::time::Instant::now();
    // A huge timeout_seconds means "no deadline", not an overflow.
    let deadline = now
        .checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365));
    let Some(stdin) = process.stdin.as_mut() else {
        return Err("its stdin is closed".to_owned());
    };
    let write = async {
        stdin.write_all(line).await?;
        stdin.flush().await
    };
    match tokio::time::timeout_at(deadline, write).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => {
            return Err(format!(
                "could not send {method} ({err}): it closed its stdin"
            ));
        }
        Err(_) => {
            return Err(format!(
                "did not read {method} within {} s",
                timeout.as_secs()
            ));
        }
    }
    loop {
        let frame = match tokio::time::timeout_at(deadline, process.frames.recv()).await {
            Err(_) => {
                return Err(format!(
                    "did not answer {method} within {} s and was killed with its process group",
                    timeout.as_secs()
                ));
            }
            Ok(frame) => frame.unwrap_or(Frame::Eof),
        };
        let text = match frame {
            Frame::Eof => return Err(format!("closed its stdout before answering {method}")),
            Frame::TooLong => {
                return Err(format!(
                    "sent a line over {} MiB (a protocol frame is one JSON line)",
                    MAX_FRAME >> 20
                ));
            }
            Frame::Line(text) => text,
        };
        if let Some(answer) = answer_of(&text, id, method)? {
            return Ok(answer);
        }
    }
}

/// What one stdout line of a plugin says in answer to request `id`
/// (`method`): `None` for a blank line, which is skipped; an error for
/// anything but the response to that request.
pub(crate) fn answer_of(
    text: &str,
    id: &str,
    method: &str,
) -> Result<Option<PluginResponse>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let answer: PluginResponse = match serde_json::from_str::<Value>(text) {
        // serde's message quotes what it met (a field's name, a value):
        // cut and escaped like the line itself.
        Ok(value @ Value::Object(_)) => serde_json::from_value(value).map_err(|e| {
            format!(
                "sent a response etch cannot read: {}",
                shown(&e.to_string())
            )
        })?,
        Ok(_) => return Err(format!("sent JSON that is not an object: {}", shown(text))),
        Err(_) => {
            return Err(format!(
                "wrote something that is not JSON to stdout: {} (stdout carries the protocol; logs go to stderr)",
                shown(text)
            ));
        }
    };
    match answer.id.as_deref() {
        None => Err(format!("answered {method} without an id")),
        Some(got) if got != id => Err(format!(
            "answered request {} when request {id} ({method}) was waiting",
            shown_id(got)
        )),
        Some(_) => Ok(Some(answer)),
    }
}

/// The start of a line, for a message: quoted with its control
/// characters escaped, and cut after escaping, so no line makes a long
/// or multi-line message.
fn shown(text: &str) -> String {
    let escaped = format!("{text:?}");
    let cut: String = escaped.chars().take(100).collect();
    if cut.len() < escaped.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// A request id as a plugin gave it: as is when short and plain, else
/// [`shown`].
fn shown_id(id: &str) -> String {
    if id.len() <= 64 && id.chars().all(|c| c.is_ascii_graphic()) {
        id.to_owned()
    } else {
        shown(id)
    }
}
