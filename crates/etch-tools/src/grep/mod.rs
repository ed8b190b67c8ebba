//! The `grep` tool (C13, G10, E-TOOL-17/18, P-TOOL-31/33): searches file
//! contents line by line, literally unless asked for a regex, and prints
//! `path:line:text` matches (`path-line-text` context lines, `--` between
//! groups) sorted by path.
//!
//! This module owns the tool itself: its model-facing spec, its arguments,
//! the search roots (including the whitespace-split fallback) and the
//! compiled pattern. The rest is split by job:
//!
//! - `search`: the parallel walk and the collector that keeps only what can
//!   be printed, which is how the limits stop the search early.
//! - `file`: reading and searching one file, with the size and binary skips
//!   and the per-file match cap.
//! - `format`: the result text and its notices.
//!
//! The walking rules (ignore files, hidden files, skipped internal
//! directories, depth) are shared with `find` and live in [`crate::walk`].
//! This module must not know about the agent loop or how its text is shown.

mod file;
mod format;
mod search;

use std::fmt::Write as _;
use std::path::Path;

use etch_model::ToolSpec;
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::limits::GREP_DEFAULT_LIMIT;
use crate::paths;
use crate::protect::Protected;
use crate::walk::{GlobFilter, Root, default_path, deserialize_count, existing_root};
use crate::{args, cancel, fsutil};

/// The `grep` tool.
pub struct GrepTool {
    /// Name, description and schema shown to the model.
    spec: ToolSpec,
    /// etch's credential store, never searched.
    protected: Protected,
}

impl GrepTool {
    /// Builds the tool with its model-facing spec.
    pub fn new() -> Self {
        Self {
            spec: args::spec(
                "grep",
                "Search inside files for `pattern`, literal text unless `regex` is true. Prints \
                 `path:line:text` per match. .gitignore is respected; binary files, files over \
                 1 MB and .git, node_modules, vendor and bin are skipped. At most 20 matches per \
                 file and `limit` (default 100) in all. To find files by name use find.",
                json!({
                    "type": "object",
                    "properties": {
                        "pattern": {
                            "type": "string",
                            "minLength": 1,
                            "description": "Text to search for"
                        },
                        "path": {
                            "type": "string",
                            "description": "Directory or file to search (default: the working directory)"
                        },
                        "paths": {
                            "type": "array",
                            "items": { "type": "string" },
                            "description": "Several directories or files; replaces path"
                        },
                        "glob": {
                            "type": "string",
                            "description": "Only search files matching this glob: a file name pattern, or a path pattern when it contains /. Leave it out to search every file."
                        },
                        "ignoreCase": {
                            "type": "boolean",
                            "description": "Case-insensitive search (default: false)"
                        },
                        "regex": {
                            "type": "boolean",
                            "description": "Pattern is a regular expression (default: false)"
                        },
                        "literal": {
                            "type": "boolean",
                            "description": "false means regex (Pi compatibility)"
                        },
                        "context": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "Lines around each match (default: 0)"
                        },
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "Most matches shown (default: 100)"
                        }
                    },
                    "required": ["pattern"],
                    "additionalProperties": false
                }),
            ),
            protected: Protected::from_env(),
        }
    }

    /// Protects `protected`'s credential store instead of `$HOME`'s.
    #[must_use]
    pub fn with_protected(mut self, protected: Protected) -> Self {
        self.protected = protected;
        self
    }
}

impl Default for GrepTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for GrepTool {
    fn read_only(&self) -> bool {
        true
    }

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self, args: &Value, cwd: &Path) -> Access {
        let parsed: Result<GrepArgs, _> = serde_json::from_value(args.clone());
        let roots = match parsed {
            Ok(args) => match search_roots(&args, cwd) {
                Ok(roots) => roots.into_iter().map(|r| r.path).collect(),
                Err(_) => raw_roots(&args)
                    .into_iter()
                    .map(|raw| paths::resolve(cwd, raw))
                    .collect(),
            },
            Err(_) => vec![cwd.to_path_buf()],
        };
        Access::Read(roots)
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let args: GrepArgs = args::parse(&self.spec, args)?;
            let cancel = ctx.cancel.clone();
            let cwd = ctx.cwd.clone();
            let protected = self.protected.clone();
            let text = cancel::blocking(&ctx.cancel, "grep", move || {
                run(&args, &cwd, &cancel, &protected)
            })
            .await?;
            Ok(ToolOutput::text(text))
        })
    }
}

