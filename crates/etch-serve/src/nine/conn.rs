//! One 9P connection: messages read whole off the stream, the client's
//! fids, and the requests still waiting for an answer.
//!
//! Requests are taken in order; a read or a write, which may wait (for
//! the model's next words, for a session to take a prompt), runs as a
//! task of its own and answers when it is done, so a blocked `chat`
//! read never holds up the connection's other requests. `Tflush` stops
//! such a task and answers once it is gone: its reply, when it had
//! already sent one, goes first, as intro(5) asks. All replies go out
//! through one writer, one message at a time.
//!
//! A message that does not parse, an unknown fid, a file that is not
//! there: each is an `Rerror` saying what is wrong, and the connection
//! goes on. Only a frame the stream cannot be read past (a size under
//! seven bytes or over the agreed `msize`) ends it.
//!
//! This module must not know what any file holds.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::files::{self, Open, Space};
use super::tree::Node;
use super::wire::{self, IOHDRSZ, MAX_MSIZE, MIN_MSIZE, NOFID, Reply, Request, VERSION};

/// Fids one connection may hold at once.
const MAX_FIDS: usize = 4096;

/// Requests one connection may have waiting at once.
const MAX_PENDING: usize = 1024;

/// Replies queued for the writer before the requests that make more
/// wait.
const REPLY_QUEUE: usize = 64;

/// How long a client may take from connecting to attaching: a
/// connection that never attaches is closed, not kept.
const ATTACH_DEADLINE: Duration = Duration::from_secs(10);

/// Where replies go: the writer encodes each with its tag within the
/// agreed message size.
pub type Replies = mpsc::Sender<(u16, Reply)>;

/// A fid: the file it names, and its open state once opened.
struct Fid {
    /// The file.
    node: Node,
    /// Set by `Topen`.
    open: Option<Arc<Open>>,
}

/// A request answered by a task of its own.
struct Pending {
    /// The fid it is on.
    fid: u32,
    /// The task.
    task: JoinHandle<()>,
}

/// One connection's state.
struct Conn {
    /// The namespace.
    space: Arc<Space>,
    /// The attach name a client must give (the server's token, on TCP).
    token: Option<Arc<str>>,
    /// The agreed message size; [`MAX_MSIZE`] until `Tversion`. Shared
    /// with the writer.
    msize: Arc<AtomicU32>,
    /// Whether `Tversion` came.
    versioned: bool,
    /// Until when the client may attach; `None` once it has (since the
    /// last `Tversion`).
    attach_by: Option<tokio::time::Instant>,
    /// The client's fids.
    fids: HashMap<u32, Fid>,
    /// Requests answered by tasks, by tag.
    pending: HashMap<u16, Pending>,
    /// Where replies go.
    replies: Replies,
}

/// Serves one client on `stream` until it hangs up or `stopped`
/// resolves. `token`, when given, must be the attach name.
pub async fn serve<S>(
    stream: S,
    space: Arc<Space>,
    token: Option<Arc<str>>,
    stopped: impl Future<Output = ()>,
) where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut reader, mut writer) = tokio::io::split(stream);
    let (replies, mut outgoing) = mpsc::channel::<(u16, Reply)>(REPLY_QUEUE);
    let msize = Arc::new(AtomicU32::new(MAX_MSIZE));
    let agreed = Arc::clone(&msize);
    let writing = tokio::spawn(async move {
        while let Some((tag, reply)) = outgoing.recv().await {
            let bytes = reply.encode(tag, agreed.load(Ordering::SeqCst));
            if writer.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = writer.shutdown().await;
    });
    let mut conn = Conn {
        space,
        token,
        msize,
        versioned: false,
        attach_by: Some(tokio::time::Instant::now() + ATTACH_DEADLINE),
        fids: HashMap::new(),
        pending: HashMap::new(),
        replies,
    };
    tokio::pin!(stopped);
    loop {
        let msize = conn.msize.load(Ordering::SeqCst);
        let deadline = conn.attach_by;
        let frame = tokio::select! {
            frame = read_frame(&mut reader, msize) => frame,
            () = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => break,
            () = &mut stopped => break,
        };
        match frame {
            Ok(Some(body)) => conn.take(&body).await,
            Ok(None) | Err(_) => break,
        }
    }
    conn.forget_all().await;
    // The last replies go out before the stream closes.
    drop(conn);
    let _ = writing.await;
}

