//! The result text of a `bash` call (G11, C16): stdout, a `--- stderr ---`
//! section, `(no output)`, the timeout clamp note and the final status line
//! (exit code, signal, timeout or abort).
//!
//! It must not know how the command ran or how its streams were captured
//! beyond what a [`StreamCapture`] reports.

use std::process::ExitStatus;

use super::capture::StreamCapture;

/// Status line (and whole error text when nothing ran) of a cancelled call.
pub(super) const ABORTED: &str = "Operation aborted";

/// The status line of a command killed at its timeout.
pub(super) fn timed_out(timeout_secs: u64) -> String {
    format!("Command timed out after {timeout_secs} seconds")
}

/// The final status line for a shell that exited on its own: nothing for
/// code 0.
pub(super) fn status_line(status: ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("Command exited with code {code}")),
        (None, Some(signal)) => Some(format!("Command terminated by signal {signal}")),
        (None, None) => Some("Command ended abnormally".to_string()),
    }
}

/// Builds result text from parts, with exactly one newline between them.
#[derive(Debug, Default)]
struct Text(String);

impl Text {
    /// Appends `part` on a new line; empty parts are skipped.
    fn part(&mut self, part: &str) {
        if part.is_empty() {
            return;
        }
        if !self.0.is_empty() && !self.0.ends_with('\n') {
            self.0.push('\n');
        }
        self.0.push_str(part);
    }
}

/// The result text (G11): stdout (after its truncation notice), then a
/// `--- stderr ---` section if stderr is non-empty, or `(no output)` when both
/// are empty and there is no status; then `note` and finally `status`.
pub(super) fn render(
    out: &StreamCapture,
    err: &StreamCapture,
    note: Option<&str>,
    status: Option<&str>,
) -> String {
    let mut text = Text::default();
    let (out_text, out_kept) = out.kept();
    if let Some(notice) = out.notice(out_kept) {
        text.part(&notice);
    }
    text.part(&out_text);
    let (err_text, err_kept) = err.kept();
    let err_notice = err.notice(err_kept);
    if !err_text.is_empty() || err_notice.is_some() {
        text.part("--- stderr ---");
        if let Some(notice) = err_notice {
            text.part(&notice);
        }
        text.part(&err_text);
    }
    if text.0.is_empty() && status.is_none() {
        text.part("(no output)");
    }
    if let Some(note) = note {
        text.part(note);
    }
    if let Some(status) = status {
        text.part(status);
    }
    text.0
}

#[cfg(test)]
mod tests {
    use crate::bash::testutil::ok;

    /// G11: no output and exit code 0 gives exactly `(no output)`.
    #[tokio::test]
    async fn no_output() {
        assert_eq!(ok("true").await, "(no output)");
    }

    /// G11: a non-zero exit is a success result ending in the exit-code line.
    #[tokio::test]
    async fn nonzero_exit_code_line() {
        assert_eq!(
            ok("echo out; exit 3").await,
            "out\nCommand exited with code 3"
        );
        assert_eq!(
            ok("printf out; exit 4").await,
            "out\nCommand exited with code 4"
        );
        assert_eq!(ok("exit 5").await, "Command exited with code 5");
    }

    /// G11: stderr follows stdout after a `--- stderr ---` line.
    #[tokio::test]
    async fn stderr_section() {
        assert_eq!(
            ok("echo out; echo err >&2").await,
            "out\n--- stderr ---\nerr\n"
        );
        assert_eq!(
            ok("echo oops >&2; exit 2").await,
            "--- stderr ---\noops\nCommand exited with code 2"
        );
    }

    /// G11: a shell killed by a signal says so.
    #[tokio::test]
    async fn killed_by_signal() {
        assert_eq!(ok("kill -KILL $$").await, "Command terminated by signal 9");
    }
}
