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

use etch_compact::{CompactError, Outcome, Settings, Trigger, estimate_request, message_tokens};
use etch_model::Usage;
use etch_session::{load_session, project_messages};
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, RunState};
use crate::error::RunError;
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
        let outcome = etch_compact::compact(
            &session,
            state.writer,
            &*self.client,
            trigger,
            None,
            &policy.settings,
            cancel,
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

/// How one compaction ended, before it is reported.
enum Ended {
    /// Appended; estimated tokens before and after.
    Compacted(u64, u64),
    /// Nothing worth compacting; why.
    Skipped(String),
    /// The summary could not be made; why.
    Failed(String),
}
