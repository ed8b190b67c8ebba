//! The plain transcript of a session, for people: one block per event, no
//! styling, reasoning shown as thinking blocks, metadata condensed to one
//! line. `etch show` prints it and the `export` command writes it. It
//! must not know where the text goes.

use std::fmt::Write as _;

use etch_model::ContentPart;
use etch_session::event::{
    AssistantData, ModelChangeData, NavigateData, ReasoningData, SummaryData, ThinkingLevelData,
    ToolData, UserData,
};
use etch_session::{Event, LoadedSession, types};

/// The export format a path's extension names (`html`, `md` or
/// `jsonl`), if it names one: `etch export -o`, RPC `export` and the
/// chat's `/export` decide alike.
pub fn format_of(path: &std::path::Path) -> Option<&'static str> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("html" | "htm") => Some("html"),
        Some("md" | "markdown" | "txt") => Some("md"),
        Some("jsonl") => Some("jsonl"),
        _ => None,
    }
}

/// The plain transcript as an HTML page, every character from the
/// session escaped (a front end may give its host a richer page; this is
/// what `export` writes without one).
pub fn html(session: &LoadedSession) -> String {
    let mut text = String::with_capacity(256);
    for c in render(session).chars() {
        match c {
            '&' => text.push_str("&amp;"),
            '<' => text.push_str("&lt;"),
            '>' => text.push_str("&gt;"),
            '"' => text.push_str("&quot;"),
            '\'' => text.push_str("&#39;"),
            c => text.push(c),
        }
    }
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>etch session {}</title></head>\n<body><pre>{text}</pre></body></html>\n",
        session
            .session_id()
            .replace(|c: char| !c.is_ascii_alphanumeric(), "")
    )
}

/// Renders the whole session as plain text.
pub fn render(session: &LoadedSession) -> String {
    let h = &session.header;
    let mut out = String::new();
    let started = session.events.first().map_or("", |e| e.time.as_str());
    let _ = writeln!(out, "session {}", h.session_id);
    let _ = writeln!(
        out,
        "started {started} in {} with {}/{}",
        h.cwd, h.provider, h.model
    );
    let assets = etch_session::Assets::of(&session.path);
    for event in session.events.iter().skip(1) {
        render_event(event, &assets, &mut out);
    }
    out
}

