//! What one output stream of a `bash` command delivered (G10): its last
//! [`BASH_STREAM_MAX_BYTES`] in memory and, once it outgrew that, all of it
//! in a spill file in the session temp directory, written as it arrives, up
//! to `max_spill` bytes (`[tools.bash] max_spill_bytes`, E-CFG-25).
//!
//! A stream longer than that keeps its last `max_spill` bytes: the file is
//! written as a ring (byte `n` of the stream goes to offset `n %
//! max_spill`), so it never grows past the cap, and when the stream ends
//! the ring is rotated in place into stream order. Disk use stays at the
//! cap however much a command prints (a runaway `yes` used to fill the
//! disk), and the notice says how much of how much the file holds.
//!
//! It owns the kept tail, the spill file and its name, and the truncation
//! notice. It must not know where the bytes come from (pipes, processes) nor
//! how the notice is placed in the result text.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::limits::BASH_STREAM_MAX_BYTES;

/// Bytes moved at a time when the ring file is rotated into order.
const ROTATE_CHUNK: usize = 64 * 1024;

/// A byte count as the notice shows it: `512 bytes`, `1 KiB`, `64 MiB`,
/// `953.7 MiB`, `1.5 GiB`.
#[allow(clippy::cast_precision_loss)]
pub(super) fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let text = format!("{value:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {}", UNITS[unit])
}

/// Reverses the bytes of `file` in `start..end`, a chunk from each end at
/// a time.
fn reverse_range(file: &File, mut start: u64, mut end: u64) -> io::Result<()> {
    let mut left = vec![0u8; ROTATE_CHUNK];
    let mut right = vec![0u8; ROTATE_CHUNK];
    loop {
        let half = (end - start) / 2;
        let n = usize::try_from(half).map_or(ROTATE_CHUNK, |h| h.min(ROTATE_CHUNK));
        if n == 0 {
            return Ok(());
        }
        let step = n as u64;
        file.read_exact_at(&mut left[..n], start)?;
        file.read_exact_at(&mut right[..n], end - step)?;
        left[..n].reverse();
        right[..n].reverse();
        file.write_all_at(&right[..n], start)?;
        file.write_all_at(&left[..n], end - step)?;
        start += step;
        end -= step;
    }
}

/// Rotates the first `len` bytes of `file` left by `by`, in place: what
/// was at `by` comes first (three reversals, no second copy on disk).
fn rotate_left(file: &File, by: u64, len: u64) -> io::Result<()> {
    reverse_range(file, 0, by)?;
    reverse_range(file, by, len)?;
    reverse_range(file, 0, len)
}

/// Drops the UTF-8 continuation bytes (at most three) a cut left at the
/// start of `bytes`, when `cut` says the slice does not start the stream.
pub(super) fn skip_partial_char(bytes: &[u8], cut: bool) -> &[u8] {
    if !cut {
        return bytes;
    }
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count();
    &bytes[skip..]
}

/// Where a stream's full output goes when it outgrows the kept tail:
/// `<temp_dir>/bash-<call id>-<stream>.log`, the id reduced to safe
/// characters.
pub(super) fn spill_path(temp_dir: &Path, call_id: &str, stream: &str) -> PathBuf {
    let mut id: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if id.is_empty() {
        id.push_str("call");
    }
    temp_dir.join(format!("bash-{id}-{stream}.log"))
}

/// What one output stream delivered: its tail in memory and, once it
/// outgrew the tail, everything in a spill file written as it arrives.
#[derive(Debug)]
pub(super) struct StreamCapture {
    /// `stdout` or `stderr`, for the notice.
    name: &'static str,
    /// The last bytes of the stream: at least the last
    /// [`BASH_STREAM_MAX_BYTES`], at most twice that.
    tail: Vec<u8>,
    /// Bytes delivered in all.
    total: u64,
    /// Where the full output goes once needed.
    spill_path: PathBuf,
    /// The open spill file while writing to it works.
    spill: Option<File>,
    /// Why the spill file could not be (fully) written, if it could not.
    spill_error: Option<String>,
    /// Most bytes the spill file holds (at least 1).
    max_spill: u64,
}

impl StreamCapture {
    /// An empty capture for the stream `name`, spilling at most
    /// `max_spill` bytes (the last ones) to `spill_path`.
    pub(super) fn new(name: &'static str, spill_path: PathBuf, max_spill: u64) -> Self {
        Self {
            name,
            tail: Vec::new(),
            total: 0,
            spill_path,
            spill: None,
            spill_error: None,
            max_spill: max_spill.max(1),
        }
    }

    /// Whether the stream outgrew the kept tail.
    fn truncated(&self) -> bool {
        self.total > u64::try_from(BASH_STREAM_MAX_BYTES).unwrap_or(u64::MAX)
    }

