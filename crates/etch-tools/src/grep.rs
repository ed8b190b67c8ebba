//! The `grep` tool (C13, G10, E-TOOL-17/18, P-TOOL-31/33): searches file
//! contents line by line, literally unless asked for a regex, and prints
//! `path:line:text` matches (`path-line-text` context lines, `--` between
//! groups) sorted by path.
//!
//! It owns the search, the per-file and total match limits and the output
//! format. The walking rules (ignore files, hidden files, skipped internal
//! directories, depth) are `find`'s and are reused from [`crate::find`]; this
//! module must not know about the agent loop or how its text is shown.
//!
//! Files are searched in parallel while the tree is walked, but output is
//! deterministic: results are kept in a map ordered by (root, path), and only
//! the smallest prefix of that order that already holds more matches than the
//! limit, or more text than the listing cap, is retained. Once that prefix is
//! complete, files and whole directories sorting after it are skipped without
//! being read, which is how the limit stops the search early and keeps memory
//! bounded.
//!
//! Matches are counted per line. The total limit counts shown matches (at
//! most [`GREP_PER_FILE`] per file), so a file with many matches spends its
//! per-file share, not the whole budget; the limit notice appears only when
//! more matches exist than were shown. A file named explicitly as a root is
//! searched whatever the ignore rules and `glob` say, and when it is skipped
//! (too large, binary, unreadable) a notice says so instead of letting "No
//! matches found" mislead. The listing is capped with [`cap_listing`];
//! notices follow it after one blank line, one per line, so they survive the
//! cap.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use etch_model::ToolSpec;
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::args;
use crate::find::{
    CANCEL_CHECK_EVERY, GlobFilter, Root, default_path, deserialize_count, existing_root, walker,
};
use crate::limits::{
    GREP_DEFAULT_LIMIT, GREP_MAX_FILE_BYTES, GREP_MAX_LINE_CHARS, GREP_PER_FILE, LISTING_MAX_BYTES,
    cap_listing,
};
use crate::paths;

/// Text returned when nothing matched (P-TOOL-33).
const NO_MATCHES: &str = "No matches found";

/// A file with a NUL byte in this many leading bytes is binary and skipped.
const BINARY_PROBE_BYTES: usize = 8192;

/// Marker ending a rendered line cut at [`GREP_MAX_LINE_CHARS`].
const TRUNCATED_MARK: &str = "… [line truncated]";

/// The `grep` tool.
pub struct GrepTool {
    /// Name, description and schema shown to the model.
    spec: ToolSpec,
}

impl GrepTool {
    /// Builds the tool with its model-facing spec.
    pub fn new() -> Self {
        Self {
            spec: args::spec(
                "grep",
                "Search file contents. The pattern is a literal string unless `regex` is true. \
                 Prints `path:line:text` for matches (and `path-line-text` for context lines), \
                 sorted by path. Hidden files are searched, .gitignore and .ignore are \
                 respected, binary files and files over 1 MB are skipped, and .git, .etch, \
                 node_modules, vendor and bin directories are skipped. At most 20 matches are \
                 shown per file and `limit` (default 100) in total; lines are cut at 2000 \
                 characters and output at 50 KB.",
                json!({
                    "type": "object",
                    "properties": {
                        "pattern": {
                            "type": "string",
                            "minLength": 1,
                            "description": "Text to search for (literal unless regex is true)"
                        },
                        "path": {
                            "type": "string",
                            "description": "Directory or file to search (default: the working directory)"
                        },
                        "paths": {
                            "type": "array",
                            "items": { "type": "string" },
                            "description": "Several directories or files to search; when non-empty it replaces path"
                        },
                        "glob": {
                            "type": "string",
                            "description": "Only search files matching this glob: the file name when it has no /, else the path relative to the search directory (e.g. '*.rs', 'src/**/*.ts')"
                        },
                        "ignoreCase": {
                            "type": "boolean",
                            "description": "Case-insensitive search (default: false)"
                        },
                        "regex": {
                            "type": "boolean",
                            "description": "Treat the pattern as a regular expression (default: false, literal)"
                        },
                        "literal": {
                            "type": "boolean",
                            "description": "Treat the pattern as a literal string (default: true); false means regex"
                        },
                        "context": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "Lines of context before and after each match (default: 0)"
                        },
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "Maximum number of matches shown in total (default: 100)"
                        }
                    },
                    "required": ["pattern"],
                    "additionalProperties": false
                }),
            ),
        }
    }
}

