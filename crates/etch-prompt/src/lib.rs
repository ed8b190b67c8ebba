//! System prompt assembly (E-CTX-02..11, E-CTX-21, G21, G22).
//!
//! This crate owns the text of the pinned layers: the base coding-agent
//! prompt, the `[prompt]` config text, `SYSTEM.md` files, the `AGENTS.md`
//! layer (with `CLAUDE.md` fallback), the skills catalog and the environment
//! tail, assembled in G22 order by [`assemble`]. It also owns skill invocation
//! blocks and the token estimator. Project files are inert text here (never
//! executed). It must not read the session log or know any provider: it
//! returns [`SystemLayer`]s and plain strings.

mod assemble;
mod base;
pub mod estimate;
mod instructions;
mod paths;
mod read;
pub mod skills;

use std::fmt::Display;
use std::path::Path;

use etch_model::SystemLayer;

pub use assemble::{Assembled, PromptInputs, assemble};
pub use base::{base_prompt, compact_base_prompt, environment_tail};
pub use estimate::{TokenCounter, message_tokens, tokens};
pub use read::ReadError;
pub use skills::{
    Rejection, Skill, SkillBlock, SkillError, expand_skill, find_skill, load_skill_body,
    parse_skill_block, skill_problems,
};

/// The minimal pinned layers (base prompt, then the environment tail) for
/// callers that do not read project files; [`assemble`] gives the full set.
pub fn system_layers(tools: &[&str], cwd: &Path, date: &str) -> Vec<SystemLayer> {
    vec![
        SystemLayer {
            name: "base prompt".to_string(),
            text: base_prompt(tools),
        },
        SystemLayer {
            name: "environment".to_string(),
            text: environment_tail(cwd, date),
        },
    ]
}

/// A diagnostic line, `"{path}: {reason}"`, with the path `/`-separated.
pub(crate) fn diagnostic(path: &Path, reason: impl Display) -> String {
    format!("{}: {reason}", paths::slash_path(path))
}

#[cfg(test)]
pub(crate) mod test_fs {
    //! Helpers that lay out fake projects and homes in temp directories.

    use std::fs;
    use std::path::{Path, PathBuf};

    /// Writes `text` to `path`, creating parent directories.
    pub fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// Creates a valid skill `root/name/SKILL.md` and returns its path.
    pub fn skill(root: &Path, name: &str, description: &str) -> PathBuf {
        let path = root.join(name).join("SKILL.md");
        write(
            &path,
            &format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n"),
        );
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// G22: the legacy layers end with the cwd and date lines.
    #[test]
    fn tail_names_cwd_and_date() {
        let layers = system_layers(&[], Path::new("/w/p"), "2026-12-02");
        assert_eq!(
            layers.last().unwrap().text,
            "Current working directory: /w/p\nCurrent date: 2026-12-02"
        );
    }
}
