//! The one projection of a session log into what front ends draw: the
//! active branch told again ([`replay`], the chat's scrollback on resume,
//! ACP's `session/load`, the HTML export), the conversation tree
//! ([`tree`], the chat's `/tree`) and the prompts a fork can start
//! before ([`fork_points`]). Front ends receive these protocol values and
//! never decode log events themselves, so a change of the log's format
//! is made here and in `etch-session` only.

use std::collections::HashSet;

use etch_model::{ContentPart, content::joined_text};
use etch_protocol::{ForkPoint, Replay, ReplayCall, ReplayEntry, Totals, TreeRow, UsageRecord};
use etch_session::event::{AssistantData, ReasoningData, ToolData, UserData};
use etch_session::{LoadedSession, session_stats, types};

/// How much of a session a replay tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    /// Only the last this many entries, when given (a chat draws the end
    /// of a long session; reading only those keeps resuming one fast).
    pub recent: Option<usize>,
    /// Whether to read the usage records (every model-naming event is
    /// read for them: only a front end that prices requests asks).
    pub usage: bool,
}

impl Scope {
    /// Everything.
    pub const WHOLE: Self = Self {
        recent: None,
        usage: true,
    };
}

/// `loaded` told again: its active branch's messages and reasoning, every
/// usage record with the model it was made with, and its counters.
pub fn replay(loaded: &LoadedSession) -> Replay {
    replay_in(loaded, Scope::WHOLE)
}

/// [`replay`] within `scope`.
pub fn replay_in(loaded: &LoadedSession, scope: Scope) -> Replay {
    let recent = scope.recent;
    let header = &loaded.header;
    let stats = session_stats(loaded);
    let branch: Vec<&etch_session::Event> = loaded
        .active_events()
        .filter(|e| is_entry(&e.kind))
        .collect();
    let earlier = recent.map_or(0, |recent| branch.len().saturating_sub(recent));
    let prompts = branch
        .iter()
        .filter(|e| e.kind == types::MESSAGE_USER)
        .filter_map(|e| e.parse_data::<UserData>().ok())
        .map(|data| joined_text(&data.content))
        .collect();
    Replay {
        session_id: header.session_id.clone(),
        session_file: loaded.path.to_string_lossy().into_owned(),
        cwd: header.cwd.clone(),
        provider: header.provider.clone(),
        model: header.model.clone(),
        started_at: loaded
            .events
            .first()
            .map(|e| e.time.clone())
            .unwrap_or_default(),
        entries: {
            let assets = etch_session::Assets::of(&loaded.path);
            branch[earlier..]
                .iter()
                .filter_map(|e| entry(e, &assets))
                .collect()
        },
        earlier,
        prompts,
        usage: if scope.usage {
            usage(loaded)
        } else {
            Vec::new()
        },
        totals: Totals {
            input_tokens: stats.usage.input_tokens,
            output_tokens: stats.usage.output_tokens,
            cached_input_tokens: stats.usage.cached_input_tokens,
            model_requests: stats.model_requests,
            request_bytes: stats.transport.request_bytes,
            response_bytes: stats.transport.response_bytes,
        },
    }
}

/// Whether events of `kind` are replay entries.
fn is_entry(kind: &str) -> bool {
    matches!(
        kind,
        types::MESSAGE_USER
            | types::MODEL_REASONING
            | types::MESSAGE_ASSISTANT
            | types::MESSAGE_TOOL
    )
}

/// The images among `parts`, with the files of `assets` they are in.
fn images(parts: &[ContentPart], assets: &etch_session::Assets) -> Vec<etch_protocol::ReplayImage> {
    parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Image(image) => Some(etch_protocol::ReplayImage {
                media_type: image.media_type.mime().to_owned(),
                sha256: image.sha256.clone(),
                width: image.width,
                height: image.height,
                path: assets.path(image).to_string_lossy().into_owned(),
            }),
            _ => None,
        })
        .collect()
}

