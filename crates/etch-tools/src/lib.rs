//! The seven built-in coding tools: `read`, `write`, `edit`, `bash`, `grep`,
//! `find` and `ls` (E-TOOL, P-TOOL, C2, C3, C13–C19, G10, G11, G18).
//!
//! Each tool is a [`etch_tool::Tool`] whose output strings are part of the
//! contract: the model, tests and `etch tool <name>` all see the same text.
//! Walking and searching use ripgrep's crates, so `.gitignore`, hidden files
//! and binary detection behave as in `rg`, with no `rg` or `fd` at run time.
//! Paths resolve against the working directory; `write` and `edit` stay
//! inside it and out of `.git` and `.etch` (C18), and serialize on a per-path
//! lock (E-TOOL-24). No tool reads etch's credential store or changes
//! `~/.etch` (E-TOOL-22, see [`protect`]), and the tools read only regular
//! files, so a pipe or device cannot hang a run.
//!
//! Beside `bash`, when the session keeps background processes, the
//! `process` tool reads and stops the ones `bash` started with
//! `background: true` (see [`process`]).
//!
//! This crate must not know about the agent loop, sessions or providers.

pub mod args;
pub mod bash;
pub mod builtin;
pub mod cancel;
pub mod compact;
pub mod diff;
pub mod edit;
pub mod find;
pub mod fsutil;
pub mod grep;
pub mod limits;
pub mod lock;
pub mod ls;
pub mod nearby;
pub mod paths;
pub mod process;
pub mod protect;
pub mod read;
pub mod read_image;
pub mod walk;
pub mod write;

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers shared by the tools' unit tests.

    use std::path::Path;

    use etch_tool::{ProgressSink, ToolContext};
    use tokio_util::sync::CancellationToken;

    /// Makes a FIFO (named pipe) at `path`.
    pub fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success(), "mkfifo {}", path.display());
    }

    /// A context for calling a tool directly in tests.
    pub fn ctx(cwd: &Path) -> ToolContext {
        ToolContext {
            call_id: "test".into(),
            cwd: cwd.to_path_buf(),
            cancel: CancellationToken::new(),
            progress: ProgressSink::default(),
            temp_dir: std::env::temp_dir(),
            origin: etch_tool::CallOrigin::default(),
            approved: false,
        }
    }
}
