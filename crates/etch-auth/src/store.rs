//! The credential file `~/.etch/auth/openai.json` (G17, E-AUTH-08).
//!
//! This module owns the file format, its location under a given home directory,
//! atomic writes with `0600`/`0700` permissions, and deletion on logout. It must
//! not know HTTP, the OAuth flow or how credentials are chosen; callers pass the
//! home directory so that tests can use temporary directories.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use crate::{AuthError, Secret};

/// The value of the `type` field that marks a Codex OAuth login (G17).
pub const CREDENTIAL_TYPE: &str = "openai-codex-oauth";

/// A stored ChatGPT/Codex OAuth login. `Debug` redacts every token (via
/// [`Secret`]), so the struct may be logged safely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthCredentials {
    /// The bearer token sent to the Codex backend.
    pub access_token: Secret,
    /// The token used to obtain a new access token.
    pub refresh_token: Secret,
    /// The OpenID token the account id is read from, if the server sent one.
    pub id_token: Option<Secret>,
    /// When the access token expires.
    pub expires_at: DateTime<Utc>,
    /// The ChatGPT account id (the `chatgpt-account-id` header), if known.
    pub account_id: Option<String>,
}

impl OAuthCredentials {
    /// Whether the access token is expired or expires within `margin` of `now`,
    /// i.e. whether it should be refreshed before use.
    pub fn needs_refresh(&self, now: DateTime<Utc>, margin: chrono::Duration) -> bool {
        self.expires_at <= now + margin
    }
}

/// The on-disk JSON shape of G17, kept separate from [`OAuthCredentials`] so the
/// public type can hold [`Secret`]s and a parsed timestamp.
#[derive(Serialize, Deserialize)]
struct FileFormat {
    /// Always [`CREDENTIAL_TYPE`].
    #[serde(rename = "type")]
    kind: String,
    /// See [`OAuthCredentials::access_token`].
    access_token: String,
    /// See [`OAuthCredentials::refresh_token`].
    refresh_token: String,
    /// See [`OAuthCredentials::id_token`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id_token: Option<String>,
    /// RFC 3339 timestamp; see [`OAuthCredentials::expires_at`].
    expires_at: String,
    /// See [`OAuthCredentials::account_id`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account_id: Option<String>,
}

/// The location of the OpenAI credential file and the operations on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialStore {
    /// The full path of `openai.json`.
    path: PathBuf,
}

impl CredentialStore {
    /// The store at `{home}/.etch/auth/openai.json`.
    pub fn in_home(home: &Path) -> Self {
        Self {
            path: home.join(".etch").join("auth").join("openai.json"),
        }
    }

    /// A store at an explicit file path (for tests and future overrides).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The credential file path, for messages such as `etch auth status`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a credential file exists (without validating it).
    pub fn exists(&self) -> bool {
        self.path.is_file()
    }

    /// Loads the stored login: `Ok(None)` when there is no file, an error naming
    /// the file when it cannot be read or is malformed.
    pub fn load(&self) -> Result<Option<OAuthCredentials>, AuthError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(AuthError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let malformed = |reason: String| AuthError::Malformed {
            path: self.path.clone(),
            reason,
        };
        // serde_json's error names only the position and expected shape, never the
        // offending token text, so it is safe to include.
        let file: FileFormat =
            serde_json::from_str(&text).map_err(|e| malformed(format!("invalid JSON: {e}")))?;
        if file.kind != CREDENTIAL_TYPE {
            return Err(malformed(format!(
                "`type` is {:?}, expected {CREDENTIAL_TYPE:?}",
                file.kind
            )));
        }
        if file.access_token.is_empty() || file.refresh_token.is_empty() {
            return Err(malformed("a token is empty".to_owned()));
        }
        let expires_at = DateTime::parse_from_rfc3339(&file.expires_at)
            .map_err(|e| malformed(format!("`expires_at` is not an RFC 3339 time: {e}")))?
            .with_timezone(&Utc);
        Ok(Some(OAuthCredentials {
            access_token: Secret::from(file.access_token),
            refresh_token: Secret::from(file.refresh_token),
            id_token: file.id_token.map(Secret::from),
            expires_at,
            account_id: file.account_id,
        }))
    }

