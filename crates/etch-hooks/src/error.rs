//! What can go wrong with hooks before one runs: a matcher that does not
//! compile, an event name that is not one of the eleven.

/// A hook configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// A matcher the regex engine rejects.
    #[error(
        "hook matcher `{matcher}` is not a valid regular expression: {reason}; fix it in the config (etch config check shows where)"
    )]
    Matcher {
        /// The matcher as written.
        matcher: String,
        /// Why it does not compile.
        reason: String,
    },
    /// An event name that is not a hook event.
    #[error(
        "`{0}` is not a hook event; the events are SessionStart, UserPromptSubmit, TurnStart, TurnComplete, ContextBuild, PreToolUse, PostToolUse, PreCompact, PostCompact, SubagentStart, SubagentStop"
    )]
    Event(String),
    /// A `protocol` that is neither `etch` nor `claude`.
    #[error("hook protocol `{0}` is not known; use \"etch\" (the default) or \"claude\"")]
    Protocol(String),
    /// A Claude Code hook on an event Claude Code does not have.
    #[error(
        "a hook with protocol = \"claude\" cannot run on {0}, which Claude Code does not have; Claude Code hooks run on SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PreCompact and TurnComplete (its Stop); write an etch hook for {0}"
    )]
    ClaudeEvent(&'static str),
}
