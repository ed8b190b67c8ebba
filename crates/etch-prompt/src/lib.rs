//! System prompt assembly (E-CTX-02, G22).
//!
//! This crate owns the text of the pinned layers: the base coding-agent
//! prompt with etch's invariants and Pi's guideline lines, and the
//! environment tail (cwd and date). Instruction files, skills and the `[prompt]`
//! config text join these layers in the context issue. It must not read the
//! session log or know any provider: it returns [`SystemLayer`]s.

use std::path::Path;

use etch_model::SystemLayer;

/// Pi's guideline lines, included verbatim (P-PROMPT-05).
const GUIDELINES: [&str; 2] = [
    "Be concise in your responses",
    "Show file paths clearly when working with files",
];

/// Added when `bash` is active but none of `grep`, `find`, `ls` is (P-PROMPT-04).
const BASH_FOR_FILES: &str = "Use bash for file operations like ls, rg, find";

/// The base prompt for a session whose active tools are `tools`.
pub fn base_prompt(tools: &[&str]) -> String {
    let mut text = String::from(
        "You are an expert coding assistant operating inside etch, a terminal coding agent. \
         You help users by reading files, running commands, editing code and writing new files.\n\n\
         Invariants:\n\
         - Everything you do is recorded in an append-only session log the user can read.\n\
         - Read and follow the project instructions (AGENTS.md) included below; they are the \
         repository's own rules for workflow, coding, documentation and verification.\n\
         - Use tools to inspect the project instead of guessing; change files only when the task needs it.",
    );
    if tools.is_empty() {
        text.push_str("\n\nNo tools are available in this session; answer from the conversation.");
    } else {
        text.push_str("\n\nAvailable tools: ");
        text.push_str(&tools.join(", "));
    }
    text.push_str("\n\nGuidelines:");
    let has = |name: &str| tools.contains(&name);
    if has("bash") && !has("grep") && !has("find") && !has("ls") {
        text.push_str("\n- ");
        text.push_str(BASH_FOR_FILES);
    }
    for line in GUIDELINES {
        text.push_str("\n- ");
        text.push_str(line);
    }
    text
}

/// The environment tail that ends every prompt (P-PROMPT-11, G22).
pub fn environment_tail(cwd: &Path, date: &str) -> String {
    let cwd = cwd.to_string_lossy().replace('\\', "/");
    format!("Current working directory: {cwd}\nCurrent date: {date}")
}

/// The pinned layers known so far: base prompt, then the environment tail.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// P-PROMPT-05 lines are always present; P-PROMPT-04 only for bash alone.
    #[test]
    fn guidelines_follow_the_tool_set() {
        let all = base_prompt(&["bash", "edit", "find", "grep", "ls", "read", "write"]);
        assert!(all.contains(
            "- Be concise in your responses\n- Show file paths clearly when working with files"
        ));
        assert!(!all.contains(BASH_FOR_FILES));
        assert!(base_prompt(&["bash", "read"]).contains(BASH_FOR_FILES));
        assert!(base_prompt(&[]).contains("No tools are available"));
    }

    /// G22: the prompt ends with the cwd and date lines.
    #[test]
    fn tail_names_cwd_and_date() {
        let layers = system_layers(&[], Path::new("/w/p"), "2026-12-02");
        assert_eq!(
            layers.last().unwrap().text,
            "Current working directory: /w/p\nCurrent date: 2026-12-02"
        );
    }
}
