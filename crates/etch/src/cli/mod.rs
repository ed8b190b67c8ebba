//! Command-line surface: every flag and subcommand, with help text that
//! answers what each does and shows an example.
//!
//! This module only declares (`outer` brings options typed before a
//! subcommand to it, `typos` refuses a mistyped subcommand as a prompt);
//! `main.rs` dispatches and `run.rs`, `sessions.rs` and `show.rs` do the
//! work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod outer;
mod typos;

pub use outer::{absorb_outer, joined_prompt};
pub use typos::reject_mistyped_command;

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
    /// Several words are joined with spaces, after the -p text if both are given.
    #[arg(value_name = "PROMPT")]
    pub positional_prompt: Vec<String>,
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
// Each flag is its own switch on the command line; bools are clap's way.
#[allow(clippy::struct_excessive_bools)]
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
    /// API key for this run; wins over the environment and is sent to any
    /// base URL. Environment keys and logins go only to their own service,
    /// so a local server needs no key flag (see [openai] auth).
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
    #[arg(long, value_name = "LEVEL", value_parser = clap::builder::PossibleValuesParser::new(etch_config::REASONING_EFFORTS))]
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
    /// With -p: allow the calls [approval] policy would ask about (no
    /// one can be asked during a -p run, so they are refused otherwise).
    #[arg(long)]
    pub approve_all: bool,
    /// With -p: let the model run a command outside the sandbox when it
    /// asks to (bypass_sandbox); refused otherwise, even with
    /// --approve-all.
    #[arg(long)]
    pub allow_unsandboxed: bool,
    /// Load the skill NAME (from .etch/skills, .agents/skills or
    /// ~/.etch/skills) into the prompt before your text.
    #[arg(long, value_name = "NAME")]
    pub skill: Option<String>,
    /// Attach the image FILE (PNG, JPEG, GIF or WebP) to the prompt;
    /// repeat for more. Images larger than [tools.read] image_max_edge
    /// (2000 px) are resized first.
    #[arg(long = "image", value_name = "FILE")]
    pub images: Vec<PathBuf>,
}

impl RunArgs {
    /// These options (given after a subcommand) completed with `outer`
    /// (given before it), so that `etch --model M resume ID` means what
    /// `etch resume ID --model M` does. An option given on both sides with
    /// different values is an error naming it.
    pub fn merged_with(mut self, outer: &RunArgs) -> Result<RunArgs, String> {
        /// Takes the outer value where the inner one is unset.
        fn fill<T: PartialEq + Clone>(
            inner: &mut Option<T>,
            outer: Option<&T>,
            name: &str,
        ) -> Result<(), String> {
            match (inner.as_ref(), outer) {
                (Some(a), Some(b)) if a != b => Err(format!(
                    "{name} is given twice with different values, before and after the subcommand; give it once"
                )),
                (None, Some(b)) => {
                    *inner = Some(b.clone());
                    Ok(())
                }
                _ => Ok(()),
            }
        }
        fill(&mut self.prompt, outer.prompt.as_ref(), "-p/--prompt")?;
        fill(&mut self.provider, outer.provider.as_ref(), "--provider")?;
        fill(&mut self.model, outer.model.as_ref(), "--model")?;
        fill(&mut self.base_url, outer.base_url.as_ref(), "--base-url")?;
        fill(&mut self.api_key, outer.api_key.as_ref(), "--api-key")?;
        fill(
            &mut self.openai_api,
            outer.openai_api.as_ref(),
            "--openai-api",
        )?;
        fill(
            &mut self.openai_transport,
            outer.openai_transport.as_ref(),
            "--openai-transport",
        )?;
        fill(
            &mut self.reasoning_effort,
            outer.reasoning_effort.as_ref(),
            "--reasoning-effort",
        )?;
        fill(
            &mut self.reasoning_summary,
            outer.reasoning_summary.as_ref(),
            "--reasoning-summary",
        )?;
        fill(
            &mut self.max_tool_rounds,
            outer.max_tool_rounds.as_ref(),
            "--max-tool-rounds",
        )?;
        fill(&mut self.tools, outer.tools.as_ref(), "--tools")?;
        fill(&mut self.skill, outer.skill.as_ref(), "--skill")?;
        if self.images.is_empty() {
            self.images.clone_from(&outer.images);
        } else if !outer.images.is_empty() {
            return Err(
                "--image is given both before and after the subcommand; give them on one side"
                    .to_owned(),
            );
        }
        if (self.tools.is_some() && outer.read_only) || (self.read_only && outer.tools.is_some()) {
            return Err("--tools and --read-only cannot be used together".to_owned());
        }
        self.json |= outer.json;
        self.read_only |= outer.read_only;
        self.approve_all |= outer.approve_all;
        self.allow_unsandboxed |= outer.allow_unsandboxed;
        Ok(self)
    }

