//! Just enough HTTP/1.1 request parsing for the fake server: the request line,
//! headers, and a body framed by `Content-Length` or chunked transfer encoding.
//!
//! Errors of kind [`io::ErrorKind::InvalidData`] mean the client sent something
//! that is not HTTP we understand (the server answers 400); any other error means
//! the connection broke (the server just closes).

use std::io::{self, BufRead, Read};

/// The longest request line, header line or chunk-size line accepted, so a
/// misbehaving client cannot make the server buffer without bound.
const MAX_LINE: usize = 64 * 1024;

/// The most header lines accepted in one request, for the same reason.
const MAX_HEADERS: usize = 256;

/// The largest request body accepted; generous because agent requests carry
/// whole conversations, but bounded so a bad length cannot exhaust memory.
const MAX_BODY: usize = 256 * 1024 * 1024;

/// The most empty lines skipped before a request line (RFC 9112 §2.2 asks
/// servers to tolerate at least one stray CRLF between requests).
const MAX_LEADING_EMPTY_LINES: usize = 8;

/// The request line and headers of one request, before its body is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// The method token, e.g. `POST`.
    pub method: String,
    /// The request target as sent, e.g. `/v1/chat/completions?x=1`.
    pub target: String,
    /// Whether the request line said `HTTP/1.0` (which defaults to closing the
    /// connection) rather than `HTTP/1.1`.
    pub http10: bool,
    /// The headers in order, values trimmed.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The lowercased comma-separated tokens of every header called `name`,
    /// because list-valued headers may be split across several lines.
    fn tokens(&self, name: &str) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(key, _)| key.eq_ignore_ascii_case(name))
            .flat_map(|(_, value)| value.split(','))
            .map(|token| token.trim().to_ascii_lowercase())
            .filter(|token| !token.is_empty())
            .collect()
    }

    /// Whether the client wants the connection kept open after the response:
    /// HTTP/1.1 unless it sent `Connection: close`, HTTP/1.0 only if it sent
    /// `Connection: keep-alive`.
    pub fn keep_alive(&self) -> bool {
        let connection = self.tokens("connection");
        if self.http10 {
            connection.iter().any(|token| token == "keep-alive")
        } else {
            !connection.iter().any(|token| token == "close")
        }
    }

    /// Whether the client waits for `100 Continue` before sending the body.
    pub fn expects_continue(&self) -> bool {
        !self.http10 && self.tokens("expect").iter().any(|t| t == "100-continue")
    }

    /// The `Sec-WebSocket-Key` of a WebSocket upgrade request (one that also says
    /// `Upgrade: websocket`, in any case), or `None` for any other request, so
    /// the server can tell a handshake it can complete from a plain request.
    pub fn websocket_key(&self) -> Option<&str> {
        if !self
            .tokens("upgrade")
            .iter()
            .any(|token| token == "websocket")
        {
            return None;
        }
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case("sec-websocket-key"))
            .map(|(_, value)| value.as_str())
            .filter(|value| !value.is_empty())
    }
}

/// Builds the error for input that is not acceptable HTTP.
fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// Builds the error for a connection that ended in the middle of a request.
fn truncated(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("connection closed in the middle of the {what}"),
    )
}

/// Reads one line ending in LF (an optional CR before it is dropped). Returns
/// `None` on end of stream before any byte, so callers can tell a clean close
/// from a truncated line.
fn read_line<R: BufRead>(reader: &mut R) -> io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let limit = u64::try_from(MAX_LINE + 1).unwrap_or(u64::MAX);
    let read = reader.by_ref().take(limit).read_until(b'\n', &mut line)?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        if line.len() > MAX_LINE {
            return Err(invalid("line too long"));
        }
        return Err(truncated("line"));
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(line))
}

