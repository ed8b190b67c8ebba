//! A small HTTP/1.1 client for the `etch serve` tests: one request per
//! connection (`Connection: close`), bodies framed by length or chunked,
//! and a reader of server-sent events frame by frame. Every read has a
//! timeout, so a server that stops answering fails the test instead of
//! hanging it.

#![allow(clippy::panic)]

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How long any read may wait.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A response.
#[derive(Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub body: String,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Opens a connection and sends one request.
fn send(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // A server may answer (413) before taking a large body whole.
    let _ = stream.write_all(body);
    BufReader::new(stream)
}

/// Reads the status line and headers.
fn head(reader: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    (status, headers)
}

/// Whether the headers say the body is chunked.
fn chunked(headers: &[(String, String)]) -> bool {
    headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
}

/// One request, read whole.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut reader = send(addr, method, path, headers, body);
    let (status, headers) = head(&mut reader);
    let mut bytes = Vec::new();
    if chunked(&headers) {
        while let Some(chunk) = next_chunk(&mut reader) {
            bytes.extend(chunk);
        }
    } else if let Some(length) = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
    {
        // Not every server closes after its answer (chromedriver keeps
        // the connection), so a body with a length is read to it.
        bytes.resize(length, 0);
        let read = reader.read_exact(&mut bytes);
        if read.is_err() {
            bytes.clear();
        }
    } else {
        let _ = reader.read_to_end(&mut bytes);
    }
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The next chunk of a chunked body; `None` at its end.
fn next_chunk(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut size = String::new();
    if reader.read_line(&mut size).ok()? == 0 {
        return None;
    }
    let size = usize::from_str_radix(size.trim(), 16).ok()?;
    if size == 0 {
        return None;
    }
    let mut chunk = vec![0; size + 2];
    reader.read_exact(&mut chunk).ok()?;
    chunk.truncate(size);
    Some(chunk)
}

/// One server-sent event.
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// `id:`, if any.
    pub id: Option<String>,
    /// `event:`, if any.
    pub event: Option<String>,
    /// `data:` lines joined.
    pub data: String,
}

impl Frame {
    /// The data as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {}", self.data))
    }
}

/// How long a stream may go without a frame with data: heartbeats keep
/// the connection's reads from timing out, so a test waiting for a frame
/// that never comes fails here instead of hanging.
const QUIET_LIMIT: Duration = Duration::from_secs(60);

/// An open event stream.
pub struct Events {
    /// The connection.
    reader: BufReader<TcpStream>,
    /// Bytes read and not yet parsed.
    buffer: String,
    /// The status of the response.
    pub status: u16,
}

impl Events {
    /// Opens `path` as an event stream.
    pub fn open(addr: &str, path: &str, headers: &[(&str, &str)]) -> Self {
        let mut reader = send(addr, "GET", path, headers, b"");
        let (status, headers) = head(&mut reader);
        assert!(
            status != 200 || chunked(&headers),
            "an event stream is chunked: {headers:?}"
        );
        Self {
            reader,
            buffer: String::new(),
            status,
        }
    }

    /// The next frame with data (comments skipped); `None` when the stream
    /// ended.
    pub fn next(&mut self) -> Option<Frame> {
        let since = std::time::Instant::now();
        loop {
            assert!(
                since.elapsed() < QUIET_LIMIT,
                "no event came for {QUIET_LIMIT:?} (only heartbeats)"
            );
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut frame = Frame::default();
                let mut data = Vec::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        frame.id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        frame.event = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push(v);
                    }
                }
                if data.is_empty() {
                    continue;
                }
                frame.data = data.join("\n");
                return Some(frame);
            }
            let chunk = next_chunk(&mut self.reader)?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Frames until one `until` accepts (included).
    pub fn until(&mut self, until: impl Fn(&Frame) -> bool) -> Vec<Frame> {
        let mut frames = Vec::new();
        loop {
            let frame = self
                .next()
                .unwrap_or_else(|| panic!("the stream ended after {frames:?}"));
            let done = until(&frame);
            frames.push(frame);
            if done {
                return frames;
            }
        }
    }

    /// Every frame until the server ends the stream.
    pub fn rest(&mut self) -> Vec<Frame> {
        std::iter::from_fn(|| self.next()).collect()
    }
}
