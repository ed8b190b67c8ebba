//! What one output stream of a `bash` command delivered (G10): its last
//! [`BASH_STREAM_MAX_BYTES`] in memory and, once it outgrew that, all of it
//! in a spill file in the session temp directory, written as it arrives.
//!
//! It owns the kept tail, the spill file and its name, and the truncation
//! notice. It must not know where the bytes come from (pipes, processes) nor
//! how the notice is placed in the result text.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::limits::BASH_STREAM_MAX_BYTES;

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
}

impl StreamCapture {
    /// An empty capture for the stream `name`, spilling to `spill_path`.
    pub(super) fn new(name: &'static str, spill_path: PathBuf) -> Self {
        Self {
            name,
            tail: Vec::new(),
            total: 0,
            spill_path,
            spill: None,
            spill_error: None,
        }
    }

    /// Whether the stream outgrew the kept tail.
    fn truncated(&self) -> bool {
        self.total > u64::try_from(BASH_STREAM_MAX_BYTES).unwrap_or(u64::MAX)
    }

    /// Adds a chunk of output. The first time the stream outgrows the tail
    /// the spill file is created and gets everything so far (the tail still
    /// holds all of it then); later chunks are appended as they arrive.
    /// Spill writes are small and local, so they are done synchronously.
    pub(super) fn push(&mut self, chunk: &[u8]) {
        let was_truncated = self.truncated();
        self.total = self
            .total
            .saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
        if !was_truncated && self.truncated() {
            match self.open_spill() {
                Ok(file) => self.spill = Some(file),
                Err(e) => self.spill_error = Some(e.to_string()),
            }
        }
        if let Some(file) = &mut self.spill
            && let Err(e) = file.write_all(chunk)
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

    /// Creates the spill file (and its directory) holding the output so far.
    fn open_spill(&self) -> io::Result<File> {
        if let Some(dir) = self.spill_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = File::create(&self.spill_path)?;
        file.write_all(&self.tail)?;
        Ok(file)
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
            None => format!("{head} Full output: {}]", self.spill_path.display()),
            Some(e) => format!("{head} Full output could not be saved: {e}]"),
        })
    }
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
        let mut capture = StreamCapture::new("stdout", dir.path().join("s.log"));
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
