//! The chat's frame cost, in process (no terminal): the live area built
//! by `App::live` at 100x30 and written by `Screen::frame` into a sink.
//!
//! - `frame`: one idle frame;
//! - `key_to_frame`: one typed character, then its frame (the editor is
//!   cleared with Ctrl-U every 64 characters, as a typed line would be);
//! - `stream`: 512 KB of answer text as `message_update` text deltas of
//!   1 KB each, a frame every 16 deltas (about what the 16 ms frame clock
//!   draws when deltas arrive every millisecond), as throughput.
//!
//! `frame` and `key_to_frame` run twice: on an empty chat, and on one
//! resumed from a 10,000-event session (a JSONL file written here,
//! loaded with `etch_session::load_session`, projected by the runtime and
//! replayed with `etch_chat::replay::replay`, its history drawn once
//! before measuring).
//! The reference is the empty chat: a closing summary, measured
//! interleaved so machine noise hits both alike, prints loaded/empty for
//! both, which must be 1.0 within noise (the cost of a frame is the live
//! area's, never the session's). It also shows an empty chat whose footer
//! carries the loaded session's counters (`empty+counters`), since the
//! footer's longer numbers cost a little per frame whatever the session.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::missing_docs_in_private_items
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use etch_chat::app::{App, Footer, Start};
use etch_chat::replay::replay;
use etch_chat::term::Screen;
use etch_protocol::{Delta, Event, EventBody};
use etch_runtime::host::Output;
use serde_json::json;

/// Terminal size of every frame.
const WIDTH: usize = 100;
/// See [`WIDTH`].
const HEIGHT: usize = 30;

/// Events in the resumed session.
const EVENTS: usize = 10_000;

/// Characters typed before the editor is cleared.
const LINE: u64 = 64;

/// Streamed answer size, and the size of each delta.
const STREAM_BYTES: usize = 512 * 1024;
/// See [`STREAM_BYTES`].
const DELTA_BYTES: usize = 1024;
/// Deltas between two frames while streaming.
const DELTAS_PER_FRAME: usize = 16;

/// Writes the JSONL of a session with `EVENTS` events on one branch, in
/// the mix of etch-session's load bench (prompts, tool calls, usage,
/// metrics, tool results of about 0.2, 1.5 and 4 KB, answers), the answers
/// carrying markdown with a fenced code block as a coding agent's do.
fn session_jsonl() -> String {
    let mut out = String::new();
    let mut parent: Option<String> = None;
    let snippet = "    let value = compute(\"input\", 42)?; // keep the old behaviour\n";
    let results: Vec<String> = [3, 24, 64].iter().map(|n| snippet.repeat(*n)).collect();
    let answer = "The test fails because the **fixture path** is wrong; I fixed it:\n\n\
                  ```rust\nlet path = root.join(\"fixtures\").join(name);\n```\n\n\
                  - `cargo test` passes now\n- nothing else changed";
    for i in 0..EVENTS {
        let id = format!("01K{i:023}");
        let (kind, data) = match i % 6 {
            _ if i == 0 => (
                "session.started",
                json!({"sessionId": "01KBENCH", "formatVersion": 1, "cwd": "/w", "etchVersion": "0.1.0", "provider": "echo", "model": "echo", "openaiApi": null}),
            ),
            0 => (
                "message.user",
                json!({"content": [{"type": "text", "text": format!("please look at file {i} and fix the failing test")}]}),
            ),
            1 if i < EVENTS - 3 => (
                "message.assistant",
                json!({"content": [{"type": "text", "text": "Let me read it."}, {"type": "tool_call", "id": format!("call_{i}"), "name": "read", "arguments": {"path": format!("src/file{i}.rs")}}], "provider": "echo", "model": "echo", "stopReason": "toolUse"}),
            ),
            2 => (
                "model.usage",
                json!({"inputTokens": 1200, "cachedInputTokens": 800, "outputTokens": 40, "reasoningOutputTokens": 0, "totalTokens": 1240}),
            ),
            3 => (
                "model.metrics",
                json!({"transport": "chat-sse", "requests": 1, "requestBytes": 5000, "responseBytes": 900}),
            ),
            4 => (
                "message.tool",
                json!({"toolCallId": format!("call_{}", i - 3), "toolName": "read", "content": [{"type": "text", "text": results[(i / 6) % 3]}], "isError": false}),
            ),
            // The answer (also the last prompt's, so the log ends whole).
            _ => (
                "message.assistant",
                json!({"content": [{"type": "text", "text": answer}], "provider": "echo", "model": "echo", "stopReason": "stop"}),
            ),
        };
        let line = json!({"type": kind, "id": id, "parentId": parent, "time": "2026-12-02T10:00:00.000Z", "data": data});
        out.push_str(&line.to_string());
        out.push('\n');
        parent = Some(id);
    }
    out
}

