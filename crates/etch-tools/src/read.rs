//! The `read` tool (E-TOOL-04/05, C15, P-TOOL-05..10): numbered lines of a
//! text file, 2000 lines or 51200 bytes at a time, with continuation hints,
//! and `files` batches.
//!
//! Files are streamed line by line, so reading the start of a multi-gigabyte
//! file costs the lines shown, not the file. The total line count in the
//! hints is exact for files up to [`COUNT_LIMIT_BYTES`]; for larger ones
//! counting would cost a scan of the whole file, so the hint names the file
//! size instead.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use etch_model::ToolSpec;
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::fsutil::{self, OpenError, looks_binary};
use crate::limits::{READ_MAX_BYTES, READ_MAX_LINES};
use crate::paths;
use crate::protect::{Protected, StoreIds};
use crate::{args, cancel, read_image};

/// Files up to this size get an exact total line count in hints.
pub const COUNT_LIMIT_BYTES: u64 = 64 * 1024 * 1024;

/// Most files in one `files` batch.
const MAX_BATCH: usize = 20;

/// One range to read.
#[derive(Debug, Deserialize)]
struct Range {
    /// File path.
    path: String,
    /// 1-indexed first line.
    offset: Option<usize>,
    /// Most lines.
    limit: Option<usize>,
}

/// Arguments of `read`.
#[derive(Debug, Deserialize)]
struct ReadArgs {
    /// Single file path.
    path: Option<String>,
    /// 1-indexed first line.
    offset: Option<usize>,
    /// Most lines.
    limit: Option<usize>,
    /// Independent ranges; wins over `path` when non-empty.
    #[serde(default)]
    files: Vec<Range>,
}

/// The `read` tool.
#[derive(Debug)]
pub struct ReadTool {
    /// Model-facing spec.
    spec: ToolSpec,
    /// etch's credential store, never read.
    protected: Protected,
    /// The long edge images are resized to (`[tools.read]
    /// image_max_edge`).
    image_max_edge: u32,
}

impl Default for ReadTool {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadTool {
    /// Builds the tool.
    pub fn new() -> Self {
        let range = json!({
            "path": {"type": "string", "description": "File to read"},
            "offset": {"type": "integer", "minimum": 1, "description": "First line, 1-indexed"},
            "limit": {"type": "integer", "minimum": 1, "description": "Most lines"}
        });
        let mut props = range.as_object().cloned().unwrap_or_default();
        props.insert(
            "files".into(),
            json!({
                "type": "array",
                "maxItems": MAX_BATCH,
                "description": "Several ranges at once; wins over path",
                "items": {"type": "object", "properties": range, "required": ["path"], "additionalProperties": false}
            }),
        );
        Self {
            spec: args::spec(
                "read",
                "Read a text file with numbered lines (cat -n style). Shows at most 2000 lines or 50KB; \
                 use offset and limit for more, as the continuation hint says. Use files to read several \
                 ranges in one call. A PNG, JPEG, GIF or WebP image is returned as the image itself.",
                json!({"type": "object", "properties": props, "additionalProperties": false}),
            ),
            protected: Protected::from_env(),
            image_max_edge: etch_image::DEFAULT_MAX_EDGE,
        }
    }

    /// Resizes images so their long edge is at most `edge` pixels.
    #[must_use]
    pub fn with_image_max_edge(mut self, edge: u32) -> Self {
        self.image_max_edge = edge;
        self
    }

