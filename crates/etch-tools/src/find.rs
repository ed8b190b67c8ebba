//! The `find` tool (C14, G10, E-TOOL-16, P-TOOL-35..37): lists files and
//! directories whose path relative to the search root contains a pattern,
//! case-insensitively, or matches it as a glob.
//!
//! It owns the name matching, the per-thread compaction of results and the
//! output format. The walking rules it shares with `grep` (ignore files,
//! hidden files, skipped internal directories, depth) live in
//! [`crate::walk`]. It must not know how `grep` searches file contents, nor
//! anything of the agent loop.
//!
//! The substring is matched against each entry's path relative to the search
//! root (`/` separators, a trailing `/` for directories); the printed path is
//! that relative path joined to the root as the model gave it (as `grep`
//! prints), so every line opens with `read` from the working directory:
//! `find jwt src` prints `src/auth/jwt.rs`, not `auth/jwt.rs`. Output is
//! deterministic: the tree is walked in parallel, then the results are sorted
//! case-insensitively (bytewise as a tie-break) and cut at the limit. Only
//! results that can still be printed (within the limit and the listing cap,
//! in that order) are kept while walking, so memory stays bounded whatever
//! the tree; the count behind the limit notice stays exact, and the notice
//! appears only when more results exist than were listed.
//!
//! Notices follow the listing after one blank line, one per line: first the
//! limit notice, then `[Skipped internal directories: ...]` (names in the
//! order a sorted walk meets them, deduplicated; `.git` and `.etch` are not
//! named, see [`crate::walk`]). The listing itself is
//! capped with [`cap_listing`]; the notices come after the cap so they
//! survive it. With no results the output starts with exactly "No files
//! found matching pattern", and the skipped-directories notice still
//! follows, so that an empty answer never hides where etch did not look.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use etch_model::ToolSpec;
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use memchr::memmem;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::limits::{FIND_DEFAULT_LIMIT, LISTING_MAX_BYTES, cap_listing};
use crate::paths;
use crate::protect::Protected;
use crate::walk::{
    CANCEL_CHECK_EVERY, GlobFilter, Root, default_path, deserialize_count, existing_root,
    skipped_names, walker,
};
use crate::{args, cancel};

/// Text returned when nothing matched (P-TOOL-36).
const NO_RESULTS: &str = "No files found matching pattern";

/// Results a walker thread gathers before it first compacts them.
#[cfg(not(test))]
const COMPACT_MIN: usize = 4096;
/// Small in tests, so that per-thread compaction runs on small trees.
#[cfg(test)]
const COMPACT_MIN: usize = 64;

/// The `find` tool.
pub struct FindTool {
    /// Name, description and schema shown to the model.
    spec: ToolSpec,
    /// etch's credential store, never searched.
    protected: Protected,
}

impl FindTool {
    /// Builds the tool with its model-facing spec.
    pub fn new() -> Self {
        Self {
            spec: args::spec(
                "find",
                "Find files and directories by name. `pattern` is a case-insensitive substring \
                 of the path, or a glob when it contains *, ? or [ (with ** support). \
                 Directories end with /. .gitignore is respected; .git, node_modules, vendor and \
                 bin are skipped. To search inside files use grep.",
                json!({
                    "type": "object",
                    "properties": {
                        "pattern": {
                            "type": "string",
                            "minLength": 1,
                            "description": "Substring of the path, or a glob (e.g. 'config', '*.rs', 'src/**/*.ts')"
                        },
                        "path": {
                            "type": "string",
                            "description": "Directory to search (default: the working directory)"
                        },
                        "glob": {
                            "type": "string",
                            "description": "Only list entries matching this glob (the file name, or the path when it has /)"
                        },
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "Most results (default: 1000)"
                        }
                    },
                    "required": ["pattern"],
                    "additionalProperties": false
                }),
            ),
            protected: Protected::from_env(),
        }
    }

    /// Protects `protected`'s credential store instead of `$HOME`'s.
    #[must_use]
    pub fn with_protected(mut self, protected: Protected) -> Self {
        self.protected = protected;
        self
    }
}

