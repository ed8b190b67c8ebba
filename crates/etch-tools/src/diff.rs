//! The bounded, hunked unified diff returned by `write` and `edit`
//! (E-TOOL-07, E-TOOL-11): three lines of context around each change, never a
//! whole-file dump, capped at 20 KB with a notice.
//!
//! The diff is found in bounded time: Myers' algorithm takes time in
//! proportion to the file's size times the number of lines changed, and a
//! `write` that replaced every line of a 4 MB file spent a minute on it.
//! Past [`DIFF_DEADLINE`] the rest is shown as removed and added whole,
//! which is still a correct diff (and is cut at 20 KB anyway).

use std::ops::Range;
use std::time::{Duration, Instant};

use similar::TextDiff;

use crate::limits::{DIFF_MAX_BYTES, floor_char_boundary};

/// Lines of unchanged context around each hunk.
const CONTEXT: usize = 3;

/// How long finding the smallest diff may take before the rest is
/// shown as replaced whole.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(250);

/// The line diff of `old` and `new`, found by `deadline`.
fn lines_diff<'a>(old: &'a str, new: &'a str, deadline: Instant) -> TextDiff<'a, 'a, 'a, str> {
    TextDiff::configure()
        .deadline(deadline)
        .diff_lines(old, new)
}

/// A unified diff of `old` to `new` labelled with `path`, or `(no changes)`.
pub fn unified(old: &str, new: &str, path: &str) -> String {
    if old == new {
        return "(no changes)".to_string();
    }
    let diff = lines_diff(old, new, Instant::now() + DIFF_DEADLINE);
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    cap(&text)
}

/// A diff made by this module as data for front ends: one
/// `{"kind","text"}` object per line, `kind` being `header` (the `---`/`+++`
/// lines), `hunk` (`@@`), `context`, `removed`, `added` or `note` (the cap
/// notice), and `text` the line without its diff prefix. A front end can
/// colour it without parsing diff syntax.
pub fn as_data(diff: &str) -> serde_json::Value {
    let lines: Vec<serde_json::Value> = diff
        .lines()
        .map(|line| {
            let (kind, text) = if line.starts_with("---") || line.starts_with("+++") {
                ("header", line)
            } else if line.starts_with("@@") {
                ("hunk", line)
            } else if let Some(rest) = line.strip_prefix('-') {
                ("removed", rest)
            } else if let Some(rest) = line.strip_prefix('+') {
                ("added", rest)
            } else if let Some(rest) = line.strip_prefix(' ') {
                ("context", rest)
            } else {
                ("note", line)
            };
            serde_json::json!({"kind": kind, "text": text})
        })
        .collect();
    serde_json::Value::Array(lines)
}

/// One replaced region: its byte range in the old text and in the new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Bytes replaced in the old text.
    pub old: Range<usize>,
    /// Bytes that replaced them in the new text.
    pub new: Range<usize>,
}

/// The same diff as [`unified`], computed only around known changes.
///
/// `edit` knows exactly which byte ranges it replaced, so instead of diffing
/// two multi-megabyte texts it diffs a small window of lines around each
/// change (merged when windows touch) and shifts the hunk line numbers by the
/// window's position. The output matches a whole-file diff.
pub fn unified_changes(old: &str, new: &str, changes: &[Change], path: &str) -> String {
    if old == new {
        return "(no changes)".to_string();
    }
    let old_starts = line_starts(old);
    let new_starts = line_starts(new);
    let old_lines = line_count(old, &old_starts);
    let new_lines = line_count(new, &new_starts);
    let mut windows: Vec<[usize; 4]> = Vec::new();
    for change in changes {
        let o0 = line_of(&old_starts, change.old.start);
        let o1 = (line_of(&old_starts, change.old.end) + 1).min(old_lines);
        let n0 = line_of(&new_starts, change.new.start);
        let n1 = (line_of(&new_starts, change.new.end) + 1).min(new_lines);
        let before = o0.min(CONTEXT);
        let window = [
            o0 - before,
            (o1 + CONTEXT).min(old_lines),
            n0.saturating_sub(before),
            (n1 + CONTEXT).min(new_lines),
        ];
        match windows.last_mut() {
            Some(last) if window[0] <= last[1] => {
                last[1] = last[1].max(window[1]);
                last[3] = last[3].max(window[3]);
            }
            _ => windows.push(window),
        }
    }
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    // One deadline for every window: many large ones do not multiply it.
    let deadline = Instant::now() + DIFF_DEADLINE;
    for [os, oe, ns, ne] in windows {
        let old_part = &old[span(&old_starts, old.len(), os, oe)];
        let new_part = &new[span(&new_starts, new.len(), ns, ne)];
        let diff = lines_diff(old_part, new_part, deadline);
        for hunk in diff.unified_diff().context_radius(CONTEXT).iter_hunks() {
            let text = hunk.to_string();
            let (header, body) = text.split_once('\n').unwrap_or((text.as_str(), ""));
            out.push_str(&shift_header(header, os, ns));
            out.push('\n');
            out.push_str(body);
        }
    }
    cap(&out)
}

/// Byte offsets where each line starts, plus the end of the text when it
/// ends with a newline (the position just past the last line).
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    starts
}

/// Number of real lines (a final newline ends a line, it starts none).
fn line_count(text: &str, starts: &[usize]) -> usize {
    if text.is_empty() || text.ends_with('\n') {
        starts.len() - 1
    } else {
        starts.len()
    }
}