impl Default for GrepTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for GrepTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self, args: &Value, cwd: &Path) -> Access {
        let parsed: Result<GrepArgs, _> = serde_json::from_value(args.clone());
        let roots = match parsed {
            Ok(args) => match search_roots(&args, cwd) {
                Ok(roots) => roots.into_iter().map(|r| r.path).collect(),
                Err(_) => raw_roots(&args)
                    .into_iter()
                    .map(|raw| paths::resolve(cwd, raw))
                    .collect(),
            },
            Err(_) => vec![cwd.to_path_buf()],
        };
        Access::Read(roots)
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let args: GrepArgs = args::parse(&self.spec, args)?;
            let cancel = ctx.cancel.clone();
            let cwd = ctx.cwd.clone();
            let text = tokio::task::spawn_blocking(move || run(&args, &cwd, &cancel))
                .await
                .map_err(|e| ToolError::new(format!("grep failed: {e}")))??;
            Ok(ToolOutput::text(text))
        })
    }
}

/// Arguments of one `grep` call, after schema validation.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GrepArgs {
    /// What to search for.
    pattern: String,
    /// Single search root as given.
    #[serde(default = "default_path")]
    path: String,
    /// Several roots; non-empty wins over `path`.
    #[serde(default)]
    paths: Vec<String>,
    /// Optional file filter.
    glob: Option<String>,
    /// Case-insensitive matching.
    #[serde(default)]
    ignore_case: bool,
    /// Regex mode.
    #[serde(default)]
    regex: bool,
    /// Pi compatibility: `false` means regex mode.
    literal: Option<bool>,
    /// Context lines before and after each match.
    #[serde(default, deserialize_with = "deserialize_count")]
    context: usize,
    /// Most matches shown in total.
    #[serde(default = "default_limit", deserialize_with = "deserialize_count")]
    limit: usize,
}

/// Default `grep` limit, for serde.
fn default_limit() -> usize {
    GREP_DEFAULT_LIMIT
}

/// The roots exactly as the model gave them.
fn raw_roots(args: &GrepArgs) -> Vec<&str> {
    if args.paths.is_empty() {
        vec![args.path.as_str()]
    } else {
        args.paths.iter().map(String::as_str).collect()
    }
}

/// Resolves the search roots. A `path` that does not exist but whose
/// whitespace-separated parts all do is read as several roots (E-TOOL-18):
/// models often pass `"src tests"`.
fn search_roots(args: &GrepArgs, cwd: &Path) -> Result<Vec<Root>, ToolError> {
    if !args.paths.is_empty() {
        return args.paths.iter().map(|p| existing_root(cwd, p)).collect();
    }
    match existing_root(cwd, &args.path) {
        Ok(root) => Ok(vec![root]),
        Err(err) => {
            let parts: Vec<&str> = args.path.split_whitespace().collect();
            if parts.len() > 1
                && !paths::resolve(cwd, &args.path).exists()
                && let Ok(roots) = parts.iter().map(|p| existing_root(cwd, p)).collect()
            {
                return Ok(roots);
            }
            Err(err)
        }
    }
}

/// Compiles the pattern: escaped literal by default, a regex when `regex` is
/// true or `literal` is false. A bad regex error carries the regex hint.
fn build_matcher(args: &GrepArgs) -> Result<RegexMatcher, ToolError> {
    let regex = args.regex || args.literal == Some(false);
    RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .fixed_strings(!regex)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|err| {
            let pattern = &args.pattern;
            ToolError::new(if regex {
                format!(
                    "invalid regex {pattern:?}: {err}. Patterns are literal unless regex is \
                     true; escape special characters or drop regex:true"
                )
            } else {
                format!("invalid pattern {pattern:?}: {err}")
            })
        })
}