/// Reads one message body (its size taken off); `None` when the client
/// hung up between messages.
async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    msize: u32,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut size = [0u8; 4];
    match reader.read_exact(&mut size).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let size = u32::from_le_bytes(size);
    if !(7..=msize).contains(&size) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a message of {size} bytes, outside 7..={msize}"),
        ));
    }
    let mut body = vec![0u8; usize::try_from(size - 4).unwrap_or(0)];
    reader.read_exact(&mut body).await?;
    Ok(Some(body))
}

impl Conn {
    /// Takes one message.
    async fn take(&mut self, body: &[u8]) {
        self.pending.retain(|_, p| !p.task.is_finished());
        match wire::parse(body) {
            Ok((tag, request)) => {
                if let Some(reply) = self.handle(tag, request).await {
                    self.send(tag, reply).await;
                }
            }
            Err(e) => {
                // At least seven bytes came, so the tag is there.
                let tag = wire::tag_of(body).unwrap_or(wire::NOTAG);
                self.send(tag, Reply::Error(format!("malformed message: {e}")))
                    .await;
            }
        }
    }

    /// Sends `reply` to the request tagged `tag`.
    async fn send(&self, tag: u16, reply: Reply) {
        let _ = self.replies.send((tag, reply)).await;
    }

    /// The most data one read or write moves.
    fn iounit(&self) -> u32 {
        self.msize.load(Ordering::SeqCst).saturating_sub(IOHDRSZ)
    }

    /// Answers one request; `None` when a task answers it.
    async fn handle(&mut self, tag: u16, request: Request) -> Option<Reply> {
        let name = request.name();
        if !self.versioned && !matches!(request, Request::Version { .. }) {
            return Some(Reply::Error(format!(
                "{name} before Tversion: start with Tversion {VERSION}"
            )));
        }
        if self.pending.contains_key(&tag) && !matches!(request, Request::Flush { .. }) {
            // Its answer would be taken for the waiting request's.
            return Some(Reply::Error(format!(
                "tag {tag} is in use by a request still waiting: use another, or flush it"
            )));
        }
        let answer = match request {
            Request::Version { msize, version } => Ok(self.version(msize, &version).await),
            Request::Auth { .. } => Err(if self.token.is_some() {
                "no authentication file: attach with afid NOFID and the server's token as the \
                 attach name (aname)"
                    .to_owned()
            } else {
                "no authentication needed: attach with afid NOFID".to_owned()
            }),
            Request::Attach {
                fid, afid, aname, ..
            } => self.attach(fid, afid, &aname),
            Request::Flush { oldtag } => Ok(self.flush(oldtag).await),
            Request::Walk { fid, newfid, names } => self.walk(fid, newfid, &names),
            Request::Open { fid, mode } => self.open(fid, mode).await,
            Request::Create { .. } => Err(
                "files cannot be created here: write key=value lines to /sessions/new to create \
                 a session"
                    .to_owned(),
            ),
            Request::Read { fid, offset, count } => {
                return self.read(tag, fid, offset, count).err().map(Reply::Error);
            }
            Request::Write { fid, data, .. } => {
                return self.write(tag, fid, data).err().map(Reply::Error);
            }
            Request::Clunk { fid } => self.clunk(fid).await.map(|()| Reply::Clunk),
            Request::Remove { fid } => {
                // A remove clunks the fid even when it fails.
                let node = self.fids.get(&fid).map(|f| f.node.clone());
                match self.clunk(fid).await {
                    Ok(()) => Err(format!(
                        "{} cannot be removed (sessions stay in their logs)",
                        node.as_ref().map_or("the file", Node::name)
                    )),
                    Err(e) => Err(e),
                }
            }
            Request::Stat { fid } => match self.fids.get(&fid) {
                Some(f) => Ok(Reply::Stat(self.space.stat(&f.node).await)),
                None => Err(unknown_fid(fid)),
            },
            Request::Wstat { fid, stat } => self.wstat(fid, &stat),
        };
        Some(answer.unwrap_or_else(Reply::Error))
    }

    /// `Tversion`: agrees the message size and starts over. A size too
    /// small or a version not spoken is answered `unknown`, with the
    /// client's own size (never more), the old size kept.
    async fn version(&mut self, msize: u32, version: &str) -> Reply {
        self.forget_all().await;
        self.attach_by = Some(tokio::time::Instant::now() + ATTACH_DEADLINE);
        let speaks = version == VERSION || version.starts_with("9P2000.");
        if msize < MIN_MSIZE || !speaks {
            self.versioned = false;
            return Reply::Version {
                msize,
                version: "unknown".to_owned(),
            };
        }
        let agreed = msize.min(MAX_MSIZE);
        self.msize.store(agreed, Ordering::SeqCst);
        self.versioned = true;
        Reply::Version {
            msize: agreed,
            version: VERSION.to_owned(),
        }
    }

