//! Which OpenAI auth mode applies (E-AUTH-01, E-AUTH-03, E-AUTH-07, G17).
//!
//! This module owns the precedence rule and the exact UI labels as pure
//! functions over already-gathered inputs. It must not read files, make HTTP
//! requests or decide whether a stored login can be refreshed: the caller does
//! that (for instance with [`crate::oauth::ensure_fresh`]) and passes the
//! answer in [`AuthInputs::stored_login`].

use std::fmt;

use crate::Secret;

// The variable names live in `etch-secrets`, shared with every crate that
// spawns children and scrubs them.
pub use etch_secrets::{
    CREDENTIAL_ENV_VARS, ENV_ANTHROPIC_API_KEY, ENV_CODEX_ACCESS_TOKEN, ENV_OPENAI_API_KEY,
    ENV_OPENROUTER_API_KEY,
};

/// Where an API key came from; all of them are "Platform API key" mode (G17),
/// but status output and errors can say which one was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiKeySource {
    /// The `--api-key` command-line flag.
    Flag,
    /// The `OPENAI_API_KEY` environment variable.
    OpenAiEnv,
    /// The `OPENROUTER_API_KEY` environment variable.
    OpenRouterEnv,
}

impl ApiKeySource {
    /// A short human description, e.g. for `etch auth status`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Flag => "--api-key",
            Self::OpenAiEnv => ENV_OPENAI_API_KEY,
            Self::OpenRouterEnv => ENV_OPENROUTER_API_KEY,
        }
    }
}

/// The auth mode for the OpenAI provider. The modes stay distinct because they
/// bill differently (E-AUTH-01, E-AUTH-12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthMode {
    /// `openai-api-key`: a Platform or OpenAI-compatible key.
    OpenAiApiKey {
        /// Which input supplied the key.
        source: ApiKeySource,
    },
    /// `openai-codex-oauth`: the stored ChatGPT/Codex subscription login.
    CodexOAuth,
    /// `openai-codex-token`: a bearer token from `CODEX_ACCESS_TOKEN`.
    CodexToken,
}

impl AuthMode {
    /// The exact UI label of E-AUTH-07.
    pub fn label(self) -> &'static str {
        match self {
            Self::CodexOAuth => "OpenAI: ChatGPT/Codex subscription",
            Self::OpenAiApiKey { .. } => "OpenAI: Platform API key",
            Self::CodexToken => "OpenAI: Codex access token",
        }
    }

    /// The mode identifier of E-AUTH-01 (`openai-codex-oauth`, ...).
    pub fn id(self) -> &'static str {
        match self {
            Self::CodexOAuth => "openai-codex-oauth",
            Self::OpenAiApiKey { .. } => "openai-api-key",
            Self::CodexToken => "openai-codex-token",
        }
    }
}

impl fmt::Display for AuthMode {
    /// Prints the UI label.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Everything the precedence rule looks at. Empty strings count as absent, so
/// `OPENAI_API_KEY=` does not select a mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthInputs {
    /// The `--api-key` value, if given.
    pub explicit_api_key: Option<Secret>,
    /// Whether a stored OAuth login exists and can be used (refreshed if needed).
    pub stored_login: bool,
    /// `CODEX_ACCESS_TOKEN`.
    pub codex_access_token: Option<Secret>,
    /// `OPENAI_API_KEY`.
    pub openai_api_key: Option<Secret>,
    /// `OPENROUTER_API_KEY`.
    pub openrouter_api_key: Option<Secret>,
}

impl AuthInputs {
    /// Gathers the environment variables through `get` (pass
    /// `|k| std::env::var(k).ok()` in production; a map lookup in tests).
    pub fn from_env(
        explicit_api_key: Option<Secret>,
        stored_login: bool,
        get: impl Fn(&str) -> Option<String>,
    ) -> Self {
        Self {
            explicit_api_key,
            stored_login,
            codex_access_token: get(ENV_CODEX_ACCESS_TOKEN).map(Secret::from),
            openai_api_key: get(ENV_OPENAI_API_KEY).map(Secret::from),
            openrouter_api_key: get(ENV_OPENROUTER_API_KEY).map(Secret::from),
        }
    }

    /// The static secret for `mode`: the API key or `CODEX_ACCESS_TOKEN`.
    /// `None` for [`AuthMode::CodexOAuth`], whose token comes from the store.
    pub fn secret_for(&self, mode: AuthMode) -> Option<&Secret> {
        let slot = match mode {
            AuthMode::CodexOAuth => return None,
            AuthMode::CodexToken => &self.codex_access_token,
            AuthMode::OpenAiApiKey {
                source: ApiKeySource::Flag,
            } => &self.explicit_api_key,
            AuthMode::OpenAiApiKey {
                source: ApiKeySource::OpenAiEnv,
            } => &self.openai_api_key,
            AuthMode::OpenAiApiKey {
                source: ApiKeySource::OpenRouterEnv,
            } => &self.openrouter_api_key,
        };
        present(slot.as_ref())
    }
}

/// `Some` only for a non-empty secret.
fn present(secret: Option<&Secret>) -> Option<&Secret> {
    secret.filter(|s| !s.is_empty())
}

