//! Writing files so that a crash or a SIGKILL of etch leaves each one
//! wholly its old content or wholly its new: never torn, never empty, and
//! no temporary file beside it.
//!
//! The bytes go into an unnamed file (`O_TMPFILE`) in the target's
//! directory, so a kill while they are written leaves nothing: the
//! kernel frees a file that no name refers to. Only once it is whole
//! does the file get a name: the target's own for a new file
//! ([`NewFile::publish`], which fails like `O_EXCL` if the name is
//! taken, with nothing between a temporary name and the final one), or
//! a temporary name that is at once renamed over the target
//! ([`replace`]: Linux cannot link a file over another, so a kill
//! between those two system calls is the one moment that can leave a
//! `.NAME.etch-tmp-PID-N` behind). Where the filesystem has no unnamed
//! files (some network and FUSE filesystems, overlayfs before Linux
//! 6.6) or `/proc` is missing, a named temporary file is written
//! instead, removed on any error; a kill can leave that one.
//!
//! Nothing is fsynced unless asked ([`Options::synced`]): it costs tens
//! of milliseconds per file, and ext4 and most other filesystems flush a
//! file replaced by rename before the rename itself is committed.
//!
//! This crate owns those two ways to write. It must not know what the
//! files hold (sessions, config, a tool's target) or how callers word
//! their errors.

use std::fs::{File, OpenOptions, Permissions};
use std::io::Write as _;
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// The mode a new file is opened with when the caller keeps modes: what
/// `open` gives, 0666 less the umask.
const OPEN_MODE: u32 = 0o666;

/// How many temporary names are tried before giving up (another etch
/// process may hold one with the same pid after a pid wrapped).
const TEMP_ATTEMPTS: u32 = 100;

/// A write that failed: which step, and the system's error.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {error}")]
pub struct WriteError {
    /// What was being done ("writing", "replacing the file", ...).
    pub step: &'static str,
    /// Why it failed.
    pub error: std::io::Error,
}

impl WriteError {
    /// The error's kind, e.g. `AlreadyExists` from [`NewFile::publish`].
    pub fn kind(&self) -> std::io::ErrorKind {
        self.error.kind()
    }
}

impl From<WriteError> for std::io::Error {
    /// The same kind, with the step in the message.
    fn from(e: WriteError) -> Self {
        Self::new(e.kind(), e.to_string())
    }
}

/// A step's failure, for `map_err`.
fn at(step: &'static str) -> impl FnOnce(std::io::Error) -> WriteError {
    move |error| WriteError { step, error }
}

/// How [`replace`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The file's permissions: `None` keeps an existing file's (a new one
    /// gets 0666 less the umask).
    mode: Option<u32>,
    /// Whether the data is flushed to the disk before the rename.
    sync: bool,
}

impl Options {
    /// An existing file keeps its permissions; a new one gets what
    /// `open` gives (0666 less the umask). What a tool's edit wants.
    pub const fn keep_mode() -> Self {
        Self {
            mode: None,
            sync: false,
        }
    }

    /// Exactly `mode`, whatever the file had: 0600 for what is the
    /// user's alone to read.
    pub const fn mode(mode: u32) -> Self {
        Self {
            mode: Some(mode),
            sync: false,
        }
    }

    /// The data flushed to the disk before the rename, for what a power
    /// cut must not lose (credentials).
    #[must_use]
    pub const fn synced(self) -> Self {
        Self { sync: true, ..self }
    }
}

/// Replaces (or creates) `path` with `bytes`, wholly or not at all. The
/// parent directory must exist.
///
/// # Errors
/// When the file cannot be created, written or renamed into place; the
/// target is then untouched and nothing is left beside it.
pub fn replace(path: &Path, bytes: &[u8], options: Options) -> Result<(), WriteError> {
    let dir = parent(path);
    let mode = match options.mode {
        Some(mode) => Some(mode),
        None => std::fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777),
    };
    let mut new = NewFile::in_dir(dir, mode.unwrap_or(OPEN_MODE))?;
    if let Some(mode) = mode {
        // The open gave the mode less the umask; an existing file's mode
        // (or the one asked for) is set exactly.
        new.file
            .set_permissions(Permissions::from_mode(mode))
            .map_err(at("setting permissions"))?;
    }
    new.file.write_all(bytes).map_err(at("writing"))?;
    if options.sync {
        new.file.sync_all().map_err(at("syncing"))?;
    }
    let temp = new.name_temporarily(path)?;
    if let Some(named) = &temp.0 {
        std::fs::rename(named, path).map_err(at("replacing the file"))?;
    }
    temp.forget();
    Ok(())
}

/// The directory `path` lies in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// A new file that has no name yet: written first, then published under
/// its name whole ([`NewFile::publish`]). Dropped unpublished, it leaves
/// nothing.
#[derive(Debug)]
pub struct NewFile {
    /// The open file (readable and writable).
    file: File,
    /// Its directory, where it is published.
    dir: PathBuf,
    /// The temporary name it has where the filesystem gave it one; none
    /// for an unnamed file.
    temp: Temp,
}

