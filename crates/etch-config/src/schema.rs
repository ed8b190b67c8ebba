//! The one schema of etch's configuration (E-CFG-06): every table, every key,
//! its type, default, description, allowed values, range and merge rule.
//!
//! This module owns only the static declaration. Parsing, validation, the
//! typed [`Config`](crate::Config), `config show --effective`, `config schema`
//! and the `sample-config.toml` coverage test all read it, so adding a key
//! means adding one [`KeySpec`] here (plus its typed field and the sample).
//! It must not know files, TOML syntax or diagnostics.

/// The TOML type a key accepts (E-CFG-05 in docs/requirements.md: the
/// surface is deliberately small; numbers are there for prices only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueType {
    /// A TOML string.
    String,
    /// A TOML integer, further bounded by [`KeySpec::min`] and [`KeySpec::max`].
    Integer,
    /// A TOML boolean.
    Boolean,
    /// A TOML array whose items are all strings.
    StringArray,
    /// A TOML float or integer, finite, further bounded by
    /// [`KeySpec::min`] and [`KeySpec::max`] (prices).
    Number,
}

impl ValueType {
    /// The name used by `config schema`, so tools can switch on it.
    pub(crate) const fn schema_name(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::StringArray => "string_array",
            Self::Number => "number",
        }
    }

    /// The phrase used in "expected …" messages, with its article.
    pub(crate) const fn phrase(self) -> &'static str {
        match self {
            Self::String => "a string",
            Self::Integer => "an integer",
            Self::Boolean => "a boolean",
            Self::StringArray => "an array of strings",
            Self::Number => "a number",
        }
    }
}

/// A compiled default, kept static so the schema is a plain table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Literal {
    /// A string default.
    Str(&'static str),
    /// An integer default.
    Int(i64),
    /// A boolean default.
    Bool(bool),
}

/// When an array-table entry must carry a key; plain tables never require keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Requirement {
    /// The key may be left out.
    Optional,
    /// Every entry needs a non-empty value.
    Always,
    /// Entries that are not `disabled = true` need a non-empty value
    /// (E-CFG-17: every enabled hook or plugin has a command).
    WhenEnabled,
}

impl Requirement {
    /// The name used by `config schema`.
    pub(crate) const fn schema_name(self) -> &'static str {
        match self {
            Self::Optional => "optional",
            Self::Always => "required",
            Self::WhenEnabled => "required_when_enabled",
        }
    }
}

/// A form a string value (or each item of a string array) must have beyond
/// its type; `validate` checks it, and empty strings are left to the
/// entry's requirements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// An MCP server name: `^[A-Za-z0-9_-]{1,32}$`, as it becomes part of
    /// tool names.
    ServerName,
    /// A subagent profile name: `^[A-Za-z0-9_-]{1,32}$`, as it appears in
    /// the task tool's schema and in codenames.
    ProfileName,
    /// An `http://` or `https://` URL.
    HttpUrl,
    /// An HTTP header `Name: value` whose name is made of token characters;
    /// a credential header (such as `Authorization`) must take its value from
    /// a `${VAR}` reference.
    HttpHeader,
    /// An environment variable name: `^[A-Za-z_][A-Za-z0-9_]*$`.
    EnvVarName,
}

impl Form {
    /// The name used by `config schema`.
    pub(crate) const fn schema_name(self) -> &'static str {
        match self {
            Self::ServerName => "server_name",
            Self::ProfileName => "profile_name",
            Self::HttpUrl => "http_url",
            Self::HttpHeader => "http_header",
            Self::EnvVarName => "env_var_name",
        }
    }
}

/// One key of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeySpec {
    /// The key as written in TOML.
    pub name: &'static str,
    /// The type the value must have.
    pub ty: ValueType,
    /// The compiled default; `None` means "absent unless a file sets it".
    pub default: Option<Literal>,
    /// One line for humans: `config schema`, the sample and `--effective`.
    pub description: &'static str,
    /// The fixed set of allowed strings, when there is one.
    pub allowed: Option<&'static [&'static str]>,
    /// Smallest allowed integer.
    pub min: Option<i64>,
    /// Largest allowed integer (the typed field's range).
    pub max: Option<i64>,
    /// The value is a hook matcher: a regex, where empty and `*` match all.
    pub regex: bool,
    /// The value is a path resolved against the project root (E-CFG-21).
    pub path: bool,
    /// The form the string (or each array item) must have, when there is one.
    pub form: Option<Form>,
    /// Whether array-table entries must set it.
    pub required: Requirement,
}

/// Largest value of a `u32` field, as the schema's integer type.
const U32_MAX: i64 = u32::MAX as i64;

impl KeySpec {
    /// A key with no default, no restriction and the given type.
    const fn new(name: &'static str, ty: ValueType, description: &'static str) -> Self {
        Self {
            name,
            ty,
            default: None,
            description,
            allowed: None,
            min: None,
            max: None,
            regex: false,
            path: false,
            form: None,
            required: Requirement::Optional,
        }
    }

