//! The session directory: creating sessions, listing them and resolving id
//! prefixes (C4, G2, C27, G23).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::{ResolveError, SessionError};
use crate::event::{FORMAT_VERSION, SessionStarted, types};
use crate::id::{is_ulid, new_id, now_rfc3339};
use crate::index::{self, IndexRow};
use crate::loader::{LoadedSession, load_session};
use crate::writer::{Appended, SessionWriter};

/// Creates `dir` owner-only (0700) if it is missing; missing parents are
/// created as any directory would be (they may be a project's `.etch`,
/// which holds files meant to be shared), and a directory that exists
/// keeps its mode: etch never changes a user's permissions.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new()
        .mode(crate::PRIVATE_DIR)
        .create(dir)
    {
        // Another etch process made it first.
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        result => result,
    }
}

/// Number of trailing id characters a prefix may also match (C27).
const SUFFIX_CHARS: usize = 10;

/// The event types a child session copies from its parent: what the
/// model saw (E-SUB-07).
const MODEL_VISIBLE: [&str; 5] = [
    types::MESSAGE_USER,
    types::MESSAGE_ASSISTANT,
    types::MESSAGE_TOOL,
    types::CONTEXT_SUMMARY,
    types::CONTEXT_BRANCH_SUMMARY,
];

/// What makes a session a subagent's child, besides its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    /// The parent's `task` call that asked for the child.
    pub parent_tool_call_id: String,
    /// The subagent profile it runs.
    pub profile: String,
}

/// A directory of session files plus its index.
#[derive(Debug, Clone)]
pub struct SessionStore {
    /// The session directory (absolute).
    dir: PathBuf,
}

/// Parameters of a new session's `session.started` event.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// Working directory.
    pub cwd: String,
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// OpenAI API shape, when relevant.
    pub openai_api: Option<String>,
    /// Base URL of the provider's endpoint, when it has one.
    pub base_url: Option<String>,
    /// Version of etch.
    pub etch_version: String,
    /// The first prompt, for the index title.
    pub first_prompt: String,
}

/// Copies the events of `origin` at `indices` into `writer`, each chained
/// to the one before it, after the images they name: no copied line names
/// a file the new session lacks.
fn copy_events<'a>(
    writer: &mut SessionWriter,
    origin: &LoadedSession,
    indices: impl Iterator<Item = &'a usize>,
) -> Result<(), SessionError> {
    let copied: Vec<&crate::event::Event> = indices.map(|&index| &origin.events[index]).collect();
    crate::assets::Assets::of(writer.path())
        .adopt(&crate::assets::Assets::of(&origin.path), &copied)?;
    for event in copied {
        let parent = writer.leaf().map(str::to_owned);
        writer.append_copy(event, parent.as_deref())?;
    }
    Ok(())
}

/// A session being made: its events are written to a file that has no
/// name yet, so a kill leaves nothing of it; [`Unpublished::publish`]
/// names the file and adds its index row.
#[derive(Debug)]
pub struct Unpublished {
    /// Appends to the new file.
    pub writer: SessionWriter,
    /// The `session.started` event written.
    pub header: Appended,
    /// The index row it gets when published.
    row: IndexRow,
}

impl Unpublished {
    /// Sets the title the index row gets (the first prompt's by
    /// default).
    pub fn set_title(&mut self, title: &str) {
        self.row.title = index::title_from_prompt(title);
    }

    /// Gives the file its path and adds the index row; returns the
    /// writer (appending from now on) and the header.
    ///
    /// # Errors
    /// When the file cannot be named or the index row written.
    pub fn publish(
        mut self,
        store: &SessionStore,
    ) -> Result<(SessionWriter, Appended), SessionError> {
        self.writer.publish()?;
        index::append_row(&store.dir, &self.row)?;
        Ok((self.writer, self.header))
    }
}

