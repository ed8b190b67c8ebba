//! The live area under the history, rebuilt every frame: a preview of
//! the answer streaming in, the tools running, the working line with its
//! label and elapsed time (E-TERM-03, E-TERM-09 in docs/requirements.md),
//! prompts queued for the run, completion choices, the editor, a passing
//! hint and the footer. Its cost is bounded by the screen, never by the
//! session: the preview wraps only the tail of the streaming text.

use std::fmt::Write as _;
use std::time::Instant;

use ratatui_core::text::{Line, Span};

use super::keys::Popup;
use super::{App, Label, LiveCall, Run};
use crate::render::theme;
use crate::render::tools::summary;
use crate::render::wrap::{paragraphs, prefixed, truncate};
use crate::term::sanitize;

/// What leads every preview row: unlike the dot of a finished block, so
/// a preview row a terminal reflow strands in the scrollback (a resize
/// racing a frame) never passes for part of the answer.
pub const PREVIEW_LEAD: &str = "┊ ";

/// Bytes of streaming text wrapped for the preview.
const PREVIEW_TAIL: usize = 4096;

/// How long after a resize the live area leaves the preview out.
const RESIZE_QUIET: std::time::Duration = std::time::Duration::from_millis(300);

/// Spinner frames of the working line.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

impl App {
    /// The terminal changed size at `now`.
    pub fn resized(&mut self, now: Instant) {
        self.resized = Some(now);
    }

    /// The live area at `width` x `height`, for the moment `now`.
    pub fn live(&mut self, width: usize, height: usize, now: Instant) -> Vec<Line<'static>> {
        let width = width.max(1);
        let height = height.max(1);
        self.poll_files();
        if self.hint.as_ref().is_some_and(|(_, until)| *until <= now) {
            self.hint = None;
        }
        let mut bottom: Vec<Line<'static>> = Vec::new();
        // From the bottom up, most important first.
        bottom.push(self.footer.render(width));
        if let Some((hint, _)) = &self.hint {
            bottom.push(Line::from(Span::styled(
                truncate(hint, width),
                theme::warning(),
            )));
        }
        let editor_rows = (height / 2).max(1);
        let (mut editor, (caret_row, caret_col)) = self.editor.render(width, editor_rows);
        // Counted from the bottom, like `bottom` is built.
        let caret_up = bottom.len() + editor.len() - 1 - caret_row;
        editor.reverse();
        bottom.extend(editor);
        if height >= 6 {
            bottom.push(Line::from(Span::styled("─".repeat(width), theme::muted())));
        }
        if self.asking() {
            let mut rows = self.approval_rows(width, height.saturating_sub(bottom.len() + 1), now);
            rows.reverse();
            bottom.extend(rows);
        } else if let Some(picker) = &self.picker {
            let mut rows = picker.render(width, height.saturating_sub(bottom.len() + 1));
            rows.reverse();
            bottom.extend(rows);
        } else if let Some(popup) = &self.popup {
            let mut rows = self.popup_rows(popup, width);
            rows.reverse();
            bottom.extend(rows);
        }
        // A row per background process (the newest three).
        for process in self.processes.iter().rev().take(3) {
            let line = format!(
                "⚙ {} · {}s · {}",
                process.id,
                now.saturating_duration_since(process.started).as_secs(),
                process.command.replace('\n', " ")
            );
            bottom.push(Line::from(Span::styled(
                truncate(&sanitize(&line), width),
                theme::muted(),
            )));
        }
        if self.processes.len() > 3 {
            bottom.push(Line::from(Span::styled(
                format!(
                    "⚙ {} more background processes (/ps)",
                    self.processes.len() - 3
                ),
                theme::muted(),
            )));
        }
        let held = self.held.iter().map(|t| ("↳ after the command: ", t));
        let queued = self.queued.iter().map(|t| ("↳ queued: ", t));
        for (lead, text) in held.rev().chain(queued.rev()).take(3) {
            let line = format!("{lead}{}", text.replace('\n', " "));
            bottom.push(Line::from(Span::styled(
                truncate(&sanitize(&line), width),
                theme::muted(),
            )));
        }
        if let Some(run) = &self.run {
            bottom.push(working_line(run, now, width));
            let mut tools = tool_rows(run, now, width);
            tools.reverse();
            bottom.extend(tools);
            // While the terminal is being resized the preview is left out:
            // a reflow that lands in the middle of a frame can strand the
            // live area's top rows in the scrollback, and those must never
            // be a copy of the answer. A blank row above the preview
            // serves the same end at other times.
            let resizing = self
                .resized
                .is_some_and(|at| now.saturating_duration_since(at) < RESIZE_QUIET);
            let room = height.saturating_sub(bottom.len() + 1).min(height / 3);
            if room > 0 && !resizing {
                let mut rows = preview_rows(run, room, width);
                if !rows.is_empty() {
                    rows.reverse();
                    bottom.extend(rows);
                    bottom.push(Line::default());
                }
            }
        }
        bottom.truncate(height);
        self.caret = (caret_up < bottom.len()).then(|| (bottom.len() - 1 - caret_up, caret_col));
        bottom.reverse();
        bottom
    }

    /// The completion popup's rows, top first: a window of choices around
    /// the selected one.
    fn popup_rows(&self, popup: &Popup, width: usize) -> Vec<Line<'static>> {
        let first = popup
            .selected
            .saturating_sub(crate::complete::MAX_CHOICES - 1);
        let mut rows: Vec<Line<'static>> = popup
            .items
            .iter()
            .enumerate()
            .skip(first)
            .take(crate::complete::MAX_CHOICES)
            .map(|(i, item)| {
                let style = if i == popup.selected {
                    theme::caret()
                } else {
                    theme::muted()
                };
                Line::from(Span::styled(truncate(&format!("  {item}"), width), style))
            })
            .collect();
        if rows.is_empty() {
            let text = if self.files_loading() {
                "  (listing the project's files…)"
            } else {
                "  (no match)"
            };
            rows.push(Line::from(Span::styled(text, theme::muted())));
        }
        rows
    }

    /// Where the editor's caret was in the last [`Self::live`] rows (row,
    /// display column), if shown: the terminal's cursor goes there.
    pub fn caret(&self) -> Option<(usize, usize)> {
        self.caret
    }
}

