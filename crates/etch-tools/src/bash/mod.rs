//! The `bash` tool: runs one shell command and reports what it printed (C16,
//! G11, G18).
//!
//! This module owns the tool itself: its model-facing spec, its arguments
//! (the timeout, its default and its clamp to the maximum) and the public
//! [`BashTool`] API. The life of the command is split by job:
//!
//! - `env`: the environment the command sees, minus provider credentials,
//!   and the `unset` that removes them again after the login files ran.
//! - `process`: spawning `bash -lc` in its own process group, the timeout,
//!   cancellation and the group kill.
//! - `capture`: each stream's kept tail and its spill file, capped.
//! - `progress`: throttled progress updates while the command runs.
//! - `render`: the result text.
//! - `background`: `background: true`, a process started in the
//!   session's table (`etch-process`) and left running.
//!
//! This module must not know about the agent loop, sessions, providers or how
//! results are displayed; it only produces the result text.

mod background;
mod capture;
mod env;
mod process;
mod progress;
mod render;

use std::path::Path;
use std::sync::Arc;

use etch_sandbox::Launcher;

use etch_model::ToolSpec;
use etch_tool::{Access, Tool, ToolContext, ToolFuture};
use serde::Deserialize;
use serde_json::{Number, Value, json};

use crate::args;
use crate::limits::{
    BASH_DEFAULT_MAX_SPILL_BYTES, BASH_DEFAULT_TIMEOUT_SECS, BASH_MAX_TIMEOUT_SECS,
};

/// Description shown to the model.
const DESCRIPTION: &str = "Run a shell command (`bash -lc`) in the working directory. The result \
is stdout, then stderr after a `--- stderr ---` line, then `Command exited with code N` when it \
is not 0. stdin is closed: pass non-interactive flags. Timeout 30 seconds by default, at most \
120. Background processes are killed when the command returns. To look at files prefer read, \
grep, find and ls.";

/// What the model is told about `background`.
const BACKGROUND_DESCRIPTION: &str = "Start it in the background and return at once (servers, \
watchers, long runs): no timeout; its output is shown to you as it arrives; the process tool \
reads, waits for, writes to or stops it. Do not add &.";

/// The `bash` tool.
#[derive(Debug, Clone)]
pub struct BashTool {
    /// Name, description and schema shown to the model.
    spec: ToolSpec,
    /// Whether commands see the provider credential variables (G18).
    inherit_credentials: bool,
    /// Most bytes of one stream kept in its spill file (E-CFG-25).
    max_spill_bytes: u64,
    /// The sandbox commands run in; `None`: unconfined.
    sandbox: Option<Arc<Launcher>>,
    /// The sessions' background processes; `None`: no `background`.
    processes: Option<Arc<etch_process::Processes>>,
}

/// What the model is told about leaving the sandbox.
const BYPASS_DESCRIPTION: &str = "Run this command outside the sandbox (writes anywhere, the \
network, git commits). Only when the sandbox blocked it and it is needed; the user must approve \
every such call, so give the reason in justification.";

impl BashTool {
    /// A `bash` tool; `inherit_credentials` keeps the provider credential
    /// variables in the command's environment instead of removing them.
    pub fn new(inherit_credentials: bool) -> Self {
        Self {
            spec: args::spec("bash", DESCRIPTION, schema(false, false)),
            inherit_credentials,
            max_spill_bytes: BASH_DEFAULT_MAX_SPILL_BYTES,
            sandbox: None,
            processes: None,
        }
    }

    /// Runs commands confined by `sandbox` (when it is on), and offers
    /// the model `bypass_sandbox` and `justification`.
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: Option<Arc<Launcher>>) -> Self {
        self.sandbox = sandbox.filter(|s| s.is_on());
        self.respec();
        self
    }

    /// Starts commands asking for `background` in the session's table of
    /// `processes`, and offers the model `background`.
    #[must_use]
    pub fn with_processes(mut self, processes: Option<Arc<etch_process::Processes>>) -> Self {
        self.processes = processes;
        self.respec();
        self
    }

    /// The spec for the options in force.
    fn respec(&mut self) {
        let description = self.spec.description.clone();
        self.spec = args::spec(
            "bash",
            &description,
            schema(self.sandbox.is_some(), self.processes.is_some()),
        );
    }

    /// Keeps at most `bytes` (the last ones, at least 1) of each output
    /// stream in its spill file instead of the default 64 MiB.
    #[must_use]
    pub fn with_max_spill_bytes(mut self, bytes: u64) -> Self {
        self.max_spill_bytes = bytes.max(1);
        self
    }
}

