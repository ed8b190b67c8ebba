//! The 9P2000 wire format (Plan 9's intro(5)): requests parsed from one
//! message's bytes, replies encoded to bytes. Fields are little-endian;
//! strings and data carry their length first (two bytes for strings,
//! four for data). A message is `size[4] type[1] tag[2] body`, `size`
//! counting itself.
//!
//! Every length is checked against what is left before anything is
//! taken, so no input can make the parser read out of bounds, allocate
//! more than the message holds, or panic; a message that does not parse
//! is answered with an error naming what is wrong.
//!
//! This module must not know what any file means.

/// The only protocol version spoken.
pub const VERSION: &str = "9P2000";

/// The largest message taken or sent: a client asking for more gets
/// this in `Rversion`.
pub const MAX_MSIZE: u32 = 1 << 20;

/// The smallest `msize` worth speaking with: a read must carry at
/// least some bytes after its header.
pub const MIN_MSIZE: u32 = 256;

/// Bytes of a read or write message that are not data (intro(5)'s
/// IOHDRSZ): a read's count is at most `msize - IOHDRSZ`.
pub const IOHDRSZ: u32 = 24;

/// The tag of `Tversion`.
pub const NOTAG: u16 = 0xFFFF;

/// "No fid", in `Tattach`'s `afid`.
pub const NOFID: u32 = u32::MAX;

/// The most names one `Twalk` may carry.
pub const MAXWELEM: usize = 16;

/// The bit of a `Stat`'s mode that marks a directory.
pub const DMDIR: u32 = 0x8000_0000;

/// A `Qid`'s type byte for a directory.
pub const QTDIR: u8 = 0x80;

/// A `Qid`'s type byte for a plain file.
pub const QTFILE: u8 = 0;

/// The longest error text sent: longer ones are cut (at a character),
/// and shorter still when the agreed `msize` leaves less room.
const MAX_ERROR: usize = 2048;

/// Message types (intro(5)); a reply's type is its request's plus one.
mod kind {
    /// `Tversion`.
    pub const TVERSION: u8 = 100;
    /// `Tauth`.
    pub const TAUTH: u8 = 102;
    /// `Tattach`.
    pub const TATTACH: u8 = 104;
    /// `Rerror` (there is no `Terror`).
    pub const RERROR: u8 = 107;
    /// `Tflush`.
    pub const TFLUSH: u8 = 108;
    /// `Twalk`.
    pub const TWALK: u8 = 110;
    /// `Topen`.
    pub const TOPEN: u8 = 112;
    /// `Tcreate`.
    pub const TCREATE: u8 = 114;
    /// `Tread`.
    pub const TREAD: u8 = 116;
    /// `Twrite`.
    pub const TWRITE: u8 = 118;
    /// `Tclunk`.
    pub const TCLUNK: u8 = 120;
    /// `Tremove`.
    pub const TREMOVE: u8 = 122;
    /// `Tstat`.
    pub const TSTAT: u8 = 124;
    /// `Twstat`.
    pub const TWSTAT: u8 = 126;
}

/// The server's name for a file: its type, a version, and a number
/// unique among the server's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Qid {
    /// [`QTDIR`] or [`QTFILE`].
    pub ty: u8,
    /// Bumped when the file changes (0: not tracked).
    pub version: u32,
    /// The file's number.
    pub path: u64,
}

/// A file's metadata, as `Rstat` and directory reads give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// Its qid.
    pub qid: Qid,
    /// Permission bits, with [`DMDIR`] for a directory.
    pub mode: u32,
    /// Last access, seconds since the epoch.
    pub atime: u32,
    /// Last change, seconds since the epoch.
    pub mtime: u32,
    /// Length in bytes (0 for files whose contents are made when read).
    pub length: u64,
    /// The last element of its path.
    pub name: String,
    /// Owner.
    pub uid: String,
    /// Group.
    pub gid: String,
    /// Who changed it last.
    pub muid: String,
}

