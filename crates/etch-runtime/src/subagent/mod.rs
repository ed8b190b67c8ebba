//! Subagents (E-SUB in docs/requirements.md): the `task` tool, offered
//! when `[subagents] enabled = true`, hands a focused job to a child
//! agent run under a configured `[[subagents.profile]]`. The model picks
//! the profile and writes the task; the operator's configuration owns
//! the child's model, instructions, tools and round bound (E-SUB-12).
//!
//! Calls of one response run concurrently up to `max_concurrent`;
//! calls beyond `max_per_turn` in one turn (one model response and its
//! calls) are refused. Each child
//! is an ordinary run in its own session (`child`), and the parent gets
//! one compact result. This module must not know how results are shown.

mod child;
mod profile;
mod running;

pub use profile::resume_as_child;
pub use running::Children;

use std::path::Path;
use std::sync::{Arc, Mutex};

use etch_config::SubagentProfile;
use etch_model::ToolSpec;
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::context::Context;
use crate::settings::{Place, RunSettings};

/// The tool's name.
pub const TASK: &str = "task";

/// The `task` tool of one session.
pub struct TaskTool {
    /// Name, description (with the profiles), schema.
    spec: ToolSpec,
    /// What a child is built from.
    parent: Parent,
    /// Calls allowed per response.
    max_per_turn: u32,
    /// Children running at once.
    running: Arc<Semaphore>,
    /// Calls seen in the current turn: its assistant event id and the
    /// count (one pair: turns do not come back).
    per_turn: Mutex<(String, u32)>,
}

/// What the parent session lends its children.
#[derive(Clone)]
pub(crate) struct Parent {
    /// Where the parent runs.
    pub(crate) place: Place,
    /// The parent's settings (the child's defaults).
    pub(crate) settings: RunSettings,
    /// The parent's context without `task`.
    pub(crate) context: Context,
}

impl TaskTool {
    /// The tool for a session in `place` run with `settings`, whose
    /// other tools and prompt are `context`; `None` when subagents are
    /// off or no profile is configured.
    pub fn new(place: &Place, settings: &RunSettings, context: &Context) -> Option<Self> {
        let config = &place.config.subagents;
        if !config.enabled || config.profiles.is_empty() {
            return None;
        }
        Some(Self {
            spec: spec(&config.profiles),
            parent: Parent {
                place: place.clone(),
                settings: settings.clone(),
                context: context.clone(),
            },
            max_per_turn: config.max_per_turn,
            running: Arc::new(Semaphore::new(config.max_concurrent.max(1) as usize)),
            per_turn: Mutex::new((String::new(), 0)),
        })
    }

    /// Counts a call of the turn (one model response and its tool
    /// calls, as the loop's `TurnStart` counts them) whose assistant
    /// event is `assistant_event_id`; `false` past `max_per_turn`.
    fn admit(&self, assistant_event_id: &str) -> bool {
        let mut seen = self
            .per_turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.0 != assistant_event_id {
            *seen = (assistant_event_id.to_owned(), 0);
        }
        seen.1 += 1;
        seen.1 <= self.max_per_turn
    }
}

/// The tool spec listing the profiles (E-SUB-02).
fn spec(profiles: &[SubagentProfile]) -> ToolSpec {
    let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
    let listed: String = profiles
        .iter()
        .map(|p| {
            format!(
                "\n- {}: {}",
                p.name,
                p.description.as_deref().unwrap_or("(no description)")
            )
        })
        .collect();
    ToolSpec {
        name: TASK.to_owned(),
        description: format!(
            "Hand a focused, self-contained job to a subagent: a child agent that starts from this conversation so far, works with its own tools and returns one final answer. Several task calls in one response run at the same time. Profiles:{listed}"
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "profile": {"type": "string", "enum": names, "description": "Which subagent profile runs the task."},
                "task": {"type": "string", "description": "The job, concrete and complete: what to do and what to report."},
                "context": {"type": "string", "description": "Optional focused context the subagent needs beyond the conversation."}
            },
            "required": ["profile", "task"],
            "additionalProperties": false
        }),
    }
}

impl Tool for TaskTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Children are isolated work: they overlap with each other and with
    /// reads, their number bounded by `max_concurrent`, but they wait
    /// behind the parent's own writes of the same response, which they
    /// may read.
    fn access(&self, _args: &Value, cwd: &Path) -> Access {
        Access::Read(vec![cwd.to_path_buf()])
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let field = |name: &str| args.get(name).and_then(Value::as_str).unwrap_or_default();
            let name = field("profile");
            let profiles = &self.parent.place.config.subagents.profiles;
            let Some(profile) = profiles.iter().find(|p| p.name == name) else {
                let known: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
                return Err(ToolError(format!(
                    "unknown subagent profile {name:?}; configured: {}",
                    known.join(", ")
                )));
            };
            let task = field("task").trim();
            if task.is_empty() {
                return Err(ToolError(
                    "the task is empty; say what the subagent should do and report".to_owned(),
                ));
            }
            if !self.admit(&ctx.origin.assistant_event_id) {
                return Err(ToolError(format!(
                    "more than max_per_turn ({}) task calls in one response; this one was not run",
                    self.max_per_turn
                )));
            }
            let _permit = tokio::select! {
                permit = Arc::clone(&self.running).acquire_owned() => permit
                    .map_err(|_| ToolError("the subagent pool is closed".to_owned()))?,
                () = ctx.cancel.cancelled() => return Err(ToolError("Operation aborted".to_owned())),
            };
            let context = field("context").trim();
            child::run(&self.parent, profile, task, context, &ctx)
                .await
                .map(ToolOutput::text)
                .map_err(ToolError)
        })
    }
}
