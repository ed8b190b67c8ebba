//! The repository explains itself (issue 10): every requirement ID cited
//! anywhere in the checkout (code comments, tests, scripts, benchmarks, CI,
//! docs, fixtures) is defined in `docs/requirements.md`, so someone with only
//! a clone can look up what `C19` or `E-LOOP-01` means.
//!
//! A citation is an ID of one of the shapes the requirements use: `E-CTX-02`,
//! `O-9P-01`, `P-CHK-1` (a letter, a family, a number), `T-4`, and the short
//! `C12` (conflict), `G20` (gap) and `M2` (milestone). `..`, `–` and `—`
//! between two IDs of one family cite the whole range (`E-PLUG-01..16`,
//! `C13–C19`); `/` lists more of the family (`E-MOD-09/10/17`) or another
//! ID (`P-COMP-11/C23`).

// Helpers outside #[test] functions fail the test on a broken checkout.
#![allow(clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Directory names never walked: build output, git's own store, etch's
/// runtime state (sessions hold arbitrary model text, not citations) and
/// the fuzzers' inputs under `fuzz/` (arbitrary bytes too).
const SKIP_DIRS: &[&str] = &[
    "target",
    ".git",
    ".etch",
    "corpus",
    "artifacts",
    "seeds",
    "regressions",
];

/// The reference itself, relative to the repository root: its definitions
/// and cross-references are checked separately, not as citations.
const REFERENCE: &str = "docs/requirements.md";

/// The widest range expanded; a wider one is a typo, cited by its ends only.
const MAX_RANGE: u32 = 100;

/// One parsed ID: the text before its number (`E-CTX-`, `C`) and the number
/// as written (`02`, `12`).
#[derive(Debug)]
struct Id<'a> {
    /// Everything before the number, hyphen included for the long shapes.
    prefix: &'a str,
    /// The digits, leading zeros kept (`E-CTX-02`, but `P-CHK-1`).
    number: &'a str,
}

impl Id<'_> {
    /// The ID as the requirements write it.
    fn render(&self) -> String {
        format!("{}{}", self.prefix, self.number)
    }
}

/// Whether `b` may continue an identifier, so an ID touching it is part of a
/// longer word (`ABC12`, `C2F`, `UTF-8`) rather than a citation.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether an ID may start right after `b`. Besides word bytes, `-`, `/`,
/// `+`, `=`, `%` and `#` are refused so base64, percent-encoding, colours
/// and paths do not yield `C3` or `G5`; IDs after `/` are still found as
/// list continuations.
fn may_precede(b: u8) -> bool {
    !(is_word_byte(b) || matches!(b, b'-' | b'/' | b'+' | b'=' | b'%' | b'#'))
}

/// The run of ASCII digits at the start of `s` (possibly empty).
fn digits(s: &str) -> &str {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    &s[..len]
}

/// The run of ASCII uppercase letters and digits at the start of `s`.
fn family(s: &str) -> &str {
    let len = s
        .bytes()
        .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        .count();
    &s[..len]
}

/// Parses an ID at the start of `s` whose end is not glued to a word byte,
/// returning it and its length. Shapes: `[EOP]-FAMILY-N` (the family has a
/// letter: `CTX`, `9P`), `T-N`, and `[CGM]N`.
fn parse_id(s: &str) -> Option<(Id<'_>, usize)> {
    let bytes = s.as_bytes();
    let prefix_len = match bytes.first()? {
        b'E' | b'O' | b'P' if bytes.get(1) == Some(&b'-') => {
            let fam = family(&s[2..]);
            let has_letter = fam.bytes().any(|b| b.is_ascii_uppercase());
            if !has_letter || bytes.get(2 + fam.len()) != Some(&b'-') {
                return None;
            }
            3 + fam.len()
        }
        b'T' if bytes.get(1) == Some(&b'-') => 2,
        b'C' | b'G' | b'M' => 1,
        _ => return None,
    };
    let number = digits(&s[prefix_len..]);
    let end = prefix_len + number.len();
    if number.is_empty() || bytes.get(end).is_some_and(|&b| is_word_byte(b)) {
        return None;
    }
    Some((
        Id {
            prefix: &s[..prefix_len],
            number,
        },
        end,
    ))
}

