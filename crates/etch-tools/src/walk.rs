//! The walking rules `find` and `grep` share (E-TOOL-16/17): hidden files
//! included, `.gitignore` (even outside a git repository) and `.ignore`
//! respected, depth capped at [`MAX_DEPTH`], symlinks not followed, the
//! internal directories of `SKIPPED_DIRS` never entered (a root the caller
//! names explicitly is still searched), and etch's credential store never
//! entered, wherever the walk meets it (see [`crate::protect`]).
//!
//! It owns the walker construction, the skip list and how skipped names are
//! reported, the `glob` filter, the search-root checks and the argument
//! helpers both tools parse with (the default root and the count
//! deserializer). It must not know what `find` or `grep` do with the entries
//! they visit, how they format output, nor anything of the agent loop.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use etch_tool::ToolError;
use globset::{GlobBuilder, GlobMatcher};
use ignore::{DirEntry, WalkBuilder};
use serde::{Deserialize, Deserializer};

use crate::limits::MAX_DEPTH;
use crate::paths;
use crate::protect::StoreIds;

/// Directory names `find` and `grep` never descend into, at any depth: VCS
/// metadata, etch's own state and dependency or build trees, which would
/// drown real results (the etch skip list).
pub(crate) const SKIPPED_DIRS: [&str; 5] = [".git", ".etch", "node_modules", "vendor", "bin"];

/// How many visited entries a walker thread handles between two checks of
/// the cancellation token, whose check takes a lock.
pub(crate) const CANCEL_CHECK_EVERY: usize = 128;

/// Most walker threads; more brings nothing on a local disk (ripgrep's cap).
const MAX_THREADS: usize = 12;

/// Default search root: the working directory.
pub(crate) fn default_path() -> String {
    ".".to_string()
}

/// Reads a non-negative count that the schema already checked as an integer;
/// accepts `5.0` too, since JSON Schema counts it as an integer.
pub(crate) fn deserialize_count<'de, D: Deserializer<'de>>(de: D) -> Result<usize, D::Error> {
    let number = serde_json::Number::deserialize(de)?;
    if let Some(n) = number.as_u64() {
        return Ok(usize::try_from(n).unwrap_or(usize::MAX));
    }
    match number.as_f64() {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(f) if f >= 0.0 && f.fract() == 0.0 => Ok(f as usize),
        _ => Err(serde::de::Error::custom(format!(
            "expected a non-negative integer, got {number}"
        ))),
    }
}

/// An existing search root.
#[derive(Debug, Clone)]
pub(crate) struct Root {
    /// The path as the model gave it, used to print file roots.
    pub(crate) raw: String,
    /// The resolved path that is walked.
    pub(crate) path: PathBuf,
    /// Whether it is a directory (symlinks to directories count).
    pub(crate) is_dir: bool,
    /// What it is, symlinks followed: a file root must be a regular file
    /// to be searched.
    pub(crate) file_type: std::fs::FileType,
}

impl Root {
    /// What printed paths under this directory root start with: the root
    /// as given plus `/`, `/` for the filesystem root, nothing for the
    /// working directory, so that every printed path opens from the
    /// working directory as it is.
    pub(crate) fn print_prefix(&self) -> String {
        match self.raw.trim_end_matches('/') {
            "" if self.raw.starts_with('/') => "/".to_owned(),
            "" | "." => String::new(),
            other => format!("{other}/"),
        }
    }
}

/// Resolves `raw` against `cwd` and checks that it exists.
pub(crate) fn existing_root(cwd: &Path, raw: &str) -> Result<Root, ToolError> {
    let path = paths::resolve(cwd, raw);
    match std::fs::metadata(&path) {
        Ok(meta) => Ok(Root {
            raw: raw.to_string(),
            path,
            is_dir: meta.is_dir(),
            file_type: meta.file_type(),
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(ToolError::new(
            crate::nearby::missing(cwd, raw, "use ls or find to see what there is"),
        )),
        Err(err) => Err(ToolError::new(format!("cannot access {raw}: {err}"))),
    }
}

/// Walker threads to use: the available cores, capped.
fn walk_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, NonZeroUsize::get)
        .min(MAX_THREADS)
}

/// The internal directories a walk pruned, recorded from any walker
/// thread, so that a result can say where it did not look, and whether it
/// passed etch's credential store over (itself or the `~/.etch` holding
/// it).
#[derive(Debug, Default, Clone)]
pub(crate) struct Pruned(Arc<Mutex<Vec<PathBuf>>>, Arc<AtomicBool>);

impl Pruned {
    /// Takes the paths recorded so far.
    pub(crate) fn take(&self) -> Vec<PathBuf> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether the walk passed the credential store over.
    pub(crate) fn store_skipped(&self) -> bool {
        self.1.load(Ordering::Relaxed)
    }
}

