//! The two layers every prompt has: the base coding-agent prompt (E-CTX-02
//! layer 1, P-PROMPT-02/04/05) and the environment tail that ends the prompt
//! (P-PROMPT-11, G22).
//!
//! This module owns their exact wording. It must not know about files on
//! disk, skills or how layers are joined.

use std::path::Path;

use crate::paths::slash_path;

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

/// The environment tail that ends every prompt (P-PROMPT-11, G22): the cwd
/// with `/` separators and the local date as `YYYY-MM-DD`.
pub fn environment_tail(cwd: &Path, date: &str) -> String {
    let cwd = slash_path(cwd);
    format!("Current working directory: {cwd}\nCurrent date: {date}")
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

    /// G22: the tail is exactly the cwd line and the date line.
    #[test]
    fn tail_names_cwd_and_date() {
        assert_eq!(
            environment_tail(Path::new("/w/p"), "2026-12-02"),
            "Current working directory: /w/p\nCurrent date: 2026-12-02"
        );
    }
}
