//! The `edit` tool (E-TOOL-09..13, C2, P-TOOL-20..26): exact replacement of
//! unique text regions in an existing UTF-8 file.
//!
//! Every `oldText` is located against the original file before anything is
//! replaced. Matching is exact on a view with CRLF folded to LF; an `oldText`
//! with no exact match gets one retry on a normalized view (trailing
//! whitespace ignored, typographic quotes, dashes and non-breaking spaces
//! folded to ASCII), which must still be unique. Both views keep a map back
//! to original byte offsets, so only the matched span of the original is
//! replaced and every other byte (BOM, line endings, untouched lines) stays
//! as it was. Missing, ambiguous, empty, whitespace-only and overlapping
//! edits fail without writing.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

use etch_model::ToolSpec;
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::lock::MutationLocks;
use crate::protect::Protected;
use crate::{args, diff, fsutil, paths};

/// The UTF-8 byte-order mark.
const BOM: &str = "\u{feff}";

/// One replacement.
#[derive(Debug, Clone, Deserialize)]
pub struct Edit {
    /// Text to find (exactly once).
    #[serde(rename = "oldText")]
    pub old_text: String,
    /// Replacement text.
    #[serde(rename = "newText")]
    pub new_text: String,
}

/// Arguments of `edit`, including the legacy forms of P-TOOL-21.
#[derive(Debug, Deserialize)]
struct EditArgs {
    /// File to edit.
    path: String,
    /// Edits as an array, or as a JSON string holding the array.
    edits: Option<Value>,
    /// Legacy single `oldText`.
    #[serde(rename = "oldText")]
    old_text: Option<String>,
    /// Legacy single `newText`.
    #[serde(rename = "newText")]
    new_text: Option<String>,
    /// Validate and diff without writing.
    #[serde(rename = "dryRun", default)]
    dry_run: bool,
}

/// The `edit` tool.
#[derive(Debug)]
pub struct EditTool {
    /// Model-facing spec.
    spec: ToolSpec,
    /// Shared per-path mutation locks.
    locks: MutationLocks,
    /// etch's own state, never edited.
    protected: Protected,
}

impl EditTool {
    /// Builds the tool over shared mutation locks.
    pub fn new(locks: MutationLocks) -> Self {
        let pair = json!({
            "type": "object",
            "properties": {
                "oldText": {"type": "string", "description": "Exact text to replace; must match exactly one place"},
                "newText": {"type": "string", "description": "Replacement text"}
            },
            "required": ["oldText", "newText"],
            "additionalProperties": false
        });
        Self {
            spec: args::spec(
                "edit",
                "Replace exact text in an existing file. Each oldText must match exactly one region \
                 of the original file (copy it from read output, without the line numbers); all edits \
                 apply to the original content. To insert a line, replace a unique neighbouring block \
                 with that block plus the new line. Use write for new files or full rewrites. \
                 dryRun previews the diff without writing.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File to edit"},
                        "edits": {"anyOf": [{"type": "array", "items": pair}, {"type": "string"}], "description": "Replacements, applied to the original file"},
                        "oldText": {"type": "string", "description": "Legacy single-edit form"},
                        "newText": {"type": "string", "description": "Legacy single-edit form"},
                        "dryRun": {"type": "boolean", "description": "Preview the diff without writing"}
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
            ),
            locks,
            protected: Protected::from_env(),
        }
    }

    /// Protects `protected`'s `~/.etch` instead of `$HOME`'s.
    #[must_use]
    pub fn with_protected(mut self, protected: Protected) -> Self {
        self.protected = protected;
        self
    }
}

/// Turns the argument forms into a list of edits (P-TOOL-21).
fn collect_edits(a: &EditArgs) -> Result<Vec<Edit>, ToolError> {
    let mut edits: Vec<Edit> = match &a.edits {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => serde_json::from_str(text).map_err(|e| {
            ToolError::new(format!(
                "edits was given as a string that is not a JSON array of {{oldText, newText}}: {e}"
            ))
        })?,
        Some(other) => serde_json::from_value(other.clone())
            .map_err(|e| ToolError::new(format!("invalid edits: {e}")))?,
    };
    match (&a.old_text, &a.new_text) {
        (Some(old), Some(new)) => edits.push(Edit {
            old_text: old.clone(),
            new_text: new.clone(),
        }),
        (None, None) => {}
        _ => {
            return Err(ToolError::new(
                "oldText and newText must be given together (or use edits)",
            ));
        }
    }
    if edits.is_empty() {
        return Err(ToolError::new(
            "edit needs at least one {oldText, newText} pair in edits",
        ));
    }
    Ok(edits)
}

