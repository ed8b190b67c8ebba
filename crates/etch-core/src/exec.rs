//! Executing the tool calls of one assistant message (C19, P-TEXEC).
//!
//! Preflight runs in the model's order: unknown tools, unparseable arguments
//! and schema violations become `tool error:` results without running
//! anything. The remaining calls are scheduled by conflict: a call starts
//! once every earlier call it conflicts with has finished, so conflicting
//! calls keep source order and everything else overlaps. Results are returned
//! in source order whatever the completion order. On cancellation no new call
//! starts, running calls get a short grace period to kill their processes,
//! and every call without a result is answered `Operation aborted` (G20).
//! Every result and progress update has the run's secrets redacted before
//! anyone sees it (see [`crate::redact`]).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use etch_model::ToolCall;
use etch_session::HookRunData;
use etch_tool::{
    Access, CallOrigin, ProgressSink, Record, Tool, ToolContext, ToolError, ToolOutput,
    ToolRegistry,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::intercept::{Intercept, Point, Verdict, until_cancelled};
use crate::observer::{AgentEvent, Observer};
use crate::redact::{Redactor, Secrets};

/// Text of a result for a call that was cancelled before it finished.
pub const ABORTED: &str = "Operation aborted";

/// How long running tools may take to wind down after cancellation before
/// their tasks are dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The result of one call as the model will see it, with the tool's
/// structured details (logged and shown, never sent to the model).
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// Result text; failures start with `tool error: `.
    pub text: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// Structured data the tool returned beside the text.
    pub details: Option<Value>,
    /// The hooks that ran for the call (`PreToolUse`, `PostToolUse`),
    /// logged as `hook.run` before the result.
    pub hooks: Vec<HookRunData>,
    /// The index of the earlier call of the same message this one
    /// repeated exactly; it did not run, and the guard judges the first.
    pub copy_of: Option<usize>,
    /// Records the call asked to log before its result (event type,
    /// data): approval decisions, background processes started.
    pub records: Vec<(&'static str, Value)>,
    /// Images the model receives after the text.
    pub images: Vec<etch_model::Image>,
}

impl CallResult {
    /// A failure result with the `tool error: ` prefix (C36).
    pub fn error(message: &str) -> Self {
        Self {
            text: format!("tool error: {message}"),
            is_error: true,
            details: None,
            hooks: Vec::new(),
            copy_of: None,
            records: Vec::new(),
            images: Vec::new(),
        }
    }

    /// Replaces every secret in the text and the details.
    fn redact(&mut self, secrets: &Secrets) {
        if secrets.is_empty() {
            return;
        }
        secrets.redact_string(&mut self.text);
        if let Some(details) = &mut self.details {
            secrets.redact_value(details);
        }
    }

    /// Converts what a tool returned.
    fn from_tool(result: Result<ToolOutput, ToolError>) -> Self {
        match result {
            Ok(out) => Self {
                text: out.text,
                is_error: false,
                details: out.details,
                hooks: Vec::new(),
                copy_of: None,
                records: Vec::new(),
                images: out.images,
            },
            Err(err) => Self::error(&err.0),
        }
    }
}

/// Where the calls of a batch run.
#[derive(Clone)]
pub struct BatchEnv<'a> {
    /// The active tools.
    pub registry: &'a ToolRegistry,
    /// Working directory.
    pub cwd: &'a Path,
    /// Session temp directory.
    pub temp_dir: &'a Path,
    /// Run cancellation.
    pub cancel: &'a CancellationToken,
    /// The session and assistant message the calls belong to.
    pub origin: &'a CallOrigin,
    /// What intercepts tool calls (hooks), if anything.
    pub intercept: Option<&'a Arc<dyn Intercept>>,
    /// The secrets no result may carry (E-TOOL-22).
    pub redactor: &'a Redactor,
    /// Calls the loop refuses before they run (by call id), with the
    /// reason the model gets as the call's error.
    pub refused: &'a HashMap<String, String>,
}