    /// Adds a chunk of output. The first time the stream outgrows the tail
    /// the spill file is created and gets everything so far (the tail still
    /// holds all of it then); later chunks are written as they arrive, in
    /// the ring once the cap is reached. Spill writes are small and local,
    /// so they are done synchronously.
    pub(super) fn push(&mut self, chunk: &[u8]) {
        let was_truncated = self.truncated();
        let at = self.total;
        self.total = self
            .total
            .saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
        if !was_truncated && self.truncated() {
            match self.open_spill() {
                Ok(file) => self.spill = Some(file),
                Err(e) => self.spill_error = Some(e.to_string()),
            }
        }
        if let Some(file) = &self.spill
            && let Err(e) = ring_write(file, at, chunk, self.max_spill)
        {
            self.spill_error = Some(e.to_string());
            self.spill = None;
        }
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > 2 * BASH_STREAM_MAX_BYTES {
            let excess = self.tail.len() - BASH_STREAM_MAX_BYTES;
            self.tail.drain(..excess);
        }
    }

    /// Creates the spill file (and its directory) holding the output so
    /// far, which the tail holds whole at this point (the chunk being
    /// pushed is not in it yet).
    fn open_spill(&self) -> io::Result<File> {
        if let Some(dir) = self.spill_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&self.spill_path)?;
        ring_write(&file, 0, &self.tail, self.max_spill)?;
        Ok(file)
    }

    /// Whether the stream was longer than the spill file may be, so the
    /// file holds only its last `max_spill` bytes.
    fn spill_capped(&self) -> bool {
        self.total > self.max_spill
    }

    /// Puts the spill file in stream order once the stream has ended: a
    /// ring that wrapped is rotated in place. Idempotent; a failure is
    /// reported by the notice like a failed write.
    pub(super) fn finish(&mut self) {
        let Some(file) = self.spill.take() else {
            return;
        };
        let start = self.total % self.max_spill;
        let rotated = if self.spill_capped() && start != 0 {
            rotate_left(&file, start, self.max_spill)
        } else {
            Ok(())
        };
        if let Err(e) = rotated {
            self.spill_error = Some(e.to_string());
        }
    }

    /// The kept text: the last [`BASH_STREAM_MAX_BYTES`] decoded lossily,
    /// starting on a character boundary, and how many bytes it kept.
    pub(super) fn kept(&self) -> (String, usize) {
        let start = self.tail.len().saturating_sub(BASH_STREAM_MAX_BYTES);
        let bytes = skip_partial_char(&self.tail[start..], self.truncated());
        (String::from_utf8_lossy(bytes).into_owned(), bytes.len())
    }

    /// The truncation notice, when the stream outgrew the tail.
    pub(super) fn notice(&self, kept: usize) -> Option<String> {
        if !self.truncated() {
            return None;
        }
        let head = format!(
            "[{} truncated: kept last {kept} of {} bytes.",
            self.name, self.total
        );
        Some(match &self.spill_error {
            None if self.spill_capped() => format!(
                "{head} Full output: {} (last {} of {})]",
                self.spill_path.display(),
                format_bytes(self.max_spill),
                format_bytes(self.total)
            ),
            None => format!("{head} Full output: {}]", self.spill_path.display()),
            Some(e) => format!("{head} Full output could not be saved: {e}]"),
        })
    }
}

