//! Grounding checks on a final answer (`[session] grounding`, issue 30):
//! two things etch can verify about an answer without guessing what the
//! user meant, each at most once per prompt.
//!
//! - **A path that does not exist.** The answer names a workspace path
//!   (a token with a `/` whose first part exists, or a name with a common
//!   file extension) that is not on disk and that nothing in the run
//!   (the prompt, a call, a result) mentioned: the model made it up
//!   (`pkg/quartz.rs` for a Python package). The note names it.
//! - **A file never looked at.** The prompt names a file or directory
//!   that exists, and no call of the run touched it (read it, listed or
//!   searched it, or named it in a command) and no result showed its
//!   lines (a search of the whole project that matched in it): the
//!   answer cannot come from it. The note names it.
//!
//! Small models answer from nothing with confidence; one note, in the
//! words of what is wrong, is usually enough for them to look. This
//! module decides; the loop sends the note back as a user message and
//! records it (`loop.grounding`). It must not know about the log, the
//! provider or how anything is shown.

use std::path::{Component, Path};

use etch_model::{ContentPart, Message, ToolCall};
use serde_json::Value;

/// Extensions that make a bare word a file name (`notes.txt`,
/// `main.rs`): common source, data and document files. A word such as
/// `values.iter` or `e.g` is no path.
const EXTENSIONS: &[&str] = &[
    "c", "cc", "cfg", "conf", "cpp", "cs", "css", "csv", "dart", "env", "ex", "exs", "go",
    "gradle", "h", "hpp", "hs", "html", "ini", "java", "js", "json", "jsonl", "jsx", "kt", "lock",
    "lua", "md", "mjs", "ml", "php", "pl", "proto", "py", "rb", "rs", "scala", "scss", "sh", "sql",
    "svelte", "swift", "tf", "toml", "ts", "tsx", "txt", "vue", "xml", "yaml", "yml", "zig",
];

/// How every note starts, so the loop can tell a note from a prompt.
pub const NOTE_START: &str = "[etch: ";

/// What a check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroundingNote {
    /// `missing_path` or `not_looked`.
    pub kind: &'static str,
    /// The paths it is about, as written.
    pub paths: Vec<String>,
    /// What the model is told.
    pub note: String,
}

/// The checks of one prompt's run; each fires at most once.
#[derive(Debug, Default)]
pub struct Grounding {
    /// Whether the missing-path check has spoken.
    missing_said: bool,
    /// Whether the not-looked check has spoken.
    unlooked_said: bool,
}

impl Grounding {
    /// Checks `answer`, the final text of a run whose messages since the
    /// prompt are `run` (the prompt first), in `cwd`. At most one note
    /// comes back; a check that spoke stays quiet after.
    pub fn check(&mut self, run: &[Message], answer: &str, cwd: &Path) -> Option<GroundingNote> {
        let seen = Seen::of(run);
        if !self.unlooked_said {
            let unlooked = seen.unlooked(cwd);
            if !unlooked.is_empty() {
                self.unlooked_said = true;
                return Some(GroundingNote {
                    kind: "not_looked",
                    note: format!(
                        "[etch: you have not looked at {} yet; look at it with a tool now, then answer from what it shows.]",
                        list(&unlooked)
                    ),
                    paths: unlooked,
                });
            }
        }
        if !self.missing_said {
            let missing: Vec<String> = path_tokens(answer)
                .into_iter()
                .filter(|p| workspace_path(p, cwd) && !cwd.join(p).exists() && !seen.mentions(p))
                .collect();
            if !missing.is_empty() {
                self.missing_said = true;
                let verb = if missing.len() == 1 { "does" } else { "do" };
                return Some(GroundingNote {
                    kind: "missing_path",
                    note: format!(
                        "[etch: your answer names {}, which {verb} not exist; check with a tool before answering.]",
                        list(&missing)
                    ),
                    paths: missing,
                });
            }
        }
        None
    }
}

impl Grounding {
    /// The existing files and directories the run's prompt names that no
    /// call of the run (`run`, the prompt first) has touched yet.
    pub fn unlooked(run: &[Message], cwd: &Path) -> Vec<String> {
        Seen::of(run).unlooked(cwd)
    }
}