    /// A string key without a default.
    const fn string(name: &'static str, description: &'static str) -> Self {
        Self::new(name, ValueType::String, description)
    }

    /// An integer key without a default, in `min..=max`.
    const fn integer(name: &'static str, min: i64, max: i64, description: &'static str) -> Self {
        let mut key = Self::new(name, ValueType::Integer, description);
        key.min = Some(min);
        key.max = Some(max);
        key
    }

    /// A number key (float or integer) without a default, in
    /// `min..=max`.
    const fn number(name: &'static str, min: i64, max: i64, description: &'static str) -> Self {
        let mut key = Self::new(name, ValueType::Number, description);
        key.min = Some(min);
        key.max = Some(max);
        key
    }

    /// A boolean key without a default.
    const fn boolean(name: &'static str, description: &'static str) -> Self {
        Self::new(name, ValueType::Boolean, description)
    }

    /// A string-array key (never has a default).
    const fn string_array(name: &'static str, description: &'static str) -> Self {
        Self::new(name, ValueType::StringArray, description)
    }

    /// Sets the compiled default.
    const fn default(mut self, value: Literal) -> Self {
        self.default = Some(value);
        self
    }

    /// Restricts a string to a fixed set.
    const fn allowed(mut self, values: &'static [&'static str]) -> Self {
        self.allowed = Some(values);
        self
    }

    /// Marks the key as a hook matcher regex.
    const fn regex(mut self) -> Self {
        self.regex = true;
        self
    }

    /// Marks the key as a path resolved against the project root.
    const fn path(mut self) -> Self {
        self.path = true;
        self
    }

    /// Requires a form of the string or of each array item.
    const fn form(mut self, form: Form) -> Self {
        self.form = Some(form);
        self
    }

    /// Sets when array-table entries must carry the key.
    const fn required(mut self, required: Requirement) -> Self {
        self.required = required;
        self
    }
}

/// Whether a table is written once (`[t]`, scalars override) or repeated
/// (`[[t]]`, entries append user-first, E-CFG-02).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableKind {
    /// `[table]`: a project scalar overrides the user scalar.
    Table,
    /// `[[table]]`: entries append in source order, user entries first.
    ArrayTable,
}

impl TableKind {
    /// The merge rule's name in `config schema`.
    pub(crate) const fn merge_name(self) -> &'static str {
        match self {
            Self::Table => "override",
            Self::ArrayTable => "append",
        }
    }
}

/// The milestone that starts using a table; M2 tables are parsed and validated
/// now so configs written today keep working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Milestone {
    /// Used by the first milestone.
    M1,
    /// Parsed and validated now, used from milestone 2.
    M2,
    /// Used from milestone 3 (`etch serve`).
    M3,
}

impl Milestone {
    /// The label used by `config schema`.
    pub(crate) const fn label(self) -> &'static str {
        match self {
            Self::M1 => "M1",
            Self::M2 => "M2",
            Self::M3 => "M3",
        }
    }
}

/// A rule across the keys of one array-table entry, for what one key's
/// [`KeySpec`] cannot say; the `rules` module checks it once every key of
/// the entry passed on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryRule {
    /// `[[mcp.servers]]` (E-CFG-23): an enabled entry has exactly one of
    /// `command` and `url`, and no key of the other kind of server.
    McpTransport,
    /// `[[subagents.profile]]` (C38): `allowed_tools` does not list `task`,
    /// as the first subagent release has no nested delegation.
    NoNestedTask,
}

/// One table of the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableSpec {
    /// Dotted name; [`HOOKS_TABLE`] stands for every `hooks.<Event>`.
    pub name: &'static str,
    /// Plain table or array table.
    pub kind: TableKind,
    /// When etch starts using it.
    pub milestone: Milestone,
    /// One line for humans.
    pub description: &'static str,
    /// Its keys, in the order `--effective` and the sample list them.
    pub keys: &'static [KeySpec],
    /// The cross-key rule of its entries, when it has one.
    pub rule: Option<EntryRule>,
}

impl TableSpec {
    /// The key spec called `name`, if the table has one.
    pub(crate) fn key(&self, name: &str) -> Option<&'static KeySpec> {
        self.keys.iter().find(|key| key.name == name)
    }
}

/// The schema name of the hook tables: `hooks.<Event>` for each event.
pub(crate) const HOOKS_TABLE: &str = "hooks.*";

/// Hook event names, exactly (E-HOOK-03, and the subagent events).
pub const HOOK_EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "TurnStart",
    "TurnComplete",
    "ContextBuild",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "SubagentStop",
];