/// Writes `chunk`, which starts at byte `at` of the stream, into the ring
/// file of `cap` bytes: byte `n` of the stream goes to offset `n % cap`,
/// and only a chunk's last `cap` bytes can survive, so only those are
/// written.
fn ring_write(file: &File, at: u64, chunk: &[u8], cap: u64) -> io::Result<()> {
    let len = chunk.len() as u64;
    let skip = len.saturating_sub(cap);
    let mut pos = at + skip;
    let mut rest = &chunk[usize::try_from(skip).unwrap_or(chunk.len())..];
    while !rest.is_empty() {
        let offset = pos % cap;
        let room = usize::try_from(cap - offset).unwrap_or(usize::MAX);
        let n = room.min(rest.len());
        file.write_all_at(&rest[..n], offset)?;
        pos += n as u64;
        rest = &rest[n..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bash::BashTool;
    use crate::bash::testutil::ctx;
    use etch_tool::Tool;
    use serde_json::json;
    use tempfile::TempDir;

    /// G10: a long stdout keeps its last 65536 bytes, with a notice pointing
    /// at a file holding all of it.
    #[tokio::test]
    async fn stdout_truncation_spills_full_output() {
        let dir = TempDir::new().unwrap();
        let out = BashTool::new(false)
            .execute(
                json!({"command": "head -c 200000 /dev/zero | tr '\\0' a"}),
                ctx(&dir),
            )
            .await
            .unwrap()
            .text;
        let path = dir.path().join("tmp").join("bash-call_1-stdout.log");
        let notice = format!(
            "[stdout truncated: kept last 65536 of 200000 bytes. Full output: {}]",
            path.display()
        );
        assert_eq!(out, format!("{notice}\n{}", "a".repeat(65_536)));
        assert_eq!(std::fs::read(&path).unwrap(), vec![b'a'; 200_000]);
    }

    /// G10: a long stderr is truncated the same way, inside its section.
    #[tokio::test]
    async fn stderr_truncation() {
        let dir = TempDir::new().unwrap();
        let out = BashTool::new(false)
            .execute(
                json!({"command": "echo hi; head -c 70000 /dev/zero | tr '\\0' b >&2"}),
                ctx(&dir),
            )
            .await
            .unwrap()
            .text;
        let path = dir.path().join("tmp").join("bash-call_1-stderr.log");
        let expected = format!(
            "hi\n--- stderr ---\n[stderr truncated: kept last 65536 of 70000 bytes. Full output: {}]\n{}",
            path.display(),
            "b".repeat(65_536)
        );
        assert_eq!(out, expected);
        assert_eq!(std::fs::read(&path).unwrap().len(), 70_000);
    }

    /// G10: the kept tail starts on a character boundary.
    #[test]
    fn tail_cut_on_char_boundary() {
        let dir = TempDir::new().unwrap();
        let mut capture = StreamCapture::new("stdout", dir.path().join("s.log"), 1 << 20);
        let text = format!("{}a", "é".repeat(40_000));
        for chunk in text.as_bytes().chunks(7000) {
            capture.push(chunk);
        }
        let (kept, n) = capture.kept();
        assert_eq!(n, 65_535);
        assert_eq!(kept, format!("{}a", "é".repeat(32_767)));
        assert!(
            capture
                .notice(n)
                .unwrap()
                .contains("kept last 65535 of 80001 bytes.")
        );
        assert_eq!(
            std::fs::read(dir.path().join("s.log")).unwrap(),
            text.as_bytes()
        );
    }

    /// E-CFG-25: a stream longer than the spill cap leaves a file of
    /// exactly the cap holding the stream's last bytes in order, whatever
    /// the chunk sizes (including chunks larger than the cap), and the
    /// notice says how much of how much it holds.
    #[test]
    fn spill_keeps_the_tail_within_the_cap() {
        let dir = TempDir::new().unwrap();
        let stream: Vec<u8> = (0..100_000u32)
            .map(|i| u8::try_from(i % 251).unwrap())
            .collect();
        for chunk_size in [1000, 1024, 4096, 7, 3000] {
            let path = dir.path().join(format!("s{chunk_size}.log"));
            let mut capture = StreamCapture::new("stdout", path.clone(), 1024);
            for chunk in stream.chunks(chunk_size) {
                capture.push(chunk);
                let on_disk = std::fs::metadata(&path).map_or(0, |m| m.len());
                assert!(
                    on_disk <= 1024,
                    "{on_disk} bytes with chunks of {chunk_size}"
                );
            }
            capture.finish();
            assert_eq!(
                std::fs::read(&path).unwrap(),
                &stream[stream.len() - 1024..],
                "chunks of {chunk_size}"
            );
            let (_, kept) = capture.kept();
            assert_eq!(
                capture.notice(kept).unwrap(),
                format!(
                    "[stdout truncated: kept last 65536 of 100000 bytes. Full output: {} \
                     (last 1 KiB of 97.7 KiB)]",
                    path.display()
                )
            );
        }
    }

    /// E-CFG-25: through the tool, a 1 KiB cap gives a 1 KiB file holding
    /// the end of the output, and the notice says so; under the cap the
    /// notice keeps its exact `Full output: {path}` wording.
    #[tokio::test]
    async fn capped_spill_through_the_tool() {
        let dir = TempDir::new().unwrap();
        let out = BashTool::new(false)
            .with_max_spill_bytes(1024)
            .execute(json!({"command": "seq 1 20000; echo last"}), ctx(&dir))
            .await
            .unwrap()
            .text;
        let path = dir.path().join("tmp").join("bash-call_1-stdout.log");
        let notice = format!(
            "[stdout truncated: kept last 65536 of 108899 bytes. Full output: {} \
             (last 1 KiB of 106.3 KiB)]",
            path.display()
        );
        assert!(out.starts_with(&notice), "{}", &out[..300]);
        let saved = std::fs::read_to_string(&path).unwrap();
        assert_eq!(saved.len(), 1024);
        assert!(saved.ends_with("19999\n20000\nlast\n"), "{saved}");
    }

    /// Sizes read as a person would say them.
    #[test]
    fn sizes() {
        assert_eq!(format_bytes(512), "512 bytes");
        assert_eq!(format_bytes(1024), "1 KiB");
        assert_eq!(format_bytes(67_108_864), "64 MiB");
        assert_eq!(format_bytes(1_000_000_000), "953.7 MiB");
        assert_eq!(format_bytes(3 << 30), "3 GiB");
    }

    /// C16: the spill file name keeps only safe characters of the call id.
    #[test]
    fn spill_path_sanitized() {
        let dir = Path::new("/t");
        assert_eq!(
            spill_path(dir, "a/../b c", "stdout"),
            dir.join("bash-a____b_c-stdout.log")
        );
        assert_eq!(
            spill_path(dir, "", "stderr"),
            dir.join("bash-call-stderr.log")
        );
    }
}
