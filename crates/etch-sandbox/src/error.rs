//! Why the helper could not confine or start a command. Each message
//! says what failed and what to do; the helper prints it and exits 126
//! (the shell's "found but could not run"), so the tool result shows it.
//!
//! This module must not know how the errors are shown.

use std::io;

/// A failure to confine or start a command.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The helper was called without its arguments.
    #[error("etch __sandbox-exec: {0}; usage: etch __sandbox-exec POLICY -- PROGRAM [ARGS...]")]
    Usage(String),
    /// The policy argument is not one etch wrote.
    #[error("etch __sandbox-exec: unreadable sandbox policy ({0})")]
    Policy(String),
    /// Landlock refused the ruleset.
    #[error(
        "the sandbox could not be set up: Landlock: {0}; set [sandbox] mode = \"off\" to run commands unconfined"
    )]
    Landlock(String),
    /// The seccomp filter could not be built or loaded.
    #[error(
        "the sandbox could not be set up: seccomp: {0}; set [sandbox] network = true to run commands without the network filter"
    )]
    Seccomp(String),
    /// A process setting (`no_new_privs`, the parent-death signal) failed.
    #[error("the sandbox could not be set up: {what}: {source}")]
    Process {
        /// Which setting.
        what: &'static str,
        /// The system's error.
        source: nix::Error,
    },
    /// The program could not be started.
    #[error("etch __sandbox-exec: cannot run {program}: {source}")]
    Exec {
        /// The program named.
        program: String,
        /// The system's error.
        source: io::Error,
    },
}