/// Provider names (E-CFG-09): the one list the provider factory, the
/// command line and the chat take.
pub const PROVIDERS: &[&str] = &["echo", "openai", "anthropic"];
/// The model the openai provider asks for when none is configured
/// (E-CFG-09).
pub const DEFAULT_MODEL: &str = "gpt-5.5";
/// OpenAI API modes (E-CFG-10).
pub(crate) const OPENAI_APIS: &[&str] = &["chat", "responses"];
/// Reasoning efforts (C35); `off` omits reasoning entirely. The one list
/// the command line, the chat's `/thinking` and the protocol's thinking
/// levels agree with (tests in etch-runtime and etch-hooks tie them).
pub const REASONING_EFFORTS: &[&str] =
    &["none", "minimal", "low", "medium", "high", "xhigh", "off"];
/// Reasoning summary levels (C35).
pub(crate) const REASONING_SUMMARIES: &[&str] = &["auto", "concise", "detailed", "none"];
/// Responses transports (G13).
pub(crate) const TRANSPORTS: &[&str] = &["sse", "websocket", "auto"];
/// Which credentials an OpenAI-compatible endpoint gets.
pub(crate) const OPENAI_AUTHS: &[&str] = &["auto", "none", "api-key", "login"];

/// `[session]` keys (E-CFG-07).
const SESSION: &[KeySpec] = &[
    KeySpec::string(
        "dir",
        "Directory of session files; a relative path resolves against the project root, else the cwd.",
    )
    .default(Literal::Str(".etch/sessions"))
    .path(),
    KeySpec::integer(
        "max_tool_rounds",
        1,
        U32_MAX,
        "Most model/tool rounds one prompt may take before the run fails.",
    )
    .default(Literal::Int(32)),
    KeySpec::integer(
        "keep_messages",
        0,
        U32_MAX,
        "Recent messages always kept verbatim in the model context.",
    )
    .default(Literal::Int(12)),
    KeySpec::integer(
        "max_identical_calls",
        0,
        U32_MAX,
        "The same tool call with the same result this many times in a row stops the run; the repeats before it get a note (0: off).",
    )
    .default(Literal::Int(5)),
    KeySpec::integer(
        "tool_error_note_after",
        0,
        U32_MAX,
        "Failed tool results in a row after which the model is told to change approach (0: off).",
    )
    .default(Literal::Int(5)),
    KeySpec::integer(
        "max_tool_errors",
        0,
        U32_MAX,
        "Failed tool results in a row that stop the run (0: off).",
    )
    .default(Literal::Int(10)),
    KeySpec::boolean(
        "grounding",
        "Check final answers against the workspace, once each per prompt: an answer naming a \
         path that does not exist, or answering about a file the prompt names without having \
         looked at it, gets a note back and the model answers again; a prompt naming such a file \
         makes the first request require a tool call; a write over a file never read is refused; \
         an answer sent with only repeats of earlier calls ends the run. Default: on under the \
         compact tool profile, off under the full one.",
    ),
];

/// `[context]` keys (E-CFG-08).
const CONTEXT: &[KeySpec] = &[
    KeySpec::boolean(
        "auto_compact",
        "Compact automatically when the context estimate reaches the threshold.",
    )
    .default(Literal::Bool(false)),
    KeySpec::integer(
        "auto_compact_threshold_tokens",
        0,
        i64::MAX,
        "Estimated context tokens at which automatic compaction runs.",
    )
    .default(Literal::Int(120_000)),
    KeySpec::integer(
        "keep_recent_tokens",
        0,
        i64::MAX,
        "Tokens of the newest messages that compaction keeps verbatim.",
    )
    .default(Literal::Int(20_000)),
];

/// `[provider]` keys (E-CFG-09, C34, C42).
const PROVIDER: &[KeySpec] = &[
    KeySpec::string(
        "name",
        "Model provider; when no file or flag sets it, etch picks one from the available credentials.",
    )
    .allowed(PROVIDERS),
    KeySpec::string("model", "Model name sent to the provider.").default(Literal::Str(DEFAULT_MODEL)),
    KeySpec::integer(
        "max_retries",
        0,
        U32_MAX,
        "Retries of a request failing with 429, 5xx or a network error before any output.",
    )
    .default(Literal::Int(3)),
    KeySpec::integer(
        "retry_base_delay_ms",
        0,
        i64::MAX,
        "First retry delay in milliseconds; it doubles on each retry unless Retry-After says otherwise.",
    )
    .default(Literal::Int(2000)),
    KeySpec::integer(
        "idle_timeout_secs",
        1,
        i64::MAX,
        "Seconds a model stream may stay silent before the pass fails as stalled.",
    )
    .default(Literal::Int(300)),
    KeySpec::integer(
        "max_frame_bytes",
        1024,
        i64::MAX,
        "Most bytes of one model stream frame (an SSE event or a WebSocket message); a larger \
         one fails the pass.",
    )
    .default(Literal::Int(16_777_216)),
    KeySpec::integer(
        "max_message_bytes",
        1024,
        i64::MAX,
        "Most bytes of text, reasoning and tool-call arguments in one model answer; a larger \
         one fails the pass.",
    )
    .default(Literal::Int(67_108_864)),
    KeySpec::boolean(
        "allow_http_credentials",
        "Send credentials over plain http to a server that is not on this machine (only from \
         ~/.etch/config.toml); otherwise such a base_url needs https.",
    )
    .default(Literal::Bool(false)),
    KeySpec::boolean(
        "vision",
        "Whether the model takes images. Set false for a text-only model (most small local \
         ones): images read or attached are then sent as a text marker saying one was left \
         out, never as bytes the server would refuse.",
    )
    .default(Literal::Bool(true)),
];

