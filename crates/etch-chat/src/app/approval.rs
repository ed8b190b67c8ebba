//! Calls waiting for the user's approval (`approval_request` events):
//! the oldest is shown above the editor with what it would do (the
//! command, the edit as removed and added lines, the file a write
//! replaces) and why it asks, and the keys answer it: `y` allows it
//! once, `a` allows such calls for the rest of the session, `n` asks for
//! a reason and denies (the reason goes to the model), Esc denies
//! without one, `o` writes the whole call into the history. Ctrl-C
//! still stops the run.
//!
//! What is shown is what would run: the call's text comes from the model,
//! so every control character and escape in it is shown as an escape
//! (`\e`, `\u{202e}`), never acted on or dropped, and long lines wrap
//! instead of being cut. A call too long for the screen can only be
//! allowed once it was written out whole (`o`). Keys do nothing for a
//! moment after a question appears, so that typing meant for the editor
//! does not answer it.
//!
//! This module must not know how the answer is carried out: it sends an
//! `approve` command to the host.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyModifiers};
use etch_protocol::{ApprovalDecision, CommandBody};
use etch_sanitize::visible;
use ratatui_core::style::Style;
use ratatui_core::text::{Line, Span};
use serde_json::Value;

use super::keys::Key;
use super::{App, Effect, Purpose};
use crate::render::blocks::{Block, Level};
use crate::render::theme;
use crate::render::wrap::{truncate, wrap};
use crate::term::sanitize;

/// How long after a question appears its keys do nothing.
pub(crate) const ARMING: Duration = Duration::from_millis(500);

/// One call waiting for an answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Question {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// Why it asks.
    pub reason: String,
}

impl Question {
    /// Whether it asks to run a command outside the sandbox.
    fn bypass(&self) -> bool {
        self.tool == "bash" && self.args["bypass_sandbox"].as_bool() == Some(true)
    }
}

/// The questions, and how the oldest is being answered.
#[derive(Debug, Default)]
pub(crate) struct Approvals {
    /// Waiting calls, oldest first.
    pub queue: VecDeque<Question>,
    /// The reason typed after `n`, while it is typed.
    pub denying: Option<String>,
    /// When the oldest question appeared (its keys work after
    /// [`ARMING`]).
    pub since: Option<Instant>,
    /// Whether the oldest question fit the screen when last drawn.
    pub fits: bool,
    /// Whether the oldest question was written out whole (`o`).
    pub seen_whole: bool,
}

impl Approvals {
    /// The next question comes to the front at `now`.
    fn next(&mut self, now: Instant) {
        self.denying = None;
        self.seen_whole = false;
        self.fits = false;
        self.since = (!self.queue.is_empty()).then_some(now);
    }

    /// Whether the front question's keys work at `now`.
    fn armed(&self, now: Instant) -> bool {
        self.since
            .is_some_and(|since| now.saturating_duration_since(since) >= ARMING)
    }
}

impl App {
    /// A call asks for approval at `now`.
    pub(crate) fn approval_request(&mut self, question: Question, now: Instant) {
        if self
            .approvals
            .queue
            .iter()
            .any(|q| q.call_id == question.call_id)
        {
            return;
        }
        self.approvals.queue.push_back(question);
        if self.approvals.queue.len() == 1 {
            self.approvals.next(now);
        }
    }

    /// The call `call_id` stopped waiting (it ended), or every call did
    /// (`None`: the run ended).
    pub(crate) fn approval_gone(&mut self, call_id: Option<&str>, now: Instant) {
        let Some(id) = call_id else {
            self.approvals = Approvals::default();
            return;
        };
        let front = self.approvals.queue.front().map(|q| q.call_id == id);
        self.approvals.queue.retain(|q| q.call_id != id);
        if front == Some(true) {
            self.approvals.next(now);
        }
    }

    /// Whether a call waits for the user's answer.
    pub fn asking(&self) -> bool {
        !self.approvals.queue.is_empty()
    }

