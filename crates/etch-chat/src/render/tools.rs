//! Tool calls as the chat shows them: one row naming the call the way a
//! person would say it (`read src/main.rs`, `$ cargo test`), then its
//! result collapsed to a few rows, or, for `edit` and `write`, the diff
//! from the tool's structured details with line-number gutters, red
//! deletions and green insertions. This module must not know where the
//! rows go.

use std::fmt::Write as _;

use ratatui_core::style::Style;
use ratatui_core::text::{Line, Span};
use serde_json::Value;

use super::theme;
use super::wrap::{prefixed, truncate};
use crate::term::sanitize;

/// Result rows shown before the rest is collapsed.
pub const PREVIEW_ROWS: usize = 4;

/// Diff rows shown before the rest is collapsed.
pub const DIFF_ROWS: usize = 24;

/// The most rows an expanded result shows (the whole result is in the
/// session log and `etch show`).
pub const EXPANDED_ROWS: usize = 2000;

/// One finished (or running) tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolView {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments.
    pub args: Value,
    /// Result text, once it has ended.
    pub result: Option<String>,
    /// Whether it failed.
    pub is_error: bool,
    /// Milliseconds it ran.
    pub duration_ms: u64,
    /// Structured details (the edit diff).
    pub details: Option<Value>,
}

/// What a call does, in a few words: the tool and its main argument.
pub fn summary(name: &str, args: &Value) -> String {
    let s = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or("");
    let text = match name {
        "bash" => format!("$ {}", s("command").lines().next().unwrap_or("")),
        "read" => {
            let mut text = format!("read {}", s("path"));
            if let Some(offset) = args.get("offset").and_then(Value::as_u64) {
                let _ = write!(text, " from line {offset}");
            }
            text
        }
        "edit" => format!("edit {}", s("path")),
        "task" => format!("task {}", s("profile")),
        "write" => format!("write {}", s("path")),
        "ls" => format!("ls {}", if s("path").is_empty() { "." } else { s("path") }),
        "grep" | "find" => {
            let place = s("path");
            if place.is_empty() {
                format!("{name} {}", s("pattern"))
            } else {
                format!("{name} {} in {place}", s("pattern"))
            }
        }
        _ => {
            let args = args.to_string();
            format!("{name} {}", if args == "{}" { "" } else { &args })
        }
    };
    sanitize(text.trim_end()).replace('\n', " ")
}

/// The rows of one call: its summary row, then its result (collapsed
/// unless `expanded`). `lead` is the dot that starts the row.
pub fn render(view: &ToolView, width: usize, expanded: bool, lead: &str) -> Vec<Line<'static>> {
    let style = match (&view.result, view.is_error) {
        (None, _) => theme::muted(),
        (Some(_), false) => theme::ok(),
        (Some(_), true) => theme::error(),
    };
    // A task's whole task is shown when it starts (its block then has
    // no result yet) and when expanded; its finished row names the task
    // by its first line, so the history does not hold it twice.
    let whole_task = view.name == "task" && (view.result.is_none() || expanded);
    let mut title = summary(&view.name, &view.args);
    if view.name == "task" && !whole_task {
        let first = view.args["task"].as_str().unwrap_or("").trim();
        let _ = write!(title, ": {}", first.lines().next().unwrap_or(""));
    }
    let mut head = vec![Span::styled(truncate(&title, 200), theme::strong())];
    if view.result.is_some() && view.duration_ms >= 1000 {
        head.push(Span::styled(
            format!(" ({})", super::wrap::seconds(view.duration_ms)),
            theme::muted(),
        ));
    }
    let mut lines = prefixed(
        &[head],
        &Span::styled(lead.to_owned(), style),
        &Span::raw("  "),
        width,
    );
    if whole_task {
        lines.extend(delegated(&view.args, width));
    }
    let Some(result) = &view.result else {
        return lines;
    };
    let diff = view
        .details
        .as_ref()
        .and_then(|d| d.get("diff"))
        .and_then(Value::as_array);
    if let (Some(diff), false) = (diff, view.is_error) {
        lines.extend(diff_rows(diff, width, expanded));
        return lines;
    }
    lines.extend(result_rows(
        &view.name,
        result,
        view.is_error,
        width,
        expanded,
    ));
    lines
}

