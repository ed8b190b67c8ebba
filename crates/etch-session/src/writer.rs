//! Appending events to a session file.
//!
//! Each event is serialized to one buffer ending in `\n` and written with a
//! single `write` on a file opened with `O_APPEND`, so a crash can tear at most
//! the line being written and never interleaves with earlier lines. The writer
//! holds an exclusive advisory lock for its lifetime, so two etch processes
//! cannot grow the same session into a confused tree. A session file is
//! created readable by its owner only (0600): it holds prompts, answers and
//! tool output; an existing file keeps the mode it has.
//!
//! A new session is written without a name (`etch_fs::NewFile`) and
//! published under its path only once its first events are in it (the
//! header; a fork's or an import's copied events too): a kill while it is
//! made leaves no empty or half-copied session behind.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::error::SessionError;
use crate::event::EnvelopeOut;
use crate::id::{new_id, now_rfc3339};

/// Told of every line a writer appends, after it is on disk, with the
/// session's id: how a server streams a log to its clients as it grows
/// without reading the file again. It runs while the writer is borrowed,
/// so it must only hand the line on (a channel send), never block.
pub type Tap = Arc<dyn Fn(&str, &Appended) + Send + Sync>;

/// An open, locked session file that events are appended to.
pub struct SessionWriter {
    /// The open file (exclusively locked; in append mode once it has its
    /// name).
    file: File,
    /// Path of the file, for messages.
    path: PathBuf,
    /// Session id.
    session_id: String,
    /// Id of the last appended event: the parent of the next one.
    leaf: Option<String>,
    /// Told of each appended line, if set.
    tap: Option<Tap>,
    /// The new file until it is published under `path`; `file` is the
    /// same open file (a duplicate descriptor). Dropped with the writer,
    /// it leaves nothing, and its assets directory goes too.
    unpublished: Option<etch_fs::NewFile>,
    /// A write failed (a full disk) and may have left part of its line:
    /// the next append first makes sure it starts a line of its own.
    unsure: bool,
}

impl std::fmt::Debug for SessionWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWriter")
            .field("path", &self.path)
            .field("session_id", &self.session_id)
            .field("leaf", &self.leaf)
            .field("tap", &self.tap.is_some())
            .finish_non_exhaustive()
    }
}

/// What an append produced: the new id and the exact line written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The new event's id.
    pub id: String,
    /// The JSON line as written, without the trailing newline.
    pub line: String,
}

impl Drop for SessionWriter {
    /// A session never published leaves nothing: the kernel frees its
    /// file, and the images it stored go with their directory (its id is
    /// new, so nothing else has stored any there).
    fn drop(&mut self) {
        if self.unpublished.is_some() {
            let _ = std::fs::remove_dir_all(crate::assets::Assets::of(&self.path).dir());
        }
    }
}

impl SessionWriter {
    /// Starts a new session file, owner-only (0600), in `path`'s
    /// directory but without a name: events appended go into it, and
    /// [`Self::publish`] gives it `path` once they are all there. Dropped
    /// before that, it leaves nothing.
    pub(crate) fn create_unpublished(path: &Path, session_id: &str) -> Result<Self, SessionError> {
        let io = |source| SessionError::Io {
            action: "create session file",
            path: path.to_path_buf(),
            source,
        };
        let mut new = etch_fs::NewFile::new(path, crate::PRIVATE_FILE).map_err(|e| io(e.into()))?;
        let file = new.file().try_clone().map_err(io)?;
        let mut writer = Self::locked(file, path, session_id, None)?;
        writer.unpublished = Some(new);
        Ok(writer)
    }

