//! End-to-end tests of [`Reply::WebSocket`] through a real `tungstenite` client
//! (and one raw handshake), each read bounded by a timeout so nothing can hang.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use tungstenite::handshake::derive_accept_key;
use tungstenite::http::Uri;
use tungstenite::protocol::Role;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::{ClientRequestBuilder, Error, Message, WebSocket};

use super::UNSCRIPTED_MESSAGE;
use crate::{FakeServer, Reply, WsEnd};

/// How long a test client waits for any read before failing instead of hanging.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// The path the tests connect to, as the Responses WebSocket mode does.
const PATH: &str = "/v1/responses";

/// Turns string slices into the owned turns a reply takes.
fn turns(turns: &[&[&str]]) -> Vec<Vec<String>> {
    turns
        .iter()
        .map(|turn| turn.iter().map(|&frame| frame.to_owned()).collect())
        .collect()
}

/// Connects a `tungstenite` client to `server` at [`PATH`] with these extra
/// handshake headers and a read timeout, checking that the handshake succeeded.
fn connect(server: &FakeServer, headers: &[(&str, &str)]) -> WebSocket<TcpStream> {
    let stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    let uri: Uri = format!("ws://{}{PATH}", server.addr()).parse().unwrap();
    let mut request = ClientRequestBuilder::new(uri);
    for (name, value) in headers {
        request = request.with_header(*name, *value);
    }
    let (socket, response) = tungstenite::client::client(request, stream).unwrap();
    assert_eq!(response.status(), 101);
    socket
}

