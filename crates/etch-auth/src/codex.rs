//! Reading Codex CLI's stored ChatGPT login (`$CODEX_HOME/auth.json`,
//! else `~/.codex/auth.json`), for `etch auth import codex`: the tokens
//! are etch's own kind (the same issuer and client), so a Codex user
//! need not log in again. Only read when the user asks for it, never
//! implicitly; the file is never changed.
//!
//! This module must not know how the login is stored by etch or shown.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::AuthError;
use crate::jwt;
use crate::secret::Secret;
use crate::store::OAuthCredentials;

/// Codex's login file: `$CODEX_HOME/auth.json`, else
/// `~/.codex/auth.json`.
pub fn login_file(codex_home: Option<&Path>, home: &Path) -> PathBuf {
    codex_home
        .map_or_else(|| home.join(".codex"), Path::to_path_buf)
        .join("auth.json")
}

/// A Codex login, ready to store.
#[derive(Debug)]
pub struct CodexLogin {
    /// The tokens.
    pub credentials: OAuthCredentials,
    /// The account's e-mail address, when the id token names it.
    pub email: Option<String>,
}

/// Codex's file, as far as etch reads it.
#[derive(Deserialize)]
struct File {
    /// The ChatGPT login's tokens; absent for an API-key-only file.
    tokens: Option<Tokens>,
}

/// The `tokens` object.
#[derive(Deserialize)]
struct Tokens {
    /// The OpenID token.
    id_token: Option<String>,
    /// The access token (a JWT whose `exp` says until when it works).
    access_token: Option<String>,
    /// The refresh token.
    refresh_token: Option<String>,
    /// The ChatGPT account id.
    account_id: Option<String>,
}

/// Reads the Codex login at `path`.
///
/// # Errors
/// When the file cannot be read, is not Codex's format, or holds no
/// ChatGPT login (an API key alone is not imported: export it as
/// `OPENAI_API_KEY` instead).
pub fn read_login(path: &Path) -> Result<CodexLogin, AuthError> {
    let malformed = |reason: &str| AuthError::Malformed {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    };
    let text = std::fs::read(path).map_err(|source| AuthError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file: File = serde_json::from_slice(&text)
        .map_err(|_| malformed("it is not Codex's auth.json format"))?;
    let tokens = file.tokens.ok_or_else(|| {
        malformed("it holds no ChatGPT login (run `codex login`, or use an API key through OPENAI_API_KEY)")
    })?;
    let present = |value: Option<String>| value.filter(|v| !v.is_empty());
    let access = present(tokens.access_token).ok_or_else(|| malformed("it has no access token"))?;
    let refresh =
        present(tokens.refresh_token).ok_or_else(|| malformed("it has no refresh token"))?;
    let id_token = present(tokens.id_token);
    let expires_at = jwt::expiry(&access)
        .ok_or_else(|| malformed("its access token is not a token etch can read"))?;
    let account_id =
        present(tokens.account_id).or_else(|| id_token.as_deref().and_then(jwt::account_id));
    let email = id_token
        .as_deref()
        .and_then(jwt::payload)
        .and_then(|claims| claims.get("email")?.as_str().map(str::to_owned));
    Ok(CodexLogin {
        credentials: OAuthCredentials {
            access_token: Secret::new(access),
            refresh_token: Secret::new(refresh),
            id_token: id_token.map(Secret::new),
            expires_at,
            account_id,
        },
        email,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::jwt::tests::make_jwt;

    /// A Codex file's tokens become etch's login: expiry from the access
    /// token, account and e-mail from the id token.
    #[test]
    fn a_codex_login_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let id = make_jwt(&json!({"email": "me@example.com",
            "https://api.openai.com/auth": {"chatgpt_account_id": "acct-1"}}));
        let access = make_jwt(&json!({"exp": 2_000_000_000}));
        std::fs::write(
            &path,
            json!({"OPENAI_API_KEY": null, "tokens": {"id_token": id, "access_token": access,
                "refresh_token": "rt-1"}, "last_refresh": "2026-01-01T00:00:00Z"})
            .to_string(),
        )
        .unwrap();
        let login = read_login(&path).unwrap();
        assert_eq!(login.email.as_deref(), Some("me@example.com"));
        assert_eq!(login.credentials.account_id.as_deref(), Some("acct-1"));
        assert_eq!(login.credentials.refresh_token.expose(), "rt-1");
        assert_eq!(login.credentials.expires_at.timestamp(), 2_000_000_000);
    }

    /// An API-key-only file, a file of another shape and a missing file
    /// are refused, saying why and never echoing the contents.
    #[test]
    fn other_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let key_only = dir.path().join("key.json");
        std::fs::write(&key_only, r#"{"OPENAI_API_KEY":"sk-secret"}"#).unwrap();
        let err = read_login(&key_only).unwrap_err().to_string();
        assert!(err.contains("holds no ChatGPT login"), "{err}");
        assert!(!err.contains("sk-secret"), "{err}");
        let junk = dir.path().join("junk.json");
        std::fs::write(&junk, "[1,2]").unwrap();
        assert!(
            read_login(&junk)
                .unwrap_err()
                .to_string()
                .contains("not Codex's auth.json format")
        );
        assert!(read_login(&dir.path().join("none.json")).is_err());
        assert_eq!(
            login_file(None, Path::new("/home/u")),
            Path::new("/home/u/.codex/auth.json")
        );
    }
}
