//! What opening, reading and writing each file of the namespace does,
//! on the server's sessions through the same operations the HTTP API
//! uses.
//!
//! An open file keeps what its reads go on from: a listing or a text
//! made when it was opened (read by offset), or a feed (chat, events,
//! lifecycle) subscribed when it was opened, so nothing sent after the
//! open is missed between two reads. A read of a feed with nothing new
//! blocks until something comes; the bytes it takes leave the feed only
//! in the same step that queues the reply, so a read cancelled by a
//! flush loses nothing. An open session file holds a lease on its
//! session: it stays loaded while any is open.
//!
//! This module must not know how messages are framed or fids tracked.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use etch_protocol::{Command, CommandBody, StreamingBehavior};
use etch_runtime::service::{SessionHandle as _, catalog};
use serde_json::Value;
use tokio::sync::{Mutex, broadcast, watch};

use super::conn::Replies;
use super::tree::{File, Node, Numbers};
use super::wire::{Reply, encode_stat};
use crate::api::NewSession;
use crate::state::{Access, App, Channels, Frame, InUse};

/// What `ctl` takes, and what reading it says.
pub const CTL_HELP: &str = "\
abort                   stop the run
compact [INSTRUCTIONS]  compact the context
model [PROVIDER] MODEL  switch the model (one word keeps the provider)
thinking LEVEL          off, none, minimal, low, medium, high or xhigh
name TITLE              rename the session
fork ENTRY              a new session from event ENTRY (see /sessions/idx)
";

/// The keys `new` takes.
const NEW_KEYS: &str = "cwd, provider, model, thinking, name";

/// `Topen`'s mode bits.
mod mode {
    /// Read, write, both, execute: the low two bits.
    pub const ACCESS: u8 = 3;
    /// Write only.
    pub const WRITE: u8 = 1;
    /// Read and write.
    pub const RDWR: u8 = 2;
    /// Execute.
    pub const EXEC: u8 = 3;
    /// Truncate: meaningless for these files, and allowed.
    pub const TRUNC: u8 = 0x10;
    /// Remove on close.
    pub const RCLOSE: u8 = 0x40;
}

/// What every connection shares: the server, and who owns the files.
pub struct Space {
    /// The server's sessions.
    pub app: Arc<App>,
    /// The user who started the server, owner of every file.
    pub owner: String,
    /// The qids of the sessions seen.
    pub numbers: Numbers,
    /// When the server started (the files' times), seconds since the
    /// epoch.
    pub started: u32,
}

impl Space {
    /// The namespace of `app`, owned by `owner`.
    pub fn new(app: Arc<App>, owner: String) -> Self {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX));
        Self {
            app,
            owner,
            numbers: Numbers::default(),
            started,
        }
    }

    /// Whether session `id` exists: served now, or stored in a root.
    pub fn has_session(&self, id: &str) -> bool {
        !id.is_empty() && (self.app.get(id).is_some() || self.app.stored(id).is_some())
    }

    /// The stat of `node`.
    pub async fn stat(&self, node: &Node) -> super::wire::Stat {
        let length = match node {
            Node::File(id, File::Log) => match self.log_file(id) {
                Some(file) => tokio::fs::metadata(file).await.map_or(0, |m| m.len()),
                None => 0,
            },
            _ => 0,
        };
        super::tree::stat(&self.numbers, node, &self.owner, length, self.started)
    }

    /// The log of session `id`.
    fn log_file(&self, id: &str) -> Option<PathBuf> {
        match self.app.get(id) {
            Some(served) => Some(served.handle.file()),
            None => self.app.stored(id).map(|(_, file)| file),
        }
    }
}

/// A file opened by a client.
pub struct Open {
    /// The file.
    pub node: Node,
    /// Whether it was opened for reading.
    pub readable: bool,
    /// Whether it was opened for writing.
    pub writable: bool,
    /// What its reads go on from.
    state: State,
    /// The session held while it is open.
    _lease: Option<InUse>,
}

