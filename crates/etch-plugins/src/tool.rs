//! A plugin's tool as the registry sees it (E-PLUG-09..11, G15): its
//! spec, its scheduling class from `parallelSafety` (C19: `serial` is a
//! barrier, `read_only` and `parallel_safe` overlap with other calls,
//! while calls to the same process still queue in its lane), and a call
//! turned into `tool.execute`. A tool's own error (`isError`, or an
//! `error` answer) is an ordinary tool error; a protocol violation stops
//! the plugin and every one of its tools.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use etch_model::ToolSpec;
use etch_protocol::plugin::{ExecuteParams, ExecuteResult, ParallelSafety, TOOL_EXECUTE};
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use serde_json::Value;

use crate::MAX_RESULT;
use crate::client::Client;
use crate::error::{PluginError, who};

/// One tool of a running plugin.
pub struct PluginTool {
    /// Name, description, schema.
    spec: ToolSpec,
    /// Scheduling class.
    safety: ParallelSafety,
    /// The plugin behind it.
    client: Arc<Client>,
}

impl PluginTool {
    /// The tool `spec` of the plugin behind `client`.
    pub fn new(spec: ToolSpec, safety: ParallelSafety, client: Arc<Client>) -> Self {
        Self {
            spec,
            safety,
            client,
        }
    }

    /// The plugin's name.
    pub fn plugin(&self) -> &str {
        self.client.name()
    }
}

impl Tool for PluginTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self, _args: &Value, _cwd: &Path) -> Access {
        match self.safety {
            ParallelSafety::Serial => Access::Barrier,
            ParallelSafety::ReadOnly | ParallelSafety::ParallelSafe => Access::Read(Vec::new()),
        }
    }

    fn available(&self) -> bool {
        self.client.alive()
    }

    fn read_only(&self) -> bool {
        // An MCP tool annotated `readOnlyHint` arrives as `read_only`.
        self.safety == ParallelSafety::ReadOnly
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        let params = serde_json::to_value(ExecuteParams {
            call_id: ctx.call_id.clone(),
            name: self.spec.name.clone(),
            arguments: args,
        })
        .unwrap_or(Value::Null);
        // The exchange runs on its own task: a cancelled call returns at
        // once while the request finishes in the lane (the protocol has no
        // cancel), so the next call never enters the process early.
        let call = tokio::spawn(Arc::clone(&self.client).call(TOOL_EXECUTE, params));
        Box::pin(async move {
            let answer = tokio::select! {
                joined = call => joined.map_err(|e| ToolError(format!("the call to {} was lost: {e}", who(self.plugin()))))?,
                () = ctx.cancel.cancelled() => return Err(ToolError("Operation aborted".to_owned())),
            };
            let result = match answer {
                Ok(result) => result,
                Err(PluginError::Answered(message)) => return Err(ToolError(message)),
                Err(err) => {
                    return Err(ToolError(format!(
                        "{err}; its tools are no longer available"
                    )));
                }
            };
            let violation = match serde_json::from_value::<ExecuteResult>(result) {
                Err(err) => Err(format!(
                    "its tool.execute result is not {{\"content\": [...]}} ({err})"
                )),
                Ok(result) => match result.content.iter().find(|p| p.kind != "text") {
                    Some(part) => Err(format!(
                        "it returned a {:?} content part; protocol 0.1.0 has only text",
                        part.kind
                    )),
                    None => Ok(result),
                },
            };
            let result = match violation {
                Ok(result) => result,
                Err(why) => {
                    self.client.fail(&why).await;
                    return Err(ToolError(format!(
                        "{} stopped: {why}; its tools are no longer available",
                        who(self.plugin())
                    )));
                }
            };
            let text = capped(
                result
                    .content
                    .into_iter()
                    .map(|p| p.text)
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            if result.is_error {
                Err(ToolError(text))
            } else {
                Ok(ToolOutput::text(text))
            }
        })
    }
}

/// `text` cut to [`MAX_RESULT`] bytes, saying so.
fn capped(mut text: String) -> String {
    if text.len() <= MAX_RESULT {
        return text;
    }
    let total = text.len();
    // Room for the notice, so the whole stays within the bound.
    let mut end = MAX_RESULT - 128;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    let _ = write!(
        text,
        "\n[output truncated: the plugin returned {total} bytes; etch keeps the first {end}]"
    );
    text
}
