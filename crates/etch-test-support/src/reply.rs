//! The scripted replies a test gives the fake server, and how each is written to
//! the socket.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::time::Duration;

/// The status of the answer to a request that arrives after every scripted reply
/// has been used: the server never repeats replies, so a test that sends more
/// requests than it scripted sees a loud failure instead of a silent success.
pub const UNSCRIPTED_STATUS: u16 = 500;

/// The JSON body sent with [`UNSCRIPTED_STATUS`], shaped like an OpenAI error so
/// clients surface its message.
const UNSCRIPTED_BODY: &str = r#"{"error":{"message":"etch-test-support: no scripted reply","type":"fake_server_unscripted","code":"no_scripted_reply"}}"#;

/// The body of the 400 sent when a [`Reply::WebSocket`] meets a request that
/// is not a WebSocket upgrade, so the test sees why the client failed.
const NOT_AN_UPGRADE: &str = "etch-test-support: expected a WebSocket upgrade";

/// One scripted answer. The server uses each reply for exactly one request, in
/// order; see [`FakeServer::start`](crate::FakeServer::start).
///
/// The enum is `#[non_exhaustive]` so that new kinds can be added without
/// breaking tests that match on it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply {
    /// An SSE stream: status 200, `Content-Type: text/event-stream`, sent with
    /// `Transfer-Encoding: chunked`. Each element of `events` is written as-is
    /// as one chunk (the caller formats `data: ...\n\n`, e.g. with
    /// [`sse_data`](crate::sse_data), so tests can also send malformed framing)
    /// and flushed, with `gap` between consecutive elements; then `end` decides
    /// how the response finishes. Empty elements are skipped, because a
    /// zero-size chunk would end the body.
    Sse {
        /// The raw text of each chunk, in order.
        events: Vec<String>,
        /// The pause between two consecutive chunks (none before the first or
        /// after the last).
        gap: Duration,
        /// What happens after the last chunk.
        end: End,
    },
    /// An SSE stream held at a point until the test says go: `events` are
    /// sent (no gap), then nothing until the file `gate` exists (checked
    /// every 10 ms, for at most a minute; then the connection is cut like
    /// [`End::Reset`]), then `rest`, and the response finishes normally.
    /// A test creates the file once it has done what must happen while
    /// the stream is open (typing into the chat), so no time window is
    /// assumed.
    Gated {
        /// The chunks sent at once.
        events: Vec<String>,
        /// The file whose existence releases the rest.
        gate: std::path::PathBuf,
        /// The chunks sent after the gate opened.
        rest: Vec<String>,
    },
    /// A complete response with this status, content type and body, framed by
    /// `Content-Length`.
    Body {
        /// The status code (the reason phrase is filled in for common codes).
        status: u16,
        /// The `Content-Type` header value.
        content_type: String,
        /// The body, sent verbatim.
        body: String,
        /// Extra headers written after the standard ones (e.g. `Retry-After`).
        /// Do not pass framing headers (`Content-Length`, `Transfer-Encoding`,
        /// `Connection`): the server writes those itself.
        headers: Vec<(String, String)>,
    },
    /// Raw bytes written verbatim to the socket after the request is read; then
    /// the connection closes. For malformed HTTP and other protocol abuse.
    Raw(Vec<u8>),
    /// A WebSocket exchange (the OpenAI Responses WebSocket mode): the request
    /// must be a WebSocket upgrade (`Upgrade: websocket` and a
    /// `Sec-WebSocket-Key`), which is recorded like any other request and
    /// answered with `101 Switching Protocols`; anything else gets 400 and the
    /// connection is closed. After the handshake the server reads the client's
    /// messages (text or binary), records each as a [`Recorded`](crate::Recorded)
    /// with method `WS`, the handshake's path, no headers and the message as
    /// body (these count for
    /// [`wait_for_requests`](crate::FakeServer::wait_for_requests) but use no
    /// scripted reply), and answers it with the next turn. Pings are answered
    /// automatically; a client Close or a dropped connection ends the exchange
    /// quietly. [`ws_messages`](crate::ws_messages) turns the SSE helpers'
    /// frames into the matching messages.
    WebSocket {
        /// One entry per client message: the text frames sent back after the
        /// n-th message the client sends on this connection.
        turns: Vec<Vec<String>>,
        /// What happens after the last turn was answered (with no turns: right
        /// after the handshake).
        then: WsEnd,
    },
    /// Accept the request and never answer it: no status line, no headers,
    /// nothing for this long, then the connection is closed. A server that
    /// hangs before its response headers (and a WebSocket upgrade that is
    /// never answered). Dropping the server cuts the wait short.
    Hang(Duration),
    /// A response whose head arrives and whose body does not: the status
    /// line and headers, declaring `Content-Length` one byte longer than
    /// `start`, then `start`, then nothing for `stall`, then the connection
    /// is closed with the body incomplete. An error status here is a server
    /// that stalls while sending its error body. Dropping the server cuts
    /// the stall short.
    StalledBody {
        /// The status code.
        status: u16,
        /// The `Content-Type` header value.
        content_type: String,
        /// The part of the body that is sent before the stall.
        start: String,
        /// How long nothing more is sent before the connection closes.
        stall: Duration,
    },
}