impl SessionStore {
    /// A store rooted at `dir`, which need not exist yet.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The session directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates a session: the directory (with `.etch/.gitignore` when it
    /// lies in an `.etch` directory, G2), the file with its
    /// `session.started` event, and the index row.
    pub fn create(&self, new: &NewSession) -> Result<(SessionWriter, Appended), SessionError> {
        self.begin(new, None, None, None)?.publish(self)
    }

    /// Creates the child session of a subagent (E-SUB-06..09): its
    /// `session.started` names the parent session, the parent's tool
    /// call, the profile, and the parent file with the assistant event
    /// `before` that asked for the child; it holds copies (same ids, times
    /// and data) of the parent branch's model-visible events before
    /// `before` (user, assistant and tool messages and summaries), so the
    /// child starts from what the parent knew, without the unfinished
    /// tool-call batch, and resuming it rebuilds the same context. Usage,
    /// metrics, provider-native items and everything else the parent
    /// logged stay with the parent (E-SUB-07). The parent is not changed.
    pub fn create_child(
        &self,
        parent: &LoadedSession,
        before: &str,
        new: &NewSession,
        lineage: &Lineage,
    ) -> Result<(SessionWriter, Appended), SessionError> {
        let Some(branch) = crate::tree::branch_to(parent, before) else {
            return Err(SessionError::UnknownEvent {
                path: parent.path.clone(),
                id: before.to_owned(),
            });
        };
        let fork = (parent.path.clone(), before.to_owned());
        let child = (parent.session_id().to_owned(), lineage.clone());
        let mut made = self.begin(new, Some(fork), Some(child), None)?;
        let writer = &mut made.writer;
        let copied = branch
            .iter()
            .skip(1)
            .take(branch.len().saturating_sub(2))
            .map(|&index| &parent.events[index])
            .filter(|event| MODEL_VISIBLE.contains(&event.kind.as_str()));
        for event in copied {
            let previous = writer.leaf().map(str::to_owned);
            writer.append_copy(event, previous.as_deref())?;
        }
        made.publish(self)
    }

    /// Forks the branch of `origin` that leads to the event `before` into a
    /// new session: its `session.started` names the origin file and
    /// `before`, and it holds copies (same ids, times and data) of the
    /// branch's events before `before`, so it reads on its own and a run
    /// continues from there, as if `before` had never been written (Pi's
    /// fork from a user message, to edit it). The origin is not changed.
    /// An id the origin does not hold is an error naming it.
    pub fn fork(
        &self,
        origin: &LoadedSession,
        before: &str,
        new: &NewSession,
    ) -> Result<(SessionWriter, Appended), SessionError> {
        let Some(branch) = crate::tree::branch_to(origin, before) else {
            return Err(SessionError::UnknownEvent {
                path: origin.path.clone(),
                id: before.to_owned(),
            });
        };
        let fork = (origin.path.clone(), before.to_owned());
        let mut made = self.begin(new, Some(fork), None, None)?;
        // The branch without the origin's header and without `before`,
        // each copy chained to the one before it in the new file.
        let copied = branch.iter().skip(1).take(branch.len().saturating_sub(2));
        copy_events(&mut made.writer, origin, copied)?;
        made.publish(self)
    }

    /// Copies the whole active branch of `origin`, its leaf included, into
    /// a new session (Pi's `clone`): same ids, times and data. The origin
    /// is not changed.
    ///
    /// # Errors
    /// When the new session cannot be written.
    pub fn clone_branch(
        &self,
        origin: &LoadedSession,
        new: &NewSession,
    ) -> Result<(SessionWriter, Appended), SessionError> {
        // Not a fork: nothing of the origin is left out.
        let mut made = self.begin(new, None, None, None)?;
        copy_events(&mut made.writer, origin, origin.active.iter().skip(1))?;
        made.publish(self)
    }

