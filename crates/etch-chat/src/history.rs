//! Prompts remembered across chats: `~/.etch/history.jsonl`, one JSON
//! object per sent prompt (`{"project": …, "text": …}`), so Up in a new
//! chat brings back what was typed in earlier ones. This project's
//! prompts come first when walking back (they are the nearest), then the
//! others'. The file is bounded: past [`MAX_LINES`] lines it is rewritten
//! with the newest [`KEEP_LINES`]. Long texts (a big paste) are not kept:
//! they would crowd out everything else.
//!
//! Reading never fails (a missing or damaged file is an empty history);
//! writing failures are the caller's to ignore: a prompt not remembered
//! is no reason to stop a chat. This module must not know the editor.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The file under the home directory.
pub const FILE: &str = ".etch/history.jsonl";
/// Lines past which the file is trimmed.
pub const MAX_LINES: usize = 2000;
/// Lines a trim keeps.
pub const KEEP_LINES: usize = 1000;
/// The longest prompt remembered, in bytes.
pub const MAX_TEXT: usize = 8 * 1024;

/// The history file under `home`.
pub fn path(home: &Path) -> PathBuf {
    home.join(FILE)
}

/// The remembered prompts, oldest first, with `project`'s last (nearest
/// to Up): the order the editor walks.
pub fn load(home: &Path, project: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path(home)) else {
        return Vec::new();
    };
    let project = project.to_string_lossy();
    let (mut ours, mut others) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(prompt) = entry["text"].as_str() else {
            continue;
        };
        if entry["project"].as_str() == Some(&project) {
            ours.push(prompt.to_owned());
        } else {
            others.push(prompt.to_owned());
        }
    }
    others.extend(ours);
    others
}

/// Remembers `text`, sent in `project`: one line appended (the file
/// created 0600), the file trimmed when it has grown past [`MAX_LINES`].
pub fn append(home: &Path, project: &Path, text: &str) -> std::io::Result<()> {
    if text.trim().is_empty() || text.len() > MAX_TEXT {
        return Ok(());
    }
    let file = path(home);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let line = json!({ "project": project.to_string_lossy(), "text": text }).to_string();
    let mut out = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&file)?
    };
    out.write_all(format!("{line}\n").as_bytes())?;
    drop(out);
    trim(&file)
}

/// Rewrites `file` with its newest [`KEEP_LINES`] lines once it holds more
/// than [`MAX_LINES`] (wholly or not at all: `etch_fs::replace`).
fn trim(file: &Path) -> std::io::Result<()> {
    let text = std::fs::read_to_string(file)?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= MAX_LINES {
        return Ok(());
    }
    let kept = lines[lines.len() - KEEP_LINES..].join("\n") + "\n";
    etch_fs::replace(file, kept.as_bytes(), etch_fs::Options::mode(0o600))
        .map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prompts come back across chats, this project's nearest; big pastes
    /// are not kept; the file stays bounded.
    #[test]
    fn prompts_are_remembered_project_first_and_bounded() {
        let home = tempfile::tempdir().unwrap();
        let (here, there) = (Path::new("/p/here"), Path::new("/p/there"));
        append(home.path(), here, "fix the parser").unwrap();
        append(home.path(), there, "elsewhere").unwrap();
        append(home.path(), here, "add tests").unwrap();
        append(home.path(), here, &"x".repeat(MAX_TEXT + 1)).unwrap();
        assert_eq!(
            load(home.path(), here),
            ["elsewhere", "fix the parser", "add tests"]
        );
        assert_eq!(
            load(home.path(), there),
            ["fix the parser", "add tests", "elsewhere"]
        );
        for i in 0..MAX_LINES {
            append(home.path(), here, &format!("p{i}")).unwrap();
        }
        let lines = std::fs::read_to_string(path(home.path()))
            .unwrap()
            .lines()
            .count();
        assert!(lines <= MAX_LINES, "{lines}");
        assert_eq!(
            load(home.path(), here).last().map(String::as_str),
            Some(format!("p{}", MAX_LINES - 1).as_str())
        );
    }
}
