//! The text of a `grep` result (C13, P-TOOL-31/33): `path:line:text`
//! matches and `path-line-text` context lines, `--` between groups, the
//! per-file cap notice, and the notices after the listing.
//!
//! The listing is capped with [`cap_listing`]; notices follow it after one
//! blank line, one per line, so they survive the cap: first the limit notice
//! (only when more matches exist than were shown), then one per file root
//! that was skipped, then what directory walks passed over (internal
//! directories, files over the size cap, binary files), so that "No matches
//! found" does not mislead and the model can name such a path to search it.
//! This module must not know how files were found or searched.

use crate::limits::{GREP_MAX_FILE_BYTES, GREP_PER_FILE, cap_listing};
use crate::walk::Root;

use super::file::{LineKind, Skip};
use super::search::{Found, Key};

/// Text returned when nothing matched (P-TOOL-33).
pub(super) const NO_MATCHES: &str = "No matches found";

/// The path printed for a file: joined to its root as given (so a relative
/// root gives paths relative to the working directory, which `read` accepts
/// as they are; see `Root::print_prefix`), and the root as given for a file
/// root.
fn display_path(roots: &[Root], (index, rel): &Key) -> String {
    let Some(root) = roots.get(*index) else {
        return rel.to_string_lossy().into_owned();
    };
    if !root.is_dir || rel.as_os_str().is_empty() {
        return root.raw.clone();
    }
    format!("{}{}", root.print_prefix(), rel.to_string_lossy())
}

/// Formats the kept hits, applying the per-file cap, the total limit and the
/// listing cap.
pub(super) fn format_output(found: &Found, roots: &[Root], limit: usize, context: usize) -> String {
    let collector = &found.collector;
    let mut out: Vec<String> = Vec::new();
    let mut shown = 0usize;
    // (file ordinal, line number) of the last printed line, for `--`.
    let mut last: Option<(usize, u64)> = None;
    'files: for (ordinal, (key, hits)) in collector.files.iter().enumerate() {
        let path = display_path(roots, key);
        let mut file_shown = 0usize;
        for line in &hits.lines {
            if line.kind != LineKind::After && shown == limit {
                break 'files;
            }
            if line.kind == LineKind::Match {
                shown += 1;
                file_shown += 1;
            }
            if context > 0 && last.is_some_and(|(f, n)| f != ordinal || n + 1 != line.number) {
                out.push("--".to_string());
            }
            last = Some((ordinal, line.number));
            let sep = if line.kind == LineKind::Match {
                ':'
            } else {
                '-'
            };
            out.push(format!("{path}{sep}{}{sep}{}", line.number, line.text));
        }
        if file_shown == GREP_PER_FILE && hits.count > GREP_PER_FILE {
            out.push(format!(
                "[{} more matches in {path} omitted]",
                hits.count - GREP_PER_FILE
            ));
        }
    }
    let mut text = if out.is_empty() {
        NO_MATCHES.to_string()
    } else {
        cap_listing(out.join("\n"))
    };
    let mut tail: Vec<String> = Vec::new();
    // The numbers small models most often get wrong, stated when exact.
    if found.complete && !collector.files.is_empty() {
        let lines: usize = collector.files.values().map(|h| h.count).sum();
        tail.push(matched(lines, collector.files.len()));
    }
    if collector.weight > limit {
        tail.push(format!(
            "[Match limit {limit} reached. Use a higher limit or refine the pattern.]"
        ));
    }
    tail.extend(
        found
            .skipped_roots
            .iter()
            .filter_map(|(index, skip)| skip_notice(&roots.get(*index)?.raw, skip)),
    );
    tail.extend(walk_notices(found, roots));
    if !tail.is_empty() {
        text.push_str("\n\n");
        text.push_str(&tail.join("\n"));
    }
    text
}

/// `[N matching lines in F files.]`, singular where one.
fn matched(lines: usize, files: usize) -> String {
    let lines = if lines == 1 {
        "1 matching line".to_owned()
    } else {
        format!("{lines} matching lines")
    };
    let files = if files == 1 {
        "1 file".to_owned()
    } else {
        format!("{files} files")
    };
    format!("[{lines} in {files}.]")
}

/// Most skipped large files named in a notice; the rest are counted.
const SKIPPED_FILES_NAMED: usize = 10;

/// Notices for what directory walks did not search: the skip-list
/// directories (C14's wording, as `find` prints it), files over the size
/// cap by path, and binary files by count.
fn walk_notices(found: &Found, roots: &[Root]) -> Vec<String> {
    let mut notices = Vec::new();
    if !found.skipped_dirs.is_empty() {
        notices.push(format!(
            "[Skipped internal directories: {}]",
            found.skipped_dirs.join(", ")
        ));
    }
    let large: Vec<String> = found
        .skipped_files
        .iter()
        .filter(|(_, skip)| *skip == Skip::TooLarge)
        .map(|(key, _)| display_path(roots, key))
        .collect();
    if !large.is_empty() {
        let mut named: Vec<String> = large.iter().take(SKIPPED_FILES_NAMED).cloned().collect();
        if large.len() > SKIPPED_FILES_NAMED {
            named.push(format!("and {} more", large.len() - SKIPPED_FILES_NAMED));
        }
        let named = named.join(", ");
        notices.push(format!(
            "[Skipped files larger than {} MiB: {named}. Name one as the path to search it.]",
            GREP_MAX_FILE_BYTES / (1024 * 1024)
        ));
    }
    notices.extend(found.store_notice.clone());
    let binary = found
        .skipped_files
        .iter()
        .filter(|(_, skip)| *skip == Skip::Binary)
        .count();
    if binary > 0 {
        notices.push(format!(
            "[Skipped {binary} binary file{}]",
            if binary == 1 { "" } else { "s" }
        ));
    }
    notices
}

