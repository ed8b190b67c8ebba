//! The environment a `bash` command runs with (G18): the agent's own
//! environment minus the provider credential variables, unless the user
//! chose to pass them on.
//!
//! Removing them from the environment is not enough: `bash -lc` runs the
//! user's login files (`~/.bash_profile` or `~/.profile`), which often
//! export the very keys again. So the script bash runs starts with an
//! `unset` of them, after the login files and on the command's own first
//! line, so that bash's messages still give the command's line numbers.
//!
//! It must not know how the command is spawned or what it prints; it only
//! chooses the variables and that prefix.

use std::borrow::Cow;
use std::ffi::OsString;

/// Environment variables holding provider credentials, removed from the
/// command's environment unless credentials are inherited (G18); the one
/// list every spawner shares.
use etch_secrets::CREDENTIAL_ENV_VARS as CREDENTIAL_VARS;

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

/// What `bash -lc` runs for `command`: the command itself when credentials
/// are inherited, else the command after `unset {CREDENTIAL_VARS}
/// 2>/dev/null; ` on the same first line, so that keys a login file
/// exported again are gone before the command runs (G18). Only bash sees
/// this script; results, details and progress show the command.
pub(super) fn script(command: &str, inherit_credentials: bool) -> Cow<'_, str> {
    if inherit_credentials {
        return Cow::Borrowed(command);
    }
    Cow::Owned(format!(
        "unset {} 2>/dev/null; {command}",
        CREDENTIAL_VARS.join(" ")
    ))
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

    /// G18: a key a login file exports again is unset before the command
    /// runs, unless credentials are inherited; the command keeps its line
    /// numbers in bash's messages.
    #[tokio::test]
    async fn login_files_cannot_export_keys_again() {
        let dir = TempDir::new().unwrap();
        let home = TempDir::new().unwrap();
        std::fs::write(
            home.path().join(".profile"),
            "export OPENAI_API_KEY=sk-from-profile\n",
        )
        .unwrap();
        let vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| k != "HOME" && !CREDENTIAL_VARS.iter().any(|c| k == *c))
            .chain([("HOME".into(), home.path().into())])
            .collect();
        let run = |command: &str, inherit: bool| {
            let env = child_env(vars.clone(), inherit);
            let script = script(command, inherit).into_owned();
            let ctx = ctx(&dir);
            async move { run_command(&script, 5, None, env, 1 << 20, None, &ctx).await }
        };
        let echo = "echo \"k=$OPENAI_API_KEY\"";
        assert_eq!(run(echo, false).await.unwrap().text, "k=\n");
        assert_eq!(run(echo, true).await.unwrap().text, "k=sk-from-profile\n");
        let out = run("echo one\nif then fi", false).await.unwrap().text;
        assert!(out.contains("line 2: syntax error"), "{out}");
    }

    /// The prefix sits on the command's first line and names every
    /// scrubbed variable.
    #[test]
    fn script_prefix() {
        assert_eq!(script("ls\npwd", true), "ls\npwd");
        assert_eq!(
            script("ls\npwd", false),
            "unset OPENAI_API_KEY OPENROUTER_API_KEY CODEX_ACCESS_TOKEN ANTHROPIC_API_KEY \
             2>/dev/null; ls\npwd"
        );
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
            None,
            &ctx(&dir),
        )
        .await
        .unwrap();
        assert_eq!(out.text, "unset kept\n");
        let out = run_command(
            command,
            5,
            None,
            child_env(vars, true),
            1 << 20,
            None,
            &ctx(&dir),
        )
        .await
        .unwrap();
        assert_eq!(out.text, "sk-test kept\n");
    }
}
