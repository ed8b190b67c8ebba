//! The `process` tool: the model's hold on the background processes it
//! started with `bash` (`background: true`): `list` them, read their
//! `output` (waiting up to 30 s for some), `write` to their stdin, `kill`
//! a whole process group, `dismiss` one that ended. Offered beside
//! `bash` when the session has background processes at all.
//!
//! This module must not know how processes are kept; it words what the
//! session's table (`etch-process`) answers.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use etch_model::ToolSpec;
use etch_process::{Processes, State, Stop, Table};
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::args;

/// The tool's name.
pub const NAME: &str = "process";

/// How long a `write` waits for a process that does not read.
const WRITE_WAIT: Duration = Duration::from_secs(10);

/// The longest `wait_ms`.
const MAX_WAIT_MS: u64 = 30_000;

/// Description shown to the model.
const DESCRIPTION: &str = "Manage background processes started with bash background=true. \
list: every process with its state. output: what it printed since you last saw (wait_ms waits \
up to 30000 for more; offset reads from a byte offset). write: text to its stdin. kill: stop \
the whole process group (signal term, the default, or kill). dismiss: forget one that ended. \
New output also reaches you by itself before each of your turns.";

/// The `process` tool.
pub struct ProcessTool {
    /// Name, description and schema.
    spec: ToolSpec,
    /// The sessions' processes.
    processes: Arc<Processes>,
}

impl ProcessTool {
    /// The tool over `processes`.
    pub fn new(processes: Arc<Processes>) -> Self {
        Self {
            spec: args::spec(
                NAME,
                DESCRIPTION,
                json!({
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["list", "output", "write", "kill", "dismiss"]},
                        "id": {"type": "string", "description": "The process id, such as p1 (all but list)"},
                        "wait_ms": {"type": "integer", "minimum": 0, "description": "output: wait this long for new output or the end, at most 30000"},
                        "offset": {"type": "integer", "minimum": 0, "description": "output: read from this byte offset instead of where you stopped"},
                        "text": {"type": "string", "description": "write: the text for stdin (add \\n to end a line)"},
                        "signal": {"type": "string", "enum": ["term", "kill"], "description": "kill: term (the default; kill follows after 2 s) or kill"}
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }),
            ),
            processes,
        }
    }
}

/// Arguments of a call.
#[derive(Debug, Deserialize)]
struct ProcessArgs {
    /// What to do.
    action: String,
    /// Which process.
    id: Option<String>,
    /// How long `output` waits.
    wait_ms: Option<u64>,
    /// Where `output` reads from.
    offset: Option<u64>,
    /// What `write` writes.
    text: Option<String>,
    /// How `kill` stops.
    signal: Option<String>,
}

impl Tool for ProcessTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self, _args: &Value, _cwd: &Path) -> Access {
        Access::Barrier
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let args: ProcessArgs = args::parse(&self.spec, args)?;
            if ctx.origin.session_id.is_empty() {
                return Err(ToolError::new("background processes need a session"));
            }
            let table = self.processes.table(&ctx.origin.session_id, &ctx.temp_dir);
            let fail = |e: etch_process::ProcessError| ToolError::new(e.to_string());
            let id = || {
                args.id.clone().ok_or_else(|| {
                    ToolError::new(format!("{} needs the process id (id)", args.action))
                })
            };
            let text = match args.action.as_str() {
                "list" => list(&table),
                "output" => {
                    let wait = Duration::from_millis(args.wait_ms.unwrap_or(0).min(MAX_WAIT_MS));
                    let id = id()?;
                    let read = tokio::select! {
                        read = table.output(&id, wait, args.offset) => read.map_err(fail)?,
                        () = ctx.cancel.cancelled() => return Err(ToolError::new("Operation aborted")),
                    };
                    let mut text = String::new();
                    if read.skipped > 0 {
                        let whole = read
                            .spill
                            .map(|p| format!("; the start is in {}", p.display()))
                            .unwrap_or_default();
                        let _ = writeln!(
                            text,
                            "[{} earlier bytes are not kept in memory{whole}]",
                            read.skipped
                        );
                    }
                    text.push_str(&read.text);
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    let _ = write!(
                        text,
                        "[{id} {}; next offset {}]",
                        read.state.describe(),
                        read.next
                    );
                    text
                }
                "write" => {
                    let id = id()?;
                    let input = args
                        .text
                        .clone()
                        .ok_or_else(|| ToolError::new("write needs the text"))?;
                    tokio::select! {
                        written = table.write(&id, &input) => written.map_err(fail)?,
                        () = ctx.cancel.cancelled() => return Err(ToolError::new("Operation aborted")),
                        () = tokio::time::sleep(WRITE_WAIT) => {
                            return Err(ToolError::new(format!(
                                "{id} did not take the text within {} s (it is not reading its stdin); nothing more was written",
                                WRITE_WAIT.as_secs()
                            )));
                        }
                    }
                    format!("wrote {} bytes to {id}", input.len())
                }
                "kill" => {
                    let id = id()?;
                    let how = match args.signal.as_deref() {
                        Some("kill") => Stop::Kill,
                        _ => Stop::Term,
                    };
                    match table.stop(&id, how).await.map_err(fail)? {
                        State::Running => {
                            format!("{id} did not end; it may be stuck in the kernel")
                        }
                        state => format!("{id} {}", state.describe()),
                    }
                }
                "dismiss" => {
                    let id = id()?;
                    table.dismiss(&id).map_err(fail)?;
                    format!("dismissed {id}")
                }
                other => {
                    return Err(ToolError::new(format!(
                        "unknown action {other:?}: use list, output, write, kill or dismiss"
                    )));
                }
            };
            Ok(ToolOutput::text(text))
        })
    }
}

/// The `list` answer.
fn list(table: &Table) -> String {
    let rows = table.list();
    if rows.is_empty() {
        return "no background processes".to_owned();
    }
    let mut text = String::new();
    for row in rows {
        let _ = writeln!(
            text,
            "{}  {}  {}s  {} unread bytes  pid {}  {}",
            row.id,
            row.state.describe(),
            row.age.as_secs(),
            row.unread,
            row.pid,
            row.command
        );
    }
    text.trim_end().to_owned()
}
