//! etch's own state that the tools keep away from the model (E-TOOL-22,
//! E-AUTH-10): nothing under the credential store `~/.etch/auth/` (the
//! stored ChatGPT login) is read, listed or searched by a built-in tool, and
//! `write` and `edit` change nothing under `~/.etch/` (the store, the trust
//! decisions, the user's settings).
//!
//! A path is inside when it is lexically, or when it resolves there through
//! symlinks (a link in the project pointing at the store is refused too).
//! Walks (`grep`, `find`) prune the store wherever they meet it, recognized
//! by its device and inode, so no spelling of the path and no bind mount
//! gets them in; and `read` and `grep` compare every file they open with the
//! store's files the same way, which also catches a hard link to one.
//! Built-in tools are not the only way to a file (`bash` can `cat` it), so
//! the agent loop also redacts the stored tokens from every tool result.
//!
//! This module owns where the store is and the refusals' wording; it must
//! not know the store's format (that is `etch-auth`'s) nor what the tools
//! do with the paths they are allowed.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use etch_tool::ToolError;

use crate::paths;

/// Why the store is refused, closing every refusal and notice.
const WHY: &str = "etch's own credential store; credentials never reach the model";

/// A file's identity on this machine: device and inode.
type FileId = (u64, u64);

/// The identity of `meta`'s file.
fn id_of(meta: &Metadata) -> FileId {
    (meta.dev(), meta.ino())
}

/// The home directory whose `.etch` the tools protect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    /// `$HOME`; `None` protects nothing (there is no store to find).
    home: Option<PathBuf>,
}

impl Protected {
    /// Protects `home`'s `.etch` (the store is `home/.etch/auth`).
    pub fn new(home: Option<PathBuf>) -> Self {
        Self {
            home: home.filter(|h| !h.as_os_str().is_empty()),
        }
    }

    /// Protects the `.etch` of `$HOME`.
    pub fn from_env() -> Self {
        Self::new(std::env::var_os("HOME").map(PathBuf::from))
    }

    /// `~/.etch`, as written.
    fn state_dir(&self) -> Option<PathBuf> {
        self.home
            .as_ref()
            .map(|h| paths::normalize(&h.join(".etch")))
    }

    /// `~/.etch/auth`, as written.
    fn store_dir(&self) -> Option<PathBuf> {
        self.state_dir().map(|d| d.join("auth"))
    }

    /// Whether `path` (absolute, lexically folded) is `dir` or inside it,
    /// as written or once symlinks are followed.
    fn is_within(path: &Path, dir: &Path) -> bool {
        if path.starts_with(dir) {
            return true;
        }
        let Ok(real_dir) = paths::real_path(dir) else {
            return false;
        };
        paths::real_path(path).is_ok_and(|real| real.starts_with(&real_dir))
    }

    /// Refuses to `verb` (`read`, `list`, `search`) `path`, the resolved
    /// form of the model's `raw`, when it is in the credential store.
    pub fn check_read(&self, raw: &str, path: &Path, verb: &str) -> Result<(), ToolError> {
        match self.store_dir() {
            Some(store) if Self::is_within(path, &store) => Err(ToolError::new(format!(
                "refusing to {verb} {raw}: it is inside {}, {WHY}",
                store.display()
            ))),
            _ => Ok(()),
        }
    }

    /// Refuses a `write` or `edit` of `real` (the model's `raw`, symlinks
    /// resolved) anywhere under `~/.etch`.
    pub fn check_write(&self, raw: &str, real: &Path) -> Result<(), ToolError> {
        match self.state_dir() {
            Some(state) if Self::is_within(real, &state) => Err(ToolError::new(format!(
                "refusing to modify {raw}: it is inside {}, etch's own state (credentials, \
                 trust decisions, settings); write and edit never change it",
                state.display()
            ))),
            _ => Ok(()),
        }
    }

    /// The identities to recognize the store by during one call, read now
    /// (the store may appear or change between calls).
    pub fn store_ids(&self) -> StoreIds {
        let Some(store) = self.store_dir() else {
            return StoreIds::default();
        };
        let dir = std::fs::metadata(&store).ok().filter(Metadata::is_dir);
        let Some(dir) = dir else {
            return StoreIds {
                path: Some(store),
                ..StoreIds::default()
            };
        };
        let files = std::fs::read_dir(&store)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| std::fs::metadata(e.path()).ok())
                    .filter(Metadata::is_file)
                    .map(|m| id_of(&m))
                    .collect()
            })
            .unwrap_or_default();
        let parent = self
            .state_dir()
            .and_then(|d| std::fs::metadata(d).ok())
            .map(|m| id_of(&m));
        StoreIds {
            path: Some(store),
            dir: Some(id_of(&dir)),
            parent,
            files,
        }
    }
}

