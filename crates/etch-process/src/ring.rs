//! The last bytes of a process's output, addressed by their offset in
//! everything it printed, so a reader can ask "what came since offset N"
//! and be told how much of that was already let go.
//!
//! This module must not know whose output it holds.

use std::collections::VecDeque;

/// The last `cap` bytes of a stream.
#[derive(Debug)]
pub struct Ring {
    /// The bytes kept.
    buf: VecDeque<u8>,
    /// Most bytes kept.
    cap: usize,
    /// The offset of the first byte kept.
    start: u64,
}

impl Ring {
    /// An empty ring keeping at most `cap` bytes (at least 1).
    pub fn new(cap: usize) -> Self {
        Self {
            buf: VecDeque::new(),
            cap: cap.max(1),
            start: 0,
        }
    }

    /// Adds `bytes`, letting the oldest go past the cap.
    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = if bytes.len() > self.cap {
            let skipped = bytes.len() - self.cap;
            self.start += (self.buf.len() + skipped) as u64;
            self.buf.clear();
            &bytes[skipped..]
        } else {
            bytes
        };
        let over = (self.buf.len() + bytes.len()).saturating_sub(self.cap);
        self.buf.drain(..over);
        self.start += over as u64;
        self.buf.extend(bytes);
    }

    /// The offset just past the last byte: everything ever printed.
    pub fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    /// The bytes from `offset` on, and the offset they start at (later
    /// than `offset` when those bytes were let go).
    pub fn since(&self, offset: u64) -> (u64, Vec<u8>) {
        self.tail_since(offset, usize::MAX)
    }

    /// The last `most` bytes of those from `offset` on, and the offset
    /// they start at: only what is returned is copied.
    pub fn tail_since(&self, offset: u64, most: usize) -> (u64, Vec<u8>) {
        let from = offset.clamp(self.start, self.end());
        let available = usize::try_from(self.end() - from).unwrap_or(usize::MAX);
        let take = available.min(most);
        let skip = self.buf.len() - take;
        let (a, b) = self.buf.as_slices();
        let mut bytes = Vec::with_capacity(take);
        if skip < a.len() {
            bytes.extend_from_slice(&a[skip..]);
            bytes.extend_from_slice(b);
        } else {
            bytes.extend_from_slice(&b[skip - a.len()..]);
        }
        (self.end() - take as u64, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offsets count everything printed; old bytes go past the cap, and
    /// a read from before them starts where the kept bytes do.
    #[test]
    fn keeps_the_tail_with_offsets() {
        let mut ring = Ring::new(8);
        ring.push(b"hello");
        assert_eq!(ring.since(0), (0, b"hello".to_vec()));
        ring.push(b" world");
        assert_eq!(ring.end(), 11);
        assert_eq!(ring.since(0), (3, b"lo world".to_vec()));
        assert_eq!(ring.since(9), (9, b"ld".to_vec()));
        assert_eq!(ring.since(99), (11, Vec::new()));
        ring.push(b"0123456789AB");
        assert_eq!(ring.end(), 23);
        assert_eq!(ring.since(0), (15, b"456789AB".to_vec()));
        assert_eq!(ring.tail_since(0, 3), (20, b"9AB".to_vec()));
        assert_eq!(ring.tail_since(21, 3), (21, b"AB".to_vec()));
        assert_eq!(ring.tail_since(23, 3), (23, Vec::new()));
    }
}