/// A client's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Starts (or restarts) the conversation.
    Version {
        /// The largest message the client takes.
        msize: u32,
        /// The version it speaks.
        version: String,
    },
    /// Asks for an authentication file.
    Auth {
        /// The fid it would be.
        afid: u32,
        /// The user.
        uname: String,
        /// The tree.
        aname: String,
    },
    /// Attaches `fid` to the root of tree `aname` as user `uname`.
    Attach {
        /// The new fid.
        fid: u32,
        /// The authentication fid, or [`NOFID`].
        afid: u32,
        /// The user.
        uname: String,
        /// The tree.
        aname: String,
    },
    /// Cancels the request tagged `oldtag`.
    Flush {
        /// Its tag.
        oldtag: u16,
    },
    /// Walks from `fid` through `names` to `newfid`.
    Walk {
        /// The starting point.
        fid: u32,
        /// The fid the end is given.
        newfid: u32,
        /// Path elements, at most [`MAXWELEM`].
        names: Vec<String>,
    },
    /// Opens `fid` for I/O.
    Open {
        /// The fid.
        fid: u32,
        /// Read, write, both, with flags.
        mode: u8,
    },
    /// Creates `name` in the directory `fid`.
    Create {
        /// The directory.
        fid: u32,
        /// The new file's name.
        name: String,
        /// Its permissions.
        perm: u32,
        /// How to open it.
        mode: u8,
    },
    /// Reads `count` bytes at `offset`.
    Read {
        /// The fid.
        fid: u32,
        /// Where.
        offset: u64,
        /// At most this many bytes.
        count: u32,
    },
    /// Writes `data` at `offset`.
    Write {
        /// The fid.
        fid: u32,
        /// Where.
        offset: u64,
        /// The bytes.
        data: Vec<u8>,
    },
    /// Forgets `fid`.
    Clunk {
        /// The fid.
        fid: u32,
    },
    /// Removes the file of `fid`, and forgets the fid.
    Remove {
        /// The fid.
        fid: u32,
    },
    /// Asks for the metadata of `fid`.
    Stat {
        /// The fid.
        fid: u32,
    },
    /// Changes the metadata of `fid`.
    Wstat {
        /// The fid.
        fid: u32,
        /// The wanted metadata (all ones and empty strings: "leave").
        stat: Stat,
    },
}

impl Request {
    /// The request's name as intro(5) spells it, for error texts.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Version { .. } => "Tversion",
            Self::Auth { .. } => "Tauth",
            Self::Attach { .. } => "Tattach",
            Self::Flush { .. } => "Tflush",
            Self::Walk { .. } => "Twalk",
            Self::Open { .. } => "Topen",
            Self::Create { .. } => "Tcreate",
            Self::Read { .. } => "Tread",
            Self::Write { .. } => "Twrite",
            Self::Clunk { .. } => "Tclunk",
            Self::Remove { .. } => "Tremove",
            Self::Stat { .. } => "Tstat",
            Self::Wstat { .. } => "Twstat",
        }
    }
}

/// The server's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// To `Tversion`.
    Version {
        /// The largest message either side sends.
        msize: u32,
        /// [`VERSION`], or `unknown`.
        version: String,
    },
    /// To `Tattach`: the root's qid.
    Attach(Qid),
    /// A failed request: what went wrong and what to do.
    Error(String),
    /// To `Tflush`.
    Flush,
    /// To `Twalk`: the qids walked.
    Walk(Vec<Qid>),
    /// To `Topen`: the file's qid and the most bytes one message moves.
    Open(Qid, u32),
    /// To `Tread`.
    Read(Vec<u8>),
    /// To `Twrite`: the bytes taken.
    Write(u32),
    /// To `Tclunk`.
    Clunk,
    /// To `Tstat`.
    Stat(Stat),
    /// To `Twstat`.
    Wstat,
}

