//! The chat's state machine: keys and the host's output come in; blocks
//! for the history, the live area and effects (commands for the host,
//! slash commands for the runner, quitting) go out. It holds no agent
//! logic: what a command means is the host's business, and everything it
//! shows comes from the host's events. Pure and synchronous, so every
//! behaviour is testable without a terminal.
//!
//! The assistant's prose is drawn from the finished message, never from
//! the stream (E-TERM-04, C43 in docs/requirements.md): deltas only feed
//! the live preview and the working line's label (E-TERM-09: `Working`,
//! `Thinking`, `Responding`, `Running tools`, or the title of a reasoning
//! summary). A batch of tool calls goes into the history once all of its
//! calls have ended, grouped, in the model's order.

mod approval;
mod events;
pub mod footer;
mod keys;
mod live;
pub mod picker;
mod responses;
mod session;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use etch_protocol::{Command, CommandBody};
use ratatui_core::text::Line;

use crate::editor::Editor;
use crate::render::blocks::{self, Block, Level};
use crate::render::tools::ToolView;
use crate::slash::Slash;

pub use footer::{Counters, Footer, Price};
pub use keys::Key;

/// What the app asks its runner to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send this command to the host (for a prompt with no session yet,
    /// the runner opens one first).
    Host(Command),
    /// Carry out a slash command that needs the session or the host.
    Slash(Slash),
    /// Leave the chat.
    Quit,
    /// A picker's choice: `alternate` when chosen with Tab (for `/tree`:
    /// summarize the branch left behind).
    Picked {
        /// What was picked.
        pick: picker::Pick,
        /// The choice's value.
        value: String,
        /// Chosen with Tab.
        alternate: bool,
    },
}

/// Why a command was sent, to know what to do with its response.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Purpose {
    /// A prompt that starts a run (its text, given back if refused).
    Prompt(String),
    /// Steering for the active run.
    Steer,
    /// `!command` or `!!command`.
    Bash(String),
    /// `/compact`.
    Compact,
    /// `/fork`: the new session's id and the prompt put back.
    Fork,
    /// `/tree`: where the leaf moved.
    Navigate,
    /// Any other command: its errors are shown, its success said.
    Other(String),
}

/// What the working line says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Label {
    /// Waiting for the model.
    Working,
    /// Reasoning is streaming (or a summary's title).
    Thinking(Option<String>),
    /// Answer text is streaming.
    Responding,
    /// Tools are running.
    RunningTools,
    /// A long command (`compact`, `bash`, …).
    Command(String),
}

/// A run in progress, as the live area shows it.
#[derive(Debug)]
// Four independent facts about one run, each set at a different moment;
// a state enum would have to spell out their products.
#[allow(clippy::struct_excessive_bools)]
struct Run {
    /// When it started.
    started: Instant,
    /// The working line's label.
    label: Label,
    /// Answer text of the pass in progress (preview only).
    text: String,
    /// Reasoning text of the pass in progress.
    reasoning: String,
    /// Calls of the batch in progress.
    tools: Vec<LiveCall>,
    /// Counters when it started, for the turn footer.
    counters: Counters,
    /// Command id of the run.
    id: Option<String>,
    /// Whether its `agent_start` came (a refused prompt never has one).
    began: bool,
    /// A long command (`bash`, `compact`, `navigate`) rather than a run:
    /// it ends with the command's response, not `agent_end`.
    command: bool,
    /// A cancelled answer was kept, marked as interrupted.
    interrupted: bool,
    /// Bytes of `text` already written into the history (finished
    /// paragraphs, committed while the answer streams).
    committed: usize,
    /// Whether the answer's first paragraph is in the history (later ones
    /// continue it, without a new dot).
    answered: bool,
}

/// A call of the batch in progress, as its live row shows it.
#[derive(Debug)]
struct LiveCall {
    /// The call, and its result once it has one.
    view: ToolView,
    /// When it started (`None`: still waiting behind other calls).
    started: Option<Instant>,
    /// The last line of its progress (a subagent's current activity).
    partial: String,
    /// When that progress came, so a subagent's row can say how long
    /// it has been quiet.
    updated: Option<Instant>,
}

impl LiveCall {
    /// A call that has not started.
    fn waiting(view: ToolView) -> Self {
        Self {
            view,
            started: None,
            partial: String::new(),
            updated: None,
        }
    }