/// A call that passed preflight.
struct Ready {
    /// The tool to run.
    tool: Arc<dyn Tool>,
    /// Validated arguments.
    args: Value,
    /// What it touches.
    access: Access,
    /// The call as it will run (arguments as a `PreToolUse` hook left
    /// them), for the `PostToolUse` hook.
    call: ToolCall,
    /// The `PreToolUse` records, carried to the result.
    hooks: Vec<HookRunData>,
}

/// Checks one call before anything runs. The error is the call's own
/// result (what the model gets instead of a run), passed on at once:
/// boxing it would only add an allocation.
#[allow(clippy::result_large_err)]
fn preflight(
    call: &ToolCall,
    argument_error: Option<&String>,
    registry: &ToolRegistry,
    cwd: &Path,
) -> Result<Ready, CallResult> {
    let Some(tool) = registry.get(&call.name) else {
        // P-TEXEC-02's exact text first, then what the model can call.
        let available: Vec<String> = registry.specs().into_iter().map(|s| s.name).collect();
        let listed = if available.is_empty() {
            "none".to_owned()
        } else {
            available.join(", ")
        };
        return Err(CallResult::error(&format!(
            "Tool {} not found\nAvailable tools: {listed}",
            call.name
        )));
    };
    if !tool.available() {
        return Err(CallResult::error(&format!(
            "Tool {} is not available any more (the process behind it stopped); do without it",
            call.name
        )));
    }
    if let Some(err) = argument_error {
        return Err(CallResult::error(&format!(
            "could not parse the arguments of tool {}: {err}; send the arguments as one JSON object",
            call.name
        )));
    }
    let args = etch_tool::schema::without_placeholders(&tool.spec().parameters, &call.arguments);
    if let Err(errors) = etch_tool::schema::validate(&tool.spec().parameters, &args) {
        return Err(CallResult::error(&etch_tool::schema::format_errors(
            &call.name, &errors, &args,
        )));
    }
    let access = tool.access(&args, cwd);
    Ok(Ready {
        tool: Arc::clone(&tool),
        call: ToolCall {
            arguments: args.clone(),
            ..call.clone()
        },
        args,
        access,
        hooks: Vec::new(),
    })
}

/// The index of an earlier call of the batch that `ready` repeats
/// exactly (same tool, same arguments as they will run), for calls that
/// only read: a read made twice at once returns the same thing, while a
/// command or a change may be meant to happen twice.
fn repeats(pending: &[Option<Ready>], ready: &Ready) -> Option<usize> {
    if !matches!(ready.access, Access::Read(_)) {
        return None;
    }
    pending.iter().position(|earlier| {
        earlier
            .as_ref()
            .is_some_and(|e| e.call.name == ready.call.name && e.args == ready.args)
    })
}

/// Text of a block without a reason (G6).
const BLOCKED: &str = "Tool execution was blocked";

/// Runs the `PreToolUse` point for `call`: the call to validate (with
/// its arguments as the hooks left them, and whether they still fail to
/// parse), or the result that answers it instead (a block or a failure,
/// in G6's words). Records go with either.
async fn pre_tool(
    intercept: &dyn Intercept,
    call: &ToolCall,
    argument_error: Option<&String>,
    cancel: &CancellationToken,
) -> (
    Result<(ToolCall, Option<String>), CallResult>,
    Vec<HookRunData>,
) {
    let raw = match &call.arguments {
        Value::String(raw) if argument_error.is_some() => raw.clone(),
        other => other.to_string(),
    };
    let Some(answer) = until_cancelled(intercept.pre_tool(call, raw.clone()), cancel).await else {
        return (Err(CallResult::error(ABORTED)), Vec::new());
    };
    let checked = match answer.verdict {
        Verdict::Go(arguments) if arguments == raw => Ok((call.clone(), argument_error.cloned())),
        Verdict::Go(arguments) => match serde_json::from_str::<Value>(&arguments) {
            Ok(value @ Value::Object(_)) => Ok((
                ToolCall {
                    arguments: value,
                    ..call.clone()
                },
                None,
            )),
            Ok(_) => Err(CallResult::error(
                "PreToolUse hook failed: the rewritten \"arguments\" is not a JSON object",
            )),
            Err(err) => Err(CallResult::error(&format!(
                "PreToolUse hook failed: the rewritten \"arguments\" is not valid JSON ({err})"
            ))),
        },
        Verdict::Blocked(reason) => Err(CallResult::error(reason.as_deref().unwrap_or(BLOCKED))),
        Verdict::Failed(detail) => Err(CallResult::error(&format!(
            "PreToolUse hook failed: {detail}"
        ))),
    };
    (checked, answer.records)
}

