//! Searching one file for `grep` (C13, G10): reading it whole, skipping it
//! when it is larger than [`GREP_MAX_FILE_BYTES`] or binary (a NUL byte in
//! its first [`BINARY_PROBE_BYTES`]), and collecting its matching lines, with
//! their context, as they will be printed: terminator dropped, lossy UTF-8,
//! cut after [`GREP_MAX_LINE_CHARS`] characters.
//!
//! Every match of the file is counted, but only the first `keep` are kept
//! with their context. This module must not know how files are found, how
//! the kept files are chosen across the tree, nor how lines are laid out in
//! the output.

use std::io::Read;
use std::path::Path;

use grep_regex::RegexMatcher;
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};

use crate::fsutil::{OpenError, open_regular};
use crate::limits::{GREP_MAX_FILE_BYTES, GREP_MAX_LINE_CHARS, GREP_PER_FILE};
use crate::protect::StoreIds;

/// A file with a NUL byte in this many leading bytes is binary and skipped.
const BINARY_PROBE_BYTES: usize = 8192;

/// Marker ending a rendered line cut at [`GREP_MAX_LINE_CHARS`].
const TRUNCATED_MARK: &str = "… [line truncated]";

/// What a stored line is relative to the matches around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LineKind {
    /// A matching line.
    Match,
    /// Context following a shown match.
    After,
    /// Context preceding the next match.
    Before,
}

/// One line kept for output.
#[derive(Debug, Clone)]
pub(super) struct HitLine {
    /// 1-based line number.
    pub(super) number: u64,
    /// Match or context.
    pub(super) kind: LineKind,
    /// Rendered text: no terminator, lossy UTF-8, cut when too long.
    pub(super) text: String,
}

/// The kept lines and the match count of one file.
#[derive(Debug, Default)]
pub(super) struct FileHits {
    /// Lines to show, in file order.
    pub(super) lines: Vec<HitLine>,
    /// Matching lines in the whole file.
    pub(super) count: usize,
    /// Lower bound of the bytes its lines take once rendered, set when the
    /// file is collected.
    pub(super) bytes: usize,
}

impl FileHits {
    /// Matches this file may show, which is what it spends of the limit.
    pub(super) fn weight(&self) -> usize {
        self.count.min(GREP_PER_FILE)
    }

    /// A lower bound of the rendered size of the kept lines when printed
    /// under a path at least `path_len` bytes long: each line is at least
    /// path, `:`, one digit, `:`, text and a newline (the last line has no
    /// newline, but its line number has a digit more than counted or the
    /// line before it added one).
    pub(super) fn min_rendered_bytes(&self, path_len: usize) -> usize {
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
pub(super) enum Skip {
    /// No line matched.
    NoMatch,
    /// Larger than [`GREP_MAX_FILE_BYTES`].
    TooLarge,
    /// NUL byte near the start.
    Binary,
    /// Could not be opened or read.
    Unreadable,
    /// Not a regular file (a FIFO or device put in its place after the
    /// walk saw it): never read, as it could block.
    NotRegular,
    /// One of etch's credential files (a hard link to one, or one swapped
    /// in): never read.
    Credential,
}

/// Per-thread search machinery, reused across files.
pub(super) struct FileSearcher {
    /// Line-oriented searcher with context and binary detection.
    searcher: Searcher,
    /// The compiled pattern.
    matcher: RegexMatcher,
    /// The file contents.
    buf: Vec<u8>,
    /// Collects one file's lines.
    sink: FileSink,
    /// The credential store's files, never read.
    store: StoreIds,
}

impl FileSearcher {
    /// Builds the machinery for `matcher` with `context` lines each side,
    /// refusing the files of `store`.
    pub(super) fn new(matcher: RegexMatcher, context: usize, keep: usize, store: StoreIds) -> Self {
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
            store,
        }
    }

    /// Reads and searches one file.
    pub(super) fn search(&mut self, path: &Path) -> Result<FileHits, Skip> {
        let (mut file, meta) = open_regular(path).map_err(|e| match e {
            OpenError::Io(_) => Skip::Unreadable,
            OpenError::NotRegular(_) => Skip::NotRegular,
        })?;
        if self.store.is_store_file(&meta) {
            return Err(Skip::Credential);
        }
        let len = meta.len();
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

#[cfg(test)]
mod tests {
    use crate::grep::testutil::{grep, put};
    use serde_json::json;

    /// C13: a file with a NUL byte in its first 8 KiB is binary and skipped.
    #[test]
    fn binary_file_skipped() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "bin.dat", b"needle\0\x01\x02needle\n");
        put(dir.path(), "text.txt", "needle\n");
        let out = grep(dir.path(), json!({"pattern": "needle"})).unwrap();
        assert_eq!(
            out,
            "text.txt:1:needle\n\n[1 matching line in 1 file.]\n[Skipped 1 binary file]"
        );
    }

    /// G10: files over 1 MiB are skipped, and the result says which, even
    /// when nothing matched; one named explicitly says so.
    #[test]
    fn large_file_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut big = "needle\n".to_string();
        big.push_str(&"x".repeat(1024 * 1024));
        put(dir.path(), "big.txt", &big);
        put(dir.path(), "small.txt", "needle\n");
        let out = grep(dir.path(), json!({"pattern": "needle"})).unwrap();
        assert_eq!(
            out,
            "small.txt:1:needle\n\n[1 matching line in 1 file.]\n[Skipped files larger than 1 MiB: big.txt. Name one as the path to search it.]"
        );
        std::fs::remove_file(dir.path().join("small.txt")).unwrap();
        let out = grep(dir.path(), json!({"pattern": "needle"})).unwrap();
        assert_eq!(
            out,
            "No matches found\n\n[Skipped files larger than 1 MiB: big.txt. Name one as the path to search it.]\n\n\
             [Searched the contents of the files under . for the literal text \"needle\". grep looks inside files: to find a file by its name use find, to see a file use read.]"
        );
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
        let (listing, notice) = out.split_once("\n\n").unwrap();
        assert!(notice.contains("huge.txt"), "{notice}");
        let lines: Vec<&str> = listing.lines().collect();
        assert_eq!(lines.len(), 2, "{out:.300}");
        assert_eq!(lines[0], format!("medium.txt:1:{medium}"));
        let wide = lines[1].strip_prefix("wide.txt:1:").unwrap();
        assert!(wide.ends_with("… [line truncated]"));
        let kept = wide.strip_suffix("… [line truncated]").unwrap();
        assert_eq!(kept.chars().count(), 2000);
        assert!(kept.starts_with("needleé"));
    }
}