/// Arguments of one `grep` call, after schema validation.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GrepArgs {
    /// What to search for.
    pattern: String,
    /// Single search root as given.
    #[serde(default = "default_path")]
    path: String,
    /// Several roots; non-empty wins over `path`.
    #[serde(default)]
    paths: Vec<String>,
    /// Optional file filter.
    glob: Option<String>,
    /// Case-insensitive matching.
    #[serde(default)]
    ignore_case: bool,
    /// Regex mode.
    #[serde(default)]
    regex: bool,
    /// Pi compatibility: `false` means regex mode.
    literal: Option<bool>,
    /// Context lines before and after each match.
    #[serde(default, deserialize_with = "deserialize_count")]
    context: usize,
    /// Most matches shown in total.
    #[serde(default = "default_limit", deserialize_with = "deserialize_count")]
    limit: usize,
}

/// Default `grep` limit, for serde.
fn default_limit() -> usize {
    GREP_DEFAULT_LIMIT
}

/// The roots exactly as the model gave them.
fn raw_roots(args: &GrepArgs) -> Vec<&str> {
    if args.paths.is_empty() {
        vec![args.path.as_str()]
    } else {
        args.paths.iter().map(String::as_str).collect()
    }
}

/// Resolves the search roots. A `path` that does not exist but whose
/// whitespace-separated parts all do is read as several roots (E-TOOL-18):
/// models often pass `"src tests"`.
fn search_roots(args: &GrepArgs, cwd: &Path) -> Result<Vec<Root>, ToolError> {
    if !args.paths.is_empty() {
        return args.paths.iter().map(|p| existing_root(cwd, p)).collect();
    }
    match existing_root(cwd, &args.path) {
        Ok(root) => Ok(vec![root]),
        Err(err) => {
            let parts: Vec<&str> = args.path.split_whitespace().collect();
            if parts.len() > 1
                && !paths::resolve(cwd, &args.path).exists()
                && let Ok(roots) = parts.iter().map(|p| existing_root(cwd, p)).collect()
            {
                return Ok(roots);
            }
            Err(err)
        }
    }
}

/// Compiles the pattern: escaped literal by default, a regex when `regex` is
/// true or `literal` is false. A bad regex error carries the regex hint.
fn build_matcher(args: &GrepArgs) -> Result<RegexMatcher, ToolError> {
    let regex = is_regex(args);
    RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .fixed_strings(!regex)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|err| {
            let pattern = &args.pattern;
            ToolError::new(if regex {
                format!(
                    "invalid regex {pattern:?}: {err}. Patterns are literal unless regex is \
                     true; escape special characters or drop regex:true"
                )
            } else {
                format!("invalid pattern {pattern:?}: {err}")
            })
        })
}

/// Runs one `grep` call to completion (on a blocking thread), never
/// looking into the credential store `protected` knows.
fn run(
    args: &GrepArgs,
    cwd: &Path,
    cancel: &CancellationToken,
    protected: &Protected,
) -> Result<String, ToolError> {
    for raw in raw_roots(args) {
        protected.check_read(raw, &paths::resolve(cwd, raw), "search")?;
    }
    let roots = search_roots(args, cwd)?;
    let store = protected.store_ids();
    for root in &roots {
        protected.check_read(&root.raw, &root.path, "search")?;
        if !root.is_dir
            && std::fs::metadata(&root.path).is_ok_and(|meta| store.is_store_file(&meta))
        {
            return Err(store.refusal(&root.raw, "search"));
        }
    }
    // A file named explicitly must be a regular file: a FIFO or a device
    // could make the search wait or read forever.
    if let Some(root) = roots.iter().find(|r| !r.is_dir && !r.file_type.is_file()) {
        return Err(fsutil::not_regular(
            &root.raw,
            root.file_type,
            "grep",
            "searches only regular files and directories",
        ));
    }
    let matcher = build_matcher(args)?;
    let glob = args
        .glob
        .as_deref()
        .map(|g| GlobFilter::new(g, false))
        .transpose()?;
    let found = search::search(
        &roots,
        matcher,
        search::Bounds {
            glob,
            context: args.context,
            limit: args.limit,
            cancel,
            store,
        },
    );
    if cancel.is_cancelled() {
        return Err(cancel::aborted());
    }
    let mut text = format::format_output(&found, &roots, args.limit, args.context);
    // An empty result because the glob excluded every file is a different
    // answer from "the text is not there": say so, so the model retries
    // without the glob instead of concluding the text is missing.
    if let Some(glob) = args.glob.as_deref()
        && found.searched_files == 0
        && roots.iter().any(|r| r.is_dir)
        && text.starts_with(format::NO_MATCHES)
    {
        let _ = write!(
            text,
            "\n\n[No file matched the glob {glob:?}, so nothing was searched. Search again without the glob or with another one.]"
        );
    } else if text.starts_with(format::NO_MATCHES) && found.skipped_roots.is_empty() {
        // Small models take "No matches found" for "no such file" and ask
        // again: say what was searched, and which tool answers the other
        // questions.
        let _ = write!(text, "\n\n{}", searched(args));
    }
    Ok(text)
}