    /// Writes `credentials` atomically: a `0600` temporary file in the same
    /// directory is written, synced and renamed over `openai.json`, so a crash or
    /// a concurrent reader never sees a half-written file. The directory is
    /// created `0700` (E-AUTH-08).
    pub fn save(&self, credentials: &OAuthCredentials) -> Result<(), AuthError> {
        let file = FileFormat {
            kind: CREDENTIAL_TYPE.to_owned(),
            access_token: credentials.access_token.expose().to_owned(),
            refresh_token: credentials.refresh_token.expose().to_owned(),
            id_token: credentials.id_token.as_ref().map(|t| t.expose().to_owned()),
            expires_at: credentials
                .expires_at
                .to_rfc3339_opts(SecondsFormat::Secs, true),
            account_id: credentials.account_id.clone(),
        };
        let mut json = serde_json::to_vec_pretty(&file).map_err(|e| AuthError::Write {
            path: self.path.clone(),
            source: io::Error::other(e.to_string()),
        })?;
        json.push(b'\n');
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        create_private_dir(dir).map_err(|source| AuthError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
        // Owner-only from the start, so the tokens are never briefly
        // world-readable; flushed before the rename, as a lost login is
        // worse than a slow one; and no temporary file (which would hold
        // tokens) left by a kill.
        etch_fs::replace(&self.path, &json, etch_fs::Options::mode(0o600).synced()).map_err(|e| {
            AuthError::Write {
                path: self.path.clone(),
                source: e.into(),
            }
        })
    }

    /// Deletes the stored login (logout). Returns whether a file was removed;
    /// a missing file is not an error.
    pub fn delete(&self) -> Result<bool, AuthError> {
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(AuthError::Delete {
                path: self.path.clone(),
                source,
            }),
        }
    }
}

/// Creates `dir` (and parents) and makes `dir` itself `0700`, even if it
/// already existed with looser permissions.
#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
}