impl Reply {
    /// An SSE stream of `events` with no gap that finishes normally.
    pub fn sse(events: Vec<String>) -> Self {
        Self::Sse {
            events,
            gap: Duration::ZERO,
            end: End::Close,
        }
    }

    /// A WebSocket exchange answering the client's successive messages with
    /// `turns` that then stays open ([`WsEnd::Stay`]), so an extra message gets
    /// a loud error rather than a closed connection.
    pub fn websocket(turns: Vec<Vec<String>>) -> Self {
        Self::WebSocket {
            turns,
            then: WsEnd::Stay,
        }
    }

    /// A JSON response with this status.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Self::Body {
            status,
            content_type: "application/json".to_owned(),
            body: body.to_string(),
            headers: Vec::new(),
        }
    }

    /// A plain-text response with this status.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self::Body {
            status,
            content_type: "text/plain; charset=utf-8".to_owned(),
            body: body.into(),
            headers: Vec::new(),
        }
    }

    /// Adds a header to a [`Reply::Body`]; other kinds are returned unchanged
    /// because they have no place for extra headers.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Self::Body { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }
}

/// How an [`Reply::Sse`] stream finishes after its last event.
///
/// `#[non_exhaustive]` so that more ways to finish can be added later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum End {
    /// Finish the response normally: write the terminating zero-size chunk. The
    /// connection then stays open for the next request if the client asked for
    /// keep-alive, and is closed otherwise.
    Close,
    /// Stop mid-body: no terminating chunk, and the socket is shut down at once,
    /// so the client sees the connection end before the body is complete.
    Reset,
    /// Keep the connection open without sending anything for this long, then
    /// close it like [`End::Reset`] (no terminating chunk), so a client without
    /// an idle timeout sees an incomplete body after the stall. Dropping the
    /// server cuts the stall short.
    Stall(Duration),
}

/// How a [`Reply::WebSocket`] exchange continues after its last turn.
///
/// `#[non_exhaustive]` so that more endings can be added later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WsEnd {
    /// Keep the connection open and keep reading: each further client message
    /// is recorded and answered with one text frame, the JSON error
    /// `{"type":"error","status":500,"error":{"type":"server_error","code":"no_scripted_reply","message":"etch-test-support: no scripted reply"}}`
    /// so an unexpected message fails loudly. Dropping the server ends it.
    Stay,
    /// Send a Close frame (code 1000, normal closure) and end the connection
    /// once the client answers it (or after a short wait if it does not).
    Close,
    /// Shut the socket down at once without a Close frame (an abrupt drop).
    Drop,
}

/// What the connection should do after a reply was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Read the next request from the same connection.
    KeepOpen,
    /// Shut the socket down and stop serving it.
    Close,
}

/// The reason phrase for a status code; clients ignore it, but it makes traces
/// readable.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// The `Connection` header value matching the keep-alive decision.
fn connection_value(keep_alive: bool) -> &'static str {
    if keep_alive { "keep-alive" } else { "close" }
}

/// Writes `reply` (or the unscripted 500 if there is none) and says whether the
/// connection may serve another request. `pause` sleeps for the given time and
/// returns `false` if the server is stopping, so long gaps and stalls end early.
pub(crate) fn write_reply<W: Write>(
    out: &mut W,
    reply: Option<&Reply>,
    keep_alive: bool,
    pause: &dyn Fn(Duration) -> bool,
) -> io::Result<Next> {
    match reply {
        None => write_body(
            out,
            UNSCRIPTED_STATUS,
            "application/json",
            UNSCRIPTED_BODY,
            &[("X-Fake-Server".to_owned(), "unscripted".to_owned())],
            keep_alive,
        ),
        Some(Reply::Body {
            status,
            content_type,
            body,
            headers,
        }) => write_body(out, *status, content_type, body, headers, keep_alive),
        Some(Reply::Raw(bytes)) => {
            out.write_all(bytes)?;
            out.flush()?;
            Ok(Next::Close)
        }
        Some(Reply::Sse { events, gap, end }) => {
            write_sse(out, events, *gap, *end, keep_alive, pause)
        }
        Some(Reply::Gated { events, gate, rest }) => {
            write_gated(out, events, gate, rest, keep_alive, pause)
        }
        Some(Reply::Hang(duration)) => {
            pause(*duration);
            Ok(Next::Close)
        }
        Some(Reply::StalledBody {
            status,
            content_type,
            start,
            stall,
        }) => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                reason(*status),
                start.len() + 1,
            );
            out.write_all(head.as_bytes())?;
            out.write_all(start.as_bytes())?;
            out.flush()?;
            pause(*stall);
            Ok(Next::Close)
        }
        // The server serves upgrade requests itself (see `crate::ws`), so a
        // WebSocket reply only gets here for a request that is not an upgrade.
        Some(Reply::WebSocket { .. }) => write_body(
            out,
            400,
            "text/plain; charset=utf-8",
            NOT_AN_UPGRADE,
            &[],
            false,
        ),
    }
}

