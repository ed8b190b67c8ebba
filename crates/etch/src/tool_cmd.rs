//! `etch tool <name> ...`: run one built-in tool directly (E-CLI-11,
//! E-TOOL-21).
//!
//! The flags become the same JSON arguments a model would send, and the call
//! goes through the same tool code, so the printed text is exactly what the
//! model would get: a result on stdout with exit 0, or `tool error: ...` on
//! stdout with exit 1.

use std::path::Path;

use clap::Subcommand;
use etch_tool::{ProgressSink, ToolContext};
use etch_tools::builtin::{self, BuiltinOptions};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::exit::{self, Failure};
use etch_runtime::paths;

/// One tool invocation from the command line.
#[derive(Debug, Subcommand)]
pub enum ToolCommand {
    /// List a directory.
    #[command(after_help = "Examples:\n  etch tool ls\n  etch tool ls --limit 20 src")]
    Ls {
        /// Most entries to list (default 500).
        #[arg(long, allow_negative_numbers = true)]
        limit: Option<i64>,
        /// Directory (default: current directory).
        path: Option<String>,
    },
    /// Read a file with numbered lines.
    #[command(
        after_help = "Examples:\n  etch tool read README.md\n  etch tool read --offset 20 --limit 40 src/main.rs"
    )]
    Read {
        /// First line, 1-indexed.
        #[arg(long, allow_negative_numbers = true)]
        offset: Option<i64>,
        /// Most lines.
        #[arg(long, allow_negative_numbers = true)]
        limit: Option<i64>,
        /// File to read.
        path: String,
    },
    /// Find files and directories by substring or glob.
    #[command(
        after_help = "Examples:\n  etch tool find main .\n  etch tool find '*.rs' crates --limit 50"
    )]
    Find {
        /// Most results (default 1000).
        #[arg(long, allow_negative_numbers = true)]
        limit: Option<i64>,
        /// Extra glob filter (basename, or a path glob when it has '/').
        #[arg(long)]
        glob: Option<String>,
        /// Case-insensitive substring of the relative path, or a glob.
        pattern: String,
        /// Directory to search (default: current directory).
        path: Option<String>,
    },
    /// Search file contents (literal unless --regex).
    #[command(
        after_help = "Examples:\n  etch tool grep DefaultMaxToolRounds .\n  etch tool grep --regex 'fn \\w+_test' crates --context 2"
    )]
    Grep {
        /// Most matches in total (default 100).
        #[arg(long, allow_negative_numbers = true)]
        limit: Option<i64>,
        /// Treat the pattern as a regular expression.
        #[arg(long)]
        regex: bool,
        /// Match case-insensitively.
        #[arg(long)]
        ignore_case: bool,
        /// Only search files matching this glob.
        #[arg(long)]
        glob: Option<String>,
        /// Lines of context around each match.
        #[arg(long, allow_negative_numbers = true)]
        context: Option<i64>,
        /// The text (or regex) to find.
        pattern: String,
        /// Files or directories to search (default: current directory).
        paths: Vec<String>,
    },
    /// Create or replace a file.
    #[command(after_help = "Example:\n  etch tool write --content 'hello' notes/hello.txt")]
    Write {
        /// The complete new content (verbatim).
        #[arg(long)]
        content: String,
        /// File to write.
        path: String,
    },
    /// Replace exact text in a file.
    #[command(after_help = "Example:\n  etch tool edit --old hello --new goodbye notes/hello.txt")]
    Edit {
        /// Text to replace (must match exactly one place).
        #[arg(long = "old")]
        old_text: String,
        /// Replacement text.
        #[arg(long = "new")]
        new_text: String,
        /// Show the diff without writing.
        #[arg(long)]
        dry_run: bool,
        /// File to edit.
        path: String,
    },
    /// Run a shell command with bash -lc.
    #[command(after_help = "Example:\n  etch tool bash -- cargo test --workspace")]
    Bash {
        /// Timeout in seconds (default 30, max 120).
        #[arg(long, allow_negative_numbers = true)]
        timeout: Option<i64>,
        /// The command (joined with spaces).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
}