/// Why a message does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// It ends before a field does.
    #[error("the message ends inside its {0} field")]
    Short(&'static str),
    /// Its type is not a request of 9P2000.
    #[error("message type {0} is not a 9P2000 request")]
    UnknownType(u8),
    /// A string is not UTF-8.
    #[error("the {0} field is not UTF-8")]
    NotUtf8(&'static str),
    /// A walk with too many names.
    #[error("a walk carries at most {MAXWELEM} names, not {0}")]
    TooManyNames(u16),
    /// Bytes after the last field.
    #[error("{0} bytes follow the message's last field")]
    Trailing(usize),
}

/// Reads fields off a message, never past its end.
struct Fields<'a> {
    /// What is left.
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    /// `n` bytes, for the field `what`.
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if self.rest.len() < n {
            return Err(WireError::Short(what));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    /// A byte.
    fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.take(1, what)?[0])
    }

    /// Two bytes, little-endian.
    fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// Four bytes, little-endian.
    fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Eight bytes, little-endian.
    fn u64(&mut self, what: &'static str) -> Result<u64, WireError> {
        let b = self.take(8, what)?;
        let mut bytes = [0; 8];
        bytes.copy_from_slice(b);
        Ok(u64::from_le_bytes(bytes))
    }

    /// A string: two bytes of length, then UTF-8.
    fn string(&mut self, what: &'static str) -> Result<String, WireError> {
        let n = self.u16(what)?;
        let bytes = self.take(usize::from(n), what)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| WireError::NotUtf8(what))
    }

    /// A qid.
    fn qid(&mut self) -> Result<Qid, WireError> {
        Ok(Qid {
            ty: self.u8("qid.type")?,
            version: self.u32("qid.vers")?,
            path: self.u64("qid.path")?,
        })
    }

    /// A stat as `Twstat` carries it: its own two-byte count, then the
    /// stat (which starts with its size).
    fn stat(&mut self) -> Result<Stat, WireError> {
        let n = self.u16("stat")?;
        let mut inner = Fields {
            rest: self.take(usize::from(n), "stat")?,
        };
        let _size = inner.u16("stat.size")?;
        let _ty = inner.u16("stat.type")?;
        let _dev = inner.u32("stat.dev")?;
        let stat = Stat {
            qid: inner.qid()?,
            mode: inner.u32("stat.mode")?,
            atime: inner.u32("stat.atime")?,
            mtime: inner.u32("stat.mtime")?,
            length: inner.u64("stat.length")?,
            name: inner.string("stat.name")?,
            uid: inner.string("stat.uid")?,
            gid: inner.string("stat.gid")?,
            muid: inner.string("stat.muid")?,
        };
        Ok(stat)
    }
}

/// The tag of a message body (`type[1] tag[2] ...`, the size taken
/// off), when it is long enough to have one.
pub fn tag_of(body: &[u8]) -> Option<u16> {
    match body {
        [_, a, b, ..] => Some(u16::from_le_bytes([*a, *b])),
        _ => None,
    }
}