impl Default for FindTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for FindTool {
    fn read_only(&self) -> bool {
        true
    }

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self, args: &Value, cwd: &Path) -> Access {
        let raw = args.get("path").and_then(Value::as_str).unwrap_or(".");
        Access::Read(vec![paths::resolve(cwd, raw)])
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let args: FindArgs = args::parse(&self.spec, args)?;
            let cancel = ctx.cancel.clone();
            let cwd = ctx.cwd.clone();
            let protected = self.protected.clone();
            let text = cancel::blocking(&ctx.cancel, "find", move || {
                run(&args, &cwd, &cancel, &protected)
            })
            .await?;
            Ok(ToolOutput::text(text))
        })
    }
}

/// Arguments of one `find` call, after schema validation.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FindArgs {
    /// Substring (or glob) to look for.
    pattern: String,
    /// Search root as the model gave it.
    #[serde(default = "default_path")]
    path: String,
    /// Optional extra glob filter.
    glob: Option<String>,
    /// Most results listed.
    #[serde(default = "default_limit", deserialize_with = "deserialize_count")]
    limit: usize,
}

/// Default `find` limit, for serde.
fn default_limit() -> usize {
    FIND_DEFAULT_LIMIT
}

/// How `pattern` selects entries.
#[derive(Debug)]
enum NameMatcher {
    /// Case-insensitive substring of the displayed relative path (ASCII
    /// pattern: compared against the ASCII-lowercased path).
    Ascii(memmem::Finder<'static>),
    /// Case-insensitive substring for a non-ASCII pattern (full Unicode
    /// lowercasing), already lowercased.
    Unicode(String),
    /// Pi compatibility: a pattern with glob metacharacters is a glob.
    Glob(GlobFilter),
}

impl NameMatcher {
    /// Picks the matching mode: a glob when the pattern has `*`, `?` or `[`
    /// and no separate `glob` was given, else a substring.
    fn new(pattern: &str, glob_given: bool) -> Result<Self, ToolError> {
        if !glob_given && pattern.contains(['*', '?', '[']) {
            return GlobFilter::new(pattern, true).map(Self::Glob);
        }
        if pattern.is_ascii() {
            let lower = pattern.to_ascii_lowercase().into_bytes();
            Ok(Self::Ascii(memmem::Finder::new(&lower).into_owned()))
        } else {
            Ok(Self::Unicode(pattern.to_lowercase()))
        }
    }

    /// Whether the entry matches; `display` is its relative path with a
    /// trailing `/` for directories, `rel` the plain relative path, `buf` a
    /// scratch buffer.
    fn is_match(&self, display: &str, rel: &Path, buf: &mut Vec<u8>) -> bool {
        match self {
            Self::Ascii(finder) => {
                buf.clear();
                buf.extend(display.bytes().map(|b| b.to_ascii_lowercase()));
                finder.find(buf).is_some()
            }
            Self::Unicode(lower) => display.to_lowercase().contains(lower.as_str()),
            Self::Glob(glob) => glob.is_match(rel),
        }
    }
}

/// One listed entry: its sort key and its printed form.
type Found = (String, String);

/// State shared by the walker threads of one call.
struct Shared {
    /// The directory being walked.
    root: PathBuf,
    /// What printed paths start with: the root as given plus `/`, or
    /// nothing for the working directory.
    prefix: String,
    /// How `pattern` selects entries.
    matcher: NameMatcher,
    /// Optional `glob` filter.
    filter: Option<GlobFilter>,
    /// Most results listed.
    limit: usize,
    /// Fires when the call is cancelled.
    cancel: CancellationToken,
    /// Results handed over by finished threads.
    results: Mutex<Vec<Found>>,
    /// All matches seen, kept or not.
    total: AtomicUsize,
}

/// The per-thread visitor; hands its results over when dropped.
struct Visitor<'s> {
    /// Call-wide state.
    shared: &'s Shared,
    /// This thread's best results so far.
    found: Vec<Found>,
    /// Entries visited, to space out cancellation checks.
    visited: usize,
    /// Length of `found` at which it is compacted next.
    compact_at: usize,
    /// Scratch buffer for lowercasing.
    buf: Vec<u8>,
}

