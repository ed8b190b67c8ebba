//! The typed settings a session is opened with: where it runs ([`Place`])
//! and what a front end asked for ([`RunSettings`]), resolved once from
//! defaults, files, environment and flags by the front end.
//!
//! Nothing here knows a command-line parser: the binary turns its flags
//! into these values, `etch rpc` its `set_model`, a subagent its profile.

use std::path::{Path, PathBuf};

use etch_config::Config;

use crate::provider::ProviderFlags;

/// Where a session runs and with which configuration.
#[derive(Debug, Clone)]
pub struct Place {
    /// Working directory.
    pub cwd: PathBuf,
    /// Session directory.
    pub session_dir: PathBuf,
    /// The user's home, for `~/.etch` files.
    pub home: Option<PathBuf>,
    /// The merged configuration (E-CFG-03: flags over environment over
    /// project file over user file over defaults).
    pub config: Config,
}

impl Place {
    /// The place for `cwd` with `config`: the session directory is
    /// `flag_dir` (`--session-dir`) when given, else `[session] dir`
    /// against the project root.
    pub fn new(cwd: &Path, home: Option<&Path>, flag_dir: Option<&Path>, config: Config) -> Self {
        Self {
            cwd: cwd.to_path_buf(),
            session_dir: crate::paths::session_dir(cwd, flag_dir, &config.session.dir),
            home: home.map(Path::to_path_buf),
            config,
        }
    }

    /// The place for `cwd` with its configuration loaded as any run's is
    /// (the user file, the project file, what a project may not decide
    /// untrusted held back), and the warnings to show; the errors of the
    /// files when there are any (a front end serving many directories,
    /// or reloading, refuses rather than runs half-configured).
    pub fn load(
        cwd: &Path,
        home: Option<&Path>,
        flag_dir: Option<&Path>,
    ) -> Result<(Self, Vec<String>), Vec<String>> {
        let mut loaded = etch_config::load(cwd, home);
        if loaded.has_errors() {
            return Err(loaded.diagnostics.iter().map(ToString::to_string).collect());
        }
        let mut warnings: Vec<String> =
            loaded.diagnostics.iter().map(ToString::to_string).collect();
        warnings.extend(loaded.gate_project(home));
        Ok((Self::new(cwd, home, flag_dir, loaded.config), warnings))
    }
}

/// What a front end asked for beyond the configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSettings {
    /// Provider, model, endpoint and reasoning options.
    pub provider: ProviderFlags,
    /// Built-in tools to offer (`--tools`); `None` means the default set.
    pub tools: Option<Vec<String>>,
    /// Offer only the read-only tools (`--read-only`).
    pub read_only: bool,
    /// Bound on model/tool rounds per prompt; `None` takes the
    /// configuration's `[session] max_tool_rounds`.
    pub max_tool_rounds: Option<u32>,
}

impl RunSettings {
    /// The round bound in effect under `config`.
    pub fn max_tool_rounds(&self, config: &Config) -> u32 {
        self.max_tool_rounds
            .unwrap_or(config.session.max_tool_rounds)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A directory's place: its configuration layered and gated, the
    /// session directory from the flag or `[session] dir`; a file with
    /// errors is refused with them.
    #[test]
    fn a_place_is_loaded_for_a_directory() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let etch = project.path().join(".etch");
        std::fs::create_dir_all(&etch).unwrap();
        std::fs::write(
            etch.join("config.toml"),
            "[session]\ndir = \"logs\"\n[provider]\nname = \"openai\"\n",
        )
        .unwrap();
        let (place, warnings) = Place::load(project.path(), Some(home.path()), None).unwrap();
        // `[session] dir` and `[provider] name` wait for `etch trust`.
        assert_eq!(place.session_dir, project.path().join(".etch/sessions"));
        assert!(place.config.provider.name.is_none());
        assert!(
            warnings.iter().any(|w| w.contains("etch trust")),
            "{warnings:?}"
        );
        let flagged = Place::load(
            project.path(),
            Some(home.path()),
            Some(Path::new("/elsewhere")),
        )
        .unwrap()
        .0;
        assert_eq!(flagged.session_dir, Path::new("/elsewhere"));
        std::fs::write(
            etch.join("config.toml"),
            "[session]\nmax_tool_rounds = \"x\"\n",
        )
        .unwrap();
        let errors = Place::load(project.path(), Some(home.path()), None).unwrap_err();
        assert!(
            errors.iter().any(|e| e.contains("max_tool_rounds")),
            "{errors:?}"
        );
    }
}