/// Index of the line containing byte `pos`.
fn line_of(starts: &[usize], pos: usize) -> usize {
    starts.partition_point(|&s| s <= pos).saturating_sub(1)
}

/// Byte range of lines `[from, to)`.
fn span(starts: &[usize], len: usize, from: usize, to: usize) -> Range<usize> {
    let start = starts.get(from).copied().unwrap_or(len);
    let end = starts.get(to).copied().unwrap_or(len);
    start..end
}

/// Adds line offsets to a hunk header `@@ -A[,B] +C[,D] @@`.
fn shift_header(header: &str, old_offset: usize, new_offset: usize) -> String {
    let shift = |token: &str, sign: char, offset: usize| -> String {
        let body = token.trim_start_matches(sign);
        let (start, rest) = body
            .split_once(',')
            .map_or((body, None), |(a, b)| (a, Some(b)));
        let start = start
            .parse::<usize>()
            .map_or_else(|_| start.to_string(), |n| (n + offset).to_string());
        match rest {
            Some(len) => format!("{sign}{start},{len}"),
            None => format!("{sign}{start}"),
        }
    };
    let parts: Vec<&str> = header.split(' ').collect();
    match parts.as_slice() {
        ["@@", old, new, "@@", ..] => format!(
            "@@ {} {} @@",
            shift(old, '-', old_offset),
            shift(new, '+', new_offset)
        ),
        _ => header.to_string(),
    }
}

/// Cuts a diff at a line boundary within [`DIFF_MAX_BYTES`].
fn cap(text: &str) -> String {
    if text.len() <= DIFF_MAX_BYTES {
        return text.trim_end_matches('\n').to_string();
    }
    let total = text.len();
    let cut = floor_char_boundary(text, DIFF_MAX_BYTES);
    let end = text[..cut].rfind('\n').unwrap_or(cut);
    format!(
        "{}\n[diff truncated: showing {end} of {total} bytes]",
        &text[..end]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A diff cut short by its deadline is still a diff of the two
    /// texts: its lines rebuild both.
    #[test]
    fn a_diff_past_its_deadline_is_still_right() {
        let old: String = (0..3000).map(|i| format!("old {i}\n")).collect();
        let new: String = (0..3000)
            .map(|i| {
                if i % 7 == 0 {
                    format!("old {i}\n")
                } else {
                    format!("new {i}\n")
                }
            })
            .collect();
        let diff = lines_diff(&old, &new, Instant::now());
        let (mut was, mut now) = (String::new(), String::new());
        for change in diff.iter_all_changes() {
            match change.tag() {
                similar::ChangeTag::Equal => {
                    was.push_str(change.value());
                    now.push_str(change.value());
                }
                similar::ChangeTag::Delete => was.push_str(change.value()),
                similar::ChangeTag::Insert => now.push_str(change.value()),
            }
        }
        assert_eq!((was, now), (old.clone(), new.clone()));
        let shown = unified(&old, &new, "f.txt");
        assert!(
            shown.starts_with("--- a/f.txt\n+++ b/f.txt\n@@ "),
            "{shown:.80}"
        );
    }

    /// Only the changed region and its context appear.
    #[test]
    fn hunks_not_whole_files() {
        let old: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 50\n", "line fifty\n");
        let d = unified(&old, &new, "f.txt");
        assert!(
            d.starts_with("--- a/f.txt\n+++ b/f.txt\n@@ -47,7 +47,7 @@"),
            "{d}"
        );
        assert!(d.contains("\n-line 50\n+line fifty\n"));
        assert!(!d.contains("line 10\n"));
        assert_eq!(unified("a", "a", "f"), "(no changes)");
    }

    /// The windowed diff equals the whole-file diff, for changes near the
    /// start, in the middle, at the end, and close enough to merge.
    #[test]
    fn windowed_matches_whole_file() {
        let old: String = (1..=60).map(|i| format!("line {i}\n")).collect();
        let cases: [&[(&str, &str)]; 4] = [
            &[("line 1\n", "first\n")],
            &[("line 30\n", "thirty\nand more\n")],
            &[("line 60\n", "")],
            &[
                ("line 20\n", "x\n"),
                ("line 24\n", "y\n"),
                ("line 50\n", "z\n"),
            ],
        ];
        for edits in cases {
            let mut new = String::new();
            let mut changes = Vec::new();
            let mut at = 0;
            for (from, to) in edits {
                let start = old.find(from).unwrap();
                new.push_str(&old[at..start]);
                let new_start = new.len();
                new.push_str(to);
                changes.push(Change {
                    old: start..start + from.len(),
                    new: new_start..new.len(),
                });
                at = start + from.len();
            }
            new.push_str(&old[at..]);
            assert_eq!(
                unified_changes(&old, &new, &changes, "f"),
                unified(&old, &new, "f"),
                "{edits:?}"
            );
        }
    }

    /// Huge diffs are capped with a notice.
    #[test]
    fn capped() {
        let pad = "x".repeat(60);
        let old: String = (0..400).map(|i| format!("old {i} {pad}\n")).collect();
        let new: String = (0..400).map(|i| format!("new {i} {pad}\n")).collect();
        let d = unified(&old, &new, "f");
        assert!(d.len() < DIFF_MAX_BYTES + 100);
        assert!(d.contains("[diff truncated: showing "));
    }
}
