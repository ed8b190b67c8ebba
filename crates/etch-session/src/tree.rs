//! The session as a tree: every event's `parentId` makes the log a tree
//! whose active branch ends at the current leaf. This module answers the
//! questions a tree view and navigation ask: which events continue a given
//! one, which branch leads to an event, and what labels users gave events
//! (`session.label`, the latest label of a target winning).
//!
//! It reads a loaded session only; moving the leaf, forking and writing
//! labels belong to whoever appends. It must not know about models,
//! providers or drawing.

use std::collections::HashMap;

use crate::error::SessionError;
use crate::event::{Event, LabelData, types};
use crate::loader::{LoadedSession, branch_from};

/// The id of the event `given` names: its whole id, or the end of one
/// (what `etch show --tree` prints is the last 10 characters), ignoring
/// case, as session prefixes are; an id suffix more than one event ends
/// with is ambiguous.
pub fn resolve_event(session: &LoadedSession, given: &str) -> Result<String, SessionError> {
    let given = given.trim();
    if let Some(event) = session.events.iter().find(|e| e.id == given) {
        return Ok(event.id.clone());
    }
    let wanted = given.to_ascii_uppercase();
    let matches: Vec<&Event> = if wanted.is_empty() {
        Vec::new()
    } else {
        session
            .events
            .iter()
            .filter(|e| e.id.to_ascii_uppercase().ends_with(&wanted))
            .collect()
    };
    match matches.as_slice() {
        [one] => Ok(one.id.clone()),
        [] => Err(SessionError::UnknownEvent {
            path: session.path.clone(),
            id: given.to_owned(),
        }),
        many => Err(SessionError::AmbiguousEvent {
            path: session.path.clone(),
            given: given.to_owned(),
            count: many.len(),
        }),
    }
}

/// Indices of the branch ending at the event `leaf`, root first; `None`
/// when no event has that id. Missing parents are bridged as the loader
/// does for the active branch.
pub fn branch_to(session: &LoadedSession, leaf: &str) -> Option<Vec<usize>> {
    let index = id_index(session);
    let start = *index.get(leaf)?;
    Some(branch_from(&session.events, &index, start, &mut Vec::new()))
}

/// The events of the active branch that moving the leaf to `target` would
/// leave behind (those after the last event the two branches share),
/// oldest first; `None` when no event has that id.
pub fn left_behind<'a>(session: &'a LoadedSession, target: &str) -> Option<Vec<&'a Event>> {
    let kept: std::collections::HashSet<&str> = branch_to(session, target)?
        .into_iter()
        .map(|i| session.events[i].id.as_str())
        .collect();
    Some(
        session
            .active_events()
            .filter(|e| !kept.contains(e.id.as_str()))
            .collect(),
    )
}

/// Children of each event (by index, in file order); the tree's root is
/// the first event. An event whose parent is missing hangs under the event
/// before it in the file, as the loader bridges it.
pub fn children(session: &LoadedSession) -> Vec<Vec<usize>> {
    let index = id_index(session);
    let mut children = vec![Vec::new(); session.events.len()];
    for (i, event) in session.events.iter().enumerate().skip(1) {
        let parent = event
            .parent_id
            .as_deref()
            .and_then(|p| index.get(p).copied())
            .filter(|&p| p < i)
            .unwrap_or(i - 1);
        children[parent].push(i);
    }
    children
}

/// Each event's index by id.
fn id_index(session: &LoadedSession) -> HashMap<&str, usize> {
    session
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect()
}

/// The label of each labelled event id: the latest `session.label` event
/// naming it (an empty label removes it).
pub fn labels(session: &LoadedSession) -> HashMap<String, String> {
    let mut labels = HashMap::new();
    for event in session
        .events
        .iter()
        .filter(|e| e.kind == types::SESSION_LABEL)
    {
        if let Ok(data) = event.parse_data::<LabelData>() {
            if data.label.is_empty() {
                labels.remove(&data.target_id);
            } else {
                labels.insert(data.target_id, data.label);
            }
        }
    }
    labels
}

/// Whether `event` is a session-structure event rather than conversation
/// (labels, leaf moves), for views that hide them.
pub fn is_structural(event: &Event) -> bool {
    event.kind == types::SESSION_LABEL || event.kind == types::SESSION_NAVIGATE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_session;
    use crate::testlines::{header, line};
    use std::path::Path;

    /// A session whose user message B has two continuations: C-D (an
    /// abandoned branch) and E (the active one), with a label on C.
    fn forked() -> LoadedSession {
        let user = |t: &str| format!(r#"{{"content":[{{"type":"text","text":"{t}"}}]}}"#);
        let text = [
            header(),
            line("message.user", "B", Some("A"), &user("first")),
            line("message.user", "C", Some("B"), &user("old idea")),
            line("message.user", "D", Some("C"), &user("old follow-up")),
            line("message.user", "E", Some("B"), &user("new idea")),
            line(
                "session.label",
                "F",
                Some("E"),
                r#"{"targetId":"C","label":"abandoned"}"#,
            ),
        ]
        .join("\n");
        parse_session(Path::new("t.jsonl"), text.as_bytes()).unwrap()
    }

    /// Children, the branch to any event, labels, and the projection at an
    /// earlier leaf.
    #[test]
    fn tree_questions() {
        let s = forked();
        let children = children(&s);
        assert_eq!(children[1], vec![2, 4]);
        assert_eq!(children[2], vec![3]);
        assert_eq!(children[4], vec![5]);
        assert_eq!(branch_to(&s, "D"), Some(vec![0, 1, 2, 3]));
        assert_eq!(branch_to(&s, "E"), Some(vec![0, 1, 4]));
        assert_eq!(branch_to(&s, "nope"), None);
        assert_eq!(labels(&s).get("C").map(String::as_str), Some("abandoned"));
        let at_d = crate::projection::project_messages_at(&s, "D").unwrap();
        let texts: Vec<String> = at_d.messages.iter().map(|m| format!("{m:?}")).collect();
        assert_eq!(texts.len(), 3);
        assert!(texts[2].contains("old follow-up"));
        let active = crate::projection::project_messages(&s);
        assert_eq!(active.messages.len(), 2);
        assert!(format!("{:?}", active.messages[1]).contains("new idea"));
        assert!(crate::projection::project_messages_at(&s, "nope").is_none());
    }

    /// An event is named by its whole id or a unique end of it, in any
    /// case; an end several ids share, or none has, is an error saying so.
    #[test]
    fn events_resolve_by_a_unique_end() {
        let user = r#"{"content":[{"type":"text","text":"x"}]}"#;
        let text = [
            header(),
            line("message.user", "01ABCDEFXY", Some("A"), user),
            line("message.user", "01ABCDEFZY", Some("01ABCDEFXY"), user),
        ]
        .join("\n");
        let session = parse_session(Path::new("t"), text.as_bytes()).unwrap();
        assert_eq!(resolve_event(&session, "01ABCDEFXY").unwrap(), "01ABCDEFXY");
        assert_eq!(resolve_event(&session, "fzy").unwrap(), "01ABCDEFZY");
        let shared = resolve_event(&session, "Y").unwrap_err().to_string();
        assert!(shared.contains("ends 2 event ids"), "{shared}");
        let none = resolve_event(&session, "QQ").unwrap_err().to_string();
        assert!(none.contains("has no event QQ"), "{none}");
    }
}