/// What an open file's reads go on from.
enum State {
    /// A directory's entries, each one stat.
    Listing(Vec<Vec<u8>>),
    /// A text made at the open.
    Text(Vec<u8>),
    /// `new`: the session this open created, once it has.
    New(Mutex<Option<String>>),
    /// A session's log, read as it is now.
    Log(PathBuf),
    /// Chat, events or lifecycle: a subscription and what it has
    /// brought that no read took yet.
    Feed(Mutex<Feed>),
    /// `state`: the running flag as last read, and the session's
    /// handle as opened.
    Running(Mutex<watch::Receiver<bool>>, Moved),
    /// A file opened for writing only.
    Writes,
}

/// Whether a session's handle moved to another session (a fork) since
/// a file was opened: its feeds end then, as its event streams do.
#[derive(Clone)]
struct Moved(Option<(Arc<Channels>, u64)>);

impl Moved {
    /// Watches `channels` from now.
    fn since(channels: &Arc<Channels>) -> Self {
        Self(Some((Arc::clone(channels), channels.generation())))
    }

    /// Whether it moved.
    fn moved(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|(channels, generation)| channels.generation() != *generation)
    }
}

/// A subscription read as bytes.
struct Feed {
    /// Where the items come from.
    source: Source,
    /// Bytes brought and not yet read.
    pending: Vec<u8>,
    /// The session's handle as opened (none for the lifecycle).
    moved: Moved,
}

/// A feed's subscription.
enum Source {
    /// Text as it is sent (chat), or JSON lines (lifecycle).
    Lines(broadcast::Receiver<Arc<str>>, bool),
    /// A session's frames, of which its live events are taken.
    Events(broadcast::Receiver<Frame>),
}

impl Source {
    /// Waits for the next item and adds it to `out`; `Ok(false)` at
    /// the end of the feed (its session gone or moved).
    async fn next(&mut self, out: &mut Vec<u8>, moved: &Moved) -> Result<bool, String> {
        use broadcast::error::RecvError;
        let lagged = |n: u64| {
            format!(
                "this reader fell {n} items behind and lost them; the next read goes on from now"
            )
        };
        loop {
            if moved.moved() {
                return Ok(false);
            }
            let line = match self {
                Self::Lines(rx, newline) => match rx.recv().await {
                    // An empty text only wakes the reader (a move).
                    Ok(text) if text.is_empty() => continue,
                    Ok(text) => {
                        let mut line = text.as_bytes().to_vec();
                        if *newline {
                            line.push(b'\n');
                        }
                        line
                    }
                    Err(RecvError::Lagged(n)) => return Err(lagged(n)),
                    Err(RecvError::Closed) => return Ok(false),
                },
                Self::Events(rx) => match rx.recv().await {
                    Ok(Frame::Live(line)) => {
                        let mut line = line.as_bytes().to_vec();
                        line.push(b'\n');
                        line
                    }
                    Ok(Frame::Entry { .. }) => continue,
                    Err(RecvError::Lagged(n)) => return Err(lagged(n)),
                    Err(RecvError::Closed) => return Ok(false),
                },
            };
            if moved.moved() {
                return Ok(false);
            }
            out.extend_from_slice(&line);
            return Ok(true);
        }
    }
}

/// The path of `node`, for error texts.
pub fn path(node: &Node) -> String {
    match node {
        Node::Root => "/".to_owned(),
        Node::EventWait => "/eventwait".to_owned(),
        Node::Sessions => "/sessions".to_owned(),
        Node::New => "/sessions/new".to_owned(),
        Node::Idx => "/sessions/idx".to_owned(),
        Node::Session(id) => format!("/sessions/{id}"),
        Node::File(id, file) => format!("/sessions/{id}/{}", file.name()),
    }
}

