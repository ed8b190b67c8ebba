//! Pi's session files (format v3; v1 and v2 migrated as Pi migrates
//! them) imported as etch sessions.
//!
//! A file is read one line at a time (Pi sessions of gigabytes exist,
//! mostly inline images), each entry written at once as the etch events
//! it becomes: the entry's own event keeps Pi's id, so the tree, labels,
//! compactions' first kept entries and branch summaries' origins read
//! the same; the events an entry adds (its reasoning before it, its
//! usage after) are chained around it, and a child of the entry hangs
//! from the last of them. The leaf is the last entry, as in Pi. Images
//! move to the session's assets. The `session.started` names the file,
//! its id and version, size and modification time: a file already
//! imported is skipped unless forced. Pi's files are only read.
//!
//! This module must not know about the command line: it reports what it
//! did as values.

pub mod convert;

use std::collections::HashMap;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use etch_session::store::NewSession;
use etch_session::{ImportedFrom, SessionStore, Unpublished};
use serde_json::Value;

use crate::ImportError;

/// The agent name recorded in `importedFrom`.
pub const AGENT: &str = "pi";

/// The longest line read: Pi's longest are messages with inline images
/// (a few MB each); a longer one is skipped, never held whole.
pub const MAX_LINE_BYTES: usize = 256 << 20;

/// The format version Pi writes today.
pub const CURRENT_VERSION: u32 = 3;

/// Pi's session directory for `cwd`: `$PI_CODING_AGENT_DIR` (else
/// `~/.pi/agent`) `/sessions/--<cwd, its separators as dashes>--`.
pub fn default_dir(agent_dir: Option<&Path>, home: &Path, cwd: &Path) -> PathBuf {
    let root = agent_dir.map_or_else(|| home.join(".pi").join("agent"), Path::to_path_buf);
    let text = cwd.to_string_lossy();
    let trimmed = text.strip_prefix(['/', '\\']).unwrap_or(&text);
    let safe: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    root.join("sessions").join(format!("--{safe}--"))
}

/// The `.jsonl` files among `paths` (a directory stands for the files in
/// it), sorted, each once.
///
/// # Errors
/// When a path does not exist or a directory cannot be read.
pub fn session_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ImportError> {
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|source| ImportError::Io {
            action: "read",
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|source| ImportError::Io {
                action: "list",
                path: path.clone(),
                source,
            })?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    files.dedup();
    Ok(files)
}

/// How an import goes.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Import again a file already imported (as a new session).
    pub force: bool,
    /// Read and count only; write nothing.
    pub dry_run: bool,
    /// The etch version to record.
    pub etch_version: String,
}

/// What became of one file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The file.
    pub path: PathBuf,
    /// Pi's session id.
    pub pi_id: String,
    /// Its format version as read.
    pub version: u32,
    /// The etch session written (or found, when skipped); none in a dry
    /// run.
    pub session_id: Option<String>,
    /// Already imported as `session_id`; nothing written.
    pub skipped: bool,
    /// Entries read, by Pi type (`message:user`, `compaction`, …).
    pub counts: std::collections::BTreeMap<String, usize>,
    /// Images moved to the assets.
    pub images: usize,
    /// Problems: lines that could not be read, images lost, parents not
    /// found.
    pub problems: Vec<String>,
}

impl Outcome {
    /// All entries read.
    pub fn entries(&self) -> usize {
        self.counts.values().sum()
    }
}

/// The etch sessions of `store` imported from Pi, by Pi session id.
///
/// # Errors
/// When the index cannot be read.
pub fn imported(store: &SessionStore) -> Result<HashMap<String, String>, ImportError> {
    let (rows, _) = store.list().map_err(ImportError::Session)?;
    let mut found = HashMap::new();
    for row in rows {
        let path = store.session_file(&row);
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        let mut first = Vec::new();
        let mut reader = std::io::BufReader::new(file);
        if reader.read_until(b'\n', &mut first).is_err() {
            continue;
        }
        let Ok(event) = serde_json::from_slice::<Value>(&first) else {
            continue;
        };
        let from = &event["data"]["importedFrom"];
        if from["agent"] == AGENT
            && let Some(id) = from["sessionId"].as_str()
        {
            found.insert(id.to_owned(), row.id.clone());
        }
    }
    Ok(found)
}

