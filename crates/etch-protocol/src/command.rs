//! Commands a client sends to a session, one JSON object per line:
//! `{"id":"c1","type":"prompt","message":"hi"}`.
//!
//! The `type` names and camelCase fields are Pi's RPC commands (the set
//! etch implements); `id` is optional and echoed on the response and on
//! every event the command causes. This module only declares the shapes;
//! what a command does is the runtime's business.

use serde::{Deserialize, Serialize};

/// One command with its optional correlation id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Command {
    /// Correlation id chosen by the client, echoed back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What to do.
    #[serde(flatten)]
    pub body: CommandBody,
}

/// An image a client attaches to a prompt: its bytes in base64 and their
/// MIME type (PNG, JPEG, GIF or WebP; the bytes decide which).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ImageInput {
    /// Always `image`.
    #[serde(rename = "type", default = "image_type")]
    pub kind: String,
    /// The bytes, base64-encoded.
    pub data: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
}

/// The `type` of an [`ImageInput`].
fn image_type() -> String {
    "image".to_owned()
}

/// The commands, tagged by `type` in snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum CommandBody {
    /// Start a run with `message`; acknowledged at once. While a run is
    /// active, `streaming_behavior` says whether the text steers the run or
    /// waits as a follow-up (without it, a prompt during a run is refused).
    Prompt {
        /// The user's text.
        message: String,
        /// Images attached to the prompt, in Pi's shape
        /// (`{"type":"image","data":BASE64,"mimeType":"image/png"}`);
        /// during a run they are queued with the text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageInput>,
        /// What to do with the prompt when a run is already active.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        streaming_behavior: Option<StreamingBehavior>,
    },
    /// Queue text admitted at the next boundary after a tool batch.
    Steer {
        /// The steering text.
        message: String,
        /// Images, as a prompt takes them (Pi's client sends them here
        /// too): they go with the text, whether it starts a run or waits
        /// in the queue of a running one.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageInput>,
    },
    /// Queue text to run after the current run would stop.
    FollowUp {
        /// The follow-up text.
        message: String,
        /// Images, as with [`CommandBody::Steer`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageInput>,
    },
    /// Cancel the active run (answered once the session is idle).
    Abort,
    /// Stop the subagent running for the `task` call `tool_call_id`; the
    /// parent gets `tool error: Operation aborted` for it and the other
    /// children go on.
    AbortSubagent {
        /// The parent's `task` call.
        tool_call_id: String,
    },
    /// Answer the `approval_request` of call `tool_call_id`.
    Approve {
        /// The waiting call.
        tool_call_id: String,
        /// Run it, run such calls for the rest of the session, or not.
        decision: ApprovalDecision,
        /// With `deny`: why, for the model (it reads this as the call's
        /// tool error and can do something else).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The session's background processes: id, pid, command, state,
    /// age and unread bytes of each.
    ListProcesses,
    /// Stop a background process and its whole process group: SIGTERM,
    /// then SIGKILL after 2 s (`signal: "kill"`: at once). Answered once
    /// it ended.
    KillProcess {
        /// The process (`p3`).
        process_id: String,
        /// `term` (the default) or `kill`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
    },
    /// Summarize older history into a `context.summary` event.
    Compact {
        /// Extra instruction for the summary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        custom_instructions: Option<String>,
        /// Compact even a short session, keeping only the last turn
        /// (also implied by `customInstructions`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        force: bool,
    },
    /// Switch the model for later requests (`model.change`).
    SetModel {
        /// Provider name, e.g. `openai`.
        provider: String,
        /// Model name at that provider.
        model_id: String,
    },
    /// Switch the reasoning effort for later requests.
    SetThinkingLevel {
        /// The new level.
        level: ThinkingLevel,
    },
    /// How queued steering texts are admitted.
    SetSteeringMode {
        /// All at once, or one per boundary.
        mode: QueueMode,
    },
    /// How queued follow-ups are admitted.
    SetFollowUpMode {
        /// All at once, or one per run.
        mode: QueueMode,
    },
    /// Copy the branch ending at `entry_id` into a new session file.
    Fork {
        /// Event id the new session's context ends with.
        entry_id: String,
    },
    /// Move the active leaf of the session tree to `entry_id`.
    Navigate {
        /// Event id to continue from.
        entry_id: String,
        /// Whether to summarize the branch being left.
        #[serde(default)]
        summarize: bool,
    },
    /// Start a new session.
    NewSession {
        /// Session the new one was started from, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_session: Option<String>,
    },
    /// Continue another session file instead.
    SwitchSession {
        /// Path of its JSONL file.
        session_path: String,
    },
    /// Run a shell command outside a tool call; its output goes to the
    /// model with the next prompt, unless `excludeFromContext` (the
    /// chat's `!!command`).
    Bash {
        /// The command line.
        command: String,
        /// Leave the output out of the model's context.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        exclude_from_context: bool,
    },
    /// The session's state: model, thinking level, streaming, queues.
    GetState,
    /// The messages of the active branch, as the model sees them.
    GetMessages,
    /// The user messages of the active branch with their event ids, to
    /// pick where to `fork` (Pi's `get_fork_messages`).
    GetForkMessages,
    /// The session's counters (turns, calls, tokens, time).
    GetSessionStats,
    /// The text of the active branch's last answer (`{"text": …}`, null
    /// when there is none), as Pi answers it.
    GetLastAssistantText,
    /// Name the session (what `sessions` and the pickers show).
    SetSessionName {
        /// The name; an empty one is refused.
        name: String,
    },
    /// The next thinking level (off, minimal, low, medium, high, xhigh,
    /// then off again) for later requests; answers `{"level"}`.
    CycleThinkingLevel,
    /// The next model the provider's server offers; answers
    /// `{"model","thinkingLevel","isScoped"}`, or null when it offers no
    /// other.
    CycleModel,
    /// The models of the session's provider (its server's list, the
    /// current model first): `{"models":[{"provider","id","name"}]}`.
    GetAvailableModels,
    /// Stop the `bash` command running outside a tool call, if any.
    AbortBash,
    /// What a prompt can invoke, in Pi's shape: the skills
    /// (`skill:NAME`, with the file they come from).
    GetCommands,
    /// Turn threshold compaction on or off for later runs of this
    /// session (`[context] auto_compact` otherwise).
    SetAutoCompaction {
        /// On or off.
        enabled: bool,
    },
    /// Turn retries before a pass's output on or off for later requests
    /// (`[provider] max_retries` when on).
    SetAutoRetry {
        /// On or off.
        enabled: bool,
    },
    /// Give up the retry the active run waits for (the run ends);
    /// answers `{"aborted"}`, false when no retry waits.
    AbortRetry,
    /// Copy the active branch, leaf included, into a new session and go
    /// on there (Pi's `clone`); answers `{"cancelled":false,…}`.
    Clone,
    /// Pi's name for `export` as HTML: answers `{"path"}`.
    ExportHtml {
        /// Where to write it (default: beside the session file).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_path: Option<String>,
    },
    /// Write the session's transcript to a file.
    Export {
        /// Where to write it (default: beside the session file).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_path: Option<String>,
        /// `html`, `md` or `jsonl`; default: the extension of
        /// `outputPath` (`.html`, `.jsonl`), else `md`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<String>,
    },
}

