//! An example etch plugin (E-PLUG-18), a standalone program on
//! `etch-plugin-sdk` with two tools:
//!
//! - `plugin_echo`: echoes its text with basic statistics (characters,
//!   words, lines, bytes);
//! - `project_files`: summarizes the files under a directory (count,
//!   bytes, the commonest extensions, sample paths), skipping `.git`,
//!   `.etch`, `target` and `node_modules`.
//!
//! Configure it with
//!
//! ```toml
//! [[plugins]]
//! name = "example"
//! command = "cargo run -q --manifest-path plugins/example/Cargo.toml"
//! ```
//!
//! (or the built binary's path). It knows nothing of etch beyond the SDK.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use etch_plugin_sdk::{Call, ParallelSafety, Plugin, Tool, ToolError, serve_plugin};
use serde_json::json;

/// Directories `project_files` does not enter.
const SKIPPED: [&str; 4] = [".git", ".etch", "target", "node_modules"];

/// Most files `project_files` looks at, so a huge tree answers quickly.
const MAX_FILES: usize = 100_000;

fn main() -> std::io::Result<()> {
    serve_plugin(&plugin())
}

/// The plugin and its two tools.
fn plugin() -> Plugin {
    Plugin::new("example")
        .tool(
            Tool::new(
                "plugin_echo",
                "Echo the text back with its character, word, line and byte counts.",
                json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "Text to echo"}},
                    "required": ["text"],
                    "additionalProperties": false
                }),
                echo,
            )
            .parallel_safety(ParallelSafety::ReadOnly),
        )
        .tool(
            Tool::new(
                "project_files",
                "Summarize the files under a directory: how many, total bytes, the commonest extensions and sample paths.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Directory (default: the working directory)"},
                        "samples": {"type": "integer", "minimum": 0, "description": "Sample paths to list (default 10)"}
                    },
                    "additionalProperties": false
                }),
                project_files,
            )
            .parallel_safety(ParallelSafety::ReadOnly),
        )
}

/// `plugin_echo`.
fn echo(call: &Call) -> Result<String, ToolError> {
    let text = call.str("text")?;
    Ok(format!(
        "{text}\n\n{} characters, {} words, {} lines, {} bytes",
        text.chars().count(),
        text.split_whitespace().count(),
        text.lines().count(),
        text.len()
    ))
}

/// `project_files`.
fn project_files(call: &Call) -> Result<String, ToolError> {
    let root = PathBuf::from(call.opt_str("path").unwrap_or("."));
    if !root.is_dir() {
        return Err(ToolError::new(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    let samples = usize::try_from(call.u64_or("samples", 10)).unwrap_or(usize::MAX);
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    let mut bytes = 0;
    let mut extensions: BTreeMap<String, usize> = BTreeMap::new();
    for (path, size) in &files {
        bytes += size;
        let ext = path.extension().map_or_else(
            || "(none)".to_owned(),
            |e| format!(".{}", e.to_string_lossy()),
        );
        *extensions.entry(ext).or_default() += 1;
    }
    let mut common: Vec<(String, usize)> = extensions.into_iter().collect();
    common.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut out = format!(
        "{} files, {bytes} bytes under {}{}\n",
        files.len(),
        root.display(),
        if files.len() >= MAX_FILES {
            format!(" (stopped at {MAX_FILES} files)")
        } else {
            String::new()
        }
    );
    let buckets: Vec<String> = common
        .iter()
        .take(10)
        .map(|(ext, n)| format!("{ext} {n}"))
        .collect();
    let _ = writeln!(out, "extensions: {}", buckets.join(", "));
    for (path, _) in files.iter().take(samples) {
        let shown = path.strip_prefix(&root).unwrap_or(path);
        let _ = writeln!(out, "  {}", shown.display());
    }
    Ok(out)
}

/// Collects the files under `dir` with their sizes.
fn walk(dir: &Path, files: &mut Vec<(PathBuf, u64)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if files.len() >= MAX_FILES {
            return;
        }
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let name = entry.file_name();
            if !SKIPPED.iter().any(|s| name == *s) {
                walk(&path, files);
            }
        } else if kind.is_file() {
            let size = entry.metadata().map_or(0, |m| m.len());
            files.push((path, size));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both tools through the SDK's wire loop.
    #[test]
    fn tools_answer() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn main() {}\n").unwrap();
        std::fs::write(dir.path().join("b.rs"), "x").unwrap();
        std::fs::create_dir(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("target/skip.rs"), "x").unwrap();
        let call = Call {
            call_id: "c".into(),
            arguments: json!({"path": dir.path(), "samples": 1}),
        };
        let out = project_files(&call).unwrap();
        assert!(out.starts_with("2 files, 14 bytes under "), "{out}");
        assert!(out.contains("extensions: .rs 2"), "{out}");
        assert!(out.ends_with("  a.rs\n"), "{out}");
        let echo = echo(&Call {
            call_id: "c".into(),
            arguments: json!({"text": "two words"}),
        })
        .unwrap();
        assert_eq!(echo, "two words\n\n9 characters, 2 words, 1 lines, 9 bytes");
    }
}
