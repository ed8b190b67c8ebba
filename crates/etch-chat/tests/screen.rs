//! The inline screen against a terminal emulator with a scrollback (the
//! `vt100` crate): after streaming answers, resizes and redraws, every
//! history row is in the scrollback exactly once and in order, the live
//! area is only at the bottom, and the chat never clears the screen or
//! the scrollback (`ESC[2J`, `ESC[3J`).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::fmt::Write as _;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use etch_chat::app::{App, Start};
use etch_chat::term::Screen;
use etch_protocol::{Delta, Event, EventBody, WireMessage, WirePart};
use etch_runtime::host::Output;

/// Bytes written by the screen, shared with the test.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A screen wired to an emulator.
struct Term {
    screen: Screen,
    bytes: Shared,
    parser: vt100::Parser,
    seen: Vec<u8>,
}

impl Term {
    fn new(width: u16, height: u16) -> Self {
        let bytes = Shared::default();
        let mut screen = Screen::new(Box::new(bytes.clone()), width, height, true);
        // The emulator cuts rows on a resize, like xterm.
        screen.set_reflows(false);
        Self {
            screen,
            bytes,
            parser: vt100::Parser::new(height, width, 10_000),
            seen: Vec::new(),
        }
    }

    /// Draws a frame of `app` and feeds the emulator.
    fn frame(&mut self, app: &mut App) {
        let width = usize::from(self.screen.width());
        let history = app.take_history(width);
        let live = app.live(
            usize::from(self.screen.live_width()),
            usize::from(self.screen.height()),
            Instant::now(),
        );
        self.screen.frame(&history, &live, app.caret()).unwrap();
        self.pump();
    }

    fn pump(&mut self) {
        let bytes = std::mem::take(&mut *self.bytes.0.lock().unwrap());
        self.parser.process(&bytes);
        self.seen.extend_from_slice(&bytes);
    }

    /// Resizes like xterm or tmux do: a shorter screen first scrolls the
    /// rows above the cursor into the scrollback so the cursor's row
    /// stays (the `vt100` crate alone would drop the bottom rows), then
    /// rows are cut or kept, never rewrapped.
    fn resize(&mut self, width: u16, height: u16) {
        let (rows, _) = self.parser.screen().size();
        let (row, col) = self.parser.screen().cursor_position();
        if row >= height {
            let push = row + 1 - height;
            let mut keys = format!("\u{1b}[{rows};1H");
            keys.push_str(&"\n".repeat(usize::from(push)));
            let _ = write!(keys, "\u{1b}[{};{}H", row - push + 1, col + 1);
            self.parser.process(keys.as_bytes());
        }
        self.parser.screen_mut().set_size(height, width);
        self.screen.resize(width, height);
    }

    /// Every row, scrollback first.
    fn rows(&mut self) -> Vec<String> {
        let (_, cols) = self.parser.screen().size();
        self.parser.screen_mut().set_scrollback(usize::MAX);
        let back = self.parser.screen().scrollback();
        let mut out = Vec::new();
        for offset in (1..=back).rev() {
            self.parser.screen_mut().set_scrollback(offset);
            out.push(self.parser.screen().rows(0, cols).next().unwrap());
        }
        self.parser.screen_mut().set_scrollback(0);
        out.extend(self.parser.screen().rows(0, cols));
        out
    }
}

fn event(app: &mut App, body: EventBody) {
    app.output(
        Output::Event(Event {
            id: Some("r".into()),
            body,
        }),
        Instant::now(),
    );
}

/// One turn: a prompt, the answer streamed in pieces with a frame after
/// each, then the finished message.
fn turn(app: &mut App, term: &mut Term, n: usize) {
    event(app, EventBody::AgentStart);
    event(
        app,
        EventBody::MessageStart {
            message: Some(WireMessage::User {
                content: vec![WirePart::Text {
                    text: format!("prompt number {n}"),
                }],
            }),
        },
    );
    event(app, EventBody::MessageStart { message: None });
    let answer: String = (0..6).map(|i| format!("answer {n} line {i}\n\n")).collect();
    for piece in answer.as_bytes().chunks(7) {
        event(
            app,
            EventBody::MessageUpdate {
                delta: Delta::TextDelta {
                    delta: String::from_utf8_lossy(piece).into_owned(),
                },
            },
        );
        term.frame(app);
    }
    event(
        app,
        EventBody::MessageEnd {
            message: WireMessage::Assistant {
                content: vec![WirePart::Text { text: answer }],
                stop_reason: None,
                error_message: None,
            },
        },
    );
    event(app, EventBody::AgentEnd { error: None });
    term.frame(app);
}

#[test]
fn history_rows_are_written_once_through_streaming_and_resizes() {
    let mut app = App::new(Start {
        header: vec!["etch header row".into()],
        ..Start::default()
    });
    let mut term = Term::new(80, 12);
    term.frame(&mut app);
    for n in 0..12 {
        turn(&mut app, &mut term, n);
        // Resizes between and during turns: narrower, wider, shorter,
        // taller; the emulator keeps its rows like a non-reflowing
        // terminal.
        let (w, h) = [(60, 10), (100, 16), (80, 8), (80, 12)][n % 4];
        term.resize(w, h);
        term.frame(&mut app);
        // A redraw with nothing new changes no history row.
        term.frame(&mut app);
    }
    let rows = term.rows();
    let text = rows.join("\n");
    for n in 0..12 {
        assert_eq!(
            text.matches(&format!("• prompt number {n}\n")).count(),
            1,
            "prompt {n}:\n{text}"
        );
        for i in 0..6 {
            let row = format!("answer {n} line {i}");
            assert_eq!(
                rows.iter().filter(|r| r.trim_end().ends_with(&row)).count(),
                1,
                "{row}:\n{text}"
            );
        }
    }
    assert_eq!(text.matches("etch header row").count(), 1, "{text}");
    // In order.
    let positions: Vec<usize> = (0..12)
        .map(|n| text.find(&format!("prompt number {n}\n")).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    // The live area is at the bottom: the footer is the last row with text.
    let last = rows.iter().rev().find(|r| !r.trim().is_empty()).unwrap();
    assert!(last.contains("tok"), "{last}");
    let bytes = String::from_utf8_lossy(&term.seen);
    assert!(
        !bytes.contains("\u{1b}[3J"),
        "the scrollback is never cleared"
    );
    assert!(!bytes.contains("\u{1b}[2J"), "the screen is never cleared");
    assert!(
        !bytes.contains("\u{1b}[?1000h") && !bytes.contains("\u{1b}[?1002h"),
        "no mouse capture"
    );
    // Every frame is one synchronized update.
    assert_eq!(
        bytes.matches("\u{1b}[?2026h").count(),
        bytes.matches("\u{1b}[?2026l").count()
    );
}

/// The live area never scrolls into the history, however tall it wants
/// to be (a long draft on a short terminal).
#[test]
fn a_tall_live_area_never_reaches_the_scrollback() {
    let mut app = App::new(Start {
        header: vec!["header".into()],
        ..Start::default()
    });
    let mut term = Term::new(40, 6);
    term.frame(&mut app);
    app.paste("one\ntwo\nthree\nfour\nfive");
    for _ in 0..3 {
        term.frame(&mut app);
    }
    let rows = term.rows();
    let back = rows.len() - 6;
    assert!(
        rows[..back]
            .iter()
            .all(|r| !r.contains("›") && !r.contains("tok")),
        "{rows:#?}"
    );
}
