//! The sandbox for commands etch runs for the model (the `bash` tool,
//! `!cmd` in the chat, plugins that opt in): Landlock for the files, a
//! seccomp filter for the network, a read-only view of `.git` and
//! `.etch`, all applied by a re-exec helper because the workspace
//! forbids `unsafe` and so cannot confine a child between `fork` and
//! `exec`. etch runs itself as `etch __sandbox-exec POLICY -- bash -c
//! CMD`; the helper confines itself ([`confine`]) before any async
//! runtime starts, then execs.
//!
//! - `policy`: what a command may do, encoded as the helper's argument.
//! - `plan`: the Landlock rules a policy becomes (walking around the
//!   paths it may not read).
//! - `confine`: the helper's side; `protect` (the mount namespace) and
//!   `filter` (seccomp) are its parts.
//! - `report`: how far the sandbox holds, in words, and the probe.
//! - `denial`: recognising a refusal in a command's output.
//!
//! This crate must not know the configuration, the tools or the loop: it
//! is given a policy and a command. It is the only user of `landlock` and
//! `seccompiler`.

mod confine;
mod denial;
mod error;
mod filter;
mod plan;
mod policy;
mod protect;
mod report;

use std::ffi::OsString;
use std::path::PathBuf;

pub use confine::{ABI_OVERRIDE_VAR, confine, kernel_supports, main};
pub use denial::explain;
pub use error::SandboxError;
pub use plan::{Rights, Rule, rules};
pub use policy::{Mode, Policy};
pub use report::{Enforcement, Report, probe};

/// The hidden subcommand that runs the helper.
pub const HELPER: &str = "__sandbox-exec";

/// How to start a confined command: the helper's program (etch itself)
/// and the policy it applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// The program that runs the helper.
    pub exe: PathBuf,
    /// What commands may do.
    pub policy: Policy,
}

impl Launcher {
    /// The program and arguments that run `program args` confined.
    pub fn wrap(&self, program: &str, args: &[&str]) -> (OsString, Vec<OsString>) {
        let mut helper_args: Vec<OsString> =
            vec![HELPER.into(), self.policy.encode().into(), "--".into()];
        helper_args.push(program.into());
        helper_args.extend(args.iter().map(OsString::from));
        (self.exe.as_os_str().to_owned(), helper_args)
    }

    /// Whether commands are confined at all.
    pub fn is_on(&self) -> bool {
        self.policy.mode != Mode::Off
    }

    /// How far the sandbox holds here, found by running the helper's
    /// probe (a few milliseconds).
    pub fn probe(&self) -> Report {
        probe(&self.exe, &self.policy)
    }
}