/// `[openai]` keys (E-CFG-10, C35, G13, G19).
const OPENAI: &[KeySpec] = &[
    KeySpec::string(
        "base_url",
        "Base URL of the OpenAI-compatible API used with API keys.",
    )
    .default(Literal::Str("https://api.openai.com/v1")),
    KeySpec::string("api", "OpenAI API to call: Chat Completions or Responses.")
        .default(Literal::Str("chat"))
        .allowed(OPENAI_APIS),
    KeySpec::string(
        "reasoning_effort",
        "Reasoning effort for the Responses API; off leaves reasoning out of the request.",
    )
    .default(Literal::Str("minimal"))
    .allowed(REASONING_EFFORTS),
    KeySpec::string(
        "reasoning_summary",
        "Reasoning summary detail for the Responses API.",
    )
    .default(Literal::Str("auto"))
    .allowed(REASONING_SUMMARIES),
    KeySpec::boolean(
        "stream_usage",
        "Ask Chat Completions to report token usage at the end of the stream.",
    )
    .default(Literal::Bool(true)),
    KeySpec::string(
        "transport",
        "Responses transport; auto falls back to SSE when the WebSocket fails before any output.",
    )
    .default(Literal::Str("sse"))
    .allowed(TRANSPORTS),
    KeySpec::string(
        "auth",
        "Credentials sent to base_url: auto sends each credential only to its own service \
         (OPENAI_API_KEY to api.openai.com, OPENROUTER_API_KEY to openrouter.ai, the ChatGPT \
         login to chatgpt.com) and none to other servers; none never sends one; api-key sends \
         the environment key and login the ChatGPT login to any base_url (these two only from \
         ~/.etch/config.toml).",
    )
    .default(Literal::Str("auto"))
    .allowed(OPENAI_AUTHS),
];

/// Which credentials an Anthropic endpoint gets.
pub(crate) const ANTHROPIC_AUTHS: &[&str] = &["auto", "none", "api-key"];

/// `[anthropic]` keys.
const ANTHROPIC: &[KeySpec] = &[KeySpec::string(
    "auth",
    "Credentials sent to the Anthropic endpoint: auto sends ANTHROPIC_API_KEY only to \
     api.anthropic.com and none to other servers; none never sends one; api-key sends it to any \
     --base-url (only from ~/.etch/config.toml).",
)
.default(Literal::Str("auto"))
.allowed(ANTHROPIC_AUTHS)];

/// `[prompt]` keys (E-CFG-11).
const PROMPT: &[KeySpec] = &[KeySpec::string(
    "text",
    "Operator or project prompt text, pinned after the base system prompt.",
)];

/// `[tools]` keys.
const TOOLS: &[KeySpec] = &[
    KeySpec::string_array(
        "active",
        "Built-in tools offered to the model, as --tools names them (default: all seven). \
         A small local model often does better with fewer, e.g. [\"read\", \"bash\", \"edit\", \"write\"].",
    ),
    KeySpec::string(
        "profile",
        "How tools and the base prompt are described to the model: full, compact (short \
         descriptions and schemas that keep every parameter, and a short base prompt, for small \
         models), or auto (compact for a server on this machine or the local network, or when \
         [context] auto_compact_threshold_tokens is at most 16000; full otherwise).",
    )
    .default(Literal::Str("full"))
    .allowed(TOOL_PROFILES),
];

/// `[tools] profile` values.
pub const TOOL_PROFILES: &[&str] = &["auto", "full", "compact"];

/// `[tools.bash]` keys (E-CFG-22, E-CFG-25).
const TOOLS_BASH: &[KeySpec] = &[
    KeySpec::boolean(
        "inherit_credentials",
        "Let the bash tool's commands keep the model credential environment variables.",
    )
    .default(Literal::Bool(false)),
    KeySpec::integer(
        "max_spill_bytes",
        1,
        i64::MAX,
        "Most bytes of one output stream of a bash call saved to its file when the result \
         keeps only the tail; a longer stream keeps its last max_spill_bytes there.",
    )
    .default(Literal::Int(67_108_864)),
];

