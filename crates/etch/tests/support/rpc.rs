//! A small client for `etch rpc`: starts the real binary in a workspace,
//! writes command lines to its stdin and reads its output lines on a
//! thread, so a test can wait for a given response or event (with a
//! generous deadline that fails the test instead of hanging it).

#![allow(clippy::panic, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::Workspace;

/// How long to wait for one line before failing the test.
const DEADLINE: Duration = Duration::from_secs(60);

/// A running `etch rpc`.
pub struct RpcClient {
    /// The process.
    child: Child,
    /// Its stdin, until closed.
    stdin: Option<ChildStdin>,
    /// Output lines, parsed.
    lines: mpsc::Receiver<Value>,
    /// Every line read so far, in order.
    pub seen: Vec<Value>,
    /// Its stderr, collected at the end.
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl RpcClient {
    /// Starts `etch rpc ARGS` in `ws` with extra environment variables.
    pub fn start(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_command(ws, "rpc", args, env)
    }

    /// Starts `etch COMMAND ARGS` (`rpc`, `acp`: a JSON-lines server) in
    /// `ws` with extra environment variables, reading its lines.
    pub fn start_command(
        ws: &Workspace,
        command: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let mut client = Self::spawn(ws, command, args, env);
        let stdout = client.child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("etch rpc wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        client.lines = lines;
        client
    }

    /// Starts `etch rpc ARGS` without reading its stdout (a client that
    /// stopped reading: the pipe stays open and fills up); stderr is
    /// collected.
    pub fn start_unread(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::spawn(ws, "rpc", args, env)
    }

    /// Starts `etch COMMAND ARGS` with its pipes, reading nothing yet.
    fn spawn(ws: &Workspace, command: &str, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = ws.command(&[&[command], args].concat());
        for (key, value) in env {
            cmd.env(key, value);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines: mpsc::channel().1,
            seen: Vec::new(),
            stderr: Some(stderr),
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one command.
    pub fn send(&mut self, command: &Value) {
        let mut line = command.to_string();
        line.push('\n');
        self.send_raw(line.as_bytes());
    }

    /// Writes raw bytes to stdin.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is closed");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// The next output line.
    pub fn next(&mut self) -> Value {
        match self.lines.recv_timeout(DEADLINE) {
            Ok(value) => {
                self.seen.push(value.clone());
                value
            }
            Err(e) => panic!(
                "no output line from etch rpc within {DEADLINE:?} ({e}); seen so far: {:#?}",
                self.seen
            ),
        }
    }

    /// Reads until a line matches `pred` and returns it.
    pub fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let value = self.next();
            if pred(&value) {
                return value;
            }
        }
    }

    /// Reads until the response to command `id`.
    pub fn response(&mut self, id: &str) -> Value {
        self.until(|v| v["type"] == "response" && v["id"] == id)
    }

    /// Sends `command` (which must have an id) and returns its response.
    pub fn call(&mut self, command: &Value) -> Value {
        self.send(command);
        let id = command["id"].as_str().unwrap().to_owned();
        self.response(&id)
    }

    /// Reads until an event of type `kind`.
    pub fn event(&mut self, kind: &str) -> Value {
        self.until(|v| v["type"] == kind)
    }

    /// Closes stdin, reads the remaining output and waits for the exit.
    pub fn finish(mut self) -> (ExitStatus, String, Vec<Value>) {
        self.stdin = None;
        let mut rest = Vec::new();
        while let Ok(value) = self.lines.recv_timeout(DEADLINE) {
            rest.push(value);
        }
        let status = self.exit_status();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (status, stderr, rest)
    }

    /// Waits for the process to exit on its own (stdin left open).
    pub fn wait_exit(mut self) -> (ExitStatus, String) {
        let status = self.exit_status();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (status, stderr)
    }

    /// The exit status, waiting up to the deadline; a process that does
    /// not exit by then is killed and fails the test (an exit that hangs
    /// must not hang the suite).
    fn exit_status(&mut self) -> ExitStatus {
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > DEADLINE {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "etch rpc did not exit within {DEADLINE:?}; seen: {:#?}",
                    self.seen
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for RpcClient {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