    /// Whether it is a subagent at work.
    fn is_running_child(&self) -> bool {
        self.view.name == "task" && self.view.result.is_none() && self.started.is_some()
    }
}

impl Run {
    /// A run (or long command) starting at `now`, with the counters as
    /// they are then.
    fn new(
        now: Instant,
        label: Label,
        counters: Counters,
        id: Option<String>,
        began: bool,
        command: bool,
    ) -> Self {
        Self {
            started: now,
            label,
            text: String::new(),
            reasoning: String::new(),
            tools: Vec::new(),
            counters,
            id,
            began,
            command,
            interrupted: false,
            committed: 0,
            answered: false,
        }
    }
}

/// Start-up facts the app shows.
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// Header rows.
    pub header: Vec<String>,
    /// The footer (counters seeded on resume).
    pub footer: Footer,
    /// Earlier prompts, oldest first (E-CHAT-07).
    pub history: Vec<String>,
    /// Blocks of the recent transcript, drawn again on resume.
    pub replay: Vec<Block>,
    /// The session, when one is open.
    pub session: Option<String>,
    /// Its file.
    pub session_file: Option<std::path::PathBuf>,
    /// Skill names, for Tab completion of `/skill:`.
    pub skills: Vec<String>,
    /// The project directory, for `@` and path completion.
    pub cwd: std::path::PathBuf,
    /// `[tools.read] image_max_edge`: the long edge attached images are
    /// resized to (0: the default).
    pub image_max_edge: u32,
}

/// The chat's state.
// Independent flags of the user's session with the chat (written once,
// Ctrl-C armed, an abort asked, OSC 52 allowed, a compaction reported);
// a state enum would couple unrelated things.
#[allow(clippy::struct_excessive_bools)]
pub struct App {
    /// The prompt editor.
    pub(crate) editor: Editor,
    /// Blocks waiting to go into the history.
    pending: Vec<Block>,
    /// Whether anything has been written to the history.
    wrote: bool,
    /// The active run.
    run: Option<Run>,
    /// Long commands in flight (id → purpose).
    waiting: HashMap<String, Purpose>,
    /// Steering and follow-up texts not yet admitted.
    queued: Vec<String>,
    /// Prompts typed after a slash command that ran while texts were
    /// queued (E-CHAT-05: a command is an ordering barrier): kept here,
    /// never steered past it, and sent as their own turn once the queue
    /// before them has run.
    held: Vec<String>,
    /// A slash command ran while texts were queued: what is typed next is
    /// held.
    barrier: bool,
    /// Prompts sent other than as typed (a long paste expanded, a skill's
    /// instructions), each with what the transcript shows instead: the
    /// paste's marker, `/skill:NAME text`.
    shown_as: Vec<(String, String)>,
    /// The last `/compact` was forced (so a skip says no more about
    /// forcing it).
    compact_forced: bool,
    /// The run ended with nothing queued: the barrier is passed and
    /// `held` may go.
    release: bool,
    /// The footer.
    pub(crate) footer: Footer,
    /// A short-lived hint under the editor, and when it goes.
    hint: Option<(String, Instant)>,
    /// Ctrl-C was pressed once on an empty draft.
    armed: bool,
    /// The last tool batch (for Ctrl-O).
    last_batch: Option<Vec<ToolView>>,
    /// The last answer (for `/copy`).
    last_answer: Option<String>,
    /// The session id, once there is a session.
    session: Option<String>,
    /// The session file, once there is a session.
    session_file: Option<std::path::PathBuf>,
    /// An abort was asked for and not yet answered.
    aborting: bool,
    /// Next command id.
    next_id: u64,
    /// Completion choices shown, and the selected one.
    pub(crate) popup: Option<keys::Popup>,
    /// An open picker.
    pub(crate) picker: Option<picker::Picker>,
    /// The project's files for `@` search, listed on first use.
    pub(crate) files: Option<crate::complete::FileIndex>,
    /// Whether the `@` popup was opened before the file list arrived and
    /// has not been filled since. A flag rather than asking the index, as
    /// the list may arrive between drawing "listing…" and deciding whether
    /// to keep the clock running; the clock then stopped and the popup
    /// stayed empty.
    pub(crate) files_awaited: bool,
    /// Where the caret was in the last live rows (see [`Self::caret`]).
    caret: Option<(usize, usize)>,
    /// Skill names.
    pub(crate) skills: Vec<String>,
    /// Bytes for the terminal outside frames (OSC 52).
    raw_out: Vec<String>,
    /// Whether the terminal may be sent OSC 52 (not in line mode).
    pub(crate) osc52: bool,
    /// Line mode: no editor on screen, so text that would go back into
    /// it is printed instead.
    pub(crate) line_mode: bool,
    /// Ids of runs whose `agent_end` came: a failed run's second answer
    /// repeats what `agent_end` said and is not shown again.
    ended: std::collections::HashSet<String>,
    /// Whether the compaction in progress reported its end (so a failed
    /// `/compact` says so once).
    compaction_reported: bool,
    /// When the terminal last changed size.
    resized: Option<Instant>,
    /// The project directory.
    pub(crate) cwd: std::path::PathBuf,
    /// The long edge attached images are resized to.
    pub(crate) image_max_edge: u32,
    /// Calls waiting for the user's approval.
    approvals: approval::Approvals,
    /// Background processes running, oldest first.
    processes: Vec<Process>,
}