    /// Protects `protected`'s credential store instead of `$HOME`'s.
    #[must_use]
    pub fn with_protected(mut self, protected: Protected) -> Self {
        self.protected = protected;
        self
    }
}

/// Whole files at least this long end with their line count.
const WHOLE_FILE_NOTE_LINES: usize = 20;

/// Formats a byte size like Pi: `512B`, `50.0KB`, `3.2MB`.
#[allow(clippy::cast_precision_loss)]
fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// Counts the lines of the rest of `reader` (a final line without newline
/// counts too); stops with [`cancel::ABORTED`] when `cancel` fires.
fn count_rest(reader: &mut impl BufRead, cancel: &CancellationToken) -> std::io::Result<usize> {
    let mut count = 0;
    let mut last = b'\n';
    let mut chunks = 0usize;
    loop {
        chunks += 1;
        if chunks.is_multiple_of(64) && cancel.is_cancelled() {
            return Err(std::io::Error::other(cancel::ABORTED));
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        count += memchr::memchr_iter(b'\n', buf).count();
        last = buf[buf.len() - 1];
        let n = buf.len();
        reader.consume(n);
    }
    Ok(count + usize::from(last != b'\n'))
}

/// What one `read` call works with besides its ranges.
#[derive(Debug, Clone, Copy)]
struct Call<'a> {
    /// Working directory paths resolve against.
    cwd: &'a Path,
    /// Fires when the run is cancelled.
    cancel: &'a CancellationToken,
    /// Where etch's credential store is.
    protected: &'a Protected,
    /// The long edge images are resized to.
    image_max_edge: u32,
    /// The store's files, as this call found them.
    store: &'a StoreIds,
}

/// What one range read gave: text, and the image when the file is one.
#[derive(Debug)]
struct Got {
    /// The text the model reads.
    text: String,
    /// The image, for an image file.
    image: Option<etch_model::Image>,
}

impl From<String> for Got {
    fn from(text: String) -> Self {
        Self { text, image: None }
    }
}

/// Reads one range of one file, as the model sees it.
fn read_range(
    call: Call<'_>,
    raw: &str,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<Got, ToolError> {
    let Call {
        cwd,
        cancel,
        protected,
        store,
        image_max_edge,
    } = call;
    let path = paths::resolve(cwd, raw);
    protected.check_read(raw, &path, "read")?;
    let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::new(crate::nearby::missing(
            cwd,
            raw,
            "use ls or find to see which files there are",
        )),
        _ => ToolError::new(format!("cannot read {raw}: {e}")),
    })?;
    if meta.is_dir() {
        return Err(ToolError::new(format!("{raw} is a directory; use ls")));
    }
    if !meta.is_file() {
        return Err(not_regular(raw, meta.file_type()));
    }
    let (file, opened) = fsutil::open_regular(&path).map_err(|e| match e {
        OpenError::Io(e) => ToolError::new(format!("cannot read {raw}: {e}")),
        OpenError::NotRegular(kind) => not_regular(raw, kind),
    })?;
    // A hard link to a credential file, or one swapped in since the path
    // was checked, is still the credential file.
    if store.is_store_file(&opened) {
        return Err(store.refusal(raw, "read"));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let io = |e: std::io::Error| {
        if cancel.is_cancelled() {
            cancel::aborted()
        } else {
            ToolError::new(format!("cannot read {raw}: {e}"))
        }
    };
    let head = reader.fill_buf().map_err(io)?;
    // The bytes tell an image; a name that says image but bytes that do
    // not is refused there, saying what the file starts with.
    if etch_model::MediaType::sniff(head).is_some() || read_image::has_image_extension(&path) {
        // Nothing was consumed: the file reads again from its start.
        use std::io::Seek as _;
        reader.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
        let file = reader.into_inner();
        let (text, image) = read_image::read(raw, file, meta.len(), image_max_edge, cancel)?;
        return Ok(Got {
            text,
            image: Some(image),
        });
    }
    read_text(reader, raw, (offset, limit), meta.len(), cancel).map(Got::from)
}

/// Reads one range of a text file (anything but an image) as numbered
/// lines.
fn read_text(
    mut reader: BufReader<std::fs::File>,
    raw: &str,
    (offset, limit): (Option<usize>, Option<usize>),
    size: u64,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let io = |e: std::io::Error| {
        if cancel.is_cancelled() {
            cancel::aborted()
        } else {
            ToolError::new(format!("cannot read {raw}: {e}"))
        }
    };
    if looks_binary(reader.fill_buf().map_err(io)?) {
        return Err(ToolError::new(format!(
            "{raw} looks like a binary file (it contains NUL bytes); read shows text files only"
        )));
    }
    let start = offset.unwrap_or(1);
    // Skip to the first wanted line without keeping anything.
    let mut line_no = 1;
    let mut skip = Vec::new();
    while line_no < start {
        if line_no.is_multiple_of(cancel::CHECK_EVERY) && cancel.is_cancelled() {
            return Err(cancel::aborted());
        }
        skip.clear();
        if reader.read_until(b'\n', &mut skip).map_err(io)? == 0 {
            break;
        }
        line_no += 1;
    }
    let mut out = String::new();
    let mut shown = 0usize;
    let mut buf = Vec::new();
    let max_lines = limit.map_or(READ_MAX_LINES, |l| l.min(READ_MAX_LINES));
    let mut hit_cap = false;
    // A line consumed from the file but not shown (it did not fit).
    let mut unshown = 0;
    loop {
        buf.clear();
        // Never hold more than the byte budget of one line: a 10 MB line
        // is detected without reading it all.
        let n = (&mut reader)
            .take((READ_MAX_BYTES + 1) as u64)
            .read_until(b'\n', &mut buf)
            .map_err(io)?;
        if n == 0 {
            break;
        }
        let complete = buf.last() == Some(&b'\n');
        let mut content: &[u8] = &buf;
        if complete {
            content = &content[..content.len() - 1];
        }
        if content.last() == Some(&b'\r') {
            content = &content[..content.len() - 1];
        }
        let partial = !complete && n > READ_MAX_BYTES;
        let rendered = if partial {
            String::new()
        } else {
            format!(
                "{:>6}\t{}\n",
                start + shown,
                String::from_utf8_lossy(content)
            )
        };
        if partial || out.len() + rendered.len() > READ_MAX_BYTES {
            let size = if partial {
                line_size(&mut reader, n).map_err(io)?
            } else {
                content.len()
            };
            if shown == 0 {
                return Ok(format!(
                    "[Line {start} is {}, exceeds {} limit. Use bash: sed -n '{start}p' {raw} | head -c {READ_MAX_BYTES}]",
                    format_size(size),
                    format_size(READ_MAX_BYTES)
                ));
            }
            if partial {
                skip_line(&mut reader).map_err(io)?;
            }
            unshown = 1;
            hit_cap = true;
            break;
        }
        out.push_str(&rendered);
        shown += 1;
        if shown == max_lines {
            hit_cap = limit.is_none_or(|l| l > READ_MAX_LINES);
            break;
        }
    }
    if shown == 0 {
        let total = line_no - 1;
        if start > 1 && start > total {
            return Err(ToolError::new(format!(
                "Offset {start} is beyond end of file ({total} lines total)"
            )));
        }
        return Ok("(empty file)".to_string());
    }
    let last = start + shown - 1;
    let has_more = unshown > 0 || !reader.fill_buf().map_err(io)?.is_empty();
    if !has_more {
        let mut text = out.trim_end_matches('\n').to_string();
        // A whole file of some length says how long it is: small models
        // asked "how many lines" read it again and again instead of looking
        // at the last line number.
        if start == 1 && last >= WHOLE_FILE_NOTE_LINES {
            let _ = write!(text, "\n\n[End of file: {last} lines.]");
        }
        return Ok(text);
    }
    let total = if size <= COUNT_LIMIT_BYTES {
        Some(last + unshown + count_rest(&mut reader, cancel).map_err(io)?)
    } else {
        None
    };
    let next = last + 1;
    let mut text = out.trim_end_matches('\n').to_string();
    let _ = match (hit_cap, total) {
        (true, Some(total)) => write!(
            text,
            "\n\n[Showing lines {start}-{last} of {total}. Use offset={next} to continue.]"
        ),
        (true, None) => write!(
            text,
            "\n\n[Showing lines {start}-{last} of a {} file. Use offset={next} to continue.]",
            format_size(usize::try_from(size).unwrap_or(usize::MAX))
        ),
        (false, Some(total)) => write!(
            text,
            "\n\n[{} more lines in file. Use offset={next} to continue.]",
            total - last
        ),
        (false, None) => write!(
            text,
            "\n\n[More lines in file. Use offset={next} to continue.]"
        ),
    };
    Ok(text)
}

/// The refusal of a path that is not a regular file (a FIFO, a socket, a
/// device): reading it could wait forever.
fn not_regular(raw: &str, kind: std::fs::FileType) -> ToolError {
    fsutil::not_regular(raw, kind, "read", "reads only regular files")
}

/// Measures the full byte length of a line whose first `seen` bytes were
/// already consumed, without holding it in memory. Leaves the reader at the
/// line's newline (not consumed).
fn line_size(reader: &mut impl BufRead, seen: usize) -> std::io::Result<usize> {
    let mut size = seen;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(size);
        }
        if let Some(i) = memchr::memchr(b'\n', buf) {
            reader.consume(i);
            return Ok(size + i);
        }
        size += buf.len();
        let n = buf.len();
        reader.consume(n);
    }
}

