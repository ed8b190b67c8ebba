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
//! This module must not know how a question is put to the user.

use std::sync::Arc;

use etch_config::ApprovalConfig;
use etch_tool::{Approval, ApprovalFuture, ApprovalRequest, Approver};

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
    /// The user's answer.
    Answer,
    /// It may not run; why.
    Refused(String),
}

/// The built-in tools that only read.
const READ_ONLY_TOOLS: [&str; 4] = ["read", "grep", "find", "ls"];

/// Programs whose plain use only reads (no redirection, no other command
/// chained), for `untrusted`.
const READ_ONLY_PROGRAMS: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "rg", "pwd", "echo", "stat", "file", "which",
    "tree", "du", "df", "date", "uname", "whoami", "id", "env", "printenv", "sort", "uniq", "diff",
    "cmp", "basename", "dirname", "realpath", "readlink", "nl",
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

    /// What a call of `tool` with `args` needs.
    pub fn need(&self, tool: &str, args: &serde_json::Value) -> Need {
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
        let asks = bypass
            || listed
            || match self.policy {
                Policy::Never | Policy::OnRequest => false,
                Policy::Untrusted => !known_read_only(tool, args),
                Policy::Always => !READ_ONLY_TOOLS.contains(&tool),
            };
        if asks { Need::Answer } else { Need::Nothing }
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
    if tool != "bash" {
        return false;
    }
    let command = args["command"].as_str().unwrap_or_default();
    if command.contains(['>', '<', '|', ';', '&', '`', '$', '\n', '(', ')']) {
        return false;
    }
    let mut words = command.split_whitespace();
    match words.next() {
        Some("git") => words.next().is_some_and(|sub| READ_ONLY_GIT.contains(&sub)),
        Some("find") => !command.contains("-exec") && !command.contains("-delete"),
        Some(program) => READ_ONLY_PROGRAMS.contains(&program),
        None => false,
    }
}

/// Who answers the calls the policy asks about.
pub trait Asker: Send + Sync {
    /// The user's answer for one call.
    fn ask<'a>(&'a self, request: ApprovalRequest<'a>) -> ApprovalFuture<'a>;
}

/// The approver every front end gates its tools with: the rules decide,
/// the asker answers.
pub struct PolicyApprover {
    /// When to ask.
    rules: Rules,
    /// Who answers.
    asker: Arc<dyn Asker>,
}

impl PolicyApprover {
    /// An approver under `rules`, asking `asker`.
    pub fn new(rules: Rules, asker: Arc<dyn Asker>) -> Self {
        Self { rules, asker }
    }
}

impl Approver for PolicyApprover {
    fn gates(&self, _name: &str) -> bool {
        // Whether a call asks depends on its arguments (a bypass, a
        // read-only command), so every tool goes through the approver.
        true
    }

    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> ApprovalFuture<'a> {
        match self.rules.need(request.tool, request.args) {
            Need::Nothing => Box::pin(std::future::ready(Approval::Unasked)),
            Need::Refused(why) => Box::pin(std::future::ready(Approval::Reject(why))),
            Need::Answer => self.asker.ask(request),
        }
    }
}

/// The answers of a run no one can be asked during (`etch -p`): every
/// question is refused, unless `--approve-all` allows them; a command
/// outside the sandbox needs `--allow-unsandboxed` itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unattended {
    /// `--approve-all`.
    pub approve_all: bool,
    /// `--allow-unsandboxed`.
    pub allow_unsandboxed: bool,
}

impl Asker for Unattended {
    fn ask<'a>(&'a self, request: ApprovalRequest<'a>) -> ApprovalFuture<'a> {
        let answer = if leaves_sandbox(request.tool, request.args) {
            if self.allow_unsandboxed {
                Approval::Allow
            } else {
                Approval::Reject(
                    "etch -p runs no command outside the sandbox unless started with \
                     --allow-unsandboxed; run it inside the sandbox"
                        .to_owned(),
                )
            }
        } else if self.approve_all {
            Approval::Allow
        } else {
            Approval::Reject(format!(
                "this {} call needs the user's approval, and etch -p cannot ask (start it with \
                 --approve-all to allow such calls)",
                request.tool
            ))
        };
        Box::pin(std::future::ready(answer))
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

    /// Each policy asks about what Codex's does.
    #[test]
    fn what_each_policy_asks_about() {
        let bypass = json!({"command": "git commit -m x", "bypass_sandbox": true});
        let ls = json!({"command": "ls -la src"});
        let rm = json!({"command": "rm -rf build"});
        let piped = json!({"command": "cat a > b"});
        let write = json!({"path": "a", "content": "b"});
        let on_request = rules(Policy::OnRequest, &["mcp__*"]);
        assert_eq!(on_request.need("bash", &bypass), Need::Answer);
        assert_eq!(on_request.need("bash", &rm), Need::Nothing);
        assert_eq!(on_request.need("mcp__fs__write", &write), Need::Answer);
        let untrusted = rules(Policy::Untrusted, &[]);
        assert_eq!(untrusted.need("bash", &ls), Need::Nothing);
        assert_eq!(untrusted.need("bash", &rm), Need::Answer);
        assert_eq!(untrusted.need("bash", &piped), Need::Answer);
        assert_eq!(
            untrusted.need("bash", &json!({"command": "git status"})),
            Need::Nothing
        );
        assert_eq!(
            untrusted.need("bash", &json!({"command": "git push"})),
            Need::Answer
        );
        assert_eq!(untrusted.need("write", &write), Need::Answer);
        assert_eq!(untrusted.need("read", &json!({"path": "a"})), Need::Nothing);
        let always = rules(Policy::Always, &[]);
        assert_eq!(always.need("bash", &ls), Need::Answer);
        assert_eq!(always.need("grep", &json!({"pattern": "x"})), Need::Nothing);
        let never = rules(Policy::Never, &["bash"]);
        assert_eq!(never.need("bash", &rm), Need::Nothing);
        assert!(matches!(never.need("bash", &bypass), Need::Refused(_)));
    }

    /// `-p` refuses what would ask, unless its flags allow it; a bypass
    /// needs its own flag.
    #[test]
    fn unattended_runs_answer_by_their_flags() {
        let answer = |asker: Unattended, args: serde_json::Value| {
            let request = ApprovalRequest {
                call_id: "c1",
                tool: "bash",
                args: &args,
                cwd: std::path::Path::new("/w"),
            };
            tokio::runtime::Builder::new_current_thread()
                .build()
                .map(|rt| rt.block_on(asker.ask(request)))
                .ok()
        };
        let bypass = json!({"command": "x", "bypass_sandbox": true});
        let plain = json!({"command": "x"});
        let none = Unattended::default();
        assert!(
            matches!(answer(none, bypass.clone()), Some(Approval::Reject(why)) if why.contains("--allow-unsandboxed"))
        );
        assert!(
            matches!(answer(none, plain.clone()), Some(Approval::Reject(why)) if why.contains("--approve-all"))
        );
        let all = Unattended {
            approve_all: true,
            allow_unsandboxed: false,
        };
        assert_eq!(answer(all, plain), Some(Approval::Allow));
        assert!(matches!(
            answer(all, bypass.clone()),
            Some(Approval::Reject(_))
        ));
        let unsandboxed = Unattended {
            approve_all: false,
            allow_unsandboxed: true,
        };
        assert_eq!(answer(unsandboxed, bypass), Some(Approval::Allow));
    }
}
