//! The parallel part of `grep` (G10): walking each search root with the
//! shared rules of [`crate::walk`], searching files on the walker threads and
//! keeping only the hits that can still be printed.
//!
//! Output is deterministic even though files are searched in parallel:
//! results are kept in a map ordered by (root, path), and only the smallest
//! prefix of that order that already holds more matches than the limit, or
//! more text than the listing cap, is retained. Once that prefix is
//! complete, files and whole directories sorting after it are skipped without
//! being read, which is how the limit stops the search early and keeps memory
//! bounded. The total limit counts shown matches (at most [`GREP_PER_FILE`]
//! per file), so a file with many matches spends its per-file share, not the
//! whole budget.
//!
//! A file named explicitly as a root is searched whatever the ignore rules
//! and `glob` say, and the reason it was skipped, if it was, is handed back.
//! What a directory walk passes over without searching (internal
//! directories, files too large or binary) is handed back too, limited to
//! what sorts within the kept prefix so that it is as deterministic as the
//! hits; a "No matches found" must not hide text that was never searched.
//! This module must not know how the pattern was compiled from the
//! arguments, how one file is read, nor how the hits are printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use grep_regex::RegexMatcher;
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use super::file::{FileHits, FileSearcher, Skip};
use crate::limits::{GREP_PER_FILE, LISTING_MAX_BYTES};
use crate::protect::StoreIds;
use crate::walk::{CANCEL_CHECK_EVERY, GlobFilter, Root, walker};

/// Output order key of a file: root index, then path relative to the root.
pub(super) type Key = (usize, PathBuf);

/// Hits kept so far: the shortest prefix, in key order, of the files found
/// that already holds `budget` shown matches or more than
/// [`LISTING_MAX_BYTES`] of output (or all of them). Either condition only
/// grows with the prefix, so that prefix does not depend on the order files
/// were found in; nothing after it can be printed: past the limit nothing
/// is shown, and past the byte cap the listing is cut (whose notice then
/// stands for the limit notice).
#[derive(Debug, Default)]
pub(super) struct Collector {
    /// Kept files in output order.
    pub(super) files: BTreeMap<Key, FileHits>,
    /// Sum of their weights.
    pub(super) weight: usize,
    /// Sum of their rendered-size lower bounds.
    bytes: usize,
}

impl Collector {
    /// Whether kept files of this weight and size already fill the output.
    fn fills(weight: usize, bytes: usize, budget: usize) -> bool {
        weight >= budget || bytes > LISTING_MAX_BYTES
    }
}

/// State shared by the walker threads of one call.
struct Shared {
    /// The compiled pattern, cloned into each thread.
    matcher: RegexMatcher,
    /// Context lines each side.
    context: usize,
    /// Matches kept per file: the per-file cap, or the limit if smaller.
    keep: usize,
    /// Shown matches that prove the limit is exceeded: `limit + 1`.
    budget: usize,
    /// Optional file filter.
    glob: Option<GlobFilter>,
    /// Files walked that passed the filters and were searched.
    searched: AtomicUsize,
    /// Fires when the call is cancelled.
    cancel: CancellationToken,
    /// The kept hits.
    collector: Mutex<Collector>,
    /// Set once the collector fills the output; from then on
    /// [`Shared::bound`] is the last key that can still be shown.
    full: AtomicBool,
    /// Last kept key once full.
    bound: RwLock<Option<Key>>,
    /// Files in directory roots that were not searched, and why.
    skipped_files: Mutex<Vec<(Key, Skip)>>,
    /// The credential store, never searched.
    store: StoreIds,
    /// Whether a walk met a credential file and passed it over.
    store_met: AtomicBool,
}

impl Shared {
    /// Whether everything at or under `rel` of root `root` sorts after the
    /// kept prefix and so cannot be shown.
    fn beyond(&self, root: usize, rel: &Path) -> bool {
        if !self.full.load(Ordering::Acquire) {
            return false;
        }
        let bound = self.bound.read().unwrap_or_else(PoisonError::into_inner);
        bound
            .as_ref()
            .is_some_and(|(r, p)| root > *r || (root == *r && rel > p.as_path()))
    }

    /// Adds a file's hits and drops files no longer needed.
    fn insert(&self, key: Key, hits: FileHits) {
        let mut collector = self
            .collector
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        collector.weight += hits.weight();
        collector.bytes += hits.bytes;
        collector.files.insert(key, hits);
        while let Some((_, last)) = collector.files.last_key_value() {
            let (weight, bytes) = (last.weight(), last.bytes);
            if !Collector::fills(
                collector.weight - weight,
                collector.bytes - bytes,
                self.budget,
            ) {
                break;
            }
            collector.weight -= weight;
            collector.bytes -= bytes;
            collector.files.pop_last();
        }
        if Collector::fills(collector.weight, collector.bytes, self.budget) {
            let last = collector.files.last_key_value().map(|(k, _)| k.clone());
            *self.bound.write().unwrap_or_else(PoisonError::into_inner) = last;
            self.full.store(true, Ordering::Release);
        }
    }
}