/// How view offsets map back to original offsets.
enum ViewMap {
    /// The view is the original text.
    Identity,
    /// CRLF folded to LF: view offsets of every `\n` that lost its `\r`.
    Crlf(Vec<usize>),
    /// Arbitrary folding: per view byte, the original start and end of its
    /// source character.
    Full {
        /// Original offset where each view byte's source starts.
        starts: Vec<usize>,
        /// Original offset just after each view byte's source.
        ends: Vec<usize>,
    },
}

/// A normalized view of the file with a map back to original offsets.
struct View<'a> {
    /// The normalized text.
    text: Cow<'a, str>,
    /// The way back to the original.
    map: ViewMap,
}

impl<'a> View<'a> {
    /// The exact-matching view: CRLF folded to LF, borrowed when the file
    /// has no CR at all (the common case costs nothing on a large file).
    fn exact(original: &'a str) -> Self {
        if memchr::memchr(b'\r', original.as_bytes()).is_none() {
            return Self {
                text: Cow::Borrowed(original),
                map: ViewMap::Identity,
            };
        }
        let mut text = String::with_capacity(original.len());
        let mut removed = Vec::new();
        let mut at = 0;
        for pos in memchr::memmem::find_iter(original.as_bytes(), b"\r\n") {
            text.push_str(&original[at..pos]);
            removed.push(text.len());
            at = pos + 1;
        }
        text.push_str(&original[at..]);
        Self {
            text: Cow::Owned(text),
            map: ViewMap::Crlf(removed),
        }
    }

    /// The normalized view of C2: CRLF folded, trailing whitespace dropped
    /// and typographic characters folded, with a full offset map.
    fn fuzzy(original: &str) -> View<'static> {
        let mut text = String::with_capacity(original.len());
        let mut starts = Vec::with_capacity(original.len());
        let mut ends = Vec::with_capacity(original.len());
        let mut pos = 0;
        for line in original.split_inclusive('\n') {
            let (body, newline_len) = if let Some(b) = line.strip_suffix("\r\n") {
                (b, 2)
            } else if let Some(b) = line.strip_suffix('\n') {
                (b, 1)
            } else {
                (line, 0)
            };
            for (i, ch) in body.trim_end().char_indices() {
                let folded = fold(ch);
                let start = pos + i;
                let end = start + ch.len_utf8();
                for _ in 0..folded.len_utf8() {
                    starts.push(start);
                    ends.push(end);
                }
                text.push(folded);
            }
            if newline_len > 0 {
                text.push('\n');
                starts.push(pos + body.len());
                ends.push(pos + line.len());
            }
            pos += line.len();
        }
        View {
            text: Cow::Owned(text),
            map: ViewMap::Full { starts, ends },
        }
    }

    /// Every position where `needle` occurs, overlapping ones included.
    fn find_all(&self, needle: &str) -> Vec<usize> {
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        let hay = self.text.as_bytes();
        let mut found = Vec::new();
        let mut from = 0;
        while let Some(i) = finder.find(&hay[from..]) {
            found.push(from + i);
            let step = self.text[from + i..]
                .chars()
                .next()
                .map_or(1, char::len_utf8);
            from += i + step;
        }
        found
    }

    /// The original byte span of the view span `[at, at + len)`.
    fn original_span(&self, at: usize, len: usize) -> (usize, usize) {
        match &self.map {
            ViewMap::Identity => (at, at + len),
            ViewMap::Crlf(removed) => {
                let before = |v: usize| removed.partition_point(|&r| r < v);
                (at + before(at), at + len + before(at + len))
            }
            ViewMap::Full { starts, ends } => (starts[at], ends[at + len - 1]),
        }
    }
}

/// Folds typographic quotes, dashes and non-breaking spaces to ASCII (C2).
fn fold(ch: char) -> char {
    match ch {
        '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' | '\u{2032}' => '\'',
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' | '\u{2033}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00a0}' | '\u{2007}' | '\u{202f}' => ' ',
        other => other,
    }
}

/// Applies the fuzzy normalization to a needle: CRLF folded, trailing
/// whitespace per line dropped, typographic characters folded.
fn fuzz(text: &str) -> String {
    View::fuzzy(text).text.into_owned()
}