    /// Starts a session imported from another agent's session (`from`):
    /// the importer appends its events with [`SessionWriter::append_as`]
    /// to [`Unpublished::writer`], then [`Unpublished::publish`]es it.
    /// Until then it has no file name and no index row, so an import
    /// that is stopped leaves nothing, and the next one starts over.
    ///
    /// # Errors
    /// When the directory or file cannot be written.
    pub fn create_imported(
        &self,
        new: &NewSession,
        from: crate::event::ImportedFrom,
    ) -> Result<Unpublished, SessionError> {
        self.begin(new, None, None, Some(from))
    }

    /// Starts a session, forked from `(origin file, event)` when given,
    /// as the child of `(parent session id, lineage)` when given: its
    /// header written to a file that has no name yet.
    fn begin(
        &self,
        new: &NewSession,
        fork: Option<(PathBuf, String)>,
        child: Option<(String, Lineage)>,
        imported: Option<crate::event::ImportedFrom>,
    ) -> Result<Unpublished, SessionError> {
        self.ensure_dir()?;
        let id = new_id();
        let path = index::session_path(&self.dir, &id);
        let mut writer = SessionWriter::create_unpublished(&path, &id)?;
        let header = SessionStarted {
            session_id: id.clone(),
            format_version: FORMAT_VERSION,
            cwd: new.cwd.clone(),
            etch_version: new.etch_version.clone(),
            provider: new.provider.clone(),
            model: new.model.clone(),
            openai_api: new.openai_api.clone(),
            base_url: new.base_url.clone(),
            parent_session_id: child.as_ref().map(|(id, _)| id.clone()),
            parent_tool_call_id: child.as_ref().map(|(_, l)| l.parent_tool_call_id.clone()),
            subagent_profile: child.as_ref().map(|(_, l)| l.profile.clone()),
            fork_session_path: fork
                .as_ref()
                .map(|(path, _)| path.to_string_lossy().into_owned()),
            fork_before_event_id: fork.map(|(_, id)| id),
            imported_from: imported,
        };
        let header = writer.append(types::SESSION_STARTED, &header)?;
        let row = IndexRow {
            id,
            path: path.to_string_lossy().into_owned(),
            created_at: now_rfc3339(),
            cwd: new.cwd.clone(),
            title: index::title_from_prompt(&new.first_prompt),
            parent_session_id: child.map(|(id, _)| id),
        };
        Ok(Unpublished {
            writer,
            header,
            row,
        })
    }

