//! What a finished hook means for its event (E-HOOK-07, -08, -15, -16,
//! C12, G5, G6 in docs/requirements.md): success with the fields it
//! returned, a block with its reason, or a failure saying why. Stdout
//! must be empty or one JSON object whose fields the event accepts, each
//! of the right type; a field etch does not know is an error naming it,
//! never silently dropped. Stderr is diagnostics, except after exit code
//! 2 where that blocks. This module must not know what the fields do.

use serde_json::{Map, Value};

use crate::event::HookEvent;
use crate::process::{Exit, Finished, MAX_STDOUT};

/// The meaning of one hook run.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It succeeded; the fields it returned (none when it printed
    /// nothing).
    Ok(Map<String, Value>),
    /// It blocked the operation; the reason, when it gave one.
    Blocked(Option<String>),
    /// It failed; why, in words for the user.
    Failed(String),
    /// It failed in a way that does not stop the action (a Claude Code
    /// hook's non-zero exit, which Claude Code reports and goes on past);
    /// why.
    NonBlocking(String),
}

/// The exit code of a hook that ran to its end, or what it already
/// means: the failure of one that did not (timed out, flooded stdout,
/// killed by a signal), or the block of exit code 2 where that blocks
/// (C12), with the trimmed stderr as the reason.
pub(crate) fn exit_code(
    event: HookEvent,
    finished: &Finished,
    timeout_seconds: u64,
) -> Result<i32, Outcome> {
    let stderr = finished.stderr.trim();
    match finished.exit {
        Exit::Code(2) if event.exit_2_blocks() => Err(Outcome::Blocked(
            (!stderr.is_empty()).then(|| stderr.to_owned()),
        )),
        Exit::TimedOut => Err(Outcome::Failed(format!(
            "timed out after {timeout_seconds} s and was killed with its process group (raise timeout_seconds if it needs longer)"
        ))),
        Exit::Overflowed => Err(Outcome::Failed(format!(
            "printed more than {} MiB on stdout and was killed; a hook prints one JSON object",
            MAX_STDOUT >> 20
        ))),
        Exit::Signal(signal) => Err(Outcome::Failed(format!("was killed by signal {signal}"))),
        Exit::Code(code) => Ok(code),
    }
}

/// Interprets `finished` for `event`; `timeout_seconds` is named when it
/// timed out.
pub fn interpret(event: HookEvent, finished: &Finished, timeout_seconds: u64) -> Outcome {
    let stderr = finished.stderr.trim();
    let code = match exit_code(event, finished, timeout_seconds) {
        Ok(code) => code,
        Err(outcome) => return outcome,
    };
    if code != 0 {
        let why = match code {
            127 => "the command was not found (exit 127)".to_owned(),
            126 => "the command is not executable (exit 126)".to_owned(),
            2 => format!(
                "exited with code 2, which blocks only PreToolUse and UserPromptSubmit; for {event} it is a failure"
            ),
            code => format!("exited with code {code}"),
        };
        return Outcome::Failed(with_stderr(why, stderr));
    }
    let stdout = String::from_utf8_lossy(&finished.stdout);
    let text = stdout.trim();
    if text.is_empty() {
        return Outcome::Ok(Map::new());
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            let shown: String = text.chars().take(120).collect();
            return Outcome::Failed(format!(
                "printed output that is not JSON ({err}): {shown:?}; a hook prints nothing or one JSON object"
            ));
        }
    };
    let Value::Object(fields) = value else {
        return Outcome::Failed(format!(
            "printed JSON that is not an object ({}); a hook prints nothing or one JSON object",
            kind(&value)
        ));
    };
    if let Err(why) = check_fields(event, &fields) {
        return Outcome::Failed(why);
    }
    let blocked = fields.get("block").and_then(Value::as_bool) == Some(true);
    if blocked {
        let reason = fields
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        return Outcome::Blocked(reason.filter(|r| !r.trim().is_empty()));
    }
    Outcome::Ok(fields)
}

