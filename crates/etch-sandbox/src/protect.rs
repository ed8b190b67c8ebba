//! Keeping the protected directories (the working directory's `.git`
//! and `.etch`) read-only while the rest of the working directory stays
//! writable. Landlock cannot do this: a right granted on a directory
//! holds for everything beneath it, and a new file at the top of the
//! working directory needs the rights that would then reach `.git` too.
//! So the helper enters a mount namespace of its own (inside a user
//! namespace when it is not root) and bind-mounts each protected
//! directory read-only over itself; the view is the command's alone.
//!
//! The same namespace hides the directories the command may not read:
//! an empty, read-only tmpfs that no one may enter (mode 000) is mounted
//! over each, which costs one mount where Landlock alone needs a rule
//! for every sibling on the way down to it (see `plan`). Landlock keeps
//! the command from unmounting any of it.
//!
//! Where namespaces are not allowed (many containers, or AppArmor's
//! limit on unprivileged user namespaces) [`enter`] fails: the protected
//! directories stay writable and the status says the sandbox is partly
//! enforced, and the denied directories are left to Landlock. This
//! module must not know which directories are protected or why.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};
use nix::unistd::{Gid, Uid};

/// Enters a private mount namespace of this process's own, whose
/// mounts never reach the namespace the user's shell sees.
pub(crate) fn enter() -> nix::Result<()> {
    enter_namespace()?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
}

/// Mounts every existing directory of `dirs` read-only (in the namespace
/// [`enter`] made); `false` when that could not be done for all of them.
pub(crate) fn read_only(dirs: &[PathBuf]) -> bool {
    dirs.iter()
        .filter(|d| d.is_dir())
        .all(|dir| bind_read_only(dir).is_ok())
}

/// Hides each directory of `dirs` under an empty tmpfs that is read-only
/// and closed to everyone but root (in the namespace [`enter`] made);
/// returns the paths it did not hide (files, and directories a mount
/// failed on), which Landlock must keep out instead.
pub(crate) fn hide(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter()
        .filter(|path| {
            !(path.is_dir()
                && mount(
                    Some("tmpfs"),
                    path.as_path(),
                    Some("tmpfs"),
                    MsFlags::MS_RDONLY
                        | MsFlags::MS_NOSUID
                        | MsFlags::MS_NODEV
                        | MsFlags::MS_NOEXEC,
                    Some("mode=000,size=4k"),
                )
                .is_ok())
        })
        .cloned()
        .collect()
}

/// A mount namespace of this process's own; unprivileged, a user
/// namespace first, mapping the user to itself so files keep their
/// owners.
fn enter_namespace() -> nix::Result<()> {
    let (uid, gid) = (Uid::effective(), Gid::effective());
    if uid.is_root() {
        return unshare(CloneFlags::CLONE_NEWNS);
    }
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text)
            .map_err(|e| nix::Error::from_raw(e.raw_os_error().unwrap_or(nix::libc::EPERM)))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

/// Bind-mounts `dir` over itself, then makes that mount read-only,
/// keeping the flags a user namespace may not drop.
fn bind_read_only(dir: &Path) -> nix::Result<()> {
    mount(
        Some(dir),
        dir,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )?;
    let kept = statvfs(dir)?.flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if kept.contains(fs) {
            flags |= ms;
        }
    }
    mount(None::<&str>, dir, None::<&str>, flags, None::<&str>)
}