/// Reads the request line and headers of the next request on a connection, or
/// `None` if the client closed the connection cleanly between requests.
pub(crate) fn read_head<R: BufRead>(reader: &mut R) -> io::Result<Option<Head>> {
    let mut request_line = None;
    for _ in 0..=MAX_LEADING_EMPTY_LINES {
        match read_line(reader)? {
            None => return Ok(None),
            Some(line) if line.is_empty() => {}
            Some(line) => {
                request_line = Some(line);
                break;
            }
        }
    }
    let request_line = request_line.ok_or_else(|| invalid("too many empty lines"))?;
    let request_line =
        String::from_utf8(request_line).map_err(|_| invalid("request line is not UTF-8"))?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid(format!("malformed request line {request_line:?}")));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(invalid(format!("malformed method {method:?}")));
    }
    if target.is_empty() {
        return Err(invalid("empty request target"));
    }
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        other => return Err(invalid(format!("unsupported version {other:?}"))),
    };

    let mut headers = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or_else(|| truncated("headers"))?;
        if line.is_empty() {
            break;
        }
        if headers.len() == MAX_HEADERS {
            return Err(invalid("too many headers"));
        }
        if line.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
            return Err(invalid("obsolete header line folding"));
        }
        let line = String::from_utf8_lossy(&line);
        let Some((name, value)) = line.split_once(':') else {
            return Err(invalid(format!("header line without a colon: {line:?}")));
        };
        if name.is_empty() || name.trim() != name {
            return Err(invalid(format!("malformed header name {name:?}")));
        }
        headers.push((name.to_owned(), value.trim().to_owned()));
    }

    Ok(Some(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        http10,
        headers,
    }))
}

/// Reads the body that `head` announces: chunked if the last transfer coding is
/// `chunked`, else `Content-Length` bytes, else nothing.
pub(crate) fn read_body<R: BufRead>(reader: &mut R, head: &Head) -> io::Result<Vec<u8>> {
    let codings = head.tokens("transfer-encoding");
    if let Some(last) = codings.last() {
        if last != "chunked" {
            return Err(invalid(format!("unsupported transfer coding {last:?}")));
        }
        return read_chunked(reader);
    }
    let lengths = head.tokens("content-length");
    let Some(first) = lengths.first() else {
        return Ok(Vec::new());
    };
    if lengths.iter().any(|other| other != first) {
        return Err(invalid("conflicting Content-Length values"));
    }
    let length: usize = first
        .parse()
        .map_err(|_| invalid(format!("malformed Content-Length {first:?}")))?;
    if length > MAX_BODY {
        return Err(invalid("body too large"));
    }
    let mut body = vec![0; length];
    reader
        .read_exact(&mut body)
        .map_err(|err| map_eof(err, "body"))?;
    Ok(body)
}

/// Turns a bare "unexpected end of file" into one that says what was cut short.
fn map_eof(err: io::Error, what: &str) -> io::Error {
    if err.kind() == io::ErrorKind::UnexpectedEof {
        truncated(what)
    } else {
        err
    }
}