    /// `Tattach`: `fid` names the root.
    fn attach(&mut self, fid: u32, afid: u32, aname: &str) -> Result<Reply, String> {
        if afid != NOFID {
            return Err("no authentication files here: attach with afid NOFID".to_owned());
        }
        if let Some(token) = &self.token
            && !crate::auth::same(aname.as_bytes(), token.as_bytes())
        {
            return Err(
                "attach refused: over TCP the attach name (aname) must be the server's token, \
                 which etch serve printed when it started"
                    .to_owned(),
            );
        }
        self.new_fid(fid, Node::Root)?;
        self.attach_by = None;
        Ok(Reply::Attach(self.space.numbers.qid(&Node::Root)))
    }

    /// Records `fid` naming `node`, when it is free.
    fn new_fid(&mut self, fid: u32, node: Node) -> Result<(), String> {
        if self.fids.contains_key(&fid) {
            return Err(format!("fid {fid} is in use: clunk it first"));
        }
        if self.fids.len() >= MAX_FIDS {
            return Err(format!(
                "this connection holds {MAX_FIDS} fids, the most it may: clunk some"
            ));
        }
        self.fids.insert(fid, Fid { node, open: None });
        Ok(())
    }

    /// `Tflush`: stops the request tagged `oldtag`, if it still waits.
    async fn flush(&mut self, oldtag: u16) -> Reply {
        if let Some(pending) = self.pending.remove(&oldtag) {
            pending.task.abort();
            // Gone for sure once joined: no reply of its can follow
            // the Rflush.
            let _ = pending.task.await;
        }
        Reply::Flush
    }

    /// `Twalk`: from `fid` through `names` to `newfid`.
    fn walk(&mut self, fid: u32, newfid: u32, names: &[String]) -> Result<Reply, String> {
        let from = self.fids.get(&fid).ok_or_else(|| unknown_fid(fid))?;
        // intro(5) asks for an unopened fid; a walk to another fid from
        // an opened directory harms nothing, and clients do it (one
        // lists `/` on the fid it walks everything from).
        if from.open.is_some() && (newfid == fid || !from.node.is_dir()) {
            return Err(format!("fid {fid} is open: walk from an unopened fid"));
        }
        if newfid != fid && self.fids.contains_key(&newfid) {
            return Err(format!("fid {newfid} is in use: clunk it first"));
        }
        let mut node = from.node.clone();
        let mut qids = Vec::with_capacity(names.len());
        for name in names {
            let next = match node.child(name) {
                Ok(next) => Ok(next),
                Err(true) if self.space.has_session(name) => {
                    Ok(Node::Session(Arc::from(name.as_str())))
                }
                Err(true) => Err(format!(
                    "no session {name:?}: read /sessions/idx for the ids, or write to \
                     /sessions/new to create one"
                )),
                Err(false) if node.is_dir() => {
                    Err(format!("{name:?} is not in {}", files::path(&node)))
                }
                Err(false) => Err(format!("{} is a file, not a directory", node.name())),
            };
            match next {
                Ok(next) => {
                    qids.push(self.space.numbers.qid(&next));
                    node = next;
                }
                // Only the first element's failure is an error; later
                // ones answer the qids walked so far.
                Err(e) if qids.is_empty() => return Err(e),
                Err(_) => return Ok(Reply::Walk(qids)),
            }
        }
        if newfid == fid {
            if let Some(f) = self.fids.get_mut(&fid) {
                f.node = node;
            }
        } else {
            self.new_fid(newfid, node)?;
        }
        Ok(Reply::Walk(qids))
    }

    /// `Topen`.
    async fn open(&mut self, fid: u32, mode: u8) -> Result<Reply, String> {
        // Opening an open fid again starts it over (a new subscription,
        // a new snapshot): intro(5) calls it an error, but clients that
        // keep one fid per path (`ninep`'s) read a file that way again.
        let node = self
            .fids
            .get(&fid)
            .ok_or_else(|| unknown_fid(fid))?
            .node
            .clone();
        let open = files::open(&self.space, &node, mode).await?;
        let qid = self.space.numbers.qid(&node);
        if let Some(f) = self.fids.get_mut(&fid) {
            f.open = Some(Arc::new(open));
        }
        Ok(Reply::Open(qid, self.iounit()))
    }

