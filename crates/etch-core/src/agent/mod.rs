//! The run loop proper (E-LOOP-01, P-LOOP-05/06). One model pass is
//! `model`; what a run appends to the log as it goes is `record`.

mod model;
mod record;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use etch_compact::Trigger;
use etch_model::{
    ContentPart, ErrorKind, Message, ModelClient, ModelRequest, RequestOptions, StopReason,
    SystemLayer, ToolCall,
};
use etch_session::event::{
    AssistantData, GroundingData, GuardData, HookRunData, ReasoningData, ResponseData, ToolData,
    UserData,
};
use etch_session::{LoadedSession, SessionWriter, dangling_tool_calls, types};
use etch_tool::{CallOrigin, ToolRegistry};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::compaction::{CompactionPolicy, Estimate};
use crate::error::{GuardStopError, RunError, ToolRoundLimitError};
use crate::exec::{ABORTED, BatchEnv, CallResult, run_batch};
use crate::grounding::{Grounding, GroundingNote};
use crate::guard::{Finding, FindingKind, Guard, GuardSettings};
use crate::intercept::{Intercept, Intercepted, Point, TurnEnd, Verdict, until_cancelled};
use crate::observer::{AgentEvent, Observer};
use crate::pass::{Pass, collect};
use crate::redact::Redactor;

/// Longest a run's first request waits for starting tool sources.
pub const SOURCE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Settings of a run that do not change between rounds.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Bound on model/tool rounds per user turn (E-LOOP-02).
    pub max_tool_rounds: u32,
    /// Pinned system layers.
    pub system: Vec<SystemLayer>,
    /// Working directory for tools.
    pub cwd: PathBuf,
    /// Session temp directory for tools' large outputs.
    pub temp_dir: PathBuf,
    /// Request options (session id, reasoning).
    pub options: RequestOptions,
    /// Threshold compaction and overflow recovery; `None` turns both off
    /// (tests, and callers that cannot summarize).
    pub compaction: Option<CompactionPolicy>,
    /// Limits of the guard against runs going in circles.
    pub guard: GuardSettings,
    /// Whether final answers get the grounding checks (`[session]
    /// grounding`; see [`crate::grounding`]).
    pub grounding: bool,
    /// The cap on a reply the loop requires to be a tool call
    /// (`RequestOptions::max_output_tokens`), or `None`: set for servers
    /// whose forced call lets a model write until its context is full.
    pub required_reply_tokens: Option<u32>,
}

/// A model client, the active tools and the run settings.
pub struct Agent {
    /// The provider.
    pub(crate) client: Arc<dyn ModelClient>,
    /// Active tools.
    tools: ToolRegistry,
    /// Settings.
    pub(crate) config: AgentConfig,
    /// What intercepts the run (hooks), if anything.
    pub(crate) intercept: Option<Arc<dyn Intercept>>,
    /// The secrets no tool result may carry.
    redactor: Redactor,
    /// Per-project layers (instructions, skills, environment) sent at the
    /// start of the conversation rather than in the system prompt.
    project: Vec<SystemLayer>,
    /// Where a front end offers another client mid-run, if anywhere.
    pub(crate) switch: Option<Arc<crate::switch::ClientSwitch>>,
    /// What reaches the model by itself between requests, if anything.
    inbox: Option<Arc<dyn crate::inbox::Inbox>>,
}

/// What a run starts from: the user's text and the images attached to
/// it (already made fit for a model), which follow the text in the
/// prompt's message. Plain text converts into a prompt without images.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    /// The text.
    pub text: String,
    /// The attached images.
    pub images: Vec<etch_model::Image>,
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Self {
            text,
            images: Vec::new(),
        }
    }
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Self::from(text.to_owned())
    }
}

impl Prompt {
    /// `prompts` as one: their texts joined by a blank line, their
    /// images in order.
    pub fn joined(prompts: Vec<Self>) -> Self {
        let mut texts = Vec::with_capacity(prompts.len());
        let mut images = Vec::new();
        for prompt in prompts {
            texts.push(prompt.text);
            images.extend(prompt.images);
        }
        Self {
            text: texts.join("\n\n"),
            images,
        }
    }
}

