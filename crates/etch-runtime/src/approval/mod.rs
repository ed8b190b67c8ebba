//! Which tool calls wait for the user (`[approval]`), the same in every
//! front end: the policy decides whether a call needs an answer, and a
//! front end's [`Asker`] gets the question (an editor over ACP, the chat,
//! an RPC client; a `-p` run answers by its flags).
//!
//! The policies are Codex's: `never` asks nothing (and so a request to
//! leave the sandbox is refused), `on-request` asks when the model asks
//! to run a command outside the sandbox, `untrusted` also asks for any
//! call not known to be read-only, `always` asks for every call of a tool
//! that can change something. `[approval] ask` names tools that ask
//! under every policy but `never`.
//!
//! A decision is recorded in the session log (`approval.decision`), and
//! an answer "for this session" is remembered by the approver.
//!
//! This module must not know how a question is put to the user.

mod approver;
mod broker;
mod unattended;

pub use approver::{Answer, AskFuture, Asker, PolicyApprover};
pub use broker::{Alias, Asked, Broker, Show, Watch};
pub use unattended::Unattended;

use etch_config::{ApprovalConfig, Config, DEFAULT_ACP_ASK};

/// When calls ask (`[approval] policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Policy {
    /// Never ask.
    Never,
    /// Ask when a command asks to leave the sandbox.
    OnRequest,
    /// Ask for anything not known to be read-only.
    Untrusted,
    /// Ask for every call of a tool that can change something.
    Always,
}

impl Policy {
    /// The policy named `name` (the configuration's spelling); the
    /// default, `on-request`, for anything else.
    pub fn parse(name: &str) -> Self {
        match name {
            "never" => Self::Never,
            "untrusted" => Self::Untrusted,
            "always" => Self::Always,
            _ => Self::OnRequest,
        }
    }
}

/// What a call needs before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Nothing: it runs.
    Nothing,
    /// The user's answer; why it asks.
    Answer(Why),
    /// It may not run; why.
    Refused(String),
}

/// Why a call asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// It asks to run outside the sandbox.
    Bypass,
    /// `[approval] ask` names its tool.
    Listed,
    /// The policy is `untrusted` and it is not known to only read.
    NotReadOnly,
    /// The policy is `always`.
    Always,
}

impl Why {
    /// The reason in words, for whoever is asked.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bypass => "it asks to run outside the sandbox",
            Self::Listed => "[approval] ask names this tool",
            Self::NotReadOnly => {
                "the approval policy is untrusted and this call may change something"
            }
            Self::Always => "the approval policy is always",
        }
    }
}

/// The built-in tools that only read.
const READ_ONLY_TOOLS: [&str; 4] = ["read", "grep", "find", "ls"];

/// Programs whose plain use only reads (no redirection, no other command
/// chained), for `untrusted`.
const READ_ONLY_PROGRAMS: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "rg", "pwd", "echo", "stat", "file", "which",
    "tree", "du", "df", "date", "uname", "whoami", "id", "printenv", "sort", "uniq", "diff", "cmp",
    "basename", "dirname", "realpath", "readlink", "nl",
];

/// `git` subcommands that only read.
const READ_ONLY_GIT: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "branch",
    "blame",
    "ls-files",
    "rev-parse",
    "describe",
];

/// The policy with its tool list.
#[derive(Debug, Clone)]
pub struct Rules {
    /// When to ask.
    pub policy: Policy,
    /// Tools that always ask (a `*` suffix matches by prefix).
    pub ask: Vec<String>,
}

impl Rules {
    /// The rules `config` sets.
    pub fn new(config: &ApprovalConfig) -> Self {
        Self {
            policy: Policy::parse(&config.policy),
            ask: config.ask.clone().unwrap_or_default(),
        }
    }

    /// The rules of a session an editor drives (`etch acp`): the tools
    /// `[approval] ask` names and those `[acp] ask` names (without it,
    /// the tools that change files or run commands, as they always have
    /// there). Both lists only add: a project's empty `[approval] ask`
    /// cannot stop the editor being asked about `bash`.
    pub fn for_editor(config: &Config) -> Self {
        let mut ask: Vec<String> = config.approval.ask.clone().unwrap_or_default();
        let editor: Vec<String> = config
            .acp
            .ask
            .clone()
            .unwrap_or_else(|| DEFAULT_ACP_ASK.iter().map(|s| (*s).to_owned()).collect());
        for tool in editor {
            if !ask.contains(&tool) {
                ask.push(tool);
            }
        }
        Self {
            policy: Policy::parse(&config.approval.policy),
            ask,
        }
    }

    /// What a call of `tool` with `args` needs; `read_only` when the
    /// tool says it only reads.
    pub fn need(&self, tool: &str, args: &serde_json::Value, read_only: bool) -> Need {
        let bypass = leaves_sandbox(tool, args);
        if self.policy == Policy::Never {
            return if bypass {
                Need::Refused(
                    "the approval policy is \"never\", so no command runs outside the sandbox; \
                     run it inside, or ask the user to run it"
                        .to_owned(),
                )
            } else {
                Need::Nothing
            };
        }
        let listed = self
            .ask
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => tool.starts_with(prefix),
                None => tool == pattern,
            });
        if bypass {
            return Need::Answer(Why::Bypass);
        }
        if listed {
            return Need::Answer(Why::Listed);
        }
        match self.policy {
            Policy::Untrusted if !read_only && !known_read_only(tool, args) => {
                Need::Answer(Why::NotReadOnly)
            }
            Policy::Always if !read_only && !READ_ONLY_TOOLS.contains(&tool) => {
                Need::Answer(Why::Always)
            }
            _ => Need::Nothing,
        }
    }
}

