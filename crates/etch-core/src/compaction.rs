//! When the loop compacts (E-CTX-16, E-CTX-18, P-OVF-01/02, C22): the
//! opt-in threshold check before each model request, and the always-on
//! recovery from a provider's context-overflow error (compact once, retry
//! once per run).
//!
//! The compaction itself (cut point, summarizer call, `context.summary`
//! event) belongs to `etch-compact`; this module decides when to call it,
//! keeps a cheap running estimate of the next request between passes, and
//! rebuilds the history from the log afterwards. It must not know which
//! provider answers or how notices are rendered: observers get
//! [`AgentEvent::CompactionStart`] and [`AgentEvent::CompactionEnd`].

use etch_compact::{
    CompactError, Outcome, Settings, Skip, Trigger, estimate_request, message_tokens,
};
use etch_model::{ModelClient, Usage};
use etch_session::{LoadedSession, SessionWriter, load_session, project_messages, types};
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, RunState};
use crate::error::RunError;
use crate::intercept::{BeforeCompact, Intercept, Intercepted, Point, Verdict, until_cancelled};
use crate::observer::{AgentEvent, CompactionResult};

/// How a run compacts. Overflow recovery is on whenever a policy is given;
/// threshold compaction only with `auto`.
#[derive(Debug, Clone, Copy)]
pub struct CompactionPolicy {
    /// Threshold compaction before requests (`[context] auto_compact`).
    pub auto: bool,
    /// Estimated tokens at which threshold compaction runs.
    pub threshold_tokens: u64,
    /// What to keep raw and how to count tokens.
    pub settings: Settings,
    /// Estimated tokens of the pinned prompt and tool schemas, counted when
    /// the log has no provider usage to measure the request with.
    pub pinned_tokens: u64,
}

/// A running estimate of the next request's size: a measured base (provider
/// usage, the estimate at run start, or a compaction's `tokensAfter`) plus
/// the estimated messages appended since, so no round reloads the log.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Estimate {
    /// Tokens of the context up to `len` messages, if known.
    base: Option<u64>,
    /// History length the base covers.
    len: usize,
    /// Threshold compaction was skipped or failed in this run; trying again
    /// every round would repeat the same (possibly paid) summary request.
    gave_up: bool,
}

impl Estimate {
    /// Records a measured size covering the first `len` history messages.
    pub(crate) fn set(&mut self, tokens: u64, len: usize) {
        self.base = Some(tokens);
        self.len = len;
    }

    /// Records a pass's provider usage: its total covers the request and the
    /// answer, i.e. the history up to `len`.
    pub(crate) fn usage(&mut self, usage: &Usage, len: usize) {
        let total = if usage.total_tokens > 0 {
            usage.total_tokens
        } else {
            usage.input_tokens + usage.output_tokens
        };
        self.set(total, len);
    }
}

impl Agent {
    /// The threshold check of E-CTX-16, run after the prompt is appended and
    /// before each request. The first check of a run measures the log (C22:
    /// last usage plus the estimator); later ones use the running estimate.
    pub(crate) async fn maybe_compact(
        &self,
        state: &mut RunState<'_>,
        cancel: &CancellationToken,
    ) -> Result<(), RunError> {
        let Some(policy) = self.config.compaction.filter(|p| p.auto) else {
            return Ok(());
        };
        if state.estimate.gave_up {
            return Ok(());
        }
        let estimate = if let Some(base) = state.estimate.base {
            base + state.history[state.estimate.len.min(state.history.len())..]
                .iter()
                .map(|m| message_tokens(m, policy.settings.estimate))
                .sum::<u64>()
        } else {
            let session = load_session(state.writer.path())?;
            let tokens = estimate_request(&session, policy.settings.estimate, policy.pinned_tokens);
            state.estimate.set(tokens, state.history.len());
            tokens
        };
        if estimate >= policy.threshold_tokens
            && !self.compact(state, Trigger::Auto, cancel).await?
        {
            state.estimate.gave_up = true;
        }
        Ok(())
    }

    /// Compacts the session now and rebuilds the history from the log.
    /// Returns whether a summary was appended. Observers get one
    /// `CompactionEnd` for every `CompactionStart`: compacted, skipped (with
    /// why) or failed (a failed summary leaves the history as it was; other
    /// failures, e.g. cancellation, are also the run's error).
    pub(crate) async fn compact(
        &self,
        state: &mut RunState<'_>,
        trigger: Trigger,
        cancel: &CancellationToken,
    ) -> Result<bool, RunError> {
        let Some(policy) = self.config.compaction else {
            return Ok(false);
        };
        state
            .observer
            .agent_event(&AgentEvent::CompactionStart { trigger });
        let ended = self.compact_now(state, trigger, &policy, cancel).await;
        let error = match &ended {
            Err(RunError::Cancelled) => "cancelled".to_owned(),
            Err(err) => err.to_string(),
            Ok(_) => String::new(),
        };
        let result = match &ended {
            Ok(Ended::Compacted(before, after)) => CompactionResult::Compacted {
                tokens_before: *before,
                tokens_after: *after,
            },
            Ok(Ended::Skipped(why)) => CompactionResult::Skipped(why),
            Ok(Ended::Failed(why)) => CompactionResult::Failed(why),
            Err(_) => CompactionResult::Failed(&error),
        };
        state
            .observer
            .agent_event(&AgentEvent::CompactionEnd { trigger, result });
        ended.map(|ended| matches!(ended, Ended::Compacted(..)))
    }