/// The outcome of planning edits against a file.
pub struct Plan {
    /// The new file content (BOM and line endings preserved).
    pub new_content: String,
    /// The hunked diff.
    pub diff: String,
    /// How many edits needed the normalized retry.
    pub normalized: usize,
}

/// Locates every edit in `content` and computes the result, or fails with
/// the reason; never touches the disk.
pub fn plan(content: &str, edits: &[Edit], shown: &str) -> Result<Plan, ToolError> {
    let (bom, body) = match content.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", content),
    };
    let exact = View::exact(body);
    let mut fuzzy: Option<View<'static>> = None;
    let crlf = memchr::memmem::find_iter(body.as_bytes(), b"\r\n").count();
    let use_crlf = crlf > 0 && crlf * 2 >= memchr::memchr_iter(b'\n', body.as_bytes()).count();
    let mut spans: Vec<(usize, usize, usize)> = Vec::with_capacity(edits.len());
    let mut normalized = 0;
    for (i, edit) in edits.iter().enumerate() {
        if edit.old_text.is_empty() {
            return Err(ToolError::new(format!(
                "edits[{i}].oldText is empty; use write to create or rewrite a whole file"
            )));
        }
        if edit.old_text.trim().is_empty() {
            return Err(ToolError::new(format!(
                "edits[{i}].oldText is only whitespace; include surrounding text so it matches exactly one place"
            )));
        }
        let needle = edit.old_text.replace("\r\n", "\n");
        let found = exact.find_all(&needle);
        let (start, end) = match found.len() {
            1 => exact.original_span(found[0], needle.len()),
            0 => {
                let view = fuzzy.get_or_insert_with(|| View::fuzzy(body));
                let needle = fuzz(&needle);
                let found = if needle.trim().is_empty() {
                    Vec::new()
                } else {
                    view.find_all(&needle)
                };
                match found.len() {
                    1 => {
                        normalized += 1;
                        view.original_span(found[0], needle.len())
                    }
                    0 => {
                        return Err(ToolError::new(format!(
                            "could not find edits[{i}].oldText in {shown}. It must match the file exactly, \
                             including whitespace and indentation; read the file again and copy the text"
                        )));
                    }
                    _ => {
                        let starts = found
                            .iter()
                            .map(|&at| view.original_span(at, needle.len()).0);
                        return Err(ambiguous(i, body, starts, shown));
                    }
                }
            }
            _ => {
                let starts = found
                    .iter()
                    .map(|&at| exact.original_span(at, needle.len()).0);
                return Err(ambiguous(i, body, starts, shown));
            }
        };
        spans.push((start, end, i));
    }
    spans.sort_unstable();
    for pair in spans.windows(2) {
        if pair[0].1 > pair[1].0 {
            let (a, b) = (pair[0].2.min(pair[1].2), pair[0].2.max(pair[1].2));
            return Err(ToolError::new(format!(
                "edits[{a}] and edits[{b}] overlap in {shown}; merge them into one edit"
            )));
        }
    }
    let mut new_content = String::with_capacity(bom.len() + body.len() + 64);
    new_content.push_str(bom);
    let mut new_body = new_content;
    let mut changes = Vec::with_capacity(spans.len());
    let mut at = 0;
    for &(start, end, i) in &spans {
        new_body.push_str(&body[at..start]);
        let new_start = new_body.len() - bom.len();
        let text = edits[i].new_text.replace("\r\n", "\n");
        if use_crlf {
            new_body.push_str(&text.replace('\n', "\r\n"));
        } else {
            new_body.push_str(&text);
        }
        changes.push(diff::Change {
            old: start..end,
            new: new_start..new_body.len() - bom.len(),
        });
        at = end;
    }
    new_body.push_str(&body[at..]);
    // The diff is shown with LF endings whatever the file uses.
    // Change offsets are relative to the text after the BOM.
    let diff =
        diff::unified_changes(body, &new_body[bom.len()..], &changes, shown).replace('\r', "");
    Ok(Plan {
        new_content: new_body,
        diff,
        normalized,
    })
}

/// Places an ambiguity error lists; the count says how many there are.
const AMBIGUOUS_SHOWN: usize = 5;

/// Characters of a line an ambiguity error shows.
const AMBIGUOUS_LINE_CHARS: usize = 120;

