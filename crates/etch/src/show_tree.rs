//! `etch show --tree`: the session as a tree, one line per conversation
//! event, with the short id other commands accept, the user's labels, the
//! active branch marked `*` and the leaf marked `<- leaf`.
//!
//! Metadata events (`model.*`) are left out where they only continue a
//! chain, and shown where a branch starts at one. The walk is iterative, so
//! a session of any length prints without deep recursion. This module only
//! renders what `etch_session::tree` answers.

use std::collections::HashSet;
use std::fmt::Write as _;

use etch_model::ContentPart;
use etch_session::event::{AssistantData, ToolData, UserData};
use etch_session::{Event, LoadedSession, tree, types};

/// Characters of a summary line.
const SUMMARY_CHARS: usize = 60;

/// Renders the tree of `session`.
pub fn render(session: &LoadedSession) -> String {
    let children = tree::children(session);
    let labels = tree::labels(session);
    let active: HashSet<usize> = session.active.iter().copied().collect();
    // The leaf as people see it: the last conversation event of the active
    // branch, not the metrics line that follows an answer.
    let leaf = session
        .active
        .iter()
        .rev()
        .copied()
        .find(|&i| !is_metadata(&session.events[i]))
        .or_else(|| session.active.last().copied());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "session {} ({} events; * active branch)",
        session.session_id(),
        session.events.len()
    );
    // (event, prefix for its line, prefix for its children)
    let mut stack: Vec<(usize, String, String)> = vec![(0, String::new(), String::new())];
    while let Some((node, line_prefix, child_prefix)) = stack.pop() {
        let kids = &children[node];
        let event = &session.events[node];
        let hidden = is_metadata(event) && kids.len() <= 1 && Some(node) != leaf;
        // A hidden event hands its connector to what follows it, so a
        // branch that starts at one is still drawn as a branch.
        let only_prefix = if hidden {
            line_prefix.clone()
        } else {
            child_prefix.clone()
        };
        if !hidden {
            let mark = if active.contains(&node) { '*' } else { ' ' };
            let _ = write!(
                out,
                "{line_prefix}{mark} {} {}",
                short_id(&event.id),
                summary(event)
            );
            if let Some(label) = labels.get(&event.id) {
                let _ = write!(out, "  [{label}]");
            }
            if Some(node) == leaf {
                out.push_str("  <- leaf");
            }
            out.push('\n');
        }
        match kids.as_slice() {
            [] => {}
            [only] => stack.push((*only, only_prefix, child_prefix)),
            many => {
                // Pushed in reverse so the first child prints first.
                for (i, &kid) in many.iter().enumerate().rev() {
                    let last = i + 1 == many.len();
                    let (branch, rest) = if last {
                        ("└─", "   ")
                    } else {
                        ("├─", "│  ")
                    };
                    stack.push((
                        kid,
                        format!("{child_prefix}{branch}"),
                        format!("{child_prefix}{rest}"),
                    ));
                }
            }
        }
    }
    out
}

/// The last ten characters of an id, which every session command accepts
/// as a prefix.
fn short_id(id: &str) -> &str {
    let start = id.len().saturating_sub(10);
    id.get(start..).unwrap_or(id)
}

/// Whether `event` is metadata of a model pass rather than conversation
/// (a model switch is shown: it changes what follows).
fn is_metadata(event: &Event) -> bool {
    (event.kind.starts_with("model.") && event.kind != types::MODEL_CHANGE)
        || tree::is_structural(event)
}

/// One line saying what `event` is.
fn summary(event: &Event) -> String {
    match event.kind.as_str() {
        types::SESSION_STARTED => "session started".to_owned(),
        types::MESSAGE_USER => event.parse_data::<UserData>().map_or_else(
            |_| "user (unreadable)".to_owned(),
            |d| format!("user: {}", first_line(&d.content)),
        ),
        types::MESSAGE_ASSISTANT => event.parse_data::<AssistantData>().map_or_else(
            |_| "assistant (unreadable)".to_owned(),
            |d| {
                let calls: Vec<&str> = d
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::ToolCall(c) => Some(c.name.as_str()),
                        ContentPart::Text { .. } | ContentPart::Image(_) => None,
                    })
                    .collect();
                let text = first_line(&d.content);
                match (calls.is_empty(), d.error_message) {
                    (_, Some(err)) => format!("assistant failed: {}", clip(&err)),
                    (true, None) => format!("assistant: {text}"),
                    (false, None) if text.is_empty() => {
                        format!("assistant -> {}", calls.join(", "))
                    }
                    (false, None) => format!("assistant: {text} -> {}", calls.join(", ")),
                }
            },
        ),
        types::MESSAGE_TOOL => event.parse_data::<ToolData>().map_or_else(
            |_| "tool result (unreadable)".to_owned(),
            |d| {
                let state = if d.is_error { " (error)" } else { "" };
                format!("tool {}{state}: {}", d.tool_name, first_line(&d.content))
            },
        ),
        types::CONTEXT_SUMMARY => "summary of earlier history".to_owned(),
        other => other.to_owned(),
    }
}

