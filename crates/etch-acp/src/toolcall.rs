//! etch's tool calls as ACP shows them: each call's kind (read, edit,
//! execute, search, …), a title an editor can put on one line, the files
//! it touches (so the editor can follow along), and its result as
//! content: text, or for `edit` the changed regions as ACP diffs built
//! from the tool's structured diff.
//!
//! This module must not know how calls run or how updates are sent.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{
    ContentBlock, Diff, TextContent, ToolCallContent, ToolCallLocation, ToolKind,
};
use serde_json::Value;

/// The kind of a call to tool `name`.
pub fn kind(name: &str) -> ToolKind {
    match name {
        "read" | "ls" => ToolKind::Read,
        "write" | "edit" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "grep" | "find" => ToolKind::Search,
        "task" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// The string argument `key` of `args`.
fn arg<'a>(args: &'a Value, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The paths a call names: `path`, else a batch (`paths`, or the
/// `path` of each of `files`).
fn paths(args: &Value) -> Vec<String> {
    let one = arg(args, "path");
    if !one.is_empty() {
        return vec![one.to_owned()];
    }
    let listed = args.get("paths").and_then(Value::as_array).map(|ps| {
        ps.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    });
    let files = args.get("files").and_then(Value::as_array).map(|fs| {
        fs.iter()
            .map(|f| arg(f, "path").to_owned())
            .filter(|p| !p.is_empty())
            .collect()
    });
    listed.or(files).unwrap_or_default()
}

/// The paths of a call for a title, `fallback` when it names none.
fn places(args: &Value, fallback: &str) -> String {
    let paths = paths(args);
    if paths.is_empty() {
        fallback.to_owned()
    } else {
        paths.join(", ")
    }
}

/// A one-line title for a call to `name` with `args`.
pub fn title(name: &str, args: &Value) -> String {
    let first_line = |text: &str| text.lines().next().unwrap_or("").to_owned();
    match name {
        "bash" => format!("`{}`", first_line(arg(args, "command"))),
        "read" => format!("Read {}", places(args, "")),
        "write" => format!("Write {}", arg(args, "path")),
        "edit" => format!("Edit {}", arg(args, "path")),
        "ls" => format!("List {}", places(args, ".")),
        "grep" => format!(
            "Search for `{}` in {}",
            arg(args, "pattern"),
            places(args, ".")
        ),
        "find" => format!("Find `{}` in {}", arg(args, "pattern"), places(args, ".")),
        "task" => format!(
            "Subagent {}: {}",
            arg(args, "profile"),
            first_line(arg(args, "task"))
        ),
        other => other.to_owned(),
    }
}

/// The files a call touches, resolved against `cwd`.
pub fn locations(name: &str, args: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    if !matches!(name, "read" | "write" | "edit" | "ls" | "grep" | "find") {
        return Vec::new();
    }
    let mut paths = paths(args);
    if paths.is_empty() && matches!(name, "ls" | "grep" | "find") {
        paths.push(".".to_owned());
    }
    let line = |offset: Option<u64>| offset.map(|o| u32::try_from(o).unwrap_or(u32::MAX));
    paths
        .into_iter()
        .map(|path| {
            let mut location = ToolCallLocation::new(cwd.join(&path));
            if name == "read"
                && paths_single(args)
                && let Some(l) = line(args.get("offset").and_then(Value::as_u64))
            {
                location = location.line(l);
            }
            location
        })
        .collect()
}

/// Whether a call names one `path` (not a batch).
fn paths_single(args: &Value) -> bool {
    !arg(args, "path").is_empty()
}

/// Text as call content.
pub fn text(text: &str) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(text)))
}