/// A successful run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// Text of the final assistant message.
    pub final_text: String,
    /// Rounds used.
    pub rounds: u32,
}

/// The writer, history and observer of one run, so helpers can append
/// durably and notify in one step.
pub(crate) struct RunState<'a> {
    /// The session file.
    pub(crate) writer: &'a mut SessionWriter,
    /// Projected history, extended as events are appended.
    pub(crate) history: &'a mut Vec<Message>,
    /// Who is watching.
    pub(crate) observer: &'a mut dyn Observer,
    /// Running size estimate of the next request, for threshold compaction.
    pub(crate) estimate: Estimate,
    /// The client asked now (another after a switch).
    pub(crate) client: Arc<dyn ModelClient>,
}

impl Agent {
    /// Builds an agent.
    pub fn new(client: Arc<dyn ModelClient>, tools: ToolRegistry, config: AgentConfig) -> Self {
        Self {
            client,
            tools,
            config,
            intercept: None,
            redactor: Redactor::default(),
            project: Vec::new(),
            inbox: None,
            switch: None,
        }
    }

    /// Sends `layers` (what differs from project to project: instructions,
    /// skills, the environment) at the start of the conversation, before
    /// the first message's own text, instead of in the system prompt. The
    /// system prompt and the tool definitions then form a prefix that is
    /// the same byte for byte in every project, which a server's prompt
    /// cache (llama.cpp's slots, hosted prefix caching) reuses: chat
    /// templates render the tools right after the system message.
    #[must_use]
    pub fn with_project_context(mut self, layers: Vec<SystemLayer>) -> Self {
        self.project = layers;
        self
    }

    /// Redacts `redactor`'s secrets from every tool result of the run
    /// (E-TOOL-22).
    #[must_use]
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// Hands the model what `inbox` delivers before each request (the
    /// background processes' output).
    #[must_use]
    pub fn with_inbox(mut self, inbox: Arc<dyn crate::inbox::Inbox>) -> Self {
        self.inbox = Some(inbox);
        self
    }

    /// Takes the client offered at `switch` before the next request, if
    /// one is offered.
    #[must_use]
    pub fn with_switch(mut self, switch: Arc<crate::switch::ClientSwitch>) -> Self {
        self.switch = Some(switch);
        self
    }

    /// Runs with `intercept` around its points (hooks).
    #[must_use]
    pub fn with_intercept(mut self, intercept: Arc<dyn Intercept>) -> Self {
        self.intercept = Some(intercept);
        self
    }

    /// The interceptor, if it serves `point`.
    fn at(&self, point: Point) -> Option<&dyn Intercept> {
        self.intercept.as_deref().filter(|i| i.wants(point))
    }

