//! One child run (E-SUB-03..09, E-SUB-12): the profile turned into the
//! child's settings (provider and model through the provider factory,
//! its instructions file as an extra system layer, the allowlisted
//! tools, the round bound and compaction settings), its token and time
//! bounds (the child is cancelled past either), a child session
//! forked from the parent before the asking assistant event, the task
//! run in it without a front end, and one compact result for the
//! parent. Everything the child did stays in its own session.
//!
//! This module must not know how results are shown or how tools run.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use etch_config::SubagentProfile;
use etch_core::{AgentEvent, Observer, RunError};
use etch_model::Usage;
use etch_session::{Lineage, LoadedSession, load_session, model_state};
use etch_tool::{ProgressSink, ToolContext};
use tokio_util::sync::CancellationToken;

use super::{Parent, profile};
use crate::hooks::SubagentRun;
use crate::provider;
use crate::session::{ChildOf, Session};

/// The child's observer. Its events are in its own log; this adds up
/// the tokens of its requests (stopping it past `max_tokens`) and
/// reports what it is doing as the parent call's progress, one line
/// per change (E-SUB-14, E-SUB-15): the chat shows the latest as the
/// call's live row, RPC clients get it as `tool_execution_update` with
/// the parent's call id.
struct Watch {
    /// Input plus output tokens so far.
    used: u64,
    /// The profile's bound, if any.
    max: Option<u64>,
    /// Cancels the child.
    stop: CancellationToken,
    /// The parent call's progress.
    progress: ProgressSink,
    /// `Ada / explore: <task>`, the start of every line.
    label: String,
}

impl Watch {
    /// Reports `activity`.
    fn say(&self, activity: &str) {
        self.progress
            .update(format!("{} => {activity}", self.label));
    }
}

impl Observer for Watch {
    fn agent_event(&mut self, event: &AgentEvent<'_>) {
        match event {
            AgentEvent::TurnStart { round } => self.say(&format!("thinking (round {round})")),
            AgentEvent::ToolExecutionStart { call } => {
                self.say(&format!("{} {}", call.name, brief(&call.arguments)));
            }
            AgentEvent::CompactionStart { .. } => self.say("compacting its context"),
            _ => {}
        }
    }

    fn durable_line(&mut self, line: &str) {
        if line.contains("\"type\":\"model.metrics\"") {
            self.progress.counters(line);
            return;
        }
        if !line.contains("\"type\":\"model.usage\"") {
            return;
        }
        self.progress.counters(line);
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            return;
        };
        let Ok(usage) = serde_json::from_value::<Usage>(event["data"].clone()) else {
            return;
        };
        self.used += usage.input_tokens + usage.output_tokens;
        if self.max.is_some_and(|max| self.used > max) {
            self.stop.cancel();
        }
    }
}

/// The parent's provider flags as they are now: the provider, model and
/// endpoint its log records last (a `/model` since the task tool was
/// built is in the log, not in the tool's copy of the settings). A key
/// given for another provider than the current one is dropped: it
/// belongs to that provider's service.
fn current_flags(parent: &Parent, log: &LoadedSession) -> crate::provider::ProviderFlags {
    let state = model_state(log);
    let mut flags = parent.settings.provider.clone();
    if flags
        .provider
        .as_deref()
        .is_some_and(|p| p != state.provider)
    {
        flags.api_key = None;
        flags.openai_transport = None;
    }
    flags.provider = Some(state.provider);
    flags.model = Some(state.model);
    flags.base_url = state.base_url.or(flags.base_url);
    flags.openai_api = state.openai_api.or(flags.openai_api);
    if state.thinking_level.is_some() {
        flags.reasoning_effort = state.thinking_level;
    }
    flags
}

/// Names given to children, picked by their session id: short, distinct
/// and the same every time the child is shown.
const CODENAMES: [&str; 16] = [
    "Ada",
    "Babbage",
    "Curie",
    "Dijkstra",
    "Euler",
    "Fermi",
    "Gauss",
    "Hopper",
    "Ishango",
    "Jacquard",
    "Knuth",
    "Lovelace",
    "Mirzakhani",
    "Noether",
    "Ostrom",
    "Pascal",
];

/// The codename of child session `id`.
pub(crate) fn codename(id: &str) -> &'static str {
    let hash = id.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    CODENAMES[hash as usize % CODENAMES.len()]
}

/// The first line of `text`, at most `max` characters.
fn short(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line.to_owned()
    }
}

/// A call's arguments in a few words: the first string argument (a path,
/// a pattern, a command).
fn brief(arguments: &serde_json::Value) -> String {
    arguments
        .as_object()
        .and_then(|a| a.values().find_map(serde_json::Value::as_str))
        .map(|v| short(v, 60))
        .unwrap_or_default()
}

/// Forgets a child session's background processes when dropped: the
/// table goes, and with it (SIGKILL) whatever still runs.
struct ForgetOnDrop(Arc<etch_process::Processes>, String);

impl Drop for ForgetOnDrop {
    fn drop(&mut self) {
        self.0.forget(&self.1);
    }
}