/// The argument schema; `bypass` adds the fields that ask to leave the
/// sandbox, `background` the one that starts a background process.
fn schema(bypass: bool, background: bool) -> Value {
    let mut schema = json!({
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
    if background && let Some(properties) = schema["properties"].as_object_mut() {
        properties.insert(
            "background".into(),
            json!({"type": "boolean", "description": BACKGROUND_DESCRIPTION}),
        );
    }
    if bypass && let Some(properties) = schema["properties"].as_object_mut() {
        properties.insert(
            "bypass_sandbox".into(),
            json!({"type": "boolean", "description": BYPASS_DESCRIPTION}),
        );
        properties.insert(
            "justification".into(),
            json!({"type": "string", "description": "Why the command must run outside the sandbox, shown to the user"}),
        );
    }
    schema
}

/// Arguments of a `bash` call.
#[derive(Debug, Deserialize)]
struct BashArgs {
    /// The command line handed to `bash -lc`.
    command: String,
    /// Requested timeout in seconds; a number so that an integral float
    /// (`60.0`), which the schema accepts as an integer, also works.
    timeout: Option<Number>,
    /// Whether to run outside the sandbox (needs an approved call).
    #[serde(default)]
    bypass_sandbox: bool,
    /// Whether to start it as a background process.
    #[serde(default)]
    background: bool,
}

/// The error of a call asking to leave the sandbox that no one approved.
pub const BYPASS_UNAPPROVED: &str = "running a command outside the sandbox needs the user's \
approval, and this call was not approved; run it inside the sandbox, or ask the user";

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
            let sandbox = match (&self.sandbox, args.bypass_sandbox) {
                (Some(_), true) if !ctx.approved => {
                    return Err(etch_tool::ToolError::new(BYPASS_UNAPPROVED));
                }
                (Some(_), true) | (None, _) => None,
                (Some(sandbox), false) => Some(sandbox.as_ref()),
            };
            let env = env::child_env(std::env::vars_os(), self.inherit_credentials);
            let script = env::script(&args.command, self.inherit_credentials);
            if args.background {
                return background::start(
                    self.processes.as_deref(),
                    &args.command,
                    &script,
                    env,
                    sandbox,
                    &ctx,
                );
            }
            process::run_command(
                &script,
                timeout,
                note.as_deref(),
                env,
                self.max_spill_bytes,
                sandbox,
                &ctx,
            )
            .await
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

#[cfg(test)]
mod testutil {
    //! Helpers shared by the unit tests of the `bash` submodules.

    use etch_tool::{ProgressSink, Tool, ToolContext, ToolError, ToolOutput};
    use serde_json::{Value, json};
    use tempfile::TempDir;
    use tokio_util::sync::CancellationToken;

    use super::BashTool;

    /// A context for `dir` with a quiet progress sink and a fresh token.
    pub(super) fn ctx(dir: &TempDir) -> ToolContext {
        ToolContext {
            call_id: "call/1".into(),
            cwd: dir.path().to_path_buf(),
            cancel: CancellationToken::new(),
            progress: ProgressSink::default(),
            temp_dir: dir.path().join("tmp"),
            origin: etch_tool::CallOrigin::default(),
            approved: false,
        }
    }

    /// Runs the tool with `args` in a fresh directory.
    pub(super) async fn call(args: Value) -> Result<ToolOutput, ToolError> {
        let dir = TempDir::new().unwrap();
        BashTool::new(false).execute(args, ctx(&dir)).await
    }

    /// Runs `command` and expects success, returning the text.
    pub(super) async fn ok(command: &str) -> String {
        call(json!({ "command": command })).await.unwrap().text
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::{call, ctx, ok};
    use super::*;
    use tempfile::TempDir;

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