    /// Runs `prompt` through prompt admission (`UserPromptSubmit`).
    /// `Ok(None)` means refused (or failed) as a steering or follow-up
    /// prompt, which is dropped; for the run's own prompt (`first`) a
    /// refusal or failure is the run's error, before anything else is
    /// appended (G6).
    async fn admit(
        &self,
        state: &mut RunState<'_>,
        prompt: String,
        first: bool,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, RunError> {
        let Some(intercept) = self.at(Point::Prompt) else {
            return Ok(Some(prompt));
        };
        let answer = until_cancelled(intercept.prompt(prompt), cancel)
            .await
            .ok_or(RunError::Cancelled)?;
        match state.records(answer)? {
            Verdict::Go(prompt) => Ok(Some(prompt)),
            _ if !first => Ok(None),
            Verdict::Blocked(reason) => Err(RunError::PromptBlocked { reason }),
            Verdict::Failed(detail) => Err(RunError::Hook {
                event: "UserPromptSubmit",
                detail,
            }),
        }
    }

    /// The number of the turn about to start: the user messages on the
    /// log's active branch plus this one. Counted from the log (only when
    /// a turn hook wants it), so compaction, which replaces messages in
    /// the projection but never in the log, does not change it.
    fn turn_number(&self, state: &RunState<'_>) -> u32 {
        if self.at(Point::TurnStart).is_none() && self.at(Point::TurnComplete).is_none() {
            return 0;
        }
        let earlier = etch_session::load_session(state.writer.path()).map_or(0, |session| {
            session
                .active_events()
                .filter(|e| e.kind == types::MESSAGE_USER)
                .count()
        });
        u32::try_from(earlier + 1).unwrap_or(u32::MAX)
    }

    /// Runs the `TurnStart` point for the prompt just admitted.
    async fn turn_start(
        &self,
        state: &mut RunState<'_>,
        turn: u32,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Result<(), RunError> {
        let Some(intercept) = self.at(Point::TurnStart) else {
            return Ok(());
        };
        let answer = until_cancelled(intercept.turn_start(turn, prompt), cancel)
            .await
            .ok_or(RunError::Cancelled)?;
        hook_result(state.records(answer)?, "TurnStart")
    }

    /// Runs the `TurnComplete` point after a turn that got past admission.
    /// It is not cut short by cancellation (its timeout bounds it), so an
    /// audit hook also sees cancelled turns; its failure becomes the
    /// run's error unless the run already failed (G6).
    async fn turn_complete(
        &self,
        state: &mut RunState<'_>,
        turn: u32,
        result: Result<RunOutcome, RunError>,
    ) -> Result<RunOutcome, RunError> {
        let Some(intercept) = self.at(Point::TurnComplete) else {
            return result;
        };
        let error = result.as_ref().err().map(ToString::to_string);
        let final_text = result.as_ref().map_or("", |o| o.final_text.as_str());
        let end = TurnEnd {
            turn,
            final_text,
            error: error.as_deref(),
        };
        let answer = intercept.turn_complete(end).await;
        let verdict = hook_result(state.records(answer)?, "TurnComplete");
        let outcome = result?;
        verdict.map(|()| outcome)
    }

    /// Runs one prompt to completion: appends it, then alternates model passes
    /// and tool batches until the model stops. `history` is the projection of
    /// the session so far and is extended in place.
    pub async fn run(
        &self,
        writer: &mut SessionWriter,
        history: &mut Vec<Message>,
        prompt: impl Into<Prompt>,
        observer: &mut dyn Observer,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        let Prompt {
            text: prompt,
            images,
        } = prompt.into();
        observer.agent_event(&AgentEvent::AgentStart);
        let mut state = RunState {
            writer,
            history,
            observer,
            estimate: Estimate::default(),
            client: Arc::clone(&self.client),
        };
        let result = match self.admit(&mut state, prompt, true, cancel).await {
            Ok(Some(prompt)) => {
                let turn = self.turn_number(&state);
                let prompt = Prompt {
                    text: prompt,
                    images,
                };
                let result = self.run_rounds(&mut state, turn, prompt, cancel).await;
                self.turn_complete(&mut state, turn, result).await
            }
            Ok(None) => Err(RunError::PromptBlocked { reason: None }),
            Err(err) => Err(err),
        };
        // What went wrong with plugins during the last round is said now,
        // not at the start of a run that may never come.
        let result = match state.source_diagnostics(&self.tools) {
            Err(err) if result.is_ok() => Err(err),
            _ => result,
        };
        let message = result.as_ref().err().map(ToString::to_string);
        state.observer.agent_event(&AgentEvent::AgentEnd {
            error: message.as_deref(),
        });
        result
    }

    /// Before a run's first request, waits for what the tool sources ask
    /// to be awaited (plugins and MCP servers still starting), at most
    /// [`SOURCE_GRACE`]: a tool the model does not see in a one-shot run
    /// is no use, but a server that is slow to start must delay only its
    /// own tools, which join a later request when they are ready.
    async fn await_sources(&self, cancel: &CancellationToken) {
        let all = async {
            for source in self.tools.sources() {
                source.awaited().await;
            }
        };
        tokio::select! {
            _ = tokio::time::timeout(SOURCE_GRACE, all) => {}
            () = cancel.cancelled() => {}
        }
    }

    /// The rounds of a run; split out so `agent_end` is emitted on every path.
    async fn run_rounds(
        &self,
        state: &mut RunState<'_>,
        turn: u32,
        prompt: Prompt,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        let mut round = 0;
        let mut pending_prompts = vec![prompt];
        let mut guard = Guard::new(self.config.guard);
        let mut grounding = Grounding::default();
        // Whether the next request must be a tool call (grounding: the
        // prompt names a file nothing looked at yet).
        let mut require_tool = false;
        let mut overflow_recovered = false;
        loop {
            round += 1;
            let started = Instant::now();
            state.observer.agent_event(&AgentEvent::TurnStart { round });
            // What the background processes printed since the last
            // request comes first: it happened before the prompts below
            // were read.
            self.deliver(state)?;
            // Every prompt here passed admission already: the run's own
            // before the run began, later ones when they were drained.
            for prompt in pending_prompts.drain(..) {
                state.user_with(prompt.text, prompt.images)?;
            }
            if round == 1 {
                let prompt = last_user_text(state.history);
                self.turn_start(state, turn, &prompt, cancel).await?;
            }
            if cancel.is_cancelled() {
                return Err(RunError::Cancelled);
            }
            if round == 1 {
                self.await_sources(cancel).await;
                require_tool = self.config.grounding
                    && !Grounding::unlooked(run_messages(state.history), &self.config.cwd)
                        .is_empty();
            }
            state.source_diagnostics(&self.tools)?;
            self.take_switch(state)?;
            self.maybe_compact(state, cancel).await?;
            let pass = match self.model_pass(state, require_tool, cancel).await {
                // P-OVF-02: compact once and retry once per run; a second
                // overflow, or a compaction that cannot help, surfaces the
                // provider's error.
                Err(RunError::Model { provider, source })
                    if source.kind == ErrorKind::ContextOverflow && !overflow_recovered =>
                {
                    overflow_recovered = true;
                    if !self.compact(state, Trigger::Overflow, cancel).await? {
                        return Err(RunError::Model { provider, source });
                    }
                    self.model_pass(state, require_tool, cancel).await?
                }
                other => other?,
            };
            require_tool = false;
            let calls: Vec<ToolCall> = pass
                .content
                .iter()
                .filter_map(|p| match p {
                    ContentPart::ToolCall(c) => Some(c.clone()),
                    ContentPart::Text { .. } | ContentPart::Image(_) => None,
                })
                .collect();
            let final_text = etch_model::content::joined_text(&pass.content);
            let mut tool_results = 0;
            let mut stop = None;
            // Whether this pass is the answer: no calls, or (grounding)
            // text with calls that only repeat earlier calls of the run
            // with the same result, which small models add after stating
            // the answer and would otherwise repeat until the guard stops
            // the run.
            let mut answered = calls.is_empty();
            if !calls.is_empty() {
                let origin = CallOrigin {
                    session_id: state.writer.session_id().to_owned(),
                    session_path: state.writer.path().to_path_buf(),
                    assistant_event_id: pass.assistant_event_id.clone(),
                };
                let env = BatchEnv {
                    registry: &self.tools,
                    cwd: &self.config.cwd,
                    temp_dir: &self.config.temp_dir,
                    cancel,
                    origin: &origin,
                    intercept: self.intercept.as_ref(),
                    redactor: &self.redactor,
                    refused: &self.refusals(state.history, &calls),
                };
                let (results, cancelled) =
                    run_batch(&calls, &pass.argument_errors, &env, &mut *state.observer).await;
                tool_results = results.len();
                let mut all_repeats = self.config.grounding && !final_text.trim().is_empty();
                for (call, mut result) in calls.iter().zip(results) {
                    // A copy of an earlier call of this message did not
                    // run (its result says so); the guard judges the first.
                    if result.copy_of.is_some() {
                        state.tool_result(call, result)?;
                        continue;
                    }
                    let findings = guard.check(call, &mut result);
                    all_repeats &=
                        !result.is_error && findings.iter().any(|f| f.kind == FindingKind::Repeat);
                    state.tool_result(call, result)?;
                    for finding in findings {
                        state.guard_record(call, &finding)?;
                        if finding.stop && stop.is_none() {
                            stop = Some(stop_reason(call, &finding));
                        }
                    }
                }
                if cancelled {
                    return Err(RunError::Cancelled);
                }
                answered = all_repeats && stop.is_none();
            }
            state.observer.agent_event(&AgentEvent::TurnEnd {
                round,
                elapsed: started.elapsed(),
                tool_results,
            });
            if let Some(what) = stop {
                return Err(GuardStopError {
                    what,
                    session_id: state.writer.session_id().to_string(),
                    session_path: state.writer.path().to_path_buf(),
                }
                .into());
            }
            pending_prompts = state.observer.drain_steering();
            // After a tool batch each steering prompt is its own message, in
            // typed order; what is left when the model had finished becomes
            // one combined follow-up, joined by a blank line (G8, C21).
            if answered && pending_prompts.len() > 1 {
                pending_prompts = vec![Prompt::joined(std::mem::take(&mut pending_prompts))];
            }
            if answered && pending_prompts.is_empty() {
                pending_prompts = state.observer.drain_follow_up();
            }
            // A refused steering or follow-up prompt is dropped (its
            // `hook.run` says why); if nothing is left to answer, the run
            // ends here, with no request for a prompt that never came.
            let mut admitted = Vec::with_capacity(pending_prompts.len());
            for prompt in pending_prompts.drain(..) {
                if let Some(text) = self.admit(state, prompt.text, false, cancel).await? {
                    admitted.push(Prompt {
                        text,
                        images: prompt.images,
                    });
                }
            }
            pending_prompts = admitted;
            if answered
                && pending_prompts.is_empty()
                && self.config.grounding
                && round < self.config.max_tool_rounds
                && let Some(note) = self.ground(state, &mut grounding, &final_text)
            {
                // The answer goes back with the note; the model answers
                // again in the next round, with a tool call when it was
                // told to look.
                require_tool = note.kind == "not_looked";
                state.grounding_note(note)?;
                continue;
            }
            let wake = answered
                && pending_prompts.is_empty()
                && round < self.config.max_tool_rounds
                && self.inbox.as_ref().is_some_and(|inbox| inbox.wakes());
            if answered && pending_prompts.is_empty() && !wake {
                return Ok(RunOutcome {
                    final_text,
                    rounds: round,
                });
            }
            if round >= self.config.max_tool_rounds {
                // Steering drained in the last allowed round is never lost:
                // it goes into the log, so the `etch resume` the error
                // suggests answers it.
                for prompt in pending_prompts.drain(..) {
                    state.user_with(prompt.text, prompt.images)?;
                }
                return Err(ToolRoundLimitError {
                    limit: self.config.max_tool_rounds,
                    session_id: state.writer.session_id().to_string(),
                    session_path: state.writer.path().to_path_buf(),
                }
                .into());
            }
        }
    }
}

impl Agent {
    /// Logs and hands the model what the inbox has, if anything.
    fn deliver(&self, state: &mut RunState<'_>) -> Result<(), RunError> {
        let Some(inbox) = &self.inbox else {
            return Ok(());
        };
        let delivery = inbox.take();
        if delivery.is_empty() {
            return Ok(());
        }
        state.delivery(delivery, &self.redactor)
    }

    /// The grounding checks on `answer`, against the messages of this
    /// run: from the latest user prompt on (a note earlier in the run is
    /// no prompt: it follows an answer).
    fn ground(
        &self,
        state: &RunState<'_>,
        grounding: &mut Grounding,
        answer: &str,
    ) -> Option<GroundingNote> {
        grounding.check(run_messages(state.history), answer, &self.config.cwd)
    }
}

impl Agent {
    /// The calls refused before they run: under grounding, a `write`
    /// over an existing file the session never looked at (see
    /// [`crate::grounding::unread_overwrite`]).
    fn refusals(
        &self,
        history: &[Message],
        calls: &[ToolCall],
    ) -> std::collections::HashMap<String, String> {
        if !self.config.grounding {
            return std::collections::HashMap::new();
        }
        // The history ends with the message holding `calls`.
        let earlier = history.split_last().map_or(history, |(_, rest)| rest);
        calls
            .iter()
            .filter_map(|call| {
                crate::grounding::unread_overwrite(call, earlier, &self.config.cwd)
                    .map(|reason| (call.id.clone(), reason))
            })
            .collect()
    }
}

/// The messages of the run under way: from the latest user prompt on (a
/// grounding note is no prompt: it follows an answer).
fn run_messages(history: &[Message]) -> &[Message] {
    let start = history
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }) && !is_grounding_note(m))
        .unwrap_or(0);
    &history[start..]
}