/// What a stored line is relative to the matches around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// A matching line.
    Match,
    /// Context following a shown match.
    After,
    /// Context preceding the next match.
    Before,
}

/// One line kept for output.
#[derive(Debug, Clone)]
struct HitLine {
    /// 1-based line number.
    number: u64,
    /// Match or context.
    kind: LineKind,
    /// Rendered text: no terminator, lossy UTF-8, cut when too long.
    text: String,
}

/// The kept lines and the match count of one file.
#[derive(Debug, Default)]
struct FileHits {
    /// Lines to show, in file order.
    lines: Vec<HitLine>,
    /// Matching lines in the whole file.
    count: usize,
    /// Lower bound of the bytes its lines take once rendered, set when the
    /// file is collected.
    bytes: usize,
}

impl FileHits {
    /// Matches this file may show, which is what it spends of the limit.
    fn weight(&self) -> usize {
        self.count.min(GREP_PER_FILE)
    }

    /// A lower bound of the rendered size of the kept lines when printed
    /// under a path at least `path_len` bytes long: each line is at least
    /// path, `:`, one digit, `:`, text and a newline (the last line has no
    /// newline, but its line number has a digit more than counted or the
    /// line before it added one).
    fn min_rendered_bytes(&self, path_len: usize) -> usize {
        self.lines
            .iter()
            .map(|l| path_len + 3 + l.text.len())
            .sum::<usize>()
            .saturating_sub(1)
    }
}

/// Renders a line: terminator dropped, lossy UTF-8, cut after
/// [`GREP_MAX_LINE_CHARS`] characters with [`TRUNCATED_MARK`].
fn render_line(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    // A char takes at most 4 bytes, and a lossy replacement at most 3, so
    // this prefix holds more than the limit whenever it is not the whole
    // line; converting only the prefix keeps huge lines cheap.
    let probe = &bytes[..bytes.len().min(GREP_MAX_LINE_CHARS * 4 + 4)];
    let text = String::from_utf8_lossy(probe);
    match text.char_indices().nth(GREP_MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}{TRUNCATED_MARK}", &text[..cut]),
        None => text.into_owned(),
    }
}

/// Collects the lines of one file's search; counts every match but keeps
/// only the first `keep` with their context.
#[derive(Debug)]
struct FileSink {
    /// Most matches kept.
    keep: usize,
    /// Matches kept so far.
    kept: usize,
    /// Whether the last match was kept, so its after-context is too.
    in_kept_group: bool,
    /// The result being built.
    hits: FileHits,
}

impl FileSink {
    /// An empty sink keeping up to `keep` matches.
    fn new(keep: usize) -> Self {
        Self {
            keep,
            kept: 0,
            in_kept_group: false,
            hits: FileHits::default(),
        }
    }

    /// Takes the result out, leaving the sink ready for the next file.
    fn take(&mut self) -> FileHits {
        self.kept = 0;
        self.in_kept_group = false;
        std::mem::take(&mut self.hits)
    }
}

impl Sink for FileSink {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.hits.count += 1;
        self.in_kept_group = self.kept < self.keep;
        if self.in_kept_group {
            self.kept += 1;
            self.hits.lines.push(HitLine {
                number: mat.line_number().unwrap_or(0),
                kind: LineKind::Match,
                text: render_line(mat.bytes()),
            });
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let kind = match ctx.kind() {
            SinkContextKind::After if self.in_kept_group => LineKind::After,
            SinkContextKind::Before if self.kept < self.keep => LineKind::Before,
            _ => return Ok(true),
        };
        self.hits.lines.push(HitLine {
            number: ctx.line_number().unwrap_or(0),
            kind,
            text: render_line(ctx.bytes()),
        });
        Ok(true)
    }
}

/// Why a file produced no hits.
#[derive(Debug, PartialEq, Eq)]
enum Skip {
    /// No line matched.
    NoMatch,
    /// Larger than [`GREP_MAX_FILE_BYTES`].
    TooLarge,
    /// NUL byte near the start.
    Binary,
    /// Could not be opened or read.
    Unreadable,
}