/// Opens `node` with `Topen`'s `mode`.
pub async fn open(space: &Space, node: &Node, open_mode: u8) -> Result<Open, String> {
    if open_mode & mode::RCLOSE != 0 {
        return Err(format!(
            "{}: remove-on-close is not offered (nothing here can be removed)",
            path(node)
        ));
    }
    if open_mode & !(mode::ACCESS | mode::TRUNC | mode::RCLOSE) != 0 {
        return Err(format!("{}: unknown open mode {open_mode:#x}", path(node)));
    }
    let access = open_mode & mode::ACCESS;
    if access == mode::EXEC {
        return Err(format!("{}: nothing here can be executed", path(node)));
    }
    let writable = access == mode::WRITE || access == mode::RDWR;
    let readable = access != mode::WRITE;
    if writable && node.perm() & 0o222 == 0 {
        return Err(if node.is_dir() {
            format!("{} is a directory: it cannot be written", path(node))
        } else {
            format!("{} is read-only", path(node))
        });
    }
    let (state, lease) = if readable {
        opened_for_reading(space, node).await?
    } else if *node == Node::New {
        (State::New(Mutex::new(None)), None)
    } else {
        (State::Writes, writer_lease(space, node).await?)
    };
    Ok(Open {
        node: node.clone(),
        readable,
        writable,
        state,
        _lease: lease,
    })
}

/// The session a file opened for writing needs, held.
async fn writer_lease(space: &Space, node: &Node) -> Result<Option<InUse>, String> {
    match node {
        Node::File(id, _) => session(space, id).await.map(Some),
        _ => Ok(None),
    }
}

/// Session `id`, held; refused when another process holds it.
async fn session(space: &Space, id: &str) -> Result<InUse, String> {
    space.app.session(id).await.map_err(|e| e.message)
}

/// What the reads of `node` go on from, made now.
async fn opened_for_reading(space: &Space, node: &Node) -> Result<(State, Option<InUse>), String> {
    Ok(match node {
        Node::Root | Node::Sessions | Node::Session(_) => {
            (State::Listing(listing(space, node).await?), None)
        }
        Node::EventWait => (
            State::Feed(Mutex::new(Feed {
                source: Source::Lines(space.app.lifecycle(), true),
                pending: Vec::new(),
                moved: Moved(None),
            })),
            None,
        ),
        Node::New => (State::New(Mutex::new(None)), None),
        Node::Idx => (State::Text(index(space).await?), None),
        Node::File(id, File::Log) => {
            // A session another process holds is readable from its log.
            let file = match space.app.access(id).await.map_err(|e| e.message)? {
                Access::Served(served) => {
                    let file = served.handle.file();
                    return Ok((State::Log(file), Some(served)));
                }
                Access::Held { file, .. } => file,
            };
            (State::Log(file), None)
        }
        Node::File(id, file) => {
            let served = session(space, id).await?;
            let state = match file {
                File::Prompt => State::Text(Vec::new()),
                File::Ctl => State::Text(CTL_HELP.as_bytes().to_vec()),
                File::Chat => State::Feed(Mutex::new(Feed {
                    source: Source::Lines(served.channels.chat.subscribe(), false),
                    pending: Vec::new(),
                    moved: Moved::since(&served.channels),
                })),
                File::Events => State::Feed(Mutex::new(Feed {
                    source: Source::Events(served.channels.frames.subscribe()),
                    pending: Vec::new(),
                    moved: Moved::since(&served.channels),
                })),
                File::State => State::Running(
                    Mutex::new(served.channels.watch_running()),
                    Moved::since(&served.channels),
                ),
                File::Stats => State::Text(stats(&served).await?),
                File::Name => State::Text(title(space, id).await.into_bytes()),
                File::Log => State::Log(served.handle.file()),
            };
            (state, Some(served))
        }
    })
}

