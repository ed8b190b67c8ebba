//! Full pinned-prompt assembly (E-CTX-02..05, G22): the base prompt, the
//! `[prompt]` text, each `SYSTEM.md`, the AGENTS layer, the skills catalog
//! and the environment tail, as named [`SystemLayer`]s whose blank-line join
//! (`ModelRequest::system_prompt`) is exactly the G22 prompt.
//!
//! This module owns the layer order and names and what `etch context` learns
//! about the run (pinned files, skills, diagnostics). It must not know file
//! formats or discovery rules (the instruction and skill modules do), the
//! session log, or providers.

use std::path::{Path, PathBuf};

use etch_model::SystemLayer;

use crate::instructions::{self, layer_text, render_agents};
use crate::paths::{absolute, slash_path};
use crate::skills::{self, Skill, catalog};
use crate::{base_prompt, compact_base_prompt, environment_tail};

/// What the prompt is assembled from.
#[derive(Debug, Clone, Copy)]
pub struct PromptInputs<'a> {
    /// Working directory of the run; made absolute if it is not.
    pub cwd: &'a Path,
    /// The user's home, for `~/.etch/AGENTS.md` and `~/.etch/skills`; `None`
    /// leaves both out.
    pub home: Option<&'a Path>,
    /// Names of the active tools; the catalog needs `read` (P-PROMPT-10).
    pub tools: &'a [&'a str],
    /// `[prompt] text` from config, included verbatim when non-empty.
    pub prompt_text: Option<&'a str>,
    /// The local date as `YYYY-MM-DD`.
    pub date: &'a str,
    /// Whether the compact profile is in force: the short base prompt
    /// ([`compact_base_prompt`](crate::compact_base_prompt)).
    pub compact: bool,
}

/// The assembled prompt and everything `etch context` reports about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assembled {
    /// One layer per prompt part, in G22 order: `base prompt`, `config
    /// prompt`, `SYSTEM.md: {abs path}` (one per file), `AGENTS.md`, `skills`,
    /// `environment`. Layers with nothing to say are left out.
    pub layers: Vec<SystemLayer>,
    /// Pinned `SYSTEM.md` files, root → cwd.
    pub system_files: Vec<PathBuf>,
    /// Pinned `AGENTS.md`/`CLAUDE.md` files in prompt order.
    pub instruction_files: Vec<PathBuf>,
    /// Valid skills sorted by name, also when `read` is inactive and the
    /// catalog is therefore not in the prompt.
    pub skills: Vec<Skill>,
    /// `"{path}: {reason}"` for unreadable files and rejected or shadowed
    /// skills.
    pub diagnostics: Vec<String>,
}

/// The layers that differ from project to project and are sent at the
/// start of the conversation rather than in the system prompt (see
/// [`Assembled::split`]).
pub const PROJECT_LAYERS: [&str; 3] = ["AGENTS.md", "skills", "environment"];

impl Assembled {
    /// The layers in two parts, each in G22 order: the system prompt (the
    /// base prompt, the `[prompt]` text, `SYSTEM.md` files, which are
    /// meant as the system prompt) and the per-project context
    /// ([`PROJECT_LAYERS`]: instructions, the skills catalog, the
    /// environment), which a request sends after the tool definitions so
    /// that what comes before them stays the same across projects and a
    /// prompt cache can reuse it.
    pub fn split(&self) -> (Vec<SystemLayer>, Vec<SystemLayer>) {
        self.layers
            .iter()
            .cloned()
            .partition(|l| !PROJECT_LAYERS.contains(&l.name.as_str()))
    }

