//! The deterministic file lists of a summary (E-SES-09, E-CTX-19): which files
//! the summarized conversation read and which it modified.
//!
//! The lists come from the tool calls themselves, not from the model's prose,
//! so they are exact; they accumulate across updates through the previous
//! summary's metadata. Like Pi, the summary text also ends with them, so the
//! model sees them after compaction. This module knows the argument name
//! (`path`) of the built-in `read`, `write` and `edit` tools and nothing else
//! about tools.

use std::collections::BTreeSet;

use etch_model::Message;
use etch_session::SummaryData;

/// Tools whose `path` argument names a file that was read.
const READ_TOOLS: &[&str] = &["read"];

/// Tools whose `path` argument names a file that was modified.
const WRITE_TOOLS: &[&str] = &["write", "edit"];

/// Opening and closing tags of the read-files block.
const READ_TAGS: (&str, &str) = ("<read-files>", "</read-files>");

/// Opening and closing tags of the modified-files block.
const MODIFIED_TAGS: (&str, &str) = ("<modified-files>", "</modified-files>");

/// Sorted, deduplicated file lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FileLists {
    /// Files read and never modified.
    pub(crate) read: Vec<String>,
    /// Files modified (whether or not also read).
    pub(crate) modified: Vec<String>,
}

/// Collects the files touched by the assistant tool calls of `messages`,
/// merged with the lists of the previous summary. A file both read and
/// modified is listed as modified only.
pub(crate) fn file_lists(messages: &[Message], previous: Option<&SummaryData>) -> FileLists {
    let mut read: BTreeSet<String> = BTreeSet::new();
    let mut modified: BTreeSet<String> = BTreeSet::new();
    if let Some(prev) = previous {
        read.extend(prev.read_files.iter().cloned());
        modified.extend(prev.modified_files.iter().cloned());
    }
    for call in messages.iter().flat_map(Message::tool_calls) {
        let Some(path) = call.arguments.get("path").and_then(|p| p.as_str()) else {
            continue;
        };
        if READ_TOOLS.contains(&call.name.as_str()) {
            read.insert(path.to_string());
        } else if WRITE_TOOLS.contains(&call.name.as_str()) {
            modified.insert(path.to_string());
        }
    }
    read.retain(|p| !modified.contains(p));
    FileLists {
        read: read.into_iter().collect(),
        modified: modified.into_iter().collect(),
    }
}

/// The summary text: the model's text followed by the non-empty file blocks.
pub(crate) fn with_file_blocks(text: &str, files: &FileLists) -> String {
    let mut parts = vec![text.to_string()];
    for ((open, close), list) in [(READ_TAGS, &files.read), (MODIFIED_TAGS, &files.modified)] {
        if !list.is_empty() {
            parts.push(format!("{open}\n{}\n{close}", list.join("\n")));
        }
    }
    parts.join("\n\n")
}

/// A previous summary without its trailing file blocks: the lists travel as
/// metadata and are appended again after the update, so the model need not
/// copy them (and must not duplicate them).
pub(crate) fn without_file_blocks(summary: &str) -> &str {
    let mut text = summary.trim_end();
    loop {
        let stripped = [READ_TAGS, MODIFIED_TAGS].iter().find_map(|(open, close)| {
            let body = text.strip_suffix(close)?;
            let start = body.rfind(&format!("{open}\n"))?;
            Some(text[..start].trim_end())
        });
        match stripped {
            Some(rest) => text = rest,
            None => return text,
        }
    }
}

#[cfg(test)]
mod tests {
    use etch_model::{ContentPart, ToolCall};
    use serde_json::json;

    use super::*;

    /// An assistant message calling `name` with `args`.
    fn calling(name: &str, args: serde_json::Value) -> Message {
        Message::Assistant {
            content: vec![ContentPart::ToolCall(ToolCall {
                id: "c".into(),
                name: name.into(),
                arguments: args,
            })],
        }
    }

    /// Reads and writes are sorted and deduplicated, merged with the previous
    /// lists; a file both read and modified is listed as modified only; other
    /// tools and calls without a path do not count.
    #[test]
    fn lists_are_exact_merged_and_sorted() {
        let messages = vec![
            calling("read", json!({"path": "src/b.rs"})),
            calling("read", json!({"path": "src/a.rs"})),
            calling("read", json!({"path": "src/b.rs", "offset": 10})),
            calling("edit", json!({"path": "src/a.rs", "edits": []})),
            calling("write", json!({"path": "NEW.md", "content": "x"})),
            calling("grep", json!({"path": "src", "pattern": "x"})),
            calling("read", json!("not json")),
            Message::user_text("read src/c.rs"),
        ];
        let previous = SummaryData {
            summary: String::new(),
            trigger: "auto".into(),
            first_kept_event_id: None,
            tokens_before: 0,
            tokens_after: 0,
            read_files: vec!["old.rs".into(), "NEW.md".into()],
            modified_files: vec!["changed.rs".into()],
            instructions: None,
        };
        let lists = file_lists(&messages, Some(&previous));
        assert_eq!(lists.read, ["old.rs", "src/b.rs"]);
        assert_eq!(lists.modified, ["NEW.md", "changed.rs", "src/a.rs"]);
    }

    /// Blocks follow the text, only when non-empty, and come off again.
    #[test]
    fn blocks_are_appended_and_stripped() {
        let files = FileLists {
            read: vec!["a.rs".into(), "b.rs".into()],
            modified: vec!["c.rs".into()],
        };
        let text = with_file_blocks("## Goal\nX", &files);
        assert_eq!(
            text,
            "## Goal\nX\n\n<read-files>\na.rs\nb.rs\n</read-files>\n\n<modified-files>\nc.rs\n</modified-files>"
        );
        assert_eq!(without_file_blocks(&text), "## Goal\nX");
        let only_modified = with_file_blocks(
            "S",
            &FileLists {
                read: Vec::new(),
                modified: vec!["c.rs".into()],
            },
        );
        assert_eq!(
            only_modified,
            "S\n\n<modified-files>\nc.rs\n</modified-files>"
        );
        assert_eq!(without_file_blocks(&only_modified), "S");
        assert_eq!(with_file_blocks("S", &FileLists::default()), "S");
        assert_eq!(without_file_blocks("plain\n"), "plain");
    }
}