/// `[tools.read]` keys.
const TOOLS_READ: &[KeySpec] = &[KeySpec::integer(
    "image_max_edge",
    1,
    8000,
    "Longest edge, in pixels, of an image read or attached to a prompt; a larger one is \
     resized (keeping its proportions) before the model sees it. Providers take at most 8000, \
     and Anthropic at most 2000 in a request of more than 20 images.",
)
.default(Literal::Int(2000))];

/// `[subagents]` keys (E-CFG-13).
const SUBAGENTS: &[KeySpec] = &[
    KeySpec::boolean(
        "enabled",
        "Offer the task tool, which runs subagent profiles.",
    )
    .default(Literal::Bool(false)),
    KeySpec::integer(
        "max_per_turn",
        1,
        U32_MAX,
        "Most task calls one turn may make; later ones get a tool error.",
    )
    .default(Literal::Int(4)),
    KeySpec::integer(
        "max_concurrent",
        1,
        U32_MAX,
        "Most subagents running at the same time.",
    )
    .default(Literal::Int(2)),
];

/// `[acp]` keys (E-CFG-24).
const ACP: &[KeySpec] = &[KeySpec::string_array(
    "ask",
    "Tools whose calls etch acp asks the editor to approve first; a name ending in * matches by prefix \
     (\"mcp__*\"). Default: [\"bash\", \"write\", \"edit\"]; [] asks for nothing.",
)];

/// `[sandbox]` keys: how commands run for the model are confined.
const SANDBOX: &[KeySpec] = &[
    KeySpec::string(
        "mode",
        "How commands the model runs (bash, !cmd, plugins with sandbox = true) are confined: \"off\", \
         \"workspace-write\" (write only in the working directory, /tmp, $TMPDIR and \
         writable_roots; .git and .etch stay read-only) or \"read-only\". Default: \
         \"workspace-write\" where the kernel has Landlock, else \"off\" with a notice.",
    )
    .allowed(SANDBOX_MODES),
    KeySpec::boolean(
        "network",
        "Whether confined commands may open internet sockets (TCP, UDP, DNS).",
    )
    .default(Literal::Bool(false)),
    KeySpec::string_array(
        "writable_roots",
        "More directories confined commands may write to, besides the working directory, /tmp \
         and $TMPDIR; ~ is your home, relative paths resolve against the working directory.",
    ),
    KeySpec::string_array(
        "deny_read",
        "Paths confined commands may not read. Default: [\"~/.ssh\", \"~/.gnupg\", \"~/.aws\", \
         \"~/.etch/auth\", \"~/.config/gh\"]; a list replaces the default.",
    ),
];

/// The sandbox modes, loosest first.
pub(crate) const SANDBOX_MODES: &[&str] = &["off", "workspace-write", "read-only"];

/// `[approval]` keys: which tool calls wait for the user.
const APPROVAL: &[KeySpec] = &[
    KeySpec::string(
        "policy",
        "When a tool call waits for your answer: \"never\" (never ask; a request to leave the \
         sandbox is refused), \"on-request\" (when the model asks to run a command outside the \
         sandbox), \"untrusted\" (for anything not known to be read-only) or \"always\" (for \
         every call of a tool that can change something).",
    )
    .allowed(APPROVAL_POLICIES)
    .default(Literal::Str("on-request")),
    KeySpec::string_array(
        "ask",
        "Tools whose calls always ask first, whatever the policy but \"never\"; a name ending \
         in * matches by prefix (\"mcp__*\"). [acp] ask is read when this is unset.",
    ),
];

/// The approval policies, most trusting first.
pub(crate) const APPROVAL_POLICIES: &[&str] = &["never", "on-request", "untrusted", "always"];

/// `[process]` keys: background processes (`bash` with `background`).
const PROCESS: &[KeySpec] = &[
    KeySpec::integer(
        "max_running",
        1,
        256,
        "Most background processes one session runs at once; a start beyond them is refused \
         with a message to stop one first.",
    )
    .default(Literal::Int(16)),
    KeySpec::boolean(
        "wake_on_output",
        "When the model would end its turn while a process it started in that turn is still \
         running and printed something new, give it the output and another round instead of \
         delivering the output with your next prompt.",
    )
    .default(Literal::Bool(false)),
];

/// `[serve]` keys: the HTTP front end, `etch serve`.
const SERVE: &[KeySpec] = &[
    KeySpec::string(
        "token_file",
        "File holding the token etch serve requires (kept 0600; created with a random token when \
         missing). Unset: a new random token every start.",
    )
    .path(),
    KeySpec::integer(
        "max_running",
        1,
        U32_MAX,
        "Most runs etch serve runs at once; a prompt beyond them is answered 429 with Retry-After.",
    )
    .default(Literal::Int(8)),
    KeySpec::integer(
        "idle_unload_secs",
        0,
        U32_MAX,
        "Seconds a served session with no client and no run stays in memory before it is unloaded \
         (its log remains; the next request reloads it); 0 never unloads.",
    )
    .default(Literal::Int(600)),
];

