//! The loop's guard against going in circles, which small local models do
//! (the same `grep` with the same empty result fifteen times): it watches
//! each tool call and its result in the model's order, within one run.
//!
//! - **Repetition**: a call identical to an earlier one of this run (same
//!   tool, same arguments once the JSON is normalized, so whitespace and
//!   key order do not matter) that gets the same result is a repeat. Each
//!   repeat's result gets a note saying how often the call was made and
//!   that repeating it will not change it; when repeats come in a row
//!   (alternating A, B, A, B counts too) until `max_identical_calls`
//!   identical calls, the run stops. A call whose result changed (a file
//!   being written, a poll that moves on) is not a repeat.
//! - **Failures**: after `tool_error_note_after` failed results in a row
//!   the model is told to change approach; at `max_tool_errors` the run
//!   stops.
//!
//! What the guard says goes into the result text (so the log has it) and
//! into a `loop.guard` record the loop appends. This module decides; it
//! must not know about the log, the provider or how anything is shown.

use std::collections::HashMap;
use std::fmt::Write as _;

use etch_model::ToolCall;

use crate::exec::CallResult;

/// The guard's limits; 0 turns a limit off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardSettings {
    /// Identical calls with the same result in a row that stop the run.
    pub max_identical_calls: u32,
    /// Failed results in a row after which the model gets a note.
    pub tool_error_note_after: u32,
    /// Failed results in a row that stop the run.
    pub max_tool_errors: u32,
}

impl Default for GuardSettings {
    fn default() -> Self {
        Self {
            max_identical_calls: 5,
            tool_error_note_after: 5,
            max_tool_errors: 10,
        }
    }
}

/// What the guard saw in one result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What kind of circle.
    pub kind: FindingKind,
    /// Whether the run must stop (else the model got a note).
    pub stop: bool,
    /// Identical calls, or failed results, in a row so far.
    pub count: u32,
}

/// The two circles the guard knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingKind {
    /// The same call with the same result again.
    Repeat,
    /// Failed tool results in a row.
    Errors,
}

impl FindingKind {
    /// The `kind` recorded in `loop.guard`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Repeat => "repeat",
            Self::Errors => "errors",
        }
    }
}

/// The guard's memory of one run.
#[derive(Debug, Default)]
pub(crate) struct Guard {
    /// The limits.
    settings: GuardSettings,
    /// Each distinct call so far: its last result and how many times in
    /// all it was made with that result.
    seen: HashMap<String, (String, u32)>,
    /// Repeats in a row (calls that repeated an earlier call and result).
    repeats_in_row: u32,
    /// Failed results in a row.
    errors_in_row: u32,
}

impl Guard {
    /// A guard with `settings`.
    pub(crate) fn new(settings: GuardSettings) -> Self {
        Self {
            settings,
            ..Self::default()
        }
    }

    /// Looks at one call and its result, in the model's order, adding a
    /// note to the result text when there is something to say. Returns
    /// what it found; a finding with `stop` ends the run once the batch's
    /// results are in the log.
    pub(crate) fn check(&mut self, call: &ToolCall, result: &mut CallResult) -> Vec<Finding> {
        let mut findings = Vec::new();
        let key = format!("{}\u{0}{}", call.name, canonical(&call.arguments));
        let times = match self.seen.get_mut(&key) {
            Some((text, times)) if *text == result.text => {
                *times += 1;
                *times
            }
            _ => {
                self.seen.insert(key, (result.text.clone(), 1));
                1
            }
        };
        self.repeats_in_row = if times > 1 {
            self.repeats_in_row + 1
        } else {
            0
        };
        self.errors_in_row = if result.is_error {
            self.errors_in_row + 1
        } else {
            0
        };
        let identical = self.repeats_in_row + 1;
        let max_identical = self.settings.max_identical_calls;
        if times > 1 && max_identical > 0 {
            let stop = identical >= max_identical;
            if !stop {
                let _ = write!(
                    result.text,
                    "\n\n[etch: this exact call was made {times} times in this run and returned the same result each time; \
                     making it again will not change it. Use what it returned, or try another tool or other arguments.]"
                );
            }
            findings.push(Finding {
                kind: FindingKind::Repeat,
                stop,
                count: identical,
            });
        }
        let errors = self.errors_in_row;
        let (note_after, max_errors) = (
            self.settings.tool_error_note_after,
            self.settings.max_tool_errors,
        );
        if max_errors > 0 && errors >= max_errors {
            findings.push(Finding {
                kind: FindingKind::Errors,
                stop: true,
                count: errors,
            });
        } else if note_after > 0 && errors == note_after {
            let _ = write!(
                result.text,
                "\n\n[etch: the last {errors} tool calls failed in a row. Stop and change approach: read the errors, \
                 check paths with ls or find, fix the arguments, or answer with what you know.]"
            );
            findings.push(Finding {
                kind: FindingKind::Errors,
                stop: false,
                count: errors,
            });
        }
        findings
    }
}