/// Writes a complete `Content-Length` response in one go.
pub(crate) fn write_body<W: Write>(
    out: &mut W,
    status: u16,
    content_type: &str,
    body: &str,
    headers: &[(String, String)],
    keep_alive: bool,
) -> io::Result<Next> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {}\r\n",
        reason(status),
        body.len(),
        connection_value(keep_alive),
    );
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(if keep_alive {
        Next::KeepOpen
    } else {
        Next::Close
    })
}

/// Writes `events`, waits for `gate` to exist, writes `rest` and
/// finishes the stream.
fn write_gated<W: Write>(
    out: &mut W,
    events: &[String],
    gate: &std::path::Path,
    rest: &[String],
    keep_alive: bool,
    pause: &dyn Fn(Duration) -> bool,
) -> io::Result<Next> {
    const CHECK: Duration = Duration::from_millis(10);
    const LONGEST: u32 = 6000;
    // The head and the first chunks; the stream stays open (no end yet).
    write_sse(out, events, Duration::ZERO, End::Reset, keep_alive, pause)?;
    let mut checks = 0;
    while !gate.exists() {
        checks += 1;
        if checks > LONGEST || !pause(CHECK) {
            return Ok(Next::Close);
        }
    }
    for event in rest.iter().filter(|e| !e.is_empty()) {
        write_chunk(out, event)?;
    }
    finish(out, keep_alive)
}

/// Ends a chunked body normally: the connection stays open for the next
/// request when the client asked for keep-alive.
fn finish<W: Write>(out: &mut W, keep_alive: bool) -> io::Result<Next> {
    out.write_all(b"0\r\n\r\n")?;
    out.flush()?;
    Ok(if keep_alive {
        Next::KeepOpen
    } else {
        Next::Close
    })
}

/// Writes one chunk of a chunked body and flushes it.
fn write_chunk<W: Write>(out: &mut W, event: &str) -> io::Result<()> {
    let mut chunk = format!("{:x}\r\n", event.len()).into_bytes();
    chunk.extend_from_slice(event.as_bytes());
    chunk.extend_from_slice(b"\r\n");
    out.write_all(&chunk)?;
    out.flush()
}

