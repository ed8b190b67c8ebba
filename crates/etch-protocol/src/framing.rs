//! Record framing of the JSONL protocol: a record ends at LF and only at
//! LF (a CR before it is dropped). U+2028 and U+2029, which some JSON
//! readers treat as line ends, are ordinary characters inside a record, and
//! serde_json writes them unescaped, so splitting on them would cut a
//! string in two. This module works on bytes and does no I/O.

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

#[cfg(test)]
mod tests {
    use super::*;

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
