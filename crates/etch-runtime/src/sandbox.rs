//! The sandbox a run's commands get: `[sandbox]` made into a policy for
//! one working directory (paths expanded and resolved, the defaults
//! filled in), and the status every front end shows for it.
//!
//! The default mode depends on the kernel: `workspace-write` where
//! Landlock exists, else `off` with a notice, since a sandbox that
//! cannot hold must not pretend to. This module must not know how the
//! policy is enforced (etch-sandbox) or shown.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use etch_config::{DEFAULT_DENY_READ, PluginEntry, SandboxConfig};

use crate::mcp::quote;
use etch_sandbox::{Launcher, Mode, Policy, Report};

/// The directories inside the working directory that stay read-only:
/// what they hold runs later, outside the sandbox (git hooks and
/// configuration, etch's own configuration and hooks).
const PROTECTED: [&str; 2] = [".git", ".etch"];

/// The sandbox of a run: the policy and the etch binary whose helper
/// applies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The helper and its policy.
    pub launcher: Launcher,
    /// Whether the mode is `off` only because the kernel cannot enforce
    /// one (no mode was configured).
    pub unsupported: bool,
}

impl Sandbox {
    /// The sandbox `config` describes for commands run in `cwd`.
    pub fn new(config: &SandboxConfig, cwd: &Path, home: Option<&Path>) -> Self {
        let configured = config.mode.as_deref().and_then(Mode::parse);
        let supported = configured.is_some() || etch_sandbox::kernel_supports();
        let mode = configured.unwrap_or(if supported {
            Mode::WorkspaceWrite
        } else {
            Mode::Off
        });
        let cwd = canonical(cwd);
        let mut writable = vec![cwd.clone(), PathBuf::from("/tmp")];
        if let Some(tmp) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
            writable.push(PathBuf::from(tmp));
        }
        writable.extend(
            config
                .writable_roots
                .iter()
                .map(|root| resolve(root, &cwd, home)),
        );
        let writable = dedup(writable.into_iter().map(|p| canonical(&p)).collect());
        let deny: Vec<String> = match &config.deny_read {
            Some(list) => list.clone(),
            None => DEFAULT_DENY_READ.iter().map(|s| (*s).to_owned()).collect(),
        };
        let deny_read = dedup(
            deny.iter()
                .map(|p| canonical(&resolve(p, &cwd, home)))
                .collect(),
        );
        let protected = PROTECTED.iter().map(|d| cwd.join(d)).collect();
        Self {
            launcher: Launcher {
                exe: crate::context::etch_exe(),
                policy: Policy {
                    mode,
                    network: config.network,
                    writable,
                    deny_read,
                    protected,
                },
            },
            unsupported: !supported,
        }
    }

    /// The sandbox of `place`'s configuration and working directory.
    pub fn for_place(place: &crate::settings::Place) -> Self {
        Self::new(&place.config.sandbox, &place.cwd, place.home.as_deref())
    }

    /// How far the sandbox holds here and the words for it (runs the
    /// helper's probe, a few milliseconds: for `etch status`, not for
    /// every start). Off because the kernel cannot confine reads as such.
    pub fn status(&self) -> (Report, String) {
        if self.unsupported {
            let words = "off (this kernel has no Landlock: commands run unconfined)";
            return (Report::off(), words.to_owned());
        }
        let report = self.launcher.probe();
        let words = report.describe();
        (report, words)
    }

    /// What a front end shows (runs the probe): a short label for a
    /// footer (`sandbox workspace-write`, `… (partial)`, `… NOT
    /// enforced`, `sandbox off`) and the sentence of [`Self::status`].
    pub fn labels(&self) -> (String, String) {
        let (report, words) = self.status();
        let short = if report.mode == etch_sandbox::Mode::Off {
            "sandbox off".to_owned()
        } else {
            match report.enforcement() {
                etch_sandbox::Enforcement::Full => format!("sandbox {}", report.mode),
                etch_sandbox::Enforcement::Partial => format!("sandbox {} (partial)", report.mode),
                etch_sandbox::Enforcement::None => format!("sandbox {} NOT enforced", report.mode),
            }
        };
        (short, words)
    }

    /// The one-line notice for a start, when there is one: the kernel
    /// cannot enforce a sandbox, so commands run unconfined.
    pub fn notice(&self) -> Option<String> {
        self.unsupported.then(|| {
            "sandbox: off: this kernel (or container) has no Landlock, so commands the model runs \
             are not confined; set [sandbox] mode = \"off\" to silence this"
                .to_owned()
        })
    }

    /// `plugins` with those that opted in (`sandbox = true`) started
    /// through the helper, when commands are confined: the plugin
    /// supervisor runs the command line as it is, unaware.
    pub fn confine_plugins(&self, plugins: &[PluginEntry]) -> Vec<PluginEntry> {
        plugins
            .iter()
            .map(|entry| {
                let mut entry = entry.clone();
                if entry.sandbox && self.launcher.is_on() {
                    let (program, args) = self.launcher.wrap("sh", &["-c", &entry.command]);
                    let mut line = format!("exec {}", quote(&program.to_string_lossy()));
                    for arg in args {
                        line.push(' ');
                        line.push_str(&quote(&arg.to_string_lossy()));
                    }
                    entry.command = line;
                }
                entry
            })
            .collect()
    }

    /// The launcher for the tools, when commands are confined.
    pub fn for_tools(&self) -> Option<Arc<Launcher>> {
        self.launcher
            .is_on()
            .then(|| Arc::new(self.launcher.clone()))
    }
}