/// Whether a call of `tool` with `args` asks to run outside the sandbox
/// (`bash`'s `bypass_sandbox`).
pub fn leaves_sandbox(tool: &str, args: &serde_json::Value) -> bool {
    tool == "bash" && args["bypass_sandbox"].as_bool() == Some(true)
}

/// Whether a call of `tool` is known to only read: a read-only built-in,
/// or a plain `bash` command of a read-only program.
fn known_read_only(tool: &str, args: &serde_json::Value) -> bool {
    if READ_ONLY_TOOLS.contains(&tool) {
        return true;
    }
    // Looking at background processes changes nothing; writing to one
    // or stopping it does.
    if tool == "process" {
        return matches!(args["action"].as_str(), Some("list" | "output"));
    }
    if tool != "bash" {
        return false;
    }
    let command = args["command"].as_str().unwrap_or_default();
    if command.contains(['>', '<', '|', ';', '&', '`', '$', '\n', '(', ')']) {
        return false;
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let Some((program, rest)) = words.split_first() else {
        return false;
    };
    // Options that write a file or run a program, whatever the program
    // (`sort -o`, `tree -o`, `git diff --output`, `rg --pre`, `find
    // -fprint`, `-exec`, `-delete`).
    let writes = |w: &&str| {
        w.starts_with("-o")
            || w.starts_with("--output")
            || w.starts_with("--pre")
            || w.starts_with("-f") && *program == "find"
            || ["-exec", "-execdir", "-ok", "-okdir", "-delete"].contains(w)
    };
    if rest.iter().any(writes) {
        return false;
    }
    let operands = rest.iter().filter(|w| !w.starts_with('-')).count();
    match *program {
        "git" => match rest.split_first() {
            // `git branch NAME`, `-d`, `-m`... change branches.
            Some((&"branch", flags)) => flags.iter().all(|f| {
                [
                    "-a",
                    "-r",
                    "-v",
                    "-vv",
                    "--all",
                    "--remotes",
                    "--list",
                    "--show-current",
                ]
                .contains(f)
            }),
            Some((sub, _)) => READ_ONLY_GIT.contains(sub),
            None => false,
        },
        "find" => true,
        // `uniq IN OUT` writes OUT.
        "uniq" => operands <= 1,
        program => READ_ONLY_PROGRAMS.contains(&program),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Rules for `policy` with `ask`.
    fn rules(policy: Policy, ask: &[&str]) -> Rules {
        Rules {
            policy,
            ask: ask.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// Under ACP the editor's list and `[approval] ask` add up: an empty
    /// `[approval] ask` (a project may set one untrusted) takes nothing
    /// away from the default `bash`, `write`, `edit`.
    #[test]
    fn the_editors_rules_only_add() {
        let mut config = Config::default();
        config.approval.ask = Some(Vec::new());
        assert_eq!(Rules::for_editor(&config).ask, ["bash", "write", "edit"]);
        config.approval.ask = Some(vec!["mcp__*".into(), "bash".into()]);
        assert_eq!(
            Rules::for_editor(&config).ask,
            ["mcp__*", "bash", "write", "edit"]
        );
        config.acp.ask = Some(Vec::new());
        assert_eq!(Rules::for_editor(&config).ask, ["mcp__*", "bash"]);
    }

    /// Each policy asks about what Codex's does.
    #[test]
    fn what_each_policy_asks_about() {
        let bypass = json!({"command": "git commit -m x", "bypass_sandbox": true});
        let ls = json!({"command": "ls -la src"});
        let rm = json!({"command": "rm -rf build"});
        let piped = json!({"command": "cat a > b"});
        let write = json!({"path": "a", "content": "b"});
        let on_request = rules(Policy::OnRequest, &["mcp__*"]);
        assert_eq!(
            on_request.need("bash", &bypass, false),
            Need::Answer(Why::Bypass)
        );
        assert_eq!(on_request.need("bash", &rm, false), Need::Nothing);
        assert_eq!(
            on_request.need("mcp__fs__write", &write, false),
            Need::Answer(Why::Listed)
        );
        let untrusted = rules(Policy::Untrusted, &[]);
        assert_eq!(untrusted.need("bash", &ls, false), Need::Nothing);
        assert_eq!(
            untrusted.need("bash", &rm, false),
            Need::Answer(Why::NotReadOnly)
        );
        assert_eq!(
            untrusted.need("bash", &piped, false),
            Need::Answer(Why::NotReadOnly)
        );
        assert_eq!(
            untrusted.need("bash", &json!({"command": "git status"}), false),
            Need::Nothing
        );
        assert_eq!(
            untrusted.need("bash", &json!({"command": "git push"}), false),
            Need::Answer(Why::NotReadOnly)
        );
        assert_eq!(
            untrusted.need("write", &write, false),
            Need::Answer(Why::NotReadOnly)
        );
        assert_eq!(
            untrusted.need("read", &json!({"path": "a"}), false),
            Need::Nothing
        );
        // An MCP tool counts as writing unless it says it only reads.
        let mcp_args = json!({"path": "a"});
        assert_eq!(
            untrusted.need("mcp__fs__read_file", &mcp_args, true),
            Need::Nothing
        );
        assert_eq!(
            untrusted.need("mcp__fs__write_file", &mcp_args, false),
            Need::Answer(Why::NotReadOnly)
        );
        let always = rules(Policy::Always, &[]);
        assert_eq!(always.need("bash", &ls, false), Need::Answer(Why::Always));
        assert_eq!(
            always.need("grep", &json!({"pattern": "x"}), false),
            Need::Nothing
        );
        let never = rules(Policy::Never, &["bash"]);
        assert_eq!(never.need("bash", &rm, false), Need::Nothing);
        assert!(matches!(
            never.need("bash", &bypass, false),
            Need::Refused(_)
        ));
    }
}