/// `[[subagents.profile]]` keys (E-CFG-14); unset keys inherit from the parent,
/// and the budgets `max_tokens` and `max_seconds` bound nothing when unset.
const SUBAGENT_PROFILE: &[KeySpec] = &[
    KeySpec::string("name", "Profile name the model passes to the task tool.")
        .required(Requirement::Always)
        .form(Form::ProfileName),
    KeySpec::string(
        "description",
        "What the profile is for, shown to the model.",
    ),
    KeySpec::string("provider", "Provider of the subagent.").allowed(PROVIDERS),
    KeySpec::string("model", "Model of the subagent."),
    KeySpec::string("openai_api", "OpenAI API of the subagent.").allowed(OPENAI_APIS),
    KeySpec::string("reasoning_effort", "Reasoning effort of the subagent.")
        .allowed(REASONING_EFFORTS),
    KeySpec::string(
        "reasoning_summary",
        "Reasoning summary detail of the subagent.",
    )
    .allowed(REASONING_SUMMARIES),
    KeySpec::string(
        "system_prompt_file",
        "File with the subagent's system instructions; relative to the project root, else the cwd.",
    )
    .path(),
    KeySpec::string_array("allowed_tools", "Tools the subagent may call, by name."),
    KeySpec::integer(
        "max_tool_rounds",
        1,
        U32_MAX,
        "Most model/tool rounds of the subagent's run.",
    ),
    KeySpec::boolean(
        "auto_compact",
        "Whether the subagent compacts automatically.",
    ),
    KeySpec::integer(
        "auto_compact_threshold_tokens",
        0,
        i64::MAX,
        "Estimated context tokens at which the subagent compacts.",
    ),
    KeySpec::integer(
        "max_tokens",
        1,
        i64::MAX,
        "Most tokens (input plus output, over all of the child's model requests) a child may use; it stops when it passes this.",
    ),
    KeySpec::integer(
        "max_seconds",
        1,
        i64::MAX,
        "Most seconds a child may run; it stops when it passes this.",
    ),
];

/// `[[plugins]]` keys (E-CFG-12).
const PLUGINS: &[KeySpec] = &[
    KeySpec::string("name", "Plugin name, used in diagnostics.").required(Requirement::Always),
    KeySpec::string(
        "command",
        "Command started through the shell from the project directory; speaks JSONL-RPC on stdio.",
    )
    .required(Requirement::WhenEnabled),
    KeySpec::integer(
        "timeout_seconds",
        1,
        i64::MAX,
        "Seconds allowed for initialize and for each tool call.",
    )
    .default(Literal::Int(30)),
    KeySpec::string_array(
        "env",
        "Environment variables passed to the plugin on top of the sanitized default set.",
    ),
    KeySpec::boolean("disabled", "Keep the entry but never start the plugin.")
        .default(Literal::Bool(false)),
    KeySpec::boolean(
        "sandbox",
        "Run the plugin inside the [sandbox] like the model's commands; your own plugins are \
         not confined by default.",
    )
    .default(Literal::Bool(false)),
];

/// `[[mcp.servers]]` keys (E-CFG-23).
const MCP_SERVERS: &[KeySpec] = &[
    KeySpec::string(
        "name",
        "Server name, used in tool names (mcp__<name>__<tool>) and diagnostics.",
    )
    .required(Requirement::Always)
    .form(Form::ServerName),
    KeySpec::string(
        "command",
        "Program of a stdio server, run directly (not through a shell) from the project directory.",
    ),
    KeySpec::string_array("args", "Arguments of command."),
    KeySpec::string(
        "url",
        "Streamable HTTP endpoint of a remote server (http:// or https://).",
    )
    .form(Form::HttpUrl),
    KeySpec::string_array(
        "headers",
        "Extra HTTP headers as \"Name: value\"; ${VAR} in a value is taken from the environment, so tokens stay out of the file.",
    )
    .form(Form::HttpHeader),
    KeySpec::string(
        "bearer_token_env",
        "Environment variable holding a bearer token sent as Authorization: Bearer …",
    )
    .form(Form::EnvVarName),
    KeySpec::string_array(
        "env",
        "Environment variables passed to a stdio server on top of the sanitized default set (credentials never pass).",
    ),
    KeySpec::integer(
        "timeout_seconds",
        1,
        i64::MAX,
        "Seconds allowed for start-up and for each tool call.",
    )
    .default(Literal::Int(30)),
    KeySpec::boolean("disabled", "Keep the entry but never start the server.")
        .default(Literal::Bool(false)),
    KeySpec::string_array(
        "enabled_tools",
        "Only these tools of the server are offered (by the server's own tool names).",
    ),
    KeySpec::string_array("disabled_tools", "These tools of the server are never offered."),
];

