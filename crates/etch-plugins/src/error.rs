//! How a plugin fails: fatal problems close it (E-PLUG-14), a tool's own
//! error does not (G15). Messages name the plugin and say what to do.

/// A failed exchange with a plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// The plugin broke the protocol, timed out or exited; it was stopped
    /// and its tools are gone.
    #[error("{} stopped: {why}", who(plugin))]
    Fatal {
        /// The plugin's name.
        plugin: String,
        /// What happened.
        why: String,
    },
    /// The plugin was stopped earlier.
    #[error("{} is not running (it stopped earlier: {why})", who(plugin))]
    Stopped {
        /// The plugin's name.
        plugin: String,
        /// Why it stopped.
        why: String,
    },
    /// The plugin answered with an error object: an ordinary failure of
    /// the request; the plugin goes on.
    #[error("{0}")]
    Answered(String),
    /// It could not be started at all.
    #[error("{} could not be started: {why}", who(plugin))]
    Spawn {
        /// The plugin's name.
        plugin: String,
        /// The OS error.
        why: String,
    },
}

/// How messages name plugin `name`: `MCP server git` for the bridge of
/// an MCP server (named [`MCP_PREFIX`]`git`), `plugin git` otherwise.
pub fn who(name: &str) -> String {
    match name.strip_prefix(MCP_PREFIX) {
        Some(server) => format!("MCP server {server}"),
        None => format!("plugin {name}"),
    }
}

/// The name prefix of the plugins that bridge MCP servers; configured
/// plugins cannot use it (see `PluginSet::start`).
pub const MCP_PREFIX: &str = "mcp:";
