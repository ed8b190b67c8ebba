//! Scratch directories for the targets that need real files (config,
//! Pi import, skills): in memory (`/dev/shm`) where the machine has it, so an
//! input costs no disk writes and the fuzzer runs several times faster;
//! the system's temporary directory otherwise.

use std::path::Path;

/// A fresh directory, removed when dropped.
pub fn dir() -> Option<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return Some(dir);
    }
    tempfile::tempdir().ok()
}
