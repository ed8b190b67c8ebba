//! Serving a [`Reply::WebSocket`](crate::Reply::WebSocket) after its upgrade
//! request was read and recorded: the `101` handshake answer, then the scripted
//! turns over `tungstenite` framing on the same socket.

use std::io::{self, BufReader, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use tungstenite::handshake::derive_accept_key;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, Role};
use tungstenite::{Message, WebSocket};

use crate::recorded::Recorded;
use crate::reply::WsEnd;

/// The method of the [`Recorded`] entry for each client message, so tests can
/// tell WebSocket messages from HTTP requests in the log.
const MESSAGE_METHOD: &str = "WS";

/// The text frame answering a client message beyond the script under
/// [`WsEnd::Stay`]: an error event shaped like the ones the Responses
/// WebSocket mode sends, so clients surface its message.
const UNSCRIPTED_MESSAGE: &str = r#"{"type":"error","status":500,"error":{"type":"server_error","code":"no_scripted_reply","message":"etch-test-support: no scripted reply"}}"#;

/// How long [`WsEnd::Close`] waits for the client to answer the Close frame
/// before closing the socket anyway, so a silent client cannot pin the
/// connection thread.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// One accepted WebSocket upgrade: what the exchange needs besides the socket.
pub(crate) struct Exchange<'a> {
    /// The client's `Sec-WebSocket-Key`, to derive `Sec-WebSocket-Accept`.
    pub key: &'a str,
    /// The handshake's request target, recorded as the path of every message.
    pub path: &'a str,
    /// The frames answering each client message, in order.
    pub turns: &'a [Vec<String>],
    /// What happens after the last turn.
    pub then: WsEnd,
}

/// Completes the handshake on `stream` and plays `exchange`, recording each
/// client message through `record` (which must not take a scripted reply).
/// `reader` is the buffered read side the upgrade request was read from; bytes
/// it already holds beyond the request head (a client may send its first
/// message without waiting for `101`) are handed to the WebSocket so none are
/// lost. The socket is shut down on return. Every blocking read ends when the
/// server's `Drop` shuts the socket down, so the thread exits promptly.
pub(crate) fn serve(
    reader: BufReader<TcpStream>,
    mut stream: TcpStream,
    exchange: &Exchange<'_>,
    record: &dyn Fn(Recorded),
) {
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(exchange.key.as_bytes()),
    );
    if stream.write_all(head.as_bytes()).is_ok() && stream.flush().is_ok() {
        let buffered = reader.buffer().to_vec();
        drop(reader);
        let mut socket = WebSocket::from_partially_read(stream, buffered, Role::Server, None);
        play(&mut socket, exchange, record);
        stream = socket.into_inner();
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// Answers the scripted turns and then ends as `exchange.then` says; returns
/// early when the client leaves or the socket breaks.
fn play(socket: &mut WebSocket<TcpStream>, exchange: &Exchange<'_>, record: &dyn Fn(Recorded)) {
    for turn in exchange.turns {
        if !receive(socket, exchange.path, record) || send_all(socket, turn).is_err() {
            return;
        }
    }
    match exchange.then {
        WsEnd::Stay => {
            while receive(socket, exchange.path, record)
                && send_all(socket, &[UNSCRIPTED_MESSAGE]).is_ok()
            {}
        }
        WsEnd::Close => close(socket),
        WsEnd::Drop => {}
    }
}

/// Waits for the client's next data message and records it as a `WS` entry
/// under `path`; returns whether there was one (`false` once the client left).
fn receive(socket: &mut WebSocket<TcpStream>, path: &str, record: &dyn Fn(Recorded)) -> bool {
    let Some(body) = next_message(socket) else {
        return false;
    };
    record(Recorded {
        method: MESSAGE_METHOD.to_owned(),
        path: path.to_owned(),
        headers: Vec::new(),
        body,
    });
    true
}

/// Reads until the client's next data message (text or binary) and returns its
/// bytes. Pings are answered by `tungstenite` while reading; a client Close is
/// answered and, like a broken or shut-down socket, gives `None`.
fn next_message(socket: &mut WebSocket<TcpStream>) -> Option<Vec<u8>> {
    loop {
        match socket.read() {
            Ok(Message::Text(text)) => return Some(text.as_bytes().to_vec()),
            Ok(Message::Binary(bytes)) => return Some(bytes.to_vec()),
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => {}
            Ok(Message::Close(_)) => {
                let _ = socket.flush();
                return None;
            }
            Err(_) => return None,
        }
    }
}

/// Sends each of `frames` as a text frame, flushing each so the client sees
/// them as they are sent rather than all at the end.
fn send_all<S: AsRef<str>>(socket: &mut WebSocket<TcpStream>, frames: &[S]) -> io::Result<()> {
    for frame in frames {
        socket
            .send(Message::text(frame.as_ref()))
            .map_err(io::Error::other)?;
    }
    Ok(())
}

/// Sends a normal-closure Close frame and drives the closing handshake until
/// the client answers (or leaves, or [`CLOSE_WAIT`] passes), so the socket is
/// not closed while the client may still be reading the frames before it.
fn close(socket: &mut WebSocket<TcpStream>) {
    let frame = CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    };
    if socket.close(Some(frame)).is_err() {
        return;
    }
    let deadline = Instant::now() + CLOSE_WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || socket.get_ref().set_read_timeout(Some(left)).is_err() {
            return;
        }
        if socket.read().is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
