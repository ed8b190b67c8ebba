//! The typed, merged configuration the rest of etch reads.
//!
//! This module owns the public config structs: one field per schema key,
//! with the compiled defaults applied. It must not know files, TOML or
//! provenance; `build` fills it from merged values and the schema.

use std::path::PathBuf;

/// Every setting, merged over the defaults (E-CFG-03). CLI flags are applied
/// by the caller on top, see [`Loaded::mark_flag`](crate::Loaded::mark_flag).
/// Not `Eq`: prices are numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `[session]`.
    pub session: SessionConfig,
    /// `[context]`.
    pub context: ContextConfig,
    /// `[provider]`.
    pub provider: ProviderConfig,
    /// `[openai]`.
    pub openai: OpenAiConfig,
    /// `[anthropic]`.
    pub anthropic: AnthropicConfig,
    /// `[prompt]`.
    pub prompt: PromptConfig,
    /// `[tools.*]`.
    pub tools: ToolsConfig,
    /// `[subagents]` and its `[[subagents.profile]]` entries (M2).
    pub subagents: SubagentsConfig,
    /// `[acp]`: the editor front end (E-CFG-24, M2).
    pub acp: AcpConfig,
    /// `[serve]`: the HTTP front end (M3).
    pub serve: ServeConfig,
    /// `[process]`: background processes (M3).
    pub process: ProcessConfig,
    /// `[sandbox]`: how the model's commands are confined (M3).
    pub sandbox: SandboxConfig,
    /// `[approval]`: which calls wait for the user (M3).
    pub approval: ApprovalConfig,
    /// `[[plugins]]` entries, user entries first (M2).
    pub plugins: Vec<PluginEntry>,
    /// `[[mcp.servers]]` entries, user entries first (E-CFG-23, M2).
    pub mcp_servers: Vec<McpServerEntry>,
    /// `[[hooks.<Event>]]` entries in source order, user entries first (M2).
    pub hooks: Vec<HookEntry>,
    /// `[[prices]]` entries, user entries first: what models cost.
    pub prices: Vec<PriceConfig>,
    /// The settings the project file makes that need the user's trust
    /// (who the model is, what it may do), as the file wrote them,
    /// whether they apply or were held back
    /// ([`Loaded::gate_project`](crate::Loaded::gate_project)). Trust
    /// pins them with the project's commands.
    pub project_settings: Vec<crate::gated::GatedSetting>,
}

impl Config {
    /// The price of `model`: the last `[[prices]]` entry naming it.
    pub fn price_of(&self, model: &str) -> Option<&PriceConfig> {
        self.prices.iter().rev().find(|price| price.model == model)
    }
}

impl Default for Config {
    /// The compiled defaults: what etch runs with when no file exists.
    fn default() -> Self {
        crate::build::build(&std::collections::BTreeMap::new(), &[])
    }
}

/// `[session]` (E-CFG-07).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    /// Session directory as written; resolve it with
    /// [`Loaded::resolve_path`](crate::Loaded::resolve_path).
    pub dir: String,
    /// Round bound of one prompt (at least 1).
    pub max_tool_rounds: u32,
    /// Recent messages always kept verbatim.
    pub keep_messages: u32,
    /// The same tool call with the same result this many times in a row
    /// stops the run (0: never); the repeats before get a note.
    pub max_identical_calls: u32,
    /// Failed tool results in a row after which the model gets a note
    /// (0: never).
    pub tool_error_note_after: u32,
    /// Failed tool results in a row that stop the run (0: never).
    pub max_tool_errors: u32,
    /// Whether final answers are checked against the workspace; `None`
    /// when no file sets it: the tool profile decides.
    pub grounding: Option<bool>,
}

/// `[context]` (E-CFG-08).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextConfig {
    /// Whether threshold compaction is on.
    pub auto_compact: bool,
    /// Estimated tokens at which it runs.
    pub auto_compact_threshold_tokens: u64,
    /// Tokens of recent messages compaction keeps.
    pub keep_recent_tokens: u64,
}

/// `[provider]` (E-CFG-09, C34, C42).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// `None` when no file sets it: the caller auto-selects from credentials.
    pub name: Option<String>,
    /// `None` when no file sets it, so the caller can tell a configured model
    /// from the default (`gpt-5.5`, shown by `--effective`).
    pub model: Option<String>,
    /// Retries before any output of a pass.
    pub max_retries: u32,
    /// First retry delay; doubles per retry.
    pub retry_base_delay_ms: u64,
    /// Seconds a stream may stay silent before the pass fails as stalled.
    pub idle_timeout_secs: u64,
    /// Most bytes of one model stream frame.
    pub max_frame_bytes: u64,
    /// Most bytes of one assembled model answer.
    pub max_message_bytes: u64,
    /// Whether credentials may travel over plain http to a host other
    /// than this machine (honoured only from the user's own file).
    pub allow_http_credentials: bool,
    /// `vision`: whether the model takes images; without it every image
    /// goes as a text marker saying it was left out.
    pub vision: bool,
}

