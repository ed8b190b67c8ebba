//! The chat without a screen to draw on (`TERM=dumb`): the terminal stays
//! in its own line mode, each line typed is a prompt or a command, and
//! finished blocks are printed as plain text as they come (no colours, no
//! live area, no cursor movement). Ctrl-C (SIGINT) cancels an active run;
//! on an idle prompt, twice, it quits, as does Ctrl-D (end of input).
//! Pickers need a full terminal; their commands say so.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Instant;

use etch_runtime::host::{Output, Sink};
use ratatui_core::text::Line;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::app::{App, Start};
use crate::run::{ChatError, Ended, Outcome, apply, closing};
use crate::slot::{Launch, Slot};

/// Columns blocks are wrapped to: `$COLUMNS`, else 80.
fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c >= 20)
        .unwrap_or(80)
}

/// Prints rows as plain text.
fn print(rows: &[Line<'_>]) {
    let mut out = std::io::stdout().lock();
    for row in rows {
        let mut text = String::new();
        crate::term::ansi::push_line(&mut text, row, usize::MAX, false);
        let _ = writeln!(out, "{}", text.trim_end());
    }
    let _ = out.flush();
}

/// Runs the chat in line mode until end of input, `/quit`, or a signal.
pub async fn run(launch: Launch, start: Start) -> Result<Outcome, ChatError> {
    let (tx, mut outputs) = mpsc::unbounded_channel::<Output>();
    let sink: Sink = Arc::new(move |output| {
        let _ = tx.send(output);
    });
    let mut slot = Slot::new(launch, sink);
    let mut app = App::new(start);
    app.osc52 = false;
    app.line_mode = true;
    let mut sigint = signal(SignalKind::interrupt()).map_err(ChatError::Signals)?;
    let mut sigterm = signal(SignalKind::terminate()).map_err(ChatError::Signals)?;
    let mut sighup = signal(SignalKind::hangup()).map_err(ChatError::Signals)?;
    let (lines_tx, mut lines) = mpsc::unbounded_channel::<Option<String>>();
    let _ = std::thread::Builder::new()
        .name("etch-lines".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                match line {
                    Ok(line) => {
                        if lines_tx.send(Some(line)).is_err() {
                            return;
                        }
                    }
                    Err(_) => break,
                }
            }
            let _ = lines_tx.send(None);
        });
    let width = width();
    let mut armed = false;
    let mut prompted = false;
    let ended = loop {
        print(&app.take_history(width));
        if !app.is_busy() && !prompted {
            print!("› ");
            let _ = std::io::stdout().flush();
            prompted = true;
        }
        let mut effects = Vec::new();
        tokio::select! {
            biased;
            _ = sigterm.recv() => break Ended::Signal("SIGTERM"),
            _ = sighup.recv() => break Ended::Signal("SIGHUP"),
            _ = sigint.recv() => {
                if app.is_busy() {
                    effects = app.interrupt();
                } else if armed {
                    break Ended::Quit;
                } else {
                    armed = true;
                    println!("\n(press Ctrl-C again to quit, or Ctrl-D)");
                    prompted = false;
                }
            }
            line = lines.recv() => match line {
                Some(Some(line)) => {
                    armed = false;
                    prompted = false;
                    effects = app.submit_line(&line, Instant::now());
                    if app.picker_open() {
                        app.close_picker();
                        println!("(choosing from a list needs a full terminal: run etch without TERM=dumb, or give the choice: /resume PREFIX, /model NAME)");
                    }
                }
                Some(None) | None => break Ended::Quit,
            },
            Some(output) = outputs.recv() => {
                app.output(output, Instant::now());
                while let Ok(output) = outputs.try_recv() {
                    app.output(output, Instant::now());
                }
                effects = app.take_released(Instant::now());
                if let Some(why) = slot.broken() {
                    break Ended::Failed(why);
                }
            }
        }
        if apply(&mut slot, &mut app, effects).await {
            break Ended::Quit;
        }
        for _ in app.take_raw() {}
    };
    let unsent = slot.close().await;
    while let Ok(output) = outputs.try_recv() {
        app.output(output, Instant::now());
    }
    let mut last = app.take_history(width);
    last.extend(closing(&app, &unsent));
    println!();
    print(&last);
    Ok(Outcome {
        ended,
        session: app.session().map(str::to_owned),
        unsent,
    })
}