/// Decodes a chunked body: hex size lines (extensions ignored), data, CRLF, until
/// the zero-size chunk and its (ignored) trailer section.
fn read_chunked<R: BufRead>(reader: &mut R) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or_else(|| truncated("chunked body"))?;
        let line = String::from_utf8_lossy(&line);
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| invalid(format!("malformed chunk size {size_text:?}")))?;
        if size == 0 {
            loop {
                let trailer = read_line(reader)?.ok_or_else(|| truncated("trailers"))?;
                if trailer.is_empty() {
                    return Ok(body);
                }
            }
        }
        if size > MAX_BODY - body.len() {
            return Err(invalid("body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader
            .read_exact(&mut body[start..])
            .map_err(|err| map_eof(err, "chunked body"))?;
        let end = read_line(reader)?.ok_or_else(|| truncated("chunked body"))?;
        if !end.is_empty() {
            return Err(invalid("chunk data longer than its size"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses a whole request from bytes, for the tests below.
    fn parse(raw: &[u8]) -> io::Result<Option<(Head, Vec<u8>)>> {
        let mut reader = raw;
        let Some(head) = read_head(&mut reader)? else {
            return Ok(None);
        };
        let body = read_body(&mut reader, &head)?;
        Ok(Some((head, body)))
    }

    /// A plain request with Content-Length is split into its parts.
    #[test]
    fn parses_content_length_request() {
        let (head, body) =
            parse(b"POST /v1/x?q=1 HTTP/1.1\r\nHost: a\r\nContent-Length:  5 \r\n\r\nhello")
                .unwrap()
                .unwrap();
        assert_eq!(head.method, "POST");
        assert_eq!(head.target, "/v1/x?q=1");
        assert_eq!(head.headers[1], ("Content-Length".into(), "5".into()));
        assert_eq!(body, b"hello");
        assert!(head.keep_alive());
    }

    /// Chunked bodies are decoded, with extensions and trailers ignored.
    #[test]
    fn decodes_chunked_body() {
        let (_, body) = parse(
            b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n\
              3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: y\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(body, b"abc0123456789");
    }

    /// A clean close between requests is not an error; a cut-off one is.
    #[test]
    fn distinguishes_clean_close_from_truncation() {
        assert!(parse(b"").unwrap().is_none());
        assert!(parse(b"\r\n").unwrap().is_none());
        let err = parse(b"GET / HTTP/1.1\r\nHost").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        let err = parse(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        let err =
            parse(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    /// Garbage is reported as invalid data so the server can answer 400.
    #[test]
    fn rejects_malformed_requests() {
        for raw in [
            &b"garbage\r\n\r\n"[..],
            b"GET / HTTP/2.0\r\n\r\n",
            b"GET / HTTP/1.1\r\nno colon\r\n\r\n",
            b"GET / HTTP/1.1\r\n folded: x\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n0\r\n\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        ] {
            let err = parse(raw).unwrap_err();
            assert_eq!(
                err.kind(),
                io::ErrorKind::InvalidData,
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    /// Over-long lines are refused rather than buffered without bound.
    #[test]
    fn rejects_overlong_lines() {
        let mut raw = b"GET /".to_vec();
        raw.extend(std::iter::repeat_n(b'a', MAX_LINE + 10));
        raw.extend_from_slice(b" HTTP/1.1\r\n\r\n");
        assert_eq!(parse(&raw).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    /// Keep-alive and 100-continue follow the version defaults and headers.
    #[test]
    fn connection_semantics() {
        let head = |raw: &[u8]| parse(raw).unwrap().unwrap().0;
        assert!(!head(b"GET / HTTP/1.1\r\nConnection: Close\r\n\r\n").keep_alive());
        assert!(!head(b"GET / HTTP/1.0\r\n\r\n").keep_alive());
        assert!(head(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive());
        assert!(head(b"GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n").expects_continue());
        assert!(!head(b"GET / HTTP/1.1\r\n\r\n").expects_continue());
    }

    /// Only a request with both `Upgrade: websocket` and a key is an upgrade.
    #[test]
    fn websocket_key_needs_upgrade_and_key() {
        let head = |raw: &[u8]| parse(raw).unwrap().unwrap().0;
        let upgrade =
            head(b"GET /ws HTTP/1.1\r\nUpgrade: WebSocket\r\nSec-WebSocket-Key: abc==\r\n\r\n");
        assert_eq!(upgrade.websocket_key(), Some("abc=="));
        assert_eq!(
            head(b"GET / HTTP/1.1\r\nSec-WebSocket-Key: abc\r\n\r\n").websocket_key(),
            None
        );
        assert_eq!(
            head(b"GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n").websocket_key(),
            None
        );
        assert_eq!(
            head(b"GET / HTTP/1.1\r\nUpgrade: h2c\r\nSec-WebSocket-Key: a\r\n\r\n").websocket_key(),
            None
        );
    }
}
