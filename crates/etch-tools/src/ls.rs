//! The `ls` tool (E-TOOL-03, C17, P-TOOL-38..41): one directory, dotfiles
//! included, sorted case-insensitively, directories marked with `/`, the
//! internal skip list applied.

use std::fmt::Write as _;
use std::path::Path;

use etch_model::ToolSpec;
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::limits::{LS_DEFAULT_LIMIT, cap_listing};
use crate::paths;
use crate::protect::Protected;
use crate::{args, cancel};

/// Entry names `ls` never lists (C17).
pub const SKIPPED: [&str; 5] = [".git", ".etch", "bin", "node_modules", "vendor"];

/// Arguments of `ls`.
#[derive(Debug, Deserialize)]
struct LsArgs {
    /// Directory to list (default `.`).
    #[serde(default = "dot")]
    path: String,
    /// Most entries to list.
    #[serde(default = "default_limit")]
    limit: usize,
}

/// The default path.
fn dot() -> String {
    ".".to_string()
}

/// The default limit.
fn default_limit() -> usize {
    LS_DEFAULT_LIMIT
}

/// The `ls` tool.
#[derive(Debug)]
pub struct LsTool {
    /// Model-facing spec.
    spec: ToolSpec,
    /// etch's credential store, never listed.
    protected: Protected,
}

impl Default for LsTool {
    fn default() -> Self {
        Self::new()
    }
}