/// What the chat starts with, as `etch` gives it (header, footer).
fn start() -> Start {
    Start {
        header: vec![
            "etch 0.1.0 · echo · echo".into(),
            "~/src/project · /help for commands · Ctrl-D to quit".into(),
        ],
        footer: Footer {
            provider: "echo".into(),
            model: "echo".into(),
            cwd: "~/src/project".into(),
            auth: String::new(),
            budget: 200_000,
            ..Footer::default()
        },
        cwd: std::env::temp_dir(),
        ..Start::default()
    }
}

/// The start of a chat resumed from a 10,000-event session file.
fn resumed() -> Start {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("01KBENCH.jsonl");
    std::fs::write(&path, session_jsonl()).unwrap();
    let loaded = etch_session::load_session(&path).unwrap();
    assert_eq!(loaded.events.len(), EVENTS);
    assert!(loaded.warnings.is_empty());
    let replay = replay(
        &etch_runtime::projection::replay_in(&loaded, etch_chat::replay::scope(&[])),
        &[],
    );
    let mut start = start();
    start.replay = replay.blocks;
    start.history = replay.history;
    start.footer.counters = replay.counters;
    start.session = Some("01KBENCH".into());
    start.session_file = Some(path);
    start
}

/// An app from `start` with its history drawn, and a screen on a sink.
fn app(start: Start) -> (App, Screen) {
    let mut app = App::new(start);
    let rows = app.take_history(WIDTH);
    assert!(!rows.is_empty());
    assert!(!app.has_pending());
    let screen = Screen::new(
        Box::new(std::io::sink()),
        u16::try_from(WIDTH).unwrap(),
        u16::try_from(HEIGHT).unwrap(),
        true,
    );
    (app, screen)
}

/// One frame of the live area.
fn frame(app: &mut App, screen: &mut Screen, now: Instant) {
    let live = app.live(WIDTH, HEIGHT, now);
    screen.frame(&[], &live, app.caret()).unwrap();
}

/// The `n`th typed character and its frame; every `LINE` characters the
/// line is cleared first.
fn key_to_frame(app: &mut App, screen: &mut Screen, n: u64) {
    let now = Instant::now();
    if n.is_multiple_of(LINE) {
        app.key(
            KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL),
            now,
        );
    }
    let effects = app.key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE), now);
    black_box(effects);
    frame(app, screen, now);
}

/// Measures a frame and a keypress to its frame, on the empty and the
/// resumed chat.
fn bench_frames(c: &mut Criterion) {
    let chats = [("empty", start()), ("loaded_10k_events", resumed())];
    let mut group = c.benchmark_group("frame");
    group.sample_size(50);
    group.measurement_time(Duration::from_secs(3));
    for (name, start) in &chats {
        let (mut app, mut screen) = app(start.clone());
        group.bench_function(*name, |b| {
            b.iter(|| frame(&mut app, &mut screen, Instant::now()));
        });
        black_box(screen.written());
    }
    group.finish();
    let mut group = c.benchmark_group("key_to_frame");
    group.sample_size(50);
    group.measurement_time(Duration::from_secs(3));
    for (name, start) in &chats {
        let (mut app, mut screen) = app(start.clone());
        let mut n = 0;
        group.bench_function(*name, |b| {
            b.iter(|| {
                n += 1;
                key_to_frame(&mut app, &mut screen, n);
            });
        });
    }
    group.finish();
}