    /// The open file of `fid`, opened for `what` (`reading` or
    /// `writing`), and room for one more waiting request.
    fn opened(&self, fid: u32, writing: bool) -> Result<Arc<Open>, String> {
        let f = self.fids.get(&fid).ok_or_else(|| unknown_fid(fid))?;
        let open = f
            .open
            .as_ref()
            .ok_or_else(|| format!("fid {fid} is not open: open it first"))?;
        if writing && !open.writable {
            return Err(format!("{} was not opened for writing", open.node.name()));
        }
        if !writing && !open.readable {
            return Err(format!("{} was not opened for reading", open.node.name()));
        }
        if self.pending.len() >= MAX_PENDING {
            return Err(format!(
                "this connection has {MAX_PENDING} requests waiting, the most it may"
            ));
        }
        Ok(Arc::clone(open))
    }

    /// `Tread`: answered by a task (it may wait for data).
    fn read(&mut self, tag: u16, fid: u32, offset: u64, count: u32) -> Result<(), String> {
        let open = self.opened(fid, false)?;
        let count = count.min(self.iounit());
        let space = Arc::clone(&self.space);
        let replies = self.replies.clone();
        let task = tokio::spawn(async move {
            files::read(&space, &open, offset, count, tag, &replies).await;
        });
        self.pending.insert(tag, Pending { fid, task });
        Ok(())
    }

    /// `Twrite`: answered by a task (a prompt waits for the session to
    /// take it). What the write does runs on by itself: a flush, a
    /// clunk or a hang-up stops the answer, never an operation halfway
    /// (a fork without its re-keying, a prompt taken without its run
    /// slot).
    fn write(&mut self, tag: u16, fid: u32, data: Vec<u8>) -> Result<(), String> {
        let open = self.opened(fid, true)?;
        let space = Arc::clone(&self.space);
        let replies = self.replies.clone();
        let operation = tokio::spawn(async move { files::write(&space, &open, data).await });
        let task = tokio::spawn(async move {
            let reply = match operation.await {
                Ok(Ok(n)) => Reply::Write(n),
                Ok(Err(e)) => Reply::Error(e),
                Err(e) => Reply::Error(format!("the write failed: {e}")),
            };
            let _ = replies.send((tag, reply)).await;
        });
        self.pending.insert(tag, Pending { fid, task });
        Ok(())
    }

    /// `Tclunk`: forgets `fid`; a request still waiting on it is
    /// answered with an error.
    async fn clunk(&mut self, fid: u32) -> Result<(), String> {
        if self.fids.remove(&fid).is_none() {
            return Err(unknown_fid(fid));
        }
        let tags: Vec<u16> = self
            .pending
            .iter()
            .filter(|(_, p)| p.fid == fid)
            .map(|(tag, _)| *tag)
            .collect();
        for tag in tags {
            let Some(pending) = self.pending.remove(&tag) else {
                continue;
            };
            pending.task.abort();
            if pending.task.await.is_err_and(|e| e.is_cancelled()) {
                self.send(
                    tag,
                    Reply::Error("the file was closed while this request waited".to_owned()),
                )
                .await;
            }
        }
        Ok(())
    }

    /// `Twstat`: only a change of nothing, or truncating a file one may
    /// write (which these files ignore), is taken.
    fn wstat(&self, fid: u32, stat: &wire::Stat) -> Result<Reply, String> {
        let f = self.fids.get(&fid).ok_or_else(|| unknown_fid(fid))?;
        let keeps = stat.mode == u32::MAX
            && stat.mtime == u32::MAX
            && stat.atime == u32::MAX
            && stat.name.is_empty()
            && stat.uid.is_empty()
            && stat.gid.is_empty();
        let truncates = stat.length == 0 && f.node.perm() & 0o222 != 0;
        if keeps && (stat.length == u64::MAX || truncates) {
            return Ok(Reply::Wstat);
        }
        Err(format!(
            "the metadata of {} cannot be changed",
            f.node.name()
        ))
    }

    /// Forgets every fid and stops every waiting request (a new
    /// `Tversion`, or the end of the connection).
    async fn forget_all(&mut self) {
        for (_, pending) in self.pending.drain() {
            pending.task.abort();
            let _ = pending.task.await;
        }
        self.fids.clear();
    }
}

/// The error for an unknown fid.
fn unknown_fid(fid: u32) -> String {
    format!("unknown fid {fid}: walk or attach to make it")
}