/// `[[hooks.<Event>]]` keys (E-CFG-15, G7).
const HOOKS: &[KeySpec] = &[
    KeySpec::string(
        "matcher",
        "Regex the event's subject must match in full; empty or * matches everything.",
    )
    .default(Literal::Str(""))
    .regex(),
    KeySpec::string(
        "command",
        "Command run through sh -c with the event's JSON envelope on stdin.",
    )
    .required(Requirement::WhenEnabled),
    KeySpec::integer(
        "timeout_seconds",
        1,
        i64::MAX,
        "Seconds before the hook is killed and counted as failed.",
    )
    .default(Literal::Int(30)),
    KeySpec::boolean("disabled", "Keep the entry but never run the hook.")
        .default(Literal::Bool(false)),
    KeySpec::string(
        "protocol",
        "Wire format: etch (the JSON envelope) or claude (Claude Code's hook format).",
    )
    .default(Literal::Str("etch"))
    .allowed(HOOK_PROTOCOLS),
];

/// `[[prices]]` keys: what a model costs, for the chat's footer.
const PRICES: &[KeySpec] = &[
    KeySpec::string("model", "The model name as sent to the provider.")
        .required(Requirement::Always),
    KeySpec::number(
        "input",
        0,
        1_000_000,
        "USD per million input tokens not served from cache.",
    )
    .required(Requirement::Always),
    KeySpec::number("output", 0, 1_000_000, "USD per million output tokens.")
        .required(Requirement::Always),
    KeySpec::number(
        "cached_input",
        0,
        1_000_000,
        "USD per million cached input tokens; left out, they cost as much as input.",
    ),
];

/// The hook wire formats.
pub(crate) const HOOK_PROTOCOLS: &[&str] = &["etch", "claude"];

/// Every table, in the order `--effective`, `config schema` and the sample use.
pub(crate) static TABLES: &[TableSpec] = &[
    TableSpec {
        name: "session",
        kind: TableKind::Table,
        milestone: Milestone::M1,
        description: "Where sessions are stored and how long one prompt may run.",
        keys: SESSION,
        rule: None,
    },
    TableSpec {
        name: "context",
        kind: TableKind::Table,
        milestone: Milestone::M1,
        description: "What the model context keeps and when it is compacted.",
        keys: CONTEXT,
        rule: None,
    },
    TableSpec {
        name: "provider",
        kind: TableKind::Table,
        milestone: Milestone::M1,
        description: "Which model provider and model run, and how requests are retried.",
        keys: PROVIDER,
        rule: None,
    },
    TableSpec {
        name: "openai",
        kind: TableKind::Table,
        milestone: Milestone::M1,
        description: "Settings of the OpenAI provider. Credentials come from flags or the environment.",
        keys: OPENAI,
        rule: None,
    },
    TableSpec {
        name: "anthropic",
        kind: TableKind::Table,
        milestone: Milestone::M1,
        description: "Settings of the Anthropic provider. The key comes from --api-key or ANTHROPIC_API_KEY.",
        keys: ANTHROPIC,
        rule: None,
    },
    TableSpec {
        name: "prompt",
        kind: TableKind::Table,
        milestone: Milestone::M1,
        description: "Extra system prompt text.",
        keys: PROMPT,
        rule: None,
    },
    TableSpec {
        name: "tools",
        kind: TableKind::Table,
        milestone: Milestone::M1,
        description: "Which built-in tools are offered.",
        keys: TOOLS,
        rule: None,
    },
    TableSpec {
        name: "tools.bash",
        kind: TableKind::Table,
        milestone: Milestone::M1,
        description: "Settings of the bash tool.",
        keys: TOOLS_BASH,
        rule: None,
    },
    TableSpec {
        name: "tools.read",
        kind: TableKind::Table,
        milestone: Milestone::M3,
        description: "Settings of the read tool.",
        keys: TOOLS_READ,
        rule: None,
    },
    TableSpec {
        name: "subagents",
        kind: TableKind::Table,
        milestone: Milestone::M2,
        description: "Subagents run through the task tool.",
        keys: SUBAGENTS,
        rule: None,
    },
    TableSpec {
        name: "subagents.profile",
        kind: TableKind::ArrayTable,
        milestone: Milestone::M2,
        description: "One subagent profile; keys left out inherit the parent's settings.",
        keys: SUBAGENT_PROFILE,
        rule: Some(EntryRule::NoNestedTask),
    },
    TableSpec {
        name: "acp",
        kind: TableKind::Table,
        milestone: Milestone::M2,
        description: "The editor front end, etch acp (Agent Client Protocol).",
        keys: ACP,
        rule: None,
    },
    TableSpec {
        name: "sandbox",
        kind: TableKind::Table,
        milestone: Milestone::M3,
        description: "The sandbox for commands the model runs: what they may write and read, and the network.",
        keys: SANDBOX,
        rule: None,
    },
    TableSpec {
        name: "approval",
        kind: TableKind::Table,
        milestone: Milestone::M3,
        description: "Which tool calls wait for your approval, in every front end.",
        keys: APPROVAL,
        rule: None,
    },
    TableSpec {
        name: "process",
        kind: TableKind::Table,
        milestone: Milestone::M3,
        description: "Background processes the model starts with bash background=true.",
        keys: PROCESS,
        rule: None,
    },
    TableSpec {
        name: "serve",
        kind: TableKind::Table,
        milestone: Milestone::M3,
        description: "The HTTP front end, etch serve: its token, how many runs at once, when idle sessions leave memory.",
        keys: SERVE,
        rule: None,
    },
    TableSpec {
        name: "plugins",
        kind: TableKind::ArrayTable,
        milestone: Milestone::M2,
        description: "One external plugin process; plugins are configured, never discovered.",
        keys: PLUGINS,
        rule: None,
    },
    TableSpec {
        name: "mcp.servers",
        kind: TableKind::ArrayTable,
        milestone: Milestone::M2,
        description: "One Model Context Protocol server whose tools etch offers as mcp__<server>__<tool>, through its MCP bridge.",
        keys: MCP_SERVERS,
        rule: Some(EntryRule::McpTransport),
    },
    TableSpec {
        name: "prices",
        kind: TableKind::ArrayTable,
        milestone: Milestone::M2,
        description: "What one model costs, so the chat's footer shows what a session spent; for a model named twice, the last entry wins.",
        keys: PRICES,
        rule: None,
    },
    TableSpec {
        name: HOOKS_TABLE,
        kind: TableKind::ArrayTable,
        milestone: Milestone::M2,
        description: "One hook command for an event (hooks.<Event>).",
        keys: HOOKS,
        rule: None,
    },
];