/// Reads the next message, which must be a text frame, and returns its text.
fn read_text(socket: &mut WebSocket<TcpStream>) -> String {
    match socket.read().unwrap() {
        Message::Text(text) => text.as_str().to_owned(),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

/// The handshake is recorded with its headers, and two turns on one connection
/// answer the client's two messages (text and binary, with a ping between) in
/// order, each message recorded as `WS` with its body.
#[test]
fn turns_answer_successive_messages_on_one_connection() {
    let server =
        FakeServer::start(vec![Reply::websocket(turns(&[&["a1", "a2"], &["b1"]]))]).unwrap();
    let mut socket = connect(&server, &[("Authorization", "Bearer sk-test")]);
    socket.send(Message::Ping(b"p".to_vec().into())).unwrap();
    socket
        .send(Message::text(r#"{"type":"response.create"}"#))
        .unwrap();
    assert_eq!(socket.read().unwrap(), Message::Pong(b"p".to_vec().into()));
    assert_eq!(read_text(&mut socket), "a1");
    assert_eq!(read_text(&mut socket), "a2");
    socket.send(Message::binary(b"second".to_vec())).unwrap();
    assert_eq!(read_text(&mut socket), "b1");

    let requests = server.wait_for_requests(3, CLIENT_TIMEOUT);
    assert_eq!(requests.len(), 3);
    let handshake = &requests[0];
    assert_eq!(
        (handshake.method.as_str(), handshake.path.as_str()),
        ("GET", PATH)
    );
    assert_eq!(handshake.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(handshake.header("upgrade"), Some("websocket"));
    assert!(handshake.body.is_empty());
    for (message, body) in requests[1..]
        .iter()
        .zip([&br#"{"type":"response.create"}"#[..], b"second"])
    {
        assert_eq!(
            (message.method.as_str(), message.path.as_str()),
            ("WS", PATH)
        );
        assert!(message.headers.is_empty());
        assert_eq!(message.body, body);
    }
    assert_eq!(requests[1].json()["type"], "response.create");
}

/// A first message sent right behind the upgrade request, before the `101`,
/// is not lost in the server's read buffer; the accept key is the RFC's.
#[test]
fn message_sent_with_the_handshake_is_not_lost() {
    let server = FakeServer::start(vec![Reply::websocket(turns(&[&["answer"]]))]).unwrap();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    let key = "dGhlIHNhbXBsZSBub25jZQ==";
    let mut raw = format!(
        "GET {PATH} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .into_bytes();
    // A masked client text frame carrying "hello".
    let mask = [1, 2, 3, 4];
    raw.extend_from_slice(&[0x81, 0x80 | 5]);
    raw.extend_from_slice(&mask);
    raw.extend(b"hello".iter().zip(mask.iter().cycle()).map(|(b, m)| b ^ m));
    stream.write_all(&raw).unwrap();

    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        head.push(line.trim_end().to_owned());
    }
    assert_eq!(head[0], "HTTP/1.1 101 Switching Protocols");
    assert!(
        head.contains(&"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".to_owned()),
        "{head:?}"
    );
    assert_eq!(
        derive_accept_key(key.as_bytes()),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
    let buffered = reader.buffer().to_vec();
    let mut socket = WebSocket::from_partially_read(stream, buffered, Role::Client, None);
    assert_eq!(read_text(&mut socket), "answer");
    let requests = server.wait_for_requests(2, CLIENT_TIMEOUT);
    assert_eq!(requests[1].body, b"hello");
}

/// `WsEnd::Close` sends a normal Close frame, right after the handshake when
/// there are no turns, and closes the socket once the client answers it.
#[test]
fn close_end_sends_a_close_frame() {
    let server = FakeServer::start(vec![
        Reply::WebSocket {
            turns: Vec::new(),
            then: WsEnd::Close,
        },
        Reply::WebSocket {
            turns: turns(&[&["x"]]),
            then: WsEnd::Close,
        },
    ])
    .unwrap();
    let mut first = connect(&server, &[]);
    let mut second = connect(&server, &[]);
    second.send(Message::text("m")).unwrap();
    assert_eq!(read_text(&mut second), "x");
    for socket in [&mut first, &mut second] {
        match socket.read().unwrap() {
            Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Normal),
            other => panic!("expected a Close frame, got {other:?}"),
        }
        // Reading on sends the client's answer; the server then closes.
        assert!(matches!(socket.read(), Err(Error::ConnectionClosed)));
    }
    assert_eq!(server.requests().len(), 3);
}

/// `WsEnd::Drop` ends the connection after the turns without a Close frame.
#[test]
fn drop_end_closes_without_a_close_frame() {
    let server = FakeServer::start(vec![Reply::WebSocket {
        turns: turns(&[&["x"]]),
        then: WsEnd::Drop,
    }])
    .unwrap();
    let mut socket = connect(&server, &[]);
    socket.send(Message::text("m")).unwrap();
    assert_eq!(read_text(&mut socket), "x");
    match socket.read() {
        Err(Error::Protocol(_) | Error::Io(_)) => {}
        other => panic!("expected an abrupt end, got {other:?}"),
    }
}

/// `WsEnd::Stay` answers every extra message with the unscripted error and
/// records it; dropping the server then ends the connection promptly.
#[test]
fn stay_answers_extra_messages_with_an_error_until_drop() {
    let server = FakeServer::start(vec![Reply::websocket(turns(&[&["x"]]))]).unwrap();
    let mut socket = connect(&server, &[]);
    socket.send(Message::text("m")).unwrap();
    assert_eq!(read_text(&mut socket), "x");
    for extra in ["extra 1", "extra 2"] {
        socket.send(Message::text(extra)).unwrap();
        let error = read_text(&mut socket);
        assert_eq!(error, UNSCRIPTED_MESSAGE);
        let error: serde_json::Value = serde_json::from_str(&error).unwrap();
        assert_eq!(error["type"], "error");
        assert_eq!(error["status"], 500);
        assert_eq!(error["error"]["code"], "no_scripted_reply");
    }
    let requests = server.wait_for_requests(4, CLIENT_TIMEOUT);
    let bodies: Vec<String> = requests.iter().map(crate::Recorded::body_text).collect();
    assert_eq!(bodies, ["", "m", "extra 1", "extra 2"]);

    let start = Instant::now();
    drop(server);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(socket.read().is_err());
}

/// A client Close before any message ends the exchange quietly: the server
/// answers the Close and records nothing more.
#[test]
fn client_close_ends_the_exchange() {
    let server = FakeServer::start(vec![Reply::websocket(turns(&[&["x"]]))]).unwrap();
    let mut socket = connect(&server, &[]);
    socket.close(None).unwrap();
    loop {
        match socket.read() {
            Ok(Message::Close(_)) => {}
            Err(Error::ConnectionClosed) => break,
            other => panic!("expected the close handshake, got {other:?}"),
        }
    }
    assert_eq!(server.requests().len(), 1);
}

/// A plain GET (no upgrade headers) meeting a WebSocket reply gets 400 and the
/// connection closes; the request is still recorded.
#[test]
fn plain_request_to_websocket_reply_gets_400() {
    let server = FakeServer::start(vec![Reply::websocket(turns(&[&["x"]]))]).unwrap();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    stream
        .write_all(format!("GET {PATH} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 400 "), "{response:?}");
    assert!(response.contains("Connection: close\r\n"));
    assert!(response.ends_with("\r\n\r\netch-test-support: expected a WebSocket upgrade"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "GET");
}
