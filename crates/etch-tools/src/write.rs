//! The `write` tool (E-TOOL-06/07, C3, P-TOOL-27..29): create or replace a
//! whole file, atomically, inside the working directory, answering with the
//! UTF-8 byte count and, on replace, the hunked diff.

use std::path::Path;

use etch_model::ToolSpec;
use etch_tool::{Access, Tool, ToolContext, ToolError, ToolFuture};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fsutil::OpenError;
use crate::lock::MutationLocks;
use crate::protect::Protected;
use crate::{args, diff, fsutil, paths};

/// Arguments of `write`.
#[derive(Debug, Deserialize)]
struct WriteArgs {
    /// Target path.
    path: String,
    /// Full new content.
    content: String,
}

/// The `write` tool.
#[derive(Debug)]
pub struct WriteTool {
    /// Model-facing spec.
    spec: ToolSpec,
    /// Shared per-path mutation locks.
    locks: MutationLocks,
    /// etch's own state, never written.
    protected: Protected,
}

impl WriteTool {
    /// Builds the tool over shared mutation locks.
    pub fn new(locks: MutationLocks) -> Self {
        Self {
            spec: args::spec(
                "write",
                "Create a file or replace its whole content. Creates parent directories. \
                 Only paths inside the working directory (and not in .git or .etch) can be written. \
                 Use edit for changes to part of an existing file.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File to write (relative to the working directory)"},
                        "content": {"type": "string", "description": "The complete new content"}
                    },
                    "required": ["path", "content"],
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

/// Writes `content` to `raw` and describes the result; `protected` is the
/// home state it must not touch.
pub fn write_file(
    cwd: &Path,
    raw: &str,
    content: &str,
    protected: &Protected,
) -> Result<String, ToolError> {
    let target = paths::mutation_target(cwd, raw, protected)?;
    let old = match fsutil::read_regular(&target) {
        Ok(bytes) => Some(bytes),
        Err(OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(OpenError::Io(e)) if e.kind() == std::io::ErrorKind::IsADirectory => {
            return Err(ToolError::new(format!(
                "{raw} is a directory; write needs a file path"
            )));
        }
        Err(OpenError::Io(e)) => return Err(ToolError::new(format!("cannot write {raw}: {e}"))),
        Err(OpenError::NotRegular(kind)) => {
            return Err(fsutil::not_regular(
                raw,
                kind,
                "write",
                "replaces only regular files",
            ));
        }
    };
    let head = format!("Successfully wrote {} bytes to {raw}", content.len());
    if old.as_deref() == Some(content.as_bytes()) {
        return Ok(format!("{head}\n\n(no changes)"));
    }
    fsutil::atomic_write(&target, content.as_bytes(), raw)?;
    Ok(match old {
        None => head,
        Some(old) => {
            let old = String::from_utf8_lossy(&old);
            format!("{head}\n\n{}", diff::unified(&old, content, raw))
        }
    })
}

impl Tool for WriteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self, args: &Value, cwd: &Path) -> Access {
        crate::lock::path_write_access(args, cwd)
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let a: WriteArgs = args::parse(&self.spec, args)?;
            let path = a.path.clone();
            let cwd = ctx.cwd.clone();
            let protected = self.protected.clone();
            crate::lock::locked_mutation(
                &self.locks,
                &ctx,
                &path,
                "write",
                &self.protected,
                move || write_file(&cwd, &a.path, &a.content, &protected),
            )
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    /// Writes with no home to protect.
    fn write_file(cwd: &Path, raw: &str, content: &str) -> Result<String, ToolError> {
        super::write_file(cwd, raw, content, &Protected::new(None))
    }

    /// C3: new files get the byte count only (UTF-8 bytes, not chars).
    #[test]
    fn new_file_counts_utf8_bytes() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            write_file(d.path(), "n/é.txt", "héllo").unwrap(),
            "Successfully wrote 6 bytes to n/é.txt"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("n/é.txt")).unwrap(),
            "héllo"
        );
    }

    /// C3: replacing adds the hunked diff; identical content says so.
    #[test]
    fn replace_shows_diff() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "a\nb\nc\n").unwrap();
        assert_eq!(
            write_file(d.path(), "f", "a\nB\nc\n").unwrap(),
            "Successfully wrote 6 bytes to f\n\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"
        );
        assert_eq!(
            write_file(d.path(), "f", "a\nB\nc\n").unwrap(),
            "Successfully wrote 6 bytes to f\n\n(no changes)"
        );
    }

    /// C18: outside and internal targets are refused; directories too.
    #[test]
    fn refuses_bad_targets() {
        let d = tempfile::tempdir().unwrap();
        assert!(
            write_file(d.path(), "/tmp/x-etch-test", "x")
                .unwrap_err()
                .0
                .contains("outside the working directory")
        );
        assert!(
            write_file(d.path(), ".git/HEAD", "x")
                .unwrap_err()
                .0
                .contains("internal .git")
        );
        std::fs::create_dir(d.path().join("dir")).unwrap();
        assert!(
            write_file(d.path(), "dir", "x")
                .unwrap_err()
                .0
                .contains("is a directory")
        );
    }

    /// A FIFO in the way is refused at once, not read (which would wait
    /// for a writer) nor replaced.
    #[test]
    fn refuses_a_fifo() {
        let d = tempfile::tempdir().unwrap();
        crate::testutil::mkfifo(&d.path().join("pipe"));
        assert_eq!(
            write_file(d.path(), "pipe", "x").unwrap_err().0,
            "pipe is a FIFO (named pipe), not a regular file; write replaces only regular files \
             (reading a pipe or device could wait forever)"
        );
        assert!(
            std::fs::metadata(d.path().join("pipe"))
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }
}