/// The entry of one event, when it is a message or reasoning.
fn entry(event: &etch_session::Event, assets: &etch_session::Assets) -> Option<ReplayEntry> {
    match event.kind.as_str() {
        types::MESSAGE_USER => {
            let data = event.parse_data::<UserData>().ok()?;
            Some(ReplayEntry::User {
                text: etch_model::content::display_text(&data.content),
                images: images(&data.content, assets),
            })
        }
        types::MODEL_REASONING => {
            let data = event.parse_data::<ReasoningData>().ok()?;
            Some(ReplayEntry::Reasoning { text: data.text })
        }
        types::MESSAGE_ASSISTANT => {
            let data = event.parse_data::<AssistantData>().ok()?;
            let tool_calls = data
                .content
                .iter()
                .filter_map(|part| match part {
                    ContentPart::ToolCall(call) => Some(ReplayCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    }),
                    ContentPart::Text { .. } | ContentPart::Image(_) => None,
                })
                .collect();
            Some(ReplayEntry::Assistant {
                text: joined_text(&data.content),
                aborted: data.stop_reason == etch_model::StopReason::Aborted,
                error: data.error_message,
                tool_calls,
            })
        }
        types::MESSAGE_TOOL => {
            let data = event.parse_data::<ToolData>().ok()?;
            Some(ReplayEntry::ToolResult {
                images: images(&data.content, assets),
                text: etch_model::content::display_text(&data.content),
                tool_call_id: data.tool_call_id,
                is_error: data.is_error,
                details: data.details,
            })
        }
        _ => None,
    }
}

/// Every `model.usage` record of the log (all branches: they were all
/// paid for), each with the model named last before it. Only the events
/// that name a model or hold usage are read.
fn usage(loaded: &LoadedSession) -> Vec<UsageRecord> {
    /// The one field read of an event naming a model.
    #[derive(serde::Deserialize)]
    struct Named {
        /// The model, when named.
        model: Option<String>,
    }
    /// The fields read of a usage record (missing ones read as zero).
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Spent {
        /// Input tokens.
        #[serde(rename = "inputTokens")]
        input: u64,
        /// Cached input tokens.
        #[serde(rename = "cachedInputTokens")]
        cached: u64,
        /// Output tokens.
        #[serde(rename = "outputTokens")]
        output: u64,
    }
    let mut model = String::new();
    let mut out = Vec::new();
    for event in &loaded.events {
        match event.kind.as_str() {
            types::SESSION_STARTED | types::MODEL_CHANGE | types::MESSAGE_ASSISTANT => {
                if let Ok(Named { model: Some(name) }) = event.parse_data::<Named>() {
                    model = name;
                }
            }
            types::MODEL_USAGE => {
                let tokens = event.parse_data::<Spent>().unwrap_or_default();
                out.push(UsageRecord {
                    model: model.clone(),
                    input_tokens: tokens.input,
                    cached_input_tokens: tokens.cached,
                    output_tokens: tokens.output,
                });
            }
            _ => {}
        }
    }
    out
}

/// The conversation tree of `loaded`: prompts and answers with text, in
/// file order depth-first from the root, one step deeper at each branch
/// point, the active branch marked.
pub fn tree(loaded: &LoadedSession) -> Vec<TreeRow> {
    let children = etch_session::tree::children(loaded);
    let active: HashSet<usize> = loaded.active.iter().copied().collect();
    let mut out = Vec::new();
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    while let Some((i, depth)) = stack.pop() {
        let Some(event) = loaded.events.get(i) else {
            continue;
        };
        let text = match event.kind.as_str() {
            types::MESSAGE_USER => event
                .parse_data::<UserData>()
                .ok()
                .map(|d| (true, joined_text(&d.content))),
            types::MESSAGE_ASSISTANT => event
                .parse_data::<AssistantData>()
                .ok()
                .map(|d| (false, joined_text(&d.content)))
                .filter(|(_, text)| !first_line(text).is_empty()),
            _ => None,
        };
        if let Some((is_user, full_text)) = text {
            out.push(TreeRow {
                id: event.id.clone(),
                parent_id: event.parent_id.clone(),
                is_user,
                text: first_line(&full_text).to_owned(),
                full_text,
                depth,
                active: active.contains(&i),
            });
        }
        let kids = children.get(i).map_or(&[][..], Vec::as_slice);
        let step = usize::from(kids.len() > 1);
        for &kid in kids.iter().rev() {
            stack.push((kid, depth + step));
        }
    }
    out
}

/// The prompts of the active branch, oldest first.
pub fn fork_points(loaded: &LoadedSession) -> Vec<ForkPoint> {
    loaded
        .active_events()
        .filter(|e| e.kind == types::MESSAGE_USER)
        .filter_map(|e| {
            let data = e.parse_data::<UserData>().ok()?;
            Some(ForkPoint {
                entry_id: e.id.clone(),
                text: joined_text(&data.content),
            })
        })
        .collect()
}