/// Sorts `found` and drops what can never be printed: entries past the
/// limit, and entries past the one that crosses the listing cap (the cap cuts
/// on a line boundary before it). Whatever a thread drops this way would be
/// dropped from the merged results too, so per-thread compaction is exact.
fn compact(found: &mut Vec<Found>, limit: usize) {
    found.sort_unstable();
    let mut keep = found.len().min(limit);
    let mut bytes = 0usize;
    for (i, (_, display)) in found.iter().enumerate().take(keep) {
        bytes += display.len() + 1;
        if bytes > LISTING_MAX_BYTES {
            keep = i + 1;
            break;
        }
    }
    found.truncate(keep);
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        self.visited += 1;
        if self.visited.is_multiple_of(CANCEL_CHECK_EVERY) && self.shared.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        // Unreadable entries and loops are left out, as `fd` does.
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        if entry.depth() == 0 {
            return WalkState::Continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&self.shared.root) else {
            return WalkState::Continue;
        };
        if let Some(filter) = &self.shared.filter
            && !filter.is_match(rel)
        {
            return WalkState::Continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let mut display = rel.to_string_lossy().into_owned();
        if is_dir {
            display.push('/');
        }
        if self.shared.matcher.is_match(&display, rel, &mut self.buf) {
            self.shared.total.fetch_add(1, Ordering::Relaxed);
            let printed = format!("{}{display}", self.shared.prefix);
            self.found.push((display.to_lowercase(), printed));
            if self.found.len() >= self.compact_at {
                compact(&mut self.found, self.shared.limit);
                self.compact_at = self.found.len().saturating_mul(2).max(COMPACT_MIN);
            }
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let mut results = self
            .shared
            .results
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        results.append(&mut self.found);
    }
}

/// Builds one visitor per walker thread.
struct Builder<'s> {
    /// Call-wide state the visitors share.
    shared: &'s Shared,
}

impl<'s> ParallelVisitorBuilder<'s> for Builder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.shared,
            found: Vec::new(),
            visited: 0,
            compact_at: COMPACT_MIN,
            buf: Vec::new(),
        })
    }
}

/// Runs one `find` call to completion (on a blocking thread), never
/// looking into the credential store `protected` knows.
fn run(
    args: &FindArgs,
    cwd: &Path,
    cancel: &CancellationToken,
    protected: &Protected,
) -> Result<String, ToolError> {
    protected.check_read(&args.path, &paths::resolve(cwd, &args.path), "search")?;
    let root = existing_root(cwd, &args.path)?;
    let store = protected.store_ids();
    let filter = args
        .glob
        .as_deref()
        .map(|g| GlobFilter::new(g, false))
        .transpose()?;
    let matcher = NameMatcher::new(&args.pattern, filter.is_some())?;
    if !root.is_dir {
        return Ok(find_in_file_root(&root, &matcher, filter.as_ref()));
    }
    let (walk, pruned) = walker(&root.path, &store);
    let shared = Shared {
        root: root.path.clone(),
        prefix: root.print_prefix(),
        matcher,
        filter,
        limit: args.limit,
        cancel: cancel.clone(),
        results: Mutex::new(Vec::new()),
        total: AtomicUsize::new(0),
    };
    walk.build_parallel()
        .visit(&mut Builder { shared: &shared });
    if cancel.is_cancelled() {
        return Err(cancel::aborted());
    }
    let mut results = shared
        .results
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    compact(&mut results, args.limit);
    let skipped = pruned.take();
    let limit_hit = shared.total.load(Ordering::Relaxed) > args.limit;
    let store_notice = pruned.store_skipped().then(|| store.notice());
    let mut text = format_output(
        &results,
        limit_hit,
        args.limit,
        &skipped_names(skipped),
        store_notice.as_deref(),
    );
    if results.is_empty() {
        // Small models use find to look for text and take the empty answer
        // for "not there": say what was matched, and which tool looks inside
        // files.
        let glob = args
            .glob
            .as_deref()
            .map(|g| format!(" and the glob {g:?}"))
            .unwrap_or_default();
        let _ = write!(
            text,
            "\n\n[Looked for file and directory names under {} matching {:?}{glob}. \
             find matches names, not contents: to search inside files use grep.]",
            args.path, args.pattern
        );
    }
    Ok(text)
}

