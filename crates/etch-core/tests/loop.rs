//! Agent loop behaviour with a scripted model and test tools: Pi's event
//! order (P-CHK-1..3), bad tool calls (E-LOOP-13), the round bound
//! (E-LOOP-04/05), streams without `done`, cancellation (G20), conflict
//! scheduling (C19) and steering (E-LOOP-01 step 7).

// Test doubles outside #[test] functions may panic on broken fixtures.
#![allow(clippy::unwrap_used, clippy::unnecessary_literal_bound)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etch_core::{Agent, AgentConfig, AgentEvent, Observer, RunError, RunOutcome};
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
}

impl Observer for Recorder {
    fn agent_event(&mut self, event: &AgentEvent<'_>) {
        let name = match event {
            AgentEvent::AgentStart => "agent_start".to_string(),
            AgentEvent::TurnStart { .. } => "turn_start".to_string(),
            AgentEvent::MessageStart { message } => format!("message_start:{}", role(*message)),
            AgentEvent::MessageUpdate { .. } => "message_update".to_string(),
            AgentEvent::MessageEnd { message } => format!("message_end:{}", role(Some(message))),
            AgentEvent::ToolBatchStart { .. } => "tool_batch".to_string(),
            AgentEvent::ToolExecutionStart { call } => format!("tool_execution_start:{}", call.id),
            AgentEvent::ToolExecutionUpdate { call_id, .. } => {
                format!("tool_execution_update:{call_id}")
            }
            AgentEvent::ToolExecutionEnd { call_id, .. } => format!("tool_execution_end:{call_id}"),
            AgentEvent::TurnEnd { .. } => "turn_end".to_string(),
            AgentEvent::AgentEnd { .. } => "agent_end".to_string(),
        };
        self.events.push(name);
    }
    fn durable_line(&mut self, line: &str) {
        self.lines.push(line.to_string());
    }
    fn drain_steering(&mut self) -> Vec<String> {
        std::mem::take(&mut self.steering)
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

/// Builds a fixture.
fn fixture(client: Arc<dyn ModelClient>, tools: Vec<Arc<dyn Tool>>, max_rounds: u32) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));
    let (writer, _) = store
        .create(&NewSession {
            cwd: dir.path().to_string_lossy().into_owned(),
            provider: "scripted".into(),
            model: "script-1".into(),
            openai_api: None,
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
            .run(
                &mut self.writer,
                &mut Vec::new(),
                prompt.into(),
                observer,
                cancel,
            )
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
#[tokio::test]
async fn simple_prompt_event_order() {
    let mut f = fixture(Scripted::new(vec![text_pass("hello")]), vec![], 32);
    let mut rec = Recorder::default();
    let mut history = Vec::new();
    let out = f
        .agent
        .run(
            &mut f.writer,
            &mut history,
            "hi".into(),
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
#[tokio::test]
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
#[tokio::test]
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
#[tokio::test]
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
        "tool error: Tool nope not found"
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
#[tokio::test]
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
            "message.tool"
        ]
    );
    assert_eq!(rec.events.last().unwrap(), "agent_end");
}

/// A stream that stops without `done` is an error, not an answer: the failed
/// pass is logged with stop reason `error` and never replayed.
#[tokio::test]
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
#[tokio::test]
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
#[tokio::test]
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

/// G20: cancelling during a model pass appends nothing for that pass.
#[tokio::test]
async fn cancel_during_model_pass_appends_nothing() {
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
    assert_eq!(logged_types(&f.writer), ["message.user"]);
}

/// Steering drained after a tool batch is admitted as user messages before
/// the next request (E-LOOP-01 step 7).
#[tokio::test]
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