/// Runs `task` (with the parent's optional `extra` context) under
/// `profile`;
/// the parent's result text, or the tool error's text.
pub(super) async fn run(
    parent: &Parent,
    profile: &SubagentProfile,
    task: &str,
    extra: &str,
    ctx: &ToolContext,
) -> Result<String, String> {
    let name = &profile.name;
    let started = Instant::now();
    let mut place = parent.place.clone();
    let mut settings = parent.settings.clone();
    let mut context = parent.context.clone();
    let parent_log = load_session(&ctx.origin.session_path)
        .map_err(|e| format!("subagent profile {name}: cannot read the parent session: {e}"))?;
    settings.provider = profile::flags(
        &current_flags(parent, &parent_log),
        &model_state(&parent_log).provider,
        profile,
    );
    profile::shape(&mut place, &mut settings, &mut context, profile)?;
    let selection = provider::select(&settings.provider, &place.config, None)
        .await
        .map_err(|e| format!("subagent profile {name}: {e}"))?;
    let lineage = Lineage {
        parent_tool_call_id: ctx.call_id.clone(),
        profile: name.clone(),
    };
    let mut child = Session::create_child(
        place,
        settings,
        context,
        selection,
        &ChildOf {
            parent: &parent_log,
            before: &ctx.origin.assistant_event_id,
            lineage: &lineage,
        },
        task.to_owned(),
    )
    .map_err(|e| format!("subagent profile {name}: could not create its session: {e}"))?;
    let id = child.id().to_owned();
    // Whatever the child starts in the background goes with it, even
    // when this task is dropped (an abort past its grace, a panic).
    let _processes = ForgetOnDrop(Arc::clone(&parent.context.processes), id.clone());
    // The child's calls that ask go to whoever watches the parent.
    let _asks_through = parent.context.approvals.alias(&id, &ctx.origin.session_id);
    let mut run = SubagentRun {
        profile: name,
        task,
        tool_call_id: &ctx.call_id,
        end: None,
    };
    child
        .subagent_hooks(run)
        .await
        .map_err(|why| format!("subagent {name} did not start (child session {id}): {why}"))?;
    let prompt = if extra.is_empty() {
        task.to_owned()
    } else {
        format!("{task}\n\nContext from the parent agent:\n{extra}")
    };
    // The child stops with the parent, or past one of its bounds.
    let stop = ctx.cancel.child_token();
    let mut budget = Watch {
        used: 0,
        max: profile.max_tokens,
        stop: stop.clone(),
        progress: ctx.progress.clone(),
        label: format!("{} / {name}: {}", codename(&id), short(task, 50)),
    };
    budget.say("starting");
    let _running = parent
        .context
        .children
        .enter(&ctx.call_id, budget.label.clone(), stop.clone());
    let (outcome, timed_out) = {
        let run = child.run(prompt, &mut budget, &stop);
        tokio::pin!(run);
        match profile.max_seconds {
            Some(seconds) => tokio::select! {
                outcome = &mut run => (outcome, false),
                () = tokio::time::sleep(Duration::from_secs(seconds)) => {
                    stop.cancel();
                    (run.await, true)
                }
            },
            None => (run.await, false),
        }
    };
    let over_tokens = profile.max_tokens.filter(|max| budget.used > *max);
    let (outcome_word, detail) = match &outcome {
        Ok(done) => ("ok", done.final_text.clone()),
        Err(RunError::Cancelled) if !timed_out && over_tokens.is_none() => {
            ("aborted", "Operation aborted".to_owned())
        }
        Err(err) => ("error", err.to_string()),
    };
    // What the child started in the background ends with it.
    if let Some(table) = parent.context.processes.close(&id).await {
        let _ = child.log_ends_of(&table);
    }
    run.end = Some((outcome_word, &detail, started.elapsed().as_millis()));
    // The result stands whatever a stop hook says; its record is kept.
    let _ = child.subagent_hooks(run).await;
    let elapsed = started.elapsed().as_secs_f64();
    let counts = child.stats().map_or_else(
        |_| String::new(),
        |s| {
            format!(
                ", {} model requests, {} tool calls",
                s.model_requests, s.tool_calls
            )
        },
    );
    let model = child.selection().client.model().to_owned();
    let inspect = format!("inspect: etch show {id}   continue: etch resume {id}");
    match outcome {
        Ok(outcome) => {
            let mut text = format!(
                "subagent {name} finished in {elapsed:.1} s (child session {id}, model {model}{counts})\n{inspect}\n\n"
            );
            let _ = write!(text, "{}", outcome.final_text.trim());
            Ok(text)
        }
        Err(RunError::Cancelled) if timed_out || over_tokens.is_some() => {
            let bound = match over_tokens {
                Some(max) => format!(
                    "max_tokens ({max}): its requests used {} tokens",
                    budget.used
                ),
                None => format!(
                    "max_seconds ({} s)",
                    profile.max_seconds.unwrap_or_default()
                ),
            };
            Err(format!(
                "subagent {name} stopped after {elapsed:.1} s at its {bound} (child session {id}{counts}; it keeps what it did)\n{inspect}"
            ))
        }
        Err(RunError::Cancelled) => Err("Operation aborted".to_owned()),
        Err(err) => Err(format!(
            "subagent {name} stopped after {elapsed:.1} s without an answer (child session {id}{counts}): {err}\n{inspect}"
        )),
    }
}