    /// Gives an unpublished session file its path; from then on each
    /// event is appended (`O_APPEND`). Fails if a file has that path; the
    /// file is then gone, and the writer must be dropped.
    pub(crate) fn publish(&mut self) -> Result<(), SessionError> {
        let io = |source| SessionError::Io {
            action: "create session file",
            path: self.path.clone(),
            source,
        };
        let Some(new) = self.unpublished.take() else {
            return Ok(());
        };
        // Usually another descriptor of `self.file`'s open file (its lock
        // and offset shared); where the filesystem would not name an
        // unnamed file, a named copy, which this writer locks and takes.
        let named = new.publish().map_err(|e| io(e.into()))?;
        match named.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(SessionError::Busy {
                    path: self.path.clone(),
                });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(io(source)),
        }
        etch_fs::set_append(&named).map_err(io)?;
        self.file = named;
        Ok(())
    }

    /// Whether the file has its name (see [`Self::publish`]): a writer
    /// whose session is still being made has none.
    pub fn is_published(&self) -> bool {
        self.unpublished.is_none()
    }

    /// Opens an existing session file for appending after `leaf`.
    ///
    /// A torn last line (no trailing newline) is closed with a newline first,
    /// so the next event starts on a line of its own and the torn fragment
    /// stays a reportable malformed line instead of corrupting new data.
    pub fn open(path: &Path, session_id: &str, leaf: Option<String>) -> Result<Self, SessionError> {
        let file = OpenOptions::new()
            .append(true)
            .read(true)
            .open(path)
            .map_err(|source| SessionError::Io {
                action: "open session file",
                path: path.to_path_buf(),
                source,
            })?;
        let mut writer = Self::locked(file, path, session_id, leaf)?;
        if !writer.ends_with_newline()? {
            writer.write_raw(b"\n")?;
        }
        Ok(writer)
    }

    /// Takes the exclusive lock or reports the session as busy.
    fn locked(
        file: File,
        path: &Path,
        session_id: &str,
        leaf: Option<String>,
    ) -> Result<Self, SessionError> {
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(SessionError::Busy {
                    path: path.to_path_buf(),
                });
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(SessionError::Io {
                    action: "lock session file",
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
        Ok(Self {
            file,
            path: path.to_path_buf(),
            session_id: session_id.to_string(),
            leaf,
            tap: None,
            unpublished: None,
            unsure: false,
        })
    }

    /// Whether the file is empty or its last byte is a newline.
    fn ends_with_newline(&mut self) -> Result<bool, SessionError> {
        let io = |source| SessionError::Io {
            action: "read session file",
            path: self.path.clone(),
            source,
        };
        let len = self.file.metadata().map_err(io)?.len();
        if len == 0 {
            return Ok(true);
        }
        let mut last = [0u8; 1];
        self.file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
        self.file.read_exact(&mut last).map_err(io)?;
        Ok(last[0] == b'\n')
    }

    /// Writes bytes at the end of the file in one call.
    fn write_raw(&mut self, bytes: &[u8]) -> Result<(), SessionError> {
        let written = self
            .file
            .write_all(bytes)
            .map_err(|source| SessionError::Io {
                action: "append to",
                path: self.path.clone(),
                source,
            });
        if written.is_err() {
            self.unsure = true;
        }
        written
    }

    /// Appends one event of type `kind` whose parent is the current leaf, and
    /// makes it the new leaf.
    pub fn append<T: Serialize>(&mut self, kind: &str, data: &T) -> Result<Appended, SessionError> {
        let id = new_id();
        let time = now_rfc3339();
        let parent = self.leaf.clone();
        self.write_event(kind, id, parent.as_deref(), &time, data)
    }

    /// Appends a copy of `event` (same type, id, time and data) under
    /// `parent`, for a fork: ids that other events refer to (a summary's
    /// first kept event, a label's target) stay valid in the copy.
    pub(crate) fn append_copy(
        &mut self,
        event: &crate::event::Event,
        parent: Option<&str>,
    ) -> Result<Appended, SessionError> {
        self.write_event(
            &event.kind,
            event.id.clone(),
            parent,
            &event.time,
            &event.data,
        )
    }

    /// Appends an event as another log had it (an import): its own id,
    /// parent and time. The caller keeps ids unique and parents earlier.
    ///
    /// # Errors
    /// When the line cannot be encoded or written.
    pub fn append_as<T: Serialize + ?Sized>(
        &mut self,
        kind: &str,
        id: String,
        parent: Option<&str>,
        time: &str,
        data: &T,
    ) -> Result<Appended, SessionError> {
        self.write_event(kind, id, parent, time, data)
    }

    /// Writes one envelope line and makes `id` the new leaf.
    fn write_event<T: Serialize + ?Sized>(
        &mut self,
        kind: &str,
        id: String,
        parent: Option<&str>,
        time: &str,
        data: &T,
    ) -> Result<Appended, SessionError> {
        let envelope = EnvelopeOut {
            kind,
            id: &id,
            parent_id: parent,
            time,
            data,
        };
        let mut buf = serde_json::to_vec(&envelope).map_err(|source| SessionError::Encode {
            kind: kind.to_string(),
            source,
        })?;
        buf.push(b'\n');
        // After a failed write, part of its line may be there: close it,
        // so this event is a line of its own and the fragment a
        // malformed line the loader reports.
        if self.unsure {
            if !self.ends_with_newline()? {
                self.write_raw(b"\n")?;
            }
            self.unsure = false;
        }
        self.write_raw(&buf)?;
        buf.pop();
        // serde_json only ever produces UTF-8.
        let line = String::from_utf8_lossy(&buf).into_owned();
        self.leaf = Some(id.clone());
        let appended = Appended { id, line };
        if let Some(tap) = &self.tap {
            tap(&self.session_id, &appended);
        }
        Ok(appended)
    }

    /// Tells `tap` of every line appended from now on (`None` stops).
    pub fn set_tap(&mut self, tap: Option<Tap>) {
        self.tap = tap;
    }

    /// The tap set, for a writer that takes this one's place.
    pub fn tap(&self) -> Option<Tap> {
        self.tap.clone()
    }

    /// The session file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores the bytes of every image among `parts` in the session's
    /// assets, before the event that refers to them is appended: a log
    /// line never names an image that is not on disk.
    ///
    /// # Errors
    /// When an image file cannot be written.
    pub fn store_images(&self, parts: &[etch_model::ContentPart]) -> Result<(), SessionError> {
        let assets = crate::assets::Assets::of(&self.path);
        for part in parts {
            if let etch_model::ContentPart::Image(image) = part {
                assets.store(image)?;
            }
        }
        Ok(())
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The id of the last appended event.
    pub fn leaf(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// Makes `id` the parent of the next event. Only for moving the leaf
    /// to an event the caller checked exists in this session
    /// ([`crate::navigate`] does, and records the move).
    pub(crate) fn set_leaf(&mut self, id: String) {
        self.leaf = Some(id);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A tap hears every appended line after it is on disk, with the
    /// session id, and a writer that takes its place can carry it on.
    #[test]
    fn a_tap_hears_each_line_after_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let heard: Arc<Mutex<Vec<(String, String, usize)>>> = Arc::default();
        let mut writer = SessionWriter::create_unpublished(&path, "s1").unwrap();
        writer.publish().unwrap();
        writer
            .append("session.info", &serde_json::json!({"name": "before"}))
            .unwrap();
        let seen = Arc::clone(&heard);
        let file = path.clone();
        writer.set_tap(Some(Arc::new(move |session: &str, appended: &Appended| {
            let on_disk = std::fs::read_to_string(&file).unwrap_or_default();
            assert!(on_disk.contains(&appended.line), "tapped before the write");
            seen.lock().unwrap().push((
                session.to_owned(),
                appended.id.clone(),
                on_disk.lines().count(),
            ));
        })));
        let a = writer
            .append("session.info", &serde_json::json!({"name": "a"}))
            .unwrap();
        let carried = writer.tap();
        writer.set_tap(None);
        writer
            .append("session.info", &serde_json::json!({"name": "unheard"}))
            .unwrap();
        writer.set_tap(carried);
        let b = writer
            .append("session.info", &serde_json::json!({"name": "b"}))
            .unwrap();
        assert_eq!(
            *heard.lock().unwrap(),
            [("s1".to_owned(), a.id, 2), ("s1".to_owned(), b.id, 4)]
        );
    }
}
