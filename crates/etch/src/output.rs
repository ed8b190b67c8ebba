//! Observers that turn a run into process output.
//!
//! `--json` prints every durable line as it is appended, byte-identical to
//! the session file, flushed at once (G1). Plain `-p` prints nothing while the
//! run is going and the final answer at the end (C24); diagnostics go to
//! stderr.

use std::io::Write;

use etch_core::{AgentEvent, CompactionResult, Observer};
use serde::Serialize;

/// Streams durable lines to stdout.
#[derive(Debug, Default)]
pub struct JsonLines;

impl Observer for JsonLines {
    fn agent_event(&mut self, event: &AgentEvent<'_>) {
        notice(event);
    }

    fn durable_line(&mut self, line: &str) {
        print_line(line);
    }
}

/// Says on stderr what a compaction did, so a run that changed its context
/// (or could not) never does so silently, and when a failed request is
/// retried, so a bad URL or a down server is not a silent wait.
fn notice(event: &AgentEvent<'_>) {
    if let AgentEvent::Retrying {
        attempt,
        max_retries,
        delay,
        reason,
    } = event
    {
        diag!(
            "etch: {reason}; retrying in {:.1} s (retry {attempt} of {max_retries})",
            delay.as_secs_f64()
        );
        return;
    }
    let AgentEvent::CompactionEnd { trigger, result } = event else {
        return;
    };
    match result {
        CompactionResult::Compacted {
            tokens_before,
            tokens_after,
        } => diag!(
            "etch: compacted the context ({trigger}): ~{tokens_before} -> ~{tokens_after} estimated tokens; the full history stays in the session log"
        ),
        CompactionResult::Skipped(why) => diag!("etch: {trigger} compaction skipped: {why}"),
        CompactionResult::Failed(why) => diag!("etch: {trigger} compaction failed: {why}"),
    }
}

/// Prints one line to stdout and flushes, ignoring a closed pipe (the reader
/// went away; the session log still has everything).
pub fn print_line(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Prints text from outside etch (a model's answer, a transcript, a
/// tool's output, a session title) for a person: escape sequences and
/// other control characters removed, newlines and tabs kept, on a
/// terminal and in a pipe alike (`--json` output goes through
/// [`print_line`] untouched instead).
pub fn print_prose(text: &str) {
    print_text(&etch_sanitize::sanitize(text));
}

/// [`print_prose`] for one line.
pub fn print_prose_line(line: &str) {
    print_line(&etch_sanitize::sanitize(line));
}

/// Writes one line to stderr with every control character but the line
/// breaks made visible (the `diag!` macro's body). A closed stderr is
/// ignored.
pub fn eprint_line(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", etch_sanitize::visible_lines(line));
}

/// Prints text to stdout as it is. A closed pipe (`etch show ID | head`)
/// ends the output quietly: `print!` would panic there.
pub fn print_text(text: &str) {
    print_bytes(text.as_bytes());
}

/// Writes bytes to stdout as they are (also an export asked for with `-o
/// -`: a file's contents, escaped for its format, not for a terminal).
pub fn print_bytes(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

/// The last line of `--json` output (G1).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultLine<'a> {
    /// Always `result`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Whether the run succeeded.
    pub ok: bool,
    /// Session id; null when the run failed before a session existed.
    pub session_id: Option<&'a str>,
    /// Session file path; null when the run failed before a session existed.
    pub session_path: Option<&'a str>,
    /// Final assistant text (empty on failure).
    pub text: &'a str,
    /// Failure message, or null.
    pub error: Option<&'a str>,
}

/// Prints the result line of a `--json` run that failed before it had a
/// session (no prompt, no credentials, a bad flag or URL), so that a script
/// reading stdout always gets one; the caller still reports the error on
/// stderr.
pub fn print_setup_failure(error: &str) {
    let line = ResultLine {
        kind: "result",
        ok: false,
        session_id: None,
        session_path: None,
        text: "",
        error: Some(error),
    };
    if let Ok(encoded) = serde_json::to_string(&line) {
        print_line(&encoded);
    }
}

/// A plain observer for `-p`: nothing live on stdout; compaction and
/// retry notices on stderr, and with `progress` (stderr is a terminal) one
/// line as each tool call starts and one as it ends, so a long run is not
/// a silent wait. A pipe gets none of those lines.
#[derive(Debug, Default)]
pub struct Quiet {
    /// Whether to show tool calls as they start and end.
    pub progress: bool,
    /// Names of the calls running, by call id.
    running: std::collections::HashMap<String, String>,
}

impl Quiet {
    /// A quiet observer; `progress` shows tool calls on stderr.
    pub fn new(progress: bool) -> Self {
        Self {
            progress,
            running: std::collections::HashMap::new(),
        }
    }

    /// The progress lines of a tool call starting or ending.
    fn progress(&mut self, event: &AgentEvent<'_>) {
        match event {
            AgentEvent::ToolExecutionStart { call } => {
                self.running.insert(call.id.clone(), call.name.clone());
                diag!("etch: › {}{}", call.name, call_summary(&call.arguments));
            }
            AgentEvent::ToolExecutionEnd {
                call_id,
                text,
                is_error,
                elapsed,
                ..
            } => {
                let name = self.running.remove(*call_id).unwrap_or_default();
                let seconds = elapsed.as_secs_f64();
                if *is_error {
                    let why = text.lines().next().unwrap_or("");
                    diag!("etch: ✗ {name} ({seconds:.1} s): {}", clip(why, 100));
                } else {
                    diag!("etch: ✓ {name} ({seconds:.1} s)");
                }
            }
            _ => {}
        }
    }
}

/// What a call is about, in a few words: its command, path or pattern
/// (the first string argument otherwise), led by a space; empty when it
/// has none.
fn call_summary(arguments: &serde_json::Value) -> String {
    let Some(object) = arguments.as_object() else {
        return String::new();
    };
    let text = ["command", "path", "pattern", "regex", "profile"]
        .iter()
        .find_map(|key| object.get(*key).and_then(serde_json::Value::as_str))
        .or_else(|| object.values().find_map(serde_json::Value::as_str));
    text.map_or_else(String::new, |t| {
        format!(" {}", clip(t.lines().next().unwrap_or(""), 80))
    })
}

/// `text` cut to `max` characters with `…`.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

impl Observer for Quiet {
    fn agent_event(&mut self, event: &AgentEvent<'_>) {
        notice(event);
        if self.progress {
            self.progress(event);
        }
    }

    fn durable_line(&mut self, line: &str) {
        if let Some(message) = etch_runtime::events::line_notice(line) {
            diag!("etch: warning: {message}");
        }
    }
}
