//! The bounded, hunked unified diff returned by `write` and `edit`
//! (E-TOOL-07, E-TOOL-11): three lines of context around each change, never a
//! whole-file dump, capped at 20 KB with a notice.

use similar::TextDiff;

use crate::limits::{DIFF_MAX_BYTES, floor_char_boundary};

/// Lines of unchanged context around each hunk.
const CONTEXT: usize = 3;

/// A unified diff of `old` to `new` labelled with `path`, or `(no changes)`.
pub fn unified(old: &str, new: &str, path: &str) -> String {
    if old == new {
        return "(no changes)".to_string();
    }
    let diff = TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    cap(&text)
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

    /// Huge diffs are capped with a notice.
    #[test]
    fn capped() {
        let old: String = (0..5000).map(|i| format!("old {i}\n")).collect();
        let new: String = (0..5000).map(|i| format!("new {i}\n")).collect();
        let d = unified(&old, &new, "f");
        assert!(d.len() < DIFF_MAX_BYTES + 100);
        assert!(d.contains("[diff truncated: showing "));
    }
}