/// The ambiguity error, listing the lines where the matches start (the
/// first [`AMBIGUOUS_SHOWN`]): a model fixes an ambiguous edit by copying
/// one of them whole, which it can do only if it sees them. `starts` are
/// byte offsets into `body`.
fn ambiguous(
    i: usize,
    body: &str,
    starts: impl ExactSizeIterator<Item = usize>,
    shown: &str,
) -> ToolError {
    let n = starts.len();
    let mut text = format!(
        "edits[{i}].oldText matches {n} places in {shown}; make it match exactly one by \
         including more of the surrounding text, or give one edit per place:"
    );
    let mut lines = Vec::new();
    for start in starts {
        let line_start = body[..start].rfind('\n').map_or(0, |at| at + 1);
        let number = body[..line_start].matches('\n').count() + 1;
        if lines.last() == Some(&number) {
            continue;
        }
        lines.push(number);
        if lines.len() > AMBIGUOUS_SHOWN {
            break;
        }
        let line = body[line_start..].lines().next().unwrap_or("");
        let line: String = line.chars().take(AMBIGUOUS_LINE_CHARS).collect();
        let _ = write!(text, "\n  line {number}: {line}");
    }
    if lines.len() > AMBIGUOUS_SHOWN {
        text.push_str("\n  ...");
    }
    ToolError::new(text)
}

/// Runs an edit call on disk, never touching `protected`'s home state.
fn edit_file(cwd: &Path, a: &EditArgs, protected: &Protected) -> Result<ToolOutput, ToolError> {
    let edits = collect_edits(a)?;
    let shown = &a.path;
    let target = paths::mutation_target(cwd, shown, protected)?;
    let bytes = fsutil::read_regular(&target).map_err(|e| match e {
        fsutil::OpenError::Io(e) => match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::new(crate::nearby::missing(
                cwd,
                shown,
                "use write to create a file",
            )),
            std::io::ErrorKind::IsADirectory => ToolError::new(format!("{shown} is a directory")),
            _ => ToolError::new(format!("cannot read {shown}: {e}")),
        },
        fsutil::OpenError::NotRegular(kind) => {
            fsutil::not_regular(shown, kind, "edit", "changes only regular files")
        }
    })?;
    if fsutil::looks_binary(&bytes) {
        return Err(ToolError::new(format!(
            "{shown} looks like a binary file; edit changes text files only"
        )));
    }
    let content = String::from_utf8(bytes).map_err(|_| {
        ToolError::new(format!(
            "{shown} is not valid UTF-8 text; edit changes UTF-8 text files only"
        ))
    })?;
    let plan = plan(&content, &edits, shown)?;
    let n = edits.len();
    let note = if plan.normalized > 0 {
        format!(
            " ({} matched after normalizing whitespace/quotes)",
            plan.normalized
        )
    } else {
        String::new()
    };
    let details =
        serde_json::json!({"path": shown, "dryRun": a.dry_run, "diff": diff::as_data(&plan.diff)});
    if a.dry_run {
        return Ok(ToolOutput::text(format!(
            "Dry run: would replace {n} block(s) in {shown}{note}.\n\n{}",
            plan.diff
        ))
        .with_details(details));
    }
    fsutil::atomic_write(&target, plan.new_content.as_bytes(), shown)?;
    Ok(ToolOutput::text(format!(
        "Successfully replaced {n} block(s) in {shown}{note}.\n\n{}",
        plan.diff
    ))
    .with_details(details))
}

impl Tool for EditTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self, args: &Value, cwd: &Path) -> Access {
        crate::lock::path_write_access(args, cwd)
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let a: EditArgs = args::parse(&self.spec, args)?;
            let path = a.path.clone();
            let cwd = ctx.cwd.clone();
            let protected = self.protected.clone();
            crate::lock::locked_mutation(
                &self.locks,
                &ctx,
                &path,
                "edit",
                &self.protected,
                move || edit_file(&cwd, &a, &protected),
            )
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Edits with no home to protect.
    fn edit_file(cwd: &Path, a: &EditArgs) -> Result<ToolOutput, ToolError> {
        super::edit_file(cwd, a, &Protected::new(None))
    }

