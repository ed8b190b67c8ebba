//! What a confined command may do: the mode, whether it may use the
//! network, where it may write, what it may not read, and which
//! directories inside the writable ones stay read-only. The parent builds
//! a [`Policy`] from the configuration and hands it to the helper as one
//! JSON argument; the helper reads it back with [`Policy::decode`].
//!
//! This module must not know how a policy is enforced or where its values
//! came from.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::SandboxError;

/// How far commands are confined (`[sandbox] mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Not confined at all.
    Off,
    /// Read everywhere but the denied paths; write only in the working
    /// directory, the temporary directories and the extra roots.
    WorkspaceWrite,
    /// Read everywhere but the denied paths; write nowhere but devices
    /// such as `/dev/null`.
    ReadOnly,
}

impl Mode {
    /// Every mode, loosest first: a later one is stricter.
    pub const ALL: [Self; 3] = [Self::Off, Self::WorkspaceWrite, Self::ReadOnly];

    /// The name the configuration and the status line use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::WorkspaceWrite => "workspace-write",
            Self::ReadOnly => "read-only",
        }
    }

    /// The mode named `name`, as the configuration spells it.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything the helper needs to confine one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// How far to confine.
    pub mode: Mode,
    /// Whether the command may open internet sockets.
    pub network: bool,
    /// Directories (and files) the command may change, the working
    /// directory first; ignored in read-only mode.
    pub writable: Vec<PathBuf>,
    /// Paths the command may not read (nor change).
    pub deny_read: Vec<PathBuf>,
    /// Directories inside the writable ones that stay read-only (the
    /// working directory's `.git` and `.etch`: what runs later outside
    /// the sandbox).
    pub protected: Vec<PathBuf>,
}

impl Policy {
    /// The policy as one argument for the helper.
    pub fn encode(&self) -> String {
        // A struct of strings, bools and paths always serializes; the
        // fallback only keeps this infallible in type.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The policy the parent encoded.
    pub fn decode(text: &str) -> Result<Self, SandboxError> {
        serde_json::from_str(text).map_err(|e| SandboxError::Policy(e.to_string()))
    }

    /// Whether `path` is one the policy lets a command change: inside a
    /// writable root and outside the protected and denied ones. Used to
    /// tell a refusal by the sandbox from an ordinary one.
    pub fn may_write(&self, path: &Path) -> bool {
        self.mode == Mode::Off
            || (self.mode == Mode::WorkspaceWrite
                && self.writable.iter().any(|root| path.starts_with(root))
                && !self.protected.iter().any(|p| path.starts_with(p))
                && !self.deny_read.iter().any(|p| path.starts_with(p)))
    }

    /// Whether `path` is one the policy keeps the command from reading.
    pub fn denies_read(&self, path: &Path) -> bool {
        self.mode != Mode::Off && self.deny_read.iter().any(|p| path.starts_with(p))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A workspace-write policy for `/w`.
    fn policy() -> Policy {
        Policy {
            mode: Mode::WorkspaceWrite,
            network: false,
            writable: vec!["/w".into(), "/tmp".into()],
            deny_read: vec!["/home/u/.ssh".into()],
            protected: vec!["/w/.git".into()],
        }
    }

    /// The encoding round-trips, and a broken one is an error naming it.
    #[test]
    fn encodes_and_decodes() {
        let p = policy();
        assert_eq!(Policy::decode(&p.encode()).unwrap(), p);
        assert!(p.encode().contains("\"workspace-write\""));
        let err = Policy::decode("{").unwrap_err().to_string();
        assert!(err.contains("sandbox policy"), "{err}");
    }

    /// Writable means inside a root and outside the protected paths.
    #[test]
    fn what_may_be_written() {
        let p = policy();
        assert!(p.may_write(Path::new("/w/src/a.rs")));
        assert!(!p.may_write(Path::new("/w/.git/config")));
        assert!(!p.may_write(Path::new("/etc/passwd")));
        assert!(p.denies_read(Path::new("/home/u/.ssh/id_rsa")));
        let ro = Policy {
            mode: Mode::ReadOnly,
            ..policy()
        };
        assert!(!ro.may_write(Path::new("/w/src/a.rs")));
        assert_eq!(Mode::parse("read-only"), Some(Mode::ReadOnly));
        assert!(Mode::ReadOnly > Mode::WorkspaceWrite);
    }
}
