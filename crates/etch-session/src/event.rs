//! The event envelope and the typed `data` of each event type.
//!
//! The envelope field order (`type`, `id`, `parentId`, `time`, `data`) and the
//! dotted type names are the on-disk contract (E-SES-04, C5). Data structs use
//! camelCase field names; unknown fields written by a newer etch or by hand
//! are ignored on read so old binaries can still project new logs.

use etch_model::{ContentPart, StopReason};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Event type names.
pub mod types {
    /// First event of every session file (G3).
    pub const SESSION_STARTED: &str = "session.started";
    /// User input.
    pub const MESSAGE_USER: &str = "message.user";
    /// A finished model answer.
    pub const MESSAGE_ASSISTANT: &str = "message.assistant";
    /// One tool result.
    pub const MESSAGE_TOOL: &str = "message.tool";
    /// Provider-reported token usage of a model pass.
    pub const MODEL_USAGE: &str = "model.usage";
    /// A displayable reasoning summary.
    pub const MODEL_REASONING: &str = "model.reasoning";
    /// Provider response identity.
    pub const MODEL_RESPONSE: &str = "model.response";
    /// Opaque provider-native replay item.
    pub const MODEL_PROVIDER_ITEM: &str = "model.provider_item";
    /// Transport metrics of a model pass.
    pub const MODEL_METRICS: &str = "model.metrics";
    /// A compaction summary (C23).
    pub const CONTEXT_SUMMARY: &str = "context.summary";
    /// A summary of a branch the conversation came back from (P-TREE-05),
    /// a child of the `session.navigate` that left it.
    pub const CONTEXT_BRANCH_SUMMARY: &str = "context.branch_summary";
    /// The loop's guard noted or stopped a run going in circles (the same
    /// call and result again, failed tool results in a row).
    pub const LOOP_GUARD: &str = "loop.guard";
    /// A final answer failed a grounding check (it names a path that
    /// does not exist, or answers about a file nothing looked at); the
    /// note went back to the model as user input.
    pub const LOOP_GROUNDING: &str = "loop.grounding";
    /// A user's label on an event of the tree.
    pub const SESSION_LABEL: &str = "session.label";
    /// The active leaf moved to an earlier event (this event's parent).
    pub const SESSION_NAVIGATE: &str = "session.navigate";
    /// Later requests use another provider, model or endpoint.
    pub const MODEL_CHANGE: &str = "model.change";
    /// Later requests use another reasoning effort.
    pub const THINKING_LEVEL_CHANGE: &str = "thinking_level.change";
    /// One external hook ran: what it was, how long it took, and what it
    /// decided, so "why did my tool call not run" is answered by the log.
    pub const HOOK_RUN: &str = "hook.run";
    /// A plugin could not start, or stopped, or offered a tool etch
    /// rejected: what the user needs to know to fix it.
    pub const PLUGIN_DIAGNOSTIC: &str = "plugin.diagnostic";
    /// A tool call asked for approval (or was refused by the policy):
    /// what was decided and by whom, logged before the call's result.
    pub const APPROVAL_DECISION: &str = "approval.decision";
    /// A background process started (`bash` with `background`).
    pub const PROCESS_STARTED: &str = "process.started";
    /// A background process ended (or was found lost on resume).
    pub const PROCESS_EXITED: &str = "process.exited";
    /// Background processes' output and ends handed to the model as a
    /// user message; replayed into the history like one.
    pub const PROCESS_UPDATE: &str = "process.update";
}

/// One loaded event. `data` stays raw JSON until someone needs it typed, which
/// keeps loading large logs fast and lets unknown event types pass through.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    /// Dotted event type, e.g. `message.user`.
    #[serde(rename = "type")]
    pub kind: String,
    /// ULID of the event.
    pub id: String,
    /// Id of the parent event; `null` for the root.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// RFC 3339 timestamp.
    pub time: String,
    /// Type-specific payload, unparsed.
    pub data: Box<RawValue>,
    /// 1-based line number in the file, for diagnostics.
    #[serde(skip)]
    pub line: usize,
}

impl Event {
    /// Parses `data` into the typed struct for this event type.
    pub fn parse_data<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.data.get())
    }
}