/// A subagent's activity block (E-SUB-13): the whole delegated task and
/// the context the parent gave, wrapped, so what was asked is on screen
/// in full.
fn delegated(args: &Value, width: usize) -> Vec<Line<'static>> {
    let s = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or("").trim();
    let mut text = sanitize(s("task")).into_owned();
    if !s("context").is_empty() {
        let _ = write!(text, "\ncontext: {}", sanitize(s("context")));
    }
    prefixed(
        &super::wrap::paragraphs(&text, theme::muted()),
        &Span::raw("  \u{2502} "),
        &Span::raw("  \u{2502} "),
        width,
    )
}

/// A result collapsed to [`PREVIEW_ROWS`] rows (all, up to
/// [`EXPANDED_ROWS`], when expanded), under a `⎿` gutter.
fn result_rows(
    name: &str,
    result: &str,
    is_error: bool,
    width: usize,
    expanded: bool,
) -> Vec<Line<'static>> {
    let clean = sanitize(result);
    let all: Vec<&str> = clean.trim_end_matches('\n').split('\n').collect();
    let style = if is_error {
        theme::error()
    } else {
        theme::muted()
    };
    // A file's contents are noise in a chat (the model has them); say how
    // much was read unless asked.
    if name == "read" && !is_error && !expanded {
        let text = format!("{} lines", all.len());
        return vec![Line::from(vec![
            Span::styled("  ⎿ ", theme::muted()),
            Span::styled(text, style),
        ])];
    }
    let limit = if expanded {
        EXPANDED_ROWS
    } else {
        PREVIEW_ROWS
    };
    let mut lines = Vec::new();
    // A command's tail is what matters (the failing test, the build's
    // last error, the exit code): collapsed, bash shows its last rows.
    if name == "bash" && !expanded && all.len() > limit {
        let hidden = all.len() - limit;
        lines.push(Line::from(vec![
            Span::styled("  ⎿ ", theme::muted()),
            Span::styled(
                format!("… +{hidden} earlier lines (ctrl+o to expand)"),
                theme::muted(),
            ),
        ]));
        for row in &all[hidden..] {
            let row = truncate(row, width.saturating_sub(4).max(1));
            lines.push(Line::from(vec![
                Span::styled("    ", theme::muted()),
                Span::styled(row, style),
            ]));
        }
        return lines;
    }
    for (i, row) in all.iter().take(limit).enumerate() {
        let gutter = if i == 0 { "  ⎿ " } else { "    " };
        let row = truncate(row, width.saturating_sub(4).max(1));
        lines.push(Line::from(vec![
            Span::styled(gutter, theme::muted()),
            Span::styled(row, style),
        ]));
    }
    if all.len() > limit {
        let hidden = all.len() - limit;
        let hint = if expanded {
            "see etch show for the rest"
        } else {
            "ctrl+o to expand"
        };
        lines.push(Line::from(Span::styled(
            format!("    … +{hidden} lines ({hint})"),
            theme::muted(),
        )));
    }
    lines
}

/// An edit's diff with old and new line numbers in a gutter.
fn diff_rows(diff: &[Value], width: usize, expanded: bool) -> Vec<Line<'static>> {
    let mut old = 0u64;
    let mut new = 0u64;
    let limit = if expanded { EXPANDED_ROWS } else { DIFF_ROWS };
    let mut lines = Vec::new();
    let mut shown = 0;
    let mut hidden = 0;
    for row in diff {
        let kind = row.get("kind").and_then(Value::as_str).unwrap_or("");
        let text = sanitize(row.get("text").and_then(Value::as_str).unwrap_or("")).into_owned();
        let (number, mark, style): (String, &str, Style) = match kind {
            "header" => continue,
            "hunk" => {
                (old, new) = hunk_starts(&text);
                if !lines.is_empty() && shown < limit {
                    lines.push(Line::from(Span::styled("    ⋮", theme::muted())));
                }
                continue;
            }
            "removed" => {
                old += 1;
                (old.to_string(), "-", theme::removed())
            }
            "added" => {
                new += 1;
                (new.to_string(), "+", theme::added())
            }
            "context" => {
                old += 1;
                new += 1;
                (new.to_string(), " ", theme::muted())
            }
            _ => (String::new(), " ", theme::muted()),
        };
        if shown == limit {
            hidden += 1;
            continue;
        }
        shown += 1;
        let body = truncate(&format!("{mark} {text}"), width.saturating_sub(9).max(1));
        lines.push(Line::from(vec![
            Span::styled(format!("  {number:>5} "), theme::muted()),
            Span::styled(body, style),
        ]));
    }
    if hidden > 0 {
        lines.push(Line::from(Span::styled(
            format!("    … +{hidden} diff lines (ctrl+o to expand)"),
            theme::muted(),
        )));
    }
    lines
}