/// Parses one message body (`type[1] tag[2] ...`, without its size):
/// the tag and the request.
pub fn parse(body: &[u8]) -> Result<(u16, Request), WireError> {
    let mut f = Fields { rest: body };
    let ty = f.u8("type")?;
    let tag = f.u16("tag")?;
    let request = match ty {
        kind::TVERSION => Request::Version {
            msize: f.u32("msize")?,
            version: f.string("version")?,
        },
        kind::TAUTH => Request::Auth {
            afid: f.u32("afid")?,
            uname: f.string("uname")?,
            aname: f.string("aname")?,
        },
        kind::TATTACH => Request::Attach {
            fid: f.u32("fid")?,
            afid: f.u32("afid")?,
            uname: f.string("uname")?,
            aname: f.string("aname")?,
        },
        kind::TFLUSH => Request::Flush {
            oldtag: f.u16("oldtag")?,
        },
        kind::TWALK => {
            let fid = f.u32("fid")?;
            let newfid = f.u32("newfid")?;
            let n = f.u16("nwname")?;
            if usize::from(n) > MAXWELEM {
                return Err(WireError::TooManyNames(n));
            }
            let mut names = Vec::with_capacity(usize::from(n));
            for _ in 0..n {
                names.push(f.string("wname")?);
            }
            Request::Walk { fid, newfid, names }
        }
        kind::TOPEN => Request::Open {
            fid: f.u32("fid")?,
            mode: f.u8("mode")?,
        },
        kind::TCREATE => Request::Create {
            fid: f.u32("fid")?,
            name: f.string("name")?,
            perm: f.u32("perm")?,
            mode: f.u8("mode")?,
        },
        kind::TREAD => Request::Read {
            fid: f.u32("fid")?,
            offset: f.u64("offset")?,
            count: f.u32("count")?,
        },
        kind::TWRITE => {
            let fid = f.u32("fid")?;
            let offset = f.u64("offset")?;
            let count = f.u32("count")?;
            let count = usize::try_from(count).map_err(|_| WireError::Short("data"))?;
            let data = f.take(count, "data")?.to_vec();
            Request::Write { fid, offset, data }
        }
        kind::TCLUNK => Request::Clunk { fid: f.u32("fid")? },
        kind::TREMOVE => Request::Remove { fid: f.u32("fid")? },
        kind::TSTAT => Request::Stat { fid: f.u32("fid")? },
        kind::TWSTAT => Request::Wstat {
            fid: f.u32("fid")?,
            stat: f.stat()?,
        },
        other => return Err(WireError::UnknownType(other)),
    };
    if !f.rest.is_empty() {
        return Err(WireError::Trailing(f.rest.len()));
    }
    Ok((tag, request))
}

/// Writes fields into a message.
struct Out {
    /// The message so far, its size first (filled in at the end).
    buf: Vec<u8>,
}

impl Out {
    /// A message of type `ty` with `tag`.
    fn new(ty: u8, tag: u16) -> Self {
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(&[0; 4]);
        buf.push(ty);
        buf.extend_from_slice(&tag.to_le_bytes());
        Self { buf }
    }

