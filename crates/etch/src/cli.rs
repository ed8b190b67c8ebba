//! Command-line surface: every flag and subcommand, with help text that
//! answers what each does and shows an example.
//!
//! This module only declares; `main.rs` dispatches and `run.rs`,
//! `sessions.rs` and `show.rs` do the work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Examples shown at the end of `etch --help`.
const EXAMPLES: &str = "\
Examples:
  etch -p \"summarize README.md\"          run one prompt and print the answer
  etch \"why does the build fail?\"        same as -p
  cat error.log | etch \"fix this\"        piped input is appended as a fenced block
  etch --json -p \"hello\"                 session events as JSONL, then a result line
  etch sessions                          list sessions, newest first
  etch show 01JX                         print a session transcript
  etch resume 01JX -p \"now add tests\"    continue a session headless
  etch tool grep TODO src                run one tool directly, as the model would
  etch --skill release -p \"cut 1.2\"      load a skill's instructions into the prompt
  etch status                            counters of the newest session
  etch context                           what the next request would contain
  etch compact --session 01JX            summarize old history (kept on disk)
  etch config check                      validate ~/.etch/config.toml and .etch/config.toml

Exit codes: 0 success, 1 the run failed, 2 usage error or unknown session,
130 interrupted (Ctrl-C).";

/// etch: a terminal coding agent with an append-only session log.
#[derive(Debug, Parser)]
#[command(
    name = "etch",
    version,
    about = "etch: a terminal coding agent with an append-only session log",
    long_about = "etch runs a coding agent against a model provider and records every step \
                  in an append-only JSONL session log under .etch/sessions/.\n\n\
                  Give a prompt with -p (or as the first argument) to run headless.",
    after_help = EXAMPLES
)]
pub struct Cli {
    /// Options shared by every command.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Options of a headless run.
    #[command(flatten)]
    pub run: RunArgs,
    /// The prompt, as an alternative to -p ("etch 'question'" = "etch -p 'question'").
    #[arg(value_name = "PROMPT")]
    pub positional_prompt: Option<String>,
    /// A subcommand; without one, etch runs the prompt.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options that every command accepts.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Change to DIR before doing anything else.
    #[arg(short = 'C', long = "workspace", value_name = "DIR", global = true)]
    pub workspace: Option<PathBuf>,
    /// Directory holding session files and index.jsonl (default: .etch/sessions
    /// in the project root). A relative path resolves against the current directory.
    #[arg(long, value_name = "DIR", global = true)]
    pub session_dir: Option<PathBuf>,
}

/// Options of a headless run (`etch -p`, `etch resume`).
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Run one prompt non-interactively and print the final answer.
    #[arg(short = 'p', long = "prompt", value_name = "TEXT")]
    pub prompt: Option<String>,
    /// Print the session's events as JSONL while they are appended, then a result line.
    #[arg(long)]
    pub json: bool,
    /// Model provider: echo (offline), openai or anthropic. Default: picked from
    /// the credentials found, else echo.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Model name to request from the provider (default for openai: gpt-5.5).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1
    /// for llama.cpp or http://localhost:11434/v1 for Ollama.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// API key for this run; wins over the environment. Local servers that
    /// need none: pass --api-key unused.
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// OpenAI API shape: chat (Chat Completions, the default) or responses.
    #[arg(long, value_name = "API", value_parser = ["chat", "responses"])]
    pub openai_api: Option<String>,
    /// How Responses requests travel: sse (HTTP, the default), websocket (one
    /// connection per session, continuing the previous response when it can)
    /// or auto (websocket, falling back to sse if it fails to connect).
    #[arg(long, value_name = "MODE", value_parser = ["sse", "websocket", "auto"])]
    pub openai_transport: Option<String>,
    /// Reasoning effort: for OpenAI Responses (default minimal) and as an
    /// Anthropic thinking budget (only when given). off sends no reasoning
    /// settings; Chat Completions never sends any.
    #[arg(long, value_name = "LEVEL", value_parser = ["none", "minimal", "low", "medium", "high", "xhigh", "off"])]
    pub reasoning_effort: Option<String>,
    /// Reasoning summaries for OpenAI Responses (default auto).
    #[arg(long, value_name = "MODE", value_parser = ["auto", "concise", "detailed", "none"])]
    pub reasoning_summary: Option<String>,
    /// Most model/tool rounds in one run before it stops with an error (default 32).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tool_rounds: Option<u32>,
    /// Active built-in tools, comma-separated (default: all seven:
    /// bash, edit, find, grep, ls, read, write).
    #[arg(
        long,
        value_name = "A,B",
        value_delimiter = ',',
        conflicts_with = "read_only"
    )]
    pub tools: Option<Vec<String>>,
    /// Only the read-only tools: read, grep, find, ls.
    #[arg(long)]
    pub read_only: bool,
    /// Load the skill NAME (from .etch/skills, .agents/skills or
    /// ~/.etch/skills) into the prompt before your text.
    #[arg(long, value_name = "NAME")]
    pub skill: Option<String>,
}

