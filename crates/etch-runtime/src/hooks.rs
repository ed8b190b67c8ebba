//! The session's external hooks at the loop's interception points
//! (E-HOOK, G5, G6): which hooks may run at all (the trust gate for a
//! project's hooks), the payload each event gets, what each answer
//! changes, and the `hook.run` record of every run.
//!
//! Hooks of one event run one after another in configuration order, each
//! seeing the value as the previous one left it (E-HOOK-04); a block or a
//! failure stops the chain. One session runs one hook at a time, also
//! when tools finishing together reach `PostToolUse` at once. Running a
//! hook's process and reading its answer is `etch_hooks`; what a refusal
//! or failure does to the run is the loop's. This module must not know
//! how anything is shown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use etch_compact::Trigger;
use etch_config::trust::{TrustState, TrustStore, project_files};
use etch_core::{BeforeCompact, Intercept, InterceptFuture, Intercepted, Point, TurnEnd, Verdict};
use etch_hooks::{Hook, HookEvent, Hooks, Outcome};
use etch_model::{Message, ToolCall};
use etch_protocol::WireMessage;
use etch_session::HookRunData;
use serde_json::{Map, Value, json};

use crate::error::OpenError;
use crate::events::{message_from_wire, wire_message};
use crate::settings::Place;

/// The hooks a session in `place` may run: every enabled entry, after the
/// trust gate ([`check_trust`]).
pub fn load(place: &Place) -> Result<Hooks, OpenError> {
    check_trust(place)?;
    Hooks::from_config(&place.config.hooks).map_err(|e| OpenError::Usage(e.to_string()))
}

/// The trust gate for what a project's configuration runs (hooks and
/// plugins): a project file whose entries the user has not trusted (or
/// that changed since) refuses the whole session, saying how to review
/// and trust them; there is no prompt to ask in a headless run, and
/// running without a project's policy hooks would be worse than not
/// running.
pub fn check_trust(place: &Place) -> Result<(), OpenError> {
    let config = &place.config;
    let runs_nothing = config.hooks.iter().all(|h| h.disabled)
        && config.plugins.iter().all(|p| p.disabled)
        && config.mcp_servers.iter().all(|s| s.disabled);
    if runs_nothing {
        return Ok(());
    }
    let projects = project_files(config, place.home.as_deref());
    if !projects.is_empty() {
        let Some(home) = place.home.as_deref() else {
            return Err(OpenError::Failed(format!(
                "{} defines hooks, plugins or MCP servers, but HOME is not set, so etch cannot know whether you trusted them; set HOME or remove them",
                projects[0].display()
            )));
        };
        let store = TrustStore::load(home).map_err(|e| OpenError::Failed(e.to_string()))?;
        for file in &projects {
            let why = match store.state(config, file) {
                TrustState::Nothing | TrustState::Trusted => continue,
                TrustState::Untrusted => "are not trusted yet",
                TrustState::Changed => {
                    "(or the project files they name, or its settings that need trust) changed since you trusted them"
                }
            };
            return Err(OpenError::Failed(format!(
                "the hooks, plugins and MCP servers in {} {why}, so etch will not run them; review what they run with `etch trust` in {}, then trust exactly that with `etch trust --yes`",
                file.display(),
                place.cwd.display()
            )));
        }
    }
    Ok(())
}

/// A session's hooks, ready to intercept its runs.
pub struct SessionHooks {
    /// The compiled hooks.
    hooks: Hooks,
    /// Where they run.
    cwd: PathBuf,
    /// The session id, in every payload.
    session_id: String,
    /// The session file, in every payload.
    session_path: PathBuf,
    /// One hook at a time per session.
    one_at_a_time: tokio::sync::Mutex<()>,
}

/// What one hook's answer did to the value of its chain.
enum Step {
    /// Nothing changed.
    Same,
    /// The value changed.
    Rewrote,
    /// The chain stops: refused.
    Blocked(Option<String>),
    /// The hook failed without stopping the action (a Claude Code hook's
    /// non-zero exit); why.
    Reported(String),
}

impl SessionHooks {
    /// The hooks of the session at `session_path`, run from `cwd`.
    pub fn new(hooks: Hooks, cwd: &Path, session_id: &str, session_path: &Path) -> Self {
        Self {
            hooks,
            cwd: cwd.to_path_buf(),
            session_id: session_id.to_owned(),
            session_path: session_path.to_path_buf(),
            one_at_a_time: tokio::sync::Mutex::new(()),
        }
    }