/// Parses what may follow a range separator or `/` in `s`: a bare number
/// continuing the family of `last`, or a whole ID. Returns it and its length.
fn parse_continuation<'a>(s: &'a str, last: &Id<'a>) -> Option<(Id<'a>, usize)> {
    let number = digits(s);
    if number.is_empty() {
        return parse_id(s);
    }
    if s.as_bytes()
        .get(number.len())
        .is_some_and(|&b| is_word_byte(b))
    {
        return None;
    }
    let id = Id {
        prefix: last.prefix,
        number,
    };
    Some((id, number.len()))
}

/// Every ID from `start` to `end` of one family, numbers padded to the width
/// `start` was written with; only the two ends when the range is reversed or
/// implausibly wide.
fn expand_range(start: &Id<'_>, end: &Id<'_>) -> Vec<String> {
    let (Ok(from), Ok(to)) = (start.number.parse::<u32>(), end.number.parse::<u32>()) else {
        return vec![start.render(), end.render()];
    };
    if to < from || to - from > MAX_RANGE {
        return vec![start.render(), end.render()];
    }
    let width = start.number.len();
    (from..=to)
        .map(|n| format!("{}{n:0width$}", start.prefix))
        .collect()
}

/// All requirement IDs cited in `text`, in order of appearance, ranges
/// expanded (duplicates kept).
fn extract_ids(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        // An uppercase ASCII byte is always a char boundary, so slicing is safe.
        let starts_here = bytes[i].is_ascii_uppercase() && (i == 0 || may_precede(bytes[i - 1]));
        let parsed = if starts_here {
            parse_id(&text[i..])
        } else {
            None
        };
        let Some((mut last, len)) = parsed else {
            i += 1;
            continue;
        };
        out.push(last.render());
        i += len;
        // Continuations: `..`, `–`, `—` (a range) or `/` (a list item).
        loop {
            let rest = &text[i..];
            let (is_range, sep) = if rest.starts_with("..") {
                (true, 2)
            } else if rest.starts_with('–') || rest.starts_with('—') {
                (true, 3)
            } else if rest.starts_with('/') {
                (false, 1)
            } else {
                break;
            };
            let Some((next, len)) = parse_continuation(&rest[sep..], &last) else {
                break;
            };
            if is_range && next.prefix == last.prefix {
                out.pop();
                out.extend(expand_range(&last, &next));
            } else {
                out.push(next.render());
            }
            i += sep + len;
            last = next;
        }
    }
    out
}

/// The IDs `doc` defines: each list item that starts with a bold ID,
/// `- **C19** ...`, in document order (duplicates kept).
fn defined_ids(doc: &str) -> Vec<String> {
    doc.lines()
        .filter_map(|line| line.strip_prefix("- **"))
        .filter_map(|rest| rest.split_once("**"))
        .map(|(id, _)| id.to_owned())
        .collect()
}

/// The repository root, two levels above this crate's manifest.
fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    fs::canonicalize(&root).unwrap_or_else(|e| panic!("repository root {}: {e}", root.display()))
}

/// Every file under `dir` except the skipped directories, in sorted order so
/// "first cited at" is stable.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = entries
        .map(|entry| entry.unwrap_or_else(|e| panic!("listing {}: {e}", dir.display())))
        .map(|entry| entry.path())
        .collect();
    paths.sort();
    for path in paths {
        // Symlinks are not followed: a link cycle must not hang the test.
        let kind = fs::symlink_metadata(&path)
            .unwrap_or_else(|e| panic!("inspecting {}: {e}", path.display()))
            .file_type();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if kind.is_dir() {
            if !SKIP_DIRS.contains(&name) {
                walk(&path, files);
            }
        } else if kind.is_file() {
            files.push(path);
        }
    }
}

/// Every ID cited in the repository (outside the reference), each with the
/// first `file:line` that cites it. Files that are not UTF-8 are skipped.
fn cited_ids(root: &Path) -> BTreeMap<String, String> {
    let mut files = Vec::new();
    walk(root, &mut files);
    let reference = root.join(REFERENCE);
    let mut cited = BTreeMap::new();
    for file in files.iter().filter(|f| **f != reference) {
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        let rel = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for (n, line) in text.lines().enumerate() {
            for id in extract_ids(line) {
                cited
                    .entry(id)
                    .or_insert_with(|| format!("{rel}:{}", n + 1));
            }
        }
    }
    cited
}