/// `value` as JSON text with every object's keys sorted, so two calls
/// that differ only in key order are the same call (the arguments keep
/// the model's order, which JSON objects here preserve).
fn canonical(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A call.
    fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments,
        }
    }

    /// A result.
    fn result(text: &str, is_error: bool) -> CallResult {
        CallResult {
            text: text.into(),
            is_error,
            details: None,
            hooks: Vec::new(),
            copy_of: None,
            records: Vec::new(),
            images: Vec::new(),
        }
    }

    /// Checks `call` with result `text`; returns (findings, text seen).
    fn check(guard: &mut Guard, call: &ToolCall, text: &str) -> (Vec<Finding>, String) {
        let mut r = result(text, false);
        let findings = guard.check(call, &mut r);
        (findings, r.text)
    }

    /// Five identical calls: notes on the second to fourth, a stop at the
    /// fifth; key order and whitespace of the arguments do not matter.
    #[test]
    fn identical_calls_get_notes_then_stop() {
        let mut guard = Guard::new(GuardSettings::default());
        let a: serde_json::Value = serde_json::from_str(r#"{"pattern":"x","path":"."}"#).unwrap();
        let b: serde_json::Value =
            serde_json::from_str("{ \"path\" : \".\",\n \"pattern\": \"x\" }").unwrap();
        let (first, text) = check(&mut guard, &call("grep", a.clone()), "No matches found");
        assert!(first.is_empty());
        assert_eq!(text, "No matches found");
        for n in 2..=4 {
            let (found, text) = check(&mut guard, &call("grep", b.clone()), "No matches found");
            assert_eq!(found.len(), 1);
            assert!(!found[0].stop);
            assert!(text.contains(&format!("made {n} times")), "{text}");
        }
        let (found, _) = check(&mut guard, &call("grep", a), "No matches found");
        assert_eq!(
            found,
            [Finding {
                kind: FindingKind::Repeat,
                stop: true,
                count: 5
            }]
        );
    }

    /// A, B, A, B, ... is a loop too: the repeats come in a row.
    #[test]
    fn alternating_calls_are_a_loop() {
        let mut guard = Guard::new(GuardSettings::default());
        let a = call("read", json!({"path": "a"}));
        let b = call("read", json!({"path": "b"}));
        let mut stopped = None;
        for (i, c) in [&a, &b, &a, &b, &a, &b].into_iter().enumerate() {
            let (found, _) = check(&mut guard, c, "same");
            if found.iter().any(|f| f.stop) {
                stopped = Some(i);
                break;
            }
        }
        assert_eq!(stopped, Some(5));
    }

    /// A repeated call whose result changes (a file being written, a
    /// poll that moves on) is not a repeat; a different call in between
    /// breaks the row.
    #[test]
    fn changing_results_and_other_calls_are_not_loops() {
        let mut guard = Guard::new(GuardSettings::default());
        let poll = call("bash", json!({"command": "cat status"}));
        for n in 0..10 {
            let (found, text) = check(&mut guard, &poll, &format!("progress {n}"));
            assert!(found.is_empty());
            assert!(!text.contains("[etch:"));
        }
        let same = call("ls", json!({}));
        let other = call("read", json!({"path": "x"}));
        for n in 0..8 {
            let (found, _) = check(&mut guard, &same, "a b");
            assert!(found.iter().all(|f| !f.stop), "round {n}");
            let _ = check(&mut guard, &other, &format!("fresh {n}"));
        }
    }

    /// A note at the fifth failure in a row, a stop at the tenth; a success
    /// resets the count; 0 turns a limit off.
    #[test]
    fn failures_in_a_row() {
        let mut guard = Guard::new(GuardSettings::default());
        let fail = |guard: &mut Guard, n: u32| {
            let mut r = result("tool error: nope", true);
            let found = guard.check(&call("read", json!({"path": format!("f{n}")})), &mut r);
            (found, r.text)
        };
        for n in 1..=4 {
            assert!(fail(&mut guard, n).0.is_empty());
        }
        let (found, text) = fail(&mut guard, 5);
        assert_eq!(found[0].kind, FindingKind::Errors);
        assert!(!found[0].stop);
        assert!(text.contains("last 5 tool calls failed"), "{text}");
        for n in 6..=9 {
            assert!(fail(&mut guard, n).0.is_empty());
        }
        let (found, _) = fail(&mut guard, 10);
        assert!(found[0].stop);
        let mut ok = result("fine", false);
        guard.check(&call("ls", json!({})), &mut ok);
        assert!(fail(&mut guard, 11).0.is_empty());

        let mut off = Guard::new(GuardSettings {
            max_identical_calls: 0,
            tool_error_note_after: 0,
            max_tool_errors: 0,
        });
        for n in 0..20 {
            let mut r = result("tool error: same", true);
            let found = off.check(&call("read", json!({"path": "same"})), &mut r);
            assert!(found.iter().all(|f| !f.stop), "{n}");
        }
    }
}