    /// Runs the hooks of `event` matching `subject` over `value`: each
    /// gets the payload `payload` builds from the current value, and
    /// `apply` takes its answer's fields into the value (or says why they
    /// cannot be taken).
    async fn chain<V>(
        &self,
        event: HookEvent,
        subject: &str,
        tool_call_id: Option<&str>,
        mut value: V,
        payload: impl Fn(&V) -> Map<String, Value>,
        apply: impl Fn(&mut V, Map<String, Value>) -> Result<Step, String>,
    ) -> Intercepted<V> {
        let mut records = Vec::new();
        for hook in self.hooks.matching(event, subject) {
            let mut fields = payload(&value);
            fields.insert("sessionPath".into(), json!(self.session_path));
            fields.insert("sessionId".into(), json!(self.session_id));
            let input = etch_hooks::envelope(event, &self.cwd, Value::Object(fields));
            let ran = {
                let _turn = self.one_at_a_time.lock().await;
                etch_hooks::run(hook, &self.cwd, &input, &[]).await
            };
            let step = match ran.outcome {
                Outcome::Ok(answer) => apply(&mut value, answer)
                    .map_err(|why| format!("returned what etch cannot use: {why}")),
                Outcome::Blocked(reason) => Ok(Step::Blocked(reason)),
                Outcome::NonBlocking(why) => Ok(Step::Reported(why)),
                Outcome::Failed(why) => Err(why),
            };
            let (outcome, reason) = match &step {
                Ok(Step::Same) => ("ok", None),
                Ok(Step::Rewrote) => ("rewrote", None),
                Ok(Step::Blocked(reason)) => ("blocked", reason.clone()),
                Ok(Step::Reported(why)) | Err(why) => ("failed", Some(why.clone())),
            };
            records.push(record(hook, ran.elapsed, outcome, reason, tool_call_id));
            let verdict = match step {
                Ok(Step::Same | Step::Rewrote | Step::Reported(_)) => continue,
                Ok(Step::Blocked(reason)) => Verdict::Blocked(reason),
                Err(why) => Verdict::Failed(format!("`{}`: {why}", hook.command)),
            };
            return Intercepted { verdict, records };
        }
        Intercepted {
            verdict: Verdict::Go(value),
            records,
        }
    }

    /// Runs `SessionStart` (reason `new` or `resume`); a failure fails
    /// the command (G6). An etch hook's output is ignored; a Claude Code
    /// hook may add context, returned in order.
    pub async fn session_start(&self, reason: &str) -> Intercepted<Vec<String>> {
        self.chain(
            HookEvent::SessionStart,
            reason,
            None,
            Vec::new(),
            |_| fields([("reason", json!(reason))]),
            |contexts, answer| {
                Ok(
                    match answer.get("additionalContext").and_then(Value::as_str) {
                        Some(context) => {
                            contexts.push(context.to_owned());
                            Step::Rewrote
                        }
                        None => Step::Same,
                    },
                )
            },
        )
        .await
    }
}

/// A subagent event for the hooks: who, what, and for `SubagentStop`
/// how it ended.
#[derive(Debug, Clone, Copy)]
pub struct SubagentRun<'a> {
    /// The profile (the hooks' subject).
    pub profile: &'a str,
    /// The task as the parent wrote it.
    pub task: &'a str,
    /// The parent's `task` call.
    pub tool_call_id: &'a str,
    /// `None` at the start; at the end `ok`, `error` or `aborted`, with
    /// the answer or the error, and the run's duration.
    pub end: Option<(&'a str, &'a str, u128)>,
}

impl SessionHooks {
    /// Runs `SubagentStart` (which may block the child) or, when `run`
    /// has an end, `SubagentStop`, in the child session these hooks
    /// belong to.
    pub async fn subagent(&self, run: SubagentRun<'_>) -> Intercepted<()> {
        let event = if run.end.is_some() {
            HookEvent::SubagentStop
        } else {
            HookEvent::SubagentStart
        };
        self.chain(
            event,
            run.profile,
            Some(run.tool_call_id),
            (),
            move |()| {
                let mut out = fields([
                    ("profile", json!(run.profile)),
                    ("task", json!(run.task)),
                    ("childSessionId", json!(self.session_id)),
                    ("toolCallId", json!(run.tool_call_id)),
                ]);
                if let Some((outcome, detail, ms)) = run.end {
                    out.insert("outcome".into(), json!(outcome));
                    out.insert("detail".into(), json!(detail));
                    out.insert("durationMs".into(), json!(ms));
                }
                out
            },
            |(), answer| {
                Ok(
                    if answer.get("block").and_then(Value::as_bool) == Some(true) {
                        Step::Blocked(
                            answer
                                .get("reason")
                                .and_then(Value::as_str)
                                .map(str::to_owned),
                        )
                    } else {
                        Step::Same
                    },
                )
            },
        )
        .await
    }
}

impl Intercept for SessionHooks {
    fn wants(&self, point: Point) -> bool {
        self.hooks.has(event_of(point))
    }

