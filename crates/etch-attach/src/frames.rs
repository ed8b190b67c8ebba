//! Server-sent events read frame by frame from a body that arrives in
//! chunks of any size: a frame ends at a blank line; `event:`, `id:` and
//! `data:` lines are kept, comments and `retry:` skipped.

/// One frame.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Frame {
    /// `event:`.
    pub event: Option<String>,
    /// `id:`.
    pub id: Option<String>,
    /// The `data:` lines joined by newlines.
    pub data: String,
}

/// Bytes read and not yet framed.
#[derive(Debug, Default)]
pub struct Framer {
    /// What came after the last whole frame.
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no frame end (a large
    /// frame arriving in many chunks is scanned once, not per chunk).
    scanned: usize,
}

impl Framer {
    /// Takes `chunk`; the frames it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Frame> {
        self.buffer.extend_from_slice(chunk);
        let mut frames = Vec::new();
        loop {
            let from = self.scanned.saturating_sub(1);
            let Some(at) = self.buffer[from..].windows(2).position(|w| w == b"\n\n") else {
                self.scanned = self.buffer.len();
                break;
            };
            let end = from + at;
            self.scanned = 0;
            let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&block);
            let mut frame = Frame::default();
            let mut data = Vec::new();
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    frame.event = Some(v.trim_start().to_owned());
                } else if let Some(v) = line.strip_prefix("id:") {
                    frame.id = Some(v.trim_start().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
                }
            }
            if !data.is_empty() {
                frame.data = data.join("\n");
                frames.push(frame);
            }
        }
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_across_chunks_come_out_whole() {
        let mut reader = Framer::default();
        assert!(
            reader
                .push(b"retry: 1000\n\n: keep-alive\n\nid: A1\nevent: en")
                .is_empty()
        );
        let got = reader.push(b"try\ndata: {\"a\":1}\n\nevent: live\ndata: x\ndata: y\n\n");
        assert_eq!(
            got,
            vec![
                Frame {
                    event: Some("entry".into()),
                    id: Some("A1".into()),
                    data: "{\"a\":1}".into()
                },
                Frame {
                    event: Some("live".into()),
                    id: None,
                    data: "x\ny".into()
                },
            ]
        );
    }
}