/// The table spec called `name` (`hooks.*` for hook tables).
pub(crate) fn table(name: &str) -> Option<&'static TableSpec> {
    TABLES.iter().find(|table| table.name == name)
}

/// The key spec for a dotted `table.key` (`hooks.*.matcher` or
/// `hooks.PreToolUse.matcher` for hooks).
pub(crate) fn key(dotted: &str) -> Option<(&'static TableSpec, &'static KeySpec)> {
    let (table_name, key_name) = dotted.rsplit_once('.')?;
    let table_name = match table_name.strip_prefix("hooks.") {
        Some(event) if event == "*" || HOOK_EVENTS.contains(&event) => HOOKS_TABLE,
        _ => table_name,
    };
    let table = table(table_name)?;
    Some((table, table.key(key_name)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Defaults must satisfy their own key's type, range and allowed set, or
    /// the compiled configuration would fail its own validation.
    #[test]
    fn defaults_respect_their_own_rules() {
        for table in TABLES {
            for key in table.keys {
                let Some(default) = key.default else { continue };
                match (key.ty, default) {
                    (ValueType::String, Literal::Str(text)) => {
                        if let Some(allowed) = key.allowed {
                            assert!(allowed.contains(&text), "{}.{}", table.name, key.name);
                        }
                    }
                    (ValueType::Integer, Literal::Int(value)) => {
                        assert!(key.min.is_none_or(|min| value >= min), "{}", key.name);
                        assert!(key.max.is_none_or(|max| value <= max), "{}", key.name);
                    }
                    (ValueType::Boolean, Literal::Bool(_)) => {}
                    _ => panic!("{}.{} default has the wrong type", table.name, key.name),
                }
            }
        }
    }

    /// Table and key names are unique, so lookups are unambiguous.
    #[test]
    fn names_are_unique() {
        let mut tables: Vec<_> = TABLES.iter().map(|table| table.name).collect();
        tables.sort_unstable();
        tables.dedup();
        assert_eq!(tables.len(), TABLES.len());
        for table in TABLES {
            let mut keys: Vec<_> = table.keys.iter().map(|key| key.name).collect();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), table.keys.len(), "{}", table.name);
        }
    }

    /// Dotted lookups find hook keys under any valid event name only.
    #[test]
    fn dotted_lookup_handles_hooks() {
        assert_eq!(key("openai.api").map(|(_, k)| k.name), Some("api"));
        assert_eq!(
            key("hooks.PreToolUse.matcher").map(|(t, _)| t.name),
            Some(HOOKS_TABLE)
        );
        assert_eq!(key("hooks.*.command").map(|(_, k)| k.name), Some("command"));
        assert!(key("hooks.Nope.command").is_none());
        assert!(key("openai.nope").is_none());
        assert!(key("nope").is_none());
    }
}