/// What an empty search looked at, and where to turn instead.
fn searched(args: &GrepArgs) -> String {
    let roots = raw_roots(args).join(", ");
    let kind = if is_regex(args) {
        "regular expression"
    } else {
        "literal text"
    };
    let case = if args.ignore_case {
        ", ignoring case"
    } else {
        ""
    };
    let glob = args
        .glob
        .as_deref()
        .map(|g| format!(", in files matching {g:?}"))
        .unwrap_or_default();
    format!(
        "[Searched the contents of the files under {roots} for the {kind} {:?}{case}{glob}. \
         grep looks inside files: to find a file by its name use find, to see a file use read.]",
        args.pattern
    )
}

/// Whether the pattern is a regular expression (`regex: true` or Pi's
/// `literal: false`).
fn is_regex(args: &GrepArgs) -> bool {
    args.regex || args.literal == Some(false)
}

#[cfg(test)]
mod testutil {
    //! Helpers shared by the unit tests of the `grep` submodules.

    use std::fs;
    use std::path::Path;

    use etch_tool::{Tool, ToolContext};
    use serde_json::Value;
    use tokio_util::sync::CancellationToken;

    use super::GrepTool;

    /// Creates `rel` under `root` with `text`, making parent directories.
    pub(super) fn put(root: &Path, rel: &str, text: impl AsRef<[u8]>) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// Runs `grep` with `args` in `cwd`, returning its text or error.
    pub(super) fn grep(cwd: &Path, args: Value) -> Result<String, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ctx = ToolContext {
            call_id: "t".into(),
            cwd: cwd.to_path_buf(),
            cancel: CancellationToken::new(),
            progress: etch_tool::ProgressSink::default(),
            temp_dir: cwd.join(".etch/tmp"),
            origin: etch_tool::CallOrigin::default(),
            approved: false,
        };
        rt.block_on(GrepTool::new().execute(args, ctx))
            .map(|o| o.text)
            .map_err(|e| e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::{grep, put};
    use super::*;
    use std::path::PathBuf;

    /// C13: the pattern is literal by default; regex metacharacters match
    /// themselves.
    #[test]
    fn literal_by_default() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "f.txt", "axb(\na.b(\n");
        let out = grep(dir.path(), json!({"pattern": "a.b("})).unwrap();
        assert_eq!(out, "f.txt:2:a.b(\n\n[1 matching line in 1 file.]");
    }

    /// C13: `regex: true`, or Pi's `literal: false`, opts into regex mode.
    #[test]
    fn regex_opt_in() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "f.txt", "axb\nab\n");
        let out = grep(dir.path(), json!({"pattern": "a.b", "regex": true})).unwrap();
        assert_eq!(out, "f.txt:1:axb\n\n[1 matching line in 1 file.]");
        let out = grep(dir.path(), json!({"pattern": "^a.b$", "literal": false})).unwrap();
        assert_eq!(out, "f.txt:1:axb\n\n[1 matching line in 1 file.]");
        let out = grep(dir.path(), json!({"pattern": "a.b", "literal": true})).unwrap();
        assert!(out.starts_with("No matches found\n\n[Searched"), "{out}");
        assert!(out.contains("the literal text \"a.b\""), "{out}");
    }

    /// C13: `ignoreCase` matches regardless of case; the default does not.
    #[test]
    fn ignore_case() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "f.txt", "Hello\nhello\nHELLO\n");
        let out = grep(dir.path(), json!({"pattern": "hello"})).unwrap();
        assert_eq!(out, "f.txt:2:hello\n\n[1 matching line in 1 file.]");
        let out = grep(dir.path(), json!({"pattern": "hello", "ignoreCase": true})).unwrap();
        assert_eq!(
            out,
            "f.txt:1:Hello\nf.txt:2:hello\nf.txt:3:HELLO\n\n[3 matching lines in 1 file.]"
        );
    }

    /// C13: a non-empty `paths` array wins over `path`; paths print joined
    /// to the roots as given.
    #[test]
    fn paths_array() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/a.rs", "needle\n");
        put(dir.path(), "tests/b.rs", "needle\n");
        put(dir.path(), "other/c.rs", "needle\n");
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "path": "other", "paths": ["tests/", "src", "other/c.rs"]}),
        )
        .unwrap();
        assert_eq!(
            out,
            "tests/b.rs:1:needle\nsrc/a.rs:1:needle\nother/c.rs:1:needle\n\n[3 matching lines in 3 files.]"
        );
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "paths": ["src", "nope"]}),
        )
        .unwrap_err();
        assert_eq!(
            out,
            "nope does not exist; use ls or find to see what there is"
        );
    }

    /// E-TOOL-18: a missing `path` whose whitespace-separated parts all
    /// exist is searched as several roots; otherwise it is an error.
    #[test]
    fn whitespace_split_path() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/a.rs", "needle\n");
        put(dir.path(), "tests/b.rs", "needle\n");
        let out = grep(
            dir.path(),
            json!({"pattern": "needle", "path": "src tests"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "src/a.rs:1:needle\ntests/b.rs:1:needle\n\n[2 matching lines in 2 files.]"
        );
        let err = grep(dir.path(), json!({"pattern": "needle", "path": "src nope"})).unwrap_err();
        assert_eq!(
            err,
            "src nope does not exist; use ls or find to see what there is"
        );
    }

    /// C13: an invalid regex is an error quoting the compiler and hinting
    /// that patterns are literal by default.
    #[test]
    fn invalid_regex_hint() {
        let dir = tempfile::tempdir().unwrap();
        let err = grep(dir.path(), json!({"pattern": "foo(", "regex": true})).unwrap_err();
        assert!(err.starts_with("invalid regex \"foo(\": "), "{err}");
        assert!(err.contains("unclosed group"), "{err}");
        assert!(err.ends_with("Patterns are literal unless regex is true; escape special characters or drop regex:true"), "{err}");
        // The same pattern is fine literally.
        put(dir.path(), "f.txt", "foo(\n");
        assert_eq!(
            grep(dir.path(), json!({"pattern": "foo("})).unwrap(),
            "f.txt:1:foo(\n\n[1 matching line in 1 file.]"
        );
    }

    /// G10: limit 0 and negative limits, negative context and unknown
    /// arguments are rejected by the schema.
    #[test]
    fn schema_rejects_bad_arguments() {
        let dir = tempfile::tempdir().unwrap();
        for args in [
            json!({"pattern": "a", "limit": 0}),
            json!({"pattern": "a", "limit": -1}),
            json!({"pattern": "a", "context": -1}),
            json!({"pattern": ""}),
            json!({"pattern": "a", "bogus": true}),
        ] {
            let err = grep(dir.path(), args).unwrap_err();
            assert!(
                err.starts_with("Validation failed for tool \"grep\""),
                "{err}"
            );
        }
    }

    /// A FIFO or device named as the path is refused by name, at once; in
    /// a walk a FIFO is passed over and the rest is searched.
    #[test]
    fn special_files_refused_by_name_skipped_in_walks() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "a.txt", "needle\n");
        crate::testutil::mkfifo(&dir.path().join("pipe"));
        let err = grep(dir.path(), json!({"pattern": "needle", "path": "pipe"})).unwrap_err();
        assert_eq!(
            err,
            "pipe is a FIFO (named pipe), not a regular file; grep searches only regular files \
             and directories (reading a pipe or device could wait forever)"
        );
        let err = grep(
            dir.path(),
            json!({"pattern": "needle", "paths": ["a.txt", "/dev/zero"]}),
        )
        .unwrap_err();
        assert!(
            err.starts_with("/dev/zero is a character device, not a regular file;"),
            "{err}"
        );
        assert_eq!(
            grep(dir.path(), json!({"pattern": "needle"})).unwrap(),
            "a.txt:1:needle\n\n[1 matching line in 1 file.]"
        );
    }

    /// A cancelled grep answers `Operation aborted` without searching, and
    /// a walk stops once the token fires.
    #[test]
    fn cancellation() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(2 * crate::walk::CANCEL_CHECK_EVERY) {
            put(dir.path(), &format!("f{i}.txt"), "needle\n");
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ctx = crate::testutil::ctx(dir.path());
        ctx.cancel.cancel();
        let err = rt
            .block_on(GrepTool::new().execute(json!({"pattern": "needle"}), ctx.clone()))
            .unwrap_err();
        assert_eq!(err.0, "Operation aborted");
        let args: GrepArgs = serde_json::from_value(json!({"pattern": "needle"})).unwrap();
        assert_eq!(
            run(&args, dir.path(), &ctx.cancel, &Protected::new(None))
                .unwrap_err()
                .0,
            "Operation aborted"
        );
    }

    /// C13: a missing root is a tool error naming it.
    #[test]
    fn missing_path_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = grep(dir.path(), json!({"pattern": "a", "path": "missing"})).unwrap_err();
        assert_eq!(
            err,
            "missing does not exist; use ls or find to see what there is"
        );
    }

    /// C19: access is a read of every resolved root, including the
    /// whitespace-split fallback.
    #[test]
    fn access_reads_roots() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "src/a.rs", "");
        put(dir.path(), "tests/b.rs", "");
        let tool = GrepTool::new();
        let access = tool.access(&json!({"pattern": "a", "path": "src tests"}), dir.path());
        assert_eq!(
            access,
            Access::Read(vec![dir.path().join("src"), dir.path().join("tests")])
        );
        let access = tool.access(&json!({"pattern": "a"}), Path::new("/w"));
        assert_eq!(access, Access::Read(vec![PathBuf::from("/w")]));
    }
}
