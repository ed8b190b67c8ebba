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
//! 6.6), `/proc` is missing, or an unnamed file cannot be linked, a
//! named temporary file (`.NAME.etch-tmp-PID-N`) is written instead,
//! removed on any error; a kill can leave that one.
//!
//! Nothing is fsynced unless asked ([`Options::synced`]): it costs tens
//! of milliseconds per file, and ext4 and most other filesystems flush a
//! file replaced by rename before the rename itself is committed.
//!
//! This crate owns those two ways to write. It must not know what the
//! files hold (sessions, config, a tool's target) or how callers word
//! their errors.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{Seek as _, Write as _};
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
/// parent directory must exist. A link at `path` is replaced by the file,
/// as `rename` does.
///
/// # Errors
/// When the file cannot be created, written or renamed into place; the
/// target is then untouched and nothing is left beside it.
pub fn replace(path: &Path, bytes: &[u8], options: Options) -> Result<(), WriteError> {
    let mode = match options.mode {
        Some(mode) => Some(mode),
        None => std::fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777),
    };
    let mut new = NewFile::new(path, mode.unwrap_or(OPEN_MODE))?;
    new.file.write_all(bytes).map_err(at("writing"))?;
    if let Some(mode) = mode {
        // After the write, which clears set-user-id and set-group-id
        // bits: an existing file's mode (or the one asked for) exactly,
        // where the open gave it less the umask.
        new.file
            .set_permissions(Permissions::from_mode(mode))
            .map_err(at("setting permissions"))?;
    }
    if options.sync {
        new.file.sync_all().map_err(at("syncing"))?;
    }
    let temp = new.name_temporarily()?;
    std::fs::rename(&temp.0, path).map_err(at("replacing the file"))?;
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
    /// The name it gets.
    target: PathBuf,
    /// Its permissions (less the umask).
    mode: u32,
    /// The temporary name it has where the filesystem gave it one; none
    /// for an unnamed file.
    temp: Option<Temp>,
}