/// The envelope as written; borrowed so appending never clones payloads.
#[derive(Serialize)]
pub(crate) struct EnvelopeOut<'a, T: Serialize + ?Sized> {
    /// Event type.
    #[serde(rename = "type")]
    pub kind: &'a str,
    /// Fresh ULID.
    pub id: &'a str,
    /// Current leaf, or `None` for the first event.
    #[serde(rename = "parentId")]
    pub parent_id: Option<&'a str>,
    /// Time of the append.
    pub time: &'a str,
    /// Payload.
    pub data: &'a T,
}

/// `session.started` data (G3, E-SES-08).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStarted {
    /// The session's ULID (also the file stem).
    pub session_id: String,
    /// On-disk format version; `1` for this layout.
    pub format_version: u32,
    /// Working directory the session was started in.
    pub cwd: String,
    /// Version of the etch binary that created the file.
    pub etch_version: String,
    /// Provider name at creation.
    pub provider: String,
    /// Model name at creation.
    pub model: String,
    /// OpenAI API shape, when the provider is `openai`.
    #[serde(default)]
    pub openai_api: Option<String>,
    /// The endpoint the session talked to (a base URL, never a key), so
    /// that resuming it goes back to the same server rather than to a
    /// default one. Absent for the offline echo model and older sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Parent session of a subagent child (M2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// Parent tool call that spawned a child (M2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// Subagent profile of a child (M2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_profile: Option<String>,
    /// Session file a child forks its context from (M2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_session_path: Option<String>,
    /// Event before which the fork's context ends (M2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_before_event_id: Option<String>,
    /// The other agent's session this one was imported from (M3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<ImportedFrom>,
}

/// Where an imported session came from: which agent's session, in which
/// file, with which id and format version. Its events keep that
/// session's ids, so the tree reads the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportedFrom {
    /// The agent: `pi`.
    pub agent: String,
    /// The file imported.
    pub path: String,
    /// That session's id.
    pub session_id: String,
    /// Its format version as read (before migration).
    pub version: u32,
    /// Its file's size and modification time when imported (seconds
    /// since the epoch), to tell a changed file from an imported one.
    pub size: u64,
    /// Modification time, seconds since the epoch.
    pub modified: u64,
}

/// Current on-disk format version written to `session.started` (C5).
pub const FORMAT_VERSION: u32 = 1;

/// `message.user` data (E-SES-05).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserData {
    /// Text parts of the prompt.
    pub content: Vec<ContentPart>,
}

/// `message.assistant` data (E-SES-06, C5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantData {
    /// Text and tool-call parts.
    pub content: Vec<ContentPart>,
    /// Provider that answered.
    #[serde(default)]
    pub provider: String,
    /// Model that answered.
    #[serde(default)]
    pub model: String,
    /// Why the pass ended.
    #[serde(default = "default_stop")]
    pub stop_reason: StopReason,
    /// The failure message of an `error` pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The text the model sent when its tool calls came as text and the
    /// loop took them back as calls (`content` holds the calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered_text: Option<String>,
}

/// Hand-written logs without a stop reason are treated as finished answers.
fn default_stop() -> StopReason {
    StopReason::Stop
}

/// `message.tool` data (E-SES-07, C36).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolData {
    /// The call this result answers.
    pub tool_call_id: String,
    /// The tool that ran.
    #[serde(default)]
    pub tool_name: String,
    /// Result text parts.
    pub content: Vec<ContentPart>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// Structured data the tool returned beside the text (the edit diff as
    /// lines); for display, never replayed to a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

/// `model.change` data: from this event on the branch, requests go to
/// this provider, model and endpoint (never a credential).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelChangeData {
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// OpenAI API shape, when the provider is `openai`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai_api: Option<String>,
    /// Endpoint base URL, when the provider has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// `thinking_level.change` data: the reasoning effort of later requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkingLevelData {
    /// One of the reasoning efforts (`off`, `none`, `minimal`, … `xhigh`).
    pub level: String,
}

/// `session.navigate` data: the leaf moved to `targetId`, which is also
/// this event's parent, so the move survives a restart and later events
/// continue the conversation from there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavigateData {
    /// The event the conversation continues from.
    pub target_id: String,
    /// The leaf that was left, so the abandoned branch can be found again.
    pub from_id: Option<String>,
}