    /// A key at `now` while a call waits for an answer; `None` when the
    /// key is not the question's (Ctrl-C, which stops the run).
    pub(crate) fn approval_key(&mut self, key: Key, now: Instant) -> Option<Vec<Effect>> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return None;
        }
        if !self.approvals.armed(now) {
            return Some(Vec::new());
        }
        if let Some(reason) = &mut self.approvals.denying {
            match key.code {
                KeyCode::Enter => {
                    let reason = std::mem::take(reason);
                    return Some(self.answer(ApprovalDecision::Deny, Some(reason), now));
                }
                KeyCode::Esc => self.approvals.denying = None,
                KeyCode::Backspace => {
                    reason.pop();
                }
                KeyCode::Char(c) if !ctrl => reason.push(c),
                _ => {}
            }
            return Some(Vec::new());
        }
        let shown = self.approvals.fits || self.approvals.seen_whole;
        let decision = match key.code {
            KeyCode::Char('y' | 'Y') if shown => ApprovalDecision::Allow,
            KeyCode::Char('a' | 'A') if shown => ApprovalDecision::AllowForSession,
            KeyCode::Char('o' | 'O') => {
                self.show_whole();
                return Some(Vec::new());
            }
            KeyCode::Char('n' | 'N') => {
                self.approvals.denying = Some(String::new());
                return Some(Vec::new());
            }
            KeyCode::Esc => ApprovalDecision::Deny,
            _ => return Some(Vec::new()),
        };
        Some(self.answer(decision, None, now))
    }

    /// Writes the oldest question whole into the history.
    fn show_whole(&mut self) {
        let Some(question) = self.approvals.queue.front() else {
            return;
        };
        let mut text = format!(
            "{} asks for approval ({}):",
            visible(&question.tool),
            question.reason
        );
        for (line, _) in what_it_does(question) {
            text.push('\n');
            text.push_str(&line);
        }
        self.approvals.seen_whole = true;
        self.push(Block::Notice(Level::Warning, text));
    }

    /// Answers the oldest question at `now`.
    fn answer(
        &mut self,
        decision: ApprovalDecision,
        reason: Option<String>,
        now: Instant,
    ) -> Vec<Effect> {
        let Some(question) = self.approvals.queue.pop_front() else {
            return Vec::new();
        };
        self.approvals.next(now);
        let reason = reason.filter(|r| !r.trim().is_empty());
        let said = match (decision, &reason) {
            (ApprovalDecision::Allow, _) => "allowed once".to_owned(),
            (ApprovalDecision::AllowForSession, _) if question.bypass() => {
                "allowed outside the sandbox for this session".to_owned()
            }
            (ApprovalDecision::AllowForSession, _) => "allowed for this session".to_owned(),
            (ApprovalDecision::Deny, Some(reason)) => format!("denied: {reason}"),
            (ApprovalDecision::Deny, None) => "denied".to_owned(),
        };
        self.notice(
            Level::Info,
            sanitize(&format!("{} {}", question.tool, said)).into_owned(),
        );
        vec![self.command(
            CommandBody::Approve {
                tool_call_id: question.call_id,
                decision,
                reason,
            },
            // Its success was said above; a failure is shown.
            Purpose::Other(String::new()),
        )]
    }

    /// The rows of the oldest question at `now`, top first, at most
    /// `max`; notes whether the whole call fits.
    pub(crate) fn approval_rows(
        &mut self,
        width: usize,
        max: usize,
        now: Instant,
    ) -> Vec<Line<'static>> {
        let Some(question) = self.approvals.queue.front() else {
            return Vec::new();
        };
        let width = width.max(1);
        let more = match self.approvals.queue.len() - 1 {
            0 => String::new(),
            n => format!(" (+{n} waiting)"),
        };
        let header = Line::from(Span::styled(
            truncate(
                &format!(
                    "▲ {} asks for approval: {}{more}",
                    visible(&question.tool),
                    sanitize(&question.reason)
                ),
                width,
            ),
            theme::warning(),
        ));
        let mut body: Vec<Line<'static>> = Vec::new();
        for (text, style) in what_it_does(question) {
            for row in wrap(&[Span::styled(format!("  {text}"), style)], width) {
                body.push(Line::from(row));
            }
        }
        let room = max.saturating_sub(2);
        let fits = body.len() <= room;
        if !fits {
            let hidden = body.len() - room.saturating_sub(1);
            body.truncate(room.saturating_sub(1));
            body.push(Line::from(Span::styled(
                truncate(
                    &format!("  … {hidden} more rows: press o to see the whole call"),
                    width,
                ),
                theme::muted(),
            )));
        }
        self.approvals.fits = fits;
        let shown = fits || self.approvals.seen_whole;
        let keys = match &self.approvals.denying {
            _ if !self.approvals.armed(now) => Line::from(Span::styled(
                "  (read the call: its keys work in a moment)",
                theme::muted(),
            )),
            Some(reason) => Line::from(vec![
                Span::styled("  reason (Enter denies, Esc goes back): ", theme::muted()),
                Span::raw(sanitize(reason).into_owned()),
                Span::styled(" ", theme::caret()),
            ]),
            None if !shown => Line::from(Span::styled(
                truncate(
                    "  [o] show the whole call  [n] deny with a reason  [Esc] deny",
                    width,
                ),
                theme::strong(),
            )),
            None => {
                let session = if question.bypass() {
                    "[a] allow commands outside the sandbox for this session"
                } else {
                    "[a] allow for this session"
                };
                Line::from(Span::styled(
                    truncate(
                        &format!("  [y] allow once  {session}  [n] deny with a reason  [Esc] deny"),
                        width,
                    ),
                    theme::strong(),
                ))
            }
        };
        let mut rows = vec![header];
        rows.extend(body);
        rows.push(keys);
        rows.truncate(max.max(1));
        rows
    }
}