/// The credential store as one call recognizes it: the directory, the
/// directory holding it (`~/.etch`, which walks prune as internal) and its
/// files, by device and inode.
#[derive(Debug, Clone, Default)]
pub struct StoreIds {
    /// Where the store is, for notices.
    path: Option<PathBuf>,
    /// The store directory.
    dir: Option<FileId>,
    /// `~/.etch`.
    parent: Option<FileId>,
    /// The regular files in the store.
    files: Vec<FileId>,
}

impl StoreIds {
    /// Whether the opened file `meta` is one of the store's files (a hard
    /// link to one included).
    pub fn is_store_file(&self, meta: &Metadata) -> bool {
        !self.files.is_empty() && self.files.contains(&id_of(meta))
    }

    /// Whether the directory `meta` is the store.
    pub fn is_store_dir(&self, meta: &Metadata) -> bool {
        self.dir == Some(id_of(meta))
    }

    /// Whether the directory `meta` holds the store (`~/.etch`).
    pub fn holds_store(&self, meta: &Metadata) -> bool {
        self.dir.is_some() && self.parent == Some(id_of(meta))
    }

    /// The refusal of a file that turned out, once opened, to be one of the
    /// store's.
    pub fn refusal(&self, raw: &str, verb: &str) -> ToolError {
        let store = self
            .path
            .as_ref()
            .map_or_else(|| "~/.etch/auth".to_owned(), |p| p.display().to_string());
        ToolError::new(format!(
            "refusing to {verb} {raw}: it is a file of {store}, {WHY}"
        ))
    }