/// `[openai]` (E-CFG-10, C35, G13, G19).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// `None` when no file sets it, so the caller can tell a configured URL
    /// from the default (`https://api.openai.com/v1`).
    pub base_url: Option<String>,
    /// `chat` or `responses`.
    pub api: String,
    /// One of the C35 efforts; `off` omits reasoning.
    pub reasoning_effort: String,
    /// `auto`, `concise`, `detailed` or `none`.
    pub reasoning_summary: String,
    /// Whether Chat Completions asks for usage in the stream.
    pub stream_usage: bool,
    /// `sse`, `websocket` or `auto`.
    pub transport: String,
    /// Which credentials `base_url` gets: `auto` (an environment key only
    /// to its own service), `none` or `api-key` (the environment key to any
    /// URL). `--api-key` is always sent.
    pub auth: String,
}

/// `[anthropic]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicConfig {
    /// Which credentials the endpoint gets: `auto` (`ANTHROPIC_API_KEY`
    /// only to api.anthropic.com), `none`, or `api-key` (to any URL;
    /// honoured only from the user's own file). `--api-key` is always
    /// sent.
    pub auth: String,
}

/// `[prompt]` (E-CFG-11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptConfig {
    /// Extra system prompt text, when configured.
    pub text: Option<String>,
}

/// `[tools.*]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsConfig {
    /// `[tools] active`: the built-in tools offered, as `--tools` names
    /// them; `None` offers all seven.
    pub active: Option<Vec<String>>,
    /// `[tools] profile`: `auto`, `full` or `compact`.
    pub profile: String,
    /// `[tools.bash] inherit_credentials` (E-CFG-22).
    pub bash_inherit_credentials: bool,
    /// `[tools.bash] max_spill_bytes` (E-CFG-25): most bytes of one
    /// stream's spill file.
    pub bash_max_spill_bytes: u64,
    /// `[tools.read] image_max_edge`: the long edge, in pixels, images
    /// are resized to (those read and those attached to prompts).
    pub read_image_max_edge: u32,
}

/// `[acp]` (E-CFG-24, M2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcpConfig {
    /// `ask`: the tools whose calls ask the editor first, a name
    /// ending in `*` matching by prefix; `None` means the default,
    /// [`DEFAULT_ACP_ASK`].
    pub ask: Option<Vec<String>>,
}

/// The tools `etch acp` asks about when `[acp] ask` is unset: the ones
/// that change files or run commands.
pub const DEFAULT_ACP_ASK: [&str; 3] = ["bash", "write", "edit"];

impl AcpConfig {
    /// Whether calls of tool `name` ask first.
    pub fn asks(&self, name: &str) -> bool {
        let matches = |pattern: &str| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == pattern,
        };
        match &self.ask {
            Some(list) => list.iter().any(|p| matches(p)),
            None => DEFAULT_ACP_ASK.iter().any(|p| matches(p)),
        }
    }
}

/// `[sandbox]` (M3): the confinement of the commands the model runs.
/// Paths are as written (`~` and relative paths are resolved by whoever
/// builds the policy, against the home and the working directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// `mode`; `None` means the default: `workspace-write` where the
    /// kernel can enforce it, else `off`.
    pub mode: Option<String>,
    /// `network`: whether internet sockets are allowed.
    pub network: bool,
    /// `writable_roots`: more writable directories.
    pub writable_roots: Vec<String>,
    /// `deny_read`; `None` means [`DEFAULT_DENY_READ`].
    pub deny_read: Option<Vec<String>>,
}

/// The paths confined commands may not read when `[sandbox] deny_read`
/// is unset: keys and the credentials of the usual command-line tools.
pub const DEFAULT_DENY_READ: [&str; 5] = [
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.etch/auth",
    "~/.config/gh",
];

/// `[approval]` (M3): when tool calls wait for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalConfig {
    /// `policy`: `never`, `on-request`, `untrusted` or `always`.
    pub policy: String,
    /// `ask`: tools that always ask (`*` suffix matches by prefix);
    /// `None` when neither it nor `[acp] ask` is set.
    pub ask: Option<Vec<String>>,
}

/// `[process]` (M3): background processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessConfig {
    /// `max_running`: processes one session runs at once.
    pub max_running: u32,
    /// `wake_on_output`: new output of a process started in a run that
    /// would end gives the model another round.
    pub wake_on_output: bool,
}

/// `[serve]` (M3): what `etch serve` reads at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    /// `token_file`: where the token is kept across starts; `None`
    /// means a new random token each start. Relative paths resolve like
    /// every path key (against the project root, else the cwd). A
    /// project file needs trust to set it (a token a repository chose
    /// is a token its author knows).
    pub token_file: Option<String>,
    /// `max_running`: runs at once.
    pub max_running: u32,
    /// `idle_unload_secs`: seconds before an unwatched, idle session is
    /// unloaded; 0 never.
    pub idle_unload_secs: u64,
}

/// `[subagents]` (E-CFG-13, M2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentsConfig {
    /// Whether the task tool is offered.
    pub enabled: bool,
    /// Task calls allowed per turn.
    pub max_per_turn: u32,
    /// Subagents running at once.
    pub max_concurrent: u32,
    /// `[[subagents.profile]]` entries, user entries first.
    pub profiles: Vec<SubagentProfile>,
}

