//! Exit codes (G14) and the error type that carries one to `main`.

use std::fmt;

/// Success.
pub const OK: u8 = 0;
/// The requested operation failed.
pub const FAILED: u8 = 1;
/// Usage error, unknown or ambiguous session prefix.
pub const USAGE: u8 = 2;
/// The sandbox helper could not confine or start its command (the
/// shell's "found but could not run").
pub const SANDBOX: u8 = 126;
/// Interrupted by SIGINT.
pub const INTERRUPTED: u8 = 130;

/// An error on its way out of the process, with the exit code it means.
#[derive(Debug)]
pub struct Failure {
    /// Exit code.
    pub code: u8,
    /// What to print after `etch: error: `; `None` when already reported.
    pub error: Option<anyhow::Error>,
}

impl Failure {
    /// A failure with an exit code and a message.
    pub fn new(code: u8, error: impl Into<anyhow::Error>) -> Self {
        Self {
            code,
            error: Some(error.into()),
        }
    }

    /// A failure that has already been reported (e.g. in a JSON result line).
    pub fn silent(code: u8) -> Self {
        Self { code, error: None }
    }

    /// A usage error (exit 2).
    pub fn usage(message: impl fmt::Display) -> Self {
        Self::new(USAGE, anyhow::anyhow!("{message}"))
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Self::new(FAILED, error)
    }
}