    fn prompt(&self, prompt: String) -> InterceptFuture<'_, String> {
        Box::pin(self.chain(
            HookEvent::UserPromptSubmit,
            "",
            None,
            prompt,
            |prompt| fields([("prompt", json!(prompt))]),
            |prompt, answer| Ok(take_string(prompt, &answer, "prompt")),
        ))
    }

    fn turn_start<'a>(&'a self, turn: u32, prompt: &'a str) -> InterceptFuture<'a, ()> {
        Box::pin(self.chain(
            HookEvent::TurnStart,
            "",
            None,
            (),
            move |()| fields([("turn", json!(turn)), ("prompt", json!(prompt))]),
            |(), _| Ok(Step::Same),
        ))
    }

    fn turn_complete<'a>(&'a self, end: TurnEnd<'a>) -> InterceptFuture<'a, ()> {
        Box::pin(self.chain(
            HookEvent::TurnComplete,
            "",
            None,
            (),
            move |()| {
                fields([
                    ("turn", json!(end.turn)),
                    ("finalText", json!(end.final_text)),
                    ("error", json!(end.error)),
                ])
            },
            |(), _| Ok(Step::Same),
        ))
    }

    fn context(&self, messages: Vec<Message>) -> InterceptFuture<'_, Vec<Message>> {
        Box::pin(self.chain(
            HookEvent::ContextBuild,
            "",
            None,
            messages,
            |messages| {
                let wire: Vec<WireMessage> = messages.iter().filter_map(wire_message).collect();
                fields([("messages", json!(wire))])
            },
            |messages, mut answer| {
                let Some(list) = answer.remove("messages") else {
                    return Ok(Step::Same);
                };
                let wire: Vec<WireMessage> = serde_json::from_value(list).map_err(|e| {
                    format!("`messages` is not a list of messages ({e}); each is {{\"role\":\"user\"|\"assistant\"|\"toolResult\", \"content\":[…]}} as the hook received them")
                })?;
                let sent: Vec<WireMessage> = messages.iter().filter_map(wire_message).collect();
                if wire == sent {
                    return Ok(Step::Same);
                }
                let mut rewritten: Vec<Message> =
                    wire.into_iter().map(message_from_wire).collect();
                crate::events::reload_images(&mut rewritten, messages);
                *messages = with_provider_items(messages, rewritten);
                Ok(Step::Rewrote)
            },
        ))
    }

    fn pre_tool<'a>(
        &'a self,
        call: &'a ToolCall,
        arguments: String,
    ) -> InterceptFuture<'a, String> {
        Box::pin(self.chain(
            HookEvent::PreToolUse,
            &call.name,
            Some(&call.id),
            arguments,
            move |arguments| fields([("tool", tool(call, arguments))]),
            |arguments, answer| {
                if let Some(new) = answer.get("arguments").and_then(Value::as_str) {
                    match serde_json::from_str::<Value>(new) {
                        Ok(Value::Object(_)) => {}
                        Ok(_) => {
                            return Err("`arguments` is not a JSON object; it must hold the tool's arguments as one object, as JSON text".to_owned());
                        }
                        Err(e) => return Err(format!("`arguments` is not valid JSON ({e})")),
                    }
                }
                Ok(take_string(arguments, &answer, "arguments"))
            },
        ))
    }

    fn post_tool<'a>(
        &'a self,
        call: &'a ToolCall,
        text: String,
        is_error: bool,
    ) -> InterceptFuture<'a, String> {
        let arguments = match &call.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        };
        Box::pin(async move {
            self.chain(
                HookEvent::PostToolUse,
                &call.name,
                Some(&call.id),
                text,
                |text| {
                    fields([
                        ("tool", tool(call, &arguments)),
                        ("output", json!({ "text": text, "isError": is_error })),
                    ])
                },
                |text, answer| Ok(take_string(text, &answer, "output")),
            )
            .await
        })
    }

    fn pre_compact<'a>(
        &'a self,
        trigger: Trigger,
        instructions: Option<&'a str>,
        tokens_before: u64,
    ) -> InterceptFuture<'a, BeforeCompact> {
        Box::pin(self.chain(
            HookEvent::PreCompact,
            trigger.as_str(),
            None,
            BeforeCompact::Summarize,
            move |_| {
                fields([
                    ("trigger", json!(trigger.as_str())),
                    ("instructions", json!(instructions)),
                    ("tokensBefore", json!(tokens_before)),
                ])
            },
            |before, answer| {
                if answer.get("cancel").and_then(Value::as_bool) == Some(true) {
                    let reason = answer.get("reason").and_then(Value::as_str);
                    return Ok(Step::Blocked(
                        reason.filter(|r| !r.trim().is_empty()).map(str::to_owned),
                    ));
                }
                match answer.get("summary").and_then(Value::as_str) {
                    Some(summary) if summary.trim().is_empty() => {
                        Err("`summary` is empty; give the summary text, or print nothing to let etch summarize".to_owned())
                    }
                    Some(summary) => {
                        *before = BeforeCompact::Summary(summary.to_owned());
                        Ok(Step::Rewrote)
                    }
                    None => Ok(Step::Same),
                }
            },
        ))
    }

    fn post_compact(&self, trigger: Trigger, summary: String) -> InterceptFuture<'_, String> {
        Box::pin(self.chain(
            HookEvent::PostCompact,
            trigger.as_str(),
            None,
            summary,
            move |summary| {
                fields([
                    ("trigger", json!(trigger.as_str())),
                    ("summary", json!(summary)),
                ])
            },
            |summary, answer| {
                if answer
                    .get("summary")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.trim().is_empty())
                {
                    return Err("`summary` is empty; a compaction needs a summary".to_owned());
                }
                Ok(take_string(summary, &answer, "summary"))
            },
        ))
    }
}