/// `path` with `~` expanded and resolved against `cwd`.
fn resolve(path: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let expanded = match (path.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    };
    cwd.join(expanded)
}

/// `path` with its links resolved when it exists (Landlock rules bind
/// the object a path names, and a denial must match what the command
/// sees), as given otherwise.
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// `paths` without repeats, in order.
fn dedup(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for path in paths {
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configured paths are expanded and resolved; the defaults fill
    /// the deny list; `.git` and `.etch` are protected.
    #[test]
    fn the_policy_from_the_configuration() {
        let config = SandboxConfig {
            mode: Some("read-only".into()),
            network: true,
            writable_roots: vec!["~/cache".into(), "out".into()],
            deny_read: None,
        };
        let sandbox = Sandbox::new(&config, Path::new("/nowhere/w"), Some(Path::new("/h")));
        let p = &sandbox.launcher.policy;
        assert_eq!(p.mode, Mode::ReadOnly);
        assert!(p.network);
        assert!(p.writable.contains(&PathBuf::from("/h/cache")));
        assert!(p.writable.contains(&PathBuf::from("/nowhere/w/out")));
        assert_eq!(p.writable[0], PathBuf::from("/nowhere/w"));
        assert!(p.deny_read.contains(&PathBuf::from("/h/.ssh")));
        assert!(p.deny_read.contains(&PathBuf::from("/h/.etch/auth")));
        assert_eq!(
            p.protected,
            [
                PathBuf::from("/nowhere/w/.git"),
                PathBuf::from("/nowhere/w/.etch")
            ]
        );
        assert!(!sandbox.unsupported);
    }

    /// A plugin that opts in starts through the helper; others as
    /// written.
    #[test]
    fn plugins_opt_in() {
        let config = SandboxConfig {
            mode: Some("workspace-write".into()),
            network: false,
            writable_roots: Vec::new(),
            deny_read: None,
        };
        let sandbox = Sandbox::new(&config, Path::new("/w"), None);
        let entry = |name: &str, sandbox: bool| PluginEntry {
            name: name.into(),
            command: "my-plugin --x 'y'".into(),
            timeout_seconds: 30,
            env: Vec::new(),
            set_env: Vec::new(),
            disabled: false,
            sandbox,
            source: PathBuf::from("/u/.etch/config.toml"),
        };
        let out = sandbox.confine_plugins(&[entry("a", true), entry("b", false)]);
        assert!(out[0].command.starts_with("exec '"), "{}", out[0].command);
        assert!(
            out[0].command.contains("'__sandbox-exec'"),
            "{}",
            out[0].command
        );
        assert!(
            out[0]
                .command
                .ends_with(r"'--' 'sh' '-c' 'my-plugin --x '\''y'\'''"),
            "{}",
            out[0].command
        );
        assert_eq!(out[1].command, "my-plugin --x 'y'");
    }
}