/// Appends a block for one event.
fn render_event(event: &Event, assets: &etch_session::Assets, out: &mut String) {
    match event.kind.as_str() {
        types::MESSAGE_USER => {
            if let Ok(d) = event.parse_data::<UserData>() {
                block(out, "user", &parts_text(&d.content, assets));
            }
        }
        types::MESSAGE_ASSISTANT => {
            if let Ok(d) = event.parse_data::<AssistantData>() {
                let title = match &d.error_message {
                    Some(err) => format!("assistant, failed: {err}"),
                    None if d.stop_reason == etch_model::StopReason::Aborted => {
                        "assistant, interrupted".to_string()
                    }
                    None => "assistant".to_string(),
                };
                block(out, &title, &parts_text(&d.content, assets));
            }
        }
        types::MESSAGE_TOOL => {
            if let Ok(d) = event.parse_data::<ToolData>() {
                let state = if d.is_error { ", error" } else { "" };
                let title = format!("tool result {} ({}{state})", d.tool_name, d.tool_call_id);
                block(out, &title, &parts_text(&d.content, assets));
            }
        }
        types::MODEL_REASONING => {
            if let Ok(d) = event.parse_data::<ReasoningData>() {
                block(out, "thinking", &d.text);
            }
        }
        types::CONTEXT_SUMMARY => {
            if let Ok(d) = event.parse_data::<SummaryData>() {
                block(out, &format!("summary ({})", d.trigger), &d.summary);
            }
        }
        types::CONTEXT_BRANCH_SUMMARY => {
            if let Ok(d) = event.parse_data::<etch_session::BranchSummaryData>() {
                block(out, "summary of the branch left", &d.summary);
            }
        }
        types::LOOP_GROUNDING => {
            if let Ok(d) = event.parse_data::<etch_session::GroundingData>() {
                let _ = writeln!(out, "\n(etch told the model: {})", d.note);
            }
        }
        types::LOOP_GUARD => {
            if let Ok(d) = event.parse_data::<etch_session::GuardData>() {
                let what = match d.kind.as_str() {
                    "repeat" => format!(
                        "the same {} call {} times in a row",
                        d.tool.as_deref().unwrap_or("tool"),
                        d.count
                    ),
                    _ => format!("{} failed tool calls in a row", d.count),
                };
                let did = if d.action == "stop" {
                    "stopped the run"
                } else {
                    "told the model"
                };
                let _ = writeln!(out, "\n(etch {did}: {what})");
            }
        }
        types::PROCESS_STARTED => {
            if let Ok(d) = event.parse_data::<etch_session::ProcessStartedData>() {
                let _ = writeln!(
                    out,
                    "\n(process {} started, pid {}: {})",
                    d.process_id, d.pid, d.command
                );
            }
        }
        types::PROCESS_EXITED => {
            if let Ok(d) = event.parse_data::<etch_session::ProcessExitedData>() {
                let how = match (d.code, d.signal) {
                    (Some(code), _) => format!("exited (code {code})"),
                    (None, Some(signal)) => format!("killed ({signal})"),
                    (None, None) => d.state,
                };
                let _ = writeln!(out, "\n(process {} {how})", d.process_id);
            }
        }
        types::PROCESS_UPDATE => {
            if let Ok(d) = event.parse_data::<etch_session::ProcessUpdateData>() {
                block(out, "process update", &d.text);
            }
        }
        types::APPROVAL_DECISION => {
            if let Ok(d) = event.parse_data::<etch_session::ApprovalData>() {
                let _ = writeln!(out, "\n({})", approval_line(&d));
            }
        }
        types::MODEL_USAGE => {
            if let Ok(u) = event.parse_data::<etch_model::Usage>() {
                // A summary request's usage says what it was for.
                let of = match event
                    .parse_data::<serde_json::Value>()
                    .ok()
                    .and_then(|d| d.get("purpose")?.as_str().map(str::to_owned))
                    .as_deref()
                {
                    Some(etch_compact::PURPOSE_COMPACTION) => " of the compaction summary",
                    Some(etch_compact::PURPOSE_BRANCH_SUMMARY) => " of the branch summary",
                    _ => "",
                };
                let _ = writeln!(
                    out,
                    "\n(usage{of}: {} in, {} cached, {} out, {} reasoning, {} total)",
                    u.input_tokens,
                    u.cached_input_tokens,
                    u.output_tokens,
                    u.reasoning_output_tokens,
                    u.total_tokens
                );
            }
        }
        types::MODEL_CHANGE => {
            if let Ok(d) = event.parse_data::<ModelChangeData>() {
                let at = d.base_url.map(|u| format!(" at {u}")).unwrap_or_default();
                let _ = writeln!(out, "\n(model changed to {}/{}{at})", d.provider, d.model);
            }
        }
        types::SESSION_NAVIGATE => {
            if let Ok(d) = event.parse_data::<NavigateData>() {
                let _ = writeln!(out, "\n(continued from earlier event {})", d.target_id);
            }
        }
        types::THINKING_LEVEL_CHANGE => {
            if let Ok(d) = event.parse_data::<ThinkingLevelData>() {
                let _ = writeln!(out, "\n(reasoning effort changed to {})", d.level);
            }
        }
        types::MODEL_METRICS | types::MODEL_RESPONSE | types::MODEL_PROVIDER_ITEM => {}
        other => {
            let _ = writeln!(out, "\n({other} event {})", event.id);
        }
    }
}

/// One approval decision in words: `approval: bash call c1 (outside
/// the sandbox) allowed once by the user: reason`.
fn approval_line(d: &etch_session::ApprovalData) -> String {
    let what = match d.decision.as_str() {
        "allowed" => "allowed once",
        "allowed_for_session" => "allowed for the session",
        "denied" => "denied",
        "denied_for_session" => "denied for the session",
        "refused" => "refused",
        other => other,
    };
    let by = match d.by.as_str() {
        "user" => "by the user",
        "editor" => "by the editor",
        "flag" => "by -p's flags",
        "policy" => "by the approval policy",
        "session" => "by an earlier answer for the session",
        _ => "",
    };
    let outside = if d.bypass {
        " (outside the sandbox)"
    } else {
        ""
    };
    let reason = d
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    format!(
        "approval: {} call {}{outside} {what} {by}{reason}",
        d.tool_name, d.tool_call_id
    )
}

/// Writes a titled block.
fn block(out: &mut String, title: &str, body: &str) {
    let _ = writeln!(out, "\n[{title}]");
    let _ = writeln!(out, "{}", body.trim_end_matches('\n'));
}

/// Text of content parts, with tool calls on their own lines.
fn parts_text(parts: &[ContentPart], assets: &etch_session::Assets) -> String {
    let mut text = String::new();
    for part in parts {
        match part {
            ContentPart::Text { text: t } => text.push_str(t),
            ContentPart::Image(image) => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                let path = assets.path(image);
                let missing = if path.exists() { "" } else { " (missing)" };
                let _ = writeln!(
                    text,
                    "[image {}: {}{missing}]",
                    image.describe(),
                    path.display()
                );
            }
            ContentPart::ToolCall(call) => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                let _ = writeln!(text, "-> {} {} ({})", call.name, call.arguments, call.id);
            }
        }
    }
    text
}
