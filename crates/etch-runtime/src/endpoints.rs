//! The model endpoints this user has chosen, so a session file that came
//! from somewhere else cannot pick one.
//!
//! A session records its endpoint (`baseUrl`) and `etch resume` goes back
//! to it. A session file can come with a cloned repository, though, and
//! whatever answers at its endpoint acts as the model: it runs tools with
//! the user's files. So a recorded endpoint is reused without asking only
//! when the user chose it: a provider's own service, the configured
//! `[openai] base_url` (a project's only once trusted), or one kept in
//! `~/.etch/endpoints.json`, which remembers every endpoint a session of
//! this user ran against after a flag, the configuration or the user's
//! confirmation chose it. Any other is refused until the user names it
//! with `--base-url` (or confirms it in the chat).
//!
//! This module owns the file and the rule; it must not know how the user
//! is asked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The file under the home directory.
pub const ENDPOINTS_FILE: &str = ".etch/endpoints.json";

/// Hosts of the providers' own services: a session recorded against them
/// sends requests where the user's keys belong anyway.
const OWN_SERVICES: &[&str] = &["api.openai.com", "chatgpt.com", "api.anthropic.com"];

/// The endpoints the user chose, as kept in [`ENDPOINTS_FILE`].
#[derive(Debug, Clone, Default)]
pub struct KnownEndpoints {
    /// The file, when HOME is set.
    path: Option<PathBuf>,
    /// Base URLs, normalized by [`normalize`].
    urls: BTreeSet<String>,
}

/// `url` without a trailing slash and with a lowercase scheme and host,
/// so the same endpoint written two ways is one.
fn normalize(url: &str) -> String {
    let trimmed = url.trim().trim_end_matches('/');
    match trimmed.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
            let path = if path.is_empty() {
                String::new()
            } else {
                format!("/{path}")
            };
            format!(
                "{}://{}{path}",
                scheme.to_ascii_lowercase(),
                host.to_ascii_lowercase()
            )
        }
        None => trimmed.to_owned(),
    }
}

/// Whether `a` and `b` name the same endpoint.
pub fn same(a: &str, b: &str) -> bool {
    normalize(a) == normalize(b)
}

/// Whether `url` is one of the providers' own services over https.
pub fn is_own_service(url: &str) -> bool {
    let url = normalize(url);
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let host = rest.split(['/', ':']).next().unwrap_or("");
    OWN_SERVICES.contains(&host)
}

impl KnownEndpoints {
    /// The endpoints kept under `home`; empty without HOME or file. A
    /// file etch cannot read counts as empty: the worst that does is ask
    /// again.
    pub fn load(home: Option<&Path>) -> Self {
        let path = home.map(|h| h.join(ENDPOINTS_FILE));
        let urls = path
            .as_deref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|v| {
                v.get("endpoints")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(normalize).collect())
            })
            .unwrap_or_default();
        Self { path, urls }
    }

    /// Whether the user chose `url` before, or it is a provider's own
    /// service.
    pub fn knows(&self, url: &str) -> bool {
        is_own_service(url) || self.urls.contains(&normalize(url))
    }

    /// Keeps `url` as chosen by the user (a no-op for a provider's own
    /// service or one already kept). Written atomically, mode 0600.
    pub fn remember(&mut self, url: &str) -> std::io::Result<()> {
        if self.knows(url) {
            return Ok(());
        }
        self.urls.insert(normalize(url));
        let Some(path) = &self.path else {
            return Ok(());
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(&json!({
            "version": 1,
            "endpoints": self.urls.iter().collect::<Vec<_>>(),
        }))
        .unwrap_or_default();
        etch_fs::replace(path, text.as_bytes(), etch_fs::Options::mode(0o600))
            .map_err(std::io::Error::from)
    }
}

/// Why a recorded endpoint is not used, for the message of the error
/// that refuses it.
pub fn unfamiliar(url: &str) -> String {
    format!(
        "this session was recorded against {url}, an endpoint you have not used with etch here \
         (a session file can come with a cloned repository, and whatever answers there acts as \
         the model and runs tools); to continue against it, pass --base-url {url}; \
         to continue elsewhere, pass --base-url or --provider"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Own services are known by host and scheme; others only once
    /// remembered, across loads, whatever the trailing slash or case.
    #[test]
    fn endpoints_are_known_once_chosen() {
        let home = tempfile::tempdir().unwrap();
        let mut known = KnownEndpoints::load(Some(home.path()));
        assert!(known.knows("https://api.openai.com/v1"));
        assert!(known.knows("https://api.anthropic.com"));
        assert!(!known.knows("http://api.openai.com/v1"));
        assert!(!known.knows("https://api.openai.com.evil.example/v1"));
        assert!(!known.knows("http://127.0.0.1:8080/v1"));
        known.remember("http://LOCALHOST:8080/v1/").unwrap();
        let again = KnownEndpoints::load(Some(home.path()));
        assert!(again.knows("http://localhost:8080/v1"));
        assert!(!again.knows("http://localhost:8081/v1"));
        let mode = std::fs::metadata(home.path().join(ENDPOINTS_FILE))
            .unwrap()
            .permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
    }

    /// Without HOME nothing is kept, and nothing fails.
    #[test]
    fn without_home_nothing_is_kept() {
        let mut known = KnownEndpoints::load(None);
        known.remember("http://x/v1").unwrap();
        assert!(known.knows("http://x/v1"));
    }
}
