//! Layered TOML configuration for etch (E-CFG): one schema, the user file
//! `~/.etch/config.toml` and the nearest project `.etch/config.toml`,
//! validation with file and line, provenance, `config show --effective` and
//! `config schema`.
//!
//! This crate owns the config surface: which tables and keys exist
//! (`schema.rs`, the single declaration everything else derives from), how
//! files are found and merged (defaults < user < project; repeatable array
//! tables append user-first), what counts as invalid, and the typed
//! [`Config`]. It must not know the CLI, providers or the agent loop: flags
//! are applied by the caller on the returned [`Config`], and credentials are
//! never read from TOML (a credential-looking key is an error).
//!
//! # Wiring for the binary
//!
//! * Runtime: `let loaded = etch_config::load(&cwd, home.as_deref());`
//!   print every diagnostic to stderr (`{severity}: {diagnostic}`), stop with
//!   exit 1 when [`Loaded::has_errors`]; apply flags to `loaded.config` and
//!   call [`Loaded::mark_flag`] for each; resolve `session.dir` with
//!   [`Loaded::resolve_path`].
//! * `etch config check`: `load(..).strict()` (unknown keys become errors),
//!   print diagnostics, exit 1 when `has_errors()`, else 0 (G14).
//! * `etch config show --effective`: [`Loaded::effective_toml`].
//! * `etch config schema`: [`schema_json()`].

mod build;
mod config;
mod credentials;
mod diagnostic;
mod discover;
mod effective;
mod gated;
mod lines;
mod load;
mod merge;
mod parse;
mod problem;
mod provenance;
mod reflect;
mod rules;
mod schema;
mod schema_json;
mod suggest;
mod validate;
mod value;

#[cfg(test)]
mod sample_test;

pub mod trust;

pub use config::{
    AcpConfig, AnthropicConfig, ApprovalConfig, Config, ContextConfig, DEFAULT_ACP_ASK,
    DEFAULT_DENY_READ, EDITOR_SOURCE, HookEntry, McpServerEntry, OpenAiConfig, PluginEntry,
    PriceConfig, ProcessConfig, PromptConfig, ProviderConfig, SandboxConfig, SessionConfig,
    SubagentProfile, SubagentsConfig, ToolsConfig,
};
pub use diagnostic::{Diagnostic, Severity};
pub use discover::{ConfigFiles, discover};
pub use gated::GatedSetting;
pub use load::{Loaded, load, load_files};
pub use provenance::Source;
pub use schema::{DEFAULT_MODEL, HOOK_EVENTS, PROVIDERS, REASONING_EFFORTS};
pub use schema_json::{schema_json, schema_keys};
