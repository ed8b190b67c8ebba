//! Write etch plugins in Rust (E-PLUG-17). A plugin is a program etch
//! starts and talks to over its stdin and stdout (JSONL-RPC 0.1.0, see
//! `etch_protocol::plugin`); with this crate, its author writes tool
//! functions and [`serve_plugin`] owns the wire loop: reading requests,
//! answering `initialize` with the declared tools, dispatching
//! `tool.execute`, framing, ids and errors. No async runtime is needed.
//!
//! ```no_run
//! use etch_plugin_sdk::{Call, ParallelSafety, Plugin, Tool, ToolError, serve_plugin};
//! use serde_json::json;
//!
//! fn shout(call: &Call) -> Result<String, ToolError> {
//!     let text = call.str("text")?;
//!     Ok(text.to_uppercase())
//! }
//!
//! fn main() -> std::io::Result<()> {
//!     let plugin = Plugin::new("shout").tool(
//!         Tool::new(
//!             "shout",
//!             "Repeat the text in capitals.",
//!             json!({
//!                 "type": "object",
//!                 "properties": {"text": {"type": "string"}},
//!                 "required": ["text"]
//!             }),
//!             shout,
//!         )
//!         .parallel_safety(ParallelSafety::ReadOnly),
//!     );
//!     serve_plugin(&plugin)
//! }
//! ```
//!
//! Configure it in `.etch/config.toml` (or `~/.etch/config.toml`):
//!
//! ```toml
//! [[plugins]]
//! name = "shout"
//! command = "/path/to/shout"
//! ```
//!
//! A handler's `Err` is an ordinary tool error: the model sees its text
//! and the plugin stays up. Anything the plugin prints for people goes to
//! stderr (`eprintln!`), never stdout, which carries the protocol. This
//! crate must not know how etch runs plugins.

use std::io::{BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};

pub use etch_protocol::plugin::ParallelSafety;
use etch_protocol::plugin::{
    ContentPart, ExecuteParams, ExecuteResult, INITIALIZE, InitializeResult, PluginError,
    PluginRequest, PluginResponse, PluginTool, TOOL_EXECUTE,
};
use serde_json::Value;

/// A tool function: the call in, the result text (or a tool error) out.
type Handler = Box<dyn Fn(&Call) -> Result<String, ToolError> + Send + Sync>;

/// A plugin: its name and tools.
pub struct Plugin {
    /// The name etch shows in diagnostics.
    name: String,
    /// The tools, in the order declared.
    tools: Vec<Tool>,
}

impl Plugin {
    /// A plugin with no tools yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            tools: Vec::new(),
        }
    }

    /// Adds a tool.
    #[must_use]
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }
}

/// One tool of a plugin.
pub struct Tool {
    /// How the model sees it.
    spec: PluginTool,
    /// What runs.
    handler: Handler,
}

impl Tool {
    /// A tool named `name` (1-64 of `A-Z a-z 0-9 _ -`) with its
    /// description, the JSON schema of its arguments (an object schema;
    /// etch validates arguments against it before calling) and its
    /// function. It is scheduled as a barrier unless
    /// [`Tool::parallel_safety`] says otherwise.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        handler: impl Fn(&Call) -> Result<String, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            spec: PluginTool {
                name: name.into(),
                description: description.into(),
                parameters,
                parallel_safety: ParallelSafety::Serial,
            },
            handler: Box::new(handler),
        }
    }

    /// How etch may schedule calls of this tool beside others.
    #[must_use]
    pub fn parallel_safety(mut self, safety: ParallelSafety) -> Self {
        self.spec.parallel_safety = safety;
        self
    }
}

/// One call of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The model's call id.
    pub call_id: String,
    /// The arguments (a JSON object that passed the tool's schema).
    pub arguments: Value,
}

impl Call {
    /// The string argument `name`; a tool error naming it when it is
    /// missing or not a string.
    pub fn str(&self, name: &str) -> Result<&str, ToolError> {
        self.arguments
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new(format!("the argument `{name}` must be a string")))
    }

    /// The string argument `name`, if given.
    pub fn opt_str(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).and_then(Value::as_str)
    }

    /// The whole-number argument `name`, or `default` when it is not given.
    pub fn u64_or(&self, name: &str, default: u64) -> u64 {
        self.arguments
            .get(name)
            .and_then(Value::as_u64)
            .unwrap_or(default)
    }
}

/// A tool's failure: the model sees the text as a tool error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl ToolError {
    /// A tool error with this text.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self(message.to_owned())
    }
}

impl From<std::io::Error> for ToolError {
    fn from(err: std::io::Error) -> Self {
        Self(err.to_string())
    }
}

/// Serves `plugin` on stdin and stdout until etch closes stdin.
pub fn serve_plugin(plugin: &Plugin) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    serve(plugin, stdin.lock(), stdout.lock())
}

/// Serves `plugin`: one request per line of `input`, one response per
/// line of `output`, until `input` ends.
pub fn serve(plugin: &Plugin, input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    for line in input.split(b'\n') {
        let line = line?;
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let response = match serde_json::from_str::<PluginRequest>(text) {
            Ok(request) => answer(plugin, request),
            Err(err) => {
                // No id to answer with: say so where a person looks.
                eprintln!(
                    "{}: ignored a request that is not JSON-RPC ({err})",
                    plugin.name
                );
                continue;
            }
        };
        let mut encoded = serde_json::to_vec(&response).map_err(std::io::Error::other)?;
        encoded.push(b'\n');
        output.write_all(&encoded)?;
        output.flush()?;
    }
    Ok(())
}

/// The response to one request.
fn answer(plugin: &Plugin, request: PluginRequest) -> PluginResponse {
    let id = Some(request.id);
    let fail = |message: String| PluginResponse {
        id: id.clone(),
        result: None,
        error: Some(PluginError::new(message)),
    };
    let result = match request.method.as_str() {
        INITIALIZE => serde_json::to_value(InitializeResult {
            name: plugin.name.clone(),
            tools: plugin.tools.iter().map(|t| t.spec.clone()).collect(),
        }),
        TOOL_EXECUTE => {
            let params = match serde_json::from_value::<ExecuteParams>(request.params) {
                Ok(params) => params,
                Err(err) => return fail(format!("bad tool.execute params: {err}")),
            };
            let Some(tool) = plugin.tools.iter().find(|t| t.spec.name == params.name) else {
                return fail(format!("{} has no tool {}", plugin.name, params.name));
            };
            let call = Call {
                call_id: params.call_id,
                arguments: params.arguments,
            };
            // A panicking tool is that call's error, not the plugin's end.
            let ran = catch_unwind(AssertUnwindSafe(|| (tool.handler)(&call)))
                .unwrap_or_else(|_| Err(ToolError::new(format!("tool {} panicked", params.name))));
            let (text, is_error) = match ran {
                Ok(text) => (text, false),
                Err(ToolError(message)) => (message, true),
            };
            serde_json::to_value(ExecuteResult {
                content: vec![ContentPart::text(text)],
                is_error,
            })
        }
        other => return fail(format!("unknown method {other}")),
    };
    match result {
        Ok(result) => PluginResponse {
            id,
            result: Some(result),
            error: None,
        },
        Err(err) => fail(err.to_string()),
    }
}

#[cfg(test)]
mod tests;