/// The entries of directory `node`, each encoded as a stat.
async fn listing(space: &Space, node: &Node) -> Result<Vec<Vec<u8>>, String> {
    let children: Vec<Node> = match node {
        Node::Root => vec![Node::EventWait, Node::Sessions],
        Node::Sessions => {
            let mut children = vec![Node::New, Node::Idx];
            for row in rows(space).await? {
                children.push(Node::Session(Arc::from(row.id.as_str())));
            }
            children
        }
        Node::Session(id) => File::ALL
            .into_iter()
            .map(|file| Node::File(Arc::clone(id), file))
            .collect(),
        _ => return Err(format!("{} is not a directory", path(node))),
    };
    let mut entries = Vec::with_capacity(children.len());
    for child in &children {
        entries.push(encode_stat(&space.stat(child).await));
    }
    Ok(entries)
}

/// One session of `idx`.
struct Row {
    /// Its id.
    id: String,
    /// Its title.
    title: String,
    /// Where it runs.
    cwd: String,
}

/// The sessions of every served root, from their indexes.
async fn rows(space: &Space) -> Result<Vec<Row>, String> {
    let dirs: Vec<PathBuf> = space
        .app
        .places()
        .iter()
        .map(|place| place.session_dir.clone())
        .collect();
    tokio::task::spawn_blocking(move || {
        dirs.iter()
            .flat_map(|dir| catalog::sessions(dir))
            .map(|s| Row {
                id: s.id,
                title: s.title,
                cwd: s.cwd,
            })
            .collect()
    })
    .await
    .map_err(|e| format!("listing the sessions failed: {e}"))
}

/// `idx`: one line per session, `ID<TAB>TITLE<TAB>STATE<TAB>CWD`.
async fn index(space: &Space) -> Result<Vec<u8>, String> {
    let mut text = String::new();
    for row in rows(space).await? {
        let running = space
            .app
            .get(&row.id)
            .is_some_and(|s| s.channels.running.load(std::sync::atomic::Ordering::SeqCst));
        let state = if running { "running" } else { "idle" };
        let one_line = |s: &str| s.replace(['\t', '\n', '\r'], " ");
        let _ = writeln!(
            text,
            "{}\t{}\t{state}\t{}",
            row.id,
            one_line(&row.title),
            one_line(&row.cwd)
        );
    }
    Ok(text.into_bytes())
}

/// Session `id`'s title, as its root's index has it, and a newline.
async fn title(space: &Space, id: &str) -> String {
    let Some((place, _)) = space.app.stored(id) else {
        return "\n".to_owned();
    };
    let dir = place.session_dir.clone();
    let id = id.to_owned();
    tokio::task::spawn_blocking(move || {
        catalog::sessions(&dir)
            .into_iter()
            .find(|s| s.id == id)
            .map_or_else(|| "\n".to_owned(), |s| format!("{}\n", s.title))
    })
    .await
    .unwrap_or_else(|_| "\n".to_owned())
}

/// `stats`: the session's usage as `key=value` lines.
async fn stats(served: &InUse) -> Result<Vec<u8>, String> {
    let response = served
        .ask(Command {
            id: None,
            body: CommandBody::GetSessionStats,
        })
        .await
        .map_err(|e| e.message)?;
    if !response.success {
        return Err(response
            .error
            .unwrap_or_else(|| "the session gave no stats".to_owned()));
    }
    let data = response.data.unwrap_or(Value::Null);
    let number = |v: &Value, key: &str| v.get(key).and_then(Value::as_u64).unwrap_or(0);
    let usage = data.get("usage").cloned().unwrap_or(Value::Null);
    let last = data.get("lastUsage").cloned().unwrap_or(Value::Null);
    let cost = data
        .get("cost")
        .map_or_else(|| "0".to_owned(), Value::to_string);
    let text = format!(
        "usage={}\ninput={}\noutput={}\ncached={}\ncost={cost}\nctxsz={}\nturns={}\ntools={}\n",
        number(&usage, "totalTokens"),
        number(&usage, "inputTokens"),
        number(&usage, "outputTokens"),
        number(&usage, "cachedInputTokens"),
        number(&last, "inputTokens") + number(&last, "outputTokens"),
        number(&data, "userTurns"),
        number(&data, "toolCalls"),
    );
    Ok(text.into_bytes())
}

