//! The chat on a real terminal: raw mode, bracketed paste, no mouse
//! capture, a thread reading keys, the host's output, signals and the
//! frame clock, all feeding the [`App`]; frames drawn on the inline
//! [`Screen`]. The terminal is restored on every way out (quit, SIGTERM,
//! SIGHUP, a closed terminal, a panic), and an active run is aborted
//! first so the session log stays valid.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyCode, KeyModifiers};
use etch_runtime::host::{Output, Sink};
use ratatui_core::text::{Line, Span};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::app::{App, Effect, Start};
use crate::render::theme;
use crate::slot::{Launch, Slot};
use crate::term::Screen;

/// The fastest frame rate: a frame at most every this often.
const FRAME: Duration = Duration::from_millis(16);
/// The working line's animation step while a run is active.
const TICK: Duration = Duration::from_millis(80);
/// The longest wait for the terminal's cursor report before frames go on.
const LOCATE_WAIT: Duration = Duration::from_millis(250);

/// Why the chat ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The user quit.
    Quit,
    /// A signal (`SIGTERM`, `SIGHUP`) ended it.
    Signal(&'static str),
    /// The terminal went away.
    TerminalClosed,
    /// The session's host cannot go on (a run's task failed beyond
    /// repair); the message says what happened and how to continue.
    Failed(String),
}

/// How the chat ended, for the caller's exit code and last words.
#[derive(Debug)]
pub struct Outcome {
    /// Why.
    pub ended: Ended,
    /// The session, if one was started.
    pub session: Option<String>,
    /// Queued texts that did not run.
    pub unsent: Vec<String>,
}

/// Errors that stop the chat before it starts.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// The terminal could not be set up.
    #[error("cannot use the terminal: {0}; run etch -p \"…\" for a headless run")]
    Terminal(std::io::Error),
    /// Signal handlers could not be installed.
    #[error("cannot watch for signals: {0}")]
    Signals(std::io::Error),
}

/// What the input thread reports.
enum Input {
    /// A terminal event.
    Event(TermEvent),
    /// Where the cursor (the live area's first row) is, asked of the
    /// terminal right after a resize (`true`) or a Ctrl+L (`false`).
    Located(u16, bool),
    /// The terminal cannot be read any more.
    Closed,
}

/// Restores the terminal when dropped.
struct TerminalGuard;

/// Sequences that set the terminal up: bracketed paste, the cursor hidden
/// until the first frame puts it at the caret, and the kitty keyboard protocol's first level (so Shift+Enter is told
/// apart; terminals without it ignore the request).
const ENTER: &str = "\u{1b}[?2004h\u{1b}[?25l\u{1b}[>1u";
/// Sequences that undo [`ENTER`].
const LEAVE: &str = "\u{1b}[<u\u{1b}[?25h\u{1b}[?2004l";

