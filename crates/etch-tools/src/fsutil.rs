//! File helpers shared by the tools: opening a file to read it without
//! ever blocking on a pipe or device, the atomic write path and the text
//! checks. `write` and `edit` both go through [`atomic_write`], so a crash
//! or cancellation leaves either the old file or the new one, never a
//! half-written mix (E-TOOL-06, E-TOOL-10, E-TOOL-23).
//!
//! The tools read only regular files: opening a FIFO waits for a writer,
//! reading one (or a terminal, or `/dev/zero`) can wait or stream forever,
//! and a thread stuck in such a read can be neither cancelled nor joined,
//! so it would hang the run and its exit. Callers look at the path's type
//! before opening it (opening some devices has side effects), and
//! [`open_regular`] checks the opened file again, so a FIFO put in the
//! file's place in between cannot block either.

use std::fs::{File, FileType, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use etch_tool::ToolError;

/// Bytes inspected for a NUL when deciding whether a file is binary.
pub const BINARY_SNIFF_BYTES: usize = 8192;

/// Whether `bytes` look binary: a NUL byte in the first 8 KiB (G10).
pub fn looks_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)]).is_some()
}

/// What a special file is, for messages: `a FIFO (named pipe)`, `a
/// socket`, `a character device`, `a block device`, `a directory`.
fn special_kind(file_type: FileType) -> Option<&'static str> {
    Some(if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_dir() {
        "a directory"
    } else {
        return None;
    })
}

/// The error for a path that is not a regular file: `{shown} is a FIFO
/// (named pipe), not a regular file; {tool} {what} (reading a pipe or
/// device could wait forever)`, where `what` says what the tool does with
/// regular files only.
pub fn not_regular(shown: &str, file_type: FileType, tool: &str, what: &str) -> ToolError {
    let kind = special_kind(file_type).map_or_else(
        || "something other than a regular file".to_owned(),
        |kind| format!("{kind}, not a regular file"),
    );
    ToolError::new(format!(
        "{shown} is {kind}; {tool} {what} (reading a pipe or device could wait forever)"
    ))
}

/// Why [`open_regular`] did not hand back a file.
#[derive(Debug)]
pub enum OpenError {
    /// Opening or inspecting it failed.
    Io(std::io::Error),
    /// It is not a regular file; the type it has.
    NotRegular(FileType),
}

/// Opens `path` for reading with `O_NONBLOCK`, so that a FIFO cannot make
/// the open wait for a writer, and checks that what was opened is a
/// regular file (for which `O_NONBLOCK` changes nothing).
pub fn open_regular(path: &Path) -> Result<(File, Metadata), OpenError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(OpenError::Io)?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if !meta.is_file() {
        return Err(OpenError::NotRegular(meta.file_type()));
    }
    Ok((file, meta))
}

/// Reads the whole of `path`, which must be a regular file: a directory
/// is an [`std::io::ErrorKind::IsADirectory`] error, a pipe or device
/// [`OpenError::NotRegular`], checked before opening it.
pub fn read_regular(path: &Path) -> Result<Vec<u8>, OpenError> {
    let meta = std::fs::metadata(path).map_err(OpenError::Io)?;
    if meta.is_dir() {
        return Err(OpenError::Io(std::io::ErrorKind::IsADirectory.into()));
    }
    if !meta.is_file() {
        return Err(OpenError::NotRegular(meta.file_type()));
    }
    let (mut file, meta) = open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes).map_err(OpenError::Io)?;
    Ok(bytes)
}

/// Writes `bytes` to `path` wholly or not at all (`etch_fs::replace`:
/// an unnamed file, named once whole and renamed over the target, so a
/// kill while a large file is written leaves the old content and nothing
/// beside it), creating parent directories and keeping an existing
/// file's permissions. `shown` is the path as the model gave it, for
/// messages.
pub fn atomic_write(path: &Path, bytes: &[u8], shown: &str) -> Result<(), ToolError> {
    let dir = path.parent().ok_or_else(|| {
        ToolError::new(format!("cannot write {shown}: it has no parent directory"))
    })?;
    std::fs::create_dir_all(dir).map_err(|e| {
        ToolError::new(format!(
            "cannot write {shown}: creating parent directories: {e}"
        ))
    })?;
    etch_fs::replace(path, bytes, etch_fs::Options::keep_mode())
        .map_err(|e| ToolError::new(format!("cannot write {shown}: {e}")))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    /// Replacing a file keeps its mode and leaves no temp file behind.
    #[test]
    fn keeps_permissions_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sh");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
        atomic_write(&path, b"new", "run.sh").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o750
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        atomic_write(&dir.path().join("a/b/c.txt"), b"x", "a/b/c.txt").unwrap();
        assert!(dir.path().join("a/b/c.txt").exists());
    }

    /// A new file gets the mode `open` would give it (0666 less the
    /// umask, as every test process has it), not the temp file's.
    #[test]
    fn new_files_get_the_usual_mode() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("made.txt");
        std::fs::write(&made, "x").unwrap();
        let written = dir.path().join("written.txt");
        atomic_write(&written, b"x", "written.txt").unwrap();
        let bits = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(bits(&written), bits(&made));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    /// A NUL in the first 8 KiB marks binary; later NULs do not.
    #[test]
    fn binary_sniffing() {
        assert!(looks_binary(b"ab\0c"));
        assert!(!looks_binary(b"plain text"));
        let mut late = vec![b'a'; 9000];
        late.push(0);
        assert!(!looks_binary(&late));
    }
}
