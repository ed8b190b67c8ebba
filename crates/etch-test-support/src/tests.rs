//! End-to-end tests of the fake server through plain std `TcpStream` clients,
//! with their own minimal HTTP response parser so the server's parsing is not
//! checked against itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::{End, FakeServer, Reply, UNSCRIPTED_STATUS, sse_data};

/// How long a test client waits for any read before failing instead of hanging.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// A response as the test client parsed it.
#[derive(Debug)]
struct Response {
    /// The status code.
    status: u16,
    /// The headers in order.
    headers: Vec<(String, String)>,
    /// The decoded body (as much as arrived).
    body: Vec<u8>,
    /// For chunked responses, each chunk's data as it arrived.
    chunks: Vec<Vec<u8>>,
    /// Whether the body ended properly (terminating chunk, full length, or EOF
    /// for close-delimited bodies).
    complete: bool,
}

impl Response {
    /// The first header called `name`, case-insensitively.
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as text.
    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }
}

/// A client connection with a buffered reader over it.
struct Client {
    /// The write side.
    stream: TcpStream,
    /// The read side.
    reader: BufReader<TcpStream>,
}

impl Client {
    /// Connects to `server` with a read timeout so no test can hang.
    fn connect(server: &FakeServer) -> Self {
        let stream = TcpStream::connect(server.addr()).unwrap();
        stream.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        Self { stream, reader }
    }

    /// Sends raw request bytes.
    fn send(&mut self, raw: &[u8]) {
        self.stream.write_all(raw).unwrap();
    }

    /// Sends a keep-alive POST with a JSON body.
    fn post_json(&mut self, path: &str, body: &str) {
        let raw = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.send(raw.as_bytes());
    }

    /// Reads one line without its CRLF; `None` at EOF or on a broken connection.
    fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
        }
    }

    /// Reads one response, decoding chunked encoding; a body cut short is
    /// reported as incomplete rather than failing.
    fn response(&mut self) -> Response {
        let mut response = self.head();
        self.body(&mut response);
        response
    }

    /// Reads the status line and headers of a response, leaving the body.
    fn head(&mut self) -> Response {
        let status_line = self.line().unwrap();
        let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let line = self.line().unwrap();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            headers.push((name.to_owned(), value.trim().to_owned()));
        }
        Response {
            status,
            headers,
            body: Vec::new(),
            chunks: Vec::new(),
            complete: false,
        }
    }

    /// Reads the body of `response` (whose head was just read) into it.
    fn body(&mut self, response: &mut Response) {
        if response.header("transfer-encoding") == Some("chunked") {
            while let Some(size_line) = self.line() {
                let size = usize::from_str_radix(&size_line, 16).unwrap();
                if size == 0 {
                    response.complete = self.line().as_deref() == Some("");
                    break;
                }
                let mut chunk = vec![0; size];
                if self.reader.read_exact(&mut chunk).is_err() {
                    break;
                }
                assert_eq!(self.line().as_deref(), Some(""));
                response.body.extend_from_slice(&chunk);
                response.chunks.push(chunk);
            }
        } else if let Some(length) = response.header("content-length") {
            let mut body = vec![0; length.parse().unwrap()];
            response.complete = self.reader.read_exact(&mut body).is_ok();
            response.body = body;
        } else {
            response.complete = self.reader.read_to_end(&mut response.body).is_ok();
        }
    }

    /// Whether the server has closed the connection: a read returns EOF or an
    /// error (a reset) rather than data or a timeout.
    fn is_closed(&mut self) -> bool {
        let mut byte = [0];
        match self.reader.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(err) => !matches!(
                err.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        }
    }
}

/// An SSE reply of these frames with no gap and the given end.
fn sse(events: &[&str], end: End) -> Reply {
    Reply::Sse {
        events: events.iter().map(|e| sse_data(e)).collect(),
        gap: Duration::ZERO,
        end,
    }
}