/// Per-thread visitor of one root's walk.
struct Visitor<'s> {
    /// Call-wide state.
    shared: &'s Shared,
    /// Index of the root being walked.
    root_index: usize,
    /// Path of the root being walked.
    root: &'s Path,
    /// The root as the model wrote it, for globs that repeat it.
    root_raw: &'s str,
    /// This thread's search machinery.
    searcher: FileSearcher,
    /// Entries visited, to space out cancellation checks.
    visited: usize,
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        self.visited += 1;
        if self.visited.is_multiple_of(CANCEL_CHECK_EVERY) && self.shared.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        // Unreadable entries and loops are skipped, as `rg` does.
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        let Some(file_type) = entry.file_type() else {
            return WalkState::Continue;
        };
        let Ok(rel) = entry.path().strip_prefix(self.root) else {
            return WalkState::Continue;
        };
        if file_type.is_dir() {
            return if self.shared.beyond(self.root_index, rel) {
                WalkState::Skip
            } else {
                WalkState::Continue
            };
        }
        if !file_type.is_file()
            || self
                .shared
                .glob
                .as_ref()
                .is_some_and(|g| !g.is_match_under(self.root_raw, rel))
            || self.shared.beyond(self.root_index, rel)
        {
            return WalkState::Continue;
        }
        self.shared.searched.fetch_add(1, Ordering::Relaxed);
        match self.searcher.search(entry.path()) {
            Ok(mut hits) => {
                hits.bytes = hits.min_rendered_bytes(rel.as_os_str().len());
                self.shared
                    .insert((self.root_index, rel.to_path_buf()), hits);
            }
            Err(Skip::Credential) => self.shared.store_met.store(true, Ordering::Relaxed),
            Err(skip @ (Skip::TooLarge | Skip::Binary)) => self
                .shared
                .skipped_files
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(((self.root_index, rel.to_path_buf()), skip)),
            // A FIFO or device that took a file's place since the walk saw
            // it is passed over like an unreadable file.
            Err(Skip::NoMatch | Skip::Unreadable | Skip::NotRegular) => {}
        }
        WalkState::Continue
    }
}

/// Builds one visitor per walker thread of one root.
struct Builder<'s> {
    /// Call-wide state.
    shared: &'s Shared,
    /// Index of the root being walked.
    root_index: usize,
    /// Path of the root being walked.
    root: &'s Path,
    /// The root as the model wrote it.
    root_raw: &'s str,
}

impl<'s> ParallelVisitorBuilder<'s> for Builder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.shared,
            root_index: self.root_index,
            root: self.root,
            root_raw: self.root_raw,
            searcher: FileSearcher::new(
                self.shared.matcher.clone(),
                self.shared.context,
                self.shared.keep,
                self.shared.store.clone(),
            ),
            visited: 0,
        })
    }
}

/// What one search kept.
#[derive(Debug)]
pub(super) struct Found {
    /// The kept hits.
    pub(super) collector: Collector,
    /// File roots that were not searched, by root index in root order, with
    /// the reason (never [`Skip::NoMatch`]).
    pub(super) skipped_roots: Vec<(usize, Skip)>,
    /// Files found in directory roots that passed the glob and were
    /// searched, so an empty result can say the glob matched nothing.
    pub(super) searched_files: usize,
    /// Internal directories a walk did not enter, by name, in walk order.
    pub(super) skipped_dirs: Vec<String>,
    /// Whether the kept hits are all the matches there are (the counts
    /// `grep` states are exact only then).
    pub(super) complete: bool,
    /// Files in directory roots that were too large or binary, in output
    /// order.
    pub(super) skipped_files: Vec<(Key, Skip)>,
    /// The notice of a walk that passed etch's credential store over.
    pub(super) store_notice: Option<String>,
}

/// What bounds one search besides the pattern: the glob, context lines,
/// the limit, cancellation and the credential store it never enters.
pub(super) struct Bounds<'a> {
    /// Optional file filter.
    pub(super) glob: Option<GlobFilter>,
    /// Context lines each side.
    pub(super) context: usize,
    /// Most matches shown.
    pub(super) limit: usize,
    /// Fires when the call is cancelled.
    pub(super) cancel: &'a CancellationToken,
    /// etch's credential store.
    pub(super) store: StoreIds,
}

