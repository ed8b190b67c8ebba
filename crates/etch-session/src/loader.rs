//! Loading a session file that may be torn, hand-edited or partly garbage.
//!
//! Blank lines are ignored. A line that is not a valid event is skipped with a
//! [`LoadWarning`] naming its line number, and nothing before or after it is
//! lost (E-SES-22). A final line without a newline that does not parse is
//! reported as torn, the mark of a crash mid-write. The first valid event must
//! be `session.started` (P-SES-04). The active branch is computed once here by
//! walking `parentId` links back from the leaf, the last valid event.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::SessionError;
use crate::event::{Event, SessionStarted, types};

/// Something odd found while loading that did not stop the load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadWarning {
    /// 1-based line number in the file.
    pub line: usize,
    /// What was wrong and what etch did about it.
    pub message: String,
}

impl fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A session file, loaded.
#[derive(Debug)]
pub struct LoadedSession {
    /// Where it was loaded from.
    pub path: PathBuf,
    /// Data of the `session.started` event.
    pub header: SessionStarted,
    /// Every valid event, in file order (the header first).
    pub events: Vec<Event>,
    /// Indices into `events` of the active branch, root first.
    pub active: Vec<usize>,
    /// Problems found while loading.
    pub warnings: Vec<LoadWarning>,
}

impl LoadedSession {
    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.header.session_id
    }

    /// Id of the current leaf: the last valid event in the file.
    pub fn leaf(&self) -> Option<&str> {
        self.events.last().map(|e| e.id.as_str())
    }

    /// The active branch, root first.
    pub fn active_events(&self) -> impl Iterator<Item = &Event> {
        self.active.iter().map(|&i| &self.events[i])
    }
}

/// Reads and parses a session file.
pub fn load_session(path: &Path) -> Result<LoadedSession, SessionError> {
    let bytes = std::fs::read(path).map_err(|source| SessionError::Io {
        action: "read session file",
        path: path.to_path_buf(),
        source,
    })?;
    parse_session(path, &bytes)
}

/// Parses session file contents; `path` is used only for messages.
pub fn parse_session(path: &Path, bytes: &[u8]) -> Result<LoadedSession, SessionError> {
    let mut events: Vec<Event> = Vec::new();
    let mut warnings = Vec::new();
    let mut rest = bytes;
    let mut line_no = 0;
    while !rest.is_empty() {
        line_no += 1;
        let (raw, torn) = match memchr::memchr(b'\n', rest) {
            Some(end) => {
                let line = &rest[..end];
                rest = &rest[end + 1..];
                (line, false)
            }
            None => (std::mem::take(&mut rest), true),
        };
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(raw) {
            Ok(mut event) => {
                event.line = line_no;
                events.push(event);
            }
            Err(err) if torn => warnings.push(LoadWarning {
                line: line_no,
                message: format!(
                    "torn last line (an interrupted write); ignored, later appends start after it ({err})"
                ),
            }),
            Err(err) => warnings.push(LoadWarning {
                line: line_no,
                message: format!("malformed line skipped: {err}"),
            }),
        }
    }
    let header = match events.first() {
        Some(first) if first.kind == types::SESSION_STARTED => first
            .parse_data::<SessionStarted>()
            .map_err(|err| SessionError::Invalid {
                path: path.to_path_buf(),
                reason: format!("line {}: bad session.started data: {err}", first.line),
            })?,
        Some(first) => {
            return Err(SessionError::Invalid {
                path: path.to_path_buf(),
                reason: format!(
                    "the first valid event (line {}) is {}, not session.started",
                    first.line, first.kind
                ),
            });
        }
        None => {
            return Err(SessionError::Invalid {
                path: path.to_path_buf(),
                reason: "it holds no valid events".to_string(),
            });
        }
    };
    drop_duplicates(&mut events, &mut warnings);
    let index: HashMap<&str, usize> = events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let active = match events.len().checked_sub(1) {
        Some(last) => branch_from(&events, &index, last, &mut warnings),
        None => Vec::new(),
    };
    drop(index);
    Ok(LoadedSession {
        path: path.to_path_buf(),
        header,
        events,
        active,
        warnings,
    })
}

/// Removes events whose id already appeared earlier in the file (a
/// copy-paste repair gone wrong), keeping the first and warning about the rest.
fn drop_duplicates(events: &mut Vec<Event>, warnings: &mut Vec<LoadWarning>) {
    let mut seen: std::collections::HashSet<&str> =
        std::collections::HashSet::with_capacity(events.len());
    let duplicates: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| !seen.insert(e.id.as_str()))
        .map(|(i, _)| i)
        .collect();
    for &i in duplicates.iter().rev() {
        let event = events.remove(i);
        warnings.push(LoadWarning {
            line: event.line,
            message: format!("duplicate event id {}; line skipped", event.id),
        });
    }
    warnings.sort_by_key(|w| w.line);
}