    /// The notice of a walk that passed the store over, in the style of the
    /// other "what was not searched" notices.
    pub fn notice(&self) -> String {
        let store = self
            .path
            .as_ref()
            .map_or_else(|| "~/.etch/auth".to_owned(), |p| p.display().to_string());
        format!("[Skipped {store}: {WHY}]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake home holding a store with one login file.
    fn home_with_store() -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".etch/auth")).unwrap();
        std::fs::write(home.path().join(".etch/auth/openai.json"), "{}").unwrap();
        home
    }

    /// Reads of the store are refused as written, through `..` and through
    /// a symlink; the rest of `~/.etch` may be read; nothing is refused
    /// without a home.
    #[test]
    fn reads_of_the_store_are_refused() {
        let home = home_with_store();
        let p = Protected::new(Some(home.path().to_path_buf()));
        let store = home.path().join(".etch/auth");
        let err = p
            .check_read("x", &store.join("openai.json"), "read")
            .unwrap_err()
            .0;
        assert_eq!(
            err,
            format!(
                "refusing to read x: it is inside {}, etch's own credential store; \
                 credentials never reach the model",
                store.display()
            )
        );
        assert!(p.check_read("x", &store, "list").is_err());
        let project = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&store, project.path().join("link")).unwrap();
        assert!(
            p.check_read("x", &project.path().join("link/openai.json"), "read")
                .is_err()
        );
        assert!(
            p.check_read("x", &home.path().join(".etch/config.toml"), "read")
                .is_ok()
        );
        assert!(p.check_read("x", home.path(), "search").is_ok());
        assert!(
            Protected::new(None)
                .check_read("x", &store.join("openai.json"), "read")
                .is_ok()
        );
    }

    /// Writes anywhere under `~/.etch` are refused, through symlinks too.
    #[test]
    fn writes_under_the_state_dir_are_refused() {
        let home = home_with_store();
        let p = Protected::new(Some(home.path().to_path_buf()));
        let err = p
            .check_write("trust.json", &home.path().join(".etch/trust.json"))
            .unwrap_err()
            .0;
        assert!(
            err.starts_with("refusing to modify trust.json: it is inside "),
            "{err}"
        );
        assert!(err.ends_with("write and edit never change it"), "{err}");
        assert!(p.check_write("x", &home.path().join("notes.txt")).is_ok());
    }

    /// A token stored in the fake home's login file.
    const TOKEN: &str = "tok-stored-secret-0123456789";

    /// Runs built-in `tool` with `args` in `cwd`, protecting `home`.
    fn call(
        home: &Path,
        cwd: &Path,
        tool: &str,
        args: serde_json::Value,
    ) -> Result<String, String> {
        let options = crate::builtin::BuiltinOptions {
            home: Some(home.to_path_buf()),
            ..crate::builtin::BuiltinOptions::default()
        };
        let registry = crate::builtin::registry(&crate::builtin::ALL, &options).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(
            registry
                .get(tool)
                .unwrap()
                .execute(args, crate::testutil::ctx(cwd)),
        )
        .map(|o| o.text)
        .map_err(|e| e.0)
    }

    /// E-TOOL-22: every built-in that reads, lists or searches refuses the
    /// credential store, by path, through a symlink and through a hard
    /// link; walks from above it pass it over and say so; write and edit
    /// refuse `~/.etch`. No answer holds the stored token.
    #[test]
    fn tools_refuse_the_store() {
        use serde_json::json;
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let store = h.join(".etch/auth");
        std::fs::create_dir_all(&store).unwrap();
        let login = store.join("openai.json");
        std::fs::write(&login, format!("{{\"access_token\": \"{TOKEN}\"}}\n")).unwrap();
        std::fs::write(h.join(".etch/trust.json"), "{}").unwrap();
        let project = tempfile::tempdir().unwrap();
        let p = project.path();
        std::os::unix::fs::symlink(&store, p.join("link")).unwrap();
        std::os::unix::fs::symlink(&login, p.join("key.json")).unwrap();
        std::fs::hard_link(&login, p.join("copy.json")).unwrap();
        std::fs::write(p.join("notes.txt"), "nothing here\n").unwrap();
        let (home_s, store_s, login_s) = (
            h.to_str().unwrap(),
            store.to_str().unwrap(),
            login.to_str().unwrap(),
        );
        let why = "etch's own credential store; credentials never reach the model";
        let refused = |tool: &str, args: serde_json::Value, verb: &str| {
            let err = call(h, p, tool, args.clone()).unwrap_err();
            assert!(
                err.starts_with(&format!("refusing to {verb} ")),
                "{tool} {args}: {err}"
            );
            assert!(err.ends_with(why), "{tool} {args}: {err}");
            assert!(!err.contains(TOKEN), "{err}");
        };
        refused("read", json!({"path": login_s}), "read");
        refused("read", json!({"path": "link/openai.json"}), "read");
        refused("read", json!({"path": "key.json"}), "read");
        refused("read", json!({"path": "copy.json"}), "read");
        refused("ls", json!({"path": store_s}), "list");
        refused("ls", json!({"path": "link"}), "list");
        refused("grep", json!({"pattern": TOKEN, "path": store_s}), "search");
        refused(
            "grep",
            json!({"pattern": TOKEN, "paths": ["notes.txt", "key.json"]}),
            "search",
        );
        refused(
            "grep",
            json!({"pattern": TOKEN, "path": "copy.json"}),
            "search",
        );
        refused(
            "find",
            json!({"pattern": "openai", "path": store_s}),
            "search",
        );
        refused(
            "find",
            json!({"pattern": "openai", "path": "link"}),
            "search",
        );
        let notice = format!("[Skipped {store_s}: {why}]");
        for root in [home_s, &format!("{home_s}/.etch"), "."] {
            let out = call(h, p, "grep", json!({"pattern": TOKEN, "path": root})).unwrap();
            assert!(out.starts_with("No matches found\n\n"), "{root}: {out}");
            assert!(out.contains(&notice), "{root}: {out}");
            let out = call(h, p, "find", json!({"pattern": "openai", "path": root})).unwrap();
            assert!(!out.contains("openai.json"), "{root}: {out}");
        }
        let out = call(h, p, "find", json!({"pattern": "openai", "path": home_s})).unwrap();
        assert!(out.contains(&notice), "{out}");
        assert!(call(h, p, "ls", json!({"path": format!("{home_s}/.etch")})).is_ok());
        let trust = format!("{home_s}/.etch/trust.json");
        for (cwd, tool, args) in [
            (h, "write", json!({"path": trust, "content": "x"})),
            (
                h,
                "edit",
                json!({"path": trust, "oldText": "{}", "newText": "[]"}),
            ),
            (
                &h.join(".etch"),
                "write",
                json!({"path": "trust.json", "content": "x"}),
            ),
            (
                p,
                "write",
                json!({"path": "link/openai.json", "content": "x"}),
            ),
        ] {
            let err = call(h, cwd, tool, args.clone()).unwrap_err();
            assert!(err.contains("etch's own state"), "{tool} {args}: {err}");
        }
        assert_eq!(
            std::fs::read_to_string(h.join(".etch/trust.json")).unwrap(),
            "{}"
        );
    }

    /// The store, its holder and its files (a hard link to one included)
    /// are recognized by identity.
    #[test]
    fn store_identities() {
        let home = home_with_store();
        let p = Protected::new(Some(home.path().to_path_buf()));
        let ids = p.store_ids();
        let meta = |rel: &str| std::fs::metadata(home.path().join(rel)).unwrap();
        assert!(ids.is_store_dir(&meta(".etch/auth")));
        assert!(ids.holds_store(&meta(".etch")));
        assert!(ids.is_store_file(&meta(".etch/auth/openai.json")));
        std::fs::hard_link(
            home.path().join(".etch/auth/openai.json"),
            home.path().join("copy.json"),
        )
        .unwrap();
        assert!(ids.is_store_file(&meta("copy.json")));
        std::fs::write(home.path().join("other.json"), "{}").unwrap();
        assert!(!ids.is_store_file(&meta("other.json")));
        assert!(!ids.is_store_dir(&meta(".etch")));
        let none = Protected::new(None).store_ids();
        assert!(!none.is_store_dir(&meta(".etch/auth")));
        assert!(!none.holds_store(&meta(".etch")));
    }
}
