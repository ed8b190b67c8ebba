//! Who holds a session open, for the process that finds it busy. The
//! session file's lock says only that some process appends to it; a
//! long-lived holder (`etch serve`) leaves a note beside it,
//! `<id>.holder`, with its pid and a description ("etch serve (pid N,
//! http://...)"), so `etch resume` can say where the session is served
//! instead of only that it is busy. A note whose process is gone (the
//! holder was killed) is ignored.
//!
//! This module owns the note's name and format; it must not know who
//! writes notes or how a front end words the refusal.

use std::path::{Path, PathBuf};

use crate::error::SessionError;

/// The note beside session file `file`.
fn note_of(file: &Path) -> PathBuf {
    file.with_extension("holder")
}

/// Leaves the note that this process holds `file`, described as `who`.
pub fn mark(file: &Path, who: &str) -> Result<(), SessionError> {
    let note = note_of(file);
    let text = format!("{}\n{}\n", std::process::id(), who.replace('\n', " "));
    etch_fs::replace(&note, text.as_bytes(), etch_fs::Options::keep_mode()).map_err(|e| {
        SessionError::Io {
            action: "write holder note",
            path: note,
            source: e.into(),
        }
    })
}

/// Removes this process's note beside `file`, if it is there.
pub fn clear(file: &Path) {
    let note = note_of(file);
    let ours = std::fs::read_to_string(&note)
        .ok()
        .is_some_and(|text| text.lines().next() == Some(std::process::id().to_string().as_str()));
    if ours {
        let _ = std::fs::remove_file(note);
    }
}

/// The description of the live process whose note is beside `file`.
pub fn read(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(note_of(file)).ok()?;
    let mut lines = text.lines();
    let pid: u32 = lines.next()?.trim().parse().ok()?;
    let who = lines.next()?.trim();
    (alive(pid) && !who.is_empty()).then(|| who.to_owned())
}

/// Whether process `pid` still runs (Linux's `/proc`; elsewhere a note
/// is believed).
fn alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A note is read back while its process lives, cleared only by it,
    /// and ignored once its pid is gone.
    #[test]
    fn notes_name_live_holders_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("01ABC.jsonl");
        assert_eq!(read(&file), None);
        mark(&file, "etch serve (pid 1, http://127.0.0.1:7411)").unwrap();
        assert_eq!(
            read(&file).as_deref(),
            Some("etch serve (pid 1, http://127.0.0.1:7411)")
        );
        clear(&file);
        assert_eq!(read(&file), None);

        // A note of a process that is gone (pid beyond pid_max).
        std::fs::write(note_of(&file), "4294967295\netch serve (gone)\n").unwrap();
        assert_eq!(read(&file), None);
        // Not ours: left for its writer.
        clear(&file);
        assert!(note_of(&file).exists());
    }
}
