//! The host's events, turned into blocks, live state and counters (its
//! answers to commands are `responses`'). Every event the chat shows
//! something for is handled here; the rest (turn starts, tool-call
//! argument deltas) only move the working line.

use std::fmt::Write as _;
use std::time::Instant;

use etch_protocol::{
    CompactionOutcome, Delta, EventBody, NoticeLevel, StopReason, WireMessage, WirePart,
};
use etch_runtime::host::Output;
use serde_json::Value;

use super::{App, Label, LiveCall, Purpose, Run};
use crate::render::blocks::{Block, Level};
use crate::render::tools::ToolView;

impl App {
    /// Takes one response or event from the host.
    pub fn output(&mut self, output: Output, now: Instant) {
        match output {
            Output::Response(response) => self.response(&response),
            Output::Event(event) => self.event(event.id, event.body, now),
            // The loop ends on it and says why (`Slot::broken`).
            Output::Broken(_) => {}
        }
    }

    /// One event.
    fn event(&mut self, id: Option<String>, body: EventBody, now: Instant) {
        match body {
            EventBody::AgentStart => self.agent_start(id, now),
            EventBody::TurnStart { .. } => self.label(Label::Working),
            EventBody::MessageStart { message } => self.message_start(message),
            EventBody::MessageUpdate { delta } => self.message_update(delta),
            EventBody::MessageEnd { message } => self.message_end(message),
            EventBody::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => self.tool_start(tool_call_id, tool_name, args, now),
            EventBody::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
            } => self.tool_update(&tool_call_id, &partial_result, now),
            EventBody::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                duration_ms,
                details,
            } => {
                self.approval_gone(Some(&tool_call_id), now);
                self.tool_end(&tool_call_id, result, is_error, duration_ms, details);
            }
            EventBody::ApprovalRequest {
                tool_call_id,
                tool_name,
                args,
                reason,
            } => self.approval_request(
                super::approval::Question {
                    call_id: tool_call_id,
                    tool: tool_name,
                    args,
                    reason,
                },
                now,
            ),
            EventBody::ProcessStarted {
                process_id,
                command,
                ..
            } => self.processes.push(super::Process {
                id: process_id,
                command,
                started: now,
            }),
            EventBody::ProcessExited {
                process_id,
                code,
                signal,
                state,
            } => {
                self.processes.retain(|p| p.id != process_id);
                let how = match (code, signal) {
                    (Some(code), _) => format!("exited (code {code})"),
                    (None, Some(signal)) => format!("was killed ({signal})"),
                    (None, None) => state,
                };
                self.notice(
                    Level::Info,
                    format!("background process {process_id} {how}"),
                );
            }
            EventBody::ProcessUpdate { text } => {
                let ids: Vec<&str> = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("<process-update id=\""))
                    .filter_map(|l| l.split('"').next())
                    .collect();
                self.notice(
                    Level::Info,
                    crate::term::sanitize(&format!(
                        "background output went to the model: {}",
                        ids.join(", ")
                    ))
                    .into_owned(),
                );
            }
            EventBody::TurnEnd { .. } => self.flush_batch(),
            EventBody::AgentEnd { error } => self.agent_end(error, now),
            EventBody::QueueUpdate {
                steering,
                follow_up,
            } => {
                self.queued = steering.into_iter().chain(follow_up).collect();
            }
            EventBody::CompactionStart { reason } => {
                if let Some(run) = &mut self.run {
                    run.label = Label::Command(format!("compacting ({reason})"));
                }
            }
            EventBody::CompactionEnd { reason, outcome } => self.compaction_end(&reason, outcome),
            EventBody::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => self.notice(
                Level::Info,
                format!(
                    "retrying ({attempt}/{max_attempts}) in {}: {error_message}",
                    crate::render::wrap::seconds(delay_ms)
                ),
            ),
            EventBody::AutoRetryEnd { .. } => {}
            EventBody::ModelChanged { provider, model } => {
                self.footer.provider.clone_from(&provider);
                self.footer.model.clone_from(&model);
                self.notice(Level::Info, format!("model: {model} ({provider})"));
            }
            EventBody::ThinkingLevelChanged { level } => self.thinking_changed(level),
            EventBody::SessionInfo {
                session_id,
                session_file,
                ..
            } => {
                self.session = Some(session_id);
                self.session_file = Some(session_file.into());
            }
            EventBody::Notice { level, message } => self.host_notice(level, &message),
            EventBody::ModelUsage { usage } => self.footer.usage(&usage),
            EventBody::ModelMetrics { metrics } => self.footer.counters.metrics(&metrics),
        }
    }

    /// A run starts (or the one a prompt began is acknowledged).
    fn agent_start(&mut self, id: Option<String>, now: Instant) {
        if let Some(run) = &mut self.run
            && run.id == id
        {
            run.began = true;
            return;
        }
        self.run = Some(Run::new(
            now,
            Label::Working,
            self.footer.counters.clone(),
            id,
            true,
            false,
        ));
    }

    /// A message begins: the user's is drawn, an answer starts afresh.
    fn message_start(&mut self, message: Option<WireMessage>) {
        match message {
            Some(WireMessage::User { content }) => {
                let text = texts(&content);
                self.editor.remember(&text);
                let shown = self.shown(text);
                self.push(Block::User(shown));
            }
            None | Some(WireMessage::Assistant { .. }) => {
                if let Some(run) = &mut self.run {
                    run.text.clear();
                    run.reasoning.clear();
                    run.committed = 0;
                    run.answered = false;
                }
            }
            Some(_) => {}
        }
    }

    /// A piece of the answer streams in.
    fn message_update(&mut self, delta: Delta) {
        let Some(run) = &mut self.run else {
            return;
        };
        match delta {
            Delta::TextDelta { delta } => {
                run.text.push_str(&delta);
                run.label = Label::Responding;
                self.commit_finished();
            }
            Delta::ThinkingDelta { delta } => {
                run.reasoning.push_str(&delta);
                // A summary's title is at its start: looked for
                // while the text is short, not on every delta.
                if !matches!(run.label, Label::Thinking(Some(_))) {
                    let head = &run.reasoning[..floor_boundary(&run.reasoning, 200)];
                    run.label = Label::Thinking(summary_title(head));
                }
            }
            Delta::ToolcallStart { .. } | Delta::ToolcallDelta { .. } => {
                run.label = Label::Working;
            }
        }
    }

    /// A tool call starts running.
    fn tool_start(
        &mut self,
        tool_call_id: String,
        tool_name: String,
        args: serde_json::Value,
        now: Instant,
    ) {
        let Some(run) = &mut self.run else {
            return;
        };
        run.label = Label::RunningTools;
        let index = if let Some(index) = run.tools.iter().position(|c| c.view.id == tool_call_id) {
            index
        } else {
            run.tools
                .push(LiveCall::waiting(view(tool_call_id, tool_name, args)));
            run.tools.len() - 1
        };
        run.tools[index].started = Some(now);
        // A subagent's start is an activity block of its own with
        // the whole delegated task (E-SUB-13); its live row then
        // follows what the child does.
        if run.tools[index].view.name == "task" {
            let started = run.tools[index].view.clone();
            self.push(Block::Tools(vec![started]));
        }
    }

    /// A running tool reports progress: its last line is shown.
    fn tool_update(&mut self, tool_call_id: &str, partial_result: &str, now: Instant) {
        if let Some(run) = &mut self.run
            && let Some(entry) = run.tools.iter_mut().find(|c| c.view.id == tool_call_id)
        {
            partial_result
                .lines()
                .last()
                .unwrap_or("")
                .clone_into(&mut entry.partial);
            entry.updated = Some(now);
        }
    }

    /// A tool call ends; the batch is drawn once every call has.
    fn tool_end(
        &mut self,
        tool_call_id: &str,
        result: String,
        is_error: bool,
        duration_ms: u64,
        details: Option<serde_json::Value>,
    ) {
        if let Some(run) = &mut self.run
            && let Some(entry) = run.tools.iter_mut().find(|c| c.view.id == tool_call_id)
        {
            entry.view.result = Some(result);
            entry.view.is_error = is_error;
            entry.view.duration_ms = duration_ms;
            entry.view.details = details;
        }
        if self
            .run
            .as_ref()
            .is_some_and(|run| run.tools.iter().all(|c| c.view.result.is_some()))
        {
            self.flush_batch();
        }
    }

    /// A compaction's outcome, said.
    fn compaction_end(&mut self, reason: &str, outcome: CompactionOutcome) {
        self.compaction_reported = true;
        match outcome {
            CompactionOutcome::Compacted {
                tokens_before,
                tokens_after,
            } => self.notice(
                Level::Info,
                format!("compacted ({reason}): ~{tokens_before} → ~{tokens_after} tokens"),
            ),
            CompactionOutcome::Skipped { reason: why } => {
                let mut text = if why.starts_with("nothing") || why.starts_with("compaction") {
                    why
                } else {
                    format!("compaction skipped: {why}")
                };
                // Asked for by hand: say how to have it anyway.
                if reason == "manual" && !self.compact_forced {
                    text.push_str("; /compact force compacts it anyway");
                }
                self.notice(Level::Info, text);
            }
            CompactionOutcome::Failed { reason: why } => {
                self.notice(Level::Warning, format!("compaction failed: {why}"));
            }
        }
        if let Some(run) = &mut self.run
            && !run.command
        {
            run.label = Label::Working;
        }
    }

    /// The reasoning effort changed.
    fn thinking_changed(&mut self, level: etch_protocol::ThinkingLevel) {
        let level = serde_json::to_value(level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        self.notice(Level::Info, format!("thinking: {level}"));
        self.footer.thinking = Some(level);
    }

    /// A notice from the session.
    fn host_notice(&mut self, level: NoticeLevel, message: &str) {
        let level = match level {
            NoticeLevel::Info => Level::Info,
            NoticeLevel::Warning => Level::Warning,
        };
        // The host words notices for stderr, where `etch:` says
        // who speaks; in the chat that goes without saying.
        let message = message
            .strip_prefix("etch: note: ")
            .or_else(|| message.strip_prefix("etch: "))
            .map_or_else(|| message.to_owned(), str::to_owned);
        self.notice(level, message);
    }

    /// A long command answered: its working line goes.
    pub(super) fn end_command(&mut self) {
        if self.run.as_ref().is_some_and(|run| run.command) {
            self.run = None;
        }
    }

    /// Sets the working line's label.
    fn label(&mut self, label: Label) {
        if let Some(run) = &mut self.run {
            run.label = label;
        }
    }

    /// Writes the answer's finished paragraphs into the history while it
    /// streams, so a long answer can be read as it comes: everything up
    /// to the last blank line that is not inside an open code fence. (A
    /// table ends at a blank line, so it is never split.) What follows
    /// stays in the preview.
    fn commit_finished(&mut self) {
        let Some(run) = &mut self.run else {
            return;
        };
        let Some(end) = finished_end(&run.text, run.committed) else {
            return;
        };
        let chunk = run.text[run.committed..end].trim_end().to_owned();
        run.committed = end;
        if chunk.trim().is_empty() {
            return;
        }
        let first = !run.answered;
        run.answered = true;
        let reasoning = if first {
            std::mem::take(&mut run.reasoning)
        } else {
            String::new()
        };
        if !reasoning.trim().is_empty() {
            self.push(Block::Reasoning(reasoning));
        }
        self.push(if first {
            Block::Assistant(chunk)
        } else {
            Block::AssistantMore(chunk)
        });
    }

    /// A finished message: the assistant's reasoning and answer go into
    /// the history; its tool calls become the batch in progress.
    fn message_end(&mut self, message: WireMessage) {
        let WireMessage::Assistant {
            content,
            stop_reason,
            ..
        } = message
        else {
            return;
        };
        let interrupted = stop_reason == Some(StopReason::Aborted);
        let reasoning = self
            .run
            .as_mut()
            .map(|run| std::mem::take(&mut run.reasoning))
            .unwrap_or_default();
        if !reasoning.trim().is_empty() {
            self.push(Block::Reasoning(reasoning));
        }
        let text = texts(&content);
        // Paragraphs already in the history are not written again.
        let (committed, answered) = self
            .run
            .as_ref()
            .filter(|run| text.starts_with(&run.text[..run.committed]))
            .map_or((0, false), |run| (run.committed, run.answered));
        let rest = text[committed..].trim_start_matches('\n').to_owned();
        if !rest.trim().is_empty() {
            self.push(if answered {
                Block::AssistantMore(rest)
            } else {
                Block::Assistant(rest)
            });
        }
        if !text.trim().is_empty() {
            self.last_answer = Some(text.clone());
            // What the user saw stays, marked as cut short.
            if interrupted {
                self.notice(Level::Info, "interrupted: the answer above is partial");
                if let Some(run) = &mut self.run {
                    run.interrupted = true;
                }
            }
        }
        let calls: Vec<ToolView> = content
            .into_iter()
            .filter_map(|part| match part {
                WirePart::ToolCall {
                    id,
                    name,
                    arguments,
                } => Some(view(id, name, arguments)),
                WirePart::Text { .. } | WirePart::Thinking { .. } | WirePart::Image { .. } => None,
            })
            .collect();
        if let Some(run) = &mut self.run {
            run.text.clear();
            run.tools = calls.into_iter().map(LiveCall::waiting).collect();
        }
    }

    /// Writes the batch in progress into the history; calls without a
    /// result (an abort) say so.
    fn flush_batch(&mut self) {
        let Some(run) = &mut self.run else {
            return;
        };
        if run.tools.is_empty() {
            return;
        }
        let batch: Vec<ToolView> = run
            .tools
            .drain(..)
            .map(|LiveCall { mut view, .. }| {
                if view.result.is_none() {
                    view.result = Some("Operation aborted".into());
                    view.is_error = true;
                }
                view
            })
            .collect();
        self.last_batch = Some(batch.clone());
        self.push(Block::Tools(batch));
        // Tools may have made or removed files: `@` lists them again.
        self.files = None;
        self.refresh_files();
    }

    /// The run ended: what is left of it goes into the history, then the
    /// turn's footer; an error or a cancellation is a notice, and the
    /// chat takes the next prompt (E-CHAT-13: a round limit is a notice).
    fn agent_end(&mut self, error: Option<String>, now: Instant) {
        self.approval_gone(None, now);
        self.flush_batch();
        // The run's commands may have switched branches.
        self.footer.branch = etch_runtime::git::branch(&self.cwd);
        let Some(run) = self.run.take() else {
            return;
        };
        // What was queued before a barrier has run: what came after it
        // may go (`take_released`).
        self.release = self.barrier && self.queued.is_empty();
        if let Some(id) = &run.id {
            self.ended.insert(id.clone());
        }
        if let Some(error) = error {
            if self.aborting || error.contains("cancelled") || error.contains("aborted") {
                // A partial answer already says it was interrupted.
                if !run.interrupted {
                    self.notice(Level::Info, "cancelled");
                }
            } else if error.contains("round") {
                self.notice(
                    Level::Warning,
                    format!(
                        "{error}\nThe session is kept; send another prompt to go on from here."
                    ),
                );
            } else {
                self.notice(Level::Error, error);
            }
        }
        let c = &self.footer.counters;
        let elapsed = u64::try_from(now.saturating_duration_since(run.started).as_millis())
            .unwrap_or(u64::MAX);
        let requests = c.requests - run.counters.requests;
        let mut text = crate::render::wrap::seconds(elapsed);
        if requests > 0 {
            let _ = write!(
                text,
                " · {requests} request{} · {} in · {} out",
                if requests == 1 { "" } else { "s" },
                super::footer::short(c.input - run.counters.input),
                super::footer::short(c.output - run.counters.output),
            );
        }
        self.push(Block::TurnEnd(text));
    }

    /// Marks the long command `effect` (bash, compact, navigate) as
    /// running, for the working line.
    pub(crate) fn command_running(&mut self, name: &str, effect: &super::Effect, now: Instant) {
        let id = match effect {
            super::Effect::Host(command) => command.id.clone(),
            _ => None,
        };
        if self.run.is_none() {
            self.run = Some(Run::new(
                now,
                Label::Command(name.to_owned()),
                self.footer.counters.clone(),
                id,
                true,
                true,
            ));
        }
    }

    /// Asks the host to abort, once.
    pub(crate) fn abort(&mut self) -> Option<super::Effect> {
        if self.aborting {
            return None;
        }
        self.aborting = true;
        Some(self.command(
            etch_protocol::CommandBody::Abort,
            Purpose::Other(String::new()),
        ))
    }

    /// Starts `!command`: its output is added to the context unless
    /// `exclude`.
    pub(crate) fn bash(&mut self, command: String, exclude: bool, now: Instant) -> super::Effect {
        let effect = self.command(
            etch_protocol::CommandBody::Bash {
                command: command.clone(),
                exclude_from_context: exclude,
            },
            Purpose::Bash(command),
        );
        self.command_running("bash", &effect, now);
        effect
    }

    /// Starts `/compact`.
    pub fn compact(&mut self, focus: Option<String>, now: Instant) -> super::Effect {
        self.compaction_reported = false;
        // `/compact force` compacts even a short session; so does a focus.
        let (focus, force) = match focus {
            Some(word) if word.eq_ignore_ascii_case("force") => (None, true),
            focus => (focus, false),
        };
        self.compact_forced = force || focus.is_some();
        let effect = self.command(
            etch_protocol::CommandBody::Compact {
                custom_instructions: focus,
                force,
            },
            Purpose::Compact,
        );
        self.command_running("compact", &effect, now);
        effect
    }
}

