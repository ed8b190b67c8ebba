//! The typed settings a session is opened with: where it runs ([`Place`])
//! and what a front end asked for ([`RunSettings`]), resolved once from
//! defaults, files, environment and flags by the front end.
//!
//! Nothing here knows a command-line parser: the binary turns its flags
//! into these values, `etch rpc` its `set_model`, a subagent its profile.

use std::path::PathBuf;

use etch_config::Config;

use crate::provider::ProviderFlags;

/// Where a session runs and with which configuration.
#[derive(Debug, Clone)]
pub struct Place {
    /// Working directory.
    pub cwd: PathBuf,
    /// Session directory.
    pub session_dir: PathBuf,
    /// The user's home, for `~/.etch` files.
    pub home: Option<PathBuf>,
    /// The merged configuration (E-CFG-03: flags over environment over
    /// project file over user file over defaults).
    pub config: Config,
}

/// What a front end asked for beyond the configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSettings {
    /// Provider, model, endpoint and reasoning options.
    pub provider: ProviderFlags,
    /// Built-in tools to offer (`--tools`); `None` means the default set.
    pub tools: Option<Vec<String>>,
    /// Offer only the read-only tools (`--read-only`).
    pub read_only: bool,
    /// Bound on model/tool rounds per prompt; `None` takes the
    /// configuration's `[session] max_tool_rounds`.
    pub max_tool_rounds: Option<u32>,
}

impl RunSettings {
    /// The round bound in effect under `config`.
    pub fn max_tool_rounds(&self, config: &Config) -> u32 {
        self.max_tool_rounds
            .unwrap_or(config.session.max_tool_rounds)
    }
}