    /// The whole prompt text: the layers joined by blank lines, as
    /// `ModelRequest::system_prompt` joins them.
    pub fn prompt(&self) -> String {
        let texts: Vec<&str> = self
            .layers
            .iter()
            .map(|l| l.text.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        texts.join("\n\n")
    }
}

/// Discovers the instruction files and skills for `inputs.cwd` and builds the
/// pinned layers. Never fails: unreadable or invalid files are diagnostics.
pub fn assemble(inputs: &PromptInputs<'_>) -> Assembled {
    let cwd = absolute(inputs.cwd);
    let home = inputs.home.map(absolute);
    let found = instructions::discover(&cwd, home.as_deref());
    let skills = skills::discover(&cwd, home.as_deref());

    let base = if inputs.compact {
        compact_base_prompt(inputs.tools)
    } else {
        base_prompt(inputs.tools)
    };
    let mut layers = vec![layer("base prompt", base)];
    if let Some(text) = inputs.prompt_text.filter(|t| !t.is_empty()) {
        layers.push(layer("config prompt", layer_text(text).to_string()));
    }
    for file in &found.system {
        let text = layer_text(&file.text);
        if !text.is_empty() {
            let name = format!("SYSTEM.md: {}", slash_path(&file.path));
            layers.push(layer(&name, text.to_string()));
        }
    }
    if let Some(text) = render_agents(&found.agents) {
        layers.push(layer("AGENTS.md", text));
    }
    if inputs.tools.contains(&"read")
        && let Some(text) = catalog(&skills.skills)
    {
        layers.push(layer("skills", text));
    }
    layers.push(layer("environment", environment_tail(&cwd, inputs.date)));

    let mut diagnostics = found.diagnostics;
    diagnostics.extend(skills.diagnostics);
    Assembled {
        layers,
        system_files: found.system.into_iter().map(|f| f.path).collect(),
        instruction_files: found.agents.into_iter().map(|f| f.path).collect(),
        skills: skills.skills,
        diagnostics,
    }
}

/// A named layer.
fn layer(name: &str, text: String) -> SystemLayer {
    SystemLayer {
        name: name.to_string(),
        text,
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use etch_model::{ModelRequest, RequestOptions};

    use super::*;
    use crate::skills::CATALOG_LEAD;
    use crate::test_fs::{skill, write};

    /// All seven built-in tools.
    const ALL: [&str; 7] = ["bash", "edit", "find", "grep", "ls", "read", "write"];

    /// Inputs for `cwd` and `home` with every tool and a fixed date.
    fn inputs<'a>(cwd: &'a Path, home: &'a Path, prompt: Option<&'a str>) -> PromptInputs<'a> {
        PromptInputs {
            cwd,
            home: Some(home),
            tools: &ALL,
            prompt_text: prompt,
            date: "2026-01-02",
            compact: false,
        }
    }

    /// The prompt a provider would send for these layers.
    fn provider_prompt(assembled: &Assembled) -> String {
        let request = ModelRequest {
            system: assembled.layers.clone(),
            messages: Vec::new(),
            tools: Vec::new(),
            options: RequestOptions::default(),
        };
        request.system_prompt()
    }