/// Runs the `PostToolUse` point over a finished call's result (G5, G6):
/// the text as the hooks left it, or a failure that replaces the raw
/// output. A rewritten text drops the tool's structured details, which
/// could still hold what the hook redacted.
async fn post_tool(
    intercept: &dyn Intercept,
    call: &ToolCall,
    mut result: CallResult,
) -> CallResult {
    let answer = intercept
        .post_tool(call, result.text.clone(), result.is_error)
        .await;
    let mut hooks = std::mem::take(&mut result.hooks);
    hooks.extend(answer.records);
    let mut result = match answer.verdict {
        Verdict::Go(text) if text == result.text => result,
        Verdict::Go(text) => CallResult {
            text,
            details: None,
            ..result
        },
        Verdict::Blocked(_) => CallResult::error(
            "PostToolUse hook failed: a PostToolUse hook cannot block; it may only rewrite the output",
        ),
        Verdict::Failed(detail) => CallResult::error(&format!("PostToolUse hook failed: {detail}")),
    };
    result.hooks = hooks;
    result
}

/// Runs a batch; returns results in source order and whether it was cancelled.
#[allow(clippy::result_large_err)] // as for `preflight`
pub async fn run_batch<S: BuildHasher>(
    calls: &[ToolCall],
    argument_errors: &HashMap<String, String, S>,
    env: &BatchEnv<'_>,
    observer: &mut dyn Observer,
) -> (Vec<CallResult>, bool) {
    let n = calls.len();
    let mut results: Vec<Option<CallResult>> = vec![None; n];
    let mut pending: Vec<Option<Ready>> = Vec::with_capacity(n);
    observer.agent_event(&AgentEvent::ToolBatchStart { calls });
    // A call to a tool no one offers yet may be for a plugin or MCP
    // server still starting: wait for whatever could offer it (only
    // that one, so a slow server delays only its own tools) before
    // calling it unknown.
    if env.registry.pending() {
        let unknown: Vec<&str> = calls
            .iter()
            .filter(|c| env.registry.get(&c.name).is_none())
            .map(|c| c.name.as_str())
            .collect();
        if !unknown.is_empty() {
            let started = async {
                for source in env.registry.sources() {
                    for name in &unknown {
                        source.settle_for(name).await;
                    }
                }
            };
            tokio::select! {
                () = started => {}
                () = env.cancel.cancelled() => {}
            }
        }
    }
    for (i, call) in calls.iter().enumerate() {
        observer.agent_event(&AgentEvent::ToolExecutionStart { call });
        let intercept = env.intercept.filter(|i| i.wants(Point::PreTool));
        let mut hooks = Vec::new();
        let checked = if env.cancel.is_cancelled() {
            Err(CallResult::error(ABORTED))
        } else if let Some(reason) = env.refused.get(&call.id) {
            Err(CallResult::error(reason))
        } else if let Some(intercept) = intercept {
            let (hooked, records) = pre_tool(
                &**intercept,
                call,
                argument_errors.get(&call.id),
                env.cancel,
            )
            .await;
            hooks = records;
            hooked.and_then(|(call, error)| preflight(&call, error.as_ref(), env.registry, env.cwd))
        } else {
            preflight(call, argument_errors.get(&call.id), env.registry, env.cwd)
        };
        let checked = match checked {
            Ok(ready) => match repeats(&pending, &ready) {
                // Small models send the same call several times in one
                // message; it runs once, and the copies say so rather
                // than each running (and each counting as a repeat).
                Some(first) => Err(CallResult {
                    text: format!(
                        "[etch: this is the same call as call {} of this message; it ran once: use that result.]",
                        first + 1
                    ),
                    is_error: false,
                    details: None,
                    hooks,
                    copy_of: Some(first),
                    records: Vec::new(),
                    images: Vec::new(),
                }),
                None => Ok(Ready { hooks, ..ready }),
            },
            Err(result) => Err(CallResult { hooks, ..result }),
        };
        match checked {
            Ok(ready) => pending.push(Some(ready)),
            Err(result) => {
                observer.agent_event(&AgentEvent::ToolExecutionEnd {
                    call_id: &call.id,
                    text: &result.text,
                    is_error: result.is_error,
                    elapsed: Duration::ZERO,
                    details: None,
                });
                results[i] = Some(result);
                pending.push(None);
            }
        }
    }
    let deps: Vec<Vec<usize>> = (0..n)
        .map(|i| match &pending[i] {
            None => Vec::new(),
            Some(ready) => (0..i)
                .filter(|&j| {
                    pending[j]
                        .as_ref()
                        .is_some_and(|r| r.access.conflicts_with(&ready.access))
                })
                .collect(),
        })
        .collect();
    let cancelled = schedule(calls, &mut pending, &deps, &mut results, env, observer).await;
    let results = results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| CallResult::error(ABORTED)))
        .collect();
    (results, cancelled)
}