/// The text parts of a message, joined, each image as a one-line
/// marker with its size (`[image image/png 1568x882]`).
fn texts(content: &[WirePart]) -> String {
    content
        .iter()
        .filter_map(|part| match part {
            WirePart::Text { text } => Some(text.clone()),
            WirePart::Image {
                media_type,
                width,
                height,
                ..
            } => Some(format!("[image {media_type} {width}x{height}]")),
            WirePart::ToolCall { .. } | WirePart::Thinking { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A call not yet run.
fn view(id: String, name: String, args: Value) -> ToolView {
    ToolView {
        id,
        name,
        args,
        result: None,
        is_error: false,
        duration_ms: 0,
        details: None,
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The title of a reasoning summary (`**Title**` at its start), which
/// OpenAI's summaries carry and the working line shows (E-TERM-09).
fn summary_title(reasoning: &str) -> Option<String> {
    let rest = reasoning.trim_start().strip_prefix("**")?;
    let end = rest.find("**")?;
    let title = rest[..end].trim();
    (!title.is_empty() && title.len() <= 80).then(|| title.to_owned())
}

/// Where the finished part of a streaming answer ends, past `from`: just
/// after the last blank line (`\n\n`) that is outside any code fence;
/// `None` when nothing new is finished.
fn finished_end(text: &str, from: usize) -> Option<usize> {
    let mut end = None;
    let mut fenced = false;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
        }
        at += line.len();
        // A blank line that is complete, with more text known to follow
        // or not: the paragraph before it is done.
        if !fenced && line.trim().is_empty() && line.ends_with('\n') && at > from {
            end = Some(at);
        }
    }
    end.filter(|&e| e > from)
}
