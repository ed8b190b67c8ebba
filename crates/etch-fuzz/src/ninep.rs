//! `ninep_wire`: arbitrary bytes as a 9P2000 message body (type, tag,
//! fields: what `etch serve --9p` reads after a message's size). A
//! message that parses has the tag it was read with; an error about
//! anything, however long, fits the smallest message size a client may
//! agree.

use etch_serve::ninep_wire::{MAX_MSIZE, MIN_MSIZE, Reply, parse, tag_of};

/// Checks one input.
pub fn check(data: &[u8]) {
    if let Ok((tag, request)) = parse(data) {
        assert_eq!(tag_of(data), Some(tag), "{}", request.name());
    }
    let msize = MIN_MSIZE + u32::try_from(data.len()).unwrap_or(0) % (MAX_MSIZE - MIN_MSIZE);
    let text = String::from_utf8_lossy(data).repeat(3);
    let error = Reply::Error(text).encode(tag_of(data).unwrap_or(0), msize);
    assert!(
        error.len() <= msize as usize,
        "an Rerror of {} bytes over msize {msize}",
        error.len()
    );
}
