//! `etch serve --9p` end to end: the real binary serving its sessions as
//! a 9P2000 file tree, driven by two clients that share no code with the
//! server: `ninep`'s (an independent implementation) and one written
//! out here by hand from intro(5), so the bytes on the wire are checked
//! too. Runs that must stay open while a test acts are held by a gated
//! fake model server (a file releases the answer): no test waits on a
//! guessed duration.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixStream;

use etch_test_support::{FakeServer, Reply, chat_text, chat_text_chunks};
use ninep::sync::client::Client;
use support::serve::Serve;
use support::{Workspace, jsonl, model_args};

/// Starts `etch serve` with a 9P tree on a free loopback port.
fn serve(ws: &Workspace, args: &[&str]) -> Serve {
    let mut all = vec!["--9p", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let serve = Serve::start(ws, &all);
    assert!(serve.ninep.is_some(), "no ninep in the listening line");
    serve
}

/// The model flags for `server`, as `&str`s.
fn model(server: &FakeServer) -> Vec<String> {
    model_args(server)
}

/// A `ninep` client of `serve`'s tree, attached with the token.
fn client(serve: &Serve) -> Client {
    Client::new_tcp(
        "tester",
        serve.ninep.as_deref().unwrap(),
        serve.token.as_str(),
    )
    .unwrap()
}

/// What the held model answers.
const ANSWER: &str = "first piece, then the rest";

/// An answer whose first piece goes out at once and the rest once the
/// file `gate` exists.
fn held(gate: &std::path::Path) -> Reply {
    let mut chunks = chat_text_chunks(ANSWER, 4);
    let rest = chunks.split_off(1);
    Reply::Gated {
        events: chunks,
        gate: gate.to_path_buf(),
        rest,
    }
}

/// The ids `idx` lists, in order.
fn ids(client: &Client) -> Vec<String> {
    client
        .read_str("/sessions/idx")
        .unwrap()
        .lines()
        .map(|line| line.split('\t').next().unwrap().to_owned())
        .collect()
}

/// Reads chunks of `chat` until one ends with the end-of-run line;
/// answers all the text.
fn chat_until_end(chunks: &mut impl Iterator<Item = Vec<u8>>) -> String {
    let mut text = String::new();
    while !text.ends_with("--- end ---\n") {
        let Some(chunk) = chunks.next() else {
            panic!("chat ended before the run did: {text:?}");
        };
        text.push_str(&String::from_utf8(chunk).unwrap());
    }
    text
}

/// The error text of a failed `ninep` call.
fn rerror<T: std::fmt::Debug>(result: Result<T, ninep::sync::client::Error>) -> String {
    match result {
        Err(ninep::sync::client::Error::Rerror { ename }) => ename,
        other => panic!("expected an Rerror, got {other:?}"),
    }
}

/// A session is made by writing `new`, listed by `idx`, prompted by
/// writing `prompt`, and its answer read from `chat` piece by piece as
/// the model sends it (the first piece before the rest is even let
/// go); `state`, `log`, `stats`, `name` and `eventwait` say what
/// happened.
#[test]
fn a_session_is_made_prompted_and_read_as_files() {
    let ws = Workspace::new();
    let gate = ws.path().join("release");
    let server = FakeServer::start(vec![held(&gate)]).unwrap();
    let args = model(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = serve(&ws, &args);
    let c = client(&serve);

    let mut lifecycle = c.iter_lines("/eventwait").unwrap();
    let cwd = ws.path().canonicalize().unwrap();
    c.write_str(
        "/sessions/new",
        0,
        &format!("cwd={}\nname=by files\n", cwd.display()),
    )
    .unwrap();
    let created: serde_json::Value = serde_json::from_str(&lifecycle.next().unwrap()).unwrap();
    assert_eq!(created["type"], "session_created", "{created}");
    let id = created["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(ids(&c), std::slice::from_ref(&id));
    let row = c.read_str("/sessions/idx").unwrap();
    assert_eq!(
        row,
        format!("{id}\tby files\tidle\t{}\n", cwd.display()),
        "{row}"
    );
    assert_eq!(
        c.read_str(format!("/sessions/{id}/name")).unwrap(),
        "by files\n"
    );

    let dir = format!("/sessions/{id}");
    let mut state = c.iter_chunks(format!("{dir}/state")).unwrap();
    assert_eq!(state.next().unwrap(), b"idle\n");
    let mut chat = c.iter_chunks(format!("{dir}/chat")).unwrap();
    c.write_str(format!("{dir}/prompt"), 0, "say something\n")
        .unwrap();
    assert_eq!(state.next().unwrap(), b"running\n");
    // The first piece arrives while the model still holds the rest.
    let first = String::from_utf8(chat.next().unwrap()).unwrap();
    assert!(
        !first.is_empty() && ANSWER.starts_with(&first) && first.len() < ANSWER.len(),
        "{first:?}"
    );
    std::fs::write(&gate, "").unwrap();
    let rest = chat_until_end(&mut chat);
    assert_eq!(format!("{first}{rest}"), format!("{ANSWER}\n--- end ---\n"));
    assert_eq!(state.next().unwrap(), b"idle\n");

    let log = c.read_str(format!("{dir}/log")).unwrap();
    let file = ws.only_session();
    assert_eq!(log, std::fs::read_to_string(&file).unwrap());
    let users: Vec<_> = jsonl(&file)
        .into_iter()
        .filter(|e| e["type"] == "message.user")
        .collect();
    assert_eq!(users.len(), 1);
    assert_eq!(users[0]["data"]["content"][0]["text"], "say something");
    let usage = c.read_str(format!("{dir}/stats")).unwrap();
    for key in ["usage=", "cost=", "ctxsz="] {
        assert!(usage.lines().any(|l| l.starts_with(key)), "{usage}");
    }
    assert!(usage.contains("turns=1\n"), "{usage}");
    // The name given at creation stays after the first prompt.
    assert_eq!(c.read_str(format!("{dir}/name")).unwrap(), "by files\n");
    c.write_str(format!("{dir}/name"), 0, "renamed\n").unwrap();
    assert_eq!(c.read_str(format!("{dir}/name")).unwrap(), "renamed\n");
    // Reading `new` without writing makes a session with the defaults.
    let second = c.read_str("/sessions/new").unwrap();
    assert!(ids(&c).contains(&second.trim().to_owned()), "{second}");
}

/// `ctl` aborts a held run: `state` blocks until the session is idle
/// again, and `chat` ends the run's text; bad `ctl` lines and other bad
/// requests are `Rerror`s that say what is wrong, on a connection that
/// goes on serving.
#[test]
fn ctl_aborts_and_bad_requests_are_errors_not_hangups() {
    let ws = Workspace::new();
    let gate = ws.path().join("never");
    let server = FakeServer::start(vec![held(&gate)]).unwrap();
    let args = model(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = serve(&ws, &args);
    let c = client(&serve);
    let id = c.read_str("/sessions/new").unwrap().trim().to_owned();
    let dir = format!("/sessions/{id}");

    let mut state = c.iter_chunks(format!("{dir}/state")).unwrap();
    assert_eq!(state.next().unwrap(), b"idle\n");
    let mut chat = c.iter_chunks(format!("{dir}/chat")).unwrap();
    c.write_str(format!("{dir}/prompt"), 0, "hold on").unwrap();
    assert_eq!(state.next().unwrap(), b"running\n");
    assert!(ANSWER.as_bytes().starts_with(&chat.next().unwrap()));
    c.write_str(format!("{dir}/ctl"), 0, "abort\n").unwrap();
    assert_eq!(state.next().unwrap(), b"idle\n");
    let rest = chat_until_end(&mut chat);
    assert!(rest.ends_with("\n--- end ---\n"), "{rest:?}");

    let ctl = format!("{dir}/ctl");
    assert!(c.read_str(&ctl).unwrap().contains("fork ENTRY"));
    for (line, says) in [
        ("bogus\n", "unknown command \"bogus\""),
        ("thinking loud\n", "thinking takes off, none"),
        ("fork\n", "fork needs one event id"),
        ("name\n", "name needs a title"),
        ("abort now\n", "abort takes nothing"),
        ("model a b c\n", "model needs a model"),
    ] {
        let error = rerror(c.write_str(&ctl, 0, line));
        assert!(error.contains(says), "{line:?}: {error}");
    }
    c.write_str(&ctl, 0, "thinking high\n").unwrap();
    let error = rerror(c.write_str(format!("{dir}/chat"), 0, "x"));
    assert!(error.contains("chat is read-only"), "{error}");
    let error = rerror(c.read_str("/nope"));
    assert!(error.contains("\"nope\" is not in /"), "{error}");
    let error = rerror(c.write_str("/sessions/new", 0, "colour=red\n"));
    assert!(error.contains("no key \"colour\""), "{error}");
    let error = rerror(c.write_str("/sessions/new", 0, "cwd=/\n"));
    assert!(
        error.contains("not a directory inside a served root"),
        "{error}"
    );
    let error = rerror(c.write_str(format!("{dir}/prompt"), 0, "  \n"));
    assert!(error.contains("empty"), "{error}");
    let error = rerror(c.remove(format!("{dir}/log")));
    assert!(error.contains("cannot be removed"), "{error}");
    // The connection still serves.
    assert!(c.read_str(&ctl).unwrap().starts_with("abort"));
}

/// Two clients read one session's chat and both get the whole answer; a
/// client that hangs up in the middle of a blocked read leaves the
/// server serving the others.
#[test]
fn two_clients_share_a_session_and_one_gone_mid_read_harms_none() {
    let ws = Workspace::new();
    let serve = serve(&ws, &["--provider", "echo"]);
    let a = client(&serve);
    let b = client(&serve);
    let id = a.read_str("/sessions/new").unwrap().trim().to_owned();
    let chat = format!("/sessions/{id}/chat");

    let mut gone = Raw::connect(&serve);
    gone.walk_open(1, &["sessions", &id, "chat"], 0).unwrap();
    gone.send(
        TREAD,
        9,
        &[
            &1u32.to_le_bytes(),
            &0u64.to_le_bytes(),
            &512u32.to_le_bytes(),
        ],
    );
    let mut from_a = a.iter_chunks(&chat).unwrap();
    let mut from_b = b.iter_chunks(&chat).unwrap();
    drop(gone);

    b.write_str(format!("/sessions/{id}/prompt"), 0, "hello both")
        .unwrap();
    assert_eq!(chat_until_end(&mut from_a), "hello both\n--- end ---\n");
    assert_eq!(chat_until_end(&mut from_b), "hello both\n--- end ---\n");
    let fresh = client(&serve);
    assert_eq!(ids(&fresh), [id]);
}

/// HTTP and 9P on one session at once: created over HTTP, prompted
/// through `prompt`, its events seen over SSE and in `events`; then
/// prompted over HTTP and its answer read from `chat`.
#[test]
fn http_and_9p_drive_one_session_together() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat_text("over nine")),
        Reply::sse(chat_text("over http")),
    ])
    .unwrap();
    let args = model(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = serve(&ws, &args);
    let id = serve.create();
    let c = client(&serve);
    let mut sse = serve.events(&id, None);
    let mut events = c.iter_lines(format!("/sessions/{id}/events")).unwrap();
    let mut chat = c.iter_chunks(format!("/sessions/{id}/chat")).unwrap();

    c.write_str(format!("/sessions/{id}/prompt"), 0, "by nine")
        .unwrap();
    let frames =
        sse.until(|f| f.event.as_deref() == Some("live") && f.json()["type"] == "agent_end");
    assert!(frames.iter().any(|f| f.data.contains("over nine")));
    let mut types = Vec::new();
    loop {
        let event: serde_json::Value = serde_json::from_str(&events.next().unwrap()).unwrap();
        types.push(event["type"].as_str().unwrap_or_default().to_owned());
        if event["type"] == "agent_end" {
            break;
        }
    }
    assert_eq!(
        types.first().map(String::as_str),
        Some("agent_start"),
        "{types:?}"
    );
    assert!(types.iter().any(|t| t == "message_update"), "{types:?}");
    assert_eq!(chat_until_end(&mut chat), "over nine\n--- end ---\n");

    let prompt = serve.prompt(&id, r#"{"message":"by http"}"#);
    assert_eq!(prompt.status, 202, "{}", prompt.body);
    assert_eq!(chat_until_end(&mut chat), "over http\n--- end ---\n");
}

/// A session another server holds is listed and its log readable, but
/// its `prompt` and `ctl` are refused saying who holds it.
#[test]
fn a_session_held_elsewhere_is_refused_with_its_holder() {
    let ws = Workspace::new();
    let first = Serve::start(&ws, &["--provider", "echo"]);
    let id = first.create();
    let mut events = first.events(&id, None);
    let prompt = first.prompt(&id, r#"{"message":"mine"}"#);
    assert_eq!(prompt.status, 202);
    events.until(|f| f.event.as_deref() == Some("live") && f.json()["type"] == "agent_end");

    let second = serve(&ws, &["--provider", "echo"]);
    let c = client(&second);
    assert_eq!(ids(&c), std::slice::from_ref(&id));
    let log = c.read_str(format!("/sessions/{id}/log")).unwrap();
    assert_eq!(log, std::fs::read_to_string(ws.only_session()).unwrap());
    for file in ["prompt", "ctl", "chat"] {
        let error = rerror(c.write_str(format!("/sessions/{id}/{file}"), 0, "abort"));
        assert!(
            error.contains(&format!("is held by etch serve (pid {}", first.child.id()))
                || error.contains("read-only"),
            "{file}: {error}"
        );
    }
}

/// Over TCP the attach name must be the token; over a unix socket (made
/// 0600) none is asked. The raw exchange checks the wire itself:
/// version, attach, walk, open, write then read on one open of `new`,
/// clunk, a flushed blocked read (answered by `Rflush` alone), and a
/// malformed message answered with an error on a connection that goes
/// on.
#[test]
fn the_wire_speaks_9p2000_and_flush_cancels_a_blocked_read() {
    let ws = Workspace::new();
    let socket = ws.path().join("etch.9p");
    let unix = format!("unix:{}", socket.display());
    let serve = Serve::start(&ws, &["--9p", &unix, "--provider", "echo"]);
    assert_eq!(serve.ninep.as_deref(), Some(unix.as_str()));
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let c = Client::new_unix_with_explicit_path("me", &socket, "").unwrap();
    let id = c.read_str("/sessions/new").unwrap().trim().to_owned();

    let mut raw = Raw::over(Box::new(UnixStream::connect(&socket).unwrap()));
    // A read before the version is refused, and the version is agreed.
    raw.send(
        TREAD,
        1,
        &[
            &0u32.to_le_bytes(),
            &0u64.to_le_bytes(),
            &1u32.to_le_bytes(),
        ],
    );
    assert!(raw.error(1).contains("before Tversion"));
    raw.version();
    raw.attach(0, "").unwrap();
    // `new` opened for reading and writing: the write makes the session,
    // the read on the same open gives its id.
    raw.walk_open(1, &["sessions", "new"], 2).unwrap();
    assert_eq!(raw.write(1, b"name=raw one\n").unwrap(), 13);
    let new_id = String::from_utf8(raw.read(1, 0, 100).unwrap())
        .unwrap()
        .trim()
        .to_owned();
    assert_ne!(new_id, id);
    // A later write on the same open sets what can still change.
    assert_eq!(raw.write(1, b"name=raw two\n").unwrap(), 13);
    let error = raw.write(1, b"cwd=/\n").unwrap_err();
    assert!(error.contains("cwd is fixed"), "{error}");
    raw.clunk(1).unwrap();
    assert_eq!(
        c.read_str(format!("/sessions/{new_id}/name")).unwrap(),
        "raw two\n"
    );
    // A walk's later failure answers the qids walked so far.
    raw.send(
        TWALK,
        3,
        &[
            &0u32.to_le_bytes(),
            &5u32.to_le_bytes(),
            &2u16.to_le_bytes(),
            &s("sessions"),
            &s("zz"),
        ],
    );
    let (ty, body) = raw.recv(3);
    assert_eq!(ty, TWALK + 1);
    assert_eq!(u16::from_le_bytes([body[0], body[1]]), 1);
    // The first element's failure is an error naming what is missing.
    raw.send(
        TWALK,
        3,
        &[
            &0u32.to_le_bytes(),
            &5u32.to_le_bytes(),
            &1u16.to_le_bytes(),
            &s("sessions"),
        ],
    );
    raw.answer(3, TWALK).unwrap();
    raw.send(
        TWALK,
        3,
        &[
            &5u32.to_le_bytes(),
            &6u32.to_le_bytes(),
            &1u16.to_le_bytes(),
            &s("01NOSUCH"),
        ],
    );
    assert!(raw.error(3).contains("no session \"01NOSUCH\""));
    raw.clunk(5).unwrap();
    // A blocked read of chat, flushed: Rflush, and nothing for its tag.
    raw.walk_open(2, &["sessions", &id, "chat"], 0).unwrap();
    raw.send(
        TREAD,
        7,
        &[
            &2u32.to_le_bytes(),
            &0u64.to_le_bytes(),
            &512u32.to_le_bytes(),
        ],
    );
    raw.send(TFLUSH, 8, &[&7u16.to_le_bytes()]);
    let (ty, _) = raw.recv(8);
    assert_eq!(ty, TFLUSH + 1);
    // The text of a run after the flush goes to the next read, whole.
    c.write_str(format!("/sessions/{id}/prompt"), 0, "after the flush")
        .unwrap();
    let mut text = String::new();
    while !text.ends_with("--- end ---\n") {
        text.push_str(&String::from_utf8(raw.read(2, 0, 512).unwrap()).unwrap());
    }
    assert_eq!(text, "after the flush\n--- end ---\n");
    // A malformed message: an error for its tag, and the connection goes
    // on.
    raw.send(TWALK, 11, &[&0u32.to_le_bytes()]);
    assert!(raw.error(11).contains("malformed message"));
    raw.clunk(2).unwrap();
    assert!(raw.clunk(2).unwrap_err().contains("unknown fid 2"));

    // Over TCP, an attach without the token is refused.
    let tcp = serve_tcp_only(&ws);
    let mut raw = Raw::over(Box::new(
        TcpStream::connect(tcp.ninep.as_deref().unwrap()).unwrap(),
    ));
    raw.version();
    let refused = raw.attach(0, "not the token").unwrap_err();
    assert!(refused.contains("must be the server's token"), "{refused}");
    raw.attach(0, &tcp.token).unwrap();
}

/// What a hostile or careless client does is answered, bounded: a tag
/// reused while its request waits is refused (its answer would be
/// taken for the other's), an error fits the agreed message size, a
/// version with a size too small is `unknown` with no larger size.
#[test]
fn reused_tags_small_sizes_and_odd_versions_are_refused() {
    let ws = Workspace::new();
    let serve = serve(&ws, &["--provider", "echo"]);
    let mut raw = Raw::over(Box::new(
        TcpStream::connect(serve.ninep.as_deref().unwrap()).unwrap(),
    ));
    raw.send(TVERSION, 0xFFFF, &[&100u32.to_le_bytes(), &s("9P2000")]);
    let body = raw.answer(0xFFFF, TVERSION).unwrap();
    assert_eq!(&body[..4], &100u32.to_le_bytes(), "never more than asked");
    assert_eq!(&body[4..], &s("unknown")[..]);
    raw.send(TVERSION, 0xFFFF, &[&8192u32.to_le_bytes(), &s("9P2000.L")]);
    let body = raw.answer(0xFFFF, TVERSION).unwrap();
    assert_eq!(&body[4..], &s("9P2000")[..]);
    raw.send(TVERSION, 0xFFFF, &[&256u32.to_le_bytes(), &s("9P2000")]);
    let body = raw.answer(0xFFFF, TVERSION).unwrap();
    assert_eq!(&body[..4], &256u32.to_le_bytes());
    raw.attach(0, &serve.token).unwrap();
    // An error about a long name still fits in 256 bytes.
    let long = "x".repeat(200);
    raw.send(
        TWALK,
        3,
        &[
            &0u32.to_le_bytes(),
            &1u32.to_le_bytes(),
            &1u16.to_le_bytes(),
            &s(&long),
        ],
    );
    let mut size = [0u8; 4];
    raw.stream.read_exact(&mut size).unwrap();
    let size = u32::from_le_bytes(size);
    assert!(size <= 256, "an Rerror of {size} bytes");
    let mut rest = vec![0u8; size as usize - 4];
    raw.stream.read_exact(&mut rest).unwrap();
    assert_eq!(rest[0], RERROR);
    // A blocked read, then the same tag again: refused, and the first
    // still answers once there is something to read.
    let id = {
        let c = client(&serve);
        c.read_str("/sessions/new").unwrap().trim().to_owned()
    };
    raw.walk_open(2, &["sessions", &id, "chat"], 0).unwrap();
    let read = [
        &2u32.to_le_bytes()[..],
        &0u64.to_le_bytes(),
        &100u32.to_le_bytes(),
    ];
    raw.send(TREAD, 9, &read);
    raw.send(TREAD, 9, &read);
    assert!(raw.error(9).contains("tag 9 is in use"));
    let c = client(&serve);
    c.write_str(format!("/sessions/{id}/prompt"), 0, "once")
        .unwrap();
    let (ty, body) = raw.recv(9);
    assert_eq!(ty, TREAD + 1);
    assert_eq!(&body[4..], b"once");
}

/// A fork through `ctl` moves the session's handle to the new session:
/// the old one's open feeds end (as its event streams do), the fork is
/// listed, and the old session opens again from its log.
#[test]
fn a_fork_through_ctl_ends_the_old_feeds_and_lists_the_fork() {
    let ws = Workspace::new();
    let serve = serve(&ws, &["--provider", "echo"]);
    let c = client(&serve);
    let id = c.read_str("/sessions/new").unwrap().trim().to_owned();
    let dir = format!("/sessions/{id}");
    let mut chat = c.iter_chunks(format!("{dir}/chat")).unwrap();
    c.write_str(format!("{dir}/prompt"), 0, "first").unwrap();
    assert_eq!(chat_until_end(&mut chat), "first\n--- end ---\n");
    let entry = jsonl(&ws.only_session())
        .into_iter()
        .find(|e| e["type"] == "message.user")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    c.write_str(format!("{dir}/ctl"), 0, &format!("fork {entry}\n"))
        .unwrap();
    assert_eq!(chat.next(), None, "the old session's chat ended");
    let listed = ids(&c);
    assert_eq!(listed.len(), 2, "{listed:?}");
    let fork = listed.iter().find(|i| **i != id).unwrap();
    assert_eq!(c.read_str(format!("{dir}/name")).unwrap(), "first\n");
    assert!(
        c.read_str(format!("/sessions/{fork}/log"))
            .unwrap()
            .contains("session.started")
    );
}

/// A second server on the same workspace with a TCP tree.
fn serve_tcp_only(ws: &Workspace) -> Serve {
    serve(ws, &["--provider", "echo"])
}

/// Addresses off this machine and unusable socket paths are refused
/// before anything is served.
#[test]
fn bad_9p_addresses_are_refused() {
    let ws = Workspace::new();
    let file = ws.path().join("plain");
    std::fs::write(&file, "").unwrap();
    let plain = format!("unix:{}", file.display());
    for (addr, says) in [
        ("0.0.0.0:0", "9P has no encryption"),
        ("nowhere", "neither unix:PATH nor an address"),
        ("unix:", "needs a path"),
        (plain.as_str(), "not a socket"),
    ] {
        let run = ws.run(&["serve", "--listen", "127.0.0.1:0", "--9p", addr]);
        assert_ne!(run.code(), 0, "{addr}");
        assert!(run.stderr().contains(says), "{addr}: {}", run.stderr());
    }
}

/// `Tversion`.
const TVERSION: u8 = 100;
/// `Tattach`.
const TATTACH: u8 = 104;
/// `Rerror`.
const RERROR: u8 = 107;
/// `Tflush`.
const TFLUSH: u8 = 108;
/// `Twalk`.
const TWALK: u8 = 110;
/// `Topen`.
const TOPEN: u8 = 112;
/// `Tread`.
const TREAD: u8 = 116;
/// `Twrite`.
const TWRITE: u8 = 118;
/// `Tclunk`.
const TCLUNK: u8 = 120;

/// A string field: two bytes of length, then the bytes.
fn s(text: &str) -> Vec<u8> {
    let mut field = u16::try_from(text.len()).unwrap().to_le_bytes().to_vec();
    field.extend_from_slice(text.as_bytes());
    field
}

/// A stream a raw client talks over.
trait Stream: std::io::Read + std::io::Write {}
impl<T: std::io::Read + std::io::Write> Stream for T {}

/// A 9P2000 client written out from intro(5), one message at a time.
struct Raw {
    /// The connection.
    stream: Box<dyn Stream>,
}

impl Raw {
    /// Connects to `serve`'s TCP tree, versioned and attached with the
    /// token as fid 0.
    fn connect(serve: &Serve) -> Self {
        let stream = TcpStream::connect(serve.ninep.as_deref().unwrap()).unwrap();
        let mut raw = Self::over(Box::new(stream));
        raw.version();
        raw.attach(0, &serve.token).unwrap();
        raw
    }

    /// A client on `stream`, nothing sent yet.
    fn over(stream: Box<dyn Stream>) -> Self {
        Self { stream }
    }

    /// Sends message `ty` tagged `tag` with `fields`.
    fn send(&mut self, ty: u8, tag: u16, fields: &[&[u8]]) {
        let body: Vec<u8> = fields.concat();
        let size = u32::try_from(4 + 1 + 2 + body.len()).unwrap();
        let mut message = size.to_le_bytes().to_vec();
        message.push(ty);
        message.extend_from_slice(&tag.to_le_bytes());
        message.extend_from_slice(&body);
        self.stream.write_all(&message).unwrap();
    }

    /// Receives the next reply, which must be tagged `tag`: its type and
    /// body.
    fn recv(&mut self, tag: u16) -> (u8, Vec<u8>) {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).unwrap();
        let size = u32::from_le_bytes(size) as usize;
        assert!(size >= 7, "a reply of {size} bytes");
        let mut rest = vec![0u8; size - 4];
        self.stream.read_exact(&mut rest).unwrap();
        assert_eq!(u16::from_le_bytes([rest[1], rest[2]]), tag, "reply tag");
        (rest[0], rest[3..].to_vec())
    }

    /// The reply to `tag`, or its error text.
    fn answer(&mut self, tag: u16, ty: u8) -> Result<Vec<u8>, String> {
        let (got, body) = self.recv(tag);
        if got == RERROR {
            let n = usize::from(u16::from_le_bytes([body[0], body[1]]));
            return Err(String::from_utf8(body[2..2 + n].to_vec()).unwrap());
        }
        assert_eq!(got, ty + 1, "reply type");
        Ok(body)
    }

    /// The error text the reply to `tag` must be.
    fn error(&mut self, tag: u16) -> String {
        self.answer(tag, 0).unwrap_err()
    }

    /// `Tversion` 9P2000, 8192.
    fn version(&mut self) {
        self.send(TVERSION, 0xFFFF, &[&8192u32.to_le_bytes(), &s("9P2000")]);
        let body = self.answer(0xFFFF, TVERSION).unwrap();
        assert_eq!(&body[..4], &8192u32.to_le_bytes());
        assert_eq!(&body[4..], &s("9P2000")[..]);
    }

    /// `Tattach` of `fid` with `aname`.
    fn attach(&mut self, fid: u32, aname: &str) -> Result<(), String> {
        self.send(
            TATTACH,
            1,
            &[
                &fid.to_le_bytes(),
                &u32::MAX.to_le_bytes(),
                &s("tester"),
                &s(aname),
            ],
        );
        let qid = self.answer(1, TATTACH)?;
        assert_eq!(qid.len(), 13);
        assert_eq!(qid[0], 0x80, "the root is a directory");
        Ok(())
    }

    /// Walks from fid 0 through `names` to `fid` and opens it with
    /// `mode`.
    fn walk_open(&mut self, fid: u32, names: &[&str], mode: u8) -> Result<(), String> {
        let count = u16::try_from(names.len()).unwrap().to_le_bytes();
        let mut fields: Vec<Vec<u8>> = vec![
            0u32.to_le_bytes().to_vec(),
            fid.to_le_bytes().to_vec(),
            count.to_vec(),
        ];
        fields.extend(names.iter().map(|n| s(n)));
        let fields: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
        self.send(TWALK, 2, &fields);
        let body = self.answer(2, TWALK)?;
        assert_eq!(
            usize::from(u16::from_le_bytes([body[0], body[1]])),
            names.len()
        );
        self.send(TOPEN, 2, &[&fid.to_le_bytes(), &[mode]]);
        let body = self.answer(2, TOPEN)?;
        assert_eq!(body.len(), 13 + 4);
        Ok(())
    }

    /// `Tread`.
    fn read(&mut self, fid: u32, offset: u64, count: u32) -> Result<Vec<u8>, String> {
        self.send(
            TREAD,
            4,
            &[
                &fid.to_le_bytes(),
                &offset.to_le_bytes(),
                &count.to_le_bytes(),
            ],
        );
        let body = self.answer(4, TREAD)?;
        let n = u32::from_le_bytes([body[0], body[1], body[2], body[3]]) as usize;
        assert_eq!(body.len(), 4 + n);
        Ok(body[4..].to_vec())
    }

    /// `Twrite` at offset 0.
    fn write(&mut self, fid: u32, data: &[u8]) -> Result<u32, String> {
        let count = u32::try_from(data.len()).unwrap().to_le_bytes();
        self.send(
            TWRITE,
            5,
            &[&fid.to_le_bytes(), &0u64.to_le_bytes(), &count, data],
        );
        let body = self.answer(5, TWRITE)?;
        Ok(u32::from_le_bytes([body[0], body[1], body[2], body[3]]))
    }

    /// `Tclunk`.
    fn clunk(&mut self, fid: u32) -> Result<(), String> {
        self.send(TCLUNK, 6, &[&fid.to_le_bytes()]);
        self.answer(6, TCLUNK).map(|_| ())
    }
}