/// `hook.run` data: one hook's run. `outcome` is `ok` (ran, changed
/// nothing), `rewrote` (changed the value it transforms), `blocked`
/// (refused the prompt or tool call, or cancelled the compaction) or
/// `failed` (with `reason`: exit code, timeout, bad output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRunData {
    /// The event, e.g. `PreToolUse`.
    pub event: String,
    /// The hook's matcher as configured (empty: everything).
    pub matcher: String,
    /// The hook's shell command.
    pub command: String,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// `ok`, `rewrote`, `blocked` or `failed`.
    pub outcome: String,
    /// Why it blocked or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The tool call it ran for (`PreToolUse`, `PostToolUse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// `plugin.diagnostic` data: a plugin's trouble, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginDiagnosticData {
    /// The plugin's configured name.
    pub plugin: String,
    /// What happened and what to do.
    pub message: String,
}

/// `approval.decision` data: the answer to a call that asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalData {
    /// The call.
    pub tool_call_id: String,
    /// Its tool.
    pub tool_name: String,
    /// `allowed`, `allowed_for_session`, `denied` or `refused` (by the
    /// policy, nobody asked).
    pub decision: String,
    /// Who decided: `user`, `editor`, `flag`, `policy` or `session` (an
    /// earlier allow-for-this-session).
    pub by: String,
    /// The reason given with a denial, or a bypass's justification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether the call asked to run outside the sandbox.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bypass: bool,
}

/// `process.update` data: the text the model got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessUpdateData {
    /// The `<process-update>` blocks.
    pub text: String,
    /// The processes they are about.
    #[serde(default)]
    pub processes: Vec<String>,
}

/// `process.started` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessStartedData {
    /// Its id in the session (`p3`).
    pub process_id: String,
    /// Its process id.
    #[serde(default)]
    pub pid: u32,
    /// The command line.
    #[serde(default)]
    pub command: String,
    /// The `bash` call that started it.
    #[serde(default)]
    pub tool_call_id: String,
}

/// `process.exited` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExitedData {
    /// Its id.
    pub process_id: String,
    /// `exited`, `killed` or `lost`.
    pub state: String,
    /// The exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal, when killed (`SIGTERM`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

/// `loop.guard` data: what the loop's guard saw and did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardData {
    /// `repeat` (the same call with the same result) or `errors` (failed
    /// tool results in a row).
    pub kind: String,
    /// `note` (the model was told) or `stop` (the run ended).
    pub action: String,
    /// Identical calls, or failed results, in a row so far.
    pub count: u32,
    /// The repeated call's tool, for `repeat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The repeated call's arguments as JSON, for `repeat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// The id of the call whose result carried the note, or that tipped
    /// the stop.
    pub tool_call_id: String,
}

/// `loop.grounding` data: what a grounding check found in a final
/// answer and the note the model got. The projection replays the note
/// as a user message, so a resumed session shows the model what it was
/// told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroundingData {
    /// `missing_path` (the answer names a path that does not exist) or
    /// `not_looked` (the prompt names a file no call looked at).
    pub kind: String,
    /// The paths concerned, as written.
    pub paths: Vec<String>,
    /// The note sent to the model.
    pub note: String,
}

/// `context.branch_summary` data: what happened on the branch a navigation
/// left, so the conversation continuing from an earlier event keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryData {
    /// The summary text.
    pub summary: String,
    /// The leaf of the branch that was left.
    pub from_id: String,
}

/// `session.label` data: a name for an event of the session tree, shown by
/// tree views; the latest label of a target wins, an empty one removes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelData {
    /// The labelled event's id.
    pub target_id: String,
    /// The label.
    pub label: String,
}

/// `model.reasoning` data (G4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningData {
    /// The displayable summary text.
    pub text: String,
}

/// `model.response` data (G4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseData {
    /// Provider name.
    pub provider: String,
    /// Provider API.
    pub api: String,
    /// Provider response id.
    pub response_id: String,
    /// Model that answered.
    pub model: String,
}

/// `context.summary` data (C23).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryData {
    /// The summary text.
    pub summary: String,
    /// `manual`, `auto` or `overflow`.
    pub trigger: String,
    /// First raw event replayed after the summary.
    pub first_kept_event_id: Option<String>,
    /// Estimated tokens before compaction.
    #[serde(default)]
    pub tokens_before: u64,
    /// Estimated tokens after compaction.
    #[serde(default)]
    pub tokens_after: u64,
    /// Files read in the summarized prefix.
    #[serde(default)]
    pub read_files: Vec<String>,
    /// Files modified in the summarized prefix.
    #[serde(default)]
    pub modified_files: Vec<String>,
    /// Focus text given to the summarizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}
