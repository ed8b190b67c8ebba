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

/// The base prompt of the compact profile (`[tools] profile =
/// "compact"`, issue 30): for small models on local servers, which read
/// every token on every request and follow a few plain rules better than
/// many. It keeps the P-PROMPT-05 lines and the P-PROMPT-04 hint, and
/// says the two things such models most often get wrong: answering about
/// files they have not looked at, and reporting a change they did not
/// make.
pub fn compact_base_prompt(tools: &[&str]) -> String {
    let mut text = String::from("You are a coding assistant working in the user's project.");
    if tools.is_empty() {
        text.push_str(" No tools are available; answer from the conversation.");
    } else {
        text.push_str(
            " Use the tools to look at files and run commands.\n\n\
             Guidelines:\n\
             - Before answering about a file, look at it with a tool; answer only from what the tools returned\n\
             - Change files only when asked, with edit or write, and say only what you did",
        );
    }
    let has = |name: &str| tools.contains(&name);
    if has("bash") && !has("grep") && !has("find") && !has("ls") {
        text.push_str("\n- ");
        text.push_str(BASH_FOR_FILES);
    }
    if !tools.is_empty() {
        for line in GUIDELINES {
            text.push_str("\n- ");
            text.push_str(line);
        }
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

    /// The compact prompt is at most 60% of the full one and keeps the
    /// P-PROMPT-04/05 lines.
    #[test]
    fn the_compact_prompt_is_short_and_keeps_the_guidelines() {
        let tools = ["bash", "edit", "find", "grep", "ls", "read", "write"];
        let compact = compact_base_prompt(&tools);
        assert!(
            compact.len() * 5 <= base_prompt(&tools).len() * 3,
            "{compact}"
        );
        assert!(compact.ends_with(
            "- Be concise in your responses\n- Show file paths clearly when working with files"
        ));
        assert!(!compact.contains(BASH_FOR_FILES));
        assert!(compact_base_prompt(&["bash", "read"]).contains(BASH_FOR_FILES));
        assert!(compact_base_prompt(&[]).contains("No tools are available"));
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