/// Imports the Pi session file at `path` into `store`, unless
/// `already` (Pi id → etch id) holds it and `options.force` is off.
///
/// # Errors
/// When the file cannot be read, is no Pi session (no header), or the
/// session cannot be written.
pub fn import_file<S: std::hash::BuildHasher>(
    path: &Path,
    store: &SessionStore,
    already: &HashMap<String, String, S>,
    options: &Options,
) -> Result<Outcome, ImportError> {
    let io = |action: &'static str| {
        let path = path.to_path_buf();
        move |source| ImportError::Io {
            action,
            path,
            source,
        }
    };
    let file = std::fs::File::open(path).map_err(io("open"))?;
    let meta = file.metadata().map_err(io("read"))?;
    let mut lines = Lines::new(std::io::BufReader::with_capacity(1 << 20, file));
    let header = lines.header(path)?;
    let pi_id = header
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let version = header
        .get("version")
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .unwrap_or(1);
    let mut outcome = Outcome {
        path: path.to_path_buf(),
        pi_id: pi_id.clone(),
        version,
        ..Outcome::default()
    };
    if let Some(existing) = already.get(&pi_id).filter(|_| !options.force) {
        outcome.session_id = Some(existing.clone());
        outcome.skipped = true;
        return Ok(outcome);
    }
    let cwd = header
        .get("cwd")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let time = header
        .get("timestamp")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut sink = if options.dry_run {
        None
    } else {
        let new = NewSession {
            cwd,
            provider: String::new(),
            model: String::new(),
            openai_api: None,
            base_url: None,
            etch_version: options.etch_version.clone(),
            first_prompt: format!("imported from Pi {pi_id}"),
        };
        let from = ImportedFrom {
            agent: AGENT.to_owned(),
            path: path.to_string_lossy().into_owned(),
            session_id: pi_id.clone(),
            version,
            size: meta.len(),
            modified: meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs()),
        };
        let made = store
            .create_imported(&new, from)
            .map_err(ImportError::Session)?;
        outcome.session_id = Some(made.writer.session_id().to_owned());
        Some(Sink::new(made))
    };
    let mut migrate = Migration::new(version);
    let mut title: Option<String> = None;
    let mut name: Option<String> = None;
    while let Some((line_no, line)) = lines.next_line().map_err(io("read"))? {
        let mut entry: Value = match serde_json::from_slice(&line) {
            Ok(entry) => entry,
            Err(err) => {
                outcome
                    .problems
                    .push(format!("line {line_no}: not JSON, skipped ({err})"));
                continue;
            }
        };
        migrate.apply(&mut entry);
        *outcome.counts.entry(count_key(&entry)).or_default() += 1;
        let reader = |data: &str, mime: &str| read_image(data, mime);
        let converted = convert::entry(&entry, &reader);
        for why in &converted.lost_images {
            outcome.problems.push(format!(
                "line {line_no}: an image could not be imported ({why})"
            ));
        }
        if converted.name.is_some() {
            name.clone_from(&converted.name);
        }
        if title.is_none() {
            title = first_user_text(&converted);
        }
        let Some(sink) = sink.as_mut() else {
            outcome.images += converted.images.len();
            continue;
        };
        let id = entry
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(etch_session::id::new_id, str::to_owned);
        let parent = entry.get("parentId").and_then(Value::as_str);
        let at = entry
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or(&time);
        match sink.write(&id, parent, at, converted) {
            Ok(written) => {
                outcome.images += written.images;
                if let Some(missing) = written.missing_parent {
                    outcome.problems.push(format!(
                        "line {line_no}: entry {id} names parent {missing}, which comes nowhere before it; it was attached to the session's start"
                    ));
                }
            }
            Err(err) => return Err(ImportError::Session(err)),
        }
    }
    outcome.problems.extend(lines.problems);
    // Only a whole import gets a name: one stopped on the way leaves
    // nothing, and the next import of this file starts over.
    if let Some(sink) = sink {
        let mut made = sink.made;
        if let Some(label) = name.or(title) {
            made.set_title(&label);
        }
        made.publish(store).map_err(ImportError::Session)?;
    }
    Ok(outcome)
}

