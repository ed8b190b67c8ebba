//! Loading: discovered files in, [`Loaded`] out: the typed config, the
//! provenance of every value and every diagnostic. Loading never fails; an
//! unreadable or broken file becomes an error diagnostic and contributes
//! nothing.
//!
//! This module owns the precedence order (defaults < user < project, flags
//! applied by the caller, E-CFG-03) and the questions asked of the result
//! (provenance, `--effective`, relative paths). It must not know the CLI.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::build::build;
use crate::config::Config;
use crate::diagnostic::{Diagnostic, Severity};
use crate::discover::{ConfigFiles, discover, project_root};
use crate::merge::Merged;
use crate::parse::{Layer, parse};
use crate::problem::Problem;
use crate::provenance::Source;
use crate::trust::{TrustState, TrustStore};

/// The result of loading: what to run with, and what was wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The merged, typed configuration with defaults applied.
    pub config: Config,
    /// The files that were loaded (absolute paths).
    pub files: ConfigFiles,
    /// The directory containing the project's `.etch/`, when a project file
    /// was found; relative paths resolve against it (E-CFG-21).
    pub project_root: Option<PathBuf>,
    /// Every finding, user file first, in file order.
    pub diagnostics: Vec<Diagnostic>,
    /// Provenance of values not from defaults, by dotted `table.key`.
    sources: BTreeMap<String, Source>,
    /// The parsed files, user first, as read: [`Self::gate_project`]
    /// merges them again without what it holds back.
    layers: Vec<Layer>,
    /// Labels of the project settings [`Self::gate_project`] held back
    /// (`[openai] base_url`), for `--effective`.
    pub withheld: Vec<String>,
}

impl Loaded {
    /// Whether any diagnostic is an error. At runtime the caller stops on
    /// errors and prints warnings; `config check` first calls [`Self::strict`].
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The same result for `etch config check`, where unknown tables and keys
    /// are errors rather than warnings (E-CFG-20).
    #[must_use]
    pub fn strict(mut self) -> Self {
        for diagnostic in &mut self.diagnostics {
            diagnostic.severity = Severity::Error;
        }
        self
    }

    /// Where the value of plain-table key `key` (`"openai.api"`) came from;
    /// [`Source::Default`] when no file or flag set it or the key is unknown.
    pub fn source(&self, key: &str) -> Source {
        self.sources.get(key).cloned().unwrap_or(Source::Default)
    }

    /// Records that the caller overrode `key` from a CLI flag (after changing
    /// the field in [`Self::config`]), so `--effective` says `# from a flag`.
    pub fn mark_flag(&mut self, key: &str) {
        self.sources.insert(key.to_owned(), Source::Flag);
    }

    /// `etch config show --effective`: every table and key with defaults
    /// included, each value followed by `# default`, `# from {path}` or
    /// `# from a flag`; array-table entries follow, each `# from {path}`.
    pub fn effective_toml(&self) -> String {
        crate::effective::render(self)
    }

    /// Holds back what the project file may not decide on its own (see
    /// the `gated` module): `[openai] auth` values that send credentials,
    /// always; and, unless the user trusted the project file with `etch
    /// trust` (the trust store under `home`), its settings that choose
    /// who the model is or what it may do. The merged config is rebuilt
    /// without them; [`Config::project_settings`] still lists them all,
    /// for trust. Returns one warning per thing held back, for the caller
    /// to show.
    pub fn gate_project(&mut self, home: Option<&Path>) -> Vec<String> {
        let Some(project_path) = self.files.project.clone() else {
            return Vec::new();
        };
        let mut warnings = Vec::new();
        let trusted = self.project_trusted(&project_path, home, &mut warnings);
        let (users, projects): (Vec<&mut Layer>, Vec<&mut Layer>) = self
            .layers
            .iter_mut()
            .partition(|layer| layer.path != project_path);
        let Some(project) = projects.into_iter().next() else {
            return warnings;
        };
        let user = users.into_iter().next().map(|l| &*l);
        let distrusted = crate::gated::distrust_credentials(project);
        let changed = !distrusted.is_empty();
        warnings.extend(distrusted);
        if !matches!(trusted, Some(TrustState::Trusted | TrustState::Nothing)) {
            self.withheld = crate::gated::withhold(project, user);
            if !self.withheld.is_empty() {
                warnings.push(crate::gated::warning(
                    &project_path,
                    &self.withheld,
                    trusted == Some(TrustState::Changed),
                ));
            }
        }
        // Merged again only when a layer changed: most projects set
        // nothing gated.
        if changed || !self.withheld.is_empty() {
            self.remerge();
        }
        warnings
    }