/// The first old and new line numbers of a `@@ -a,b +c,d @@` header, less
/// one (each row adds one before it is shown).
pub(crate) fn hunk_starts(header: &str) -> (u64, u64) {
    let mut old = 0;
    let mut new = 0;
    for word in header.split_whitespace() {
        let number = |w: &str| {
            w[1..]
                .split(',')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(1)
        };
        if word.starts_with('-') {
            old = number(word).saturating_sub(1);
        } else if word.starts_with('+') {
            new = number(word).saturating_sub(1);
        }
    }
    (old, new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view(name: &str, args: Value, result: &str) -> ToolView {
        ToolView {
            id: "c1".into(),
            name: name.into(),
            args,
            result: Some(result.into()),
            is_error: false,
            duration_ms: 12,
            details: None,
        }
    }

    fn text(lines: &[Line<'_>]) -> String {
        lines
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn long_output_is_collapsed() {
        let out: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let v = view("bash", json!({"command": "seq 10"}), &out);
        // A command's tail is what matters: collapsed, bash shows it.
        insta::assert_snapshot!(text(&render(&v, 40, false, "• ")), @r"
        • $ seq 10
          ⎿ … +6 earlier lines (ctrl+o to expand)
            line 7
            line 8
            line 9
            line 10
        ");
        assert_eq!(render(&v, 40, true, "• ").len(), 11);
        // Other tools keep their head.
        let g = view("grep", json!({"pattern": "x"}), &out);
        assert!(text(&render(&g, 40, false, "• ")).contains("⎿ line 1"));
    }

    #[test]
    fn edits_show_a_numbered_diff() {
        let mut v = view(
            "edit",
            json!({"path": "f.txt"}),
            "Successfully replaced 1 block(s) in f.txt.",
        );
        v.details = Some(json!({"path": "f.txt", "diff": [
            {"kind": "header", "text": "--- f.txt"},
            {"kind": "header", "text": "+++ f.txt"},
            {"kind": "hunk", "text": "@@ -9,3 +9,3 @@"},
            {"kind": "context", "text": "one"},
            {"kind": "removed", "text": "two"},
            {"kind": "added", "text": "2"},
            {"kind": "context", "text": "three"},
        ]}));
        insta::assert_snapshot!(text(&render(&v, 40, false, "• ")), @r"
        • edit f.txt
              9   one
             10 - two
             10 + 2
             11   three
        ");
    }

    /// Escape sequences in a result never reach the terminal.
    #[test]
    fn results_are_sanitized() {
        let v = view(
            "bash",
            json!({"command": "cat x"}),
            "a\u{1b}[2Jb\u{1b}]0;t\u{7}",
        );
        let all = text(&render(&v, 40, false, "• "));
        assert!(!all.contains('\u{1b}'), "{all:?}");
        assert!(all.contains("ab"));
    }

    /// A task call shows its whole task and context under its row.
    #[test]
    fn task_calls_show_the_whole_task() {
        let mut view = view(
            "task",
            json!({"profile": "explore", "task": "find where X is defined\nand who calls it", "context": "X is a trait"}),
            "done",
        );
        view.result = None;
        let shown = text(&render(&view, 80, false, "\u{25cf} "));
        assert!(shown.contains("task explore"), "{shown}");
        assert!(
            shown.contains("find where X is defined") && shown.contains("and who calls it"),
            "{shown}"
        );
        assert!(shown.contains("context: X is a trait"), "{shown}");
        // Finished, it is one row naming the task, then the result.
        view.result = Some("X is in lib.rs".into());
        let shown = text(&render(&view, 80, false, "\u{25cf} "));
        assert!(
            shown.contains("task explore: find where X is defined")
                && !shown.contains("who calls it"),
            "{shown}"
        );
        assert!(shown.contains("X is in lib.rs"), "{shown}");
        let expanded = text(&render(&view, 80, true, "\u{25cf} "));
        assert!(expanded.contains("and who calls it"), "{expanded}");
    }
}