/// 1 KB of answer text: prose with inline code, in paragraphs.
fn delta_text(i: usize) -> String {
    let sentence = "The loop reads the next `event` from the channel and hands it to the app, which updates its state. ";
    let mut text = String::with_capacity(DELTA_BYTES);
    while text.len() + sentence.len() < DELTA_BYTES - 2 {
        text.push_str(sentence);
    }
    text.push_str(if i % 3 == 2 { "\n\n" } else { " " });
    while text.len() < DELTA_BYTES {
        text.push('x');
    }
    text
}

/// An app in a run: `agent_start` taken.
fn streaming_app() -> (App, Screen) {
    let (mut app, screen) = app(start());
    app.output(
        Output::Event(Event {
            id: None,
            body: EventBody::AgentStart,
        }),
        Instant::now(),
    );
    assert!(app.is_busy());
    (app, screen)
}

/// Measures 512 KB of streamed deltas with a frame every 16.
fn bench_stream(c: &mut Criterion) {
    let deltas: Vec<String> = (0..STREAM_BYTES / DELTA_BYTES).map(delta_text).collect();
    assert_eq!(deltas.iter().map(String::len).sum::<usize>(), STREAM_BYTES);
    let mut group = c.benchmark_group("stream");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Bytes(STREAM_BYTES as u64));
    group.bench_function("512kb_in_1kb_deltas_frame_every_16", |b| {
        b.iter_batched(
            streaming_app,
            |(mut app, mut screen)| {
                for (i, delta) in deltas.iter().enumerate() {
                    let now = Instant::now();
                    app.output(
                        Output::Event(Event {
                            id: None,
                            body: EventBody::MessageUpdate {
                                delta: Delta::TextDelta {
                                    delta: delta.clone(),
                                },
                            },
                        }),
                        now,
                    );
                    if (i + 1).is_multiple_of(DELTAS_PER_FRAME) {
                        frame(&mut app, &mut screen, now);
                    }
                }
                (app, screen)
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

/// Nanoseconds per call of `f` over `n` calls.
fn per_call(n: u32, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_secs_f64() * 1e9 / f64::from(n)
}

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The reference figures, measured in rounds that take the chats in
/// turn (the first one rotating), so machine noise hits them alike:
/// medians of the rounds and the ratios. Besides the empty chat, an empty
/// one whose footer shows the loaded session's counters: the footer's
/// longer numbers cost a little per frame, which is not the session's
/// size.
fn summary() {
    /// Rounds, and calls per round.
    const ROUNDS: usize = 41;
    /// See [`ROUNDS`].
    const CALLS: u32 = 2_000;
    let loaded_start = resumed();
    let mut same_footer = start();
    same_footer.footer.counters = loaded_start.footer.counters.clone();
    let mut chats = [app(start()), app(same_footer), app(loaded_start)];
    let mut rows = Vec::new();
    for what in ["frame", "key_to_frame"] {
        let mut times: [Vec<f64>; 3] = Default::default();
        let mut typed = [0_u64; 3];
        for round in 0..ROUNDS {
            for k in 0..3 {
                let i = (round + k) % 3;
                let (app, screen) = &mut chats[i];
                let n = &mut typed[i];
                times[i].push(per_call(CALLS, || {
                    *n += 1;
                    if what == "frame" {
                        frame(app, screen, Instant::now());
                    } else {
                        key_to_frame(app, screen, *n);
                    }
                }));
            }
        }
        let [empty, same, loaded] = times.map(median);
        rows.push(format!(
            "{what:<13} {:>8.2} {:>15.2} {:>10.2} {:>14.3} {:>17.3}",
            empty / 1000.0,
            same / 1000.0,
            loaded / 1000.0,
            loaded / empty,
            loaded / same,
        ));
    }
    println!(
        "\nsummary: median of {ROUNDS} interleaved rounds x {CALLS} calls, µs per call; \
         reference: the empty chat (target: loaded/empty 1.0 within noise)"
    );
    println!(
        "  {:<13} {:>8} {:>15} {:>10} {:>14} {:>17}",
        "", "empty", "empty+counters", "loaded", "loaded/empty", "loaded/e+counters"
    );
    for row in rows {
        println!("  {row}");
    }
}

criterion_group!(benches, bench_frames, bench_stream);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // Only when measuring (`cargo bench`), not in test mode.
    if std::env::args().any(|a| a == "--bench") {
        summary();
    }
}
