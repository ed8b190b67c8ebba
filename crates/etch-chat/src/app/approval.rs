//! Calls waiting for the user's approval (`approval_request` events):
//! the oldest is shown above the editor with what it would do (the
//! command, the edit as removed and added lines, the file a write
//! replaces) and why it asks, and the keys answer it: `y` or Enter allow
//! it once, `a` allows such calls for the rest of the session, `n` asks
//! for a reason and denies (the reason goes to the model), Esc denies
//! without one. Ctrl-C still stops the run. Everything shown came from
//! the model and is sanitized before it reaches the terminal.
//!
//! This module must not know how the answer is carried out: it sends an
//! `approve` command to the host.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyModifiers};
use etch_protocol::{ApprovalDecision, CommandBody};
use ratatui_core::style::Style;
use ratatui_core::text::{Line, Span};
use serde_json::Value;

use super::keys::Key;
use super::{App, Effect, Purpose};
use crate::render::blocks::Level;
use crate::render::theme;
use crate::render::wrap::truncate;
use crate::term::sanitize;

/// Lines of a command, an edit or a write shown at most.
const MAX_LINES: usize = 8;

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

/// The questions, and the denial reason being typed.
#[derive(Debug, Default)]
pub(crate) struct Approvals {
    /// Waiting calls, oldest first.
    pub queue: VecDeque<Question>,
    /// The reason typed after `n`, while it is typed.
    pub denying: Option<String>,
}

impl App {
    /// A call asks for approval.
    pub(crate) fn approval_request(&mut self, question: Question) {
        if !self
            .approvals
            .queue
            .iter()
            .any(|q| q.call_id == question.call_id)
        {
            self.approvals.queue.push_back(question);
        }
    }

    /// The call `call_id` stopped waiting (it ended, or the run did).
    pub(crate) fn approval_gone(&mut self, call_id: Option<&str>) {
        match call_id {
            Some(id) => {
                let first = self.approvals.queue.front().map(|q| q.call_id.clone());
                self.approvals.queue.retain(|q| q.call_id != id);
                if first.as_deref() == Some(id) {
                    self.approvals.denying = None;
                }
            }
            None => self.approvals = Approvals::default(),
        }
    }

    /// Whether a call waits for the user's answer.
    pub fn asking(&self) -> bool {
        !self.approvals.queue.is_empty()
    }

    /// A key while a call waits for an answer; `None` when the key is
    /// not the question's (Ctrl-C, which stops the run).
    pub(crate) fn approval_key(&mut self, key: Key) -> Option<Vec<Effect>> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return None;
        }
        if let Some(reason) = &mut self.approvals.denying {
            match key.code {
                KeyCode::Enter => {
                    let reason = std::mem::take(reason);
                    self.approvals.denying = None;
                    return Some(self.answer(ApprovalDecision::Deny, Some(reason)));
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
        let decision = match key.code {
            KeyCode::Char('y' | 'Y') | KeyCode::Enter => ApprovalDecision::Allow,
            KeyCode::Char('a' | 'A') => ApprovalDecision::AllowForSession,
            KeyCode::Char('n' | 'N') => {
                self.approvals.denying = Some(String::new());
                return Some(Vec::new());
            }
            KeyCode::Esc => ApprovalDecision::Deny,
            _ => return Some(Vec::new()),
        };
        Some(self.answer(decision, None))
    }

    /// Answers the oldest question.
    fn answer(&mut self, decision: ApprovalDecision, reason: Option<String>) -> Vec<Effect> {
        let Some(question) = self.approvals.queue.pop_front() else {
            return Vec::new();
        };
        let reason = reason.filter(|r| !r.trim().is_empty());
        let said = match (decision, &reason) {
            (ApprovalDecision::Allow, _) => "allowed once".to_owned(),
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

    /// The rows of the oldest question, top first, at most `max`.
    pub(crate) fn approval_rows(&self, width: usize, max: usize) -> Vec<Line<'static>> {
        let Some(question) = self.approvals.queue.front() else {
            return Vec::new();
        };
        let more = match self.approvals.queue.len() - 1 {
            0 => String::new(),
            n => format!(" (+{n} waiting)"),
        };
        let mut rows = vec![Line::from(Span::styled(
            truncate(
                &sanitize(&format!(
                    "▲ {} asks for approval: {}{more}",
                    question.tool, question.reason
                )),
                width,
            ),
            theme::warning(),
        ))];
        for (text, style) in what_it_does(question) {
            rows.push(Line::from(Span::styled(
                truncate(&format!("  {}", sanitize(&text)), width),
                style,
            )));
        }
        let keys = match &self.approvals.denying {
            Some(reason) => Line::from(vec![
                Span::styled("  reason (Enter denies, Esc goes back): ", theme::muted()),
                Span::raw(sanitize(reason).into_owned()),
                Span::styled(" ", theme::caret()),
            ]),
            None => Line::from(Span::styled(
                truncate(
                    "  [y] allow once  [a] allow for this session  [n] deny with a reason  [Esc] deny",
                    width,
                ),
                theme::strong(),
            )),
        };
        rows.push(keys);
        if rows.len() > max {
            // The keys stay; the description is cut.
            let keys = rows.pop();
            rows.truncate(max.saturating_sub(1));
            rows.extend(keys);
        }
        rows
    }
}

/// What the call would do, as styled lines: the command, the edit, the
/// file written, or the arguments.
fn what_it_does(question: &Question) -> Vec<(String, Style)> {
    let args = &question.args;
    let text = |key: &str| args[key].as_str().unwrap_or_default().to_owned();
    let mut lines = Vec::new();
    let block = |lines: &mut Vec<(String, Style)>, prefix: &str, body: &str, style| {
        let all: Vec<&str> = body.lines().collect();
        for line in all.iter().take(MAX_LINES) {
            lines.push((format!("{prefix}{line}"), style));
        }
        if all.len() > MAX_LINES {
            lines.push((
                format!("{prefix}… {} more lines", all.len() - MAX_LINES),
                theme::muted(),
            ));
        }
    };
    match question.tool.as_str() {
        "bash" => {
            block(&mut lines, "$ ", &text("command"), theme::code());
            let why = text("justification");
            if !why.is_empty() {
                block(&mut lines, "justification: ", &why, theme::muted());
            }
        }
        "edit" => {
            lines.push((format!("edit {}", text("path")), theme::strong()));
            if let Some(edits) = args["edits"].as_array() {
                for edit in edits.iter().take(3) {
                    block(
                        &mut lines,
                        "- ",
                        edit["oldText"].as_str().unwrap_or_default(),
                        theme::removed(),
                    );
                    block(
                        &mut lines,
                        "+ ",
                        edit["newText"].as_str().unwrap_or_default(),
                        theme::added(),
                    );
                }
            } else {
                block(&mut lines, "- ", &text("oldText"), theme::removed());
                block(&mut lines, "+ ", &text("newText"), theme::added());
            }
        }
        "write" => {
            let content = text("content");
            lines.push((
                format!("write {} ({} lines)", text("path"), content.lines().count()),
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