    /// The split keeps the order of each part: what is the same in every
    /// project before what is not.
    #[test]
    fn split_puts_project_layers_after_the_system_prompt() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let repo = tmp.path().join("repo");
        write(&repo.join("SYSTEM.md"), "You maintain the repo.\n");
        write(&repo.join("AGENTS.md"), "Run the tests.\n");
        skill(&repo.join(".etch/skills"), "lint", "Lint the code");
        let assembled = assemble(&inputs(&repo, &home, Some("Prefer small diffs.\n")));
        let (system, project) = assembled.split();
        let names = |layers: &[SystemLayer]| -> Vec<String> {
            layers.iter().map(|l| l.name.clone()).collect()
        };
        assert_eq!(names(&system)[..2], ["base prompt", "config prompt"]);
        assert!(names(&system)[2].starts_with("SYSTEM.md: "));
        assert_eq!(names(&project), ["AGENTS.md", "skills", "environment"]);
        assert_eq!(system.len() + project.len(), assembled.layers.len());
    }

    /// The full G22 prompt: base, [prompt] text, two SYSTEM.md root → cwd,
    /// ~/.etch/AGENTS.md, an ancestor AGENTS.md (its CLAUDE.md ignored), a
    /// CLAUDE.md-only directory, the catalog and the tail; exact text.
    #[test]
    fn exact_g22_prompt() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let repo = tmp.path().join("repo");
        let pkg = repo.join("pkg");
        let cwd = pkg.join("app");
        write(&home.join(".etch/AGENTS.md"), "Global rules.\n");
        write(&repo.join("SYSTEM.md"), "You maintain the repo.\n");
        write(&repo.join("AGENTS.md"), "Run the tests.\n");
        write(&repo.join("CLAUDE.md"), "IGNORED\n");
        write(&pkg.join("CLAUDE.md"), "Package rules.");
        write(&cwd.join("SYSTEM.md"), "You also own the app.\n");
        let location = skill(&repo.join(".etch/skills"), "lint", "Lint the code");

        let assembled = assemble(&inputs(&cwd, &home, Some("Prefer small diffs.\n")));
        let p = |path: &Path| slash_path(path);
        let expected = format!(
            "{base}\n\n\
             Prefer small diffs.\n\n\
             You maintain the repo.\n\n\
             You also own the app.\n\n\
             <project_context>\n\
             Project-specific instructions and guidelines:\n\n\
             <project_instructions path=\"{global}\">\nGlobal rules.\n</project_instructions>\n\n\
             <project_instructions path=\"{agents}\">\nRun the tests.\n</project_instructions>\n\n\
             <project_instructions path=\"{claude}\">\nPackage rules.\n</project_instructions>\n\
             </project_context>\n\n\
             {CATALOG_LEAD}\n\
             <available_skills>\n\
             <skill><name>lint</name><description>Lint the code</description>\
             <location>{location}</location></skill>\n\
             </available_skills>\n\n\
             Current working directory: {cwd}\n\
             Current date: 2026-01-02",
            base = base_prompt(&ALL),
            global = p(&home.join(".etch/AGENTS.md")),
            agents = p(&repo.join("AGENTS.md")),
            claude = p(&pkg.join("CLAUDE.md")),
            location = p(&location),
            cwd = p(&cwd),
        );
        assert_eq!(provider_prompt(&assembled), expected);
        assert_eq!(assembled.prompt(), expected);
        assert!(!expected.contains("IGNORED"));

        let names: Vec<&str> = assembled.layers.iter().map(|l| l.name.as_str()).collect();
        let system = |path: &Path| format!("SYSTEM.md: {}", p(path));
        assert_eq!(
            names,
            [
                "base prompt",
                "config prompt",
                &system(&repo.join("SYSTEM.md")),
                &system(&cwd.join("SYSTEM.md")),
                "AGENTS.md",
                "skills",
                "environment",
            ]
        );
        assert_eq!(
            assembled.system_files,
            [repo.join("SYSTEM.md"), cwd.join("SYSTEM.md")]
        );
        assert_eq!(
            assembled.instruction_files,
            [
                home.join(".etch/AGENTS.md"),
                repo.join("AGENTS.md"),
                pkg.join("CLAUDE.md")
            ]
        );
        assert!(
            assembled.diagnostics.is_empty(),
            "{:?}",
            assembled.diagnostics
        );
    }

    /// With nothing on disk the prompt is the base prompt and the tail,
    /// exactly what `system_layers` gives.
    #[test]
    fn empty_project_matches_system_layers() {
        let tmp = tempfile::tempdir().unwrap();
        let assembled = assemble(&inputs(tmp.path(), &tmp.path().join("home"), Some("")));
        assert_eq!(
            assembled.layers,
            crate::system_layers(&ALL, tmp.path(), "2026-01-02")
        );
        assert!(assembled.skills.is_empty() && assembled.diagnostics.is_empty());
    }

    /// Without `read` the catalog is absent, but the skills are still listed.
    #[test]
    fn catalog_needs_read() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        skill(&home.join(".etch/skills"), "pdf", "PDF forms");
        let mut input = inputs(tmp.path(), &home, None);
        input.tools = &["bash", "edit"];
        let assembled = assemble(&input);
        assert!(!assembled.prompt().contains("<available_skills>"));
        assert!(assembled.layers.iter().all(|l| l.name != "skills"));
        assert_eq!(assembled.skills.len(), 1);
        input.tools = &["read"];
        assert!(assemble(&input).prompt().contains("<name>pdf</name>"));
    }

    /// An invalid UTF-8 AGENTS.md and (when not root) an unreadable one are
    /// diagnosed; the rest of the prompt is intact.
    #[test]
    fn unreadable_agents_keeps_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let repo = tmp.path().join("repo");
        let cwd = repo.join("sub");
        write(&repo.join("AGENTS.md"), "Repo rules.");
        fs::create_dir_all(&cwd).unwrap();
        fs::write(cwd.join("AGENTS.md"), b"\xff\xfe bad").unwrap();
        let assembled = assemble(&inputs(&cwd, &home, None));
        assert_eq!(
            assembled.diagnostics,
            [format!(
                "{}: is not valid UTF-8 text",
                cwd.join("AGENTS.md").display()
            )]
        );
        assert_eq!(assembled.instruction_files, [repo.join("AGENTS.md")]);
        let prompt = assembled.prompt();
        assert!(prompt.contains("Repo rules."));
        assert!(prompt.ends_with("Current date: 2026-01-02"));

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let locked = repo.join("AGENTS.md");
            fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
            // Root reads anything regardless of mode; then there is nothing to test.
            if fs::read(&locked).is_err() {
                let assembled = assemble(&inputs(&cwd, &home, None));
                assert_eq!(
                    assembled.diagnostics[0],
                    format!("{}: permission denied", locked.display())
                );
                assert!(assembled.instruction_files.is_empty());
                assert!(assembled.prompt().ends_with("Current date: 2026-01-02"));
            }
            fs::set_permissions(&locked, fs::Permissions::from_mode(0o644)).unwrap();
        }
    }

    /// A relative cwd is made absolute for discovery and the tail.
    #[test]
    fn relative_cwd_becomes_absolute() {
        let tmp = tempfile::tempdir().unwrap();
        let assembled = assemble(&inputs(Path::new("."), tmp.path(), None));
        let tail = &assembled.layers.last().unwrap().text;
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            tail,
            &format!(
                "Current working directory: {}\nCurrent date: 2026-01-02",
                cwd.display()
            )
        );
    }
}
