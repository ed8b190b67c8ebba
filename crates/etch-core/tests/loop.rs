//! Agent loop behaviour with a scripted model and test tools: Pi's event
//! order (P-CHK-1..3), bad tool calls (E-LOOP-13), the round bound
//! (E-LOOP-04/05), streams without `done`, cancellation (G20), conflict
//! scheduling (C19) and steering (E-LOOP-01 step 7).
//!
//! Every test runs on paused tokio time: a 150 ms call ends after a 1 ms
//! one, and a cancellation at 100 ms finds the calls started, by the
//! clock rather than by racing real sleeps.

// Test doubles outside #[test] functions may panic on broken fixtures.
#![allow(clippy::unwrap_used, clippy::unnecessary_literal_bound)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etch_core::{
    Agent, AgentConfig, AgentEvent, CompactionPolicy, CompactionResult, Delivery, GuardSettings,
    Inbox, Observer, RunError, RunOutcome,
};
use etch_model::{
    ErrorKind, Message, ModelClient, ModelError, ModelRequest, ModelStream, RequestOptions,
    StopReason, StreamEvent, ToolSpec, Usage, stream_channel,
};
use etch_session::store::NewSession;
use etch_session::{SessionStore, SessionWriter, load_session, types};
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolRegistry};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A model that plays back one scripted event list per pass and records
/// every request it receives.
struct Scripted {
    /// Remaining passes.
    passes: Mutex<VecDeque<Vec<StreamEvent>>>,
    /// Requests seen.
    requests: Mutex<Vec<ModelRequest>>,
    /// Delay before each event, to leave room for cancellation.
    delay: Duration,
}

impl Scripted {
    /// A model with the given passes and no delay.
    fn new(passes: Vec<Vec<StreamEvent>>) -> Arc<Self> {
        Arc::new(Self {
            passes: Mutex::new(passes.into()),
            requests: Mutex::new(Vec::new()),
            delay: Duration::ZERO,
        })
    }
}

impl ModelClient for Scripted {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "script-1"
    }
    fn stream(&self, request: ModelRequest, _cancel: CancellationToken) -> ModelStream {
        self.requests.lock().unwrap().push(request);
        let events = self.passes.lock().unwrap().pop_front().unwrap_or_default();
        let delay = self.delay;
        let (tx, stream) = stream_channel();
        tokio::spawn(async move {
            for e in events {
                tokio::time::sleep(delay).await;
                if !tx.send(e).await {
                    return;
                }
            }
        });
        stream
    }
}

/// A text-only pass.
fn text_pass(text: &str) -> Vec<StreamEvent> {
    vec![
        StreamEvent::TextStart,
        StreamEvent::TextDelta(text.into()),
        StreamEvent::TextEnd,
        StreamEvent::Usage(Usage {
            input_tokens: 10,
            output_tokens: 2,
            total_tokens: 12,
            ..Usage::default()
        }),
        StreamEvent::Done {
            stop_reason: StopReason::Stop,
        },
    ]
}

/// A pass that calls tools: `(id, name, raw argument text)`.
fn call_pass(calls: &[(&str, &str, &str)]) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        events.push(StreamEvent::ToolCallStart {
            index: i,
            id: (*id).into(),
            name: (*name).into(),
        });
        // Split the arguments to prove fragments are joined per index.
        let mid = args.len() / 2;
        events.push(StreamEvent::ToolCallDelta {
            index: i,
            arguments: args[..mid].into(),
        });
        events.push(StreamEvent::ToolCallDelta {
            index: i,
            arguments: args[mid..].into(),
        });
        events.push(StreamEvent::ToolCallEnd { index: i });
    }
    events.push(StreamEvent::Done {
        stop_reason: StopReason::ToolUse,
    });
    events
}

/// A tool that sleeps `ms` then answers `text`, touching `path` as declared.
struct Sleeper {
    /// Spec of the tool.
    spec: ToolSpec,
    /// Whether it writes its path.
    writes: bool,
    /// Log of (event, text) pairs, to observe start/finish order.
    log: Arc<Mutex<Vec<String>>>,
}

impl Sleeper {
    /// Builds a sleeper tool named `name`.
    fn new(name: &str, writes: bool, log: Arc<Mutex<Vec<String>>>) -> Arc<Self> {
        Arc::new(Self {
            spec: ToolSpec {
                name: name.into(),
                description: "sleeps".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"ms": {"type": "integer", "minimum": 0}, "text": {"type": "string"}, "path": {"type": "string"}},
                    "required": ["ms", "text"],
                    "additionalProperties": false
                }),
            },
            writes,
            log,
        })
    }
}

impl Tool for Sleeper {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn access(&self, args: &Value, cwd: &std::path::Path) -> Access {
        let path = cwd.join(args["path"].as_str().unwrap_or("."));
        if self.writes {
            Access::Write(vec![path])
        } else {
            Access::Read(vec![path])
        }
    }
    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let text = args["text"].as_str().unwrap_or_default().to_string();
            self.log.lock().unwrap().push(format!("start {text}"));
            ctx.progress.update(format!("working on {text}"));
            let ms = args["ms"].as_u64().unwrap_or(0);
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                () = ctx.cancel.cancelled() => return Err(ToolError::new("killed")),
            }
            self.log.lock().unwrap().push(format!("end {text}"));
            Ok(ToolOutput::text(text))
        })
    }
}

/// Records lifecycle event names and durable lines.
#[derive(Default)]
struct Recorder {
    /// Lifecycle event names, with roles/ids where useful.
    events: Vec<String>,
    /// Durable lines.
    lines: Vec<String>,
    /// Steering prompts to hand out at the first drain.
    steering: Vec<String>,
    /// Follow-ups handed over one per stop.
    follow_ups: Vec<String>,
}