/// `count` bytes of `text` from `offset` (none past its end).
fn slice(text: &[u8], offset: u64, count: u32) -> Vec<u8> {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(text.len());
    let end = start
        .saturating_add(usize::try_from(count).unwrap_or(usize::MAX))
        .min(text.len());
    text[start..end].to_vec()
}

/// Reads `count` bytes at `offset` of `open` and sends the reply tagged
/// `tag` on `replies`; waits first when the file has nothing new.
pub async fn read(
    space: &Space,
    open: &Open,
    offset: u64,
    count: u32,
    tag: u16,
    replies: &Replies,
) {
    let answer = match &open.state {
        State::Feed(feed) => return read_feed(feed, count, tag, replies).await,
        State::Listing(entries) => read_listing(entries, offset, count),
        State::Text(text) => Ok(slice(text, offset, count)),
        State::New(created) => read_new(space, created, offset, count).await,
        State::Log(file) => read_log(file, offset, count).await,
        State::Running(rx, moved) => read_state(rx, moved, offset)
            .await
            .map(|t| slice(t, 0, count)),
        State::Writes => Err(format!("{} was opened for writing only", path(&open.node))),
    };
    let reply = match answer {
        Ok(data) => Reply::Read(data),
        Err(e) => Reply::Error(e),
    };
    let _ = replies.send((tag, reply)).await;
}

/// A feed's read: what is pending, or the next item's bytes once it
/// comes; taken from the feed only as the reply is queued.
async fn read_feed(feed: &Mutex<Feed>, count: u32, tag: u16, replies: &Replies) {
    let mut feed = feed.lock().await;
    while feed.pending.is_empty() {
        let Feed {
            source,
            pending,
            moved,
        } = &mut *feed;
        match source.next(pending, moved).await {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                let _ = replies.send((tag, Reply::Error(e))).await;
                return;
            }
        }
    }
    // A flush now leaves the bytes in the feed for the next read.
    let Ok(permit) = replies.reserve().await else {
        return;
    };
    let n = feed
        .pending
        .len()
        .min(usize::try_from(count).unwrap_or(usize::MAX));
    let data: Vec<u8> = feed.pending.drain(..n).collect();
    permit.send((tag, Reply::Read(data)));
}

/// A directory's read: the whole entries that fit in `count` from
/// `offset`, which must be where an entry starts (intro(5): a directory
/// is read on from where the last read ended, or from 0).
fn read_listing(entries: &[Vec<u8>], offset: u64, count: u32) -> Result<Vec<u8>, String> {
    let mut at = 0u64;
    let mut out = Vec::new();
    let room = usize::try_from(count).unwrap_or(usize::MAX);
    let mut started = offset == 0;
    for entry in entries {
        if !started {
            at += entry.len() as u64;
            if at == offset {
                started = true;
            }
            continue;
        }
        if out.len() + entry.len() > room {
            if out.is_empty() {
                return Err(format!(
                    "a directory entry takes {} bytes, more than the {count} asked for",
                    entry.len()
                ));
            }
            break;
        }
        out.extend_from_slice(entry);
    }
    if !started && offset != at {
        return Err(format!(
            "directory reads go on from where the last one ended; {offset} is not such an offset"
        ));
    }
    Ok(out)
}

/// `new`'s read: the id of the session this open created (creating one
/// with the server's defaults when nothing was written).
async fn read_new(
    space: &Space,
    created: &Mutex<Option<String>>,
    offset: u64,
    count: u32,
) -> Result<Vec<u8>, String> {
    let mut created = created.lock().await;
    if created.is_none() {
        let served = space
            .app
            .create_session(NewSession::default())
            .await
            .map_err(|e| e.message)?;
        *created = Some(served.handle.id());
    }
    let text = format!("{}\n", created.as_deref().unwrap_or_default());
    Ok(slice(text.as_bytes(), offset, count))
}

