//! The namespace's shape: which files exist, where, with what
//! permissions and qids.
//!
//! ```text
//! /eventwait              0444  the next lifecycle event of any session
//! /sessions/new           0666  write key=value lines; read the new id
//! /sessions/idx           0444  one line per session
//! /sessions/ID/prompt     0666  write: a prompt (steering while it runs)
//! /sessions/ID/ctl        0666  write: abort, compact, model, thinking,
//!                               name, fork; read: what it takes
//! /sessions/ID/chat       0444  the answer text as it streams
//! /sessions/ID/events     0444  the RPC events, one JSON line each
//! /sessions/ID/state      0444  idle or running; blocks until it changes
//! /sessions/ID/log        0444  the session's JSONL
//! /sessions/ID/stats      0444  usage=, cost=, ctxsz= lines
//! /sessions/ID/name       0666  the title; a write renames
//! ```
//!
//! Every file is owned by the user who started the server. A qid's path
//! is fixed per file: the root is 0, the fixed files below 16, and a
//! session's files share its number times 16 plus their own.
//!
//! This module must not know what reading or writing a file does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::wire::{DMDIR, QTDIR, QTFILE, Qid, Stat};

/// A file or directory of the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// `/`.
    Root,
    /// `/eventwait`.
    EventWait,
    /// `/sessions`.
    Sessions,
    /// `/sessions/new`.
    New,
    /// `/sessions/idx`.
    Idx,
    /// `/sessions/ID`.
    Session(Arc<str>),
    /// `/sessions/ID/FILE`.
    File(Arc<str>, File),
}

/// A file of a session's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum File {
    /// Write a prompt.
    Prompt,
    /// Write a control line.
    Ctl,
    /// Read the answer text.
    Chat,
    /// Read the RPC events.
    Events,
    /// Read idle/running.
    State,
    /// Read the JSONL.
    Log,
    /// Read the usage.
    Stats,
    /// Read or write the title.
    Name,
}

impl File {
    /// Every session file, in the order a listing gives them.
    pub const ALL: [Self; 8] = [
        Self::Prompt,
        Self::Ctl,
        Self::Chat,
        Self::Events,
        Self::State,
        Self::Log,
        Self::Stats,
        Self::Name,
    ];

    /// Its name in the session's directory.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Prompt => "prompt",
            Self::Ctl => "ctl",
            Self::Chat => "chat",
            Self::Events => "events",
            Self::State => "state",
            Self::Log => "log",
            Self::Stats => "stats",
            Self::Name => "name",
        }
    }

    /// The file called `name`.
    fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Its permissions: the files a client writes are 0666, the rest
    /// 0444.
    const fn perm(self) -> u32 {
        match self {
            Self::Prompt | Self::Ctl | Self::Name => 0o666,
            Self::Chat | Self::Events | Self::State | Self::Log | Self::Stats => 0o444,
        }
    }

    /// Its number within the session's.
    const fn code(self) -> u64 {
        match self {
            Self::Prompt => 1,
            Self::Ctl => 2,
            Self::Chat => 3,
            Self::Events => 4,
            Self::State => 5,
            Self::Log => 6,
            Self::Stats => 7,
            Self::Name => 8,
        }
    }
}

impl Node {
    /// Its name (the last element of its path; `/` for the root).
    pub fn name(&self) -> &str {
        match self {
            Self::Root => "/",
            Self::EventWait => "eventwait",
            Self::Sessions => "sessions",
            Self::New => "new",
            Self::Idx => "idx",
            Self::Session(id) => id,
            Self::File(_, file) => file.name(),
        }
    }

    /// Whether it is a directory.
    pub fn is_dir(&self) -> bool {
        matches!(self, Self::Root | Self::Sessions | Self::Session(_))
    }

    /// Its permission bits (without [`DMDIR`]).
    pub fn perm(&self) -> u32 {
        match self {
            Self::Root | Self::Sessions | Self::Session(_) => 0o555,
            Self::EventWait | Self::Idx => 0o444,
            Self::New => 0o666,
            Self::File(_, file) => file.perm(),
        }
    }

    /// The node a walk of `name` from this one reaches, when the name
    /// is one of its fixed entries (a session id is looked up by the
    /// caller: `Err(true)` says this directory holds sessions).
    pub fn child(&self, name: &str) -> Result<Self, bool> {
        match (self, name) {
            (Self::Root | Self::Sessions, "..") | (Self::Root, ".") => Ok(Self::Root),
            (Self::Root, "eventwait") => Ok(Self::EventWait),
            (Self::Root, "sessions") | (Self::Session(_), "..") => Ok(Self::Sessions),
            (Self::Sessions, "new") => Ok(Self::New),
            (Self::Sessions, "idx") => Ok(Self::Idx),
            (Self::Sessions, _) => Err(true),
            (Self::Session(id), name) => File::named(name)
                .map(|file| Self::File(Arc::clone(id), file))
                .ok_or(false),
            _ => Err(false),
        }
    }
}