/// A background process running, as the live area shows it.
#[derive(Debug, Clone)]
struct Process {
    /// Its id (`p3`).
    id: String,
    /// Its command line.
    command: String,
    /// When the chat heard it started.
    started: Instant,
}

impl App {
    /// The app as it starts.
    pub fn new(start: Start) -> Self {
        let mut pending = vec![Block::Header { rows: start.header }];
        pending.extend(start.replay);
        Self {
            editor: Editor::new(start.history),
            pending,
            wrote: false,
            run: None,
            waiting: HashMap::new(),
            queued: Vec::new(),
            held: Vec::new(),
            barrier: false,
            shown_as: Vec::new(),
            compact_forced: false,
            release: false,
            footer: start.footer,
            hint: None,
            armed: false,
            last_batch: None,
            last_answer: None,
            session: start.session,
            session_file: start.session_file,
            aborting: false,
            next_id: 0,
            popup: None,
            picker: None,
            files: None,
            files_awaited: false,
            caret: None,
            skills: start.skills,
            raw_out: Vec::new(),
            osc52: true,
            line_mode: false,
            ended: std::collections::HashSet::new(),
            compaction_reported: false,
            resized: None,
            cwd: start.cwd,
            image_max_edge: if start.image_max_edge == 0 {
                etch_image::DEFAULT_MAX_EDGE
            } else {
                start.image_max_edge
            },
            approvals: approval::Approvals::default(),
            processes: Vec::new(),
        }
    }

    /// Whether the live area changes by itself (a spinner, a file list
    /// being read): the runner then draws on a clock.
    pub fn wants_tick(&self) -> bool {
        self.is_busy() || self.files_loading() || self.hint.is_some()
    }

    /// Whether a run or a long command is active.
    pub fn is_busy(&self) -> bool {
        self.run.is_some() || !self.waiting.is_empty()
    }

    /// The session id, once there is one.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The session file, once there is one.
    pub fn session_file(&self) -> Option<&std::path::Path> {
        self.session_file.as_deref()
    }

    /// The last answer's text.
    pub fn last_answer(&self) -> Option<&str> {
        self.last_answer.as_deref()
    }

    /// Adds a block to the history.
    pub fn push(&mut self, block: Block) {
        self.pending.push(block);
    }