/// The first non-empty line of `text`, trimmed.
fn first_line(text: &str) -> &str {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A session with a prompt, a tool call and its result, reasoning, an
    /// answer, then a second branch from the first prompt.
    fn session(dir: &std::path::Path) -> LoadedSession {
        let mut w = crate::testkit::new_log(dir, "m1", "first");
        let user = json!({"content": [{"type": "text", "text": "first\nsecond line"}]});
        let u = w.append(types::MESSAGE_USER, &user).unwrap();
        w.append(types::MODEL_REASONING, &json!({"text": "hmm"}))
            .unwrap();
        w.append(types::MESSAGE_ASSISTANT, &json!({"content": [{"type": "text", "text": "reading"}, {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "a"}}], "provider": "echo", "model": "m2", "stopReason": "toolUse"})).unwrap();
        w.append(types::MODEL_USAGE, &json!({"inputTokens": 10, "outputTokens": 2, "cachedInputTokens": 4, "reasoningOutputTokens": 0, "totalTokens": 12})).unwrap();
        w.append(types::MESSAGE_TOOL, &json!({"toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "A"}], "isError": false})).unwrap();
        w.append(types::MESSAGE_ASSISTANT, &json!({"content": [{"type": "text", "text": "done"}], "provider": "echo", "model": "m2", "stopReason": "stop"})).unwrap();
        let loaded = etch_session::load_session(w.path()).unwrap();
        etch_session::navigate::navigate(&loaded, &mut w, &u.id).unwrap();
        w.append(types::MESSAGE_ASSISTANT, &json!({"content": [{"type": "text", "text": "other"}], "provider": "echo", "model": "m2", "stopReason": "stop"})).unwrap();
        etch_session::load_session(w.path()).unwrap()
    }

    #[test]
    fn the_replay_tells_the_active_branch_with_usage_per_model() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = session(dir.path());
        let replay = replay(&loaded);
        assert_eq!(replay.model, "m1");
        assert_eq!(
            replay.entries,
            vec![
                ReplayEntry::User {
                    text: "first\nsecond line".into(),
                    images: Vec::new(),
                },
                ReplayEntry::Assistant {
                    text: "other".into(),
                    aborted: false,
                    error: None,
                    tool_calls: vec![]
                },
            ]
        );
        assert_eq!(
            replay.usage,
            vec![UsageRecord {
                model: "m2".into(),
                input_tokens: 10,
                cached_input_tokens: 4,
                output_tokens: 2
            }]
        );
        // The counters are the active branch's (`etch status`'s); the
        // usage records are every branch's, as all were paid for.
        assert_eq!(replay.totals.input_tokens, 0);
        assert_eq!(replay.prompts, ["first\nsecond line"]);
        let recent = replay_in(
            &loaded,
            Scope {
                recent: Some(1),
                usage: false,
            },
        );
        assert!(recent.usage.is_empty());
        assert_eq!(recent.earlier, 1);
        assert_eq!(recent.entries, replay.entries[1..]);
        assert_eq!(recent.prompts, replay.prompts);
        assert_eq!(fork_points(&loaded).len(), 1);
        assert_eq!(fork_points(&loaded)[0].text, "first\nsecond line");
    }

    #[test]
    fn the_tree_indents_at_branch_points_and_marks_the_active_branch() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = session(dir.path());
        let rows = tree(&loaded);
        assert_eq!(rows.len(), 4, "{rows:?}");
        assert_eq!(rows[0].text, "first");
        assert!(rows[0].is_user && rows[0].active && rows[0].depth == 0);
        // Two answers follow the prompt: the branch point indents both.
        let answers: Vec<(&str, usize, bool)> = rows[1..]
            .iter()
            .map(|r| (r.text.as_str(), r.depth, r.active))
            .collect();
        assert!(answers.contains(&("reading", 1, false)), "{answers:?}");
        assert!(answers.contains(&("other", 1, true)), "{answers:?}");
    }

    #[test]
    fn the_replay_keeps_calls_results_and_reasoning() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = crate::testkit::new_log(dir.path(), "m1", "p");
        w.append(types::MODEL_REASONING, &json!({"text": "hmm"}))
            .unwrap();
        w.append(types::MESSAGE_ASSISTANT, &json!({"content": [{"type": "tool_call", "id": "c1", "name": "read", "arguments": {}}], "provider": "echo", "model": "m1", "stopReason": "aborted", "errorMessage": "cut"})).unwrap();
        w.append(types::MESSAGE_TOOL, &json!({"toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "A"}], "isError": true, "details": {"k": 1}})).unwrap();
        let replay = replay(&etch_session::load_session(w.path()).unwrap());
        assert_eq!(
            replay.entries,
            vec![
                ReplayEntry::Reasoning { text: "hmm".into() },
                ReplayEntry::Assistant {
                    text: String::new(),
                    aborted: true,
                    error: Some("cut".into()),
                    tool_calls: vec![ReplayCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({})
                    }]
                },
                ReplayEntry::ToolResult {
                    tool_call_id: "c1".into(),
                    text: "A".into(),
                    is_error: true,
                    details: Some(json!({"k": 1})),
                    images: Vec::new(),
                },
            ]
        );
    }
}