/// Per-thread search machinery, reused across files.
struct FileSearcher {
    /// Line-oriented searcher with context and binary detection.
    searcher: Searcher,
    /// The compiled pattern.
    matcher: RegexMatcher,
    /// The file contents.
    buf: Vec<u8>,
    /// Collects one file's lines.
    sink: FileSink,
}

impl FileSearcher {
    /// Builds the machinery for `matcher` with `context` lines each side.
    fn new(matcher: RegexMatcher, context: usize, keep: usize) -> Self {
        let searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\0'))
            .before_context(context)
            .after_context(context)
            .build();
        Self {
            searcher,
            matcher,
            buf: Vec::new(),
            sink: FileSink::new(keep),
        }
    }

    /// Reads and searches one file.
    fn search(&mut self, path: &Path) -> Result<FileHits, Skip> {
        let mut file = File::open(path).map_err(|_| Skip::Unreadable)?;
        let len = file.metadata().map_err(|_| Skip::Unreadable)?.len();
        if len > GREP_MAX_FILE_BYTES {
            return Err(Skip::TooLarge);
        }
        self.buf.clear();
        self.buf
            .reserve(usize::try_from(len).unwrap_or(0).saturating_add(1));
        // `take` guards against a file growing between the stat and the read.
        (&mut file)
            .take(GREP_MAX_FILE_BYTES + 1)
            .read_to_end(&mut self.buf)
            .map_err(|_| Skip::Unreadable)?;
        if self.buf.len() as u64 > GREP_MAX_FILE_BYTES {
            return Err(Skip::TooLarge);
        }
        let probe = &self.buf[..self.buf.len().min(BINARY_PROBE_BYTES)];
        if memchr::memchr(0, probe).is_some() {
            return Err(Skip::Binary);
        }
        let searched = self
            .searcher
            .search_slice(&self.matcher, &self.buf, &mut self.sink);
        let hits = self.sink.take();
        if searched.is_err() {
            return Err(Skip::Unreadable);
        }
        if hits.count == 0 {
            return Err(Skip::NoMatch);
        }
        Ok(hits)
    }
}

/// Output order key of a file: root index, then path relative to the root.
type Key = (usize, PathBuf);

/// Hits kept so far: the shortest prefix, in key order, of the files found
/// that already holds `budget` shown matches or more than
/// [`LISTING_MAX_BYTES`] of output (or all of them). Either condition only
/// grows with the prefix, so that prefix does not depend on the order files
/// were found in; nothing after it can be printed: past the limit nothing
/// is shown, and past the byte cap the listing is cut (whose notice then
/// stands for the limit notice).
#[derive(Debug, Default)]
struct Collector {
    /// Kept files in output order.
    files: BTreeMap<Key, FileHits>,
    /// Sum of their weights.
    weight: usize,
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
    /// Fires when the call is cancelled.
    cancel: CancellationToken,
    /// The kept hits.
    collector: Mutex<Collector>,
    /// Set once the collector fills the output; from then on
    /// [`Shared::bound`] is the last key that can still be shown.
    full: AtomicBool,
    /// Last kept key once full.
    bound: RwLock<Option<Key>>,
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
            || self.shared.glob.as_ref().is_some_and(|g| !g.is_match(rel))
            || self.shared.beyond(self.root_index, rel)
        {
            return WalkState::Continue;
        }
        if let Ok(mut hits) = self.searcher.search(entry.path()) {
            hits.bytes = hits.min_rendered_bytes(rel.as_os_str().len());
            self.shared
                .insert((self.root_index, rel.to_path_buf()), hits);
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
}

impl<'s> ParallelVisitorBuilder<'s> for Builder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.shared,
            root_index: self.root_index,
            root: self.root,
            searcher: FileSearcher::new(
                self.shared.matcher.clone(),
                self.shared.context,
                self.shared.keep,
            ),
            visited: 0,
        })
    }
}

