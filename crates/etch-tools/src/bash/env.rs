//! The environment a `bash` command runs with (G18): the agent's own
//! environment minus the provider credential variables, unless the user
//! chose to pass them on.
//!
//! It must not know how the command is spawned or what it prints; it only
//! chooses the variables.

use std::ffi::OsString;

/// Environment variables holding provider credentials, removed from the
/// command's environment unless credentials are inherited (G18).
const CREDENTIAL_VARS: [&str; 4] = [
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "CODEX_ACCESS_TOKEN",
    "ANTHROPIC_API_KEY",
];

/// The environment for the command: `vars` minus the provider credential
/// variables, unless `inherit_credentials` (G18).
pub(super) fn child_env<I>(vars: I, inherit_credentials: bool) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    vars.into_iter()
        .filter(|(key, _)| inherit_credentials || !CREDENTIAL_VARS.iter().any(|c| key == *c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bash::process::run_command;
    use crate::bash::testutil::ctx;
    use tempfile::TempDir;

    /// G18: credential variables are removed unless inherited.
    #[test]
    fn child_env_scrubs_credentials() {
        let vars = || {
            [
                "OPENAI_API_KEY",
                "OPENROUTER_API_KEY",
                "CODEX_ACCESS_TOKEN",
                "ANTHROPIC_API_KEY",
                "HOME",
            ]
            .map(|k| (OsString::from(k), OsString::from("v")))
        };
        let scrubbed = child_env(vars(), false);
        assert_eq!(
            scrubbed,
            vec![(OsString::from("HOME"), OsString::from("v"))]
        );
        assert_eq!(child_env(vars(), true).len(), 5);
    }

    /// G18: the command really sees the scrubbed environment.
    #[tokio::test]
    async fn command_sees_scrubbed_env() {
        let dir = TempDir::new().unwrap();
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !CREDENTIAL_VARS.iter().any(|c| k == *c))
            .collect();
        vars.push(("OPENAI_API_KEY".into(), "sk-test".into()));
        vars.push(("ETCH_KEEP".into(), "kept".into()));
        let command = "echo \"${OPENAI_API_KEY:-unset} $ETCH_KEEP\"";
        let out = run_command(
            command,
            5,
            None,
            child_env(vars.clone(), false),
            1 << 20,
            &ctx(&dir),
        )
        .await
        .unwrap();
        assert_eq!(out.text, "unset kept\n");
        let out = run_command(command, 5, None, child_env(vars, true), 1 << 20, &ctx(&dir))
            .await
            .unwrap();
        assert_eq!(out.text, "sk-test kept\n");
    }
}