/// Why a `write` call must not run yet: it would replace an existing,
/// non-empty file that no earlier call of the session (`history`) read,
/// edited, wrote or named in a command. A small model asked to change a
/// file writes a new one from nothing and loses the rest (a JSON file
/// rewritten as one line of JavaScript); told to look first, it can
/// edit. `None` for every other call.
pub fn unread_overwrite(call: &ToolCall, history: &[Message], cwd: &Path) -> Option<String> {
    if call.name != "write" {
        return None;
    }
    let path = call.arguments.get("path")?.as_str()?;
    let full = cwd.join(path);
    let meta = std::fs::metadata(&full).ok()?;
    if !meta.is_file() || meta.len() == 0 {
        return None;
    }
    let seen = Seen::of(history);
    if seen.touched(path, cwd) {
        return None;
    }
    Some(format!(
        "{path} already exists and you have not read it; read it first, then change it with edit \
         (write replaces the whole file)"
    ))
}

/// `a`, `a and b`, `a, b and c`.
fn list(paths: &[String]) -> String {
    match paths {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// What a run has seen so far: the prompt, and every call's arguments
/// and result text.
struct Seen {
    /// The prompt's text.
    prompt: String,
    /// The calls made.
    calls: Vec<ToolCall>,
    /// Calls' arguments and results, as one text.
    text: String,
    /// Results alone, as one text.
    results: String,
}

impl Seen {
    /// Collects it from the run's messages.
    fn of(run: &[Message]) -> Self {
        let mut seen = Self {
            prompt: String::new(),
            calls: Vec::new(),
            text: String::new(),
            results: String::new(),
        };
        for message in run {
            match message {
                Message::User { content } if seen.prompt.is_empty() => {
                    seen.prompt = etch_model::content::joined_text(content);
                }
                Message::Assistant { content } => {
                    for part in content {
                        if let ContentPart::ToolCall(call) = part {
                            seen.text.push_str(&call.arguments.to_string());
                            seen.text.push('\n');
                            seen.calls.push(call.clone());
                        }
                    }
                }
                Message::Tool { content, .. } => {
                    let text = etch_model::content::joined_text(content);
                    seen.text.push_str(&text);
                    seen.text.push('\n');
                    seen.results.push_str(&text);
                    seen.results.push('\n');
                }
                _ => {}
            }
        }
        seen
    }

    /// The existing paths the prompt names that no call touched.
    fn unlooked(&self, cwd: &Path) -> Vec<String> {
        path_tokens(&self.prompt)
            .into_iter()
            .filter(|p| cwd.join(p).exists() && !self.touched(p, cwd) && !self.shown(p, cwd))
            .collect()
    }

    /// Whether a result showed lines of `path` the way a search prints
    /// them (`path:12:text`, or `path-12-` for context), under the name
    /// the prompt used or under the working directory's full path: a
    /// search of the whole project that matched in the file has shown
    /// the model what it says.
    fn shown(&self, path: &str, cwd: &Path) -> bool {
        let path = path.trim_start_matches("./");
        let full = cwd.join(path).to_string_lossy().into_owned();
        self.results.lines().any(|line| {
            [path, full.as_str()].iter().any(|name| {
                line.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix(':').or_else(|| rest.strip_prefix('-')))
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            })
        })
    }

    /// Whether the prompt or anything the run saw mentions `path`.
    fn mentions(&self, path: &str) -> bool {
        self.prompt.contains(path) || self.text.contains(path)
    }

    /// Whether a call touched `path`: a path argument (any key naming a
    /// path, file or directory) that is it or lies inside it, or a
    /// command that names it. A search pattern that spells the name is
    /// no look at the file.
    fn touched(&self, path: &str, cwd: &Path) -> bool {
        let target = normal(&cwd.join(path));
        self.calls.iter().any(|call| {
            let mut args = Vec::new();
            keyed_strings(&call.arguments, "", &mut args);
            args.iter().any(|(key, value)| {
                let key = key.to_ascii_lowercase();
                if ["command", "cmd", "script"].iter().any(|k| key.contains(k)) {
                    value.contains(path.trim_start_matches("./"))
                } else if ["path", "file", "dir"].iter().any(|k| key.contains(k)) {
                    normal(&cwd.join(value)).starts_with(&target)
                } else {
                    false
                }
            })
        })
    }
}

/// Every string in a JSON value with the key it sits under (an array's
/// items under the array's key).
fn keyed_strings<'a>(value: &'a Value, key: &'a str, out: &mut Vec<(&'a str, &'a str)>) {
    match value {
        Value::String(s) => out.push((key, s)),
        Value::Array(items) => items.iter().for_each(|v| keyed_strings(v, key, out)),
        Value::Object(map) => map.iter().for_each(|(k, v)| keyed_strings(v, k, out)),
        _ => {}
    }
}