    /// Creates the session directory and makes sure the `.etch` directory
    /// it lies in (if any) has etch's `.gitignore`, whoever created that
    /// directory (a user's `.etch/config.toml` often comes first).
    fn ensure_dir(&self) -> Result<(), SessionError> {
        create_private_dir(&self.dir).map_err(|source| SessionError::Io {
            action: "create session directory",
            path: self.dir.clone(),
            source,
        })?;
        if let Some(etch) = self
            .dir
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == ".etch"))
        {
            crate::gitignore::ensure(etch)?;
        }
        Ok(())
    }

    /// Every known session: index rows plus session files that have no row
    /// (a lost index line must not hide a session). Newest first.
    pub fn list(&self) -> Result<(Vec<IndexRow>, Vec<String>), SessionError> {
        if !self.dir.exists() {
            return Ok((Vec::new(), Vec::new()));
        }
        let (all, warnings) = index::read_rows(&self.dir)?;
        // The first row of an id describes the session; a later row for
        // the same id renames it (the chat's /name appends one).
        let mut rows: Vec<IndexRow> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for row in all {
            if let Some(&i) = at.get(&row.id) {
                rows[i].title = row.title;
            } else {
                at.insert(row.id.clone(), rows.len());
                rows.push(row);
            }
        }
        let mut seen: HashSet<String> = at.into_keys().collect();
        let entries = std::fs::read_dir(&self.dir).map_err(|source| SessionError::Io {
            action: "read session directory",
            path: self.dir.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            if is_ulid(stem) && !seen.contains(stem) {
                seen.insert(stem.to_string());
                rows.push(IndexRow {
                    id: stem.to_string(),
                    path: entry.path().to_string_lossy().into_owned(),
                    created_at: ulid_time(stem),
                    cwd: String::new(),
                    title: "(not in index)".to_string(),
                    parent_session_id: None,
                });
            }
        }
        rows.sort_by(|a, b| b.id.cmp(&a.id));
        Ok((rows, warnings))
    }

    /// Renames the session `id` in the index: a row with the new title is
    /// appended (the log itself is not touched), and [`Self::list`] shows
    /// the latest title.
    pub fn rename(&self, id: &str, title: &str) -> Result<IndexRow, SessionError> {
        let (rows, _) = self.list()?;
        let Some(mut row) = rows.into_iter().find(|r| r.id == id) else {
            return Err(SessionError::Io {
                action: "find the session in the index",
                path: self.dir.join(index::INDEX_FILE),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no session {id}"),
                ),
            });
        };
        row.title = index::title_from_prompt(title);
        index::append_row(&self.dir, &row)?;
        Ok(row)
    }

    /// The top-level session most recently written to (its file's
    /// modification time, then the newest id): what `etch resume --last`
    /// and a command given no prefix mean. A subagent's child is never
    /// it; name a child to open one.
    pub fn last(&self) -> Result<Option<IndexRow>, SessionError> {
        let (rows, _) = self.list()?;
        Ok(rows
            .into_iter()
            .filter(|row| row.parent_session_id.is_none())
            .max_by_key(|row| {
                let written = std::fs::metadata(self.session_file(row))
                    .and_then(|m| m.modified())
                    .ok();
                (written, row.id.clone())
            }))
    }

    /// Resolves a prefix of a full id, or of an id's last 10 characters, to
    /// exactly one session (C27, G23). Matching ignores case.
    pub fn resolve(&self, prefix: &str) -> Result<IndexRow, ResolveError> {
        let wanted = prefix.trim().to_ascii_uppercase();
        if wanted.is_empty() {
            return Err(ResolveError::Empty);
        }
        let (rows, _) = self.list()?;
        let mut matches: Vec<IndexRow> = rows
            .into_iter()
            .filter(|r| {
                let id = r.id.to_ascii_uppercase();
                let tail = &id[id.len().saturating_sub(SUFFIX_CHARS)..];
                id.starts_with(&wanted) || tail.starts_with(&wanted)
            })
            .collect();
        match matches.len() {
            0 => Err(ResolveError::Unknown(prefix.to_string())),
            1 => Ok(matches.remove(0)),
            total => Err(ResolveError::Ambiguous {
                prefix: prefix.to_string(),
                candidates: matches
                    .into_iter()
                    .take(crate::error::AMBIGUOUS_SHOWN)
                    .collect(),
                total,
            }),
        }
    }

    /// Loads a session and opens it for appending after its leaf.
    pub fn open(&self, row: &IndexRow) -> Result<(LoadedSession, SessionWriter), SessionError> {
        let path = self.session_file(row);
        let loaded = load_session(&path)?;
        let writer = SessionWriter::open(
            &path,
            loaded.session_id(),
            loaded.leaf().map(str::to_string),
        )?;
        Ok((loaded, writer))
    }

    /// The file of an index row: its recorded path when it exists, otherwise
    /// `<dir>/<id>.jsonl` (the directory may have been moved).
    pub fn session_file(&self, row: &IndexRow) -> PathBuf {
        let recorded = PathBuf::from(&row.path);
        if recorded.exists() {
            recorded
        } else {
            index::session_path(&self.dir, &row.id)
        }
    }
}

