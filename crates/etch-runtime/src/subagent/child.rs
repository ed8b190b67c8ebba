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
use std::time::{Duration, Instant};

use etch_config::SubagentProfile;
use etch_core::{Observer, RunError};
use etch_model::Usage;
use etch_session::Lineage;
use etch_tool::ToolContext;
use tokio_util::sync::CancellationToken;

use super::{Parent, profile};
use crate::hooks::SubagentRun;
use crate::provider;
use crate::session::{ChildOf, Session};

/// The child's observer: its events are in its own log; this only adds
/// up the tokens of its requests and stops it past `max_tokens`.
struct Budget {
    /// Input plus output tokens so far.
    used: u64,
    /// The profile's bound, if any.
    max: Option<u64>,
    /// Cancels the child.
    stop: CancellationToken,
}

impl Observer for Budget {
    fn durable_line(&mut self, line: &str) {
        if !line.contains("\"type\":\"model.usage\"") {
            return;
        }
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
    let current = parent_provider(&ctx.origin.session_path);
    settings.provider = profile::flags(&parent.settings.provider, &current, profile);
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
            parent: &ctx.origin.session_path,
            before: &ctx.origin.assistant_event_id,
            lineage: &lineage,
        },
        task.to_owned(),
    )
    .map_err(|e| format!("subagent profile {name}: could not create its session: {e}"))?;
    let id = child.id().to_owned();
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
    let mut budget = Budget {
        used: 0,
        max: profile.max_tokens,
        stop: stop.clone(),
    };
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

/// The provider the parent session talks to, from its `session.started`
/// line (only that line is read: a parent log can be large).
fn parent_provider(path: &std::path::Path) -> String {
    use std::io::BufRead as _;
    std::fs::File::open(path)
        .ok()
        .and_then(|f| std::io::BufReader::new(f).lines().next())
        .and_then(Result::ok)
        .and_then(|line| serde_json::from_str::<serde_json::Value>(&line).ok())
        .and_then(|event| event["data"]["provider"].as_str().map(str::to_owned))
        .unwrap_or_default()
}