/// Applies E-AUTH-03: (1) `--api-key`; (2) a usable stored OAuth login;
/// (3) `CODEX_ACCESS_TOKEN`; (4) `OPENAI_API_KEY`, then `OPENROUTER_API_KEY`.
/// `None` means no OpenAI credentials at all (P-AUTH-02 guidance applies).
pub fn resolve_mode(inputs: &AuthInputs) -> Option<AuthMode> {
    if present(inputs.explicit_api_key.as_ref()).is_some() {
        Some(AuthMode::OpenAiApiKey {
            source: ApiKeySource::Flag,
        })
    } else if inputs.stored_login {
        Some(AuthMode::CodexOAuth)
    } else if present(inputs.codex_access_token.as_ref()).is_some() {
        Some(AuthMode::CodexToken)
    } else if present(inputs.openai_api_key.as_ref()).is_some() {
        Some(AuthMode::OpenAiApiKey {
            source: ApiKeySource::OpenAiEnv,
        })
    } else if present(inputs.openrouter_api_key.as_ref()).is_some() {
        Some(AuthMode::OpenAiApiKey {
            source: ApiKeySource::OpenRouterEnv,
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs with every credential present, so each test removes what it
    /// needs to reach the rule under test.
    fn all() -> AuthInputs {
        AuthInputs {
            explicit_api_key: Some(Secret::new("flag")),
            stored_login: true,
            codex_access_token: Some(Secret::new("codex")),
            openai_api_key: Some(Secret::new("openai")),
            openrouter_api_key: Some(Secret::new("openrouter")),
        }
    }

    /// Walks the precedence from top to bottom, removing one input per step.
    #[test]
    fn precedence_order() {
        let mut inputs = all();
        let flag = AuthMode::OpenAiApiKey {
            source: ApiKeySource::Flag,
        };
        assert_eq!(resolve_mode(&inputs), Some(flag));
        assert_eq!(inputs.secret_for(flag).unwrap().expose(), "flag");

        inputs.explicit_api_key = None;
        assert_eq!(resolve_mode(&inputs), Some(AuthMode::CodexOAuth));
        assert_eq!(inputs.secret_for(AuthMode::CodexOAuth), None);

        inputs.stored_login = false;
        assert_eq!(resolve_mode(&inputs), Some(AuthMode::CodexToken));
        assert_eq!(
            inputs.secret_for(AuthMode::CodexToken).unwrap().expose(),
            "codex"
        );

        inputs.codex_access_token = None;
        let openai = AuthMode::OpenAiApiKey {
            source: ApiKeySource::OpenAiEnv,
        };
        assert_eq!(resolve_mode(&inputs), Some(openai));
        assert_eq!(inputs.secret_for(openai).unwrap().expose(), "openai");

        inputs.openai_api_key = None;
        let openrouter = AuthMode::OpenAiApiKey {
            source: ApiKeySource::OpenRouterEnv,
        };
        assert_eq!(resolve_mode(&inputs), Some(openrouter));
        assert_eq!(
            inputs.secret_for(openrouter).unwrap().expose(),
            "openrouter"
        );

        inputs.openrouter_api_key = None;
        assert_eq!(resolve_mode(&inputs), None);
    }

    /// E-AUTH-04: an environment API key does not beat a stored login.
    #[test]
    fn env_key_ranks_below_stored_login() {
        let inputs = AuthInputs {
            stored_login: true,
            openai_api_key: Some(Secret::new("dummy")),
            ..AuthInputs::default()
        };
        assert_eq!(resolve_mode(&inputs), Some(AuthMode::CodexOAuth));
    }

    /// Empty values (e.g. `OPENAI_API_KEY=`) are ignored.
    #[test]
    fn empty_values_are_absent() {
        let inputs = AuthInputs::from_env(Some(Secret::new("")), false, |k| {
            (k == ENV_OPENAI_API_KEY).then(String::new)
        });
        assert_eq!(resolve_mode(&inputs), None);
    }

    /// `from_env` reads the three variables by their exact names.
    #[test]
    fn from_env_reads_named_variables() {
        let inputs = AuthInputs::from_env(None, false, |k| match k {
            "CODEX_ACCESS_TOKEN" => Some("c".to_owned()),
            "OPENROUTER_API_KEY" => Some("r".to_owned()),
            _ => None,
        });
        assert_eq!(inputs.codex_access_token, Some(Secret::new("c")));
        assert_eq!(inputs.openai_api_key, None);
        assert_eq!(inputs.openrouter_api_key, Some(Secret::new("r")));
    }

    /// The labels are exactly those of E-AUTH-07, and every API-key source
    /// shares one label (G17).
    #[test]
    fn labels_are_exact() {
        assert_eq!(
            AuthMode::CodexOAuth.label(),
            "OpenAI: ChatGPT/Codex subscription"
        );
        assert_eq!(AuthMode::CodexToken.label(), "OpenAI: Codex access token");
        for source in [
            ApiKeySource::Flag,
            ApiKeySource::OpenAiEnv,
            ApiKeySource::OpenRouterEnv,
        ] {
            let mode = AuthMode::OpenAiApiKey { source };
            assert_eq!(mode.label(), "OpenAI: Platform API key");
            assert_eq!(mode.to_string(), "OpenAI: Platform API key");
        }
    }

    /// Debug output of the inputs never shows a key.
    #[test]
    fn inputs_debug_redacts() {
        let dbg = format!("{:?}", all());
        for secret in ["\"flag\"", "\"codex\"", "\"openai\"", "\"openrouter\""] {
            assert!(!dbg.contains(secret), "{dbg}");
        }
    }
}
