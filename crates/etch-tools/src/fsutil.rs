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
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
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

/// Writes `bytes` to `path` through a temp file in the same directory and a
/// rename, creating parent directories and keeping an existing file's
/// permissions. `shown` is the path as the model gave it, for messages.
///
/// The rename makes the replacement atomic for every reader and against a
/// crash or kill of etch. The bytes are written into an unnamed file
/// (`O_TMPFILE`) that gets its temporary name only once whole, just
/// before the rename: a kill while a large file is written leaves
/// nothing beside it. Where the filesystem has no unnamed files, a
/// named temp file is written instead. The data is not fsynced: that
/// would cost tens of milliseconds per large file on every edit, and
/// ext4 and most other filesystems already flush a file replaced by
/// rename before the rename itself is committed.
pub fn atomic_write(path: &Path, bytes: &[u8], shown: &str) -> Result<(), ToolError> {
    let fail = |what: &str, e: std::io::Error| {
        ToolError::new(format!("cannot write {shown}: {what}: {e}"))
    };
    let dir = path.parent().ok_or_else(|| {
        ToolError::new(format!("cannot write {shown}: it has no parent directory"))
    })?;
    std::fs::create_dir_all(dir).map_err(|e| fail("creating parent directories", e))?;
    let existing_mode = std::fs::metadata(path).ok().map(|m| m.permissions().mode());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(result) = write_unnamed(dir, &name, path, bytes, existing_mode) {
        return result.map_err(|(what, e)| fail(what, e));
    }
    let mut attempt = 0u32;
    let (tmp_path, mut file) = loop {
        let candidate = dir.join(format!(".{name}.etch-tmp-{}-{attempt}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(file) => break (candidate, file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(e) => return Err(fail("creating a temp file", e)),
        }
    };
    let result = (|| {
        file.write_all(bytes).map_err(|e| fail("writing", e))?;
        if let Some(mode) = existing_mode {
            file.set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| fail("keeping permissions", e))?;
        }
        drop(file);
        std::fs::rename(&tmp_path, path).map_err(|e| fail("replacing the file", e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp_path);
    }
    result
}

/// [`atomic_write`] through an unnamed file in `dir`: `None` when the
/// filesystem cannot make one (nothing was written), else what became of
/// the write.
fn write_unnamed(
    dir: &Path,
    name: &str,
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
) -> Option<Result<(), (&'static str, std::io::Error)>> {
    use std::os::fd::AsRawFd as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_TMPFILE)
        // A new file's mode, as `open` makes it: what the umask leaves.
        .mode(0o666)
        .open(dir)
        .ok()?;
    let result = (|| {
        file.write_all(bytes).map_err(|e| ("writing", e))?;
        if let Some(mode) = mode {
            file.set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| ("keeping permissions", e))?;
        }
        // The file gets a name only now, whole; then the rename puts it
        // in place.
        let mut attempt = 0u32;
        let named = loop {
            let candidate = dir.join(format!(".{name}.etch-tmp-{}-{attempt}", std::process::id()));
            let linked = nix::unistd::linkat(
                nix::fcntl::AT_FDCWD,
                format!("/proc/self/fd/{}", file.as_raw_fd()).as_str(),
                nix::fcntl::AT_FDCWD,
                &candidate,
                nix::fcntl::AtFlags::AT_SYMLINK_FOLLOW,
            );
            match linked {
                Ok(()) => break candidate,
                Err(nix::errno::Errno::EEXIST) if attempt < 100 => attempt += 1,
                Err(e) => return Err(("naming the temp file", std::io::Error::from(e))),
            }
        };
        let renamed = std::fs::rename(&named, path).map_err(|e| ("replacing the file", e));
        if renamed.is_err() {
            let _ = std::fs::remove_file(&named);
        }
        renamed
    })();
    Some(result)
}

#[cfg(test)]
mod tests {
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