/// `etch context` actions.
#[derive(Debug, Subcommand)]
pub enum ContextAction {
    /// Write the full logical context (prompt layers, summary, conversation,
    /// tools) to a text file.
    Dump {
        /// Output file (default: .etch/context-dump-<session-id>.txt).
        #[arg(value_name = "PATH")]
        path: Option<PathBuf>,
    },
}

/// `etch config` actions.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Validate the user and project config files; exit 1 on any problem.
    Check,
    /// Print the configuration.
    Show {
        /// The merged result with every default, each value marked with where
        /// it came from.
        #[arg(long)]
        effective: bool,
    },
    /// Print every table and key with its type, default and description as
    /// JSON.
    Schema,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List local sessions, newest first.
    #[command(after_help = "Example:\n  etch sessions --json | jq '.[0].id'")]
    Sessions {
        /// Print the index rows as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Print a session's transcript.
    #[command(
        after_help = "Examples:\n  etch show 01JX\n  etch show --json 01JX > copy.jsonl\n\n\
                            PREFIX matches the start of a session id or of its last 10 characters."
    )]
    Show {
        /// Print the session file's valid JSONL lines verbatim.
        #[arg(long)]
        json: bool,
        /// Session id prefix.
        #[arg(value_name = "PREFIX")]
        prefix: String,
    },
    /// Log in to, inspect or log out of OpenAI (ChatGPT/Codex subscription).
    #[command(
        subcommand,
        after_help = "Examples:\n  etch auth login\n  etch auth status\n  etch auth logout"
    )]
    Auth(crate::auth_cmd::AuthCommand),
    /// Run one built-in tool directly and print exactly what the model would get.
    #[command(
        subcommand,
        after_help = "Examples:\n  etch tool read --offset 20 --limit 40 README.md\n  etch tool grep TODO src\n  etch tool bash -- cargo test"
    )]
    Tool(crate::tool_cmd::ToolCommand),
    /// Show a session's counters: age, turns, model calls, tools, compactions,
    /// tokens and transport.
    #[command(after_help = "Examples:\n  etch status\n  etch status --session 01JX --json")]
    Status {
        /// Session id prefix (default: the newest session).
        #[arg(long, value_name = "PREFIX")]
        session: Option<String>,
        /// Print the counters as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show what the next model request would contain: prompt layers with
    /// sizes, pinned files, skills, the active summary, the conversation and
    /// tool schemas.
    #[command(
        after_help = "Examples:\n  etch context\n  etch context --session 01JX --json\n  etch context dump /tmp/ctx.txt"
    )]
    Context {
        /// Write a dump instead of the summary.
        #[command(subcommand)]
        action: Option<ContextAction>,
        /// Session id prefix (default: the newest session, if any).
        #[arg(long, value_name = "PREFIX", global = true)]
        session: Option<String>,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Summarize a session's older history into a context.summary event; the
    /// full history stays in the log.
    #[command(
        after_help = "Examples:\n  etch compact --session 01JX\n  etch compact --session 01JX --focus \"the failing parser tests\""
    )]
    Compact {
        /// Session id prefix.
        #[arg(long, value_name = "PREFIX")]
        session: String,
        /// Extra instruction for the summary, e.g. what to keep in detail.
        #[arg(long, value_name = "TEXT")]
        focus: Option<String>,
        /// Provider options for the summary request.
        #[command(flatten)]
        run: RunArgs,
    },
    /// Check, show or describe the configuration.
    #[command(
        subcommand,
        after_help = "Examples:\n  etch config check\n  etch config show --effective\n  etch config schema | jq '.tables[].name'"
    )]
    Config(ConfigAction),
    /// Continue a session with a new prompt, headless.
    #[command(
        after_help = "Example:\n  etch resume 01JX -p \"now run the tests\"\n\n\
                            PREFIX matches the start of a session id or of its last 10 characters."
    )]
    Resume {
        /// Session id prefix.
        #[arg(value_name = "PREFIX")]
        prefix: String,
        /// Run options.
        #[command(flatten)]
        run: RunArgs,
    },
}

impl Command {
    /// The subcommand's name as typed.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Sessions { .. } => "sessions",
            Self::Show { .. } => "show",
            Self::Resume { .. } => "resume",
            Self::Tool(_) => "tool",
            Self::Auth(_) => "auth",
            Self::Status { .. } => "status",
            Self::Context { .. } => "context",
            Self::Compact { .. } => "compact",
            Self::Config(_) => "config",
        }
    }
}