/// What the call would do, as lines with every control shown as an
/// escape: the command, the edit, the file written, or the arguments.
fn what_it_does(question: &Question) -> Vec<(String, Style)> {
    let args = &question.args;
    let text = |key: &str| args[key].as_str().unwrap_or_default().to_owned();
    let mut lines = Vec::new();
    let block = |lines: &mut Vec<(String, Style)>, prefix: &str, body: &str, style| {
        for line in body.split('\n') {
            lines.push((format!("{prefix}{}", visible(line)), style));
        }
    };
    match question.tool.as_str() {
        "bash" => {
            block(&mut lines, "$ ", &text("command"), theme::code());
            let why = text("justification");
            if !why.is_empty() {
                block(&mut lines, "justification: ", &why, theme::muted());
            }
            if args["background"].as_bool() == Some(true) {
                lines.push(("(in the background)".to_owned(), theme::muted()));
            }
        }
        "edit" => {
            lines.push((format!("edit {}", visible(&text("path"))), theme::strong()));
            let pairs: Vec<(String, String)> = match args["edits"].as_array() {
                Some(edits) => edits
                    .iter()
                    .map(|e| {
                        (
                            e["oldText"].as_str().unwrap_or_default().to_owned(),
                            e["newText"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect(),
                None => vec![(text("oldText"), text("newText"))],
            };
            for (old, new) in pairs {
                block(&mut lines, "- ", &old, theme::removed());
                block(&mut lines, "+ ", &new, theme::added());
            }
        }
        "write" => {
            let content = text("content");
            lines.push((
                format!(
                    "write {} ({} lines)",
                    visible(&text("path")),
                    content.lines().count()
                ),
                theme::strong(),
            ));
            block(&mut lines, "+ ", &content, theme::added());
        }
        _ => {
            let shown = serde_json::to_string(args).unwrap_or_default();
            block(&mut lines, "", &shown, theme::code());
        }
    }
    lines
}