/// Whether `message` is a grounding note the loop sent.
fn is_grounding_note(message: &Message) -> bool {
    match message {
        Message::User { content } => {
            etch_model::content::joined_text(content).starts_with(crate::grounding::NOTE_START)
        }
        _ => false,
    }
}

/// A verdict of a point that may only go on or fail (TurnStart,
/// TurnComplete, ContextBuild) as the run's result: a block there is a
/// failure too (G6).
fn hook_result<T>(verdict: Verdict<T>, event: &'static str) -> Result<T, RunError> {
    match verdict {
        Verdict::Go(value) => Ok(value),
        Verdict::Blocked(_) => Err(RunError::Hook {
            event,
            detail: format!("a {event} hook cannot block; it may only observe or rewrite"),
        }),
        Verdict::Failed(detail) => Err(RunError::Hook { event, detail }),
    }
}

/// The text of the latest user message (the prompt a turn started with).
fn last_user_text(history: &[Message]) -> String {
    history
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { content } => Some(etch_model::content::joined_text(content)),
            _ => None,
        })
        .unwrap_or_default()
}

/// What the guard's stop says about the call that tipped it.
fn stop_reason(call: &ToolCall, finding: &Finding) -> String {
    let mut arguments = call.arguments.to_string();
    if arguments.len() > 200 {
        let mut end = 200;
        while !arguments.is_char_boundary(end) {
            end -= 1;
        }
        arguments.truncate(end);
        arguments.push('…');
    }
    match finding.kind {
        FindingKind::Repeat => format!(
            "the model made the same call {} times in a row with the same result ({} {arguments}); it was going in circles",
            finding.count, call.name
        ),
        FindingKind::Errors => format!(
            "{} tool calls in a row failed (the last: {} {arguments})",
            finding.count, call.name
        ),
    }
}

