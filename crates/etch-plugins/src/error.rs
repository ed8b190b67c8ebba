//! How a plugin fails: fatal problems close it (E-PLUG-14), a tool's own
//! error does not (G15). Messages name the plugin and say what to do.

/// A failed exchange with a plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// The plugin broke the protocol, timed out or exited; it was stopped
    /// and its tools are gone.
    #[error("plugin {plugin} stopped: {why}")]
    Fatal {
        /// The plugin's name.
        plugin: String,
        /// What happened.
        why: String,
    },
    /// The plugin was stopped earlier.
    #[error("plugin {plugin} is not running (it stopped earlier: {why})")]
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
    #[error("plugin {plugin} could not be started: {why}")]
    Spawn {
        /// The plugin's name.
        plugin: String,
        /// The OS error.
        why: String,
    },
}