    /// Shorthand for one edit.
    fn e(old: &str, new: &str) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    /// Runs `edit_file` on a fresh file holding `content`; returns the result
    /// and the file's bytes afterwards.
    fn run(content: &[u8], args: Value) -> (Result<String, ToolError>, Vec<u8>) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.txt"), content).unwrap();
        let mut args = args;
        args["path"] = json!("f.txt");
        let a: EditArgs = serde_json::from_value(args).unwrap();
        let out = edit_file(d.path(), &a).map(|o| o.text);
        (out, std::fs::read(d.path().join("f.txt")).unwrap())
    }

    /// The result carries the diff as data: one object per line with its
    /// kind, so a front end colours it without parsing diff syntax.
    #[test]
    fn details_carry_the_diff_as_lines() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.txt"), "one\ntwo\nthree\n").unwrap();
        let a: EditArgs =
            serde_json::from_value(json!({"path": "f.txt", "oldText": "two", "newText": "2"}))
                .unwrap();
        let out = edit_file(d.path(), &a).unwrap();
        let details = out.details.unwrap();
        assert_eq!(details["path"], "f.txt");
        assert_eq!(details["dryRun"], false);
        let lines = details["diff"].as_array().unwrap();
        let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "header", "header", "hunk", "context", "removed", "added", "context"
            ]
        );
        assert_eq!(lines[4]["text"], "two");
        assert_eq!(lines[5]["text"], "2");
    }

    /// C2: exact result line plus the hunked diff; untouched bytes stay.
    #[test]
    fn replaces_and_reports() {
        let (out, after) = run(
            b"one\ntwo\nthree\n",
            json!({"edits": [{"oldText": "two", "newText": "2"}]}),
        );
        assert_eq!(
            out.unwrap(),
            "Successfully replaced 1 block(s) in f.txt.\n\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three"
        );
        assert_eq!(after, b"one\n2\nthree\n");
    }

    /// E-TOOL-09: missing, ambiguous, empty, whitespace-only and overlapping
    /// oldText fail and leave the file byte-identical.
    #[test]
    fn bad_edits_leave_the_file_untouched() {
        let original = b"alpha beta\nalpha gamma\n";
        let cases = [
            (
                json!({"edits": [{"oldText": "delta", "newText": "x"}]}),
                "could not find edits[0].oldText in f.txt",
            ),
            (
                json!({"edits": [{"oldText": "alpha", "newText": "x"}]}),
                "edits[0].oldText matches 2 places in f.txt",
            ),
            (
                json!({"edits": [{"oldText": "", "newText": "x"}]}),
                "edits[0].oldText is empty",
            ),
            (
                json!({"edits": [{"oldText": "  \n", "newText": "x"}]}),
                "edits[0].oldText is only whitespace",
            ),
            (
                json!({"edits": [{"oldText": "alpha beta", "newText": "x"}, {"oldText": "beta\nalpha", "newText": "y"}]}),
                "edits[0] and edits[1] overlap in f.txt",
            ),
            (json!({"edits": []}), "edit needs at least one"),
        ];
        for (args, want) in cases {
            let (out, after) = run(original, args);
            let err = out.unwrap_err().0;
            assert!(err.starts_with(want), "{err}");
            assert_eq!(after, original);
        }
    }

    /// P-TOOL-25: edits are located against the original, applied together.
    #[test]
    fn multiple_edits_against_the_original() {
        let (out, after) = run(
            b"a\nb\nc\n",
            json!({"edits": [{"oldText": "c", "newText": "a"}, {"oldText": "a", "newText": "c"}]}),
        );
        assert!(
            out.unwrap()
                .starts_with("Successfully replaced 2 block(s) in f.txt.")
        );
        assert_eq!(after, b"c\nb\na\n");
    }

    /// P-TOOL-23/24: BOM and CRLF are kept; the new text takes CRLF too.
    #[test]
    fn keeps_bom_and_crlf() {
        let (out, after) = run(
            "\u{feff}x\r\ny\r\nz\r\n".as_bytes(),
            json!({"edits": [{"oldText": "y\nz", "newText": "Y\nZ"}]}),
        );
        assert!(out.is_ok(), "{out:?}");
        assert_eq!(after, "\u{feff}x\r\nY\r\nZ\r\n".as_bytes());
    }

    /// C2: the normalized retry replaces only the matched span, counts it,
    /// and keeps the rest byte-identical (trailing spaces, curly quotes).
    #[test]
    fn normalized_retry() {
        let original = "keep  \nsay \u{201c}hi\u{201d} \u{2014} now   \ntail\n";
        let (out, after) = run(
            original.as_bytes(),
            json!({"edits": [{"oldText": "say \"hi\" - now", "newText": "say hello"}]}),
        );
        assert!(out.unwrap().starts_with("Successfully replaced 1 block(s) in f.txt (1 matched after normalizing whitespace/quotes)."));
        assert_eq!(
            String::from_utf8(after).unwrap(),
            "keep  \nsay hello   \ntail\n"
        );
    }

    /// C2: dry runs say so and do not write.
    #[test]
    fn dry_run() {
        let (out, after) = run(
            b"a\n",
            json!({"edits": [{"oldText": "a", "newText": "b"}], "dryRun": true}),
        );
        assert!(
            out.unwrap()
                .starts_with("Dry run: would replace 1 block(s) in f.txt.\n\n--- a/f.txt")
        );
        assert_eq!(after, b"a\n");
    }

    /// P-TOOL-21: legacy top-level pair and edits as a JSON string.
    #[test]
    fn legacy_forms() {
        let (out, after) = run(b"a\n", json!({"oldText": "a", "newText": "b"}));
        assert!(out.is_ok());
        assert_eq!(after, b"b\n");
        let (out, after) = run(
            b"a\n",
            json!({"edits": "[{\"oldText\":\"a\",\"newText\":\"c\"}]"}),
        );
        assert!(out.is_ok());
        assert_eq!(after, b"c\n");
    }

    /// Binary and invalid UTF-8 files are refused untouched.
    #[test]
    fn binary_and_invalid_utf8() {
        let (out, after) = run(
            b"a\0b",
            json!({"edits": [{"oldText": "a", "newText": "b"}]}),
        );
        assert!(out.unwrap_err().0.contains("binary"));
        assert_eq!(after, b"a\0b");
        let (out, _) = run(
            b"caf\xe9",
            json!({"edits": [{"oldText": "caf", "newText": "b"}]}),
        );
        assert!(out.unwrap_err().0.contains("not valid UTF-8"));
    }

    /// A missing file, a directory, a FIFO (refused at once, not read) and
    /// a symlink loop are clear errors.
    #[test]
    fn missing_directory_and_loop() {
        let d = tempfile::tempdir().unwrap();
        let call = |path: &str| {
            let a: EditArgs =
                serde_json::from_value(json!({"path": path, "oldText": "a", "newText": "b"}))
                    .unwrap();
            edit_file(d.path(), &a).unwrap_err().0
        };
        assert_eq!(
            call("nope.txt"),
            "nope.txt does not exist; use write to create a file"
        );
        std::fs::create_dir(d.path().join("dir")).unwrap();
        assert_eq!(call("dir"), "dir is a directory");
        crate::testutil::mkfifo(&d.path().join("pipe"));
        assert_eq!(
            call("pipe"),
            "pipe is a FIFO (named pipe), not a regular file; edit changes only regular files \
             (reading a pipe or device could wait forever)"
        );
        std::os::unix::fs::symlink(d.path().join("l2"), d.path().join("l1")).unwrap();
        std::os::unix::fs::symlink(d.path().join("l1"), d.path().join("l2")).unwrap();
        assert!(
            call("l1").starts_with("cannot resolve l1:"),
            "{}",
            call("l1")
        );
    }

    /// An ambiguous oldText's error shows the lines it matches, once per
    /// line and at most five, so a model can copy one of them whole.
    #[test]
    fn ambiguity_lists_the_matching_lines() {
        let text = "from greet import greet_user\n\nprint(greet_user(greet_user))\n";
        let err = plan(text, &[e("greet_user", "welcome_user")], "cli.py")
            .err()
            .unwrap()
            .0;
        assert_eq!(
            err,
            "edits[0].oldText matches 3 places in cli.py; make it match exactly one by \
             including more of the surrounding text, or give one edit per place:\n  \
             line 1: from greet import greet_user\n  line 3: print(greet_user(greet_user))"
        );
        let many = "x\n".repeat(8);
        let err = plan(&many, &[e("x", "y")], "f").err().unwrap().0;
        assert!(err.contains("matches 8 places"), "{err}");
        assert!(
            err.contains("line 5: x") && !err.contains("line 6"),
            "{err}"
        );
        assert!(err.ends_with("\n  ..."), "{err}");
    }

    /// Overlapping occurrences of a needle count as ambiguous.
    #[test]
    fn overlapping_occurrences_are_ambiguous() {
        let err = plan("aaa", &[e("aa", "b")], "f").err().unwrap().0;
        assert!(err.contains("matches 2 places"), "{err}");
    }
}
