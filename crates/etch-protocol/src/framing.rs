//! Record framing of the JSONL protocol: a record ends at LF and only at
//! LF (a CR before it is dropped). U+2028 and U+2029, which some JSON
//! readers treat as line ends, are ordinary characters inside a record, and
//! serde_json writes them unescaped, so splitting on them would cut a
//! string in two. This module works on bytes and on any `BufRead` it is
//! given ([`read_record`], which `etch rpc` and `etch acp` read stdin
//! with); it opens nothing.

use std::io::{BufRead, Read as _};

/// The complete records in a buffer and the incomplete tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records<'a> {
    /// Each complete record without its line end; blank records are kept
    /// so a caller can count lines.
    pub complete: Vec<&'a [u8]>,
    /// Bytes after the last LF: the start of the next record.
    pub rest: &'a [u8],
}

/// Splits `buf` into complete LF-terminated records and the rest.
pub fn split_records(buf: &[u8]) -> Records<'_> {
    let mut complete = Vec::new();
    let mut start = 0;
    for (i, &byte) in buf.iter().enumerate() {
        if byte == b'\n' {
            let record = &buf[start..i];
            complete.push(record.strip_suffix(b"\r").unwrap_or(record));
            start = i + 1;
        }
    }
    Records {
        complete,
        rest: &buf[start..],
    }
}

/// One record read by [`read_record`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A record without its LF (and a CR before it).
    Line(Vec<u8>),
    /// A record longer than the limit, skipped to its end without being
    /// held.
    TooLong,
}

/// The next record of `reader`, at most `max` bytes without its LF (a CR
/// before the LF counts); `None` at the end. The last record need not end with an LF. A longer
/// record is [`Record::TooLong`]: its bytes are read up to its LF and
/// dropped, so a client that sends one bad line is answered and the
/// next line is read as usual.
///
/// # Errors
/// When `reader` fails.
pub fn read_record<R: BufRead>(reader: &mut R, max: usize) -> std::io::Result<Option<Record>> {
    let mut line = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX);
    let read = (&mut *reader)
        .take(limit.saturating_add(1))
        .read_until(b'\n', &mut line)?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        return Ok(Some(Record::Line(line)));
    }
    if line.len() <= max {
        // The last record, without an LF.
        return Ok(Some(Record::Line(line)));
    }
    // Skip the rest of the long record without holding it.
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        if let Some(end) = buf.iter().position(|&b| b == b'\n') {
            reader.consume(end + 1);
            break;
        }
        let n = buf.len();
        reader.consume(n);
    }
    Ok(Some(Record::TooLong))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records up to the limit are read, longer ones skipped to their
    /// LF; the last needs none; a CR before an LF goes.
    #[test]
    fn records_are_read_up_to_a_limit() {
        let text = b"abc\r\nabcde\nabcdef\nxy\n\nabcdefgh";
        let mut reader = std::io::BufReader::with_capacity(2, &text[..]);
        let mut got = Vec::new();
        while let Some(record) = read_record(&mut reader, 5).unwrap() {
            got.push(record);
        }
        let line = |s: &str| Record::Line(s.as_bytes().to_vec());
        assert_eq!(
            got,
            [
                line("abc"),
                line("abcde"),
                Record::TooLong,
                line("xy"),
                line(""),
                Record::TooLong
            ]
        );
    }

    /// LF ends a record, CRLF too, U+2028/U+2029 do not; the tail waits.
    #[test]
    fn only_lf_ends_a_record() {
        let text = "{\"m\":\"a\u{2028}b\u{2029}c\"}\r\n{\"m\":1}\n\n{\"m\":";
        let records = split_records(text.as_bytes());
        assert_eq!(
            records.complete,
            vec![
                "{\"m\":\"a\u{2028}b\u{2029}c\"}".as_bytes(),
                b"{\"m\":1}".as_slice(),
                b"".as_slice()
            ]
        );
        assert_eq!(records.rest, b"{\"m\":");
        let value: serde_json::Value = serde_json::from_slice(records.complete[0]).unwrap();
        assert_eq!(value["m"], "a\u{2028}b\u{2029}c");
        assert!(split_records(b"").complete.is_empty());
    }
}