/// Runs one `grep` call to completion (on a blocking thread).
fn run(args: &GrepArgs, cwd: &Path, cancel: &CancellationToken) -> Result<String, ToolError> {
    let roots = search_roots(args, cwd)?;
    let matcher = build_matcher(args)?;
    let glob = args
        .glob
        .as_deref()
        .map(|g| GlobFilter::new(g, false))
        .transpose()?;
    let shared = Shared {
        matcher,
        context: args.context,
        keep: GREP_PER_FILE.min(args.limit),
        budget: args.limit.saturating_add(1),
        glob,
        cancel: cancel.clone(),
        collector: Mutex::new(Collector::default()),
        full: AtomicBool::new(false),
        bound: RwLock::new(None),
    };
    let mut notices = Vec::new();
    for (index, root) in roots.iter().enumerate() {
        if cancel.is_cancelled() || shared.beyond(index, Path::new("")) {
            break;
        }
        if root.is_dir {
            walker(&root.path, |_| {})
                .build_parallel()
                .visit(&mut Builder {
                    shared: &shared,
                    root_index: index,
                    root: &root.path,
                });
            continue;
        }
        // A file named explicitly is searched whatever the ignore rules
        // and glob say; when it is skipped, say so rather than imply that
        // nothing matched.
        let mut searcher = FileSearcher::new(shared.matcher.clone(), args.context, shared.keep);
        match searcher.search(&root.path) {
            Ok(mut hits) => {
                hits.bytes = hits.min_rendered_bytes(root.raw.len());
                shared.insert((index, PathBuf::new()), hits);
            }
            Err(Skip::TooLarge) => notices.push(format!(
                "[Skipped {}: larger than {} MiB]",
                root.raw,
                GREP_MAX_FILE_BYTES / (1024 * 1024)
            )),
            Err(Skip::Binary) => notices.push(format!("[Skipped {}: binary file]", root.raw)),
            Err(Skip::Unreadable) => {
                notices.push(format!("[Skipped {}: cannot be read]", root.raw));
            }
            Err(Skip::NoMatch) => {}
        }
    }
    if cancel.is_cancelled() {
        return Err(ToolError::new("grep was cancelled"));
    }
    let collector = shared
        .collector
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    Ok(format_output(&collector, &roots, args, &notices))
}

/// The path printed for a file: joined to its root as given (so a relative
/// root gives paths relative to the working directory, which `read` accepts
/// as they are), bare for the root `.`, and the root as given for a file root.
fn display_path(roots: &[Root], (index, rel): &Key) -> String {
    let Some(root) = roots.get(*index) else {
        return rel.to_string_lossy().into_owned();
    };
    if !root.is_dir || rel.as_os_str().is_empty() {
        return root.raw.clone();
    }
    let rel = rel.to_string_lossy();
    let prefix = root.raw.trim_end_matches('/');
    if prefix.is_empty() || prefix == "." {
        rel.into_owned()
    } else {
        format!("{prefix}/{rel}")
    }
}

