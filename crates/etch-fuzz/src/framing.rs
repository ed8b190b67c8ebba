//! `rpc_framing`: arbitrary bytes as what an `etch rpc` or `etch acp`
//! client writes to stdin, cut by the pipe anywhere. The records read
//! are the input's lines whatever the cuts: each ends at an LF (a CR
//! before it dropped), the last may have none, and one longer than the
//! limit is reported as too long and skipped whole, the next line read
//! as usual. `split_records` finds the same complete lines.

use std::io::{BufReader, Read};

use etch_protocol::{Record, read_record, split_records};

use crate::chunks;

/// A reader that gives at most one piece per read, as a pipe does.
struct Pipe<'a> {
    /// The pieces left.
    pieces: Vec<&'a [u8]>,
    /// The next piece.
    next: usize,
    /// Bytes of that piece already given.
    given: usize,
}

impl Read for Pipe<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(piece) = self.pieces.get(self.next) else {
            return Ok(0);
        };
        let left = &piece[self.given..];
        let n = left.len().min(buf.len());
        buf[..n].copy_from_slice(&left[..n]);
        self.given += n;
        if self.given == piece.len() {
            self.next += 1;
            self.given = 0;
        }
        Ok(n)
    }
}

/// What the records of `body` must be, read with limit `max`.
fn expected(body: &[u8], max: usize) -> Vec<Record> {
    let mut out = Vec::new();
    let mut segments: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    // After the last LF: a record only if something is there.
    let last = segments.pop().unwrap_or_default();
    for segment in segments {
        out.push(if segment.len() > max {
            Record::TooLong
        } else {
            Record::Line(segment.strip_suffix(b"\r").unwrap_or(segment).to_vec())
        });
    }
    if !last.is_empty() {
        out.push(if last.len() > max {
            Record::TooLong
        } else {
            Record::Line(last.to_vec())
        });
    }
    out
}

/// Checks one input: its first byte picks the limit (0 to 63 bytes) and
/// the reader's buffer (1 to 3 bytes, or 8 KiB), the rest is split into
/// the pipe's pieces and the body.
pub fn check(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let max = usize::from(first & 0x3f);
    let capacity = match first >> 6 {
        3 => 8192,
        small => usize::from(small) + 1,
    };
    let (sizes, body) = chunks::split(rest);
    let pipe = Pipe {
        pieces: chunks::pieces(body, &sizes),
        next: 0,
        given: 0,
    };
    let mut reader = BufReader::with_capacity(capacity, pipe);
    let mut got = Vec::new();
    loop {
        match read_record(&mut reader, max) {
            Ok(Some(record)) => got.push(record),
            Ok(None) => break,
            Err(e) => panic!("reading from memory failed: {e}"),
        }
        assert!(got.len() <= body.len() + 1, "more records than bytes");
    }
    assert_eq!(got, expected(body, max), "limit {max}, capacity {capacity}");

    // With no limit that matters, the complete records are the ones
    // `split_records` finds.
    let mut whole = BufReader::new(body);
    let split = split_records(body);
    for want in &split.complete {
        match read_record(&mut whole, body.len()) {
            Ok(Some(Record::Line(line))) => assert_eq!(&line[..], *want),
            other => panic!("split_records found {want:?}, read_record {other:?}"),
        }
    }
}