/// A log's read: its bytes as they are now.
async fn read_log(file: &std::path::Path, offset: u64, count: u32) -> Result<Vec<u8>, String> {
    use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};
    let mut handle = tokio::fs::File::open(file)
        .await
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    handle
        .seek(std::io::SeekFrom::Start(offset))
        .await
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let mut out = Vec::new();
    handle
        .take(u64::from(count))
        .read_to_end(&mut out)
        .await
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    Ok(out)
}

/// `state`'s read: at offset 0 the state now; further on, the state
/// once it changed since the last read (blocking until then).
async fn read_state(
    rx: &Mutex<watch::Receiver<bool>>,
    moved: &Moved,
    offset: u64,
) -> Result<&'static [u8], String> {
    let mut rx = rx.lock().await;
    if offset > 0 && rx.changed().await.is_err() || moved.moved() {
        // The session is gone, or its handle moved to a fork: nothing
        // here will change any more.
        return Ok(b"");
    }
    let running = *rx.borrow_and_update();
    Ok(if running { b"running\n" } else { b"idle\n" })
}

/// Writes `data` to `open`; answers the bytes taken.
pub async fn write(space: &Space, open: &Open, data: Vec<u8>) -> Result<u32, String> {
    let taken = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let text = String::from_utf8(data)
        .map_err(|_| format!("{}: the text is not UTF-8", path(&open.node)))?;
    let app = &space.app;
    match &open.node {
        Node::New => {
            let State::New(created) = &open.state else {
                return Err("/sessions/new was not opened as itself".to_owned());
            };
            // The first write makes the session; later ones on the same
            // open set what can still change (a shell's `{ echo cwd=..;
            // echo model=..; } > new` writes twice).
            let mut created = created.lock().await;
            match created.as_deref() {
                Some(id) => amend_new(space, id, &text).await?,
                None => *created = Some(write_new(space, &text).await?),
            }
        }
        Node::File(id, File::Prompt) => {
            let message = text.strip_suffix('\n').unwrap_or(&text).to_owned();
            // While a run is active the text steers it.
            app.prompt(id, message, Vec::new(), Some(StreamingBehavior::Steer))
                .await
                .map_err(|e| e.message)?;
        }
        Node::File(id, File::Ctl) => {
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                ctl(space, id, line).await?;
            }
        }
        Node::File(id, File::Name) => {
            app.rename(id, text.trim().to_owned())
                .await
                .map_err(|e| e.message)?;
        }
        other => return Err(format!("{} is read-only", path(other))),
    }
    Ok(taken)
}

/// `new`'s `key=value` lines, checked.
fn new_settings(text: &str) -> Result<(NewSession, Option<String>), String> {
    let mut asked = NewSession::default();
    let mut name = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "/sessions/new takes key=value lines ({NEW_KEYS}), not {line:?}"
            ));
        };
        let value = value.trim().to_owned();
        match key.trim() {
            "cwd" => asked.cwd = Some(PathBuf::from(value)),
            "provider" => asked.provider = Some(value),
            "model" => asked.model = Some(value),
            "thinking" => asked.thinking = Some(value),
            "name" => name = Some(value),
            other => {
                return Err(format!(
                    "/sessions/new has no key {other:?}; it takes {NEW_KEYS}"
                ));
            }
        }
    }
    Ok((asked, name))
}

/// Sets on session `id`, made by this open of `new`, what later lines
/// ask: its name, model and thinking level (its cwd is fixed).
async fn amend_new(space: &Space, id: &str, text: &str) -> Result<(), String> {
    let (asked, name) = new_settings(text)?;
    if asked.cwd.is_some() {
        return Err(format!(
            "session {id} was made by an earlier write to this open of /sessions/new and its \
             cwd is fixed; give cwd= in the first write"
        ));
    }
    if let Some(name) = name {
        ctl(space, id, &format!("name {name}")).await?;
    }
    match (asked.provider, asked.model) {
        (Some(provider), Some(model)) => {
            ctl(space, id, &format!("model {provider} {model}")).await?;
        }
        (None, Some(model)) => {
            ctl(space, id, &format!("model {model}")).await?;
        }
        (Some(provider), None) => {
            return Err(format!(
                "provider={provider} needs model= beside it once session {id} is made"
            ));
        }
        (None, None) => {}
    }
    if let Some(thinking) = asked.thinking {
        ctl(space, id, &format!("thinking {thinking}")).await?;
    }
    Ok(())
}