impl TerminalGuard {
    /// Raw mode on, terminal modes set. A panic of the chat itself
    /// unwinds through the guard, which restores the terminal; a panic in
    /// a run's task is caught by the host (see `Host::broken`), and the
    /// chat then ends with its message.
    fn enter() -> Result<Self, ChatError> {
        crossterm::terminal::enable_raw_mode().map_err(ChatError::Terminal)?;
        let mut out = std::io::stdout();
        let _ = out.write_all(ENTER.as_bytes());
        let _ = out.flush();
        Ok(Self)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal back as it was (best effort: it may be gone).
fn restore() {
    let mut out = std::io::stdout();
    let _ = out.write_all(LEAVE.as_bytes());
    let _ = out.flush();
    let _ = crossterm::terminal::disable_raw_mode();
}

/// Reads terminal events on a thread of its own (crossterm's reader
/// blocks); it ends with the process. When the terminal answers cursor
/// position reports (`locates`), a resize and Ctrl+L are followed by
/// where the cursor now is: asked here, on the thread that reads the
/// terminal, as the answer arrives on the same input (see
/// [`Screen::locate`]). The first question is asked at start, here too,
/// so the chat never waits on a terminal that does not answer (crossterm
/// gives up after two seconds): the first report says whether later
/// ones are worth asking for.
fn spawn_input() -> mpsc::UnboundedReceiver<Input> {
    let (tx, rx) = mpsc::unbounded_channel();
    let _ = std::thread::Builder::new()
        .name("etch-input".into())
        .spawn(move || {
            let locates = match crossterm::cursor::position() {
                Ok((_, row)) => tx.send(Input::Located(row, false)).is_ok(),
                Err(_) => false,
            };
            loop {
                let input = match crossterm::event::read() {
                    Ok(event) => Input::Event(event),
                    Err(_) => Input::Closed,
                };
                let locate = match &input {
                    Input::Event(TermEvent::Resize(..)) => Some(true),
                    Input::Event(TermEvent::Key(key))
                        if key.code == KeyCode::Char('l')
                            && key.modifiers.contains(KeyModifiers::CONTROL) =>
                    {
                        Some(false)
                    }
                    _ => None,
                };
                let closed = matches!(input, Input::Closed);
                if tx.send(input).is_err() || closed {
                    return;
                }
                if let Some(resized) = locate.filter(|_| locates)
                    && let Ok((_, row)) = crossterm::cursor::position()
                    && tx.send(Input::Located(row, resized)).is_err()
                {
                    return;
                }
            }
        });
    rx
}

/// Runs the chat until the user quits, a signal arrives or the terminal
/// closes. `color` is off for `NO_COLOR`.
pub async fn run(launch: Launch, start: Start, color: bool) -> Result<Outcome, ChatError> {
    let (tx, mut outputs) = mpsc::unbounded_channel::<Output>();
    let sink: Sink = Arc::new(move |output| {
        let _ = tx.send(output);
    });
    let mut slot = Slot::new(launch, sink);
    let (late_tx, mut late) = mpsc::unbounded_channel();
    slot.report_late(late_tx);
    let mut app = App::new(start);
    let mut sigterm = signal(SignalKind::terminate()).map_err(ChatError::Signals)?;
    let mut sighup = signal(SignalKind::hangup()).map_err(ChatError::Signals)?;
    crate::render::highlight::defer();
    let guard = TerminalGuard::enter()?;
    let (width, height) = crossterm::terminal::size().unwrap_or((80, 24));
    let mut screen = Screen::new(terminal_out(), width, height, color);
    screen.set_reflows(crate::term::reflows(|key| std::env::var(key).ok()));
    // Where the chat starts on the screen, asked by the input thread; a
    // terminal that does not answer leaves the screen drawing inline, as
    // it always could. Whether it answers is known from its first report.
    let mut locates = false;
    let mut input = spawn_input();
    // While the terminal is asked where the cursor is (at start, after a
    // resize or Ctrl+L), no frame is drawn: one drawn before the answer
    // would move the cursor and make the answer stale. A terminal that
    // stops answering costs at most this wait.
    let mut locating: Option<Instant> = Some(Instant::now() + LOCATE_WAIT);
    let mut last_frame: Option<Instant> = None;
    let mut dirty = true;
    // A key is drawn at once; output (a stream) at most every FRAME.
    let mut urgent = false;
    let ended = loop {
        let now = Instant::now();
        if locating.is_some_and(|until| now >= until) {
            locating = None;
        }
        if dirty
            && locating.is_none()
            && (urgent || last_frame.is_none_or(|t| now.duration_since(t) >= FRAME))
            && draw(&mut app, &mut screen, now, locates)
        {
            if last_frame.is_none() {
                crate::render::highlight::warm();
            }
            last_frame = Some(now);
            dirty = false;
            urgent = false;
        }
        let ticking = app.wants_tick();
        let wake = if let Some(until) = locating {
            until
        } else if dirty {
            last_frame.map_or(now, |t| t + FRAME)
        } else if ticking {
            now + TICK
        } else {
            now + Duration::from_secs(3600)
        };
        let mut effects = Vec::new();
        let mut timer = false;
        tokio::select! {
            biased;
            _ = sigterm.recv() => break Ended::Signal("SIGTERM"),
            _ = sighup.recv() => break Ended::Signal("SIGHUP"),
            event = input.recv() => match event {
                Some(Input::Event(TermEvent::Key(key))) => {
                    urgent = true;
                    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
                    match key.code {
                        KeyCode::Char('o') if ctrl => {
                            let rows = app.expand_last(usize::from(screen.width()));
                            let live = app.live(usize::from(screen.live_width()), usize::from(screen.height()), Instant::now());
                            let _ = screen.frame(&rows, &live, app.caret());
                        }
                        KeyCode::Char('l') if ctrl => {
                            if locates {
                                locating = Some(Instant::now() + LOCATE_WAIT);
                            }
                        }
                        _ => effects = app.key(key, Instant::now()),
                    }
                }
                Some(Input::Event(TermEvent::Paste(text))) => {
                    urgent = true;
                    app.paste(&text);
                }
                Some(Input::Event(TermEvent::Resize(w, h))) => {
                    screen.resize(w, h);
                    app.resized(Instant::now());
                    if locates {
                        locating = Some(Instant::now() + LOCATE_WAIT);
                    }
                }
                // An answer that comes after the wait gave up may be from
                // before frames drawn since: not trusted.
                Some(Input::Located(row, resized)) => {
                    locates = true;
                    if locating.take().is_some() {
                        urgent = true;
                        screen.locate(row, resized);
                    }
                }
                Some(Input::Event(_)) => {}
                Some(Input::Closed) | None => break Ended::TerminalClosed,
            },
            Some(output) = outputs.recv() => {
                app.output(output, Instant::now());
                // Take everything already waiting before drawing.
                while let Ok(output) = outputs.try_recv() {
                    app.output(output, Instant::now());
                }
                // Prompts held behind a command go once the run before
                // them is over.
                effects = app.take_released(Instant::now());
                // A session that failed beyond repair said so last.
                if let Some(why) = slot.broken() {
                    break Ended::Failed(why);
                }
            }
            Some(done) = late.recv() => {
                urgent = true;
                done.apply(&mut app);
            }
            () = tokio::time::sleep_until(wake.into()) => timer = true,
        }
        // The clock only redraws what moves by itself (the spinner, a
        // file list arriving); what it wanted before the wake counts, as
        // the wake may be what ended it.
        if !timer || ticking {
            dirty = true;
        }
        if urgent && !effects.is_empty() && locating.is_none() {
            // The key shows before its effect runs (opening a session on
            // the first prompt takes a moment).
            draw(&mut app, &mut screen, Instant::now(), locates);
        }
        let quit = apply(&mut slot, &mut app, effects).await;
        for raw in app.take_raw() {
            let mut out = std::io::stdout();
            let _ = out.write_all(raw.as_bytes());
            let _ = out.flush();
        }
        if quit {
            break Ended::Quit;
        }
    };
    let unsent = slot.close().await;
    while let Ok(output) = outputs.try_recv() {
        app.output(output, Instant::now());
    }
    let width = usize::from(screen.width());
    let mut last = app.take_history(width);
    last.extend(closing(&app, &unsent));
    let session = app.session().map(str::to_owned);
    // The terminal may be gone (SIGHUP, closed window): nothing to do then.
    let _ = screen.close(&last);
    drop(guard);
    Ok(Outcome {
        ended,
        session,
        unsent,
    })
}

/// Carries out the app's effects; returns whether to quit.
pub(crate) async fn apply(slot: &mut Slot, app: &mut App, effects: Vec<Effect>) -> bool {
    let mut quit = false;
    for effect in effects {
        match effect {
            Effect::Host(command) => slot.command(app, command).await,
            Effect::Slash(command) => slot.slash(app, command, Instant::now()).await,
            Effect::Quit => quit = true,
            Effect::Picked {
                pick,
                value,
                alternate,
            } => {
                slot.picked(app, pick, value, alternate, Instant::now())
                    .await;
            }
        }
    }
    quit
}

/// The closing lines: unsent prompts, the session and how to resume it.
pub(crate) fn closing(app: &App, unsent: &[String]) -> Vec<Line<'static>> {
    let mut last = Vec::new();
    if !unsent.is_empty() {
        last.push(Line::from(Span::styled(
            format!(
                "{} queued prompt(s) did not run: {}",
                unsent.len(),
                unsent.join(" | ")
            ),
            theme::warning(),
        )));
    }
    last.push(Line::default());
    match app.session() {
        Some(id) => {
            last.push(Line::from(format!("session {id}")));
            last.push(Line::from(format!("continue with: etch resume {id}")));
        }
        None => last.push(Line::from("no session was started")),
    }
    last
}

/// The terminal's output without std's line buffering, so a frame goes
/// out in one write (std's stdout would split it at its last newline).
fn terminal_out() -> Box<dyn Write + Send> {
    use std::os::fd::AsFd;
    match std::io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => Box::new(std::fs::File::from(fd)),
        Err(_) => Box::new(std::io::stdout()),
    }
}

/// Draws one frame: new history rows, then the live area; returns whether
/// it drew. The size is asked of the terminal first (one ioctl): a resize
/// event may still be on its way, and a frame drawn for the old, taller
/// size would scroll live rows into the scrollback. When the terminal
/// reports the cursor (`locates`), a changed size draws nothing yet: the
/// resize event and the cursor's new place follow.
fn draw(app: &mut App, screen: &mut Screen, now: Instant, locates: bool) -> bool {
    if let Ok((w, h)) = crossterm::terminal::size()
        && (w, h) != (screen.width(), screen.height())
    {
        if locates {
            return false;
        }
        screen.resize(w, h);
        app.resized(now);
    }
    let width = usize::from(screen.width());
    let history = app.take_history(width);
    let live = app.live(
        usize::from(screen.live_width()),
        usize::from(screen.height()),
        now,
    );
    // A write error means the terminal is gone; the input thread reports
    // that and the loop ends.
    let _ = screen.frame(&history, &live, app.caret());
    true
}