impl Observer for Recorder {
    fn agent_event(&mut self, event: &AgentEvent<'_>) {
        let name = match event {
            AgentEvent::AgentStart => "agent_start".to_string(),
            AgentEvent::TurnStart { .. } => "turn_start".to_string(),
            AgentEvent::MessageStart { message } => format!("message_start:{}", role(*message)),
            AgentEvent::MessageUpdate { .. } => "message_update".to_string(),
            AgentEvent::MessageEnd { message, .. } => {
                format!("message_end:{}", role(Some(message)))
            }
            AgentEvent::ToolBatchStart { .. } => "tool_batch".to_string(),
            AgentEvent::ToolExecutionStart { call } => format!("tool_execution_start:{}", call.id),
            AgentEvent::ToolExecutionUpdate { call_id, .. } => {
                format!("tool_execution_update:{call_id}")
            }
            AgentEvent::ToolCounters { call_id, .. } => format!("tool_counters:{call_id}"),
            AgentEvent::ToolExecutionEnd { call_id, .. } => format!("tool_execution_end:{call_id}"),
            AgentEvent::TurnEnd { .. } => "turn_end".to_string(),
            AgentEvent::CompactionStart { trigger } => format!("compaction_start:{trigger}"),
            AgentEvent::CompactionEnd { trigger, result } => {
                let how = match result {
                    CompactionResult::Compacted { .. } => "compacted".to_string(),
                    CompactionResult::Skipped(why) => format!("skipped({why})"),
                    CompactionResult::Failed(why) => format!("failed({why})"),
                };
                format!("compaction_end:{trigger}:{how}")
            }
            AgentEvent::Retrying { attempt, .. } => format!("retrying:{attempt}"),
            AgentEvent::RetryEnd {
                success, attempt, ..
            } => format!("retry_end:{attempt}:{success}"),
            AgentEvent::AgentEnd { .. } => "agent_end".to_string(),
            AgentEvent::ProcessUpdate { .. } => "process_update".to_string(),
        };
        self.events.push(name);
    }
    fn durable_line(&mut self, line: &str) {
        self.lines.push(line.to_string());
    }
    fn drain_steering(&mut self) -> Vec<etch_core::Prompt> {
        std::mem::take(&mut self.steering)
            .into_iter()
            .map(Into::into)
            .collect()
    }
    fn drain_follow_up(&mut self) -> Vec<etch_core::Prompt> {
        // One at a time, as Pi's default follow-up mode.
        if self.follow_ups.is_empty() {
            Vec::new()
        } else {
            vec![self.follow_ups.remove(0).into()]
        }
    }
}

/// Role label of a message for event names.
fn role(message: Option<&Message>) -> &'static str {
    match message {
        None | Some(Message::Assistant { .. }) => "assistant",
        Some(Message::User { .. }) => "user",
        Some(Message::Tool { .. }) => "tool",
        Some(Message::ProviderItem(_)) => "item",
    }
}

/// A session in a temp dir plus an agent over `client` and `tools`.
struct Fixture {
    /// Keeps the directory alive.
    _dir: tempfile::TempDir,
    /// The session writer.
    writer: SessionWriter,
    /// The agent.
    agent: Agent,
}

/// Builds a fixture without compaction.
fn fixture(client: Arc<dyn ModelClient>, tools: Vec<Arc<dyn Tool>>, max_rounds: u32) -> Fixture {
    fixture_with(client, tools, max_rounds, None)
}

/// Builds a fixture with a compaction policy.
fn fixture_with(
    client: Arc<dyn ModelClient>,
    tools: Vec<Arc<dyn Tool>>,
    max_rounds: u32,
    compaction: Option<CompactionPolicy>,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));
    let (writer, _) = store
        .create(&NewSession {
            cwd: dir.path().to_string_lossy().into_owned(),
            provider: "scripted".into(),
            model: "script-1".into(),
            openai_api: None,
            base_url: None,
            etch_version: "test".into(),
            first_prompt: "p".into(),
        })
        .unwrap();
    let mut registry = ToolRegistry::new();
    for t in tools {
        registry.register(t).unwrap();
    }
    let agent = Agent::new(
        client,
        registry,
        AgentConfig {
            max_tool_rounds: max_rounds,
            system: etch_prompt_layers(),
            cwd: dir.path().to_path_buf(),
            temp_dir: dir.path().join("tmp"),
            options: RequestOptions::default(),
            compaction,
            guard: GuardSettings::default(),
            grounding: false,
            required_reply_tokens: None,
        },
    );
    Fixture {
        _dir: dir,
        writer,
        agent,
    }
}

impl Fixture {
    /// Runs `prompt` on the fixture's session with a fresh history.
    async fn run(
        &mut self,
        prompt: &str,
        observer: &mut Recorder,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        self.agent
            .run(&mut self.writer, &mut Vec::new(), prompt, observer, cancel)
            .await
    }
}

/// A token that cancels itself after `ms` milliseconds, to interrupt a run
/// in flight.
fn cancel_after(ms: u64) -> CancellationToken {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        trigger.cancel();
    });
    cancel
}

/// A one-layer system prompt.
fn etch_prompt_layers() -> Vec<etch_model::SystemLayer> {
    vec![etch_model::SystemLayer {
        name: "base prompt".into(),
        text: "You are a test.".into(),
    }]
}

/// Event types of the session file, in order (header excluded).
fn logged_types(writer: &SessionWriter) -> Vec<String> {
    let s = load_session(writer.path()).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    s.active_events().skip(1).map(|e| e.kind.clone()).collect()
}

/// Data of every `message.tool` event in the file.
fn tool_results(writer: &SessionWriter) -> Vec<Value> {
    let s = load_session(writer.path()).unwrap();
    s.events
        .iter()
        .filter(|e| e.kind == types::MESSAGE_TOOL)
        .map(|e| serde_json::from_str(e.data.get()).unwrap())
        .collect()
}

/// P-CHK-1: a simple prompt emits Pi's events in Pi's order, and the log
/// holds user, assistant and usage chained in order.
#[tokio::test(start_paused = true)]
async fn simple_prompt_event_order() {
    let mut f = fixture(Scripted::new(vec![text_pass("hello")]), vec![], 32);
    let mut rec = Recorder::default();
    let mut history = Vec::new();
    let out = f
        .agent
        .run(
            &mut f.writer,
            &mut history,
            "hi",
            &mut rec,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.final_text, "hello");
    assert_eq!(
        rec.events,
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_update",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(
        logged_types(&f.writer),
        ["message.user", "message.assistant", "model.usage"]
    );
    assert_eq!(rec.lines.len(), 3);
    assert_eq!(history.len(), 2);
}