impl NewFile {
    /// A new, unnamed file in `dir`, readable and writable, with
    /// permissions `mode` (less the umask).
    ///
    /// # Errors
    /// When the directory does not take a new file.
    pub fn in_dir(dir: &Path, mode: u32) -> Result<Self, WriteError> {
        if unnamed_files_work() {
            let unnamed = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(nix::libc::O_TMPFILE)
                .mode(mode)
                .open(dir);
            match unnamed {
                Ok(file) => {
                    return Ok(Self {
                        file,
                        dir: dir.to_path_buf(),
                        temp: Temp(None),
                    });
                }
                // The filesystem has no unnamed files: a named one below.
                Err(e) if unsupported(&e) => {}
                Err(e) => return Err(at("creating a file")(e)),
            }
        }
        let (path, file) = fresh_name(dir, "new", |candidate| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(candidate)
        })?;
        Ok(Self {
            file,
            dir: dir.to_path_buf(),
            temp: Temp(Some(path)),
        })
    }

    /// The open file, to write to (its offset is where the next write
    /// goes) and read.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Gives the file the name of `name` (its last component) in its
    /// directory, unless a file already has that name. Returns the open
    /// file.
    ///
    /// # Errors
    /// `AlreadyExists` when the name is taken; otherwise when the link
    /// cannot be made. The file is gone either way.
    pub fn publish(self, name: &Path) -> Result<File, WriteError> {
        let path = self.dir.join(name_of(name));
        match &self.temp.0 {
            None => link_unnamed(&self.file, &path).map_err(at("naming the file"))?,
            Some(temp) => match std::fs::hard_link(temp, &path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(at("naming the file")(e));
                }
                // A filesystem without hard links: a rename, after
                // checking the name is free (nothing else knows of a
                // session file before it is published).
                Err(_) if !path.exists() => {
                    std::fs::rename(temp, &path).map_err(at("naming the file"))?;
                }
                Err(e) => return Err(at("naming the file")(e)),
            },
        }
        // The temporary name, if any, goes now.
        drop(self.temp);
        Ok(self.file)
    }

    /// Gives the file a temporary name beside `target`
    /// (`.NAME.etch-tmp-PID-N`; the one it has if named already), for a
    /// rename over it. The name is always there.
    fn name_temporarily(self, target: &Path) -> Result<Temp, WriteError> {
        if let Temp(Some(_)) = &self.temp {
            return Ok(self.temp);
        }
        let name = name_of(target).to_string_lossy().into_owned();
        let file = &self.file;
        let (path, ()) = fresh_name(&self.dir, &name, |candidate| link_unnamed(file, candidate))?;
        Ok(Temp(Some(path)))
    }
}

/// Sets `O_APPEND` on `file`, so each write goes to its end: a published
/// [`NewFile`] that is a log from then on.
///
/// # Errors
/// When the flags cannot be read or set.
pub fn set_append(file: &File) -> std::io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = fcntl(file, FcntlArg::F_GETFL).map_err(std::io::Error::from)?;
    let flags = OFlag::from_bits_truncate(flags) | OFlag::O_APPEND;
    fcntl(file, FcntlArg::F_SETFL(flags)).map_err(std::io::Error::from)?;
    Ok(())
}

/// A temporary name, removed when dropped unless forgotten.
#[derive(Debug)]
struct Temp(Option<PathBuf>);

impl Temp {
    /// Keeps the file under its name (it was renamed away).
    fn forget(mut self) {
        self.0 = None;
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The last component of `path`.
fn name_of(path: &Path) -> &std::ffi::OsStr {
    path.file_name().unwrap_or(path.as_os_str())
}

/// Tries `.NAME.etch-tmp-PID-N` in `dir` for N from 0 until `make`
/// does not find it taken.
fn fresh_name<T>(
    dir: &Path,
    name: &str,
    mut make: impl FnMut(&Path) -> std::io::Result<T>,
) -> Result<(PathBuf, T), WriteError> {
    let pid = std::process::id();
    let mut attempt = 0;
    loop {
        let candidate = dir.join(format!(".{name}.etch-tmp-{pid}-{attempt}"));
        match make(&candidate) {
            Ok(opened) => return Ok((candidate, opened)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < TEMP_ATTEMPTS => {
                attempt += 1;
            }
            Err(e) => return Err(at("creating a temporary file")(e)),
        }
    }
}

/// Links the unnamed `file` as `path` (failing if it exists), through
/// its `/proc/self/fd` entry: linking by descriptor (`AT_EMPTY_PATH`)
/// needs a capability etch does not have.
fn link_unnamed(file: &File, path: &Path) -> std::io::Result<()> {
    nix::unistd::linkat(
        nix::fcntl::AT_FDCWD,
        format!("/proc/self/fd/{}", file.as_raw_fd()).as_str(),
        nix::fcntl::AT_FDCWD,
        path,
        nix::fcntl::AtFlags::AT_SYMLINK_FOLLOW,
    )
    .map_err(std::io::Error::from)
}

/// Whether unnamed files can be given a name here: that takes `/proc`.
fn unnamed_files_work() -> bool {
    static PROC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROC.get_or_init(|| Path::new("/proc/self/fd").is_dir())
}

/// Whether `error` says the filesystem has no unnamed files.
fn unsupported(error: &std::io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(nix::libc::EOPNOTSUPP | nix::libc::EISDIR | nix::libc::EINVAL)
    )
}

#[cfg(test)]
mod tests;