/// Appends `tool error: Operation aborted` results for calls a previous run
/// left unanswered (a crash or kill mid-batch), so the log is valid history
/// before anything new is appended. Returns how many were closed.
pub fn close_dangling_calls(
    loaded: &LoadedSession,
    writer: &mut SessionWriter,
    observer: &mut dyn Observer,
) -> Result<usize, RunError> {
    let dangling = dangling_tool_calls(loaded);
    for call in &dangling {
        let appended = writer.append(
            types::MESSAGE_TOOL,
            &ToolData {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content: vec![ContentPart::text(format!("tool error: {ABORTED}"))],
                is_error: true,
                details: None,
            },
        )?;
        observer.durable_line(&appended.line);
    }
    Ok(dangling.len())
}

/// Compile-time proof that a run can move across threads: a server or RPC
/// task spawns it on a multi-threaded runtime, which needs a `Send` future.
/// Never called; it only has to type-check.
#[allow(dead_code)]
fn run_future_is_send(
    agent: &Agent,
    writer: &mut SessionWriter,
    history: &mut Vec<Message>,
    observer: &mut dyn Observer,
    cancel: &CancellationToken,
) {
    /// Accepts only `Send` values.
    fn send<T: Send>(_: T) {}
    send(agent.run(writer, history, String::new(), observer, cancel));
}