    /// Where the project file's trust stands; `None` when it cannot be
    /// known (no HOME, an unreadable trust store: a warning says which),
    /// which counts as untrusted.
    fn project_trusted(
        &self,
        project: &Path,
        home: Option<&Path>,
        warnings: &mut Vec<String>,
    ) -> Option<TrustState> {
        if self.config.project_settings.is_empty() {
            return Some(TrustState::Nothing);
        }
        let Some(home) = home else {
            warnings.push(format!(
                "HOME is not set, so etch cannot know whether you trusted {}",
                project.display()
            ));
            return None;
        };
        match TrustStore::load(home) {
            Ok(store) => Some(store.state(&self.config, project)),
            Err(err) => {
                warnings.push(err.to_string());
                None
            }
        }
    }

    /// Merges the layers again and rebuilds the config from them, keeping
    /// the list of gated settings found when the files were read.
    fn remerge(&mut self) {
        let settings = std::mem::take(&mut self.config.project_settings);
        let mut merged = Merged::default();
        for layer in &self.layers {
            merged.apply(layer.clone());
        }
        self.config = build(&merged.scalars, &merged.entries);
        self.config.project_settings = settings;
        self.sources = merged.sources;
    }

    /// Resolves a path value from the config (`session.dir`,
    /// `system_prompt_file`) per E-CFG-21: absolute stays as is, relative
    /// joins the project root, or `cwd` without a project file. A leading
    /// `~` is not expanded.
    pub fn resolve_path(&self, cwd: &Path, value: &str) -> PathBuf {
        let path = Path::new(value);
        if path.is_absolute() {
            return path.to_path_buf();
        }
        self.project_root.as_deref().unwrap_or(cwd).join(path)
    }
}

/// Discovers the config files from `cwd` and `home` and loads them.
pub fn load(cwd: &Path, home: Option<&Path>) -> Loaded {
    load_files(discover(cwd, home), cwd)
}

/// Loads `files` (user, then project) over the compiled defaults. Relative
/// file paths are taken relative to `cwd`.
pub fn load_files(files: ConfigFiles, cwd: &Path) -> Loaded {
    let files = ConfigFiles {
        user: files.user.map(|path| cwd.join(path)),
        project: files.project.map(|path| cwd.join(path)),
    };
    let mut merged = Merged::default();
    let mut diagnostics = Vec::new();
    let mut layers = Vec::new();
    for path in [&files.user, &files.project].into_iter().flatten() {
        match fs::read_to_string(path) {
            Ok(text) => {
                let (layer, found) = parse(path, &text);
                diagnostics.extend(found);
                if let Some(layer) = layer {
                    merged.apply(layer.clone());
                    layers.push(layer);
                }
            }
            Err(error) => diagnostics.push(Diagnostic {
                severity: Severity::Error,
                path: path.clone(),
                line: None,
                key: None,
                message: Problem::Unreadable(error).to_string(),
            }),
        }
    }
    let mut config = build(&merged.scalars, &merged.entries);
    config.project_settings = layers
        .iter()
        .filter(|layer| files.project.as_ref() == Some(&layer.path))
        .flat_map(crate::gated::settings)
        .collect();
    Loaded {
        config,
        project_root: files.project.as_deref().and_then(project_root),
        files,
        diagnostics,
        sources: merged.sources,
        layers,
        withheld: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
