//! The loop's interception points: where something outside the loop (the
//! runtime's external hooks, E-HOOK) may look at a value on its way and
//! pass it on, rewrite it, refuse it, or fail the operation.
//!
//! The points are prompt admission, the start and end of a user turn, the
//! request build, before a tool call is validated and scheduled, after a
//! tool call, and before and after compaction. Each answer comes with the
//! records of what ran, which the loop appends to the session log as
//! `hook.run` events, so the log says why a call did not run.
//!
//! This module must not know what runs at a point (shell commands, their
//! envelope, matchers, trust): it defines the contract and nothing else.

use std::future::Future;
use std::pin::Pin;

use etch_compact::Trigger;
use etch_model::{Message, ToolCall};
use etch_session::HookRunData;

/// A future an interceptor returns.
pub type InterceptFuture<'a, T> = Pin<Box<dyn Future<Output = Intercepted<T>> + Send + 'a>>;

/// A point the loop can be intercepted at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// A prompt is about to be admitted (`UserPromptSubmit`).
    Prompt,
    /// A user turn starts (`TurnStart`).
    TurnStart,
    /// A user turn ended (`TurnComplete`).
    TurnComplete,
    /// A request's messages are built (`ContextBuild`).
    Context,
    /// A tool call is about to be validated and scheduled (`PreToolUse`).
    PreTool,
    /// A tool call produced its result (`PostToolUse`).
    PostTool,
    /// A compaction is about to summarize (`PreCompact`).
    PreCompact,
    /// A compaction made its summary (`PostCompact`).
    PostCompact,
}

/// What an interception point decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<T> {
    /// Go on with this value (as given, or rewritten).
    Go(T),
    /// Refused: the prompt is not admitted, the call does not run, the
    /// compaction is cancelled. The reason, when one was given.
    Blocked(Option<String>),
    /// Something at the point failed; the operation fails with this text
    /// (what failed and why).
    Failed(String),
}

/// A verdict and the records of the hooks that reached it, in run order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intercepted<T> {
    /// The decision.
    pub verdict: Verdict<T>,
    /// One record per hook that ran.
    pub records: Vec<HookRunData>,
}

impl<T> Intercepted<T> {
    /// Nothing ran: go on with `value`.
    pub fn pass(value: T) -> Self {
        Self {
            verdict: Verdict::Go(value),
            records: Vec::new(),
        }
    }
}

/// How a compaction goes on after [`Intercept::pre_compact`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeforeCompact {
    /// Summarize as usual.
    Summarize,
    /// Use this summary; no summarizer request is made.
    Summary(String),
}

/// A finished user turn, as [`Intercept::turn_complete`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct TurnEnd<'a> {
    /// The turn's number in the session (user prompts so far).
    pub turn: u32,
    /// The final assistant text (empty when the turn failed early).
    pub final_text: &'a str,
    /// Why the turn failed, if it did.
    pub error: Option<&'a str>,
}

/// Something that intercepts the loop. Every method has a default that
/// passes the value through, so an implementation only writes the points
/// it serves and [`Intercept::wants`] keeps the loop from calling the rest.
pub trait Intercept: Send + Sync {
    /// Whether anything runs at `point`; the loop skips points that say
    /// no, so an unused point costs nothing.
    fn wants(&self, point: Point) -> bool;

    /// A prompt is about to be admitted; `Go` carries the prompt to store
    /// and send.
    fn prompt(&self, prompt: String) -> InterceptFuture<'_, String> {
        Box::pin(async move { Intercepted::pass(prompt) })
    }

    /// A user turn starts after its prompt was admitted.
    fn turn_start<'a>(&'a self, _turn: u32, _prompt: &'a str) -> InterceptFuture<'a, ()> {
        Box::pin(async { Intercepted::pass(()) })
    }

    /// A user turn ended (with or without an answer).
    fn turn_complete<'a>(&'a self, _end: TurnEnd<'a>) -> InterceptFuture<'a, ()> {
        Box::pin(async { Intercepted::pass(()) })
    }

    /// The messages of the next request; `Go` carries the list to send.
    fn context(&self, messages: Vec<Message>) -> InterceptFuture<'_, Vec<Message>> {
        Box::pin(async move { Intercepted::pass(messages) })
    }

    /// A tool call before validation; `Go` carries the arguments to
    /// validate and run, as JSON text (the model's raw text when it did
    /// not parse).
    fn pre_tool<'a>(
        &'a self,
        _call: &'a ToolCall,
        arguments: String,
    ) -> InterceptFuture<'a, String> {
        Box::pin(async move { Intercepted::pass(arguments) })
    }

    /// A tool call's result text; `Go` carries the text to store and send.
    fn post_tool<'a>(
        &'a self,
        _call: &'a ToolCall,
        text: String,
        _is_error: bool,
    ) -> InterceptFuture<'a, String> {
        Box::pin(async move { Intercepted::pass(text) })
    }

    /// A compaction is about to summarize; `Blocked` cancels it.
    fn pre_compact<'a>(
        &'a self,
        _trigger: Trigger,
        _instructions: Option<&'a str>,
        _tokens_before: u64,
    ) -> InterceptFuture<'a, BeforeCompact> {
        Box::pin(async { Intercepted::pass(BeforeCompact::Summarize) })
    }

    /// A compaction's summary before it is appended; `Go` carries the
    /// summary to append.
    fn post_compact(&self, _trigger: Trigger, summary: String) -> InterceptFuture<'_, String> {
        Box::pin(async move { Intercepted::pass(summary) })
    }
}

/// Awaits an interceptor's answer unless `cancel` fires first (the
/// answer's future is dropped, which stops whatever it ran).
pub async fn until_cancelled<T>(
    answer: InterceptFuture<'_, T>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Option<Intercepted<T>> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        answer = answer => Some(answer),
    }
}