impl LsTool {
    /// Builds the tool.
    pub fn new() -> Self {
        Self {
            spec: args::spec(
                "ls",
                "List one directory: entries sorted case-insensitively, dotfiles included, \
                 directories marked with a trailing '/'. Skips .git, .etch, bin, node_modules and vendor.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Directory to list (default: the working directory)"},
                        "limit": {"type": "integer", "minimum": 1, "description": "Maximum entries to return (default 500)"}
                    },
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

/// Lists `raw` (resolved against `cwd`) as the model sees it.
#[cfg(test)]
fn list(cwd: &Path, raw: &str, limit: usize) -> Result<String, ToolError> {
    list_until(
        cwd,
        raw,
        limit,
        &CancellationToken::new(),
        &Protected::new(None),
    )
}

/// Lists `raw` (resolved against `cwd`) as the model sees it, stopping
/// when `cancel` fires (a directory can hold millions of entries, each
/// stat'ed); the credential store `protected` knows is refused.
fn list_until(
    cwd: &Path,
    raw: &str,
    limit: usize,
    cancel: &CancellationToken,
    protected: &Protected,
) -> Result<String, ToolError> {
    let dir = paths::resolve(cwd, raw);
    protected.check_read(raw, &dir, "list")?;
    let meta = std::fs::metadata(&dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::new(crate::nearby::missing(
            cwd,
            raw,
            "use ls on its parent or find to see what there is",
        )),
        _ => ToolError::new(format!("cannot read {raw}: {e}")),
    })?;
    if !meta.is_dir() {
        return Err(ToolError::new(format!(
            "{raw} is not a directory; use read for files"
        )));
    }
    let reader =
        std::fs::read_dir(&dir).map_err(|e| ToolError::new(format!("cannot list {raw}: {e}")))?;
    let mut entries: Vec<String> = Vec::new();
    for (i, entry) in reader.flatten().enumerate() {
        if i % cancel::CHECK_EVERY == cancel::CHECK_EVERY - 1 && cancel.is_cancelled() {
            return Err(cancel::aborted());
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if SKIPPED.contains(&name.as_str()) {
            continue;
        }
        // Follow symlinks to mark linked directories; skip entries that
        // cannot be statted at all (P-TOOL-39).
        let is_dir = match std::fs::metadata(entry.path()) {
            Ok(m) => m.is_dir(),
            Err(_) => match entry.path().symlink_metadata() {
                Ok(_) => false,
                Err(_) => continue,
            },
        };
        entries.push(if is_dir { format!("{name}/") } else { name });
    }
    if entries.is_empty() {
        return Ok("(empty directory)".to_string());
    }
    entries.sort_by(|a, b| {
        a.to_lowercase()
            .cmp(&b.to_lowercase())
            .then_with(|| a.cmp(b))
    });
    let total = entries.len();
    let dirs = entries.iter().filter(|e| e.ends_with('/')).count();
    let more = total > limit;
    entries.truncate(limit);
    // The count small models most often get wrong, first after the
    // listing; the notices come after the cap, so they survive it.
    let mut text = cap_listing(entries.join("\n"));
    let _ = write!(text, "\n\n[{}]", counted(total, dirs));
    if more {
        let doubled = limit.saturating_mul(2);
        let _ = write!(
            text,
            "\n[Entry limit {limit} reached. Use limit={doubled} for more.]"
        );
    }
    Ok(text)
}

/// `N entries: D directories, F files.`, singular where one.
fn counted(total: usize, dirs: usize) -> String {
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    format!(
        "{}: {}, {}.",
        plural(total, "entry", "entries"),
        plural(dirs, "directory", "directories"),
        plural(total - dirs, "file", "files")
    )
}

impl Tool for LsTool {
    fn read_only(&self) -> bool {
        true
    }

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self, args: &Value, cwd: &Path) -> Access {
        let raw = args.get("path").and_then(Value::as_str).unwrap_or(".");
        Access::Read(vec![paths::resolve(cwd, raw)])
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let a: LsArgs = args::parse(&self.spec, args)?;
            let cwd = ctx.cwd.clone();
            let cancel = ctx.cancel.clone();
            let protected = self.protected.clone();
            cancel::blocking(&ctx.cancel, "ls", move || {
                list_until(&cwd, &a.path, a.limit, &cancel, &protected)
            })
            .await
            .map(ToolOutput::text)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// C17: sorted case-insensitively, dirs marked, dotfiles kept, skip list
    /// applied.
    #[test]
    fn lists_sorted_with_markers() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b.txt", "A.txt", ".hidden", "c"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        for d in ["Docs", "node_modules", ".git", "vendor"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        let out = list(dir.path(), ".", 500).unwrap();
        assert_eq!(
            out,
            ".hidden\nA.txt\nb.txt\nc\nDocs/\n\n[5 entries: 1 directory, 4 files.]"
        );
    }

    /// C17: exact empty and limit notices.
    #[test]
    fn empty_and_limit_notices() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert_eq!(list(dir.path(), ".", 500).unwrap(), "(empty directory)");
        for i in 0..5 {
            std::fs::write(dir.path().join(format!("f{i}")), "").unwrap();
        }
        assert_eq!(
            list(dir.path(), ".", 2).unwrap(),
            "f0\nf1\n\n[5 entries: 0 directories, 5 files.]\n[Entry limit 2 reached. Use limit=4 for more.]"
        );
    }

    /// A missing path or a file is a tool error.
    #[test]
    fn errors_for_missing_and_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "").unwrap();
        assert_eq!(
            list(dir.path(), "nope", 5).unwrap_err().0,
            "nope does not exist; use ls on its parent or find to see what there is"
        );
        assert!(
            list(dir.path(), "f", 5)
                .unwrap_err()
                .0
                .contains("is not a directory")
        );
    }

    /// Limits of 0 or below are schema errors, via the tool itself.
    #[tokio::test]
    async fn zero_limit_is_rejected() {
        let tool = LsTool::new();
        let ctx = crate::testutil::ctx(Path::new("/"));
        let err = tool
            .execute(json!({"limit": 0}), ctx.clone())
            .await
            .unwrap_err()
            .0;
        assert!(
            err.starts_with("Validation failed for tool \"ls\""),
            "{err}"
        );
        assert!(tool.execute(json!({"limit": -3}), ctx).await.is_err());
    }
}