/// One `[[subagents.profile]]` (E-CFG-14, M2). Unset keys are `None` and
/// inherit the parent's settings; unset budgets (`max_tokens`,
/// `max_seconds`) bound nothing. `allowed_tools` never lists `task` (C38).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentProfile {
    /// Profile name (always present: validation requires it), matching
    /// `^[A-Za-z0-9_-]{1,32}$`.
    pub name: String,
    /// What the profile is for.
    pub description: Option<String>,
    /// Provider name.
    pub provider: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// `chat` or `responses`.
    pub openai_api: Option<String>,
    /// Reasoning effort.
    pub reasoning_effort: Option<String>,
    /// Reasoning summary detail.
    pub reasoning_summary: Option<String>,
    /// System prompt file as written; resolve with
    /// [`Loaded::resolve_path`](crate::Loaded::resolve_path).
    pub system_prompt_file: Option<String>,
    /// Tool allowlist by name.
    pub allowed_tools: Option<Vec<String>>,
    /// Round bound of the child.
    pub max_tool_rounds: Option<u32>,
    /// Whether the child compacts automatically.
    pub auto_compact: Option<bool>,
    /// The child's compaction threshold.
    pub auto_compact_threshold_tokens: Option<u64>,
    /// Most tokens (input plus output, over all of the child's model
    /// requests) the child may use; it stops when it passes this. `None`
    /// when unset: no token bound (at least 1 when set).
    pub max_tokens: Option<u64>,
    /// Most seconds the child may run; it stops when it passes this. `None`
    /// when unset: no time bound (at least 1 when set).
    pub max_seconds: Option<u64>,
    /// The file that declared it.
    pub source: PathBuf,
}

/// The `source` of MCP servers an editor gives etch over ACP: they are
/// the user's own choice, made in the editor, so the project trust gate
/// does not apply to them.
pub const EDITOR_SOURCE: &str = "(given by the editor over ACP)";

/// One `[[prices]]`: what a model costs, for the chat's footer. A
/// project file may set prices: they change only what is shown.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceConfig {
    /// The model name as sent to the provider.
    pub model: String,
    /// USD per million input tokens not served from cache.
    pub input: f64,
    /// USD per million output tokens.
    pub output: f64,
    /// USD per million cached input tokens; `None` prices them as `input`.
    pub cached_input: Option<f64>,
    /// The file that declared it.
    pub source: PathBuf,
}

/// One `[[plugins]]` (E-CFG-12, M2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginEntry {
    /// Plugin name.
    pub name: String,
    /// Shell command; non-empty unless `disabled`.
    pub command: String,
    /// Timeout for initialize and each call.
    pub timeout_seconds: u64,
    /// Extra environment variables passed through.
    pub env: Vec<String>,
    /// Variables set to these values for the plugin: never from a file,
    /// only what an editor gives its MCP servers over ACP.
    pub set_env: Vec<(String, String)>,
    /// Whether the plugin is switched off.
    pub disabled: bool,
    /// Whether it runs inside the `[sandbox]` (`sandbox = true`).
    pub sandbox: bool,
    /// The file that declared it.
    pub source: PathBuf,
}

/// One `[[mcp.servers]]` (E-CFG-23, M2): an MCP server whose tools etch
/// offers through its MCP bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerEntry {
    /// Server name (`^[A-Za-z0-9_-]{1,32}$`).
    pub name: String,
    /// Program of a stdio server; empty for an HTTP server.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Streamable HTTP endpoint; empty for a stdio server.
    pub url: String,
    /// Extra headers, `Name: value`, `${VAR}` not yet expanded.
    pub headers: Vec<String>,
    /// Variable holding a bearer token; empty when none.
    pub bearer_token_env: String,
    /// Extra environment variables passed through (stdio).
    pub env: Vec<String>,
    /// Variables set to these values for the server (see
    /// [`PluginEntry::set_env`]).
    pub set_env: Vec<(String, String)>,
    /// Start-up and per-call timeout.
    pub timeout_seconds: u64,
    /// Whether the server is switched off.
    pub disabled: bool,
    /// Only these server tools, when set.
    pub enabled_tools: Option<Vec<String>>,
    /// Server tools never offered.
    pub disabled_tools: Vec<String>,
    /// The file that declared it.
    pub source: PathBuf,
}

/// One `[[hooks.<Event>]]` (E-CFG-15, M2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEntry {
    /// One of the E-HOOK-03 event names.
    pub event: String,
    /// Regex matched against the whole subject; empty or `*` match all.
    pub matcher: String,
    /// Shell command; non-empty unless `disabled`.
    pub command: String,
    /// Seconds before the hook is killed.
    pub timeout_seconds: u64,
    /// Whether the hook is switched off.
    pub disabled: bool,
    /// Wire format: `etch` or `claude`.
    pub protocol: String,
    /// The file that declared it.
    pub source: PathBuf,
}