/// Consumes the rest of the current line, including its newline.
fn skip_line(reader: &mut impl BufRead) -> std::io::Result<()> {
    let buf = reader.fill_buf()?;
    if buf.first() == Some(&b'\n') {
        reader.consume(1);
    }
    Ok(())
}

impl Tool for ReadTool {
    fn read_only(&self) -> bool {
        true
    }

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self, args: &Value, cwd: &Path) -> Access {
        let mut paths_read = Vec::new();
        if let Some(files) = args.get("files").and_then(Value::as_array) {
            for f in files {
                if let Some(p) = f.get("path").and_then(Value::as_str) {
                    paths_read.push(paths::resolve(cwd, p));
                }
            }
        }
        if paths_read.is_empty()
            && let Some(p) = args.get("path").and_then(Value::as_str)
        {
            paths_read.push(paths::resolve(cwd, p));
        }
        Access::Read(paths_read)
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let a: ReadArgs = args::parse(&self.spec, args)?;
            let cwd = ctx.cwd.clone();
            let cancel = ctx.cancel.clone();
            let protected = self.protected.clone();
            let image_max_edge = self.image_max_edge;
            cancel::blocking(&ctx.cancel, "read", move || {
                let store = protected.store_ids();
                run(
                    Call {
                        cwd: &cwd,
                        cancel: &cancel,
                        protected: &protected,
                        store: &store,
                        image_max_edge,
                    },
                    a,
                )
            })
            .await
        })
    }
}