/// Writes an SSE stream as chunks, flushing each, then finishes as `end` says.
fn write_sse<W: Write>(
    out: &mut W,
    events: &[String],
    gap: Duration,
    end: End,
    keep_alive: bool,
    pause: &dyn Fn(Duration) -> bool,
) -> io::Result<Next> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: {}\r\n\r\n",
        connection_value(keep_alive),
    );
    out.write_all(head.as_bytes())?;
    out.flush()?;
    for (i, event) in events.iter().filter(|e| !e.is_empty()).enumerate() {
        if i > 0 && !pause(gap) {
            return Ok(Next::Close);
        }
        write_chunk(out, event)?;
    }
    match end {
        End::Close => finish(out, keep_alive),
        End::Reset => Ok(Next::Close),
        End::Stall(duration) => {
            pause(duration);
            Ok(Next::Close)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `reply` into a buffer with a pause that never sleeps.
    fn render(reply: Option<&Reply>, keep_alive: bool) -> (String, Next) {
        let mut out = Vec::new();
        let next = write_reply(&mut out, reply, keep_alive, &|_| true).unwrap();
        (String::from_utf8(out).unwrap(), next)
    }

    /// A body reply carries status, reason, framing and extra headers.
    #[test]
    fn body_reply_is_framed_by_content_length() {
        let reply = Reply::text(429, "slow down").with_header("Retry-After", "1");
        let (text, next) = render(Some(&reply), true);
        assert_eq!(
            text,
            "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Content-Length: 9\r\nConnection: keep-alive\r\nRetry-After: 1\r\n\r\nslow down"
        );
        assert_eq!(next, Next::KeepOpen);
        let (text, next) = render(Some(&reply), false);
        assert!(text.contains("Connection: close\r\n"));
        assert_eq!(next, Next::Close);
    }

    /// A gated stream sends its first chunks, waits for the gate file,
    /// then sends the rest and finishes; without the file it is cut.
    #[test]
    fn a_gated_stream_waits_for_its_file() {
        let gate = std::env::temp_dir().join(format!("etch-gate-{}", std::process::id()));
        let _ = std::fs::remove_file(&gate);
        let reply = Reply::Gated {
            events: vec!["data: a\n\n".into()],
            gate: gate.clone(),
            rest: vec!["data: b\n\n".into()],
        };
        // A pause that never sleeps and gives up at once: no file, cut.
        let mut out = Vec::new();
        let next = write_reply(&mut out, Some(&reply), true, &|_| false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("data: a") && !text.contains("data: b"),
            "{text}"
        );
        assert_eq!(next, Next::Close);
        std::fs::write(&gate, "").unwrap();
        let (text, next) = render(Some(&reply), true);
        assert!(text.ends_with("9\r\ndata: b\n\n\r\n0\r\n\r\n"), "{text:?}");
        assert_eq!(next, Next::KeepOpen);
        std::fs::remove_file(&gate).unwrap();
    }

    /// SSE events become one chunk each; empty events are skipped.
    #[test]
    fn sse_events_are_chunks() {
        let reply = Reply::sse(vec!["data: a\n\n".into(), String::new(), "é".into()]);
        let (text, next) = render(Some(&reply), true);
        assert!(text.ends_with("\r\n\r\n9\r\ndata: a\n\n\r\n2\r\né\r\n0\r\n\r\n"));
        assert_eq!(next, Next::KeepOpen);
    }

    /// Reset and Stall leave out the terminating chunk and close.
    #[test]
    fn broken_ends_omit_terminating_chunk() {
        for end in [End::Reset, End::Stall(Duration::from_secs(1))] {
            let reply = Reply::Sse {
                events: vec!["data: a\n\n".into()],
                gap: Duration::ZERO,
                end,
            };
            let (text, next) = render(Some(&reply), true);
            assert!(text.ends_with("9\r\ndata: a\n\n\r\n"), "{text:?}");
            assert_eq!(next, Next::Close);
        }
    }

    /// A missing reply becomes the documented 500.
    #[test]
    fn unscripted_is_500() {
        let (text, next) = render(None, true);
        assert!(text.starts_with("HTTP/1.1 500 Internal Server Error\r\n"));
        assert!(text.ends_with(UNSCRIPTED_BODY));
        assert_eq!(next, Next::KeepOpen);
    }

    /// A WebSocket reply to a request that reached `write_reply` (one that is
    /// not an upgrade) is a 400 that closes the connection.
    #[test]
    fn websocket_reply_to_plain_request_is_400() {
        let (text, next) = render(Some(&Reply::websocket(Vec::new())), true);
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text:?}");
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with(NOT_AN_UPGRADE));
        assert_eq!(next, Next::Close);
    }

    /// A hang writes nothing at all, waits its time and closes.
    #[test]
    fn hang_writes_nothing() {
        let waited = std::cell::Cell::new(Duration::ZERO);
        let mut out = Vec::new();
        let next = write_reply(
            &mut out,
            Some(&Reply::Hang(Duration::from_secs(7))),
            true,
            &|d| {
                waited.set(d);
                true
            },
        )
        .unwrap();
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(waited.get(), Duration::from_secs(7));
        assert_eq!(next, Next::Close);
    }

    /// A stalled body sends its head, declaring one byte more than it
    /// sends, then the start of the body, waits and closes.
    #[test]
    fn stalled_body_sends_head_and_start() {
        let waited = std::cell::Cell::new(Duration::ZERO);
        let reply = Reply::StalledBody {
            status: 500,
            content_type: "application/json".into(),
            start: "{\"error\":".into(),
            stall: Duration::from_secs(3),
        };
        let mut out = Vec::new();
        let next = write_reply(&mut out, Some(&reply), true, &|d| {
            waited.set(d);
            true
        })
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n\
             Content-Length: 10\r\nConnection: close\r\n\r\n{\"error\":"
        );
        assert_eq!(waited.get(), Duration::from_secs(3));
        assert_eq!(next, Next::Close);
    }

    /// `with_header` leaves non-body replies alone.
    #[test]
    fn with_header_ignores_other_kinds() {
        let raw = Reply::Raw(b"x".to_vec());
        assert_eq!(raw.clone().with_header("A", "b"), raw);
    }
}
