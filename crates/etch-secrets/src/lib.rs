//! The environment variables that hold provider credentials (G18 in
//! docs/requirements.md: a child process never inherits them unless the
//! user says so).
//!
//! One list, with no dependencies, so that everything which reads a key
//! (`etch-auth`, the provider factory) and everything which starts a child
//! (the bash tool, hooks, plugins, MCP servers) agrees on it: a copy of
//! this list was once missed when a variable was added. It must not know
//! how keys are used or how children are spawned.

/// An OpenAI Platform API key.
pub const ENV_OPENAI_API_KEY: &str = "OPENAI_API_KEY";

/// An OpenRouter (OpenAI-compatible) API key.
pub const ENV_OPENROUTER_API_KEY: &str = "OPENROUTER_API_KEY";

/// A Codex-compatible bearer token.
pub const ENV_CODEX_ACCESS_TOKEN: &str = "CODEX_ACCESS_TOKEN";

/// An Anthropic API key.
pub const ENV_ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";

/// Every credential variable: what child environments are scrubbed of.
pub const CREDENTIAL_ENV_VARS: [&str; 4] = [
    ENV_OPENAI_API_KEY,
    ENV_OPENROUTER_API_KEY,
    ENV_CODEX_ACCESS_TOKEN,
    ENV_ANTHROPIC_API_KEY,
];

/// Whether `name` is a credential variable.
pub fn is_credential(name: &str) -> bool {
    CREDENTIAL_ENV_VARS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are unique, and shell-safe (they are written into the bash
    /// tool's `unset` line).
    #[test]
    fn names_are_unique_and_plain() {
        let mut names = CREDENTIAL_ENV_VARS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CREDENTIAL_ENV_VARS.len());
        for name in CREDENTIAL_ENV_VARS {
            assert!(
                name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{name}"
            );
            assert!(is_credential(name));
        }
        assert!(!is_credential("HOME"));
    }
}