/// Formats the kept hits, applying the per-file cap, the total limit and the
/// listing cap.
fn format_output(
    collector: &Collector,
    roots: &[Root],
    args: &GrepArgs,
    notices: &[String],
) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut shown = 0usize;
    // (file ordinal, line number) of the last printed line, for `--`.
    let mut last: Option<(usize, u64)> = None;
    'files: for (ordinal, (key, hits)) in collector.files.iter().enumerate() {
        let path = display_path(roots, key);
        let mut file_shown = 0usize;
        for line in &hits.lines {
            if line.kind != LineKind::After && shown == args.limit {
                break 'files;
            }
            if line.kind == LineKind::Match {
                shown += 1;
                file_shown += 1;
            }
            if args.context > 0 && last.is_some_and(|(f, n)| f != ordinal || n + 1 != line.number) {
                out.push("--".to_string());
            }
            last = Some((ordinal, line.number));
            let sep = if line.kind == LineKind::Match {
                ':'
            } else {
                '-'
            };
            out.push(format!("{path}{sep}{}{sep}{}", line.number, line.text));
        }
        if file_shown == GREP_PER_FILE && hits.count > GREP_PER_FILE {
            out.push(format!(
                "[{} more matches in {path} omitted]",
                hits.count - GREP_PER_FILE
            ));
        }
    }
    let mut text = if out.is_empty() {
        NO_MATCHES.to_string()
    } else {
        cap_listing(out.join("\n"))
    };
    let mut tail: Vec<String> = Vec::new();
    if collector.weight > args.limit {
        tail.push(format!(
            "[Match limit {} reached. Use a higher limit or refine the pattern.]",
            args.limit
        ));
    }
    tail.extend(notices.iter().cloned());
    if !tail.is_empty() {
        text.push_str("\n\n");
        text.push_str(&tail.join("\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// Creates `rel` under `root` with `text`, making parent directories.
    fn put(root: &Path, rel: &str, text: impl AsRef<[u8]>) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// Runs `grep` with `args` in `cwd`, returning its text or error.
    fn grep(cwd: &Path, args: Value) -> Result<String, String> {
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
        };
        rt.block_on(GrepTool::new().execute(args, ctx))
            .map(|o| o.text)
            .map_err(|e| e.0)
    }

    /// C13: the pattern is literal by default; regex metacharacters match
    /// themselves.
    #[test]
    fn literal_by_default() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "f.txt", "axb(\na.b(\n");
        let out = grep(dir.path(), json!({"pattern": "a.b("})).unwrap();
        assert_eq!(out, "f.txt:2:a.b(");
    }

    /// C13: `regex: true`, or Pi's `literal: false`, opts into regex mode.
    #[test]
    fn regex_opt_in() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "f.txt", "axb\nab\n");
        let out = grep(dir.path(), json!({"pattern": "a.b", "regex": true})).unwrap();
        assert_eq!(out, "f.txt:1:axb");
        let out = grep(dir.path(), json!({"pattern": "^a.b$", "literal": false})).unwrap();
        assert_eq!(out, "f.txt:1:axb");
        let out = grep(dir.path(), json!({"pattern": "a.b", "literal": true})).unwrap();
        assert_eq!(out, "No matches found");
    }

    /// C13: `ignoreCase` matches regardless of case; the default does not.
    #[test]
    fn ignore_case() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "f.txt", "Hello\nhello\nHELLO\n");
        let out = grep(dir.path(), json!({"pattern": "hello"})).unwrap();
        assert_eq!(out, "f.txt:2:hello");
        let out = grep(dir.path(), json!({"pattern": "hello", "ignoreCase": true})).unwrap();
        assert_eq!(out, "f.txt:1:Hello\nf.txt:2:hello\nf.txt:3:HELLO");
    }

    /// P-TOOL-31: context lines use `-`, matches `:`, and `--` separates
    /// non-adjacent groups, within and across files.
    #[test]
    fn context_lines_and_separators() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "a.txt", "1\nhit\n3\n4\n5\n6\nhit\n8\n");
        put(dir.path(), "b.txt", "hit\nx\n");
        let out = grep(dir.path(), json!({"pattern": "hit", "context": 1})).unwrap();
        assert_eq!(
            out,
            "a.txt-1-1\na.txt:2:hit\na.txt-3-3\n--\na.txt-6-6\na.txt:7:hit\na.txt-8-8\n--\n\
             b.txt:1:hit\nb.txt-2-x"
        );
        // Adjacent groups merge without a separator.
        put(dir.path(), "c.txt", "hit\nmid\nhit\n");
        let out = grep(
            dir.path(),
            json!({"pattern": "hit", "context": 1, "path": "c.txt"}),
        )
        .unwrap();
        assert_eq!(out, "c.txt:1:hit\nc.txt-2-mid\nc.txt:3:hit");
    }

    /// G10: at most 20 matches per file, then a notice counting the rest.
    #[test]
    fn per_file_cap_notice() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "many.txt", "m\n".repeat(27));
        put(dir.path(), "z.txt", "m\n");
        let out = grep(dir.path(), json!({"pattern": "m"})).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 22, "{out}");
        assert_eq!(lines[19], "many.txt:20:m");
        assert_eq!(lines[20], "[7 more matches in many.txt omitted]");
        assert_eq!(lines[21], "z.txt:1:m");
    }

    /// G10, P-TOOL-33: the total limit stops output with the exact notice
    /// after a blank line; exactly `limit` matches give no notice.
    #[test]
    fn total_limit_notice() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "a.txt", "x\nx\n");
        put(dir.path(), "b.txt", "x\nx\n");
        let out = grep(dir.path(), json!({"pattern": "x", "limit": 3})).unwrap();
        assert_eq!(
            out,
            "a.txt:1:x\na.txt:2:x\nb.txt:1:x\n\n\
             [Match limit 3 reached. Use a higher limit or refine the pattern.]"
        );
        let out = grep(dir.path(), json!({"pattern": "x", "limit": 4})).unwrap();
        assert_eq!(out, "a.txt:1:x\na.txt:2:x\nb.txt:1:x\nb.txt:2:x");
    }

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

    /// P-TOOL-33: no matches is an exact text.
    #[test]
    fn no_matches_text() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "f.txt", "abc\n");
        assert_eq!(
            grep(dir.path(), json!({"pattern": "zzz"})).unwrap(),
            "No matches found"
        );
    }

    /// C13: a file with a NUL byte in its first 8 KiB is binary and skipped.
    #[test]
    fn binary_file_skipped() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "bin.dat", b"needle\0\x01\x02needle\n");
        put(dir.path(), "text.txt", "needle\n");
        let out = grep(dir.path(), json!({"pattern": "needle"})).unwrap();
        assert_eq!(out, "text.txt:1:needle");
    }

    /// G10: files over 1 MiB are skipped; one named explicitly says so.
    #[test]
    fn large_file_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut big = "needle\n".to_string();
        big.push_str(&"x".repeat(1024 * 1024));
        put(dir.path(), "big.txt", &big);
        put(dir.path(), "small.txt", "needle\n");
        let out = grep(dir.path(), json!({"pattern": "needle"})).unwrap();
        assert_eq!(out, "small.txt:1:needle");
        let out = grep(dir.path(), json!({"pattern": "needle", "path": "big.txt"})).unwrap();
        assert_eq!(
            out,
            "No matches found\n\n[Skipped big.txt: larger than 1 MiB]"
        );
    }

    /// G10: a 10 MB single-line file is skipped by size; a 1.5 KB line is
    /// shown whole; a 3000-char line is cut at 2000 chars with the marker.
    #[test]
    fn long_lines() {
        let dir = tempfile::tempdir().unwrap();
        put(
            dir.path(),
            "huge.txt",
            format!("needle{}", "y".repeat(10_000_000)),
        );
        let medium = format!("needle{}", "m".repeat(1500));
        put(dir.path(), "medium.txt", format!("{medium}\n"));
        put(
            dir.path(),
            "wide.txt",
            format!("needle{}\n", "é".repeat(2994)),
        );
        let out = grep(dir.path(), json!({"pattern": "needle"})).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out:.300}");
        assert_eq!(lines[0], format!("medium.txt:1:{medium}"));
        let wide = lines[1].strip_prefix("wide.txt:1:").unwrap();
        assert!(wide.ends_with("… [line truncated]"));
        let kept = wide.strip_suffix("… [line truncated]").unwrap();
        assert_eq!(kept.chars().count(), 2000);
        assert!(kept.starts_with("needleé"));
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
        assert_eq!(out, ".env:1:needle\n.hidden/h.txt:1:needle");
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
        assert_eq!(out, "a/bin.txt:1:needle");
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "path": "node_modules"}),
        )
        .unwrap();
        assert_eq!(out, "node_modules/p/i.js:1:needle");
    }

    /// C13: a non-empty `paths` array wins over `path`; paths print joined
    /// to the roots as given.
    #[test]
    fn paths_array() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/a.rs", "needle\n");
        put(dir.path(), "tests/b.rs", "needle\n");
        put(dir.path(), "other/c.rs", "needle\n");
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "path": "other", "paths": ["tests/", "src", "other/c.rs"]}),
        )
        .unwrap();
        assert_eq!(
            out,
            "tests/b.rs:1:needle\nsrc/a.rs:1:needle\nother/c.rs:1:needle"
        );
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "paths": ["src", "nope"]}),
        )
        .unwrap_err();
        assert_eq!(out, "nope does not exist");
    }

    /// E-TOOL-18: a missing `path` whose whitespace-separated parts all
    /// exist is searched as several roots; otherwise it is an error.
    #[test]
    fn whitespace_split_path() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/a.rs", "needle\n");
        put(dir.path(), "tests/b.rs", "needle\n");
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "path": "src tests"}),
        )
        .unwrap();
        assert_eq!(out, "src/a.rs:1:needle\ntests/b.rs:1:needle");
        let err = grep(dir.path(), json!({"pattern": "needle", "path": "src nope"})).unwrap_err();
        assert_eq!(err, "src nope does not exist");
    }

    /// C13: an invalid regex is an error quoting the compiler and hinting
    /// that patterns are literal by default.
    #[test]
    fn invalid_regex_hint() {
        let dir = tempfile::tempdir().unwrap();
        let err = grep(dir.path(), json!({"pattern": "foo(", "regex": true})).unwrap_err();
        assert!(err.starts_with("invalid regex \"foo(\": "), "{err}");
        assert!(err.contains("unclosed group"), "{err}");
        assert!(err.ends_with("Patterns are literal unless regex is true; escape special characters or drop regex:true"), "{err}");
        // The same pattern is fine literally.
        put(dir.path(), "f.txt", "foo(\n");
        assert_eq!(
            grep(dir.path(), json!({"pattern": "foo("})).unwrap(),
            "f.txt:1:foo("
        );
    }

    /// G10: limit 0 and negative limits, negative context and unknown
    /// arguments are rejected by the schema.
    #[test]
    fn schema_rejects_bad_arguments() {
        let dir = tempfile::tempdir().unwrap();
        for args in [
            json!({"pattern": "a", "limit": 0}),
            json!({"pattern": "a", "limit": -1}),
            json!({"pattern": "a", "context": -1}),
            json!({"pattern": ""}),
            json!({"pattern": "a", "bogus": true}),
        ] {
            let err = grep(dir.path(), args).unwrap_err();
            assert!(
                err.starts_with("Validation failed for tool \"grep\""),
                "{err}"
            );
        }
    }

    /// C13: a missing root is a tool error naming it.
    #[test]
    fn missing_path_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = grep(dir.path(), json!({"pattern": "a", "path": "missing"})).unwrap_err();
        assert_eq!(err, "missing does not exist");
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
        assert_eq!(out, "sub/f.txt:1:needle");
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
        assert_eq!(out, "a.rs:1:needle\nsrc/c.rs:1:needle\nsrc/x/b.rs:1:needle");
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "glob": "src/**/*.rs"}),
        )
        .unwrap();
        assert_eq!(out, "src/c.rs:1:needle\nsrc/x/b.rs:1:needle");
        let out = grep(dir.path(), json!({"pattern": "needle", "glob": "src/*.rs"})).unwrap();
        assert_eq!(out, "src/c.rs:1:needle");
    }

    /// C13: a file root prints its path as given; CRLF endings are dropped.
    #[test]
    fn file_root_as_given() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/main.rs", "fn main() {}\r\n");
        let out = grep(
            dir.path(),
            json!({"pattern": "main", "path": "./src/main.rs"}),
        )
        .unwrap();
        assert_eq!(out, "./src/main.rs:1:fn main() {}");
    }

    /// C19: access is a read of every resolved root, including the
    /// whitespace-split fallback.
    #[test]
    fn access_reads_roots() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/a.rs", "");
        put(dir.path(), "tests/b.rs", "");
        let tool = GrepTool::new();
        let access = tool.access(&json!({"pattern": "a", "path": "src tests"}), dir.path());
        assert_eq!(
            access,
            Access::Read(vec![dir.path().join("src"), dir.path().join("tests")])
        );
        let access = tool.access(&json!({"pattern": "a"}), Path::new("/w"));
        assert_eq!(access, Access::Read(vec![PathBuf::from("/w")]));
    }
}