/// Creates a session from `new`'s `key=value` lines; answers its id.
async fn write_new(space: &Space, text: &str) -> Result<String, String> {
    let (asked, name) = new_settings(text)?;
    let served = space
        .app
        .create_session(asked)
        .await
        .map_err(|e| e.message)?;
    let id = served.handle.id();
    if let Some(name) = name.filter(|n| !n.trim().is_empty()) {
        space.app.rename(&id, name).await.map_err(|e| e.message)?;
        // A named session keeps its name at its first prompt.
        served
            .channels
            .untitled
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
    Ok(id)
}

/// Runs one `ctl` line on session `id`.
async fn ctl(space: &Space, id: &str, line: &str) -> Result<(), String> {
    let (verb, rest) = line
        .split_once(char::is_whitespace)
        .map_or((line, ""), |(v, r)| (v, r.trim()));
    let needs = |what: &str| format!("ctl: {verb} needs {what} (read ctl for what it takes)");
    let body = match verb {
        "abort" if rest.is_empty() => CommandBody::Abort,
        "compact" => CommandBody::Compact {
            custom_instructions: (!rest.is_empty()).then(|| rest.to_owned()),
            force: false,
        },
        "model" => {
            let words: Vec<&str> = rest.split_whitespace().collect();
            let (provider, model) = match words.as_slice() {
                [model] => {
                    let served = session(space, id).await?;
                    (served.handle.model().0, (*model).to_owned())
                }
                [provider, model] => ((*provider).to_owned(), (*model).to_owned()),
                _ => return Err(needs("a model, or a provider and a model")),
            };
            CommandBody::SetModel {
                provider,
                model_id: model,
            }
        }
        "thinking" => {
            let level = serde_json::from_value(Value::String(rest.to_owned())).map_err(|_| {
                format!(
                    "ctl: thinking takes off, none, minimal, low, medium, high or xhigh, not \
                     {rest:?}"
                )
            })?;
            CommandBody::SetThinkingLevel { level }
        }
        "name" if !rest.is_empty() => {
            space
                .app
                .rename(id, rest.to_owned())
                .await
                .map_err(|e| e.message)?;
            return Ok(());
        }
        "name" => return Err(needs("a title")),
        "fork" if !rest.is_empty() && !rest.contains(char::is_whitespace) => CommandBody::Fork {
            entry_id: rest.to_owned(),
        },
        "fork" => return Err(needs("one event id")),
        "abort" => return Err("ctl: abort takes nothing after it".to_owned()),
        _ => {
            return Err(format!(
                "ctl: unknown command {verb:?}; it takes abort, compact, model, thinking, name \
                 and fork (read ctl for more)"
            ));
        }
    };
    let response = space
        .app
        .command(id, Command { id: None, body })
        .await
        .map_err(|e| e.message)?;
    if response.success {
        Ok(())
    } else {
        Err(format!(
            "ctl: {line}: {}",
            response
                .error
                .unwrap_or_else(|| "the session refused it".to_owned())
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    #[test]
    fn text_reads_stop_at_the_end() {
        assert_eq!(slice(b"hello", 0, 3), b"hel");
        assert_eq!(slice(b"hello", 3, 10), b"lo");
        assert_eq!(slice(b"hello", 5, 10), b"");
        assert_eq!(slice(b"hello", u64::MAX, u32::MAX), b"");
    }

    /// A chat feed with `capacity` items of room.
    fn chat_feed(capacity: usize) -> (broadcast::Sender<Arc<str>>, Mutex<Feed>) {
        let (tx, rx) = broadcast::channel(capacity);
        let feed = Mutex::new(Feed {
            source: Source::Lines(rx, false),
            pending: Vec::new(),
            moved: Moved(None),
        });
        (tx, feed)
    }

    /// The data of a reply that must be an `Rread`.
    fn data_of(reply: (u16, Reply)) -> Vec<u8> {
        match reply.1 {
            Reply::Read(data) => data,
            other => panic!("not a read: {other:?}"),
        }
    }

    #[test]
    fn a_read_cancelled_while_it_waits_to_reply_loses_nothing() {
        use futures_util::FutureExt as _;
        let (chat, feed) = chat_feed(8);
        chat.send(Arc::from("hello ")).unwrap();
        chat.send(Arc::from("world")).unwrap();
        // The reply queue is full: the read takes the text, then waits
        // for room, and is dropped there (a flush).
        let (full, mut queued) = mpsc::channel(1);
        full.try_send((1, Reply::Flush)).unwrap();
        assert!(read_feed(&feed, 100, 7, &full).now_or_never().is_none());
        // A later read, with room, gets all of it.
        let (replies, mut out) = mpsc::channel(4);
        read_feed(&feed, 100, 8, &replies).now_or_never().unwrap();
        assert_eq!(data_of(out.try_recv().unwrap()), b"hello ");
        read_feed(&feed, 100, 9, &replies).now_or_never().unwrap();
        assert_eq!(data_of(out.try_recv().unwrap()), b"world");
        // Nothing was sent for the cancelled read.
        assert_eq!(queued.try_recv().unwrap(), (1, Reply::Flush));
        assert!(queued.try_recv().is_err());
    }

    #[test]
    fn a_read_takes_at_most_its_count_and_keeps_the_rest() {
        use futures_util::FutureExt as _;
        let (chat, feed) = chat_feed(8);
        chat.send(Arc::from("abcdef")).unwrap();
        let (replies, mut out) = mpsc::channel(4);
        read_feed(&feed, 4, 1, &replies).now_or_never().unwrap();
        assert_eq!(data_of(out.try_recv().unwrap()), b"abcd");
        read_feed(&feed, 4, 2, &replies).now_or_never().unwrap();
        assert_eq!(data_of(out.try_recv().unwrap()), b"ef");
        // Nothing new: the read waits.
        assert!(read_feed(&feed, 4, 3, &replies).now_or_never().is_none());
    }

    #[test]
    fn a_reader_that_fell_behind_is_told_and_goes_on() {
        use futures_util::FutureExt as _;
        let (chat, feed) = chat_feed(2);
        for piece in ["a", "b", "c", "d"] {
            chat.send(Arc::from(piece)).unwrap();
        }
        let (replies, mut out) = mpsc::channel(4);
        read_feed(&feed, 100, 1, &replies).now_or_never().unwrap();
        match out.try_recv().unwrap() {
            (1, Reply::Error(e)) => assert!(e.contains("fell 2 items behind"), "{e}"),
            other => panic!("not an error: {other:?}"),
        }
        read_feed(&feed, 100, 2, &replies).now_or_never().unwrap();
        assert_eq!(data_of(out.try_recv().unwrap()), b"c");
    }

    #[test]
    fn directory_reads_give_whole_entries_from_entry_starts() {
        let entries = vec![vec![1; 10], vec![2; 10], vec![3; 10]];
        assert_eq!(read_listing(&entries, 0, 25).unwrap().len(), 20);
        assert_eq!(read_listing(&entries, 20, 25).unwrap(), vec![3; 10]);
        assert_eq!(read_listing(&entries, 30, 25).unwrap(), Vec::<u8>::new());
        assert!(
            read_listing(&entries, 5, 25)
                .unwrap_err()
                .contains("not such an offset")
        );
        assert!(
            read_listing(&entries, 0, 5)
                .unwrap_err()
                .contains("more than")
        );
    }
}