/// The content of a finished call: its edit as diffs when it has one
/// (an `edit`'s `details.diff`, a new file's text), else its text.
pub fn result(
    name: &str,
    args: &Value,
    cwd: &Path,
    result: &str,
    is_error: bool,
    details: Option<&Value>,
) -> Vec<ToolCallContent> {
    if !is_error {
        if let Some(diff) = details
            .and_then(|d| d.get("diff"))
            .and_then(Value::as_array)
            // A diff cut short (its note says so) would look complete as
            // hunks; its text says what was left out.
            && !diff.iter().any(|line| arg(line, "kind") == "note")
        {
            let dry_run = details
                .and_then(|d| d.get("dryRun"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let hunks = diffs(&cwd.join(arg(args, "path")), diff);
            if !hunks.is_empty() && !dry_run {
                return hunks;
            }
        }
        // A write that made a new file says only how much it wrote; one
        // over an old file carries its diff as text, which stays text.
        if name == "write" && !arg(args, "path").is_empty() && !result.contains("\n\n") {
            return vec![ToolCallContent::Diff(Diff::new(
                cwd.join(arg(args, "path")),
                arg(args, "content"),
            ))];
        }
    }
    vec![text(result)]
}

/// One ACP diff per hunk of an etch diff (lines of `{"kind","text"}`):
/// the old text is the hunk's context and removed lines, the new text
/// its context and added lines.
fn diffs(path: &Path, lines: &[Value]) -> Vec<ToolCallContent> {
    let mut out = Vec::new();
    let mut hunk: Option<(Vec<&str>, Vec<&str>)> = None;
    let flush = |hunk: &mut Option<(Vec<&str>, Vec<&str>)>, out: &mut Vec<ToolCallContent>| {
        if let Some((old, new)) = hunk.take() {
            out.push(ToolCallContent::Diff(
                Diff::new(PathBuf::from(path), new.join("\n")).old_text(old.join("\n")),
            ));
        }
    };
    for line in lines {
        let text = arg(line, "text");
        // Inside a hunk, a removed `--…` or added `++…` line is labelled a
        // header; its first character says which it is.
        let kind = match (arg(line, "kind"), hunk.is_some()) {
            ("header", true) if text.starts_with('-') => "removed-header",
            ("header", true) if text.starts_with('+') => "added-header",
            (kind, _) => kind,
        };
        match kind {
            "removed-header" => {
                if let Some((old, _)) = &mut hunk {
                    old.push(&text[1..]);
                }
            }
            "added-header" => {
                if let Some((_, new)) = &mut hunk {
                    new.push(&text[1..]);
                }
            }
            "hunk" => {
                flush(&mut hunk, &mut out);
                hunk = Some((Vec::new(), Vec::new()));
            }
            "context" => {
                if let Some((old, new)) = &mut hunk {
                    old.push(text);
                    new.push(text);
                }
            }
            "removed" => {
                if let Some((old, _)) = &mut hunk {
                    old.push(text);
                }
            }
            "added" => {
                if let Some((_, new)) = &mut hunk {
                    new.push(text);
                }
            }
            _ => {}
        }
    }
    flush(&mut hunk, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Kinds and titles name what a call does.
    #[test]
    fn kinds_and_titles() {
        assert_eq!(kind("bash"), ToolKind::Execute);
        assert_eq!(kind("edit"), ToolKind::Edit);
        assert_eq!(kind("grep"), ToolKind::Search);
        assert_eq!(kind("mcp__git__status"), ToolKind::Other);
        assert_eq!(
            title("bash", &json!({"command": "cargo test\nmore"})),
            "`cargo test`"
        );
        assert_eq!(title("ls", &json!({})), "List .");
        assert_eq!(
            title(
                "grep",
                &json!({"pattern": "fn x", "path": "src", "regex": true})
            ),
            "Search for `fn x` in src"
        );
        assert_eq!(
            title("grep", &json!({"pattern": "x", "paths": ["a", "b"]})),
            "Search for `x` in a, b"
        );
        let batch = json!({"files": [{"path": "a.rs"}, {"path": "b.rs", "offset": 3}]});
        assert_eq!(title("read", &batch), "Read a.rs, b.rs");
        assert_eq!(locations("read", &batch, Path::new("/w")).len(), 2);
        let at = locations(
            "read",
            &json!({"path": "a.rs", "offset": 10}),
            Path::new("/w"),
        );
        assert_eq!(at[0].path, PathBuf::from("/w/a.rs"));
        assert_eq!(at[0].line, Some(10));
        assert!(locations("bash", &json!({"command": "ls"}), Path::new("/w")).is_empty());
    }

    /// An edit's diff becomes one ACP diff per hunk; a failed call and
    /// a dry run are their text.
    #[test]
    fn an_edit_is_a_diff_per_hunk() {
        let details = json!({"path": "a.txt", "dryRun": false, "diff": [
            {"kind": "header", "text": "--- a.txt"},
            {"kind": "header", "text": "+++ a.txt"},
            {"kind": "hunk", "text": "@@ -1,2 +1,2 @@"},
            {"kind": "context", "text": "one"},
            {"kind": "removed", "text": "tow"},
            {"kind": "added", "text": "two"},
            {"kind": "hunk", "text": "@@ -9 +9 @@"},
            {"kind": "removed", "text": "nien"},
            {"kind": "added", "text": "nine"}
        ]});
        let args = json!({"path": "a.txt"});
        let content = result("edit", &args, Path::new("/w"), "ok", false, Some(&details));
        assert_eq!(content.len(), 2);
        let ToolCallContent::Diff(first) = &content[0] else {
            panic!("not a diff: {content:?}");
        };
        assert_eq!(first.path, PathBuf::from("/w/a.txt"));
        assert_eq!(first.old_text.as_deref(), Some("one\ntow"));
        assert_eq!(first.new_text, "one\ntwo");
        // A removed `---` rule inside a hunk is a line like any other.
        let rule = json!({"diff": [
            {"kind": "header", "text": "--- a.md"},
            {"kind": "header", "text": "+++ a.md"},
            {"kind": "hunk", "text": "@@ -1,2 +1 @@"},
            {"kind": "context", "text": "title"},
            {"kind": "header", "text": "----"}
        ]});
        let md = json!({"path": "a.md"});
        let content = result("edit", &md, Path::new("/w"), "ok", false, Some(&rule));
        let ToolCallContent::Diff(diff) = &content[0] else {
            panic!("not a diff: {content:?}");
        };
        assert_eq!(diff.old_text.as_deref(), Some("title\n---"));
        assert_eq!(diff.new_text, "title");
        // A diff cut short is shown as the tool's text.
        let cut = json!({"diff": [{"kind": "hunk", "text": "@@ -1 +1 @@"}, {"kind": "note", "text": "(diff cut)"}]});
        let content = result("edit", &md, Path::new("/w"), "the text", false, Some(&cut));
        assert!(matches!(content[0], ToolCallContent::Content(_)));
        let failed = result(
            "edit",
            &args,
            Path::new("/w"),
            "tool error: x",
            true,
            Some(&details),
        );
        assert!(matches!(failed[0], ToolCallContent::Content(_)));
        let written = result(
            "write",
            &json!({"path": "b.txt", "content": "hi\n"}),
            Path::new("/w"),
            "wrote",
            false,
            None,
        );
        let ToolCallContent::Diff(new_file) = &written[0] else {
            panic!("not a diff: {written:?}");
        };
        assert_eq!(new_file.old_text, None);
        assert_eq!(new_file.new_text, "hi\n");
    }
}