/// Searches `roots` in order for `matcher` within `bounds`, keeping what at
/// most `limit` shown matches need (see the module doc). Stops early, with
/// what it has, when `cancel` fires.
pub(super) fn search(roots: &[Root], matcher: RegexMatcher, bounds: Bounds<'_>) -> Found {
    let Bounds {
        glob,
        context,
        limit,
        cancel,
        store,
    } = bounds;
    let shared = Shared {
        matcher,
        context,
        keep: GREP_PER_FILE.min(limit),
        budget: limit.saturating_add(1),
        glob,
        searched: AtomicUsize::new(0),
        cancel: cancel.clone(),
        collector: Mutex::new(Collector::default()),
        full: AtomicBool::new(false),
        bound: RwLock::new(None),
        skipped_files: Mutex::new(Vec::new()),
        store,
        store_met: AtomicBool::new(false),
    };
    let mut store_skipped = false;
    let mut skipped_roots = Vec::new();
    let mut skipped_dirs: Vec<PathBuf> = Vec::new();
    for (index, root) in roots.iter().enumerate() {
        if cancel.is_cancelled() || shared.beyond(index, Path::new("")) {
            break;
        }
        if root.is_dir {
            let (walk, pruned) = walker(&root.path, &shared.store);
            walk.build_parallel().visit(&mut Builder {
                shared: &shared,
                root_index: index,
                root: &root.path,
                root_raw: &root.raw,
            });
            store_skipped |= pruned.store_skipped();
            skipped_dirs.extend(pruned.take().into_iter().filter(|path| {
                path.strip_prefix(&root.path)
                    .is_ok_and(|rel| !shared.beyond(index, rel))
            }));
            continue;
        }
        // A file named explicitly is searched whatever the ignore rules
        // and glob say; when it is skipped, the caller says so rather than
        // imply that nothing matched.
        let mut searcher = FileSearcher::new(
            shared.matcher.clone(),
            context,
            shared.keep,
            shared.store.clone(),
        );
        match searcher.search(&root.path) {
            Ok(mut hits) => {
                hits.bytes = hits.min_rendered_bytes(root.raw.len());
                shared.insert((index, PathBuf::new()), hits);
            }
            Err(Skip::NoMatch) => {}
            Err(skip) => skipped_roots.push((index, skip)),
        }
    }
    let searched_files = shared.searched.load(Ordering::Relaxed);
    store_skipped |= shared.store_met.load(Ordering::Relaxed);
    let store_notice = store_skipped.then(|| shared.store.notice());
    // Every match found is kept: nothing was dropped for the limit or the
    // listing's size, and the walk was not stopped.
    let complete = !shared.full.load(Ordering::Acquire) && !cancel.is_cancelled();
    let mut skipped_files = std::mem::take(
        &mut *shared
            .skipped_files
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    skipped_files.retain(|((index, rel), _)| !shared.beyond(*index, rel));
    skipped_files.sort_by(|a, b| a.0.cmp(&b.0));
    let collector = shared
        .collector
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    Found {
        collector,
        skipped_roots,
        searched_files,
        skipped_dirs: crate::walk::skipped_names(skipped_dirs),
        skipped_files,
        store_notice,
        complete,
    }
}

#[cfg(test)]
mod tests {
    use crate::grep::testutil::{grep, put};
    use serde_json::json;

    /// G10: the limit is applied in path order whatever order the parallel
    /// walk finds files in, and repeated runs agree.
    #[test]
    fn limit_is_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..300 {
            put(dir.path(), &format!("d{}/f{i:03}.txt", i % 7), "k\nk\n");
        }
        let first = grep(dir.path(), json!({"pattern": "k", "limit": 41})).unwrap();
        for _ in 0..5 {
            assert_eq!(
                grep(dir.path(), json!({"pattern": "k", "limit": 41})).unwrap(),
                first
            );
        }
        let lines: Vec<&str> = first.lines().collect();
        assert_eq!(lines.len(), 43);
        assert_eq!(lines[0], "d0/f000.txt:1:k");
        assert_eq!(lines[40], "d0/f140.txt:1:k");
        let mut sorted = lines[..41].to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, lines[..41]);
    }

    /// G10: with a limit too high to matter, the listing cap ends the
    /// search: the output is the sorted prefix cut with the cap notice, the
    /// same on every run.
    #[test]
    fn output_cap_bounds_search() {
        let dir = tempfile::tempdir().unwrap();
        let line = format!("needle {}\n", "w".repeat(500));
        for i in 0..400 {
            put(dir.path(), &format!("d{}/f{i:03}.txt", i % 5), &line);
        }
        let args = json!({"pattern": "needle", "limit": 100_000});
        let out = grep(dir.path(), args.clone()).unwrap();
        assert_eq!(grep(dir.path(), args).unwrap(), out);
        let (listing, notice) = out.rsplit_once("\n\n").unwrap();
        assert_eq!(
            notice,
            "[Output truncated at 51200 bytes. Use a narrower path, pattern or limit.]"
        );
        let lines: Vec<&str> = listing.lines().collect();
        assert_eq!(lines[0], format!("d0/f000.txt:1:{}", line.trim_end()));
        assert_eq!(lines[1], format!("d0/f005.txt:1:{}", line.trim_end()));
        assert_eq!(lines.len(), 98);
    }

    /// C13: `.gitignore`d files are skipped (even outside a git repository)
    /// while hidden files are searched.
    #[test]
    fn gitignore_respected_hidden_searched() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), ".gitignore", "ignored.txt\n");
        put(dir.path(), ".ignore", "also.txt\n");
        put(dir.path(), "ignored.txt", "needle\n");
        put(dir.path(), "also.txt", "needle\n");
        put(dir.path(), ".hidden/h.txt", "needle\n");
        put(dir.path(), ".env", "needle\n");
        let out = grep(dir.path(), json!({"pattern": "needle"})).unwrap();
        assert_eq!(
            out,
            ".env:1:needle\n.hidden/h.txt:1:needle\n\n[2 matching lines in 2 files.]"
        );
    }

    /// E-TOOL-17: `.git`, `.etch`, `node_modules`, `vendor` and `bin`
    /// directories are skipped at any depth, but a root named so is searched.
    #[test]
    fn internal_dirs_skipped() {
        let dir = tempfile::tempdir().unwrap();
        for rel in [
            ".git/HEAD",
            ".etch/x",
            "node_modules/p/i.js",
            "a/vendor/v.go",
            "a/bin/b",
        ] {
            put(dir.path(), rel, "needle\n");
        }
        put(dir.path(), "a/bin.txt", "needle\n");
        let out = grep(dir.path(), json!({"pattern": "needle"})).unwrap();
        assert_eq!(
            out,
            "a/bin.txt:1:needle\n\n[1 matching line in 1 file.]\n[Skipped internal directories: bin, vendor, node_modules]"
        );
        let out = grep(dir.path(), json!({"pattern": "absent"})).unwrap();
        assert!(
            out.starts_with("No matches found\n\n[Skipped internal directories: "),
            "{out}"
        );
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "path": "node_modules"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "node_modules/p/i.js:1:needle\n\n[1 matching line in 1 file.]"
        );
    }

    /// E-TOOL-17: a symlink loop inside the tree neither hangs nor crashes,
    /// and symlinks are not followed.
    #[test]
    fn symlink_loop_does_not_hang() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "sub/f.txt", "needle\n");
        std::os::unix::fs::symlink(".", dir.path().join("sub/loop")).unwrap();
        std::os::unix::fs::symlink("..", dir.path().join("sub/up")).unwrap();
        let out = grep(dir.path(), json!({"pattern": "needle"})).unwrap();
        assert_eq!(out, "sub/f.txt:1:needle\n\n[1 matching line in 1 file.]");
    }

    /// C13: `glob` matches the file name without `/`, the relative path
    /// (with `**`) otherwise.
    #[test]
    fn glob_filter() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "a.rs", "needle\n");
        put(dir.path(), "a.txt", "needle\n");
        put(dir.path(), "src/x/b.rs", "needle\n");
        put(dir.path(), "src/c.rs", "needle\n");
        let out = grep(dir.path(), json!({"pattern": "needle", "glob": "*.rs"})).unwrap();
        assert_eq!(
            out,
            "a.rs:1:needle\nsrc/c.rs:1:needle\nsrc/x/b.rs:1:needle\n\n[3 matching lines in 3 files.]"
        );
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "glob": "src/**/*.rs"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "src/c.rs:1:needle\nsrc/x/b.rs:1:needle\n\n[2 matching lines in 2 files.]"
        );
        // A glob that repeats the search directory matches as if it did not
        // (a real model wrote exactly this).
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "path": "src", "glob": "src/**/*.rs"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "src/c.rs:1:needle\nsrc/x/b.rs:1:needle\n\n[2 matching lines in 2 files.]"
        );
        let out = grep(dir.path(), json!({"pattern": "needle", "glob": "src/*.rs"})).unwrap();
        assert_eq!(out, "src/c.rs:1:needle\n\n[1 matching line in 1 file.]");
        // A glob that matches no file says so (the model copied an example
        // extension and concluded the text was missing).
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "glob": "src/**/*.ts"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "No matches found\n\n[No file matched the glob \"src/**/*.ts\", so nothing was searched. Search again without the glob or with another one.]"
        );
        let out = grep(dir.path(), json!({"pattern": "absent", "glob": "*.rs"})).unwrap();
        assert_eq!(
            out,
            "No matches found\n\n[Searched the contents of the files under . for the literal text \"absent\", in files matching \"*.rs\". grep looks inside files: to find a file by its name use find, to see a file use read.]"
        );
    }
}
