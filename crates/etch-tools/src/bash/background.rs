//! `bash` with `background: true`: the command starts as a background
//! process of the session (`etch-process`), with the same environment,
//! scrubbing and sandbox as any `bash` call and no timeout, and the call
//! returns at once with its id. The start is logged (`process.started`)
//! before the call's result.
//!
//! This module must not know how processes are kept or stopped.

use std::ffi::OsString;

use etch_process::{Processes, Start};
use etch_sandbox::Launcher;
use etch_tool::{ToolContext, ToolError, ToolOutput};
use serde_json::json;

/// Starts `script` (the command line `command` as the shell gets it) in
/// the background of the call's session.
pub(super) fn start(
    processes: Option<&Processes>,
    command: &str,
    script: &str,
    env: Vec<(OsString, OsString)>,
    sandbox: Option<&Launcher>,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let Some(processes) = processes.filter(|_| !ctx.origin.session_id.is_empty()) else {
        return Err(ToolError::new(
            "background processes need a session; run the command without background",
        ));
    };
    let (program, args) = match sandbox {
        Some(launcher) => launcher.wrap("bash", &["-lc", script]),
        None => ("bash".into(), vec!["-lc".into(), script.into()]),
    };
    let table = processes.table(&ctx.origin.session_id, &ctx.temp_dir);
    let (id, pid) = table
        .start(Start {
            command: command.to_owned(),
            program,
            args,
            cwd: ctx.cwd.clone(),
            env,
        })
        .map_err(|e| ToolError::new(e.to_string()))?;
    ctx.progress.record(
        "process.started",
        json!({"processId": id, "pid": pid, "command": command, "toolCallId": ctx.call_id}),
    );
    Ok(ToolOutput::text(format!(
        "started process {id} (pid {pid}): {command}; its output will be shown to you as it \
         arrives; use the process tool to read, wait for or stop it"
    )))
}