/// The key an entry is counted under: its type, and a message's role.
fn count_key(entry: &Value) -> String {
    let kind = entry
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    match entry.pointer("/message/role").and_then(Value::as_str) {
        Some(role) if kind == "message" => format!("message:{role}"),
        _ => kind.to_owned(),
    }
}

/// The text of the first user message, for the index title.
fn first_user_text(converted: &convert::Converted) -> Option<String> {
    let main = converted.main.as_ref()?;
    if main.kind != etch_session::types::MESSAGE_USER {
        return None;
    }
    let text: String = main.data["content"]
        .as_array()?
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    (!text.trim().is_empty()).then_some(text)
}

/// A Pi image block's bytes as an image, kept as they are when a
/// provider takes them (Pi resized them already).
fn read_image(data: &str, mime: &str) -> Result<etch_model::Image, String> {
    // Base64 is 4/3 of the bytes: a larger image is refused undecoded.
    let max = etch_model::image::MAX_IMAGE_BYTES;
    if data.len() as u64 / 4 * 3 > max {
        return Err(format!(
            "it is larger than the {} MiB an image may be",
            max >> 20
        ));
    }
    let bytes = etch_model::image::decode_base64(data).ok_or("its data is not base64")?;
    if etch_model::MediaType::from_mime(mime).is_none() {
        return Err(format!("{mime:?} is not an image type etch takes"));
    }
    let limits = etch_image::Limits::with_edge(etch_image::MAX_EDGE_LIMIT);
    etch_image::prepare(bytes, limits)
        .map(|prepared| prepared.image)
        .map_err(|e| e.to_string())
}

/// Lines of a file, one at a time, blank ones skipped.
struct Lines<R> {
    /// The reader.
    reader: R,
    /// Lines read so far.
    line_no: usize,
    /// Problems found while reading.
    problems: Vec<String>,
    /// The longest line read.
    max: usize,
}

impl<R: std::io::BufRead> Lines<R> {
    /// Lines of `reader`.
    fn new(reader: R) -> Self {
        Self::with_limit(reader, MAX_LINE_BYTES)
    }

    /// Lines of `reader`, none longer than `max` bytes.
    fn with_limit(reader: R, max: usize) -> Self {
        Self {
            reader,
            line_no: 0,
            problems: Vec::new(),
            max,
        }
    }

    /// The next non-blank line and its number.
    fn next_line(&mut self) -> std::io::Result<Option<(usize, Vec<u8>)>> {
        use std::io::Read as _;
        loop {
            let mut line = Vec::new();
            let limit = self.max as u64 + 1;
            if (&mut self.reader)
                .take(limit)
                .read_until(b'\n', &mut line)?
                == 0
            {
                return Ok(None);
            }
            self.line_no += 1;
            if line.len() > self.max && line.last() != Some(&b'\n') {
                // Never held whole: the rest of the line is read past.
                let mut rest = Vec::new();
                while (&mut self.reader)
                    .take(1 << 20)
                    .read_until(b'\n', &mut rest)?
                    > 0
                {
                    let ended = rest.last() == Some(&b'\n');
                    rest.clear();
                    if ended {
                        break;
                    }
                }
                self.problems.push(format!(
                    "line {}: longer than {} bytes, skipped",
                    self.line_no, self.max
                ));
                continue;
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if line.last() != Some(&b'\n') {
                // A torn last line (Pi was killed mid-write) is read if
                // it parses; the caller says so when it does not.
                self.problems.push(format!(
                    "line {}: the last line has no end (a write cut short)",
                    self.line_no
                ));
            }
            return Ok(Some((self.line_no, line)));
        }
    }

    /// The header: the first line, `{"type":"session",…}`.
    fn header(&mut self, path: &Path) -> Result<Value, ImportError> {
        let not_pi = |reason: String| ImportError::NotPi {
            path: path.to_path_buf(),
            reason,
        };
        let (_, line) = self
            .next_line()
            .map_err(|source| ImportError::Io {
                action: "read",
                path: path.to_path_buf(),
                source,
            })?
            .ok_or_else(|| not_pi("it is empty".to_owned()))?;
        let header: Value = serde_json::from_slice(&line)
            .map_err(|e| not_pi(format!("its first line is not JSON ({e})")))?;
        if header.get("type").and_then(Value::as_str) != Some("session") {
            return Err(not_pi(
                "its first line is not a Pi session header ({\"type\":\"session\",…})".to_owned(),
            ));
        }
        Ok(header)
    }
}

/// Pi's migrations, applied entry by entry as the file streams: v1 has
/// no ids (each entry gets one, its parent the entry before, and a
/// compaction's `firstKeptEntryIndex` becomes that entry's id); v2 calls
/// custom messages `hookMessage`.
struct Migration {
    /// The version read.
    version: u32,
    /// v1: the id given to the entry on each line (the header is line 1,
    /// Pi's index 0).
    ids_by_index: Vec<Option<String>>,
    /// v1: the last entry's id.
    previous: Option<String>,
}

impl Migration {
    /// Migrations for a file of `version`.
    fn new(version: u32) -> Self {
        Self {
            version,
            ids_by_index: vec![None],
            previous: None,
        }
    }