/// The scheduling loop: starts calls whose conflicting predecessors are done,
/// forwards progress, and records completions until nothing is left.
async fn schedule(
    calls: &[ToolCall],
    pending: &mut [Option<Ready>],
    deps: &[Vec<usize>],
    results: &mut [Option<CallResult>],
    env: &BatchEnv<'_>,
    observer: &mut dyn Observer,
) -> bool {
    // One snapshot of the secrets per batch: a login refreshed during the
    // run is redacted from the next batch on.
    let secrets = env.redactor.secrets();
    let (progress_tx, mut progress_rx) = mpsc::unbounded_channel::<(String, String)>();
    let (counters_tx, mut counters_rx) = mpsc::unbounded_channel::<(String, String)>();
    let (records_tx, mut records_rx) = mpsc::unbounded_channel::<Record>();
    let mut recorded: Vec<Record> = Vec::new();
    let mut set: JoinSet<(usize, CallResult, Duration)> = JoinSet::new();
    let mut tasks: HashMap<tokio::task::Id, usize> = HashMap::new();
    let mut cancel_deadline: Option<tokio::time::Instant> = None;
    loop {
        if cancel_deadline.is_none() {
            for i in 0..calls.len() {
                let ready = deps[i].iter().all(|&j| results[j].is_some());
                if !ready {
                    continue;
                }
                if let Some(Ready {
                    tool,
                    args,
                    call,
                    hooks,
                    ..
                }) = pending[i].take()
                {
                    let post = env
                        .intercept
                        .filter(|i| i.wants(Point::PostTool))
                        .map(Arc::clone);
                    let ctx = ToolContext {
                        call_id: calls[i].id.clone(),
                        cwd: env.cwd.to_path_buf(),
                        cancel: env.cancel.child_token(),
                        progress: ProgressSink::new(calls[i].id.clone(), progress_tx.clone())
                            .with_counters(counters_tx.clone())
                            .with_records(records_tx.clone()),
                        temp_dir: PathBuf::from(env.temp_dir),
                        origin: env.origin.clone(),
                        approved: false,
                    };
                    let secrets = secrets.clone();
                    let handle = set.spawn(async move {
                        let started = Instant::now();
                        let mut result = CallResult::from_tool(tool.execute(args, ctx).await);
                        // Before the hooks see it, and again after they
                        // rewrote it: no secret is logged, shown or sent.
                        result.redact(&secrets);
                        result.hooks = hooks;
                        if let Some(post) = post {
                            result = post_tool(&*post, &call, result).await;
                            result.redact(&secrets);
                        }
                        (i, result, started.elapsed())
                    });
                    tasks.insert(handle.id(), i);
                }
            }
        }
        if set.is_empty() {
            break;
        }
        let grace = async {
            match cancel_deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = env.cancel.cancelled(), if cancel_deadline.is_none() => {
                cancel_deadline = Some(tokio::time::Instant::now() + CANCEL_GRACE);
            }
            () = grace => {
                set.abort_all();
                while set.join_next().await.is_some() {}
                break;
            }
            Some((call_id, text)) = progress_rx.recv() => {
                let text = secrets.redact(&text);
                observer.agent_event(&AgentEvent::ToolExecutionUpdate { call_id: &call_id, text: &text });
            }
            Some((call_id, line)) = counters_rx.recv() => {
                observer.agent_event(&AgentEvent::ToolCounters { call_id: &call_id, line: &line });
            }
            joined = set.join_next_with_id() => match joined {
                Some(Ok((_, (i, mut result, elapsed)))) => {
                    // A record is sent before the call's task ends, so
                    // every one of this call is in the channel now.
                    while let Ok(record) = records_rx.try_recv() {
                        recorded.push(record);
                    }
                    result.records = take_records(&mut recorded, &calls[i].id, &secrets);
                    observer.agent_event(&AgentEvent::ToolExecutionEnd {
                        call_id: &calls[i].id,
                        text: &result.text,
                        is_error: result.is_error,
                        elapsed,
                        details: result.details.as_ref(),
                    });
                    results[i] = Some(result);
                }
                Some(Err(err)) => {
                    if let Some(&i) = tasks.get(&err.id()) {
                        let result = if err.is_panic() {
                            CallResult::error(&format!("tool {} crashed; this is a bug in the tool", calls[i].name))
                        } else {
                            CallResult::error(ABORTED)
                        };
                        observer.agent_event(&AgentEvent::ToolExecutionEnd {
                            call_id: &calls[i].id,
                            text: &result.text,
                            is_error: true,
                            elapsed: Duration::ZERO,
                            details: None,
                        });
                        results[i] = Some(result);
                    }
                }
                None => break,
            },
        }
    }
    // A call that was aborted or crashed may have been approved, or
    // have started something, before: that is logged too.
    while let Ok(record) = records_rx.try_recv() {
        recorded.push(record);
    }
    for (i, call) in calls.iter().enumerate() {
        let records = take_records(&mut recorded, &call.id, &secrets);
        if !records.is_empty() {
            let result = results[i].get_or_insert_with(|| CallResult::error(ABORTED));
            result.records.extend(records);
        }
    }
    cancel_deadline.is_some() || env.cancel.is_cancelled()
}

/// Takes the log records of call `call_id` out of `recorded`, with the
/// run's secrets redacted (a denial's reason may quote one).
fn take_records(
    recorded: &mut Vec<Record>,
    call_id: &str,
    secrets: &Secrets,
) -> Vec<(&'static str, Value)> {
    let (mine, others): (Vec<Record>, Vec<Record>) = std::mem::take(recorded)
        .into_iter()
        .partition(|r| r.call_id == call_id);
    *recorded = others;
    mine.into_iter()
        .map(|mut r| {
            secrets.redact_value(&mut r.data);
            (r.kind, r.data)
        })
        .collect()
}