/// The last `max` bytes of `text`, starting at a line (or at least a
/// character) boundary.
fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = &text[start..];
    cut.find('\n').map_or(cut, |i| &cut[i + 1..])
}

/// The working line of `run`: spinner, what it does, for how long, the
/// children at work.
fn working_line(run: &Run, now: Instant, width: usize) -> Line<'static> {
    let elapsed = now.saturating_duration_since(run.started);
    let frame = SPINNER[(elapsed.as_millis() / 80) as usize % SPINNER.len()];
    let label = match &run.label {
        Label::Working => "Working".to_owned(),
        Label::Thinking(Some(title)) => title.clone(),
        Label::Thinking(None) => "Thinking".to_owned(),
        Label::Responding => "Responding".to_owned(),
        Label::RunningTools => "Running tools".to_owned(),
        Label::Command(name) => format!("Running {name}"),
    };
    // A quiet count of the children at work (E-SUB-14); each has
    // its own row below with what it is doing.
    let children = run.tools.iter().filter(|c| c.is_running_child()).count();
    let children = match children {
        0 => String::new(),
        1 => " · 1 subagent (ctrl+t)".to_owned(),
        n => format!(" · {n} subagents (ctrl+t)"),
    };
    let text = format!(
        "{frame} {label} · {}s{children} · esc to interrupt",
        elapsed.as_secs()
    );
    Line::from(Span::styled(truncate(&text, width), theme::strong()))
}

/// The rows of `run`'s tool calls (at most six), top first.
fn tool_rows(run: &Run, now: Instant, width: usize) -> Vec<Line<'static>> {
    let mut tools: Vec<Line<'static>> = Vec::new();
    for call in run.tools.iter().take(6) {
        let LiveCall {
            view,
            started,
            partial,
            updated,
        } = call;
        let (mark, style) = match (&view.result, started) {
            (Some(_), _) if view.is_error => ("✗ ", theme::error()),
            (Some(_), _) => ("✓ ", theme::ok()),
            (None, Some(_)) => ("⋯ ", theme::warning()),
            (None, None) => ("· ", theme::muted()),
        };
        let mut row = summary(&view.name, &view.args);
        if let (None, Some(started)) = (&view.result, started) {
            let _ = write!(
                row,
                " ({}s)",
                now.saturating_duration_since(*started).as_secs()
            );
            // A subagent's row also says how long it has been
            // quiet, so a stuck child stands out (E-SUB-14).
            if call.is_running_child()
                && let Some(at) = updated
            {
                let _ = write!(
                    row,
                    " · last event {}s ago",
                    now.saturating_duration_since(*at).as_secs()
                );
            }
        }
        if !partial.is_empty() && view.result.is_none() {
            row.push_str(" — ");
            row.push_str(&sanitize(partial));
        }
        tools.push(Line::from(vec![
            Span::styled(format!("  {mark}"), style),
            Span::raw(truncate(&row, width.saturating_sub(4))),
        ]));
    }
    tools
}

/// The last `room` rows of what `run` streams and the history does not
/// hold yet, top first (reasoning while no answer text came).
fn preview_rows(run: &Run, room: usize, width: usize) -> Vec<Line<'static>> {
    // Only what is not yet in the history.
    let streaming = &run.text[run.committed..];
    let (text, style) = if run.text.trim().is_empty() {
        (run.reasoning.as_str(), theme::reasoning())
    } else {
        (streaming, ratatui_core::style::Style::new())
    };
    if text.trim().is_empty() {
        return Vec::new();
    }
    let tail = tail(text, PREVIEW_TAIL);
    let rows = prefixed(
        &paragraphs(sanitize(tail.trim_end()).as_ref(), style),
        &Span::styled(PREVIEW_LEAD, theme::muted()),
        &Span::styled(PREVIEW_LEAD, theme::muted()),
        width,
    );
    let skip = rows.len().saturating_sub(room);
    rows.into_iter().skip(skip).collect()
}