/// P-CHK-2/3 and C19: two read calls overlap and finish out of order, yet
/// results are appended in the model's order; then a second request is made
/// carrying the tool results.
#[tokio::test(start_paused = true)]
async fn parallel_calls_keep_source_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = Scripted::new(vec![
        call_pass(&[
            (
                "c1",
                "reader",
                r#"{"ms": 150, "text": "slow", "path": "a"}"#,
            ),
            ("c2", "reader", r#"{"ms": 1, "text": "fast", "path": "b"}"#),
        ]),
        text_pass("done"),
    ]);
    let mut f = fixture(
        client.clone(),
        vec![Sleeper::new("reader", false, log.clone())],
        32,
    );
    let mut rec = Recorder::default();
    f.run("go", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        ["start slow", "start fast", "end fast", "end slow"]
    );
    let ends: Vec<&String> = rec
        .events
        .iter()
        .filter(|e| e.starts_with("tool_execution_end"))
        .collect();
    assert_eq!(ends, ["tool_execution_end:c2", "tool_execution_end:c1"]);
    assert!(rec.events.contains(&"tool_execution_update:c1".to_string()));
    let results = tool_results(&f.writer);
    assert_eq!(results[0]["toolCallId"], "c1");
    assert_eq!(results[0]["content"][0]["text"], "slow");
    assert_eq!(results[1]["toolCallId"], "c2");
    assert_eq!(
        logged_types(&f.writer),
        [
            "message.user",
            "message.assistant",
            "message.tool",
            "message.tool",
            "message.assistant",
            "model.usage"
        ]
    );
    let requests = client.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages.len(), 4);
    assert!(
        matches!(&requests[1].messages[2], Message::Tool { tool_call_id, .. } if tool_call_id == "c1")
    );
}

/// C19: writes to one path run in source order even when the first is slow;
/// a write to another path overlaps them.
#[tokio::test(start_paused = true)]
async fn conflicting_writes_run_in_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = Scripted::new(vec![
        call_pass(&[
            (
                "c1",
                "writer",
                r#"{"ms": 100, "text": "w1", "path": "same"}"#,
            ),
            ("c2", "writer", r#"{"ms": 1, "text": "w2", "path": "same"}"#),
            (
                "c3",
                "writer",
                r#"{"ms": 1, "text": "other", "path": "elsewhere"}"#,
            ),
        ]),
        text_pass("done"),
    ]);
    let mut f = fixture(client, vec![Sleeper::new("writer", true, log.clone())], 32);
    f.run("go", &mut Recorder::default(), &CancellationToken::new())
        .await
        .unwrap();
    let log = log.lock().unwrap().clone();
    let pos = |s: &str| log.iter().position(|x| x == s).unwrap();
    assert!(pos("end w1") < pos("start w2"), "{log:?}");
    assert!(pos("end other") < pos("end w1"), "{log:?}");
}