impl CommandBody {
    /// Every command's `type`, in the order of the protocol's reference.
    pub const NAMES: [&'static str; 31] = [
        "prompt",
        "steer",
        "follow_up",
        "abort",
        "compact",
        "set_model",
        "set_thinking_level",
        "set_steering_mode",
        "set_follow_up_mode",
        "fork",
        "navigate",
        "new_session",
        "switch_session",
        "bash",
        "get_state",
        "get_messages",
        "get_fork_messages",
        "get_session_stats",
        "get_last_assistant_text",
        "set_session_name",
        "cycle_thinking_level",
        "cycle_model",
        "get_available_models",
        "abort_bash",
        "get_commands",
        "set_auto_compaction",
        "set_auto_retry",
        "abort_retry",
        "clone",
        "export_html",
        "export",
    ];

    /// The command's `type` as written on the wire, for responses.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Prompt { .. } => "prompt",
            Self::Steer { .. } => "steer",
            Self::FollowUp { .. } => "follow_up",
            Self::Abort => "abort",
            Self::AbortSubagent { .. } => "abort_subagent",
            Self::Approve { .. } => "approve",
            Self::ListProcesses => "list_processes",
            Self::KillProcess { .. } => "kill_process",
            Self::Compact { .. } => "compact",
            Self::SetModel { .. } => "set_model",
            Self::SetThinkingLevel { .. } => "set_thinking_level",
            Self::SetSteeringMode { .. } => "set_steering_mode",
            Self::SetFollowUpMode { .. } => "set_follow_up_mode",
            Self::Fork { .. } => "fork",
            Self::Navigate { .. } => "navigate",
            Self::NewSession { .. } => "new_session",
            Self::SwitchSession { .. } => "switch_session",
            Self::Bash { .. } => "bash",
            Self::GetState => "get_state",
            Self::GetMessages => "get_messages",
            Self::GetForkMessages => "get_fork_messages",
            Self::GetSessionStats => "get_session_stats",
            Self::GetLastAssistantText => "get_last_assistant_text",
            Self::SetSessionName { .. } => "set_session_name",
            Self::CycleThinkingLevel => "cycle_thinking_level",
            Self::CycleModel => "cycle_model",
            Self::GetAvailableModels => "get_available_models",
            Self::AbortBash => "abort_bash",
            Self::GetCommands => "get_commands",
            Self::SetAutoCompaction { .. } => "set_auto_compaction",
            Self::SetAutoRetry { .. } => "set_auto_retry",
            Self::AbortRetry => "abort_retry",
            Self::Clone => "clone",
            Self::ExportHtml { .. } => "export_html",
            Self::Export { .. } => "export",
        }
    }
}

/// An answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call.
    Allow,
    /// Run it, and such calls of the same tool without asking for the
    /// rest of the session.
    AllowForSession,
    /// Do not run it.
    Deny,
}

