//! Opening and reading one discovered text file, telling "not there" apart
//! from "there but unusable".
//!
//! This module owns the rules every pinned file shares: a missing path is
//! simply absent (no diagnostic); a directory, a special file, a dangling
//! link, a permission problem or invalid UTF-8 is a typed [`ReadError`] that
//! callers turn into a diagnostic and skip. It must not know which file it
//! reads or how the text is used.

use std::fs::{self, File};
use std::io::{self, ErrorKind, Read};
use std::path::Path;

/// Why an existing file could not be used as prompt text.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The path names a directory, e.g. a directory called `AGENTS.md`.
    #[error("is a directory, not a file")]
    Directory,
    /// The path names a FIFO, socket or device; reading it could block or
    /// never end, so it is not opened at all.
    #[error("is not a regular file")]
    NotRegular,
    /// A symbolic link whose target does not exist.
    #[error("is a symbolic link to a missing file")]
    DanglingLink,
    /// The process may not read the file.
    #[error("permission denied")]
    PermissionDenied,
    /// The bytes are not UTF-8 text.
    #[error("is not valid UTF-8 text")]
    InvalidUtf8,
    /// Any other I/O failure.
    #[error("{0}")]
    Io(#[source] io::Error),
}

impl From<io::Error> for ReadError {
    /// Maps the I/O errors callers can act on to their own variants, so the
    /// diagnostic says what is wrong in words rather than an errno.
    fn from(err: io::Error) -> Self {
        match err.kind() {
            ErrorKind::PermissionDenied => Self::PermissionDenied,
            ErrorKind::IsADirectory => Self::Directory,
            ErrorKind::InvalidData => Self::InvalidUtf8,
            _ => Self::Io(err),
        }
    }
}

/// Opens `path` when it is a regular file; `Ok(None)` when nothing is there.
///
/// The type is checked before opening because opening a FIFO for reading
/// blocks until a writer appears: a stray pipe named `AGENTS.md` must not hang
/// every run. `lstat` comes first so the common cases (absent, plain file)
/// cost one call; only a symlink is followed with a second one.
pub(crate) fn open_regular(path: &Path) -> Result<Option<(File, u64)>, ReadError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match fs::metadata(path) {
            Ok(target) => target,
            Err(err) if is_absent(&err) => return Err(ReadError::DanglingLink),
            Err(err) => return Err(err.into()),
        },
        Ok(meta) => meta,
        Err(err) if is_absent(&err) => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    if meta.is_dir() {
        return Err(ReadError::Directory);
    }
    if !meta.is_file() {
        return Err(ReadError::NotRegular);
    }
    Ok(Some((File::open(path)?, meta.len())))
}

/// Reads the whole file at `path` as UTF-8 text; `Ok(None)` when absent.
pub(crate) fn read_text(path: &Path) -> Result<Option<String>, ReadError> {
    let Some((mut file, len)) = open_regular(path)? else {
        return Ok(None);
    };
    // Sized from the `lstat` already made; reading through `by_ref().take`
    // skips `File`'s own size probe (two more system calls per file).
    let mut bytes = Vec::with_capacity(usize::try_from(len).map_or(0, |n| n.saturating_add(1)));
    file.by_ref().take(u64::MAX).read_to_end(&mut bytes)?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| ReadError::InvalidUtf8)
}

/// Whether an error means "no such file here": missing, or a path through a
/// regular file (`a/AGENTS.md` where `a` is a file).
pub(crate) fn is_absent(err: &io::Error) -> bool {
    matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Missing files are absent; files are read in full; directories and
    /// invalid UTF-8 are typed errors.
    #[test]
    fn classifies_paths() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        assert!(read_text(&file).unwrap().is_none());
        fs::write(&file, "x".repeat(100_000)).unwrap();
        assert_eq!(read_text(&file).unwrap().unwrap().len(), 100_000);
        assert!(read_text(&file.join("below")).unwrap().is_none());
        assert!(matches!(read_text(dir.path()), Err(ReadError::Directory)));
        fs::write(&file, b"ok \xff\xfe").unwrap();
        assert!(matches!(read_text(&file), Err(ReadError::InvalidUtf8)));
    }

    /// A dangling symlink is reported rather than silently absent.
    #[cfg(unix)]
    #[test]
    fn dangling_link_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("AGENTS.md");
        std::os::unix::fs::symlink(dir.path().join("gone"), &link).unwrap();
        assert!(matches!(read_text(&link), Err(ReadError::DanglingLink)));
    }
}