    /// Migrates `entry`, the next entry read, to v3.
    fn apply(&mut self, entry: &mut Value) {
        if self.version < 2 {
            let id = etch_session::id::new_id();
            if let Some(object) = entry.as_object_mut() {
                object.insert("id".to_owned(), Value::String(id.clone()));
                object.insert(
                    "parentId".to_owned(),
                    self.previous.clone().map_or(Value::Null, Value::String),
                );
                if let Some(index) = object
                    .remove("firstKeptEntryIndex")
                    .and_then(|v| v.as_u64())
                    .and_then(|v| usize::try_from(v).ok())
                    && let Some(Some(kept)) = self.ids_by_index.get(index)
                {
                    object.insert("firstKeptEntryId".to_owned(), Value::String(kept.clone()));
                }
            }
            // Pi indexes the entries it parsed, the header first.
            self.ids_by_index.push(Some(id.clone()));
            self.previous = Some(id);
        }
        if self.version < 3
            && let Some(role) = entry.pointer_mut("/message/role")
            && role == "hookMessage"
        {
            *role = Value::String("custom".to_owned());
        }
    }
}

/// What writing one entry did.
struct Written {
    /// Images stored.
    images: usize,
    /// A parent named but not found before.
    missing_parent: Option<String>,
}

/// The etch session an import writes into.
struct Sink {
    /// The session being written, published once whole.
    made: Unpublished,
    /// The `session.started` id: the parent of Pi's roots.
    root: String,
    /// For each Pi entry id, the last etch event written for it (what its
    /// children hang from).
    tails: HashMap<String, String>,
}

impl Sink {
    /// A sink writing the session `made`, under its header.
    fn new(made: Unpublished) -> Self {
        let root = made.header.id.clone();
        Self {
            made,
            root,
            tails: HashMap::new(),
        }
    }

    /// Writes the events of entry `id` (child of Pi's `parent`).
    fn write(
        &mut self,
        id: &str,
        parent: Option<&str>,
        time: &str,
        converted: convert::Converted,
    ) -> Result<Written, etch_session::SessionError> {
        let mut missing_parent = None;
        let mut at = self.root.clone();
        if let Some(parent) = parent {
            match self.tails.get(parent) {
                Some(tail) => at.clone_from(tail),
                None => missing_parent = Some(parent.to_owned()),
            }
        }
        let mut images = 0;
        let convert::Converted {
            before,
            main,
            after,
            images: pictures,
            ..
        } = converted;
        for out in before {
            at = self.put(&out, etch_session::id::new_id(), &at, time)?;
        }
        if let Some(main) = main {
            // The bytes go first: no line names an image not on disk.
            let parts: Vec<etch_model::ContentPart> = pictures
                .into_iter()
                .map(etch_model::ContentPart::Image)
                .collect();
            images += parts.len();
            self.made.writer.store_images(&parts)?;
            at = self.put(&main, id.to_owned(), &at, time)?;
        }
        for out in after {
            at = self.put(&out, etch_session::id::new_id(), &at, time)?;
        }
        self.tails.insert(id.to_owned(), at);
        Ok(Written {
            images,
            missing_parent,
        })
    }

    /// Writes one event; its id.
    fn put(
        &mut self,
        out: &convert::Out,
        id: String,
        parent: &str,
        time: &str,
    ) -> Result<String, etch_session::SessionError> {
        self.made
            .writer
            .append_as(&out.kind, id.clone(), Some(parent), time, &out.data)?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests;