/// Every field is one `event` accepts, with the type it takes.
fn check_fields(event: HookEvent, fields: &Map<String, Value>) -> Result<(), String> {
    let accepted = event.output_fields();
    for (name, value) in fields {
        if !accepted.contains(&name.as_str()) {
            return Err(if accepted.is_empty() {
                format!(
                    "returned the field `{name}`, but {event} hooks return nothing (their output is ignored); print nothing"
                )
            } else {
                format!(
                    "returned the field `{name}`, which {event} hooks do not have; they may return: {}",
                    accepted.join(", ")
                )
            });
        }
        let ok = match name.as_str() {
            "block" | "cancel" => value.is_boolean(),
            "messages" => value.is_array(),
            _ => value.is_string(),
        };
        if !ok {
            let wanted = match name.as_str() {
                "block" | "cancel" => "true or false",
                "messages" => "an array of messages",
                "arguments" => "a string holding the arguments as JSON",
                _ => "a string",
            };
            return Err(format!(
                "returned `{name}` as {}, but it must be {wanted}",
                kind(value)
            ));
        }
    }
    Ok(())
}

/// What kind of JSON value `value` is, in words.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `why`, with the last line of stderr when there is one.
fn with_stderr(why: String, stderr: &str) -> String {
    match stderr.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(line) => format!("{why}: {}", line.trim()),
        None => why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn done(exit: Exit, stdout: &str, stderr: &str) -> Finished {
        Finished {
            exit,
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.to_owned(),
            elapsed: Duration::ZERO,
        }
    }

    fn failed(outcome: Outcome) -> String {
        match outcome {
            Outcome::Failed(why) => why,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn outputs_are_read_per_event() {
        let pre = HookEvent::PreToolUse;
        assert_eq!(
            interpret(pre, &done(Exit::Code(0), "", ""), 30),
            Outcome::Ok(Map::new())
        );
        let rewrite = interpret(
            pre,
            &done(Exit::Code(0), r#"{"arguments":"{\"path\":\"a\"}"}"#, ""),
            30,
        );
        assert!(matches!(rewrite, Outcome::Ok(f) if f["arguments"] == "{\"path\":\"a\"}"));
        assert_eq!(
            interpret(
                pre,
                &done(Exit::Code(0), r#"{"block":true,"reason":"no .env"}"#, ""),
                30
            ),
            Outcome::Blocked(Some("no .env".into()))
        );
        assert_eq!(
            interpret(pre, &done(Exit::Code(0), r#"{"block":true}"#, ""), 30),
            Outcome::Blocked(None)
        );
        assert_eq!(
            interpret(
                pre,
                &done(Exit::Code(2), "", "  writes to .env are blocked\n"),
                30
            ),
            Outcome::Blocked(Some("writes to .env are blocked".into()))
        );
    }

    /// Each bad output says what was wrong.
    #[test]
    fn bad_outputs_fail_with_the_reason() {
        let post = HookEvent::PostToolUse;
        assert!(
            failed(interpret(post, &done(Exit::Code(2), "", "x"), 30))
                .contains("blocks only PreToolUse")
        );
        assert!(
            failed(interpret(post, &done(Exit::Code(1), "", "boom\n"), 30))
                .ends_with("exited with code 1: boom")
        );
        assert!(failed(interpret(post, &done(Exit::Code(127), "", ""), 30)).contains("not found"));
        assert!(
            failed(interpret(post, &done(Exit::Code(0), "hello", ""), 30)).contains("not JSON")
        );
        assert!(
            failed(interpret(post, &done(Exit::Code(0), "[1,2]", ""), 30))
                .contains("not an object (an array)")
        );
        let unknown = failed(interpret(
            post,
            &done(Exit::Code(0), r#"{"decision":"block"}"#, ""),
            30,
        ));
        assert!(
            unknown.contains("`decision`") && unknown.contains("may return: output"),
            "{unknown}"
        );
        let typed = failed(interpret(
            post,
            &done(Exit::Code(0), r#"{"output":5}"#, ""),
            30,
        ));
        assert!(typed.contains("`output` as a number"), "{typed}");
        let ignored = failed(interpret(
            HookEvent::TurnStart,
            &done(Exit::Code(0), r#"{"x":1}"#, ""),
            30,
        ));
        assert!(ignored.contains("print nothing"), "{ignored}");
        assert!(failed(interpret(post, &done(Exit::TimedOut, "", ""), 7)).contains("after 7 s"));
        assert!(failed(interpret(post, &done(Exit::Overflowed, "", ""), 7)).contains("4 MiB"));
    }
}