/// Walks `parentId` links from the event at `start` back to the root and
/// returns the branch's indices, root first.
///
/// A parent that is missing (its line was lost or garbled) or that does not
/// come earlier in the file cannot be followed; the walk then continues with
/// the previous event in file order and says so, which keeps every surviving
/// event of a linear session in context.
pub(crate) fn branch_from(
    events: &[Event],
    index: &HashMap<&str, usize>,
    start: usize,
    warnings: &mut Vec<LoadWarning>,
) -> Vec<usize> {
    let mut path = Vec::new();
    let mut current = start;
    loop {
        path.push(current);
        let event = &events[current];
        let Some(parent) = event.parent_id.as_deref() else {
            break;
        };
        match index.get(parent) {
            Some(&p) if p < current => current = p,
            _ if current > 0 => {
                warnings.push(LoadWarning {
                    line: event.line,
                    message: format!(
                        "parent {parent} of event {} is missing; continuing with the previous event in the file",
                        event.id
                    ),
                });
                current -= 1;
            }
            _ => break,
        }
    }
    path.reverse();
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) use crate::testlines::{header, line};

    /// E-SES-22: blank lines are ignored, garbage in the middle is reported and
    /// skipped, a torn last line is reported as torn, and every valid event
    /// around them is kept.
    #[test]
    fn garbage_and_torn_lines_are_reported_not_fatal() {
        let text = format!(
            "{}\n\n{}\nthis is not json\n{}\n{{\"type\":\"message.us",
            header(),
            line("message.user", "B", Some("A"), r#"{"content":[]}"#),
            line("message.assistant", "C", Some("B"), r#"{"content":[]}"#),
        );
        let s = parse_session(Path::new("x.jsonl"), text.as_bytes()).unwrap();
        assert_eq!(s.events.len(), 3);
        assert_eq!(s.leaf(), Some("C"));
        assert_eq!(s.warnings.len(), 2);
        assert_eq!(s.warnings[0].line, 4);
        assert!(s.warnings[0].message.starts_with("malformed line skipped"));
        assert_eq!(s.warnings[1].line, 6);
        assert!(s.warnings[1].message.starts_with("torn last line"));
        let ids: Vec<_> = s.active_events().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["A", "B", "C"]);
    }

    /// A lost parent does not drop everything before it from the branch.
    #[test]
    fn missing_parent_falls_back_to_previous_event() {
        let text = format!(
            "{}\n{}\n{}\n",
            header(),
            line("message.user", "B", Some("A"), r#"{"content":[]}"#),
            line("message.assistant", "D", Some("LOST"), r#"{"content":[]}"#),
        );
        let s = parse_session(Path::new("x.jsonl"), text.as_bytes()).unwrap();
        let ids: Vec<_> = s.active_events().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["A", "B", "D"]);
        assert_eq!(s.warnings.len(), 1);
        assert!(s.warnings[0].message.contains("LOST"));
    }

    /// Branches: the active path follows parent links, not file order.
    #[test]
    fn active_path_follows_parent_links() {
        let text = format!(
            "{}\n{}\n{}\n{}\n",
            header(),
            line("message.user", "B", Some("A"), r#"{"content":[]}"#),
            line("message.user", "C", Some("B"), r#"{"content":[]}"#),
            line("message.user", "D", Some("B"), r#"{"content":[]}"#),
        );
        let s = parse_session(Path::new("x.jsonl"), text.as_bytes()).unwrap();
        let ids: Vec<_> = s.active_events().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["A", "B", "D"]);
        assert!(s.warnings.is_empty());
    }

    /// A file whose first valid event is not `session.started` is rejected
    /// with a reason, as is an empty file.
    #[test]
    fn files_without_a_header_are_invalid() {
        let text = line("message.user", "B", None, r#"{"content":[]}"#);
        let err = parse_session(Path::new("x.jsonl"), text.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("not session.started"), "{err}");
        let err = parse_session(Path::new("x.jsonl"), b"\n\n").unwrap_err();
        assert!(err.to_string().contains("no valid events"), "{err}");
    }

    /// Duplicate ids (a copy-paste repair gone wrong) keep the first event.
    #[test]
    fn duplicate_ids_keep_the_first() {
        let text = format!(
            "{}\n{}\n{}\n",
            header(),
            line("message.user", "B", Some("A"), r#"{"content":[]}"#),
            line("message.user", "B", Some("A"), r#"{"content":[]}"#),
        );
        let s = parse_session(Path::new("x.jsonl"), text.as_bytes()).unwrap();
        assert_eq!(s.events.len(), 2);
        assert!(s.warnings[0].message.contains("duplicate"));
    }
}