/// The creation time encoded in a ULID, as RFC 3339.
fn ulid_time(id: &str) -> String {
    ulid::Ulid::from_string(id)
        .ok()
        .map(|u| {
            let dt: chrono::DateTime<chrono::Utc> = u.datetime().into();
            dt.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::UserData;
    use etch_model::ContentPart;

    /// The permission bits of `path`.
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// A new session directory is 0700, and its session files and index
    /// 0600, whatever the umask allows beyond that.
    #[test]
    fn new_sessions_are_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(".etch/sessions");
        let store = SessionStore::new(dir.clone());
        let (writer, _) = store.create(&new_session("secret")).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(writer.path()), 0o600);
        assert_eq!(mode(&dir.join(index::INDEX_FILE)), 0o600);
        drop(writer);
        // A second session in the same directory is private too.
        let (writer, _) = store.create(&new_session("more")).unwrap();
        assert_eq!(mode(writer.path()), 0o600);
    }

    /// A directory or index the user made keeps its mode: etch narrows
    /// only what it creates.
    #[test]
    fn existing_modes_are_kept() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("sessions");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
        let index = dir.join(index::INDEX_FILE);
        std::fs::write(&index, "").unwrap();
        std::fs::set_permissions(&index, std::fs::Permissions::from_mode(0o640)).unwrap();
        let store = SessionStore::new(dir.clone());
        let (writer, _) = store.create(&new_session("x")).unwrap();
        assert_eq!(mode(&dir), 0o750);
        assert_eq!(mode(&index), 0o640);
        assert_eq!(mode(writer.path()), 0o600);
    }

    /// Parameters for test sessions.
    fn new_session(prompt: &str) -> NewSession {
        NewSession {
            cwd: "/w".into(),
            provider: "echo".into(),
            model: "echo".into(),
            openai_api: None,
            base_url: None,
            etch_version: "0.1.0".into(),
            first_prompt: prompt.into(),
        }
    }

    /// An import is written without a file name or index row: nothing
    /// is listed until it is published (whole, with its title), and one
    /// dropped before that leaves no file behind.
    #[test]
    fn a_session_being_imported_is_invisible_until_published() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::new(root.path().join("sessions"));
        let from = || crate::event::ImportedFrom {
            agent: "pi".to_owned(),
            path: "/x.jsonl".to_owned(),
            session_id: "p1".to_owned(),
            version: 3,
            size: 1,
            modified: 0,
        };
        let mut made = store
            .create_imported(&new_session("first"), from())
            .unwrap();
        made.writer
            .append("session.info", &serde_json::json!({"name": "n"}))
            .unwrap();
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend_from_slice(b"pixels");
        let image = etch_model::Image::new(png, etch_model::MediaType::Png, 1, 1);
        made.writer
            .store_images(&[etch_model::ContentPart::Image(image)])
            .unwrap();
        assert!(!made.writer.is_published());
        assert!(store.list().unwrap().0.is_empty());
        // (A filesystem without unnamed files shows the session being
        // made under a temporary name, which is not counted.)
        let names = |dir: &Path| {
            std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| !name.contains(".etch-tmp-"))
                .collect::<Vec<_>>()
        };
        // Only the images' directory is there while it is made.
        assert_eq!(names(store.dir()).len(), 1, "{:?}", names(store.dir()));
        drop(made);
        assert!(
            names(store.dir()).is_empty(),
            "a dropped import left {:?}",
            names(store.dir())
        );

        let mut made = store
            .create_imported(&new_session("first"), from())
            .unwrap();
        made.set_title("the imported one");
        let (writer, header) = made.publish(&store).unwrap();
        assert!(writer.is_published());
        let (rows, _) = store.list().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].title, "the imported one");
        let loaded = crate::load_session(&store.session_file(&rows[0])).unwrap();
        assert_eq!(loaded.events[0].id, header.id);
        // Published, the file is appended to.
        drop(writer);
        let mut writer =
            SessionWriter::open(&store.session_file(&rows[0]), &rows[0].id, Some(header.id))
                .unwrap();
        writer
            .append("session.info", &serde_json::json!({"name": "later"}))
            .unwrap();
        let loaded = crate::load_session(&store.session_file(&rows[0])).unwrap();
        assert_eq!(loaded.events.len(), 2);
    }

    /// G2: creating `.etch/sessions` writes `.etch/.gitignore` (etch's own
    /// state only), and
    /// the new session is listed and resolvable by either prefix rule.
    #[test]
    fn create_list_resolve() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::new(root.path().join(".etch/sessions"));
        let (writer, first) = store.create(&new_session("hello world")).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.path().join(".etch/.gitignore")).unwrap(),
            crate::gitignore::CONTENT
        );
        assert!(
            first
                .line
                .starts_with(r#"{"type":"session.started","id":""#)
        );
        let id = writer.session_id().to_string();
        drop(writer);
        let (rows, _) = store.list().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].title, "hello world");
        let renamed = store.rename(&rows[0].id, "  a  better\nname ").unwrap();
        assert_eq!(renamed.title, "a better");
        let (rows, _) = store.list().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].title, "a better");
        assert_eq!(rows[0].created_at, renamed.created_at);
        assert_eq!(store.resolve(&id[..6]).unwrap().id, id);
        assert_eq!(store.resolve(&id[16..20].to_lowercase()).unwrap().id, id);
        assert!(matches!(
            store.resolve("zzzz"),
            Err(ResolveError::Unknown(_))
        ));
        assert!(matches!(store.resolve(" "), Err(ResolveError::Empty)));
    }

    /// G23: a prefix matching two sessions names both ids.
    #[test]
    fn ambiguous_prefix_lists_ids() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::new(root.path());
        let a = store
            .create(&new_session("a"))
            .unwrap()
            .0
            .session_id()
            .to_string();
        let b = store
            .create(&new_session("b"))
            .unwrap()
            .0
            .session_id()
            .to_string();
        let err = store.resolve(&a[..2]).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "session prefix \"{}\" is ambiguous: 2 sessions match; give more of the id\n",
                &a[..2]
            )),
            "{err}"
        );
        // One per line, with age and title.
        for (id, title) in [(&a, "a"), (&b, "b")] {
            assert!(
                err.lines().any(|l| l.starts_with(&format!("  {id}  "))
                    && l.contains(" s ago  ")
                    && l.ends_with(title)),
                "{err}"
            );
        }
    }

    /// More than ten matches list the newest ten and say how many there
    /// were.
    #[test]
    fn a_very_ambiguous_prefix_lists_ten() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::new(root.path());
        for i in 0..12 {
            store.create(&new_session(&format!("s{i}"))).unwrap();
        }
        let err = store.resolve("0").unwrap_err().to_string();
        assert!(
            err.contains("12 sessions match (the newest 10 shown)"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 11, "{err}");
    }

    /// `last` is the top-level session written to most recently, never a
    /// subagent's child, whichever was created last.
    #[test]
    fn last_is_the_session_written_to_most_recently() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::new(root.path());
        let (mut older, _) = store.create(&new_session("older")).unwrap();
        let (newer, _) = store.create(&new_session("newer")).unwrap();
        // Files made in one clock tick have the same time (and ids made
        // in one millisecond no order): the older one is dated back.
        let earlier = std::time::SystemTime::now() - std::time::Duration::from_secs(5);
        std::fs::File::options()
            .append(true)
            .open(older.path())
            .unwrap()
            .set_modified(earlier)
            .unwrap();
        assert_eq!(store.last().unwrap().unwrap().id, newer.session_id());
        // Writing to the older one makes it the last.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        older
            .append(
                "message.user",
                &serde_json::json!({"content": [{"type": "text", "text": "again"}]}),
            )
            .unwrap();
        std::fs::File::options()
            .append(true)
            .open(older.path())
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(store.last().unwrap().unwrap().id, older.session_id());
    }

    /// A session whose index row was lost is still listed and resolvable.
    #[test]
    fn sessions_without_index_rows_are_found() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::new(root.path());
        let id = store
            .create(&new_session("a"))
            .unwrap()
            .0
            .session_id()
            .to_string();
        std::fs::remove_file(root.path().join(index::INDEX_FILE)).unwrap();
        assert_eq!(store.resolve(&id).unwrap().id, id);
    }

    /// Reopening appends after the leaf, and a second writer is refused while
    /// the first holds the session.
    #[test]
    fn reopen_appends_after_leaf_and_locks() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::new(root.path());
        let (mut w, header) = store.create(&new_session("a")).unwrap();
        let user = UserData {
            content: vec![ContentPart::text("a")],
        };
        let first = w.append(types::MESSAGE_USER, &user).unwrap();
        let row = store.resolve(w.session_id()).unwrap();
        assert!(matches!(store.open(&row), Err(SessionError::Busy { .. })));
        drop(w);
        let (loaded, mut w2) = store.open(&row).unwrap();
        assert_eq!(loaded.leaf(), Some(first.id.as_str()));
        let second = w2.append(types::MESSAGE_USER, &user).unwrap();
        assert!(
            second
                .line
                .contains(&format!("\"parentId\":\"{}\"", first.id))
        );
        assert!(header.line.contains("\"parentId\":null"));
    }

    /// A fork at the second prompt holds the first exchange only, names
    /// its origin, reads without warnings and continues on its own; the
    /// origin is unchanged; an unknown id is refused.
    #[test]
    fn fork_copies_the_branch_before_the_event() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::new(root.path().join("sessions"));
        let (mut writer, _) = store.create(&new_session("origin")).unwrap();
        let user = |w: &mut SessionWriter, text: &str| {
            w.append(
                types::MESSAGE_USER,
                &UserData {
                    content: vec![ContentPart::text(text)],
                },
            )
            .unwrap()
            .id
        };
        let first = user(&mut writer, "first");
        let second = user(&mut writer, "second");
        let origin = crate::load_session(writer.path()).unwrap();
        let before = std::fs::read(writer.path()).unwrap();
        let err = store
            .fork(&origin, "NOPE", &new_session("fork"))
            .unwrap_err();
        assert!(err.to_string().contains("has no event NOPE"), "{err}");
        let (mut forked, _) = store.fork(&origin, &second, &new_session("fork")).unwrap();
        user(&mut forked, "edited second");
        let copy = crate::load_session(forked.path()).unwrap();
        assert!(copy.warnings.is_empty(), "{:?}", copy.warnings);
        assert_eq!(
            copy.header.fork_session_path.as_deref(),
            Some(writer.path().to_string_lossy().as_ref())
        );
        assert_eq!(
            copy.header.fork_before_event_id.as_deref(),
            Some(second.as_str())
        );
        assert_eq!(copy.events[1].id, first);
        assert_eq!(
            crate::project_messages(&copy).messages,
            vec![
                etch_model::Message::user_text("first"),
                etch_model::Message::user_text("edited second")
            ]
        );
        assert_eq!(std::fs::read(writer.path()).unwrap(), before);
        assert_eq!(store.list().unwrap().0.len(), 2);
    }

    /// A fork gets the files of the images its copied events name, and
    /// projects them with their bytes.
    #[test]
    fn a_fork_adopts_the_images_it_copies() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::new(root.path().join("sessions"));
        let (mut writer, _) = store.create(&new_session("origin")).unwrap();
        let bytes = b"\x89PNG\r\n\x1a\npixels".to_vec();
        let image = etch_model::Image::new(bytes.clone(), etch_model::MediaType::Png, 2, 1);
        let content = vec![ContentPart::text("see"), ContentPart::Image(image.clone())];
        writer.store_images(&content).unwrap();
        writer
            .append(types::MESSAGE_USER, &UserData { content })
            .unwrap();
        let later = writer
            .append(
                types::MESSAGE_USER,
                &UserData {
                    content: vec![ContentPart::text("later")],
                },
            )
            .unwrap()
            .id;
        let origin = crate::load_session(writer.path()).unwrap();
        let (forked, _) = store.fork(&origin, &later, &new_session("fork")).unwrap();
        let copy = crate::load_session(forked.path()).unwrap();
        let stored = crate::Assets::of(forked.path()).path(&image);
        assert_eq!(std::fs::read(stored).unwrap(), bytes);
        let projected = crate::project_messages(&copy);
        assert!(projected.warnings.is_empty(), "{:?}", projected.warnings);
        let etch_model::Message::User { content } = &projected.messages[0] else {
            panic!("not a user message");
        };
        let ContentPart::Image(loaded) = &content[1] else {
            panic!("no image: {content:?}");
        };
        assert_eq!(loaded.data(), Some(bytes.as_slice()));
    }

    /// A child copies only what the model saw before the assistant event
    /// that asked for it, names its parent in its header and index row,
    /// and projects like the parent did at that point, without the
    /// provider-native item and with no usage of its own.
    #[test]
    fn child_copies_the_model_visible_branch_before_the_task_call() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::new(root.path().join("sessions"));
        let (mut writer, _) = store.create(&new_session("parent")).unwrap();
        let mut add = |kind: &str, data: serde_json::Value| writer.append(kind, &data).unwrap().id;
        add(
            types::MESSAGE_USER,
            serde_json::json!({"content": [{"type": "text", "text": "look around"}]}),
        );
        add(
            types::MODEL_PROVIDER_ITEM,
            serde_json::json!({"provider": "openai", "api": "responses", "itemType": "reasoning", "item": {"x": 1}}),
        );
        add(
            types::MESSAGE_ASSISTANT,
            serde_json::json!({"content": [{"type": "text", "text": "found it"}], "provider": "openai", "model": "m"}),
        );
        add(
            types::MODEL_USAGE,
            serde_json::json!({"inputTokens": 10, "outputTokens": 2}),
        );
        add(
            types::MESSAGE_USER,
            serde_json::json!({"content": [{"type": "text", "text": "delegate"}]}),
        );
        let task = add(
            types::MESSAGE_ASSISTANT,
            serde_json::json!({"content": [{"type": "tool_call", "id": "call_t", "name": "task", "arguments": {"profile": "explore", "task": "x"}}], "provider": "openai", "model": "m"}),
        );
        let parent = crate::load_session(writer.path()).unwrap();
        let lineage = Lineage {
            parent_tool_call_id: "call_t".into(),
            profile: "explore".into(),
        };
        let (child, _) = store
            .create_child(&parent, &task, &new_session("x"), &lineage)
            .unwrap();
        let loaded = crate::load_session(child.path()).unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let header = &loaded.header;
        assert_eq!(
            header.parent_session_id.as_deref(),
            Some(parent.session_id())
        );
        assert_eq!(header.parent_tool_call_id.as_deref(), Some("call_t"));
        assert_eq!(header.subagent_profile.as_deref(), Some("explore"));
        assert_eq!(header.fork_before_event_id.as_deref(), Some(task.as_str()));
        assert_eq!(
            header.fork_session_path.as_deref(),
            Some(writer.path().to_string_lossy().as_ref())
        );
        let kinds: Vec<&str> = loaded.events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                types::SESSION_STARTED,
                types::MESSAGE_USER,
                types::MESSAGE_ASSISTANT,
                types::MESSAGE_USER
            ]
        );
        let projected = crate::project_messages(&loaded).messages;
        assert_eq!(projected.len(), 3);
        assert!(
            projected
                .iter()
                .all(|m| !matches!(m, etch_model::Message::ProviderItem(_)))
        );
        assert!(projected.iter().all(|m| m.tool_calls().is_empty()));
        let rows = store.list().unwrap().0;
        let row = rows.iter().find(|r| r.id == loaded.session_id()).unwrap();
        assert_eq!(row.parent_session_id.as_deref(), Some(parent.session_id()));
        assert!(
            store
                .create_child(&parent, "NOPE", &new_session("x"), &lineage)
                .is_err()
        );
    }
}
