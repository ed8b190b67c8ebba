//! How far a sandbox held, as the helper found it, and the words every
//! front end shows for it (`etch status`, the chat's start line and
//! footer). The parent learns it by running the helper with `--probe`,
//! which confines itself exactly as a command would and prints this as
//! JSON instead of running anything.
//!
//! This module must not know how the sandbox is applied.

use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::policy::{Mode, Policy};

/// How much of a part of the sandbox the kernel enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// All of it.
    Full,
    /// Some of it (an older kernel lacks some rights).
    Partial,
    /// None of it.
    None,
}

/// What the helper found when it confined itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The mode applied.
    pub mode: Mode,
    /// The kernel's Landlock ABI (0: none).
    pub abi: u8,
    /// How far the Landlock ruleset held.
    pub landlock: Enforcement,
    /// Whether the protected directories are read-only.
    pub protected: bool,
    /// Whether the network is as asked: allowed, or filtered.
    pub network_filtered: bool,
}

impl Report {
    /// The report of an unconfined command.
    pub fn off() -> Self {
        Self {
            mode: Mode::Off,
            abi: 0,
            landlock: Enforcement::None,
            protected: false,
            network_filtered: false,
        }
    }

    /// How far the whole sandbox holds.
    pub fn enforcement(&self) -> Enforcement {
        if self.mode == Mode::Off || self.landlock == Enforcement::None {
            Enforcement::None
        } else if self.landlock == Enforcement::Full && self.protected && self.network_filtered {
            Enforcement::Full
        } else {
            Enforcement::Partial
        }
    }

    /// One line for people: `workspace-write, fully enforced (Landlock
    /// ABI 7)`, with what does not hold when partly enforced.
    pub fn describe(&self) -> String {
        if self.mode == Mode::Off {
            return "off".to_owned();
        }
        if self.enforcement() == Enforcement::None {
            return format!(
                "{} not enforced: this kernel has no Landlock (ABI {}); commands run unconfined",
                self.mode, self.abi
            );
        }
        let mut gaps = Vec::new();
        if self.landlock == Enforcement::Partial {
            gaps.push("some file rights are not enforced by this kernel".to_owned());
        }
        if !self.protected {
            gaps.push(".git and .etch stay writable (no mount namespace here)".to_owned());
        }
        if !self.network_filtered {
            gaps.push("the network filter is not available on this architecture".to_owned());
        }
        if gaps.is_empty() {
            format!("{}, fully enforced (Landlock ABI {})", self.mode, self.abi)
        } else {
            format!(
                "{}, partly enforced (Landlock ABI {}): {}",
                self.mode,
                self.abi,
                gaps.join("; ")
            )
        }
    }
}

/// Runs `exe __sandbox-exec --probe POLICY` and reads its report; a
/// helper that cannot run or answer reports nothing enforced.
pub fn probe(exe: &Path, policy: &Policy) -> Report {
    if policy.mode == Mode::Off {
        return Report::off();
    }
    let output = Command::new(exe)
        .args([crate::HELPER, "--probe", &policy.encode()])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    output
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| serde_json::from_slice(&o.stdout).ok())
        .unwrap_or_else(|| Report {
            mode: policy.mode,
            ..Report::off()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Full, partial and none read as people expect.
    #[test]
    fn descriptions() {
        let full = Report {
            mode: Mode::WorkspaceWrite,
            abi: 7,
            landlock: Enforcement::Full,
            protected: true,
            network_filtered: true,
        };
        assert_eq!(
            full.describe(),
            "workspace-write, fully enforced (Landlock ABI 7)"
        );
        let partial = Report {
            protected: false,
            ..full.clone()
        };
        assert_eq!(partial.enforcement(), Enforcement::Partial);
        assert!(partial.describe().contains(".git and .etch stay writable"));
        let none = Report {
            abi: 0,
            landlock: Enforcement::None,
            ..full
        };
        assert!(
            none.describe().contains("not enforced"),
            "{}",
            none.describe()
        );
        assert_eq!(Report::off().describe(), "off");
    }
}