/// E-LOOP-13, P-TEXEC-02/04: unknown tools, malformed JSON arguments and
/// schema violations become `tool error:` results; the raw arguments are
/// kept in the log; the run goes on to a final answer.
#[tokio::test(start_paused = true)]
async fn bad_calls_become_tool_errors() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = Scripted::new(vec![
        call_pass(&[
            ("c1", "nope", "{}"),
            ("c2", "reader", r#"{"ms": 1, "text": "#),
            ("c3", "reader", r#"{"ms": "soon"}"#),
        ]),
        text_pass("recovered"),
    ]);
    let mut f = fixture(client, vec![Sleeper::new("reader", false, log)], 32);
    let out = f
        .run("go", &mut Recorder::default(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.final_text, "recovered");
    let results = tool_results(&f.writer);
    assert_eq!(
        results[0]["content"][0]["text"],
        "tool error: Tool nope not found\nAvailable tools: reader"
    );
    assert_eq!(results[0]["isError"], true);
    assert_eq!(results[0]["toolName"], "nope");
    let bad_json = results[1]["content"][0]["text"].as_str().unwrap();
    assert!(
        bad_json
            .starts_with("tool error: could not parse the arguments of tool reader: invalid JSON"),
        "{bad_json}"
    );
    let schema = results[2]["content"][0]["text"].as_str().unwrap();
    assert!(
        schema.starts_with("tool error: Validation failed for tool \"reader\":\n"),
        "{schema}"
    );
    assert!(schema.contains("  - ms: must be integer"), "{schema}");
    assert!(
        schema.contains("  - root: must have required property 'text'"),
        "{schema}"
    );
    let s = load_session(f.writer.path()).unwrap();
    let assistant = s
        .events
        .iter()
        .find(|e| e.kind == types::MESSAGE_ASSISTANT)
        .unwrap();
    let data: Value = serde_json::from_str(assistant.data.get()).unwrap();
    assert_eq!(data["content"][1]["arguments"], r#"{"ms": 1, "text": "#);
    assert_eq!(data["content"][0]["arguments"], json!({}));
}

/// E-LOOP-04/05: the bound stops the run with a typed error naming the
/// session, after the last round's tool results were appended.
#[tokio::test(start_paused = true)]
async fn round_limit_is_typed_and_keeps_the_log() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let pass = || call_pass(&[("c", "reader", r#"{"ms": 0, "text": "again"}"#)]);
    let client = Scripted::new(vec![pass(), pass(), pass()]);
    let mut f = fixture(client.clone(), vec![Sleeper::new("reader", false, log)], 2);
    let mut rec = Recorder::default();
    let err = f
        .run("loop", &mut rec, &CancellationToken::new())
        .await
        .unwrap_err();
    let RunError::ToolRoundLimit(limit) = &err else {
        panic!("expected a round limit, got {err}");
    };
    assert_eq!(limit.limit, 2);
    assert_eq!(limit.session_id, f.writer.session_id());
    assert_eq!(limit.session_path, f.writer.path());
    assert!(err.to_string().contains("etch resume"));
    assert_eq!(client.requests.lock().unwrap().len(), 2);
    assert_eq!(
        logged_types(&f.writer),
        [
            "message.user",
            "message.assistant",
            "message.tool",
            "message.assistant",
            "message.tool",
            // The same call and result again: the guard noted it.
            "loop.guard"
        ]
    );
    assert_eq!(rec.events.last().unwrap(), "agent_end");
}

/// A stream that stops without `done` is an error, not an answer: the failed
/// pass is logged with stop reason `error` and never replayed.
#[tokio::test(start_paused = true)]
async fn stream_without_done_is_an_error() {
    let client = Scripted::new(vec![vec![
        StreamEvent::TextStart,
        StreamEvent::TextDelta("half".into()),
    ]]);
    let mut f = fixture(client, vec![], 32);
    let err = f
        .run("hi", &mut Recorder::default(), &CancellationToken::new())
        .await
        .unwrap_err();
    let RunError::Model { source, .. } = &err else {
        panic!("expected a model error, got {err}");
    };
    assert_eq!(source.kind, ErrorKind::Protocol);
    assert!(source.message.contains("without a done event"));
    let s = load_session(f.writer.path()).unwrap();
    let last: Value = serde_json::from_str(s.events.last().unwrap().data.get()).unwrap();
    assert_eq!(last["stopReason"], "error");
    assert_eq!(last["content"][0]["text"], "half");
    assert!(etch_session::project_messages(&s).messages.len() == 1);
}

/// Provider error events surface as typed model errors (E-MOD-23).
#[tokio::test(start_paused = true)]
async fn provider_errors_are_typed() {
    let client = Scripted::new(vec![vec![StreamEvent::Error(ModelError::new(
        ErrorKind::InvalidRequest,
        "400: bad",
    ))]]);
    let mut f = fixture(client, vec![], 32);
    let err = f
        .run("hi", &mut Recorder::default(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "model error from scripted: 400: bad");
}

/// G20: cancelling during a tool batch kills running calls, answers every
/// call `tool error: Operation aborted` (or the tool's own error), keeps the
/// log valid and returns `Cancelled`.
#[tokio::test(start_paused = true)]
async fn cancel_during_tools_answers_every_call() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = Scripted::new(vec![call_pass(&[
        (
            "c1",
            "writer",
            r#"{"ms": 10000, "text": "long", "path": "x"}"#,
        ),
        (
            "c2",
            "writer",
            r#"{"ms": 10000, "text": "queued", "path": "x"}"#,
        ),
    ])]);
    let mut f = fixture(client, vec![Sleeper::new("writer", true, log)], 32);
    let cancel = cancel_after(100);
    let err = f
        .run("go", &mut Recorder::default(), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Cancelled));
    let results = tool_results(&f.writer);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["content"][0]["text"], "tool error: killed");
    assert_eq!(
        results[1]["content"][0]["text"],
        "tool error: Operation aborted"
    );
    assert!(etch_session::dangling_tool_calls(&load_session(f.writer.path()).unwrap()).is_empty());
}

/// G20 as issue 28 changed it: cancelling during a model pass before
/// any text arrived logs an empty interrupted answer, never replayed.
#[tokio::test(start_paused = true)]
async fn cancel_before_any_text_logs_an_empty_interrupted_answer() {
    let client = Arc::new(Scripted {
        passes: Mutex::new(vec![text_pass("late")].into()),
        requests: Mutex::new(Vec::new()),
        delay: Duration::from_millis(200),
    });
    let mut f = fixture(client, vec![], 32);
    let cancel = cancel_after(50);
    let err = f
        .run("hi", &mut Recorder::default(), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Cancelled));
    assert_eq!(
        logged_types(&f.writer),
        ["message.user", "message.assistant"]
    );
    let log = load_session(f.writer.path()).unwrap();
    let answer: Value = serde_json::from_str(log.events.last().unwrap().data.get()).unwrap();
    assert_eq!(answer["stopReason"], "aborted");
    assert_eq!(answer["content"], json!([]));
    let projected = etch_session::project_messages(&log).messages;
    assert_eq!(projected, [Message::user_text("hi")]);
}

/// Cancels the run at the first text delta: the partial answer is then
/// on the user's screen.
struct CancelOnText(CancellationToken);

impl Observer for CancelOnText {
    fn agent_event(&mut self, event: &AgentEvent<'_>) {
        if matches!(event, AgentEvent::MessageUpdate { .. }) {
            self.0.cancel();
        }
    }

    fn durable_line(&mut self, _line: &str) {}
}

/// An answer cancelled after text arrived keeps that text: logged as an
/// interrupted `message.assistant` (its unfinished tool call left out),
/// announced as such, and replayed, so the next request does not carry
/// two user messages in a row.
#[tokio::test(start_paused = true)]
async fn a_cancelled_answer_keeps_what_was_shown() {
    let mut partial = vec![
        StreamEvent::TextStart,
        StreamEvent::TextDelta("the first half".into()),
    ];
    partial.extend(text_pass("never seen"));
    let client = Arc::new(Scripted {
        passes: Mutex::new(vec![partial, text_pass("ok")].into()),
        requests: Mutex::new(Vec::new()),
        delay: Duration::from_millis(5),
    });
    let mut f = fixture(client.clone(), vec![], 32);
    let cancel = CancellationToken::new();
    let mut observer = CancelOnText(cancel.clone());
    let err = f
        .agent
        .run(&mut f.writer, &mut Vec::new(), "hi", &mut observer, &cancel)
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Cancelled));
    let log = load_session(f.writer.path()).unwrap();
    let event = log.events.last().unwrap();
    assert_eq!(event.kind, "message.assistant");
    let answer: Value = serde_json::from_str(event.data.get()).unwrap();
    assert_eq!(answer["stopReason"], "aborted");
    assert_eq!(
        answer["content"],
        json!([{"type": "text", "text": "the first half"}])
    );
    let mut history = etch_session::project_messages(&log).messages;
    f.agent
        .run(
            &mut f.writer,
            &mut history,
            "go on",
            &mut Recorder::default(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let requests = client.requests.lock().unwrap();
    assert_eq!(
        requests[1].messages,
        [
            Message::user_text("hi"),
            Message::Assistant {
                content: vec![etch_model::ContentPart::Text {
                    text: "the first half".into()
                }]
            },
            Message::user_text("go on"),
        ]
    );
}

/// Steering drained after a tool batch is admitted as user messages before
/// the next request (E-LOOP-01 step 7).
#[tokio::test(start_paused = true)]
async fn steering_is_admitted_after_a_tool_batch() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = Scripted::new(vec![
        call_pass(&[("c1", "reader", r#"{"ms": 0, "text": "x"}"#)]),
        text_pass("ok"),
    ]);
    let mut f = fixture(client.clone(), vec![Sleeper::new("reader", false, log)], 32);
    let mut rec = Recorder {
        steering: vec!["also check y".into()],
        ..Recorder::default()
    };
    f.run("go", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    let requests = client.requests.lock().unwrap();
    let last = requests[1].messages.last().unwrap();
    assert_eq!(*last, Message::user_text("also check y"));
    assert_eq!(
        logged_types(&f.writer),
        [
            "message.user",
            "message.assistant",
            "message.tool",
            "message.user",
            "message.assistant",
            "model.usage"
        ]
    );
}

/// Steering drained in the last allowed round is not dropped: the round
/// limit still ends the run, but the text is in the log as a user message,
/// where a resumed run answers it.
#[tokio::test(start_paused = true)]
async fn steering_in_the_last_round_is_kept() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = Scripted::new(vec![call_pass(&[(
        "c1",
        "reader",
        r#"{"ms": 0, "text": "x"}"#,
    )])]);
    let mut f = fixture(client.clone(), vec![Sleeper::new("reader", false, log)], 1);
    let mut rec = Recorder {
        steering: vec!["and then y".into()],
        ..Recorder::default()
    };
    let err = f
        .run("go", &mut rec, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::ToolRoundLimit(_)), "{err}");
    assert_eq!(
        logged_types(&f.writer),
        [
            "message.user",
            "message.assistant",
            "message.tool",
            "message.user"
        ]
    );
    let loaded = etch_session::load_session(f.writer.path()).unwrap();
    let projected = etch_session::project_messages(&loaded).messages;
    assert_eq!(*projected.last().unwrap(), Message::user_text("and then y"));
}

/// A compaction policy that keeps only the last two messages raw, counting
/// a token per four bytes; `auto` with a threshold of one token compacts
/// before every request.
fn policy(auto: bool) -> CompactionPolicy {
    CompactionPolicy {
        auto,
        threshold_tokens: 1,
        settings: etch_compact::Settings {
            keep_recent_tokens: 0,
            keep_messages: 2,
            estimate: |t| (t.len() as u64).div_ceil(4),
            force: false,
        },
        pinned_tokens: 0,
    }
}

/// A long first answer whose usage is close to the estimate of the first
/// prompt and answer (about 240 tokens plus a small prompt), as a real
/// provider would report, so a compaction of them clearly shrinks the
/// context.
fn first_answer() -> Vec<StreamEvent> {
    let mut pass = text_pass(&"answer one ".repeat(40));
    pass[3] = StreamEvent::Usage(Usage {
        input_tokens: 150,
        output_tokens: 110,
        total_tokens: 260,
        ..Usage::default()
    });
    pass
}

/// An agent over `model` with threshold compaction on (threshold one
/// token, so it compacts before every request).
fn auto_agent(model: Arc<Scripted>) -> Agent {
    Agent::new(
        model,
        ToolRegistry::new(),
        AgentConfig {
            max_tool_rounds: 8,
            system: etch_prompt_layers(),
            cwd: std::env::temp_dir(),
            temp_dir: std::env::temp_dir(),
            options: RequestOptions::default(),
            compaction: Some(policy(true)),
            guard: GuardSettings::default(),
            grounding: false,
            required_reply_tokens: None,
        },
    )
}

/// A pass that fails with a context-overflow error.
fn overflow_pass() -> Vec<StreamEvent> {
    vec![StreamEvent::Error(ModelError::new(
        ErrorKind::ContextOverflow,
        "prompt is too long: 300000 tokens > 200000 maximum",
    ))]
}

/// The user texts of a request.
fn user_texts(request: &ModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(etch_model::content::joined_text(content)),
            _ => None,
        })
        .collect()
}

/// P-OVF-02: an overflow compacts once (trigger overflow) and retries the
/// request with the summary in place of the old prefix.
#[tokio::test(start_paused = true)]
async fn overflow_compacts_and_retries_once() {
    let model = Scripted::new(vec![
        first_answer(),
        overflow_pass(),
        text_pass("## Goal\nKeep going."),
        text_pass("after compaction"),
    ]);
    let mut f = fixture_with(model.clone(), vec![], 8, Some(policy(false)));
    let mut rec = Recorder::default();
    f.run(
        &"first prompt ".repeat(40),
        &mut rec,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let mut rec = Recorder::default();
    let outcome = f
        .run("second prompt", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "after compaction");
    assert!(
        rec.events
            .contains(&"compaction_start:overflow".to_string())
            && rec
                .events
                .contains(&"compaction_end:overflow:compacted".to_string()),
        "{:?}",
        rec.events
    );
    let requests = model.requests.lock().unwrap();
    assert_eq!(requests.len(), 4);
    let summarizer = &requests[2];
    assert!(summarizer.tools.is_empty());
    let retried = user_texts(&requests[3]);
    assert!(
        retried[0].starts_with("The conversation history before this point was compacted"),
        "{retried:?}"
    );
    assert!(retried[0].contains("Keep going."));
    let types = logged_types(&f.writer);
    assert_eq!(
        types.iter().filter(|t| *t == "context.summary").count(),
        1,
        "{types:?}"
    );
    assert!(rec.lines.iter().any(|l| l.contains("\"context.summary\"")));
    let summary = load_session(f.writer.path()).unwrap();
    let data: Value = summary
        .events
        .iter()
        .find(|e| e.kind == types::CONTEXT_SUMMARY)
        .map(|e| serde_json::from_str(e.data.get()).unwrap())
        .unwrap();
    assert_eq!(data["trigger"], "overflow");
}

/// P-OVF-02: an overflow on the retry too is surfaced, not looped; one
/// compaction only.
#[tokio::test(start_paused = true)]
async fn second_overflow_is_surfaced() {
    let model = Scripted::new(vec![
        first_answer(),
        overflow_pass(),
        text_pass("## Goal\nSummary."),
        overflow_pass(),
    ]);
    let mut f = fixture_with(model.clone(), vec![], 8, Some(policy(false)));
    let mut rec = Recorder::default();
    f.run(
        &"first prompt ".repeat(40),
        &mut rec,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let err = f
        .run("second prompt", &mut rec, &CancellationToken::new())
        .await
        .unwrap_err();
    let RunError::Model { source, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(source.kind, ErrorKind::ContextOverflow);
    assert_eq!(model.requests.lock().unwrap().len(), 4);
    let types = logged_types(&f.writer);
    assert_eq!(types.iter().filter(|t| *t == "context.summary").count(), 1);
}

/// An overflow with nothing to summarize (or a failing summarizer) surfaces
/// the provider's error, and a failed summary leaves no summary event.
#[tokio::test(start_paused = true)]
async fn overflow_without_a_useful_compaction_is_surfaced() {
    let model = Scripted::new(vec![overflow_pass()]);
    let mut f = fixture_with(model.clone(), vec![], 8, Some(policy(false)));
    let mut rec = Recorder::default();
    let err = f
        .run("only prompt", &mut rec, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Model { .. }), "{err:?}");
    assert_eq!(model.requests.lock().unwrap().len(), 1);
    assert!(
        rec.events
            .iter()
            .any(|e| e.starts_with("compaction_end:overflow:skipped(nothing to compact")),
        "{:?}",
        rec.events
    );

    let model = Scripted::new(vec![
        first_answer(),
        overflow_pass(),
        vec![StreamEvent::Error(ModelError::new(
            ErrorKind::Transient,
            "summarizer unavailable",
        ))],
    ]);
    let mut f = fixture_with(model.clone(), vec![], 8, Some(policy(false)));
    f.run(
        &"first prompt ".repeat(40),
        &mut rec,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let mut rec = Recorder::default();
    let err = f
        .run("second prompt", &mut rec, &CancellationToken::new())
        .await
        .unwrap_err();
    let RunError::Model { source, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(source.kind, ErrorKind::ContextOverflow);
    assert!(
        rec.events
            .iter()
            .any(|e| e.starts_with("compaction_end:overflow:failed(") && e.contains("not changed")),
        "{:?}",
        rec.events
    );
    assert!(!logged_types(&f.writer).contains(&"context.summary".to_string()));
}

/// E-CTX-16: with auto compaction on and the estimate over the threshold,
/// the summary is appended before the request, which then carries it.
#[tokio::test(start_paused = true)]
async fn auto_compaction_runs_before_the_request() {
    let model = Scripted::new(vec![
        first_answer(),
        text_pass("## Goal\nAuto summary."),
        text_pass("answer two"),
    ]);
    let mut f = fixture_with(model.clone(), vec![], 8, Some(policy(false)));
    let mut rec = Recorder::default();
    f.run(
        &"first prompt ".repeat(40),
        &mut rec,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    f.agent = auto_agent(model.clone());
    let mut rec = Recorder::default();
    let outcome = f
        .run("second prompt", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "answer two");
    assert!(
        rec.events
            .contains(&"compaction_end:auto:compacted".to_string()),
        "{:?}",
        rec.events
    );
    let requests = model.requests.lock().unwrap();
    assert_eq!(requests.len(), 3);
    assert!(user_texts(&requests[2])[0].contains("Auto summary."));
}

/// Threshold compaction that fails is not retried every round: one failed
/// summary request, then the run goes on uncompacted.
#[tokio::test(start_paused = true)]
async fn failed_auto_compaction_is_not_repeated_each_round() {
    let model = Scripted::new(vec![
        first_answer(),
        vec![StreamEvent::Error(ModelError::new(
            ErrorKind::Transient,
            "summarizer unavailable",
        ))],
        call_pass(&[("c1", "nope", "{}")]),
        text_pass("answer two"),
    ]);
    let mut f = fixture_with(model.clone(), vec![], 8, Some(policy(false)));
    let mut rec = Recorder::default();
    f.run(
        &"first prompt ".repeat(40),
        &mut rec,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    f.agent = auto_agent(model.clone());
    let mut rec = Recorder::default();
    let outcome = f
        .run("second prompt", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "answer two");
    assert_eq!(model.requests.lock().unwrap().len(), 4);
    let ends: Vec<&String> = rec
        .events
        .iter()
        .filter(|e| e.starts_with("compaction_end"))
        .collect();
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert!(
        ends[0].starts_with("compaction_end:auto:failed("),
        "{ends:?}"
    );
}

/// A tool that records where its call came from and answers with details,
/// or, when `alive` is false, says it is not available.
struct Witness {
    /// Spec of the tool.
    spec: etch_model::ToolSpec,
    /// Whether the tool can run.
    alive: bool,
    /// The origins of the calls it ran.
    seen: Arc<Mutex<Vec<etch_tool::CallOrigin>>>,
}

impl Witness {
    /// A tool called `name`.
    fn new(name: &str, alive: bool, seen: Arc<Mutex<Vec<etch_tool::CallOrigin>>>) -> Arc<Self> {
        Arc::new(Self {
            spec: etch_model::ToolSpec {
                name: name.into(),
                description: "witness".into(),
                parameters: json!({"type": "object"}),
            },
            alive,
            seen,
        })
    }
}

impl Tool for Witness {
    fn spec(&self) -> &etch_model::ToolSpec {
        &self.spec
    }
    fn available(&self) -> bool {
        self.alive
    }
    fn execute(&self, _args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        self.seen.lock().unwrap().push(ctx.origin);
        Box::pin(async { Ok(ToolOutput::text("seen").with_details(json!({"lines": [1, 2]}))) })
    }
}

/// Tools learn the session and the assistant event their call came from;
/// their details are logged beside the text (and never sent to the
/// model); a tool that is not available is not offered, and a call to it
/// gets an error result without running.
#[tokio::test(start_paused = true)]
async fn tools_get_their_origin_and_return_details() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let client = Scripted::new(vec![
        call_pass(&[("c1", "witness", "{}"), ("c2", "dead", "{}")]),
        text_pass("done"),
    ]);
    let mut f = fixture(
        client.clone(),
        vec![
            Witness::new("witness", true, Arc::clone(&seen)),
            Witness::new("dead", false, Arc::clone(&seen)),
        ],
        32,
    );
    f.run("go", &mut Recorder::default(), &CancellationToken::new())
        .await
        .unwrap();
    let requests = client.requests.lock().unwrap();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["witness"]);
    let loaded = load_session(f.writer.path()).unwrap();
    let assistant = loaded
        .events
        .iter()
        .find(|e| e.kind == types::MESSAGE_ASSISTANT)
        .unwrap();
    let origins = seen.lock().unwrap();
    assert_eq!(origins.len(), 1, "the dead tool must not run");
    assert_eq!(origins[0].session_id, f.writer.session_id());
    assert_eq!(origins[0].session_path, f.writer.path());
    assert_eq!(origins[0].assistant_event_id, assistant.id);
    let results: Vec<Value> = loaded
        .events
        .iter()
        .filter(|e| e.kind == types::MESSAGE_TOOL)
        .map(|e| serde_json::from_str(e.data.get()).unwrap())
        .collect();
    assert_eq!(results[0]["details"], json!({"lines": [1, 2]}));
    assert!(
        results[1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Tool dead is not available")
    );
    assert!(results[1].get("details").is_none());
    let replayed = format!("{:?}", requests[1].messages);
    assert!(!replayed.contains("lines"), "{replayed}");
}

/// A provider retry is visible: each announced retry is an event, and the
/// first real event after them ends the retrying with success; a pass
/// whose retries ran out ends it with the final error.
#[tokio::test(start_paused = true)]
async fn retries_start_and_end() {
    let retry = |attempt| StreamEvent::Retrying {
        attempt,
        max_retries: 3,
        delay_ms: 10,
        reason: "503".into(),
    };
    let mut recovered = vec![retry(1), retry(2)];
    recovered.extend(text_pass("ok"));
    let gave_up = vec![
        retry(1),
        StreamEvent::Error(ModelError::new(ErrorKind::Transient, "503 again")),
    ];
    let client = Scripted::new(vec![recovered, gave_up]);
    let mut f = fixture(client, vec![], 32);
    let mut rec = Recorder::default();
    f.run("a", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    let retry_events: Vec<&String> = rec
        .events
        .iter()
        .filter(|e| e.starts_with("retry"))
        .collect();
    assert_eq!(
        retry_events,
        ["retrying:1", "retrying:2", "retry_end:2:true"]
    );
    let mut rec = Recorder::default();
    f.run("b", &mut rec, &CancellationToken::new())
        .await
        .unwrap_err();
    let retry_events: Vec<&String> = rec
        .events
        .iter()
        .filter(|e| e.starts_with("retry"))
        .collect();
    assert_eq!(retry_events, ["retrying:1", "retry_end:1:false"]);
}

/// Steering left when the model had already finished becomes one combined
/// follow-up, the texts joined by a blank line (G8), answered in a further
/// round of the same run.
#[tokio::test(start_paused = true)]
async fn leftover_steering_is_one_combined_follow_up() {
    let client = Scripted::new(vec![text_pass("first"), text_pass("second")]);
    let mut f = fixture(client.clone(), vec![], 32);
    let mut rec = Recorder {
        steering: vec!["also a".into(), "and b".into()],
        ..Recorder::default()
    };
    let outcome = f
        .run("go", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "second");
    let requests = client.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        *requests[1].messages.last().unwrap(),
        Message::user_text("also a\n\nand b")
    );
}

/// Explicit follow-ups are taken only when the run would stop, each as its
/// own user message answered in a further round of the same run, in the
/// order the queue hands them over.
#[tokio::test(start_paused = true)]
async fn follow_ups_run_after_the_answer() {
    let client = Scripted::new(vec![
        text_pass("first"),
        text_pass("second"),
        text_pass("third"),
    ]);
    let mut f = fixture(client.clone(), vec![], 32);
    let mut rec = Recorder {
        follow_ups: vec!["then a".into(), "then b".into()],
        ..Recorder::default()
    };
    let outcome = f
        .run("go", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "third");
    let requests = client.requests.lock().unwrap();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        *requests[1].messages.last().unwrap(),
        Message::user_text("then a")
    );
    assert_eq!(
        *requests[2].messages.last().unwrap(),
        Message::user_text("then b")
    );
}

/// The repetition guard: the same call with the same result gets a note
/// on each repeat the model sees in its next request, and the fifth
/// identical call in a row stops the run with a typed error naming the
/// call; the log keeps every call, the notes and a `loop.guard` record
/// per finding, and a later run on the session goes on.
#[tokio::test(start_paused = true)]
async fn repeated_calls_are_noted_then_stopped() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let pass = |ws: &str| {
        call_pass(&[(
            "c",
            "reader",
            &format!(r#"{{"ms":{ws}0, "text": "No matches found"}}"#),
        )])
    };
    // Whitespace inside the JSON differs between passes: the same call.
    let passes = vec![pass(""), pass(" "), pass("  "), pass(""), pass(" ")];
    let client = Scripted::new([passes, vec![text_pass("done")]].concat());
    let mut f = fixture(client.clone(), vec![Sleeper::new("reader", false, log)], 32);
    let mut rec = Recorder::default();
    let err = f
        .run("count the lines", &mut rec, &CancellationToken::new())
        .await
        .unwrap_err();
    let RunError::Guard(stop) = &err else {
        panic!("expected a guard stop, got {err}");
    };
    assert!(stop.what.contains("same call 5 times"), "{err}");
    assert!(stop.what.contains("reader"), "{err}");
    assert!(err.to_string().contains("etch resume"), "{err}");
    let requests = client.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 5);
    let last_tool = |r: &ModelRequest| match r.messages.last().unwrap() {
        Message::Tool { content, .. } => etch_model::content::joined_text(content),
        other => panic!("expected a tool result, got {other:?}"),
    };
    assert_eq!(last_tool(&requests[1]), "No matches found");
    assert!(last_tool(&requests[2]).contains("made 2 times"));
    assert!(last_tool(&requests[4]).contains("made 4 times"));
    let guards: Vec<Value> = load_session(f.writer.path())
        .unwrap()
        .events
        .iter()
        .filter(|e| e.kind == types::LOOP_GUARD)
        .map(|e| serde_json::from_str(e.data.get()).unwrap())
        .collect();
    let actions: Vec<&str> = guards
        .iter()
        .map(|g| g["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["note", "note", "note", "stop"]);
    assert_eq!(guards[3]["tool"], "reader");
    assert_eq!(guards[3]["count"], 5);
    // The session goes on: the next run answers.
    let outcome = f
        .run(
            "try another way",
            &mut Recorder::default(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "done");
}

/// Failed results in a row: a note with the fifth, a stop at the tenth
/// (different calls each time, so this is not repetition).
#[tokio::test(start_paused = true)]
async fn failures_in_a_row_are_noted_then_stopped() {
    let passes: Vec<Vec<StreamEvent>> = (0..10)
        .map(|i| call_pass(&[("c", &format!("missing_{i}"), "{}")]))
        .collect();
    let client = Scripted::new(passes);
    let mut f = fixture(client.clone(), vec![], 32);
    let err = f
        .run("go", &mut Recorder::default(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Guard(_)), "{err}");
    assert!(
        err.to_string().contains("10 tool calls in a row failed"),
        "{err}"
    );
    let requests = client.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 10);
    let note = match requests[5].messages.last().unwrap() {
        Message::Tool { content, .. } => etch_model::content::joined_text(content),
        other => panic!("expected a tool result, got {other:?}"),
    };
    assert!(
        note.starts_with("tool error: Tool missing_4 not found"),
        "{note}"
    );
    assert!(note.contains("last 5 tool calls failed"), "{note}");
}

/// Refuses prompts that mention "forbidden" at admission (a stand-in for
/// a `UserPromptSubmit` hook), with a record of each refusal.
struct RefuseForbidden;

impl etch_core::Intercept for RefuseForbidden {
    fn wants(&self, point: etch_core::Point) -> bool {
        point == etch_core::Point::Prompt
    }

    fn prompt(&self, prompt: String) -> etch_core::InterceptFuture<'_, String> {
        Box::pin(async move {
            let refused = prompt.contains("forbidden");
            etch_core::Intercepted {
                verdict: if refused {
                    etch_core::Verdict::Blocked(Some("no".into()))
                } else {
                    etch_core::Verdict::Go(prompt)
                },
                records: vec![etch_session::HookRunData {
                    event: "UserPromptSubmit".into(),
                    matcher: String::new(),
                    command: "refuse".into(),
                    duration_ms: 0,
                    outcome: if refused { "blocked" } else { "ok" }.into(),
                    reason: None,
                    tool_call_id: None,
                }],
            }
        })
    }
}

/// A refused follow-up is dropped with its record and makes no request:
/// the run ends with the answer it had; an admitted one after it runs.
#[tokio::test(start_paused = true)]
async fn refused_follow_ups_make_no_request() {
    let client = Scripted::new(vec![text_pass("first"), text_pass("second")]);
    let Fixture {
        _dir: dir,
        writer,
        agent,
    } = fixture(client.clone(), vec![], 32);
    let mut f = Fixture {
        _dir: dir,
        writer,
        agent: agent.with_intercept(Arc::new(RefuseForbidden)),
    };
    let mut rec = Recorder {
        follow_ups: vec!["the forbidden one".into()],
        ..Recorder::default()
    };
    let outcome = f
        .run("go", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "first");
    assert_eq!(client.requests.lock().unwrap().len(), 1);
    let types = logged_types(&f.writer);
    assert_eq!(
        types.iter().filter(|t| *t == "hook.run").count(),
        2,
        "{types:?}"
    );
    assert_eq!(types.iter().filter(|t| *t == "message.user").count(), 1);

    let mut rec = Recorder {
        follow_ups: vec!["the forbidden one".into(), "fine".into()],
        ..Recorder::default()
    };
    let blocked = f
        .run("forbidden", &mut rec, &CancellationToken::new())
        .await;
    assert!(
        matches!(blocked, Err(RunError::PromptBlocked { reason: Some(ref r) }) if r == "no"),
        "{blocked:?}"
    );
    assert_eq!(client.requests.lock().unwrap().len(), 1);
}

/// An inbox that hands over its queued deliveries one per look, and
/// wakes a run while any are left and waking is on.
struct Queued {
    /// Deliveries not handed over yet.
    left: Mutex<VecDeque<Delivery>>,
    /// Whether what is left wakes a run that would end.
    wake: bool,
}

impl Inbox for Queued {
    fn take(&self) -> Delivery {
        self.left.lock().unwrap().pop_front().unwrap_or_default()
    }
    fn wakes(&self) -> bool {
        self.wake && !self.left.lock().unwrap().is_empty()
    }
}

/// A delivery of `text` about `p1`, with an end record.
fn delivery(text: &str) -> Delivery {
    Delivery {
        text: Some(text.into()),
        ids: vec!["p1".into()],
        records: vec![(
            "process.exited",
            serde_json::json!({"processId": "p1", "state": "exited", "code": 0}),
        )],
    }
}

/// What the inbox delivers is logged (its records, then
/// `process.update`) and reaches the next request as a user message
/// before the prompt; without waking, a run that answers ends with the
/// rest undelivered; with waking, it goes on for it.
#[tokio::test(start_paused = true)]
async fn the_inbox_is_delivered_before_requests() {
    let model = Scripted::new(vec![
        text_pass("first"),
        text_pass("second"),
        text_pass("third"),
    ]);
    let client: Arc<dyn ModelClient> = model.clone();
    let mut f = fixture(client, vec![], 8);
    let inbox = Arc::new(Queued {
        left: Mutex::new(
            vec![
                delivery("<process-update id=\"p1\" state=\"running\">\nready\n</process-update>"),
                delivery("later"),
            ]
            .into(),
        ),
        wake: false,
    });
    f.agent = f.agent.with_inbox(inbox.clone());
    let mut rec = Recorder::default();
    let out = f
        .run("hi", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.final_text, "first");
    assert_eq!(
        logged_types(&f.writer),
        [
            "process.exited",
            "process.update",
            "message.user",
            "message.assistant",
            "model.usage"
        ]
    );
    let first = model.requests.lock().unwrap()[0].clone();
    assert_eq!(
        user_texts(&first),
        [
            "<process-update id=\"p1\" state=\"running\">\nready\n</process-update>",
            "hi"
        ]
    );
    assert!(rec.events.contains(&"process_update".to_string()));
    assert_eq!(
        inbox.left.lock().unwrap().len(),
        1,
        "not woken for the rest"
    );

    let mut f = fixture(model.clone(), vec![], 8);
    f.agent = f.agent.with_inbox(Arc::new(Queued {
        left: Mutex::new(vec![Delivery::default(), delivery("news")].into()),
        wake: true,
    }));
    let out = f
        .run("go", &mut rec, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!((out.final_text.as_str(), out.rounds), ("third", 2));
    let woken = model.requests.lock().unwrap()[2].clone();
    assert_eq!(user_texts(&woken).last().map(String::as_str), Some("news"));
}