/// `rewritten` with the provider-native items of `original` (which hooks
/// never see) put back after the assistant message they followed, where
/// that message is still in the list: some providers refuse a tool call
/// whose reasoning item went missing.
fn with_provider_items(original: &[Message], rewritten: Vec<Message>) -> Vec<Message> {
    let mut items: Vec<(&Message, Vec<Message>)> = Vec::new();
    let mut owner: Option<&Message> = None;
    for message in original {
        match message {
            Message::ProviderItem(_) => {
                if let Some(owner) = owner {
                    match items.last_mut() {
                        Some((previous, following)) if std::ptr::eq(*previous, owner) => {
                            following.push(message.clone());
                        }
                        _ => items.push((owner, vec![message.clone()])),
                    }
                }
            }
            Message::Assistant { .. } => owner = Some(message),
            _ => owner = None,
        }
    }
    if items.is_empty() {
        return rewritten;
    }
    let mut out = Vec::with_capacity(rewritten.len());
    for message in rewritten {
        let following = items
            .iter()
            .position(|(owner, _)| **owner == message)
            .map(|i| items.remove(i).1);
        out.push(message);
        out.extend(following.into_iter().flatten());
    }
    out
}

/// The hook event served at `point`.
fn event_of(point: Point) -> HookEvent {
    match point {
        Point::Prompt => HookEvent::UserPromptSubmit,
        Point::TurnStart => HookEvent::TurnStart,
        Point::TurnComplete => HookEvent::TurnComplete,
        Point::Context => HookEvent::ContextBuild,
        Point::PreTool => HookEvent::PreToolUse,
        Point::PostTool => HookEvent::PostToolUse,
        Point::PreCompact => HookEvent::PreCompact,
        Point::PostCompact => HookEvent::PostCompact,
    }
}

/// A payload object from pairs.
fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

/// The `tool` object of a tool hook's payload (E-HOOK-02: the arguments
/// as JSON text, not an object).
fn tool(call: &ToolCall, arguments: &str) -> Value {
    json!({ "id": call.id, "name": call.name, "arguments": arguments })
}

/// Takes the string field `name` of an answer into `value` (the answer's
/// field types were checked by `etch_hooks`).
fn take_string(value: &mut String, answer: &Map<String, Value>, name: &str) -> Step {
    match answer.get(name).and_then(Value::as_str) {
        Some(new) if new != value => {
            new.clone_into(value);
            Step::Rewrote
        }
        _ => Step::Same,
    }
}

/// The `hook.run` record of one hook's run.
fn record(
    hook: &Hook,
    elapsed: Duration,
    outcome: &str,
    reason: Option<String>,
    tool_call_id: Option<&str>,
) -> HookRunData {
    HookRunData {
        event: hook.event.name().to_owned(),
        matcher: hook.matcher.text().to_owned(),
        command: hook.command.clone(),
        duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        outcome: outcome.to_owned(),
        reason,
        tool_call_id: tool_call_id.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etch_model::{ContentPart, ProviderItem};

    /// A provider item follows its assistant message into a rewritten
    /// list, and goes where that message is gone.
    #[test]
    fn provider_items_follow_their_message() {
        let answer = Message::Assistant {
            content: vec![ContentPart::text("a")],
        };
        let item = Message::ProviderItem(ProviderItem {
            provider: "openai".into(),
            api: "responses".into(),
            item_type: "reasoning".into(),
            item: serde_json::json!({"type": "reasoning"}),
            model: None,
        });
        let original = vec![Message::user_text("q"), answer.clone(), item.clone()];
        let rewritten = vec![Message::user_text("short"), answer.clone()];
        assert_eq!(
            with_provider_items(&original, rewritten),
            vec![Message::user_text("short"), answer, item]
        );
        assert_eq!(
            with_provider_items(&original, vec![Message::user_text("x")]),
            vec![Message::user_text("x")]
        );
    }
}