/// Creates `dir` and its parents; non-Unix systems have no mode bits to set.
#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// A complete set of credentials for round trips.
    fn sample() -> OAuthCredentials {
        OAuthCredentials {
            access_token: Secret::new("access-abc"),
            refresh_token: Secret::new("refresh-def"),
            id_token: Some(Secret::new("id-ghi")),
            expires_at: Utc.with_ymd_and_hms(2030, 1, 2, 3, 4, 5).unwrap(),
            account_id: Some("acct-1".to_owned()),
        }
    }

    /// The store lives at `~/.etch/auth/openai.json` under the given home.
    #[test]
    fn path_is_under_home() {
        let store = CredentialStore::in_home(Path::new("/home/u"));
        assert_eq!(store.path(), Path::new("/home/u/.etch/auth/openai.json"));
    }

    /// A missing file means "not logged in", not an error.
    #[test]
    fn missing_file_loads_as_none() {
        let home = tempfile::tempdir().unwrap();
        let store = CredentialStore::in_home(home.path());
        assert!(store.load().unwrap().is_none());
        assert!(!store.exists());
    }

    /// What is saved loads back identically, in G17's format.
    #[test]
    fn round_trip_in_g17_format() {
        let home = tempfile::tempdir().unwrap();
        let store = CredentialStore::in_home(home.path());
        store.save(&sample()).unwrap();
        assert_eq!(store.load().unwrap(), Some(sample()));
        let raw: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(store.path()).unwrap()).unwrap();
        assert_eq!(
            raw,
            serde_json::json!({
                "type": "openai-codex-oauth",
                "access_token": "access-abc",
                "refresh_token": "refresh-def",
                "id_token": "id-ghi",
                "expires_at": "2030-01-02T03:04:05Z",
                "account_id": "acct-1",
            })
        );
    }

    /// Optional fields may be absent and other RFC 3339 offsets are accepted.
    #[test]
    fn optional_fields_and_offsets() {
        let home = tempfile::tempdir().unwrap();
        let store = CredentialStore::in_home(home.path());
        fs::create_dir_all(store.path().parent().unwrap()).unwrap();
        fs::write(
            store.path(),
            r#"{"type":"openai-codex-oauth","access_token":"a","refresh_token":"r","expires_at":"2030-01-02T05:04:05+02:00"}"#,
        )
        .unwrap();
        let creds = store.load().unwrap().unwrap();
        assert_eq!(creds.id_token, None);
        assert_eq!(creds.account_id, None);
        assert_eq!(
            creds.expires_at,
            Utc.with_ymd_and_hms(2030, 1, 2, 3, 4, 5).unwrap()
        );
    }

    /// Saving replaces an existing file and leaves no temp files behind.
    #[test]
    fn save_overwrites_atomically() {
        let home = tempfile::tempdir().unwrap();
        let store = CredentialStore::in_home(home.path());
        store.save(&sample()).unwrap();
        let mut next = sample();
        next.access_token = Secret::new("access-2");
        store.save(&next).unwrap();
        assert_eq!(store.load().unwrap(), Some(next));
        let entries: Vec<_> = fs::read_dir(store.path().parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(entries, vec![std::ffi::OsString::from("openai.json")]);
    }

    /// The file is 0600 and its directory 0700 (E-AUTH-08), even if the
    /// directory existed with looser permissions.
    #[cfg(unix)]
    #[test]
    fn permissions_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let store = CredentialStore::in_home(home.path());
        let dir = store.path().parent().unwrap().to_path_buf();
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        store.save(&sample()).unwrap();
        let file_mode = fs::metadata(store.path()).unwrap().permissions().mode() & 0o777;
        let dir_mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(file_mode, 0o600);
        assert_eq!(dir_mode, 0o700);
    }

    /// Broken JSON is an error naming the file and telling the user to log in
    /// again, without echoing the file's contents.
    #[test]
    fn malformed_file_names_path_and_fix() {
        let home = tempfile::tempdir().unwrap();
        let store = CredentialStore::in_home(home.path());
        fs::create_dir_all(store.path().parent().unwrap()).unwrap();
        fs::write(store.path(), "{\"access_token\": \"leaky-token\"").unwrap();
        let err = store.load().unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, AuthError::Malformed { .. }), "{err:?}");
        assert!(msg.contains(&store.path().display().to_string()), "{msg}");
        assert!(msg.contains("etch auth login"), "{msg}");
        assert!(!msg.contains("leaky-token"), "{msg}");
    }

    /// A file of another type or with a bad timestamp is malformed too.
    #[test]
    fn wrong_type_or_timestamp_is_malformed() {
        let home = tempfile::tempdir().unwrap();
        let store = CredentialStore::in_home(home.path());
        fs::create_dir_all(store.path().parent().unwrap()).unwrap();
        for body in [
            r#"{"type":"api-key","access_token":"a","refresh_token":"r","expires_at":"2030-01-02T03:04:05Z"}"#,
            r#"{"type":"openai-codex-oauth","access_token":"a","refresh_token":"r","expires_at":"tomorrow"}"#,
        ] {
            fs::write(store.path(), body).unwrap();
            assert!(matches!(store.load(), Err(AuthError::Malformed { .. })));
        }
    }

    /// Logout removes the file; a second logout reports nothing to remove.
    #[test]
    fn delete_removes_file() {
        let home = tempfile::tempdir().unwrap();
        let store = CredentialStore::in_home(home.path());
        store.save(&sample()).unwrap();
        assert!(store.delete().unwrap());
        assert!(!store.delete().unwrap());
        assert!(store.load().unwrap().is_none());
    }

    /// Debug output of credentials never contains a token.
    #[test]
    fn debug_redacts_tokens() {
        let dbg = format!("{:?}", sample());
        for token in ["access-abc", "refresh-def", "id-ghi"] {
            assert!(!dbg.contains(token), "{dbg}");
        }
        assert!(dbg.contains("acct-1"));
    }

    /// Tokens expiring within the margin need a refresh.
    #[test]
    fn needs_refresh_honours_margin() {
        let creds = sample();
        let margin = chrono::Duration::minutes(5);
        assert!(!creds.needs_refresh(creds.expires_at - chrono::Duration::minutes(6), margin));
        assert!(creds.needs_refresh(creds.expires_at - chrono::Duration::minutes(4), margin));
        assert!(creds.needs_refresh(creds.expires_at + chrono::Duration::minutes(1), margin));
    }
}