/// The notice for a file root that was not searched, naming it as given;
/// nothing when it was searched and simply did not match.
fn skip_notice(raw: &str, skip: &Skip) -> Option<String> {
    match skip {
        Skip::TooLarge => Some(format!(
            "[Skipped {raw}: larger than {} MiB]",
            GREP_MAX_FILE_BYTES / (1024 * 1024)
        )),
        Skip::Binary => Some(format!("[Skipped {raw}: binary file]")),
        Skip::Unreadable => Some(format!("[Skipped {raw}: cannot be read]")),
        Skip::NotRegular => Some(format!("[Skipped {raw}: not a regular file]")),
        Skip::Credential => Some(format!(
            "[Skipped {raw}: a file of etch's own credential store; credentials never reach the model]"
        )),
        Skip::NoMatch => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::grep::testutil::{grep, put};
    use serde_json::json;

    /// P-TOOL-31: context lines use `-`, matches `:`, and `--` separates
    /// non-adjacent groups, within and across files.
    #[test]
    fn context_lines_and_separators() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "a.txt", "1\nhit\n3\n4\n5\n6\nhit\n8\n");
        put(dir.path(), "b.txt", "hit\nx\n");
        let out = grep(dir.path(), json!({"pattern": "hit", "context": 1})).unwrap();
        assert_eq!(
            out,
            "a.txt-1-1\na.txt:2:hit\na.txt-3-3\n--\na.txt-6-6\na.txt:7:hit\na.txt-8-8\n--\n\
             b.txt:1:hit\nb.txt-2-x\n\n[3 matching lines in 2 files.]"
        );
        // Adjacent groups merge without a separator.
        put(dir.path(), "c.txt", "hit\nmid\nhit\n");
        let out = grep(
            dir.path(),
            json!({"pattern": "hit", "context": 1, "path": "c.txt"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "c.txt:1:hit\nc.txt-2-mid\nc.txt:3:hit\n\n[2 matching lines in 1 file.]"
        );
    }

    /// G10: at most 20 matches per file, then a notice counting the rest.
    #[test]
    fn per_file_cap_notice() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "many.txt", "m\n".repeat(27));
        put(dir.path(), "z.txt", "m\n");
        let out = grep(dir.path(), json!({"pattern": "m"})).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 24, "{out}");
        assert_eq!(lines[19], "many.txt:20:m");
        assert_eq!(lines[20], "[7 more matches in many.txt omitted]");
        assert_eq!(lines[21], "z.txt:1:m");
        // The count is of every matching line, the omitted ones too.
        assert_eq!(lines[23], "[28 matching lines in 2 files.]");
    }

    /// G10, P-TOOL-33: the total limit stops output with the exact notice
    /// after a blank line; exactly `limit` matches give no notice.
    #[test]
    fn total_limit_notice() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "a.txt", "x\nx\n");
        put(dir.path(), "b.txt", "x\nx\n");
        let out = grep(dir.path(), json!({"pattern": "x", "limit": 3})).unwrap();
        assert_eq!(
            out,
            "a.txt:1:x\na.txt:2:x\nb.txt:1:x\n\n\
             [Match limit 3 reached. Use a higher limit or refine the pattern.]"
        );
        let out = grep(dir.path(), json!({"pattern": "x", "limit": 4})).unwrap();
        assert_eq!(
            out,
            "a.txt:1:x\na.txt:2:x\nb.txt:1:x\nb.txt:2:x\n\n[4 matching lines in 2 files.]"
        );
    }

    /// P-TOOL-33: no matches is an exact first line; what was searched
    /// and where to turn follow (issue 12: small models took it for "no
    /// such file" and asked again).
    #[test]
    fn no_matches_text() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "f.txt", "abc\n");
        assert_eq!(
            grep(dir.path(), json!({"pattern": "zzz"})).unwrap(),
            "No matches found\n\n[Searched the contents of the files under . for the literal text \"zzz\". grep looks inside files: to find a file by its name use find, to see a file use read.]"
        );
        let out = grep(
            dir.path(),
            json!({"pattern": "q+", "regex": true, "ignoreCase": true, "paths": [".", "f.txt"]}),
        )
        .unwrap();
        assert!(
            out.contains("under ., f.txt for the regular expression \"q+\", ignoring case."),
            "{out}"
        );
    }

    /// C13: a file root prints its path as given; CRLF endings are dropped.
    #[test]
    fn file_root_as_given() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/main.rs", "fn main() {}\r\n");
        let out = grep(
            dir.path(),
            json!({"pattern": "main", "path": "./src/main.rs"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "./src/main.rs:1:fn main() {}\n\n[1 matching line in 1 file.]"
        );
    }
}
