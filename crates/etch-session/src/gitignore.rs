//! The `.gitignore` etch keeps in a project's `.etch/` directory (G2).
//!
//! `.etch/` holds two kinds of files: what etch writes for itself
//! (transcripts in `sessions/`, spilled tool output in `tmp/`, context
//! dumps) and what a team writes and wants to commit (`config.toml`,
//! `skills/`). The ignore file lists only the first kind, and is written by
//! whichever etch command first writes into `.etch/`, whoever created the
//! directory. This module must not know which command is asking.

use std::io::Write as _;
use std::path::Path;

use crate::error::SessionError;

/// The file's content: etch's own state only.
pub const CONTENT: &str = "\
# Written by etch: its own state stays out of git. config.toml and skills/
# are meant to be committed.
sessions/
tmp/
context-dump-*.txt
";

/// What etch wrote before this layout: it also hid config and skills.
const OLD_CONTENT: &[u8] = b"*\n";

/// Makes sure `etch_dir` (an existing `.etch` directory) has its
/// `.gitignore`: written when missing, rewritten when it is the ignore-all
/// file older versions wrote, and left alone when the user changed it.
pub fn ensure(etch_dir: &Path) -> Result<(), SessionError> {
    let path = etch_dir.join(".gitignore");
    // Bytes, not text: a user's file need not be UTF-8 to be left alone.
    let missing = match std::fs::read(&path) {
        Ok(bytes) if bytes != OLD_CONTENT => return Ok(()),
        Ok(_) => false,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => true,
        Err(source) => {
            return Err(SessionError::Io {
                action: "read",
                path,
                source,
            });
        }
    };
    // Written whole: a kill never leaves an empty file, which the next
    // run would take for the user's and leave alone, letting transcripts
    // into git. A missing file is only created (never one the user made
    // meanwhile replaced); the old one is replaced.
    let io = |source: std::io::Error| SessionError::Io {
        action: "write",
        path: path.clone(),
        source,
    };
    if missing {
        let mut new = etch_fs::NewFile::new(&path, 0o666).map_err(|e| io(e.into()))?;
        new.file().write_all(CONTENT.as_bytes()).map_err(io)?;
        match new.publish() {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(io(e.into())),
            _ => Ok(()),
        }
    } else {
        etch_fs::replace(&path, CONTENT.as_bytes(), etch_fs::Options::keep_mode())
            .map_err(|e| io(e.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Missing: written. The old ignore-all file: replaced. A user's own
    /// file: kept byte for byte.
    #[test]
    fn written_upgraded_or_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".gitignore");
        ensure(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), CONTENT);
        std::fs::write(&path, "*\n").unwrap();
        ensure(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), CONTENT);
        std::fs::write(&path, "sessions/\nmine\n").unwrap();
        ensure(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "sessions/\nmine\n");
        std::fs::write(&path, b"caf\xe9.txt\n").unwrap();
        ensure(dir.path()).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"caf\xe9.txt\n");
    }
}