    /// The compaction proper: appends the summary and rebuilds the history
    /// and the running estimate, or says why nothing was appended.
    async fn compact_now(
        &self,
        state: &mut RunState<'_>,
        trigger: Trigger,
        policy: &CompactionPolicy,
        cancel: &CancellationToken,
    ) -> Result<Ended, RunError> {
        let session = load_session(state.writer.path())?;
        let client = std::sync::Arc::clone(&state.client);
        let observer = &mut *state.observer;
        let outcome = compact_session(
            &session,
            state.writer,
            &Compaction {
                client: &*client,
                trigger,
                focus: None,
                settings: &policy.settings,
                intercept: self.intercept.as_deref(),
            },
            cancel,
            &mut |line| observer.durable_line(line),
        )
        .await;
        match outcome {
            Ok(Outcome::Compacted { data, line, .. }) => {
                state.observer.durable_line(&line);
                let reloaded = load_session(state.writer.path())?;
                *state.history = project_messages(&reloaded).messages;
                // Measure the new projection the way the run start does, so
                // the pinned prompt counts when the log has no usage.
                let tokens =
                    estimate_request(&reloaded, policy.settings.estimate, policy.pinned_tokens);
                state.estimate.set(tokens, state.history.len());
                Ok(Ended::Compacted(data.tokens_before, data.tokens_after))
            }
            Ok(Outcome::Skipped(skip)) => Ok(Ended::Skipped(skip.to_string())),
            Err(CompactError::Cancelled) => Err(RunError::Cancelled),
            Err(err) => Ok(Ended::Failed(err.to_string())),
        }
    }
}

/// What one compaction works with besides the session and its writer.
pub struct Compaction<'a> {
    /// The summarizer.
    pub client: &'a dyn ModelClient,
    /// Why it runs (`manual`, `auto`, `overflow`).
    pub trigger: Trigger,
    /// The user's focus instructions (`/compact focus`).
    pub focus: Option<&'a str>,
    /// What to keep raw.
    pub settings: &'a Settings,
    /// The compaction hooks, if any.
    pub intercept: Option<&'a dyn Intercept>,
}

/// Compacts the active branch of `session` through `writer`, with the
/// `PreCompact` and `PostCompact` points around the summary (G5): a
/// `PreCompact` answer may cancel (a skip, nothing appended) or supply the
/// summary (no summarizer request); `PostCompact` may rewrite the summary
/// before `context.summary` is appended. A failed hook fails the
/// compaction with nothing but its `hook.run` record appended. Each
/// appended line goes to `on_line`.
pub async fn compact_session(
    session: &LoadedSession,
    writer: &mut SessionWriter,
    compaction: &Compaction<'_>,
    cancel: &CancellationToken,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<Outcome, CompactError> {
    let intercept = compaction
        .intercept
        .filter(|i| i.wants(Point::PreCompact) || i.wants(Point::PostCompact));
    let plan = match etch_compact::plan(session, compaction.settings) {
        Ok(plan) => plan,
        Err(skip) => return Ok(Outcome::Skipped(skip)),
    };
    let focus = compaction.focus.map(str::trim).filter(|f| !f.is_empty());
    let mut summary = None;
    if let Some(intercept) = intercept.filter(|i| i.wants(Point::PreCompact)) {
        let before = intercept.pre_compact(compaction.trigger, focus, plan.tokens_before);
        let before = until_cancelled(before, cancel)
            .await
            .ok_or(CompactError::Cancelled)?;
        match record(writer, before, on_line)? {
            Verdict::Go(BeforeCompact::Summarize) => {}
            Verdict::Go(BeforeCompact::Summary(text)) => summary = Some(text),
            Verdict::Blocked(reason) => {
                return Ok(Outcome::Skipped(Skip::CancelledByHook { reason }));
            }
            Verdict::Failed(why) => return Err(CompactError::Hook(why)),
        }
    }
    // What the summary request cost, recorded with the summary.
    let mut spent = etch_compact::Spent::default();
    let mut summary = match summary {
        Some(text) => text,
        None => {
            etch_compact::summarize_counted(
                compaction.client,
                &plan,
                focus,
                session.session_id(),
                cancel,
                &mut spent,
            )
            .await?
        }
    };
    if cancel.is_cancelled() {
        return Err(CompactError::Cancelled);
    }
    if let Some(intercept) = intercept.filter(|i| i.wants(Point::PostCompact)) {
        let after = intercept.post_compact(compaction.trigger, summary);
        let after = until_cancelled(after, cancel)
            .await
            .ok_or(CompactError::Cancelled)?;
        summary = match record(writer, after, on_line)? {
            Verdict::Go(text) => text,
            Verdict::Blocked(_) => {
                return Err(CompactError::Hook(
                    "a PostCompact hook cannot block; it may only rewrite the summary".to_owned(),
                ));
            }
            Verdict::Failed(why) => return Err(CompactError::Hook(why)),
        };
    }
    let outcome = etch_compact::finish(
        writer,
        plan,
        summary,
        &spent,
        compaction.trigger,
        focus,
        compaction.settings,
    )?;
    if let Outcome::Compacted { counted, .. } = &outcome {
        for line in counted {
            on_line(line);
        }
    }
    Ok(outcome)
}

/// Appends the `hook.run` records of an answer and returns its verdict.
fn record<T>(
    writer: &mut SessionWriter,
    answer: Intercepted<T>,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<Verdict<T>, CompactError> {
    for data in &answer.records {
        let appended = writer.append(types::HOOK_RUN, data)?;
        on_line(&appended.line);
    }
    Ok(answer.verdict)
}

/// How one compaction ended, before it is reported.
enum Ended {
    /// Appended; estimated tokens before and after.
    Compacted(u64, u64),
    /// Nothing worth compacting; why.
    Skipped(String),
    /// The summary could not be made; why.
    Failed(String),
}
