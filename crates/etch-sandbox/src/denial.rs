//! Telling a refusal by the sandbox from an ordinary failure, so that
//! the model hears "blocked by the sandbox" instead of trying the same
//! thing again: a `Permission denied`, `Operation not permitted` or
//! `Read-only file system` line that names a path the policy keeps the
//! command from changing (or reading), a `No such file or directory`
//! line that names a path under a hidden (denied) directory, or, with
//! the network off, a refused socket.
//!
//! This module must not know how the command ran; it reads its output.

use std::path::{Path, PathBuf};

use crate::policy::{Mode, Policy};

/// Words of the errors a refusal produces.
const REFUSALS: [&str; 3] = [
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
];

/// What a read under a denied directory the helper hid says (the tmpfs
/// over it is empty; root can enter it).
const HIDDEN: &str = "No such file or directory";

/// Words that say an output is about the network.
const NETWORK_WORDS: [&str; 7] = [
    "socket",
    "connect",
    "Connection",
    "resolve",
    "network",
    "Network",
    "urlopen",
];

/// Lines of clients that report a refused socket without the system's
/// words (curl, git over HTTPS, pip).
const NETWORK_FAILURES: [&str; 4] = [
    "Couldn't connect to server",
    "Could not resolve host",
    "Failed to connect to",
    "Temporary failure in name resolution",
];

/// The note for `output` of a command run under `policy` in `cwd`, when
/// it looks refused by the sandbox: `blocked by the sandbox
/// (workspace-write): PATH; ask the user or use bypass`.
pub fn explain(output: &str, policy: &Policy, cwd: &Path) -> Option<String> {
    if policy.mode == Mode::Off {
        return None;
    }
    let about_network = NETWORK_WORDS.iter().any(|w| output.contains(w));
    let what = output
        .lines()
        .find_map(|line| {
            if REFUSALS.iter().any(|r| line.contains(r)) {
                blocked_in(line, policy, cwd, about_network)
            } else if line.contains(HIDDEN) {
                paths_in(line)
                    .iter()
                    .map(|p| absolute(p, cwd))
                    .find(|p| policy.denies_read(p))
                    .map(|p| p.display().to_string())
            } else {
                None
            }
        })
        .or_else(|| {
            let refused = output
                .lines()
                .any(|line| NETWORK_FAILURES.iter().any(|f| line.contains(f)));
            (!policy.network && refused).then(network)
        })?;
    Some(format!(
        "blocked by the sandbox ({}): {what}; ask the user or use bypass",
        policy.mode
    ))
}

/// What the note names for a refused socket.
fn network() -> String {
    "network access (the network is off)".to_owned()
}

/// What `line` says was blocked: a path outside what the policy allows,
/// or, in an output about the network, the network.
fn blocked_in(line: &str, policy: &Policy, cwd: &Path, about_network: bool) -> Option<String> {
    for candidate in paths_in(line) {
        let path = absolute(&candidate, cwd);
        if !policy.may_write(&path) || policy.denies_read(&path) {
            return Some(path.display().to_string());
        }
    }
    (!policy.network && about_network && line.contains("Operation not permitted")).then(network)
}

/// Words of `line` that look like paths: those with a `/`, and the words
/// right before and after the refusal (`here.txt: Permission denied`,
/// `Permission denied: 'here.txt'`), stripped of the quotes and
/// punctuation error messages put around them.
fn paths_in(line: &str) -> Vec<String> {
    let clean = |w: &str| {
        w.trim_matches(|c: char| "'\"`‘’“”,;()[]".contains(c))
            .trim_end_matches(':')
            .trim_matches(|c: char| "'\"`‘’“”".contains(c))
            .to_owned()
    };
    let mut found: Vec<String> = line
        .split(char::is_whitespace)
        .map(clean)
        .filter(|w| w.contains('/') && !w.contains("://"))
        .collect();
    for refusal in REFUSALS.iter().chain([&HIDDEN]) {
        if let Some((before, after)) = line.split_once(refusal) {
            let named_before = before
                .split_whitespace()
                .last()
                .filter(|w| w.ends_with(':'));
            let named_after = after
                .strip_prefix(':')
                .and_then(|rest| rest.split_whitespace().next());
            found.extend(
                [named_before, named_after]
                    .into_iter()
                    .flatten()
                    .map(clean)
                    .filter(|w| !w.is_empty() && !w.contains("://") && !w.starts_with('[')),
            );
        }
    }
    found
}