/// `find` on a root that is a file: lists it, as given, if it matches.
fn find_in_file_root(root: &Root, matcher: &NameMatcher, filter: Option<&GlobFilter>) -> String {
    let rel = Path::new(&root.raw);
    let passes = filter.is_none_or(|f| f.is_match(rel));
    if passes && matcher.is_match(&root.raw, rel, &mut Vec::new()) {
        root.raw.clone()
    } else {
        NO_RESULTS.to_string()
    }
}

/// Formats the sorted, limited results and the notices; `store` is the
/// notice of a walk that passed the credential store over.
fn format_output(
    results: &[Found],
    limit_hit: bool,
    limit: usize,
    skipped: &[String],
    store: Option<&str>,
) -> String {
    let mut walk_notices = Vec::new();
    if !skipped.is_empty() {
        walk_notices.push(format!(
            "[Skipped internal directories: {}]",
            skipped.join(", ")
        ));
    }
    walk_notices.extend(store.map(str::to_owned));
    if results.is_empty() {
        if walk_notices.is_empty() {
            return NO_RESULTS.to_string();
        }
        return format!("{NO_RESULTS}\n\n{}", walk_notices.join("\n"));
    }
    let mut listing = String::new();
    for (i, (_, display)) in results.iter().enumerate() {
        if i > 0 {
            listing.push('\n');
        }
        listing.push_str(display);
    }
    let mut text = cap_listing(listing);
    let mut notices = Vec::new();
    if limit_hit {
        notices.push(format!(
            "[Result limit {limit} reached. Use a higher limit or refine the pattern.]"
        ));
    }
    notices.extend(walk_notices);
    if !notices.is_empty() {
        text.push_str("\n\n");
        text.push_str(&notices.join("\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// Creates `rel` under `root` with `text`, making parent directories.
    fn put(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// Runs `find` with `args` in `cwd`, returning its text or error.
    fn find(cwd: &Path, args: Value) -> Result<String, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ctx = ToolContext {
            call_id: "t".into(),
            cwd: cwd.to_path_buf(),
            cancel: CancellationToken::new(),
            progress: etch_tool::ProgressSink::default(),
            temp_dir: cwd.join(".etch/tmp"),
            origin: etch_tool::CallOrigin::default(),
            approved: false,
        };
        rt.block_on(FindTool::new().execute(args, ctx))
            .map(|o| o.text)
            .map_err(|e| e.0)
    }

    /// C14: the pattern is a case-insensitive substring of the relative path,
    /// matching files and directories; directories end with `/`.
    #[test]
    fn substring_case_insensitive_files_and_dirs() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/Config.rs", "");
        put(dir.path(), "configs/a.txt", "");
        put(dir.path(), "other.txt", "");
        let out = find(dir.path(), json!({"pattern": "CONFIG"})).unwrap();
        assert_eq!(out, "configs/\nconfigs/a.txt\nsrc/Config.rs");
    }

    /// P-TOOL-35: a pattern with glob metacharacters is a glob on the file
    /// name, or on the relative path when it has `/`.
    #[test]
    fn glob_pattern() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "a.rs", "");
        put(dir.path(), "src/b.rs", "");
        put(dir.path(), "src/c.txt", "");
        put(dir.path(), "src/deep/d.rs", "");
        let out = find(dir.path(), json!({"pattern": "*.rs"})).unwrap();
        assert_eq!(out, "a.rs\nsrc/b.rs\nsrc/deep/d.rs");
        let out = find(dir.path(), json!({"pattern": "src/*.rs"})).unwrap();
        assert_eq!(out, "src/b.rs");
        let out = find(dir.path(), json!({"pattern": "src/**/*.RS"})).unwrap();
        assert_eq!(out, "src/b.rs\nsrc/deep/d.rs");
    }

    /// C14: the `glob` filter matches the file name without `/`, the relative
    /// path (with `**`) otherwise.
    #[test]
    fn glob_filter_basename_and_path() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "crates/x/lib.rs", "");
        put(dir.path(), "crates/x/lib.txt", "");
        put(dir.path(), "x/main.rs", "");
        put(dir.path(), "x/sub/inner.rs", "");
        let out = find(dir.path(), json!({"pattern": "lib", "glob": "*.rs"})).unwrap();
        assert_eq!(out, "crates/x/lib.rs");
        let out = find(dir.path(), json!({"pattern": "", "glob": "*.rs"}));
        assert!(
            out.unwrap_err()
                .starts_with("Validation failed for tool \"find\"")
        );
        let out = find(dir.path(), json!({"pattern": ".rs", "glob": "**/x/*.rs"})).unwrap();
        assert_eq!(out, "crates/x/lib.rs\nx/main.rs");
    }

    /// P-TOOL-36: output is sorted case-insensitively, bytewise on ties.
    #[test]
    fn sorted_output() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.md", "A.md", "a.md", "C.md", "_.md"] {
            put(dir.path(), name, "");
        }
        let out = find(dir.path(), json!({"pattern": ".md"})).unwrap();
        assert_eq!(out, "_.md\nA.md\na.md\nb.md\nC.md");
    }

    /// P-TOOL-36: no results is an exact text.
    #[test]
    fn no_results_text() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "a.txt", "");
        let out = find(dir.path(), json!({"pattern": "zzz"})).unwrap();
        assert_eq!(
            out,
            "No files found matching pattern\n\n[Looked for file and directory names under . matching \"zzz\". \
             find matches names, not contents: to search inside files use grep.]"
        );
    }

    /// G10, P-TOOL-37: past the limit the first `limit` sorted results are
    /// kept and the exact notice follows after a blank line.
    #[test]
    fn limit_notice() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            put(dir.path(), &format!("f{i}.txt"), "");
        }
        let out = find(dir.path(), json!({"pattern": "f", "limit": 3})).unwrap();
        assert_eq!(
            out,
            "f0.txt\nf1.txt\nf2.txt\n\n[Result limit 3 reached. Use a higher limit or refine the pattern.]"
        );
        let out = find(dir.path(), json!({"pattern": "f", "limit": 5})).unwrap();
        assert!(!out.contains("Result limit"), "{out}");
    }

    /// G10: past the listing cap the output is cut on a line boundary with
    /// its notice; the results kept are exactly the sorted prefix, even
    /// though walker threads drop results early to bound memory.
    #[test]
    fn output_cap_with_exact_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let mut names: Vec<String> = (0..6000)
            .map(|i| {
                format!(
                    "d{}/entry_{:05}_{}.txt",
                    i % 3,
                    (i * 7919) % 6000,
                    "p".repeat(30)
                )
            })
            .collect();
        for name in &names {
            put(dir.path(), name, "");
        }
        names.extend(["d0/", "d1/", "d2/"].map(String::from));
        names.sort_by_key(|n| (n.to_lowercase(), n.clone()));
        let out = find(dir.path(), json!({"pattern": "d", "limit": 100_000})).unwrap();
        let (listing, notice) = out.rsplit_once("\n\n").unwrap();
        assert_eq!(
            notice,
            "[Output truncated at 51200 bytes. Use a narrower path, pattern or limit.]"
        );
        let lines: Vec<&str> = listing.lines().collect();
        assert!(listing.len() <= LISTING_MAX_BYTES && lines.len() > 400);
        assert_eq!(lines, names[..lines.len()]);
        let out = find(dir.path(), json!({"pattern": "entry_0000"})).unwrap();
        assert_eq!(out.lines().count(), 10);
        let out = find(dir.path(), json!({"pattern": "d", "limit": 300})).unwrap();
        let (listing, notice) = out.rsplit_once("\n\n").unwrap();
        assert_eq!(
            notice,
            "[Result limit 300 reached. Use a higher limit or refine the pattern.]"
        );
        assert_eq!(listing.lines().collect::<Vec<_>>(), names[..300]);
    }

    /// E-TOOL-16: internal directories are skipped at any depth and named in
    /// a notice (order found, deduplicated); hidden and non-ignored files are
    /// listed, `.gitignore`d ones are not.
    #[test]
    fn skipped_internal_dirs_notice() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), ".git/config.x", "");
        put(dir.path(), "node_modules/m/x.x", "");
        put(dir.path(), "web/node_modules/y.x", "");
        put(dir.path(), "tools/bin/z.x", "");
        put(dir.path(), ".hidden.x", "");
        put(dir.path(), "kept.x", "");
        put(dir.path(), "ignored.x", "");
        put(dir.path(), ".gitignore", "ignored.x\n");
        let out = find(dir.path(), json!({"pattern": ".x"})).unwrap();
        assert_eq!(
            out,
            ".hidden.x\nkept.x\n\n[Skipped internal directories: node_modules, bin]"
        );
        let out = find(dir.path(), json!({"pattern": ".x", "limit": 1})).unwrap();
        assert!(out.ends_with(
            "\n\n[Result limit 1 reached. Use a higher limit or refine the pattern.]\n[Skipped internal directories: node_modules, bin]"
        ), "{out}");
        // Naming an internal directory explicitly searches it.
        let out = find(&dir.path().join("node_modules"), json!({"pattern": "x.x"})).unwrap();
        assert_eq!(out, "m/x.x");
    }

    /// G10: limit 0 and negative limits are rejected by the schema.
    #[test]
    fn limit_zero_rejected() {
        let dir = tempfile::tempdir().unwrap();
        for limit in [json!(0), json!(-3)] {
            let err = find(dir.path(), json!({"pattern": "a", "limit": limit})).unwrap_err();
            assert!(
                err.starts_with("Validation failed for tool \"find\""),
                "{err}"
            );
        }
        let err = find(dir.path(), json!({"pattern": "a", "bogus": 1})).unwrap_err();
        assert!(
            err.starts_with("Validation failed for tool \"find\""),
            "{err}"
        );
    }

    /// E-TOOL-16: a missing root is a tool error naming it.
    #[test]
    fn missing_path_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = find(dir.path(), json!({"pattern": "a", "path": "nope/x"})).unwrap_err();
        assert_eq!(
            err,
            "nope/x does not exist; use ls or find to see what there is"
        );
    }

    /// E-TOOL-16: a symlink loop is listed as an entry, not followed, and
    /// does not hang.
    #[test]
    fn symlink_loop_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "sub/a.txt", "");
        std::os::unix::fs::symlink(".", dir.path().join("sub/loop")).unwrap();
        let out = find(dir.path(), json!({"pattern": "o"})).unwrap();
        assert_eq!(out, "sub/loop");
        let out = find(dir.path(), json!({"pattern": "a.txt", "path": "sub"})).unwrap();
        assert_eq!(out, "sub/a.txt");
    }

    /// Printed paths are joined to the root as given, so each opens from
    /// the working directory; matching still looks at the path under the
    /// root only. An empty result still says which directories were not
    /// searched.
    #[test]
    fn paths_open_from_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/auth/jwt.rs", "");
        put(dir.path(), "src/vendor/jwt.rs", "");
        let out = find(dir.path(), json!({"pattern": "jwt", "path": "src"})).unwrap();
        assert_eq!(
            out,
            "src/auth/jwt.rs\n\n[Skipped internal directories: vendor]"
        );
        let out = find(dir.path(), json!({"pattern": "jwt", "path": "./src/"})).unwrap();
        assert!(out.starts_with("./src/auth/jwt.rs\n"), "{out}");
        let out = find(dir.path(), json!({"pattern": "src", "path": "src"})).unwrap();
        assert!(
            out.starts_with(
                "No files found matching pattern\n\n[Skipped internal directories: vendor]\n\n[Looked for"
            ),
            "{out}"
        );
        let abs = dir.path().join("src").display().to_string();
        let out = find(dir.path(), json!({"pattern": "auth/", "path": abs})).unwrap();
        assert!(out.starts_with(&format!("{abs}/auth/\n")), "{out}");
    }

    /// C14: a file root is printed as given when it matches.
    #[test]
    fn file_root_as_given() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/main.rs", "");
        let out = find(
            dir.path(),
            json!({"pattern": "main", "path": "src/main.rs"}),
        )
        .unwrap();
        assert_eq!(out, "src/main.rs");
    }

    /// C19: access is a read of the resolved root.
    #[test]
    fn access_reads_root() {
        let access =
            FindTool::new().access(&json!({"pattern": "a", "path": "src"}), Path::new("/w"));
        assert_eq!(access, Access::Read(vec![PathBuf::from("/w/src")]));
    }
}