/// Whether the directory `entry` is etch's credential store, which a walk
/// never enters, and whether it is the store or holds it (so the walk
/// says it passed the store over). Only directories named like them are
/// stat'ed.
fn meets_store(entry: &DirEntry, store: &StoreIds) -> (bool, bool) {
    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
    let name = entry.file_name();
    if !is_dir || (name != "auth" && name != ".etch") {
        return (false, false);
    }
    let Ok(meta) = entry.metadata() else {
        return (false, false);
    };
    let is_store = store.is_store_dir(&meta);
    (is_store, is_store || store.holds_store(&meta))
}

/// The walker shared by `find` and `grep`, configured with the shared rules
/// (see the module doc) and never entering the credential store `store`
/// names, and the record of the internal directories it prunes.
pub(crate) fn walker(root: &Path, store: &StoreIds) -> (WalkBuilder, Pruned) {
    let pruned = Pruned::default();
    let recorder = pruned.clone();
    let store = store.clone();
    let on_skip = move |path: &Path| {
        recorder
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(path.to_path_buf());
    };
    let store_flag = Arc::clone(&pruned.1);
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .ignore(true)
        .git_ignore(true)
        .parents(true)
        .follow_links(false)
        .max_depth(Some(MAX_DEPTH))
        .threads(walk_threads())
        .filter_entry(move |entry| {
            let internal = is_internal_dir(entry);
            if internal {
                on_skip(entry.path());
            }
            let (is_store, passes_store) = meets_store(entry, &store);
            if passes_store {
                store_flag.store(true, Ordering::Relaxed);
            }
            !internal && !is_store
        });
    (builder, pruned)
}

/// Whether `entry` is a directory on the skip list (the root never is: a
/// directory the caller names explicitly is searched).
fn is_internal_dir(entry: &DirEntry) -> bool {
    entry.depth() > 0
        && entry.file_type().is_some_and(|t| t.is_dir())
        && entry
            .file_name()
            .to_str()
            .is_some_and(|name| SKIPPED_DIRS.contains(&name))
}

/// Skipped directories the notices leave out: version-control and etch
/// state hold no project content, so not searching them never hides an
/// answer, and naming them after every search (they sit in nearly every
/// project root) would only be noise that small models stumble over.
const UNREPORTED_DIRS: [&str; 2] = [".git", ".etch"];

/// Turns recorded skipped-directory paths into their distinct names, in the
/// order a sorted walk meets them, leaving out [`UNREPORTED_DIRS`].
pub(crate) fn skipped_names(mut skipped: Vec<PathBuf>) -> Vec<String> {
    skipped.sort();
    let mut names: Vec<String> = Vec::new();
    for path in &skipped {
        if let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned())
            && !names.contains(&name)
            && !UNREPORTED_DIRS.contains(&name.as_str())
        {
            names.push(name);
        }
    }
    names
}

/// A compiled glob applied to the file name or to the root-relative path.
#[derive(Debug, Clone)]
pub(crate) struct GlobFilter {
    /// The compiled glob.
    matcher: GlobMatcher,
    /// Match the file name only (the glob has no `/`).
    basename: bool,
}

impl GlobFilter {
    /// Compiles `glob`; `*` never crosses `/`, `**` does.
    pub(crate) fn new(glob: &str, case_insensitive: bool) -> Result<Self, ToolError> {
        let trimmed = glob.strip_prefix("./").unwrap_or(glob);
        let compiled = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .case_insensitive(case_insensitive)
            .build()
            .map_err(|e| ToolError::new(format!("invalid glob {glob:?}: {e}")))?;
        Ok(Self {
            matcher: compiled.compile_matcher(),
            basename: !trimmed.contains('/'),
        })
    }

    /// Whether the entry at `rel` under the root the model wrote as
    /// `root_raw` passes: by its root-relative path, or by its path with the
    /// root in front. Models often repeat the search directory in the glob
    /// (`path: "src"`, `glob: "src/**/*.rs"`), and a demanding user would
    /// expect that to find the same files as `glob: "**/*.rs"`.
    pub(crate) fn is_match_under(&self, root_raw: &str, rel: &Path) -> bool {
        if self.is_match(rel) {
            return true;
        }
        let root = root_raw.strip_prefix("./").unwrap_or(root_raw);
        let root = root.trim_end_matches('/');
        !self.basename
            && !root.is_empty()
            && root != "."
            && self.matcher.is_match(Path::new(root).join(rel))
    }

    /// Whether the entry at root-relative `rel` passes.
    pub(crate) fn is_match(&self, rel: &Path) -> bool {
        if self.basename {
            rel.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(rel)
        }
    }
}