/// `path` resolved against `cwd`, with `.` and `..` taken lexically.
fn absolute(path: &str, cwd: &Path) -> PathBuf {
    let joined = cwd.join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace-write policy for `/w` with the network off.
    fn policy() -> Policy {
        Policy {
            mode: Mode::WorkspaceWrite,
            network: false,
            writable: vec!["/w".into(), "/tmp".into()],
            deny_read: vec!["/root/.ssh".into()],
            protected: vec!["/w/.git".into()],
        }
    }

    /// The usual shapes of refusals name the path.
    #[test]
    fn refusals_name_the_path() {
        let p = policy();
        let cwd = Path::new("/w");
        for (output, path) in [
            ("bash: line 1: /etc/x: Permission denied", "/etc/x"),
            ("touch: cannot touch '/opt/y': Permission denied", "/opt/y"),
            (
                "cat: /root/.ssh/id_rsa: Permission denied",
                "/root/.ssh/id_rsa",
            ),
            (
                "PermissionError: [Errno 13] Permission denied: '/usr/z'",
                "/usr/z",
            ),
            (
                "cp: cannot create regular file '.git/hooks/pre-commit': Read-only file system",
                "/w/.git/hooks/pre-commit",
            ),
            ("bash: ../out.txt: Permission denied", "/out.txt"),
        ] {
            let note = explain(output, &p, cwd).unwrap_or_default();
            assert_eq!(
                note,
                format!(
                    "blocked by the sandbox (workspace-write): {path}; ask the user or use bypass"
                ),
                "{output}"
            );
        }
    }

    /// Refusals inside the workspace are not the sandbox's; the network
    /// is named when it is off.
    #[test]
    fn ordinary_failures_and_the_network() {
        let p = policy();
        let cwd = Path::new("/w");
        assert_eq!(explain("bash: ./run.sh: Permission denied", &p, cwd), None);
        // A missing file is the sandbox's only under a hidden directory.
        assert_eq!(
            explain("cat: nope.txt: No such file or directory", &p, cwd),
            None
        );
        assert_eq!(
            explain("cat: /root/.ssh/id_rsa: No such file or directory", &p, cwd).as_deref(),
            Some(
                "blocked by the sandbox (workspace-write): /root/.ssh/id_rsa; ask the user or use bypass"
            )
        );
        assert_eq!(explain("all fine", &p, cwd), None);
        let net = "  File \"socket.py\", line 851, in create_connection\nPermissionError: [Errno 1] Operation not permitted";
        assert!(explain(net, &p, cwd).unwrap().contains("network access"));
        let curl = "curl: (7) Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server";
        assert!(explain(curl, &p, cwd).unwrap().contains("network access"));
        assert_eq!(
            explain("kill: (1) - Operation not permitted", &p, cwd),
            None
        );
        let ro = Policy {
            mode: Mode::ReadOnly,
            ..policy()
        };
        for output in [
            "bash: line 1: here.txt: Permission denied",
            "PermissionError: [Errno 13] Permission denied: 'here.txt'",
        ] {
            assert_eq!(
                explain(output, &ro, cwd).unwrap(),
                "blocked by the sandbox (read-only): /w/here.txt; ask the user or use bypass"
            );
        }
        let on = Policy {
            network: true,
            ..policy()
        };
        assert_eq!(explain(net, &on, cwd), None);
        let off = Policy {
            mode: Mode::Off,
            ..policy()
        };
        assert_eq!(explain("cat: /etc/x: Permission denied", &off, cwd), None);
    }
}