/// What a prompt sent during an active run becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum StreamingBehavior {
    /// Admitted at the next boundary after a tool batch.
    Steer,
    /// Run after the current run would stop.
    FollowUp,
}

/// How a queue is drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum QueueMode {
    /// Every pending text at once (etch's default).
    #[default]
    All,
    /// One text per boundary (Pi's option for RPC clients).
    OneAtATime,
}

/// Reasoning effort levels a client may pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning settings sent.
    Off,
    /// The provider's `none` effort.
    None,
    /// Minimal effort.
    Minimal,
    /// Low effort.
    Low,
    /// Medium effort.
    Medium,
    /// High effort.
    High,
    /// Extra-high effort.
    Xhigh,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Parses one command line.
    fn parse(value: serde_json::Value) -> Command {
        serde_json::from_value(value).unwrap()
    }

    /// Pi-shaped command lines parse, keep their id, and serialize back to
    /// the same JSON.
    #[test]
    fn commands_round_trip() {
        let lines = [
            json!({"id": "1", "type": "prompt", "message": "hi"}),
            json!({"id": "2", "type": "prompt", "message": "hi", "streamingBehavior": "followUp"}),
            json!({"type": "steer", "message": "also this"}),
            json!({"id": "3", "type": "follow_up", "message": "later"}),
            json!({"id": "4", "type": "abort"}),
            json!({"id": "5", "type": "compact", "customInstructions": "keep tests"}),
            json!({"id": "6", "type": "set_model", "provider": "openai", "modelId": "gpt-5.5"}),
            json!({"id": "7", "type": "set_thinking_level", "level": "high"}),
            json!({"id": "8", "type": "set_steering_mode", "mode": "one-at-a-time"}),
            json!({"id": "9", "type": "set_follow_up_mode", "mode": "all"}),
            json!({"id": "10", "type": "fork", "entryId": "01J"}),
            json!({"id": "11", "type": "navigate", "entryId": "01J", "summarize": true}),
            json!({"id": "12", "type": "new_session"}),
            json!({"id": "13", "type": "switch_session", "sessionPath": "/s.jsonl"}),
            json!({"id": "14", "type": "bash", "command": "ls"}),
            json!({"id": "15", "type": "get_state"}),
            json!({"id": "16", "type": "get_messages"}),
            json!({"id": "16b", "type": "get_fork_messages"}),
            json!({"id": "17", "type": "get_session_stats"}),
            json!({"id": "17a", "type": "get_last_assistant_text"}),
            json!({"id": "17b", "type": "set_session_name", "name": "n"}),
            json!({"id": "17c", "type": "cycle_thinking_level"}),
            json!({"id": "17d", "type": "cycle_model"}),
            json!({"id": "17e", "type": "get_available_models"}),
            json!({"id": "17f", "type": "abort_bash"}),
            json!({"id": "17g", "type": "get_commands"}),
            json!({"id": "17h", "type": "set_auto_compaction", "enabled": false}),
            json!({"id": "17h2", "type": "set_auto_retry", "enabled": true}),
            json!({"id": "17h3", "type": "abort_retry"}),
            json!({"id": "17i", "type": "clone"}),
            json!({"id": "17j", "type": "export_html", "outputPath": "/t.html"}),
            json!({"id": "18", "type": "export", "outputPath": "/t.html"}),
        ];
        let mut named: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
        named.dedup();
        assert_eq!(named, CommandBody::NAMES);
        for line in lines {
            let command = parse(line.clone());
            assert!(CommandBody::NAMES.contains(&command.body.name()));
            assert_eq!(command.body.name(), line["type"].as_str().unwrap());
            assert_eq!(command.id.as_deref(), line["id"].as_str());
            assert_eq!(serde_json::to_value(&command).unwrap(), line);
        }
        let approve = json!({"id": "a", "type": "approve", "toolCallId": "t1", "decision": "deny", "reason": "use make"});
        assert_eq!(
            serde_json::to_value(parse(approve.clone())).unwrap(),
            approve
        );
        let approve =
            parse(json!({"type": "approve", "toolCallId": "t1", "decision": "allow_for_session"}));
        assert_eq!(approve.body.name(), "approve");
        let navigate = parse(json!({"type": "navigate", "entryId": "x"}));
        assert_eq!(
            navigate.body,
            CommandBody::Navigate {
                entry_id: "x".into(),
                summarize: false
            }
        );
    }

    /// Unknown commands, missing fields and bad enum values are errors a
    /// front end can answer with the line's id.
    #[test]
    fn bad_commands_are_errors() {
        for bad in [
            json!({"id": "1", "type": "teleport"}),
            json!({"id": "2", "type": "prompt"}),
            json!({"id": "3", "type": "set_steering_mode", "mode": "some"}),
            json!({"id": "4"}),
            json!({"id": "5", "type": "approve", "toolCallId": "t1", "decision": "maybe"}),
        ] {
            assert!(serde_json::from_value::<Command>(bad).is_err());
        }
    }
}
