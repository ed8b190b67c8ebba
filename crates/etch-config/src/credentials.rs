//! Detection of credential-looking keys (E-CFG-04, C11).
//!
//! Credentials come only from flags and environment variables; a config key
//! that looks like one is an error wherever it appears. This module owns the
//! "looks like a credential" rule; it must not know the schema or files.

/// Words that on their own name a credential.
const CREDENTIAL_WORDS: &[&str] = &[
    "token",
    "secret",
    "secrets",
    "password",
    "passwords",
    "passwd",
    "apikey",
    "bearer",
];

/// Adjacent word pairs that name a credential (`api_key`, `private-key`).
const CREDENTIAL_PAIRS: &[[&str; 2]] = &[["api", "key"], ["private", "key"], ["access", "key"]];

/// Whether `key` looks like it holds a credential. The parser asks only about
/// keys the schema does not declare. Words are split at `_`,
/// `-`, `.` and camelCase humps, so `api_key`, `apiKey`, `auth_token` and
/// `client_secret` match while `keep_recent_tokens` (plural, a count) does not.
pub(crate) fn looks_like_credential(key: &str) -> bool {
    let words = words(key);
    words
        .iter()
        .any(|word| CREDENTIAL_WORDS.contains(&word.as_str()))
        || words.windows(2).any(|pair| {
            CREDENTIAL_PAIRS
                .iter()
                .any(|[a, b]| pair[0] == *a && pair[1] == *b)
        })
}

/// Lowercase words of `key`, split at non-alphanumerics and camelCase humps.
fn words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for ch in key.chars() {
        if !ch.is_alphanumeric() {
            words.push(std::mem::take(&mut current));
            previous_lower = false;
            continue;
        }
        if ch.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = ch.is_lowercase() || ch.is_numeric();
        current.extend(ch.to_lowercase());
    }
    words.push(current);
    words.retain(|word| !word.is_empty());
    words
}

#[cfg(test)]
mod tests {
    use super::looks_like_credential;

    /// Common spellings of credentials are caught.
    #[test]
    fn catches_credentials() {
        for key in [
            "api_key",
            "API_KEY",
            "apiKey",
            "openai_api_key",
            "apikey",
            "token",
            "auth_token",
            "accessToken",
            "secret",
            "client_secret",
            "secrets",
            "password",
            "private-key",
        ] {
            assert!(looks_like_credential(key), "{key}");
        }
    }

    /// Schema keys that merely mention tokens or keys are not credentials.
    #[test]
    fn spares_ordinary_keys() {
        for key in [
            "keep_recent_tokens",
            "auto_compact_threshold_tokens",
            "keep_messages",
            "inherit_credentials",
            "key",
            "monkey",
            "tokenizer",
        ] {
            assert!(!looks_like_credential(key), "{key}");
        }
    }
}