/// The numbers given to sessions for their qids, fixed for the
/// server's life (a client may cache a qid).
#[derive(Debug, Default)]
pub struct Numbers {
    /// By session id.
    by_id: Mutex<HashMap<Arc<str>, u64>>,
}

impl Numbers {
    /// The qid of `node`.
    pub fn qid(&self, node: &Node) -> Qid {
        let path = match node {
            Node::Root => 0,
            Node::EventWait => 1,
            Node::Sessions => 2,
            Node::New => 3,
            Node::Idx => 4,
            Node::Session(id) => self.number(id) << 4,
            Node::File(id, file) => (self.number(id) << 4) | file.code(),
        };
        Qid {
            ty: if node.is_dir() { QTDIR } else { QTFILE },
            version: 0,
            path,
        }
    }

    /// Session `id`'s number, given at its first look (from 1).
    fn number(&self, id: &Arc<str>) -> u64 {
        let mut by_id = self
            .by_id
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let next = u64::try_from(by_id.len()).unwrap_or(u64::MAX) + 1;
        *by_id.entry(Arc::clone(id)).or_insert(next)
    }
}

/// The stat of `node`, owned by `owner`, `length` bytes long, changed
/// at `mtime`.
pub fn stat(numbers: &Numbers, node: &Node, owner: &str, length: u64, mtime: u32) -> Stat {
    let dir = if node.is_dir() { DMDIR } else { 0 };
    Stat {
        qid: numbers.qid(node),
        mode: dir | node.perm(),
        atime: mtime,
        mtime,
        length,
        name: node.name().to_owned(),
        uid: owner.to_owned(),
        gid: owner.to_owned(),
        muid: owner.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_reach_each_file_and_dot_dot_goes_up() {
        let id: Arc<str> = Arc::from("01ABC");
        assert_eq!(Node::Root.child("sessions"), Ok(Node::Sessions));
        assert_eq!(Node::Root.child("eventwait"), Ok(Node::EventWait));
        assert_eq!(Node::Sessions.child("new"), Ok(Node::New));
        assert_eq!(Node::Sessions.child("01ABC"), Err(true));
        assert_eq!(Node::Sessions.child(".."), Ok(Node::Root));
        assert_eq!(Node::Root.child(".."), Ok(Node::Root));
        let session = Node::Session(Arc::clone(&id));
        assert_eq!(session.child(".."), Ok(Node::Sessions));
        assert_eq!(
            session.child("chat"),
            Ok(Node::File(Arc::clone(&id), File::Chat))
        );
        assert_eq!(session.child("nope"), Err(false));
        assert_eq!(Node::New.child("x"), Err(false));
        assert_eq!(Node::Root.child("nope"), Err(false));
    }

    #[test]
    fn qids_are_fixed_and_distinct() {
        let numbers = Numbers::default();
        let a: Arc<str> = Arc::from("A");
        let b: Arc<str> = Arc::from("B");
        let mut seen = std::collections::HashSet::new();
        for node in [
            Node::Root,
            Node::EventWait,
            Node::Sessions,
            Node::New,
            Node::Idx,
            Node::Session(Arc::clone(&a)),
            Node::Session(Arc::clone(&b)),
        ]
        .into_iter()
        .chain(File::ALL.map(|f| Node::File(Arc::clone(&a), f)))
        .chain(File::ALL.map(|f| Node::File(Arc::clone(&b), f)))
        {
            assert!(seen.insert(numbers.qid(&node).path), "{node:?} repeats");
        }
        assert_eq!(numbers.qid(&Node::Root).ty, QTDIR);
        assert_eq!(
            numbers.qid(&Node::File(Arc::clone(&a), File::Log)),
            numbers.qid(&Node::File(a, File::Log))
        );
    }

    #[test]
    fn permissions_follow_what_a_client_may_do() {
        let id: Arc<str> = Arc::from("A");
        for (file, perm) in [
            (File::Prompt, 0o666),
            (File::Ctl, 0o666),
            (File::Name, 0o666),
            (File::Chat, 0o444),
            (File::Events, 0o444),
            (File::Log, 0o444),
            (File::Stats, 0o444),
            (File::State, 0o444),
        ] {
            assert_eq!(Node::File(Arc::clone(&id), file).perm(), perm, "{file:?}");
        }
        assert_eq!(Node::New.perm(), 0o666);
        assert_eq!(Node::Idx.perm(), 0o444);
        assert_eq!(Node::EventWait.perm(), 0o444);
        let numbers = Numbers::default();
        assert_eq!(
            stat(&numbers, &Node::Sessions, "me", 0, 0).mode,
            DMDIR | 0o555
        );
    }
}
