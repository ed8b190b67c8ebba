//! The environment a plugin starts with (E-PLUG-03, E-PLUG-20, G18): a
//! sanitized default set (`PATH`, `HOME`, the temp-dir variables and the
//! locale), plus each variable its entry's `env` allowlist names, and
//! never a model credential, even when allowlisted.

use std::ffi::OsString;

/// Variables every plugin gets when they are set.
const FORWARDED: [&str; 6] = ["PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG"];

/// The environment for a plugin allowing `allow`, taken from `vars`
/// (the process environment), and the allowlisted names refused because
/// they hold credentials.
pub fn plugin_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    allow: &[String],
) -> (Vec<(OsString, OsString)>, Vec<String>) {
    let refused: Vec<String> = allow
        .iter()
        .filter(|name| etch_secrets::CREDENTIAL_ENV_VARS.contains(&name.as_str()))
        .cloned()
        .collect();
    let env = vars
        .into_iter()
        .filter(|(name, _)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            if etch_secrets::CREDENTIAL_ENV_VARS.contains(&name) {
                return false;
            }
            FORWARDED.contains(&name) || name.starts_with("LC_") || allow.iter().any(|a| a == name)
        })
        .collect();
    (env, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_default_set_and_the_allowlist_pass() {
        let vars = [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("LC_ALL", "C"),
            ("SECRET_DB", "x"),
            ("GIT_DIR", "/g"),
            ("OPENAI_API_KEY", "sk"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let (env, refused) = plugin_env(vars, &["GIT_DIR".into(), "OPENAI_API_KEY".into()]);
        let names: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["PATH", "HOME", "LC_ALL", "GIT_DIR"]);
        assert_eq!(refused, ["OPENAI_API_KEY"]);
    }
}