/// The first non-empty line of the text parts, clipped.
fn first_line(parts: &[ContentPart]) -> String {
    let text = etch_model::content::joined_text(parts);
    clip(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
}

/// `text` cut to [`SUMMARY_CHARS`] characters with `…`.
fn clip(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= SUMMARY_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(SUMMARY_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// One envelope line.
    fn line(kind: &str, id: &str, parent: &str, data: &str) -> String {
        format!(
            r#"{{"type":"{kind}","id":"{id}","parentId":"{parent}","time":"2026-01-01T00:00:00.000Z","data":{data}}}"#
        )
    }

    /// A branch point shows both continuations with connectors, the active
    /// branch starred, the label and the leaf; metadata is hidden.
    #[test]
    fn renders_branches_labels_and_leaf() {
        let user = |t: &str| format!(r#"{{"content":[{{"type":"text","text":"{t}"}}]}}"#);
        let text = [
            r#"{"type":"session.started","id":"AAAAAAAAAAAAAAAAAAAAAAAAA0","parentId":null,"time":"t","data":{"sessionId":"S","formatVersion":1,"cwd":"/","etchVersion":"0","provider":"echo","model":"echo"}}"#.to_owned(),
            line("message.user", "AAAAAAAAAAAAAAAAAAAAAAAAA1", "AAAAAAAAAAAAAAAAAAAAAAAAA0", &user("first")),
            line("model.metrics", "AAAAAAAAAAAAAAAAAAAAAAAAA2", "AAAAAAAAAAAAAAAAAAAAAAAAA1", "{}"),
            line("message.user", "AAAAAAAAAAAAAAAAAAAAAAAAA3", "AAAAAAAAAAAAAAAAAAAAAAAAA2", &user("old idea")),
            line("message.user", "AAAAAAAAAAAAAAAAAAAAAAAAA4", "AAAAAAAAAAAAAAAAAAAAAAAAA2", &user("new idea")),
            line("session.label", "AAAAAAAAAAAAAAAAAAAAAAAAA5", "AAAAAAAAAAAAAAAAAAAAAAAAA4", r#"{"targetId":"AAAAAAAAAAAAAAAAAAAAAAAAA3","label":"dropped"}"#),
        ]
        .join("\n");
        let session = etch_session::parse_session(Path::new("t"), text.as_bytes()).unwrap();
        let out = render(&session);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[1], "* AAAAAAAAA0 session started");
        assert_eq!(lines[2], "* AAAAAAAAA1 user: first");
        assert_eq!(lines[3], "* AAAAAAAAA2 model.metrics");
        assert_eq!(lines[4], "├─  AAAAAAAAA3 user: old idea  [dropped]");
        // The leaf mark sits on the last conversation event, not on the
        // label event after it.
        assert_eq!(lines[5], "└─* AAAAAAAAA4 user: new idea  <- leaf");
        assert_eq!(lines.len(), 6);
    }

    /// Branches that start at hidden metadata (the usage line after an
    /// answer, the navigation that left it) keep their connectors: the
    /// second branch does not read as a child of the first.
    #[test]
    fn branches_through_hidden_events_keep_their_connectors() {
        let user = |t: &str| format!(r#"{{"content":[{{"type":"text","text":"{t}"}}]}}"#);
        let answer = r#"{"content":[{"type":"text","text":"answer one"}],"provider":"echo","model":"echo","stopReason":"stop"}"#;
        let text = [
            r#"{"type":"session.started","id":"BBBBBBBBBBBBBBBBBBBBBBBBB0","parentId":null,"time":"t","data":{"sessionId":"S","formatVersion":1,"cwd":"/","etchVersion":"0","provider":"echo","model":"echo"}}"#.to_owned(),
            line("message.user", "BBBBBBBBBBBBBBBBBBBBBBBBB1", "BBBBBBBBBBBBBBBBBBBBBBBBB0", &user("first")),
            line("message.assistant", "BBBBBBBBBBBBBBBBBBBBBBBBB2", "BBBBBBBBBBBBBBBBBBBBBBBBB1", answer),
            line("model.metrics", "BBBBBBBBBBBBBBBBBBBBBBBBB3", "BBBBBBBBBBBBBBBBBBBBBBBBB2", "{}"),
            line("message.user", "BBBBBBBBBBBBBBBBBBBBBBBBB4", "BBBBBBBBBBBBBBBBBBBBBBBBB3", &user("second")),
            line("session.navigate", "BBBBBBBBBBBBBBBBBBBBBBBBB5", "BBBBBBBBBBBBBBBBBBBBBBBBB2", r#"{"targetId":"BBBBBBBBBBBBBBBBBBBBBBBBB2","fromId":"BBBBBBBBBBBBBBBBBBBBBBBBB4"}"#),
            line("message.user", "BBBBBBBBBBBBBBBBBBBBBBBBB6", "BBBBBBBBBBBBBBBBBBBBBBBBB5", &user("other way")),
            line("model.metrics", "BBBBBBBBBBBBBBBBBBBBBBBBB7", "BBBBBBBBBBBBBBBBBBBBBBBBB6", "{}"),
        ]
        .join("\n");
        let session = etch_session::parse_session(Path::new("t"), text.as_bytes()).unwrap();
        let out = render(&session);
        let lines: Vec<&str> = out.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "* BBBBBBBBB0 session started",
                "* BBBBBBBBB1 user: first",
                "* BBBBBBBBB2 assistant: answer one",
                "├─  BBBBBBBBB4 user: second",
                "└─* BBBBBBBBB6 user: other way  <- leaf",
            ],
            "{out}"
        );
    }
}