/// Runs a single read or a batch.
fn run(call: Call<'_>, a: ReadArgs) -> Result<ToolOutput, ToolError> {
    if a.files.is_empty() {
        let Some(path) = a.path else {
            return Err(ToolError::new("read needs a path (or a files array)"));
        };
        let got = read_range(call, &path, a.offset, a.limit)?;
        let output = ToolOutput::text(got.text);
        return Ok(match got.image {
            Some(image) => output.with_image(image),
            None => output,
        });
    }
    let mut sections = Vec::with_capacity(a.files.len());
    let mut images = Vec::new();
    let mut failures = 0;
    for range in &a.files {
        if call.cancel.is_cancelled() {
            return Err(cancel::aborted());
        }
        let body = match read_range(call, &range.path, range.offset, range.limit) {
            Ok(got) => {
                // The images follow the text in the order of their files.
                images.extend(got.image);
                got.text
            }
            Err(err) => {
                failures += 1;
                format!("[error: {err}]")
            }
        };
        sections.push(format!("==> {} <==\n{body}", range.path));
    }
    let text = sections.join("\n\n");
    if failures == a.files.len() {
        return Err(ToolError::new(text));
    }
    let mut output = ToolOutput::text(text);
    output.images = images;
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads one range in `cwd` with a token that never fires.
    fn read_range(
        cwd: &Path,
        raw: &str,
        offset: Option<usize>,
        limit: Option<usize>,
    ) -> Result<String, ToolError> {
        let cancel = CancellationToken::new();
        super::read_range(
            Call {
                cwd,
                cancel: &cancel,
                protected: &Protected::new(None),
                store: &StoreIds::default(),
                image_max_edge: etch_image::DEFAULT_MAX_EDGE,
            },
            raw,
            offset,
            limit,
        )
        .map(|got| got.text)
    }

    /// Writes a file of numbered lines `line 1`..`line n`.
    fn numbered(dir: &Path, name: &str, n: usize) {
        let text: String = (1..=n).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.join(name), text).unwrap();
    }

    /// C15: cat -n numbering, offset/limit, and the early-limit hint.
    /// A whole file of 20 lines or more ends with its line count; a
    /// shorter one, or a read from an offset, does not.
    #[test]
    fn whole_files_say_how_long_they_are() {
        let d = tempfile::tempdir().unwrap();
        let lines: String = (1..=42).map(|n| format!("row {n}\n")).collect();
        std::fs::write(d.path().join("data.csv"), lines).unwrap();
        let out = read_range(d.path(), "data.csv", None, None).unwrap();
        assert!(
            out.ends_with("    42\trow 42\n\n[End of file: 42 lines.]"),
            "{out}"
        );
        let out = read_range(d.path(), "data.csv", Some(40), None).unwrap();
        assert!(out.ends_with("    42\trow 42"), "{out}");
        std::fs::write(d.path().join("short"), "a\nb\n").unwrap();
        assert_eq!(
            read_range(d.path(), "short", None, None).unwrap(),
            "     1\ta\n     2\tb"
        );
    }

    #[test]
    fn numbering_offset_and_limit_hint() {
        let d = tempfile::tempdir().unwrap();
        numbered(d.path(), "f", 10);
        assert_eq!(
            read_range(d.path(), "f", Some(9), None).unwrap(),
            "     9\tline 9\n    10\tline 10"
        );
        assert_eq!(
            read_range(d.path(), "f", Some(2), Some(2)).unwrap(),
            "     2\tline 2\n     3\tline 3\n\n[7 more lines in file. Use offset=4 to continue.]"
        );
    }

    /// C15: the 2000-line cap gives the continuation hint with the total.
    #[test]
    fn line_cap_hint() {
        let d = tempfile::tempdir().unwrap();
        numbered(d.path(), "f", 2500);
        let out = read_range(d.path(), "f", None, None).unwrap();
        assert!(
            out.ends_with(
                "  2000\tline 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"
            ),
            "{}",
            &out[out.len() - 200..]
        );
    }

    /// A long line that overflows the byte budget after earlier lines is
    /// counted, not lost, in the hint's total.
    #[test]
    fn overflowing_long_line_is_counted() {
        let d = tempfile::tempdir().unwrap();
        let text = format!("short\n{}\nlast\n", "z".repeat(60_000));
        std::fs::write(d.path().join("f"), text).unwrap();
        assert_eq!(
            read_range(d.path(), "f", None, None).unwrap(),
            "     1\tshort\n\n[Showing lines 1-1 of 3. Use offset=2 to continue.]"
        );
    }

    /// C15: the 51200-byte cap stops early with the same hint.
    #[test]
    fn byte_cap_hint() {
        let d = tempfile::tempdir().unwrap();
        let line = "x".repeat(1000);
        std::fs::write(d.path().join("f"), format!("{line}\n").repeat(100)).unwrap();
        let out = read_range(d.path(), "f", None, None).unwrap();
        assert!(out.len() <= READ_MAX_BYTES + 100);
        assert!(
            out.ends_with("[Showing lines 1-50 of 100. Use offset=51 to continue.]"),
            "{}",
            &out[out.len() - 100..]
        );
    }

    /// P-TOOL-07: exact beyond-EOF error.
    #[test]
    fn offset_beyond_eof() {
        let d = tempfile::tempdir().unwrap();
        numbered(d.path(), "f", 3);
        assert_eq!(
            read_range(d.path(), "f", Some(5), None).unwrap_err().0,
            "Offset 5 is beyond end of file (3 lines total)"
        );
    }

    /// P-TOOL-09: a 10 MB single line gets the sed/head advice, without
    /// holding the line in memory.
    #[test]
    fn huge_single_line() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("big"), "y".repeat(10 * 1024 * 1024)).unwrap();
        assert_eq!(
            read_range(d.path(), "big", None, None).unwrap(),
            "[Line 1 is 10.0MB, exceeds 50.0KB limit. Use bash: sed -n '1p' big | head -c 51200]"
        );
    }

    /// C15 and bad input: directories, images, missing, binary and
    /// unreadable files are errors; invalid UTF-8 is shown lossily.
    #[test]
    fn bad_inputs() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("dir")).unwrap();
        assert_eq!(
            read_range(d.path(), "dir", None, None).unwrap_err().0,
            "dir is a directory; use ls"
        );
        std::fs::write(d.path().join("a.PNG"), "x").unwrap();
        assert_eq!(
            read_range(d.path(), "a.PNG", None, None).unwrap_err().0,
            "cannot read a.PNG as an image: it is not a PNG, JPEG, GIF or WebP image (its first \
             bytes are \"x\", text); only those formats can be shown to a model"
        );
        assert_eq!(
            read_range(d.path(), "nope", None, None).unwrap_err().0,
            "nope does not exist; use ls or find to see which files there are"
        );
        std::fs::write(d.path().join("bin"), b"ab\0cd").unwrap();
        assert!(
            read_range(d.path(), "bin", None, None)
                .unwrap_err()
                .0
                .contains("binary")
        );
        std::fs::write(d.path().join("latin1"), b"caf\xe9\n").unwrap();
        assert_eq!(
            read_range(d.path(), "latin1", None, None).unwrap(),
            "     1\tcaf\u{fffd}"
        );
        std::fs::write(d.path().join("empty"), "").unwrap();
        assert_eq!(
            read_range(d.path(), "empty", None, None).unwrap(),
            "(empty file)"
        );
        std::fs::write(d.path().join("crlf"), "a\r\nb\r\n").unwrap();
        assert_eq!(
            read_range(d.path(), "crlf", None, None).unwrap(),
            "     1\ta\n     2\tb"
        );
    }

    /// A symlink loop is an error naming the path, not a hang.
    #[test]
    fn symlink_loop() {
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(d.path().join("b"), d.path().join("a")).unwrap();
        std::os::unix::fs::symlink(d.path().join("a"), d.path().join("b")).unwrap();
        let err = read_range(d.path(), "a", None, None).unwrap_err().0;
        assert!(err.starts_with("cannot read a:"), "{err}");
    }

    /// A FIFO, a socket and a character device are refused by name, at
    /// once, without waiting for a writer or reading forever; in a batch
    /// the refusal is one section.
    #[test]
    fn special_files_are_refused() {
        use crate::testutil::mkfifo;
        let d = tempfile::tempdir().unwrap();
        mkfifo(&d.path().join("pipe"));
        assert_eq!(
            read_range(d.path(), "pipe", None, None).unwrap_err().0,
            "pipe is a FIFO (named pipe), not a regular file; read reads only regular files \
             (reading a pipe or device could wait forever)"
        );
        let err = read_range(d.path(), "/dev/zero", None, None).unwrap_err().0;
        assert!(
            err.starts_with("/dev/zero is a character device, not a regular file;"),
            "{err}"
        );
        let _socket = std::os::unix::net::UnixListener::bind(d.path().join("sock")).unwrap();
        let err = read_range(d.path(), "sock", None, None).unwrap_err().0;
        assert!(
            err.starts_with("sock is a socket, not a regular file;"),
            "{err}"
        );
        // A symlink to a FIFO is the FIFO.
        std::os::unix::fs::symlink(d.path().join("pipe"), d.path().join("link")).unwrap();
        let err = read_range(d.path(), "link", None, None).unwrap_err().0;
        assert!(err.starts_with("link is a FIFO"), "{err}");
        numbered(d.path(), "a", 1);
        let cancel = CancellationToken::new();
        let call = Call {
            cwd: d.path(),
            cancel: &cancel,
            protected: &Protected::new(None),
            store: &StoreIds::default(),
            image_max_edge: etch_image::DEFAULT_MAX_EDGE,
        };
        let files = vec![
            Range {
                path: "pipe".into(),
                offset: None,
                limit: None,
            },
            Range {
                path: "a".into(),
                offset: None,
                limit: None,
            },
        ];
        let out = run(
            call,
            ReadArgs {
                path: None,
                offset: None,
                limit: None,
                files,
            },
        )
        .unwrap()
        .text;
        assert!(
            out.starts_with("==> pipe <==\n[error: pipe is a FIFO"),
            "{out}"
        );
        assert!(out.ends_with("==> a <==\n     1\tline 1"), "{out}");
    }

    /// A FIFO put in place of the file between the type check and the open
    /// cannot block the open: it is opened without waiting and refused.
    #[test]
    fn open_regular_never_waits_on_a_fifo() {
        let d = tempfile::tempdir().unwrap();
        let pipe = d.path().join("pipe");
        crate::testutil::mkfifo(&pipe);
        let Err(OpenError::NotRegular(kind)) = fsutil::open_regular(&pipe) else {
            panic!("a FIFO was opened as a regular file");
        };
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind), "{kind:?}");
    }

    /// A cancelled call reads nothing and answers `Operation aborted`; a
    /// read skipping to a far offset stops when cancelled.
    #[tokio::test]
    async fn cancellation() {
        let d = tempfile::tempdir().unwrap();
        numbered(d.path(), "f", 3 * cancel::CHECK_EVERY);
        let ctx = crate::testutil::ctx(d.path());
        ctx.cancel.cancel();
        let err = ReadTool::new()
            .execute(json!({"path": "f"}), ctx.clone())
            .await
            .unwrap_err();
        assert_eq!(err.0, "Operation aborted");
        let call = Call {
            cwd: d.path(),
            cancel: &ctx.cancel,
            protected: &Protected::new(None),
            store: &StoreIds::default(),
            image_max_edge: etch_image::DEFAULT_MAX_EDGE,
        };
        assert_eq!(
            super::read_range(call, "f", Some(3 * cancel::CHECK_EVERY), None)
                .unwrap_err()
                .0,
            "Operation aborted"
        );
    }

    /// Unreadable files (mode 000) are errors, unless running as root.
    #[test]
    fn unreadable_file() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("secret");
        std::fs::write(&p, "x").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
        if std::fs::read(&p).is_err() {
            assert!(
                read_range(d.path(), "secret", None, None)
                    .unwrap_err()
                    .0
                    .starts_with("cannot read secret:")
            );
        }
    }

    /// E-TOOL-05: batches are sectioned per file; one failure does not fail
    /// the batch; files wins over path.
    #[test]
    fn batches() {
        let d = tempfile::tempdir().unwrap();
        numbered(d.path(), "a", 2);
        let cancel = CancellationToken::new();
        let call = Call {
            cwd: d.path(),
            cancel: &cancel,
            protected: &Protected::new(None),
            store: &StoreIds::default(),
            image_max_edge: etch_image::DEFAULT_MAX_EDGE,
        };
        let out = run(
            call,
            ReadArgs {
                path: Some("ignored".into()),
                offset: None,
                limit: None,
                files: vec![
                    Range {
                        path: "a".into(),
                        offset: Some(2),
                        limit: None,
                    },
                    Range {
                        path: "missing".into(),
                        offset: None,
                        limit: None,
                    },
                ],
            },
        )
        .unwrap()
        .text;
        assert_eq!(
            out,
            "==> a <==\n     2\tline 2\n\n==> missing <==\n[error: missing does not exist; use ls or find to see which files there are]"
        );
    }

    /// Reads `raw` in `cwd` as a whole call: text and images.
    fn read_call(cwd: &Path, args: Value) -> Result<ToolOutput, ToolError> {
        let cancel = CancellationToken::new();
        let call = Call {
            cwd,
            cancel: &cancel,
            protected: &Protected::new(None),
            store: &StoreIds::default(),
            image_max_edge: etch_image::DEFAULT_MAX_EDGE,
        };
        run(call, serde_json::from_value(args).unwrap())
    }

    /// Each of the four formats is read as an image, told by its bytes:
    /// a wrong extension still works.
    #[test]
    fn images_are_read_as_images() {
        use etch_model::MediaType;
        let d = tempfile::tempdir().unwrap();
        for (name, media_type) in [
            ("shot.png", MediaType::Png),
            ("photo.jpeg", MediaType::Jpeg),
            ("anim.gif", MediaType::Gif),
            ("pic.webp", MediaType::Webp),
            ("really-a-png.txt", MediaType::Png),
        ] {
            let bytes = etch_image::sample(64, 32, media_type).unwrap();
            std::fs::write(d.path().join(name), &bytes).unwrap();
            let out = read_call(d.path(), json!({"path": name})).unwrap();
            assert_eq!(
                out.text,
                format!("Read image file [{media_type}], 64x32"),
                "{name}"
            );
            assert_eq!(out.images.len(), 1);
            assert_eq!(out.images[0].media_type, media_type);
            assert_eq!(
                out.images[0].data(),
                Some(bytes.as_slice()),
                "{name}: bytes kept"
            );
        }
        // A batch returns the images of its files in order.
        let out = read_call(
            d.path(),
            json!({"files": [{"path": "shot.png"}, {"path": "photo.jpeg"}]}),
        )
        .unwrap();
        assert!(
            out.text
                .contains("==> shot.png <==\nRead image file [image/png], 64x32"),
            "{}",
            out.text
        );
        assert_eq!(out.images.len(), 2);
        assert_eq!(out.images[1].media_type, MediaType::Jpeg);
    }

    /// A 6000x4000 photograph comes back resized to the long edge and
    /// under the size cap, and says so.
    #[test]
    fn large_images_are_resized() {
        let d = tempfile::tempdir().unwrap();
        let bytes = etch_image::sample(6000, 4000, etch_model::MediaType::Jpeg).unwrap();
        std::fs::write(d.path().join("big.jpg"), bytes).unwrap();
        let out = read_call(d.path(), json!({"path": "big.jpg"})).unwrap();
        assert_eq!(
            out.text,
            "Read image file [image/jpeg], 6000x4000 (resized to 2000x1333)"
        );
        let image = &out.images[0];
        assert_eq!((image.width, image.height), (2000, 1333));
        assert!(image.base64_len() <= etch_image::MAX_BASE64);
    }

    /// A truncated image is refused saying so, never sent half.
    #[test]
    fn truncated_images_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let mut bytes = etch_image::sample(300, 200, etch_model::MediaType::Png).unwrap();
        bytes.truncate(bytes.len() / 2);
        std::fs::write(d.path().join("cut.png"), bytes).unwrap();
        let err = read_call(d.path(), json!({"path": "cut.png"}))
            .unwrap_err()
            .0;
        assert!(
            err.starts_with(
                "cannot read cut.png as an image: the image/png data is damaged or truncated"
            ),
            "{err}"
        );
    }

    /// Limits of 0 and negative offsets are schema errors.
    #[tokio::test]
    async fn zero_and_negative_rejected() {
        let tool = ReadTool::new();
        let ctx = crate::testutil::ctx(Path::new("/"));
        for bad in [
            json!({"path": "x", "limit": 0}),
            json!({"path": "x", "offset": -1}),
        ] {
            let err = tool.execute(bad, ctx.clone()).await.unwrap_err().0;
            assert!(
                err.starts_with("Validation failed for tool \"read\""),
                "{err}"
            );
        }
    }
}