    /// The options that are set, by flag name, for refusing them where a
    /// command has no use for them.
    pub fn given(&self) -> Vec<&'static str> {
        let flags = [
            (self.prompt.is_some(), "-p/--prompt"),
            (self.json, "--json"),
            (self.provider.is_some(), "--provider"),
            (self.model.is_some(), "--model"),
            (self.base_url.is_some(), "--base-url"),
            (self.api_key.is_some(), "--api-key"),
            (self.openai_api.is_some(), "--openai-api"),
            (self.openai_transport.is_some(), "--openai-transport"),
            (self.reasoning_effort.is_some(), "--reasoning-effort"),
            (self.reasoning_summary.is_some(), "--reasoning-summary"),
            (self.max_tool_rounds.is_some(), "--max-tool-rounds"),
            (self.tools.is_some(), "--tools"),
            (self.read_only, "--read-only"),
            (self.skill.is_some(), "--skill"),
            (self.approve_all, "--approve-all"),
            (self.allow_unsandboxed, "--allow-unsandboxed"),
            (!self.images.is_empty(), "--image"),
        ];
        flags
            .into_iter()
            .filter_map(|(set, name)| set.then_some(name))
            .collect()
    }
}

/// `etch context` actions.
#[derive(Debug, Subcommand)]
pub enum ContextAction {
    /// Write the full logical context (prompt layers, summary, conversation,
    /// tools) to a text file.
    Dump {
        /// Output file (default: .etch/context-dump-<session-id>.txt); - writes
        /// to stdout.
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
        after_help = "Examples:\n  etch show\n  etch show 01JX\n  etch show --tree 01JX\n  etch show --json 01JX > copy.jsonl\n\n\
                            PREFIX matches the start of a session id or of its last 10 characters."
    )]
    Show {
        /// Print the session file's valid JSONL lines verbatim.
        #[arg(long, conflicts_with = "tree")]
        json: bool,
        /// Print the session as a tree: one line per message with its short
        /// id, labels, the active branch marked * and the leaf.
        #[arg(long)]
        tree: bool,
        /// Session id prefix (default: the session last used).
        #[arg(value_name = "PREFIX")]
        prefix: Option<String>,
    },
    /// Write a session's transcript to a file: a self-contained HTML page
    /// (nothing in it runs), markdown-ish plain text, or the JSONL log.
    #[command(
        after_help = "Examples:\n  etch export\n  etch export 01JX --format md\n  \
                            etch export -o review.html\n  etch export --format jsonl -o - | jq .type\n\n\
                            The format is --format, else the extension of -o, else html. Without -o the file is\n\
                            etch-<session-id>.<format> in the current directory; -o - prints it."
    )]
    Export {
        /// Session id prefix (default: the session last used).
        #[arg(value_name = "PREFIX")]
        prefix: Option<String>,
        /// html, md or jsonl.
        #[arg(long, value_parser = ["html", "md", "jsonl"])]
        format: Option<String>,
        /// Where to write (`-` for stdout).
        #[arg(short = 'o', long = "output", value_name = "PATH")]
        output: Option<std::path::PathBuf>,
    },
    /// Import another agent's sessions (Pi's) as etch sessions.
    #[command(subcommand)]
    Import(crate::import_cmd::ImportCommand),
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
    /// List the configured hooks, or run the hooks of one event once with
    /// a sample envelope to see what they answer.
    #[command(
        subcommand,
        after_help = "Examples:\n  etch hooks list\n  etch hooks test PreToolUse --subject write\n  etch hooks test UserPromptSubmit"
    )]
    Hooks(crate::hooks_cmd::HooksCommand),
    /// List the configured plugins with their state and tools, or start
    /// each once to check it.
    #[command(
        subcommand,
        after_help = "Examples:\n  etch plugins list\n  etch plugins check"
    )]
    Plugins(crate::plugins_cmd::PluginsCommand),
    /// List the configured MCP servers ([[mcp.servers]]) with their state
    /// and tools, or start one to check it without a model.
    #[command(
        subcommand,
        after_help = "Examples:\n  etch mcp list\n  etch mcp check git"
    )]
    Mcp(crate::mcp_cmd::McpCommand),
    /// Show what this project's .etch/config.toml would run (its hooks
    /// and plugins) and whether you trusted exactly that; --yes trusts
    /// it. Project entries do not run until trusted; your own
    /// ~/.etch/config.toml is.
    #[command(after_help = "Examples:\n  etch trust\n  etch trust --yes")]
    Trust {
        /// Trust the entries listed.
        #[arg(long)]
        yes: bool,
    },
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
        /// Extra instruction for the summary, e.g. what to keep in detail
        /// (implies --force).
        #[arg(long, value_name = "TEXT")]
        focus: Option<String>,
        /// Compact even a short session: summarize everything but the last
        /// turn, however little that saves.
        #[arg(long)]
        force: bool,
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
    /// Open the interactive chat (what `etch` with no prompt does on a
    /// terminal): a new session, or the one --session names.
    #[command(
        after_help = "Examples:\n  etch chat\n  etch chat --session 01JX\n  etch chat --provider openai --model gpt-5.5\n  \
                      etch chat --attach 'http://127.0.0.1:7411/?token=...#01JX'\n\n\
                      Enter sends; while a run is active it steers the run. Esc cancels. /help lists the\n\
                      commands, /hotkeys the keys; Ctrl-D quits and prints how to resume."
    )]
    Chat {
        /// Continue this session (id prefix) instead of starting a new one.
        #[arg(long, value_name = "PREFIX", conflicts_with = "attach")]
        session: Option<String>,
        /// Drive a session `etch serve` holds: the URL it printed
        /// (http://127.0.0.1:7411/?token=...), with #ID or
        /// /v1/sessions/ID for a session (else a new one there). The token
        /// may come from ETCH_SERVE_TOKEN instead.
        #[arg(long, value_name = "URL")]
        attach: Option<String>,
        /// Run options.
        #[command(flatten)]
        run: RunArgs,
    },
    /// Serve editors over the Agent Client Protocol (ACP v1, JSON-RPC on
    /// stdin and stdout): Zed, JetBrains IDEs, Neovim and Emacs start
    /// `etch acp` as their agent. Each ACP session is an etch session on
    /// disk (`etch sessions`, `show` and `resume` see it).
    #[command(after_help = "Examples:\n  \
                      etch acp                              (as an editor's agent command)\n  \
                      etch acp --model qwen3 --base-url http://127.0.0.1:8080/v1\n\n\
                      Methods: initialize, session/new, session/load, session/prompt, session/cancel,\n\
                      session/set_config_option (model). Tools listed in [acp] ask (default bash, write,\n\
                      edit) ask the editor with session/request_permission before they run.\n\
                      Diagnostics go to stderr; stdout carries only protocol messages.")]
    Acp {
        /// Run options (provider, model, tools) for every session.
        #[command(flatten)]
        run: RunArgs,
    },
    /// Serve a session over JSON lines on stdin and stdout, for editors and
    /// scripts: Pi's RPC commands in, responses and events out, each tagged
    /// with the id of the command that caused it.
    #[command(after_help = "Examples:\n  \
                      (echo '{\"id\":\"1\",\"type\":\"prompt\",\"message\":\"hi\"}'; sleep 5) | etch rpc\n  \
                      etch rpc --session 01JX --model gpt-5.5\n\n\
                      Commands: prompt (streamingBehavior steer|followUp while a run is active), steer, follow_up,\n\
                      abort, compact, set_model, set_thinking_level, set_steering_mode, set_follow_up_mode, fork,\n\
                      navigate, new_session, switch_session, clone, bash, abort_bash, get_state, get_messages,\n\
                      get_fork_messages, get_session_stats, get_last_assistant_text, set_session_name,\n\
                      cycle_model, cycle_thinking_level, get_available_models, get_commands,\n\
                      set_auto_compaction, export, export_html.\n\
                      Keep stdin open until agent_end: when it closes, the active run is aborted cleanly\n\
                      and etch exits 0. abort hands queued prompts back in its response (unsent).")]
    Rpc {
        /// Continue this session (id prefix) instead of starting a new one.
        #[arg(long, value_name = "PREFIX")]
        session: Option<String>,
        /// Run options.
        #[command(flatten)]
        run: RunArgs,
    },
    /// Serve sessions over HTTP and server-sent events: create sessions,
    /// prompt them, send any `etch rpc` command, stream their events (with
    /// replay from the last event id after a reconnect), read their
    /// messages and logs; a web page at / and `etch chat --attach`.
    #[command(after_help = "Examples:\n  \
                      etch serve                          (http://127.0.0.1:7411, this directory)\n  \
                      etch serve --listen 127.0.0.1:0 --json --root ~/src/a --root ~/src/b\n  \
                      curl -H \"Authorization: Bearer $TOKEN\" http://127.0.0.1:7411/v1/sessions\n  \
                      etch chat --attach 'http://127.0.0.1:7411/?token=...#SESSION'\n\n\
                      The first line on stdout is the URL with the token: open it for the web page (with\n\
                      --json: {\"type\":\"listening\",\"url\":…,\"token\":…}). Every route but GET /health needs\n\
                      Authorization: Bearer TOKEN. Routes: GET /v1/sessions, POST /v1/sessions {cwd?, provider?,\n\
                      model?, thinking?, tools?}, POST /v1/sessions/ID/prompt {message, streamingBehavior?},\n\
                      POST /v1/sessions/ID/commands (an etch rpc command), POST /v1/sessions/ID/name {name},\n\
                      GET /v1/sessions/ID/messages, GET /v1/sessions/ID/log, GET /v1/sessions/ID/events (SSE;\n\
                      Last-Event-ID or ?after=ID|0), GET /v1/events (every session's lifecycle, SSE); the whole\n\
                      API as OpenAPI 3.1 at GET /openapi.json.\n\
                      [serve] in the configuration: token_file (keep one token across starts), max_running\n\
                      (runs at once, default 8; more get 429), idle_unload_secs (default 600).\n\
                      Run options (--provider, --model, --base-url, --tools...) are the defaults of new sessions.\n\n\
                      --9p serves the same sessions as files, for shell scripts, acme and any 9P2000 client:\n  \
                      /sessions/new (write cwd=, provider=, model=, thinking=, name= lines; read the new id),\n  \
                      /sessions/idx (id, name, state, cwd per line), /eventwait (blocks for the next event),\n  \
                      /sessions/ID/prompt (write; steers a running session), /sessions/ID/ctl (write abort,\n  \
                      compact, model, thinking, name or fork; read it for the syntax), /sessions/ID/chat (the\n  \
                      answer as it streams, blocking; --- end --- ends a run), events (RPC events as JSON\n  \
                      lines), state (idle/running; blocks until it changes), log, stats, name.\n  \
                      etch serve --9p unix:$XDG_RUNTIME_DIR/etch.9p\n\n\
                      Ctrl-C or SIGTERM stops accepting, aborts runs (logs stay valid) and exits 0.")]
    Serve {
        /// Address to listen on; port 0 picks a free one. An address off
        /// this machine needs --insecure-remote.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7411")]
        listen: String,
        /// Also serve the sessions as a 9P2000 file tree: `unix:PATH` (a
        /// socket only you can use) or a TCP address such as
        /// 127.0.0.1:5640 (attach with the token as the attach name).
        #[arg(long = "9p", value_name = "ADDR")]
        nine_p: Option<String>,
        /// Serve the sessions of this directory (repeatable; default: the
        /// current directory). New sessions' cwd must be inside one.
        #[arg(long = "root", value_name = "DIR")]
        roots: Vec<std::path::PathBuf>,
        /// Listen off this machine over plain HTTP (etch serve has no TLS:
        /// the token and every prompt cross the network unencrypted).
        #[arg(long)]
        insecure_remote: bool,
        /// Run options: the defaults of new sessions (--json prints the
        /// listening line as JSON).
        #[command(flatten)]
        run: RunArgs,
    },
    /// Continue a session with a new prompt, headless. The session's
    /// provider, model and endpoint are used again unless flags say otherwise.
    #[command(
        after_help = "Examples:\n  etch resume 01JX -p \"now run the tests\"\n  \
                      etch resume 01JX \"now run the tests\"\n  \
                      etch resume --last -p \"continue\"\n  \
                      etch --model gpt-5.5 resume 01JX -p \"again\"   (run options go on either side)\n\n\
                      PREFIX matches the start of a session id or of its last 10 characters."
    )]
    Resume {
        /// Continue the newest session instead of naming one.
        #[arg(long)]
        last: bool,
        /// Session id prefix (not with --last).
        #[arg(value_name = "PREFIX")]
        prefix: Option<String>,
        /// The prompt, as an alternative to -p.
        #[arg(value_name = "PROMPT")]
        words: Vec<String>,
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
            Self::Export { .. } => "export",
            Self::Import(_) => "import",
            Self::Resume { .. } => "resume",
            Self::Tool(_) => "tool",
            Self::Hooks(_) => "hooks",
            Self::Plugins(_) => "plugins",
            Self::Mcp(_) => "mcp",
            Self::Trust { .. } => "trust",
            Self::Auth(_) => "auth",
            Self::Status { .. } => "status",
            Self::Context { .. } => "context",
            Self::Compact { .. } => "compact",
            Self::Config(_) => "config",
            Self::Rpc { .. } => "rpc",
            Self::Serve { .. } => "serve",
            Self::Acp { .. } => "acp",
            Self::Chat { .. } => "chat",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options on both sides of a subcommand merge; a conflict is named.
    #[test]
    fn run_options_merge_across_the_subcommand() {
        let parse = |args: &[&str]| Cli::try_parse_from(args).unwrap();
        let cli = parse(&["etch", "--model", "m", "resume", "01", "-p", "x"]);
        let Some(Command::Resume { run, .. }) = cli.command else {
            panic!("not resume")
        };
        let merged = run.merged_with(&cli.run).unwrap();
        assert_eq!(merged.model.as_deref(), Some("m"));
        assert_eq!(merged.prompt.as_deref(), Some("x"));
        let cli = parse(&["etch", "--model", "a", "resume", "01", "--model", "b"]);
        let Some(Command::Resume { run, .. }) = cli.command else {
            panic!("not resume")
        };
        let err = run.merged_with(&cli.run).unwrap_err();
        assert!(err.contains("--model"), "{err}");
        assert_eq!(
            joined_prompt(Some("one".into()), &["two".into()]).as_deref(),
            Some("one two")
        );
        assert_eq!(joined_prompt(None, &[]), None);
    }
}