    /// Adds a notice.
    pub fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.pending.push(Block::Notice(level, text.into()));
    }

    /// Shows a hint under the editor for a few seconds.
    pub fn hint(&mut self, text: impl Into<String>, now: Instant) {
        self.hint = Some((text.into(), now + Duration::from_secs(4)));
    }

    /// Whether something waits to be drawn into the history.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The rows to write into the history now, at `width` columns: the
    /// pending blocks, a blank row between blocks.
    pub fn take_history(&mut self, width: usize) -> Vec<Line<'static>> {
        let mut rows = Vec::new();
        for block in self.pending.drain(..) {
            // The pictures of a prompt or batch have no rows here (the
            // block before shows their markers).
            if matches!(block, Block::Images(_)) {
                continue;
            }
            if self.wrote && !matches!(block, Block::TurnEnd(_)) {
                rows.push(Line::default());
            }
            rows.extend(blocks::render(&block, width, false));
            self.wrote = true;
        }
        rows
    }

    /// Shows the last tool batch's output in full (Ctrl-O): written again
    /// below, since the history above is never rewritten.
    pub fn expand_last(&mut self, width: usize) -> Vec<Line<'static>> {
        let Some(batch) = &self.last_batch else {
            return Vec::new();
        };
        let mut rows = vec![Line::default()];
        rows.extend(blocks::render(&Block::Tools(batch.clone()), width, true));
        rows
    }

    /// Makes a host command with a fresh id, remembering why.
    fn command(&mut self, body: CommandBody, purpose: Purpose) -> Effect {
        self.next_id += 1;
        let id = format!("chat-{}", self.next_id);
        self.waiting.insert(id.clone(), purpose);
        Effect::Host(Command { id: Some(id), body })
    }

    /// Sends a command whose only interest is its failure (a model or
    /// thinking-level change, an export): the runner calls this for the
    /// slash commands that map onto host commands.
    pub fn host_command(&mut self, body: CommandBody, what: &str) -> Effect {
        self.command(body, Purpose::Other(what.to_owned()))
    }

    /// `/fork` of the event `entry`: the response names the new session.
    pub fn fork(&mut self, entry: String) -> Effect {
        self.command(CommandBody::Fork { entry_id: entry }, Purpose::Fork)
    }

    /// `/tree`: move the leaf to `entry`, summarizing the branch left
    /// behind when `summarize`.
    pub fn navigate(&mut self, entry: String, summarize: bool, now: Instant) -> Effect {
        let effect = self.command(
            CommandBody::Navigate {
                entry_id: entry,
                summarize,
            },
            Purpose::Navigate,
        );
        self.command_running("navigate", &effect, now);
        effect
    }

    /// Shows the prompt `sent` as `shown` in the transcript when it comes
    /// back from the host (a skill's expansion as `/skill:NAME text`).
    pub fn show_prompt_as(&mut self, sent: &str, shown: String) {
        if sent != shown {
            self.shown_as.push((sent.to_owned(), shown));
        }
    }

    /// How the user prompt `text` is shown: as typed, when it was sent
    /// expanded.
    fn shown(&mut self, text: String) -> String {
        match self.shown_as.iter().position(|(sent, _)| *sent == text) {
            Some(i) => self.shown_as.remove(i).1,
            None => text,
        }
    }

    /// Prompts held behind a barrier, once the run before them ended with
    /// nothing queued: one prompt (their texts joined), as a turn of its
    /// own. The runner asks after handing the app the host's output.
    pub fn take_released(&mut self, now: Instant) -> Vec<Effect> {
        if !std::mem::take(&mut self.release) || self.run.is_some() {
            return Vec::new();
        }
        self.barrier = false;
        if self.held.is_empty() {
            return Vec::new();
        }
        let text = std::mem::take(&mut self.held).join("\n\n");
        vec![self.send_prompt(text, now)]
    }

    /// Sends a prompt, or steering while a run is active (C21: admitted
    /// after the current tool batch; what is left when the run ends runs
    /// next as one combined prompt).
    pub fn send_prompt(&mut self, text: String, now: Instant) -> Effect {
        self.send_prompt_with(text, Vec::new(), now)
    }

    /// Sends a prompt with images. The chat attaches images only to a
    /// prompt that starts a run (its editor keeps them while one is
    /// active), so a steer from here is text.
    pub fn send_prompt_with(
        &mut self,
        text: String,
        images: Vec<etch_protocol::ImageInput>,
        now: Instant,
    ) -> Effect {
        if self.run.is_some() {
            return self.command(
                CommandBody::Steer {
                    message: text,
                    images: Vec::new(),
                },
                Purpose::Steer,
            );
        }
        let effect = self.command(
            CommandBody::Prompt {
                message: text.clone(),
                images,
                streaming_behavior: None,
            },
            Purpose::Prompt(text),
        );
        // Busy from now on, not from the run's first event, so a quick
        // second Enter steers instead of being refused.
        if let Effect::Host(command) = &effect {
            self.run = Some(Run::new(
                now,
                Label::Working,
                self.footer.counters.clone(),
                command.id.clone(),
                false,
                false,
            ));
        }
        effect
    }
}

#[cfg(test)]
mod tests;