impl NewFile {
    /// A new, unnamed file in `target`'s directory, readable and
    /// writable, with permissions `mode` (less the umask), to be named
    /// `target`.
    ///
    /// # Errors
    /// When the directory does not take a new file.
    pub fn new(target: &Path, mode: u32) -> Result<Self, WriteError> {
        let dir = parent(target);
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
                        target: target.to_path_buf(),
                        mode,
                        temp: None,
                    });
                }
                // The filesystem has no unnamed files: a named one below.
                Err(e) if unsupported(&e) => {}
                Err(e) => return Err(at("creating a file")(e)),
            }
        }
        let (temp, file) = named_temp(target, mode)?;
        Ok(Self {
            file,
            target: target.to_path_buf(),
            mode,
            temp: Some(temp),
        })
    }

    /// The open file, to write to (its offset is where the next write
    /// goes) and read.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Gives the file its name, unless a file already has that name.
    /// Returns the file as named: the same open file, unless a
    /// filesystem that let it be made without a name would not let it be
    /// named, and its bytes were copied to a named one.
    ///
    /// # Errors
    /// `AlreadyExists` when the name is taken; otherwise when the link
    /// cannot be made. The file is gone either way.
    pub fn publish(self) -> Result<File, WriteError> {
        let this = match self.temp {
            Some(_) => self,
            None => match link_unnamed(&self.file, &self.target) {
                Ok(()) => return Ok(self.file),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(at("naming the file")(e));
                }
                Err(_) => {
                    refuse_unnamed();
                    self.into_named()?
                }
            },
        };
        let Some(temp) = &this.temp else {
            return Err(at("naming the file")(std::io::Error::other(
                "the file has no name to publish",
            )));
        };
        link_named(&temp.0, &this.target).map_err(at("naming the file"))?;
        // The temporary name goes when `this.temp` is dropped.
        Ok(this.file)
    }

    /// Gives the file a temporary name beside its target
    /// (`.NAME.etch-tmp-PID-N`; the one it has if named already), for a
    /// rename over it.
    fn name_temporarily(self) -> Result<Temp, WriteError> {
        if let Some(temp) = self.temp {
            return Ok(temp);
        }
        let name = name_of(&self.target);
        let mut attempt = 0;
        loop {
            let candidate = temp_name(&self.target, &name, attempt);
            match link_unnamed(&self.file, &candidate) {
                Ok(()) => return Ok(Temp::new(candidate)),
                Err(e)
                    if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < TEMP_ATTEMPTS =>
                {
                    attempt += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(at("creating a temporary file")(e));
                }
                // Made but not nameable here (a /proc that refuses):
                // copied to a named file.
                Err(_) => {
                    refuse_unnamed();
                    return self.into_named()?.name_temporarily();
                }
            }
        }
    }

    /// The file copied to a named temporary file, for a filesystem that
    /// made an unnamed file but will not name it.
    fn into_named(mut self) -> Result<Self, WriteError> {
        let (temp, mut named) = named_temp(&self.target, self.mode)?;
        let mode = self
            .file
            .metadata()
            .map_err(at("reading the file"))?
            .permissions();
        self.file
            .seek(std::io::SeekFrom::Start(0))
            .map_err(at("reading the file"))?;
        std::io::copy(&mut self.file, &mut named).map_err(at("copying the file"))?;
        named
            .set_permissions(mode)
            .map_err(at("setting permissions"))?;
        Ok(Self {
            file: named,
            target: self.target,
            mode: self.mode,
            temp: Some(temp),
        })
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
struct Temp(PathBuf, bool);

impl Temp {
    /// A temporary name to remove when dropped.
    fn new(path: PathBuf) -> Self {
        Self(path, true)
    }

    /// Keeps the file under its name (it was renamed away).
    fn forget(mut self) {
        self.1 = false;
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if self.1 {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// The last component of `path`, as text.
fn name_of(path: &Path) -> String {
    path.file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// Temporary name number `attempt` beside `target` (whose name is
/// `name`): `.NAME.etch-tmp-PID-N`.
fn temp_name(target: &Path, name: &str, attempt: u32) -> PathBuf {
    parent(target).join(format!(".{name}.etch-tmp-{}-{attempt}", std::process::id()))
}

/// A new named temporary file beside `target`, with permissions `mode`
/// (less the umask).
fn named_temp(target: &Path, mode: u32) -> Result<(Temp, File), WriteError> {
    let name = name_of(target);
    let mut attempt = 0;
    loop {
        let candidate = temp_name(target, &name, attempt);
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&candidate);
        match opened {
            Ok(file) => return Ok((Temp::new(candidate), file)),
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

/// Gives the file named `temp` the name `path` too, unless a file (or a
/// link) has it: a hard link, or where the filesystem has none, a rename
/// that does not replace.
fn link_named(temp: &Path, path: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(temp, path) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(e),
        Err(_) => {}
    }
    let renamed = nix::fcntl::renameat2(
        nix::fcntl::AT_FDCWD,
        temp,
        nix::fcntl::AT_FDCWD,
        path,
        nix::fcntl::RenameFlags::RENAME_NOREPLACE,
    );
    match renamed {
        Ok(()) => Ok(()),
        // A filesystem without RENAME_NOREPLACE: nothing else knows the
        // name of a file being made, so a check before the rename does.
        Err(nix::errno::Errno::EINVAL) if std::fs::symlink_metadata(path).is_err() => {
            std::fs::rename(temp, path)
        }
        Err(nix::errno::Errno::EINVAL) => {
            Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists))
        }
        Err(e) => Err(std::io::Error::from(e)),
    }
}

/// Set once an unnamed file could be made but not named: from then on
/// this process writes named temporary files.
static UNNAMED_REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the filesystem of `dir` makes unnamed files (where it does
/// not, a file being made has a temporary name, which a kill can leave).
pub fn makes_unnamed_files(dir: &Path) -> bool {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_TMPFILE)
        .mode(0o600)
        .open(dir)
        .is_ok()
}

/// Makes no more unnamed files in this process: one could be made but
/// not named.
fn refuse_unnamed() {
    UNNAMED_REFUSED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether unnamed files can be given a name here: that takes `/proc`,
/// and a `/proc` that lets a link be made through it.
fn unnamed_files_work() -> bool {
    static PROC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROC.get_or_init(|| Path::new("/proc/self/fd").is_dir())
        && !UNNAMED_REFUSED.load(std::sync::atomic::Ordering::Relaxed)
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