impl ToolCommand {
    /// The tool name and its JSON arguments.
    fn call(self) -> (&'static str, Value) {
        /// Inserts a value when present.
        fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
            if let Some(v) = value {
                map.insert(key.to_string(), v);
            }
        }
        let mut m = Map::new();
        let name = match self {
            Self::Ls { limit, path } => {
                put(&mut m, "path", path.map(Value::from));
                put(&mut m, "limit", limit.map(Value::from));
                "ls"
            }
            Self::Read {
                offset,
                limit,
                path,
            } => {
                m.insert("path".into(), json!(path));
                put(&mut m, "offset", offset.map(Value::from));
                put(&mut m, "limit", limit.map(Value::from));
                "read"
            }
            Self::Find {
                limit,
                glob,
                pattern,
                path,
            } => {
                m.insert("pattern".into(), json!(pattern));
                put(&mut m, "path", path.map(Value::from));
                put(&mut m, "glob", glob.map(Value::from));
                put(&mut m, "limit", limit.map(Value::from));
                "find"
            }
            Self::Grep {
                limit,
                regex,
                ignore_case,
                glob,
                context,
                pattern,
                paths,
            } => {
                m.insert("pattern".into(), json!(pattern));
                match paths.len() {
                    0 => {}
                    1 => {
                        m.insert("path".into(), json!(paths[0]));
                    }
                    _ => {
                        m.insert("paths".into(), json!(paths));
                    }
                }
                if regex {
                    m.insert("regex".into(), json!(true));
                }
                if ignore_case {
                    m.insert("ignoreCase".into(), json!(true));
                }
                put(&mut m, "glob", glob.map(Value::from));
                put(&mut m, "context", context.map(Value::from));
                put(&mut m, "limit", limit.map(Value::from));
                "grep"
            }
            Self::Write { content, path } => {
                m.insert("path".into(), json!(path));
                m.insert("content".into(), json!(content));
                "write"
            }
            Self::Edit {
                old_text,
                new_text,
                dry_run,
                path,
            } => {
                m.insert("path".into(), json!(path));
                m.insert(
                    "edits".into(),
                    json!([{"oldText": old_text, "newText": new_text}]),
                );
                if dry_run {
                    m.insert("dryRun".into(), json!(true));
                }
                "edit"
            }
            Self::Bash { timeout, command } => {
                m.insert("command".into(), json!(command.join(" ")));
                put(&mut m, "timeout", timeout.map(Value::from));
                "bash"
            }
        };
        (name, Value::Object(m))
    }
}

/// Runs the tool and prints what the model would see.
pub async fn run(cwd: &Path, command: ToolCommand) -> Result<(), Failure> {
    let (name, args) = command.call();
    let registry = builtin::registry(&[name], &BuiltinOptions::default())
        .map_err(|e| Failure::new(exit::FAILED, e))?;
    let Some(tool) = registry.get(name) else {
        return Err(Failure::usage(format!("unknown tool {name}")));
    };
    let cancel = CancellationToken::new();
    let watcher = crate::run::watch_sigint(cancel.clone())?;
    let ctx = ToolContext {
        call_id: format!("cli-{}", etch_session::id::new_id()),
        cwd: cwd.to_path_buf(),
        cancel: cancel.clone(),
        progress: ProgressSink::default(),
        temp_dir: paths::project_root(cwd)
            .join(".etch")
            .join("tmp")
            .join("cli"),
        origin: etch_tool::CallOrigin::default(),
        approved: false,
    };
    let result = tool.execute(args, ctx).await;
    watcher.abort();
    // A spilled bash output may have created `.etch/tmp`: keep it out of git.
    if let Err(err) = paths::keep_state_out_of_git(cwd) {
        diag!("etch: warning: {err}");
    }
    match result {
        Ok(out) => {
            // What the model would get, for a person: a file's escape
            // sequences must not reach the terminal.
            crate::output::print_prose_line(&out.text);
            Ok(())
        }
        Err(err) => {
            crate::output::print_prose_line(&format!("tool error: {err}"));
            let code = if cancel.is_cancelled() {
                exit::INTERRUPTED
            } else {
                exit::FAILED
            };
            Err(Failure::silent(code))
        }
    }
}