/// Every cited ID has a definition in docs/requirements.md; the failure
/// lists each missing ID with the first place that cites it.
#[test]
fn every_cited_requirement_id_is_defined() {
    let root = repo_root();
    let doc_path = root.join(REFERENCE);
    let doc = fs::read_to_string(&doc_path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", doc_path.display()));
    let defined: BTreeSet<String> = defined_ids(&doc).into_iter().collect();
    let cited = cited_ids(&root);
    assert!(
        cited.len() > 100,
        "only {} distinct IDs found in {}: the walk or the extractor is broken",
        cited.len(),
        root.display()
    );
    let missing: Vec<String> = cited
        .iter()
        .filter(|(id, _)| !defined.contains(*id))
        .map(|(id, at)| format!("  {id} (first cited at {at})"))
        .collect();
    assert!(
        missing.is_empty(),
        "{} cited requirement ID(s) are not defined in {REFERENCE}; add an entry \
         `- **ID** [Mn] rule` for each, or fix the citation:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

/// The reference is well formed: every entry is a single valid ID, none is
/// defined twice, and its own cross-references resolve.
#[test]
fn the_reference_defines_each_id_once_and_resolves_its_references() {
    let root = repo_root();
    let doc = fs::read_to_string(root.join(REFERENCE)).unwrap();
    let defined = defined_ids(&doc);
    assert!(defined.len() > 100, "only {} entries parsed", defined.len());
    let mut seen = BTreeSet::new();
    for id in &defined {
        assert_eq!(
            extract_ids(id),
            std::slice::from_ref(id),
            "malformed entry ID {id:?}"
        );
        assert!(seen.insert(id.clone()), "{id} is defined twice");
    }
    let dangling: BTreeSet<String> = doc
        .lines()
        .flat_map(extract_ids)
        .filter(|id| !seen.contains(id))
        .collect();
    assert!(
        dangling.is_empty(),
        "{REFERENCE} refers to undefined {dangling:?}"
    );
}

/// The extractor finds IDs, ranges and lists, and ignores look-alikes, so the
/// repository test cannot pass by extracting nothing.
#[test]
fn extractor_expands_ranges_and_lists_and_skips_look_alikes() {
    assert_eq!(
        extract_ids("E-PLUG-01..03 and C12"),
        ["E-PLUG-01", "E-PLUG-02", "E-PLUG-03", "C12"]
    );
    assert_eq!(
        extract_ids("(E-AUTH-02/03, C13–C15, P-CHK-1..3, P-COMP-11/C23, G22/E-CTX-02)"),
        [
            "E-AUTH-02",
            "E-AUTH-03",
            "C13",
            "C14",
            "C15",
            "P-CHK-1",
            "P-CHK-2",
            "P-CHK-3",
            "P-COMP-11",
            "C23",
            "G22",
            "E-CTX-02"
        ]
    );
    assert_eq!(
        extract_ids("O-9P-01, T-4, Milestone::M2."),
        ["O-9P-01", "T-4", "M2"]
    );
    assert_eq!(
        extract_ids("C1–G3 E-TOOL-09..12"),
        [
            "C1",
            "G3",
            "E-TOOL-09",
            "E-TOOL-10",
            "E-TOOL-11",
            "E-TOOL-12"
        ]
    );
    let look_alikes = "UTF-8 AVX-512 ABCD-1234 0xC2 C2F abcG5 sha+C2/x=G7 \
                       a/C3 E-CFG P-256 E-2-3 v1.2.3 CG12 %C3%A9 #C12";
    assert_eq!(extract_ids(look_alikes), Vec::<String>::new());
}

/// Entry lines of the reference parse to their IDs; other lines do not.
#[test]
fn defined_ids_come_from_bold_list_items() {
    let doc = "# Title\n\n- **C19** [M1] Scheduling.\n- **E-CTX-02** [M1] Order.\n\
               Text citing **G5** inline.\n  - **G3** nested item\n";
    assert_eq!(defined_ids(doc), ["C19", "E-CTX-02"]);
}