    /// A byte.
    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// Two bytes.
    fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Four bytes.
    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Eight bytes.
    fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A string, cut (at a character) to what a length field holds.
    fn string(&mut self, s: &str) {
        let s = cut(s, usize::from(u16::MAX));
        // `cut` kept it within u16.
        self.u16(u16::try_from(s.len()).unwrap_or(u16::MAX));
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// A qid.
    fn qid(&mut self, q: Qid) {
        self.u8(q.ty);
        self.u32(q.version);
        self.u64(q.path);
    }

    /// The message, its size filled in.
    fn done(mut self) -> Vec<u8> {
        let size = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[..4].copy_from_slice(&size.to_le_bytes());
        self.buf
    }
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// One stat entry as directory reads and `Rstat` carry it (with its
/// leading size).
pub fn encode_stat(stat: &Stat) -> Vec<u8> {
    let mut out = Out { buf: Vec::new() };
    out.u16(0);
    out.u16(0);
    out.u32(0);
    out.qid(stat.qid);
    out.u32(stat.mode);
    out.u32(stat.atime);
    out.u32(stat.mtime);
    out.u64(stat.length);
    out.string(&stat.name);
    out.string(&stat.uid);
    out.string(&stat.gid);
    out.string(&stat.muid);
    let size = u16::try_from(out.buf.len() - 2).unwrap_or(u16::MAX);
    out.buf[..2].copy_from_slice(&size.to_le_bytes());
    out.buf
}

impl Reply {
    /// The reply to the request tagged `tag`, as bytes, within `msize`
    /// (an error's text is cut to fit; a read's data is the caller's to
    /// bound).
    pub fn encode(&self, tag: u16, msize: u32) -> Vec<u8> {
        match self {
            Self::Version { msize, version } => {
                let mut out = Out::new(kind::TVERSION + 1, tag);
                out.u32(*msize);
                out.string(version);
                out.done()
            }
            Self::Attach(qid) => {
                let mut out = Out::new(kind::TATTACH + 1, tag);
                out.qid(*qid);
                out.done()
            }
            Self::Error(text) => {
                let mut out = Out::new(kind::RERROR, tag);
                let room = usize::try_from(msize.saturating_sub(9)).unwrap_or(usize::MAX);
                out.string(cut(text, MAX_ERROR.min(room)));
                out.done()
            }
            Self::Flush => Out::new(kind::TFLUSH + 1, tag).done(),
            Self::Walk(qids) => {
                let mut out = Out::new(kind::TWALK + 1, tag);
                out.u16(u16::try_from(qids.len()).unwrap_or(u16::MAX));
                for qid in qids {
                    out.qid(*qid);
                }
                out.done()
            }
            Self::Open(qid, iounit) => {
                let mut out = Out::new(kind::TOPEN + 1, tag);
                out.qid(*qid);
                out.u32(*iounit);
                out.done()
            }
            Self::Read(data) => {
                let mut out = Out::new(kind::TREAD + 1, tag);
                out.u32(u32::try_from(data.len()).unwrap_or(u32::MAX));
                out.buf.extend_from_slice(data);
                out.done()
            }
            Self::Write(count) => {
                let mut out = Out::new(kind::TWRITE + 1, tag);
                out.u32(*count);
                out.done()
            }
            Self::Clunk => Out::new(kind::TCLUNK + 1, tag).done(),
            Self::Stat(stat) => {
                let mut out = Out::new(kind::TSTAT + 1, tag);
                let entry = encode_stat(stat);
                out.u16(u16::try_from(entry.len()).unwrap_or(u16::MAX));
                out.buf.extend_from_slice(&entry);
                out.done()
            }
            Self::Wstat => Out::new(kind::TWSTAT + 1, tag).done(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's bytes, built field by field as a client would.
    fn message(ty: u8, tag: u16, fields: &[&[u8]]) -> Vec<u8> {
        let mut body = vec![ty];
        body.extend_from_slice(&tag.to_le_bytes());
        for f in fields {
            body.extend_from_slice(f);
        }
        body
    }

    /// A string field.
    fn s(text: &str) -> Vec<u8> {
        let mut v = u16::try_from(text.len()).unwrap().to_le_bytes().to_vec();
        v.extend_from_slice(text.as_bytes());
        v
    }

    #[test]
    fn parses_each_request() {
        let version = message(100, NOTAG, &[&8192u32.to_le_bytes(), &s("9P2000")]);
        assert_eq!(
            parse(&version).unwrap(),
            (
                NOTAG,
                Request::Version {
                    msize: 8192,
                    version: "9P2000".into()
                }
            )
        );
        let walk = message(
            110,
            3,
            &[
                &1u32.to_le_bytes(),
                &2u32.to_le_bytes(),
                &2u16.to_le_bytes(),
                &s("sessions"),
                &s("new"),
            ],
        );
        assert_eq!(
            parse(&walk).unwrap().1,
            Request::Walk {
                fid: 1,
                newfid: 2,
                names: vec!["sessions".into(), "new".into()]
            }
        );
        let write = message(
            118,
            4,
            &[
                &7u32.to_le_bytes(),
                &0u64.to_le_bytes(),
                &3u32.to_le_bytes(),
                b"hi\n",
            ],
        );
        assert_eq!(
            parse(&write).unwrap().1,
            Request::Write {
                fid: 7,
                offset: 0,
                data: b"hi\n".to_vec()
            }
        );
        let flush = message(108, 5, &[&4u16.to_le_bytes()]);
        assert_eq!(parse(&flush).unwrap().1, Request::Flush { oldtag: 4 });
    }

    #[test]
    fn bad_messages_are_named_never_panics() {
        // Too short for a tag.
        assert_eq!(parse(&[116]), Err(WireError::Short("tag")));
        assert_eq!(tag_of(&[116, 1]), None);
        // A read without its count.
        let short = message(116, 1, &[&1u32.to_le_bytes(), &0u64.to_le_bytes()]);
        assert_eq!(parse(&short), Err(WireError::Short("count")));
        // A write claiming more data than it carries.
        let lying = message(
            118,
            1,
            &[
                &1u32.to_le_bytes(),
                &0u64.to_le_bytes(),
                &u32::MAX.to_le_bytes(),
                b"x",
            ],
        );
        assert_eq!(parse(&lying), Err(WireError::Short("data")));
        // A reply type, an unknown type.
        assert_eq!(
            parse(&message(101, 1, &[])),
            Err(WireError::UnknownType(101))
        );
        assert_eq!(parse(&message(7, 1, &[])), Err(WireError::UnknownType(7)));
        // Seventeen names.
        let many = message(
            110,
            1,
            &[
                &1u32.to_le_bytes(),
                &2u32.to_le_bytes(),
                &17u16.to_le_bytes(),
            ],
        );
        assert_eq!(parse(&many), Err(WireError::TooManyNames(17)));
        // A name that is not UTF-8.
        let mut bad = message(110, 1, &[&1u32.to_le_bytes(), &2u32.to_le_bytes()]);
        bad.extend_from_slice(&1u16.to_le_bytes());
        bad.extend_from_slice(&2u16.to_le_bytes());
        bad.extend_from_slice(&[0xff, 0xfe]);
        assert_eq!(parse(&bad), Err(WireError::NotUtf8("wname")));
        // Bytes after the end.
        let trailing = message(120, 1, &[&1u32.to_le_bytes(), b"zz"]);
        assert_eq!(parse(&trailing), Err(WireError::Trailing(2)));
    }

    #[test]
    fn every_prefix_of_every_request_fails_cleanly() {
        let stat = Stat {
            qid: Qid {
                ty: QTFILE,
                version: 0,
                path: 9,
            },
            mode: 0o644,
            atime: 1,
            mtime: 2,
            length: 3,
            name: "n".into(),
            uid: "u".into(),
            gid: "g".into(),
            muid: "m".into(),
        };
        let entry = encode_stat(&stat);
        let mut wstat_fields = 1u32.to_le_bytes().to_vec();
        wstat_fields.extend_from_slice(&u16::try_from(entry.len()).unwrap().to_le_bytes());
        wstat_fields.extend_from_slice(&entry);
        let wstat = message(126, 9, &[&wstat_fields]);
        assert_eq!(
            parse(&wstat).unwrap().1,
            Request::Wstat {
                fid: 1,
                stat: stat.clone()
            }
        );
        let attach = message(
            104,
            1,
            &[&0u32.to_le_bytes(), &NOFID.to_le_bytes(), &s("me"), &s("")],
        );
        assert!(parse(&attach).is_ok());
        for whole in [wstat, attach] {
            for end in 0..whole.len() {
                assert!(parse(&whole[..end]).is_err(), "prefix {end} parsed");
            }
        }
    }

    #[test]
    fn replies_carry_their_size_type_and_tag() {
        let bytes = Reply::Read(b"abc".to_vec()).encode(7, MAX_MSIZE);
        assert_eq!(&bytes[..4], &14u32.to_le_bytes());
        assert_eq!(bytes[4], 117);
        assert_eq!(&bytes[5..7], &7u16.to_le_bytes());
        assert_eq!(&bytes[7..11], &3u32.to_le_bytes());
        assert_eq!(&bytes[11..], b"abc");
        let error = Reply::Error("é".repeat(5000)).encode(1, MAX_MSIZE);
        let n = usize::from(u16::from_le_bytes([error[7], error[8]]));
        assert!(n <= MAX_ERROR);
        assert!(std::str::from_utf8(&error[9..]).is_ok());
        assert_eq!(error.len(), 9 + n);
        // Within the smallest msize too.
        let small = Reply::Error("x".repeat(5000)).encode(1, MIN_MSIZE);
        assert_eq!(small.len(), MIN_MSIZE as usize);
    }
}