/// The method, path, headers and JSON body of a request are recorded as sent.
#[test]
fn records_method_path_headers_and_json_body() {
    let server = FakeServer::start(vec![Reply::json(200, &json!({"ok": true}))]).unwrap();
    assert!(server.url().starts_with("http://127.0.0.1:"));
    let mut client = Client::connect(&server);
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let raw = format!(
        "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: localhost\r\n\
         Authorization: Bearer sk-test\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    client.send(raw.as_bytes());
    let response = client.response();
    assert_eq!(response.status, 200);
    assert_eq!(response.text(), r#"{"ok":true}"#);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions?x=1");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        request.headers[0],
        ("Host".to_owned(), "localhost".to_owned())
    );
    assert_eq!(request.json()["messages"][0]["content"], "hi");
    assert_eq!(request.body_text(), body);
}

/// A chunked request body is recorded decoded.
#[test]
fn records_chunked_request_body() {
    let server = FakeServer::start(vec![Reply::text(200, "ok")]).unwrap();
    let mut client = Client::connect(&server);
    client.send(
        b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
          6\r\n{\"a\":1\r\n1\r\n}\r\n0\r\n\r\n",
    );
    assert_eq!(client.response().status, 200);
    let requests = server.requests();
    assert_eq!(requests[0].json(), json!({"a": 1}));
}

/// A client sending `Expect: 100-continue` gets the interim response and its
/// body is still read.
#[test]
fn answers_expect_continue() {
    let server = FakeServer::start(vec![Reply::text(200, "ok")]).unwrap();
    let mut client = Client::connect(&server);
    client.send(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
    assert_eq!(client.line().as_deref(), Some("HTTP/1.1 100 Continue"));
    assert_eq!(client.line().as_deref(), Some(""));
    client.send(b"hi");
    assert_eq!(client.response().text(), "ok");
    assert_eq!(server.requests()[0].body, b"hi");
}

/// SSE frames arrive in order, each as its own chunk, spaced by the gap, and the
/// body ends with the terminating chunk.
#[test]
fn sse_frames_arrive_in_order_as_chunks() {
    let gap = Duration::from_millis(50);
    let frames = vec![
        sse_data(r#"{"n":1}"#),
        "data: {\"n\":2}\n\n".to_owned(),
        "not even sse".to_owned(),
        sse_data("[DONE]"),
    ];
    let server = FakeServer::start(vec![Reply::Sse {
        events: frames.clone(),
        gap,
        end: End::Close,
    }])
    .unwrap();
    let mut client = Client::connect(&server);
    let start = Instant::now();
    client.post_json("/v1/chat/completions", "{}");
    let response = client.response();
    assert!(start.elapsed() >= gap * 3, "{:?}", start.elapsed());
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert_eq!(response.header("connection"), Some("keep-alive"));
    assert!(response.complete);
    let chunks: Vec<String> = response
        .chunks
        .iter()
        .map(|c| String::from_utf8(c.clone()).unwrap())
        .collect();
    assert_eq!(chunks, frames);
}

/// A body reply carries its status, content type, extra headers and body.
#[test]
fn body_reply_has_status_and_headers() {
    let reply = Reply::Body {
        status: 429,
        content_type: "application/json".to_owned(),
        body: r#"{"error":{"message":"rate limited"}}"#.to_owned(),
        headers: vec![("Retry-After".to_owned(), "2".to_owned())],
    };
    let server = FakeServer::start(vec![reply]).unwrap();
    let mut client = Client::connect(&server);
    client.post_json("/v1/chat/completions", "{}");
    let response = client.response();
    assert_eq!(response.status, 429);
    assert_eq!(response.header("retry-after"), Some("2"));
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert!(response.complete);
    assert_eq!(response.text(), r#"{"error":{"message":"rate limited"}}"#);
}

/// Two requests on one keep-alive connection get successive replies, including
/// after a chunked SSE reply.
#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = FakeServer::start(vec![
        sse(&["one"], End::Close),
        Reply::text(201, "two"),
        Reply::text(200, "three"),
    ])
    .unwrap();
    let mut client = Client::connect(&server);
    client.post_json("/a", "{}");
    let first = client.response();
    assert!(first.complete);
    assert_eq!(first.text(), "data: one\n\n");
    client.post_json("/b", "{}");
    let second = client.response();
    assert_eq!((second.status, second.text().as_str()), (201, "two"));
    client.send(b"GET /c HTTP/1.1\r\nConnection: close\r\n\r\n");
    let third = client.response();
    assert_eq!(third.header("connection"), Some("close"));
    assert!(client.is_closed());
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/a", "/b", "/c"]);
}

/// An HTTP/1.0 request without keep-alive is answered and the connection closed.
#[test]
fn http10_closes_after_reply() {
    let server = FakeServer::start(vec![Reply::text(200, "bye")]).unwrap();
    let mut client = Client::connect(&server);
    client.send(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(client.response().header("connection"), Some("close"));
    assert!(client.is_closed());
}

/// `End::Reset` cuts the body short, and only its own connection suffers.
#[test]
fn reset_leaves_body_incomplete() {
    let server = FakeServer::start(vec![
        sse(&["partial", "more"], End::Reset),
        Reply::text(200, "fine"),
    ])
    .unwrap();
    let mut idle = Client::connect(&server);
    let mut client = Client::connect(&server);
    client.post_json("/v1/chat/completions", "{}");
    let response = client.response();
    assert!(!response.complete);
    assert_eq!(response.text(), "data: partial\n\ndata: more\n\n");
    assert!(client.is_closed());
    idle.post_json("/after", "{}");
    assert_eq!(idle.response().text(), "fine");
}

/// `End::Stall` sends nothing for the stall time, then closes without finishing
/// the body, while other connections are served meanwhile.
#[test]
fn stall_delays_then_closes_without_blocking_others() {
    let stall = Duration::from_secs(1);
    let server = FakeServer::start(vec![
        sse(&["first"], End::Stall(stall)),
        Reply::text(200, "other"),
    ])
    .unwrap();
    let start = Instant::now();
    let stalled = thread::spawn({
        let mut client = Client::connect(&server);
        client.post_json("/stalled", "{}");
        move || (client.response(), start.elapsed())
    });
    server.wait_for_requests(1, CLIENT_TIMEOUT);
    let mut other = Client::connect(&server);
    other.post_json("/other", "{}");
    assert_eq!(other.response().text(), "other");
    assert!(start.elapsed() < stall, "served only after the stall");

    let (response, elapsed) = stalled.join().unwrap();
    assert!(elapsed >= stall, "{elapsed:?}");
    assert!(!response.complete);
    assert_eq!(response.text(), "data: first\n\n");
}

/// `Reply::Hang` answers nothing at all, not even a status line, and the
/// connection closes once the server is dropped.
#[test]
fn hang_sends_no_headers_until_dropped() {
    let server = FakeServer::start(vec![Reply::Hang(Duration::from_mins(1))]).unwrap();
    let mut client = Client::connect(&server);
    client
        .stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    client.post_json("/hang", "{}");
    assert_eq!(server.wait_for_requests(1, CLIENT_TIMEOUT).len(), 1);
    // A read that times out: the connection is open and silent.
    assert!(!client.is_closed());
    let start = Instant::now();
    drop(server);
    client
        .stream
        .set_read_timeout(Some(CLIENT_TIMEOUT))
        .unwrap();
    assert!(client.is_closed());
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

/// `Reply::StalledBody` sends its status and headers and the start of the
/// body, then nothing more; the body stays incomplete.
#[test]
fn stalled_body_sends_the_head_then_stalls() {
    let server = FakeServer::start(vec![Reply::StalledBody {
        status: 503,
        content_type: "application/json".into(),
        start: "{\"error\":".into(),
        stall: Duration::from_millis(300),
    }])
    .unwrap();
    let mut client = Client::connect(&server);
    client.post_json("/err", "{}");
    let start = Instant::now();
    let response = client.response();
    assert_eq!(response.status, 503);
    assert_eq!(response.header("content-length"), Some("10"));
    assert!(!response.complete);
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "{:?}",
        start.elapsed()
    );
}

/// Requests beyond the script get the documented 500 and are still recorded,
/// on the same keep-alive connection.
#[test]
fn unscripted_requests_get_500() {
    let server = FakeServer::start(vec![Reply::text(200, "only")]).unwrap();
    let mut client = Client::connect(&server);
    client.post_json("/1", "{}");
    assert_eq!(client.response().text(), "only");
    client.post_json("/2", r#"{"extra":true}"#);
    let response = client.response();
    assert_eq!(response.status, UNSCRIPTED_STATUS);
    let error: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(
        error["error"]["message"],
        "etch-test-support: no scripted reply"
    );
    client.post_json("/3", "{}");
    assert_eq!(client.response().status, 500);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].json()["extra"], true);
}

/// A raw reply is written verbatim and the connection closed.
#[test]
fn raw_reply_is_verbatim_then_closed() {
    let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\ntruncated".to_vec();
    let server = FakeServer::start(vec![Reply::Raw(raw.clone())]).unwrap();
    let mut client = Client::connect(&server);
    client.post_json("/", "{}");
    let mut received = Vec::new();
    client.reader.read_to_end(&mut received).unwrap();
    assert_eq!(received, raw);
}

/// Malformed requests get 400 and are not recorded; the next connection works.
#[test]
fn malformed_request_gets_400() {
    let server = FakeServer::start(vec![Reply::text(200, "ok")]).unwrap();
    let mut client = Client::connect(&server);
    client.send(b"this is not http\r\n\r\n");
    let response = client.response();
    assert_eq!(response.status, 400);
    assert!(client.is_closed());
    let mut client = Client::connect(&server);
    client.post_json("/", "{}");
    assert_eq!(client.response().text(), "ok");
    assert_eq!(server.requests().len(), 1);
}

/// `wait_for_requests` returns as soon as enough requests arrived, and returns
/// what there is after the timeout.
#[test]
fn wait_for_requests_blocks_until_arrival_or_timeout() {
    let server = FakeServer::start(vec![Reply::text(200, "ok")]).unwrap();
    let addr = server.addr();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        stream
            .write_all(b"GET /late HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut sink = Vec::new();
        stream.read_to_end(&mut sink).unwrap();
    });
    assert!(server.requests().is_empty());
    let start = Instant::now();
    let requests = server.wait_for_requests(1, CLIENT_TIMEOUT);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/late");
    assert!(start.elapsed() < CLIENT_TIMEOUT);
    sender.join().unwrap();

    let start = Instant::now();
    let timeout = Duration::from_millis(100);
    assert_eq!(server.wait_for_requests(2, timeout).len(), 1);
    assert!(start.elapsed() >= timeout);
}

/// Dropping the server returns promptly even with an idle keep-alive client and
/// a long stall in progress, closes those connections and frees the port.
#[test]
fn drop_stops_everything_and_frees_the_port() {
    let server = FakeServer::start(vec![
        Reply::text(200, "ok"),
        sse(&["x"], End::Stall(Duration::from_mins(1))),
    ])
    .unwrap();
    let addr = server.addr();
    let mut idle = Client::connect(&server);
    idle.post_json("/", "{}");
    assert_eq!(idle.response().text(), "ok");
    let mut stalled = Client::connect(&server);
    stalled.post_json("/stall", "{}");
    // The head is written before the stall begins, so once it is here the
    // server is stalling (or about to).
    let mut response = stalled.head();
    assert_eq!(response.status, 200);

    let start = Instant::now();
    drop(server);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(idle.is_closed());
    stalled.body(&mut response);
    assert!(!response.complete);
    TcpListener::bind(addr).unwrap();
    let _ = stalled.stream.shutdown(Shutdown::Both);
}

/// A server nobody connected to drops cleanly too.
#[test]
fn unused_server_drops_cleanly() {
    let server = FakeServer::start(Vec::new()).unwrap();
    let addr = server.addr();
    drop(server);
    TcpListener::bind(addr).unwrap();
}

/// A model request whose tool result answers no call is answered with 400
/// (using up its scripted reply), listed in `violations`, and fails the
/// test when the server is dropped; a well-formed one is served as
/// scripted.
#[test]
fn tool_results_must_follow_their_calls() {
    let server = FakeServer::start(vec![
        Reply::json(200, &json!({"ok": 1})),
        Reply::json(200, &json!({"ok": 2})),
    ])
    .unwrap();
    let mut client = Client::connect(&server);
    let good = json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "x"}
    ]});
    client.post_json("/v1/chat/completions", &good.to_string());
    assert_eq!(client.response().status, 200);
    let bad = json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "ghost", "content": "x"}
    ]});
    client.post_json("/v1/chat/completions", &bad.to_string());
    let response = client.response();
    assert_eq!(response.status, 400);
    assert!(response.text().contains("ghost"), "{}", response.text());
    let violations = server.violations();
    assert_eq!(violations.len(), 1);
    assert!(violations[0].contains("request 2"), "{}", violations[0]);
    drop(client);
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(server)));
    let message = dropped.unwrap_err();
    let text = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(text.contains("a request invariant"), "{text}");
}