/// `path` with `.` and `..` resolved lexically.
fn normal(path: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether `token` reads as a path in this workspace: its first part
/// exists here, it starts `./` or `../`, or it ends in a common file
/// extension. `and/or`, `input/output`, `1/2` do not.
fn workspace_path(token: &str, cwd: &Path) -> bool {
    if token.starts_with("./") || token.starts_with("../") || has_extension(token) {
        return true;
    }
    let first = token
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    token.contains('/') && !token.starts_with('/') && !first.is_empty() && cwd.join(first).exists()
}

/// Whether the last part of `token` ends in one of [`EXTENSIONS`] after
/// a name with a letter in it.
fn has_extension(token: &str) -> bool {
    let name = token.rsplit('/').next().unwrap_or(token);
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            stem.chars().any(char::is_alphabetic)
                && EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
        }
        None => false,
    }
}

/// The words of `text` that look like paths: a `/` between name
/// characters or a file extension, with quotes, backticks, brackets and
/// trailing punctuation taken off; URLs, e-mail addresses and absolute
/// paths outside any workspace sense (`/usr/bin`) are left out except
/// as the existence check sees them.
pub fn path_tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in text.split(|c: char| c.is_whitespace() || "`'\"()[]{}<>,;|*".contains(c)) {
        let token = raw
            .trim_start_matches(':')
            .trim_end_matches(|c: char| ".:!?".contains(c));
        if token.len() < 3 || token.contains("://") || token.contains('@') {
            continue;
        }
        if !token
            .chars()
            .all(|c| c.is_alphanumeric() || "/._-+~".contains(c))
        {
            continue;
        }
        if token.starts_with('~') || token.starts_with('/') {
            continue;
        }
        let slashed = token.contains('/')
            && token
                .split('/')
                .filter(|part| !part.is_empty())
                .all(|part| part.chars().any(char::is_alphanumeric));
        if (slashed || has_extension(token)) && !out.iter().any(|t| t == token) {
            out.push(token.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A workspace with `notes.txt` and `src/main.rs`.
    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "a\nb\n").unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
        dir
    }

    fn user(text: &str) -> Message {
        Message::User {
            content: vec![ContentPart::text(text)],
        }
    }

    fn call(name: &str, args: Value) -> Message {
        Message::Assistant {
            content: vec![ContentPart::ToolCall(ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: args,
            })],
        }
    }

    fn result(text: &str) -> Message {
        Message::Tool {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![ContentPart::text(text)],
            is_error: false,
        }
    }

    /// Paths are words with a `/` or a known extension, cleaned of
    /// quotes and punctuation; prose, code and URLs are not.
    #[test]
    fn path_tokens_are_found_in_prose() {
        assert_eq!(
            path_tokens(
                "See `src/lib.rs`, notes.txt. Also (pkg/quartz.rs): and/or e.g. values.iter() \
                 1.5 https://x.io/a.rs me@x.io ~/.bashrc /usr/bin v1.2.3 ./run-tests.sh"
            ),
            [
                "src/lib.rs",
                "notes.txt",
                "pkg/quartz.rs",
                "and/or",
                "./run-tests.sh"
            ]
        );
    }

    /// An invented path gets one note; a real one, or one a result
    /// mentioned, none; and `and/or` is no workspace path.
    #[test]
    fn an_invented_path_gets_one_note() {
        let ws = workspace();
        let run = [
            user("Which file defines main?"),
            call("grep", json!({"pattern": "fn main"})),
            result("src/main.rs:1:fn main() {}"),
        ];
        let mut grounding = Grounding::default();
        let note = grounding
            .check(&run, "It is in pkg/quartz.rs and/or lib.py.", ws.path())
            .unwrap();
        assert_eq!(note.kind, "missing_path");
        assert_eq!(note.paths, ["pkg/quartz.rs", "lib.py"]);
        assert_eq!(
            note.note,
            "[etch: your answer names pkg/quartz.rs and lib.py, which do not exist; check with a tool before answering.]"
        );
        assert_eq!(
            grounding.check(&run, "It is in pkg/quartz.rs.", ws.path()),
            None,
            "once per prompt"
        );
        let mut fresh = Grounding::default();
        assert_eq!(
            fresh.check(&run, "src/main.rs defines it; main.rs.", ws.path()),
            None
        );
        // A name the run saw (the prompt asked to create it) is no invention.
        let run = [
            user("Is there an out/report.md?"),
            call("ls", json!({"path": "."})),
            result("notes.txt\nsrc/"),
        ];
        assert_eq!(
            fresh.check(&run, "No, out/report.md does not exist.", ws.path()),
            None
        );
    }

    /// A prompt naming an existing file that no call touched gets one
    /// note; reading it, listing its directory by path, or naming it in
    /// a command counts as looking.
    #[test]
    fn a_file_never_looked_at_gets_one_note() {
        let ws = workspace();
        let prompt = user("How many lines does notes.txt have?");
        let mut grounding = Grounding::default();
        let note = grounding
            .check(std::slice::from_ref(&prompt), "It has 10 lines.", ws.path())
            .unwrap();
        assert_eq!(note.kind, "not_looked");
        assert_eq!(
            note.note,
            "[etch: you have not looked at notes.txt yet; look at it with a tool now, then answer from what it shows.]"
        );
        assert_eq!(
            grounding.check(std::slice::from_ref(&prompt), "10", ws.path()),
            None
        );
        // A search of the whole directory for its name is not a look at it.
        let run = [
            prompt.clone(),
            call("grep", json!({"pattern": "notes.txt", "path": "."})),
            result("No matches found"),
        ];
        assert!(Grounding::default().check(&run, "10", ws.path()).is_some());
        for args in [
            json!({"path": "notes.txt"}),
            json!({"path": "./notes.txt", "offset": 1}),
            json!({"files": [{"path": "notes.txt"}]}),
            json!({"command": "wc -l notes.txt"}),
        ] {
            let run = [
                prompt.clone(),
                call("read", args.clone()),
                result("1 a\n2 b"),
            ];
            assert_eq!(
                Grounding::default().check(&run, "2", ws.path()),
                None,
                "{args}"
            );
        }
        // A directory counts as looked at when a call went inside it.
        let run = [
            user("What is in src/?"),
            call("read", json!({"path": "src/main.rs"})),
            result("fn main() {}"),
        ];
        assert_eq!(Grounding::default().check(&run, "main.rs", ws.path()), None);
        // A search of the whole project that printed the file's lines
        // has shown it; one that only names it elsewhere has not.
        let prompt = user("Which port does notes.txt give?");
        let search = call("grep", json!({"pattern": "port", "path": "."}));
        for (shown, looked) in [
            ("notes.txt:3:port 8437", true),
            (
                &*format!("{}/notes.txt:3:port 8437", ws.path().display()),
                true,
            ),
            ("notes.txt-2-context", true),
            ("other.txt:1:see notes.txt:4", false),
            ("notes.txt: no such line", false),
        ] {
            let run = [prompt.clone(), search.clone(), result(shown)];
            let note = Grounding::default().check(&run, "8437", ws.path());
            assert_eq!(note.is_none(), looked, "{shown}");
        }
        // A name that does not exist is not the prompt naming a file.
        let run = [user("Create hello.py that prints hi.")];
        assert_eq!(Grounding::default().check(&run, "Done.", ws.path()), None);
    }

    /// A write over an existing file nothing read is refused with what
    /// to do; after a read (or for a new or empty file, or another
    /// tool) it goes ahead.
    #[test]
    fn a_write_over_an_unread_file_is_refused() {
        let ws = workspace();
        std::fs::write(ws.path().join("empty.txt"), "").unwrap();
        let write = |path: &str| ToolCall {
            id: "w".into(),
            name: "write".into(),
            arguments: json!({"path": path, "content": "x"}),
        };
        let prompt = [user("Change notes.txt")];
        assert_eq!(
            unread_overwrite(&write("notes.txt"), &prompt, ws.path()).as_deref(),
            Some(
                "notes.txt already exists and you have not read it; read it first, then change it with edit (write replaces the whole file)"
            )
        );
        for path in ["new.txt", "empty.txt", "src"] {
            assert_eq!(
                unread_overwrite(&write(path), &prompt, ws.path()),
                None,
                "{path}"
            );
        }
        let read = [
            user("Change notes.txt"),
            call("read", json!({"path": "notes.txt"})),
            result("1 a"),
        ];
        assert_eq!(
            unread_overwrite(&write("./notes.txt"), &read, ws.path()),
            None
        );
        let edit = ToolCall {
            name: "edit".into(),
            ..write("notes.txt")
        };
        assert_eq!(unread_overwrite(&edit, &prompt, ws.path()), None);
    }
}
