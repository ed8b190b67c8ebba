//! Claude Code's hook wire format, so a hook script written for Claude
//! Code runs under etch unchanged (`protocol = "claude"`).
//!
//! Input: Claude Code's flat snake_case object (`session_id`,
//! `transcript_path`, `cwd`, `hook_event_name`, and per event `prompt`,
//! `tool_name` with `tool_input` as an object, `tool_response`, `source`,
//! `trigger`), with etch's tool and argument names mapped to Claude Code's
//! (`bash` is `Bash`, `path` is `file_path`, an edit is
//! `old_string`/`new_string`). Output: `decision`/`reason`,
//! `hookSpecificOutput` (`permissionDecision`, `updatedInput` mapped back
//! to etch's names, `additionalContext`), exit code 2 as a block where
//! Claude Code blocks, and other failures reported without stopping the
//! action, as Claude Code does. What the answer means is returned in
//! etch's own answer fields, so the caller handles both formats alike;
//! a field etch does not support is an error naming it, never dropped.
//!
//! This module must not know how hooks are run or where their answers go.

use serde_json::{Map, Value, json};

use crate::event::HookEvent;
use crate::outcome::{Outcome, exit_code};
use crate::process::Finished;

/// A hook's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// etch's envelope and answer fields (E-HOOK-02, G5).
    Etch,
    /// Claude Code's hook input and output.
    Claude,
}

impl Protocol {
    /// The protocol named `name` in configuration.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "" | "etch" => Some(Self::Etch),
            "claude" => Some(Self::Claude),
            _ => None,
        }
    }
}

/// etch's built-in tools and Claude Code's names for them.
const TOOLS: [(&str, &str); 7] = [
    ("bash", "Bash"),
    ("read", "Read"),
    ("write", "Write"),
    ("edit", "Edit"),
    ("grep", "Grep"),
    ("find", "Glob"),
    ("ls", "LS"),
];

/// A warning for a tool matcher that can match no built-in tool under its
/// protocol but would under the other one: `matcher = "bash"` on a
/// `protocol = "claude"` hook (Claude Code calls the tool `Bash`) silently
/// never runs. Names the likely intended matcher. `None` when the
/// matcher is fine, or matches no built-in under either protocol (it may
/// be meant for a plugin or MCP tool).
pub fn matcher_warning(event: HookEvent, protocol: &str, matcher: &str) -> Option<String> {
    if !matches!(event, HookEvent::PreToolUse | HookEvent::PostToolUse) {
        return None;
    }
    let compiled = crate::Matcher::new(matcher).ok()?;
    let claude = protocol == "claude";
    let theirs = |(etch, cc): &(&'static str, &'static str)| if claude { *cc } else { *etch };
    let other = |(etch, cc): &(&'static str, &'static str)| if claude { *etch } else { *cc };
    if TOOLS.iter().any(|t| compiled.matches(theirs(t)))
        || (claude && compiled.matches("MultiEdit"))
    {
        return None;
    }
    let meant: Vec<&str> = TOOLS
        .iter()
        .filter(|t| compiled.matches(other(t)))
        .map(theirs)
        .collect();
    if meant.is_empty() {
        return None;
    }
    let names: Vec<&str> = TOOLS.iter().map(theirs).collect();
    Some(format!(
        "matcher \"{matcher}\" matches no built-in tool of protocol = \"{protocol}\", which names them {}; did you mean \"{}\"?",
        names.join(", "),
        meant.join("|")
    ))
}

/// Claude Code's name for an etch event, for the events it has.
pub fn event_name(event: HookEvent) -> Option<&'static str> {
    match event {
        HookEvent::SessionStart => Some("SessionStart"),
        HookEvent::UserPromptSubmit => Some("UserPromptSubmit"),
        HookEvent::PreToolUse => Some("PreToolUse"),
        HookEvent::PostToolUse => Some("PostToolUse"),
        HookEvent::PreCompact => Some("PreCompact"),
        HookEvent::TurnComplete => Some("Stop"),
        // Claude Code's own subagent events carry other fields; etch's
        // are for etch hooks.
        HookEvent::TurnStart
        | HookEvent::ContextBuild
        | HookEvent::PostCompact
        | HookEvent::SubagentStart
        | HookEvent::SubagentStop => None,
    }
}

/// The etch event for a Claude Code event name, for those etch has.
pub fn event_from_name(name: &str) -> Option<HookEvent> {
    HookEvent::ALL
        .into_iter()
        .find(|e| event_name(*e) == Some(name))
}

/// Claude Code's name for an etch tool (other tools keep their names).
pub fn tool_to_claude(name: &str) -> &str {
    TOOLS
        .iter()
        .find(|(etch, _)| *etch == name)
        .map_or(name, |(_, claude)| claude)
}

/// What a Claude Code matcher may match: the Claude Code tool name (an
/// edit is `Edit` or, with several replacements, `MultiEdit`, so either
/// matches), `startup` or `resume`, `manual` or `auto`.
pub fn subjects(event: HookEvent, subject: &str) -> Vec<String> {
    let one = self::subject(event, subject);
    if one == "Edit" {
        vec![one, "MultiEdit".to_owned()]
    } else {
        vec![one]
    }
}

/// The Claude Code name of a subject: the tool name, `startup` or
/// `resume`, `manual` or `auto`.
pub fn subject(event: HookEvent, subject: &str) -> String {
    match (event, subject) {
        (HookEvent::PreToolUse | HookEvent::PostToolUse, tool) => tool_to_claude(tool).to_owned(),
        (HookEvent::SessionStart, "new") => "startup".to_owned(),
        (HookEvent::PreCompact, "overflow") => "auto".to_owned(),
        (_, other) => other.to_owned(),
    }
}

/// Renames the keys of `object` by `pairs` (from, to); other keys stay.
fn renamed(object: &Map<String, Value>, pairs: &[(&str, &str)]) -> Map<String, Value> {
    object
        .iter()
        .map(|(key, value)| {
            let key = pairs
                .iter()
                .find(|(from, _)| from == key)
                .map_or(key.as_str(), |(_, to)| to);
            (key.to_owned(), value.clone())
        })
        .collect()
}

/// Argument names per tool, etch's then Claude Code's.
fn argument_names(tool: &str) -> &'static [(&'static str, &'static str)] {
    match tool {
        "read" | "write" | "edit" => &[("path", "file_path")],
        "grep" => &[
            ("ignoreCase", "-i"),
            ("context", "-C"),
            ("limit", "head_limit"),
        ],
        _ => &[],
    }
}

/// A tool call's arguments in Claude Code's shape: its argument names, a
/// single edit as `old_string`/`new_string`, bash's timeout in ms.
pub fn arguments_to_claude(tool: &str, arguments: &Value) -> Value {
    let Some(object) = arguments.as_object() else {
        return json!({});
    };
    let mut out = renamed(object, argument_names(tool));
    match tool {
        "bash" => {
            if let Some(seconds) = out.get("timeout").and_then(Value::as_u64) {
                out.insert("timeout".into(), json!(seconds.saturating_mul(1000)));
            }
        }
        "edit" => {
            // The schema also takes the edits as JSON text; a hook sees
            // them as the list they are.
            if let Some(Value::String(text)) = out.get("edits")
                && let Ok(list @ Value::Array(_)) = serde_json::from_str::<Value>(text)
            {
                out.insert("edits".into(), list);
            }
            let single = match out.get("edits") {
                Some(Value::Array(edits)) if edits.len() == 1 => edits.first().cloned(),
                _ => None,
            };
            let legacy = out.remove("oldText").zip(out.remove("newText"));
            if let Some((old, new)) = legacy {
                out.insert("old_string".into(), old);
                out.insert("new_string".into(), new);
            } else if let Some(edit) = single {
                out.remove("edits");
                out.insert("old_string".into(), edit["oldText"].clone());
                out.insert("new_string".into(), edit["newText"].clone());
            } else if let Some(Value::Array(edits)) = out.get_mut("edits") {
                for edit in edits.iter_mut() {
                    if let Value::Object(fields) = edit {
                        *fields = renamed(
                            fields,
                            &[("oldText", "old_string"), ("newText", "new_string")],
                        );
                    }
                }
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// Claude Code-shaped arguments back in etch's shape (the inverse of
/// [`arguments_to_claude`]).
pub fn arguments_from_claude(tool: &str, input: &Map<String, Value>) -> Value {
    let names: Vec<(&str, &str)> = argument_names(tool).iter().map(|(e, c)| (*c, *e)).collect();
    let mut out = renamed(input, &names);
    match tool {
        "bash" => {
            if let Some(ms) = out.get("timeout").and_then(Value::as_u64) {
                out.insert("timeout".into(), json!(ms.div_ceil(1000).max(1)));
            }
            // Claude Code's description of the command has no etch meaning.
            out.remove("description");
        }
        "edit" => {
            if let Some((old, new)) = out.remove("old_string").zip(out.remove("new_string")) {
                out.insert("edits".into(), json!([{ "oldText": old, "newText": new }]));
            } else if let Some(Value::Array(edits)) = out.get_mut("edits") {
                for edit in edits.iter_mut() {
                    if let Value::Object(fields) = edit {
                        *fields = renamed(
                            fields,
                            &[("old_string", "oldText"), ("new_string", "newText")],
                        );
                    }
                }
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// Claude Code's input for the hook whose etch envelope is `envelope`.
pub fn input(envelope: &Value) -> Value {
    let payload = &envelope["payload"];
    let event = envelope["event"]
        .as_str()
        .and_then(HookEvent::parse)
        .unwrap_or(HookEvent::PreToolUse);
    let mut out = json!({
        "session_id": payload["sessionId"],
        "transcript_path": payload["sessionPath"],
        "cwd": envelope["cwd"],
        "hook_event_name": event_name(event).unwrap_or(event.name()),
        // etch asks for no approvals: every call runs unless a hook says no.
        "permission_mode": "bypassPermissions",
    });
    let fields = match event {
        HookEvent::UserPromptSubmit => json!({ "prompt": payload["prompt"] }),
        HookEvent::SessionStart => {
            json!({ "source": subject(event, payload["reason"].as_str().unwrap_or("new")) })
        }
        HookEvent::PreCompact => json!({
            "trigger": subject(event, payload["trigger"].as_str().unwrap_or("manual")),
            "custom_instructions": payload["instructions"].as_str().unwrap_or(""),
        }),
        HookEvent::TurnComplete => json!({ "stop_hook_active": false }),
        HookEvent::PreToolUse | HookEvent::PostToolUse => {
            let tool = payload["tool"]["name"].as_str().unwrap_or("");
            let arguments = payload["tool"]["arguments"]
                .as_str()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .unwrap_or_else(|| json!({}));
            let input = arguments_to_claude(tool, &arguments);
            // Several replacements are Claude Code's MultiEdit.
            let name = if tool == "edit" && input.get("edits").is_some() {
                "MultiEdit"
            } else {
                tool_to_claude(tool)
            };
            let mut fields = json!({
                "tool_name": name,
                "tool_input": input,
                "tool_use_id": payload["tool"]["id"],
            });
            if event == HookEvent::PostToolUse {
                let text = &payload["output"]["text"];
                let mut response =
                    json!({ "output": text, "is_error": payload["output"]["isError"] });
                if tool == "bash" {
                    response["stdout"] = text.clone();
                    response["stderr"] = json!("");
                    response["interrupted"] = json!(false);
                }
                fields["tool_response"] = response;
            }
            fields
        }
        HookEvent::TurnStart
        | HookEvent::ContextBuild
        | HookEvent::PostCompact
        | HookEvent::SubagentStart
        | HookEvent::SubagentStop => json!({}),
    };
    if let (Value::Object(out), Value::Object(fields)) = (&mut out, fields) {
        out.extend(fields);
    }
    out
}

/// The `hookSpecificOutput` fields each event understands.
fn specific_fields(event: HookEvent) -> &'static [&'static str] {
    match event {
        HookEvent::PreToolUse => &[
            "hookEventName",
            "permissionDecision",
            "permissionDecisionReason",
            "updatedInput",
        ],
        HookEvent::UserPromptSubmit | HookEvent::SessionStart | HookEvent::PostToolUse => {
            &["hookEventName", "additionalContext"]
        }
        _ => &["hookEventName"],
    }
}

/// Reads what a Claude Code hook answered for the etch envelope
/// `envelope`, as etch's answer fields (see the module docs).
pub fn interpret(
    event: HookEvent,
    finished: &Finished,
    timeout_seconds: u64,
    envelope: &Value,
) -> Outcome {
    let stderr = finished.stderr.trim();
    let code = match exit_code(event, finished, timeout_seconds) {
        Ok(code) => code,
        Err(outcome) => return outcome,
    };
    if code == 2 && event == HookEvent::PostToolUse {
        // Claude Code shows the model this stderr beside the result.
        let text = envelope["payload"]["output"]["text"].as_str().unwrap_or("");
        let mut fields = Map::new();
        fields.insert("output".into(), json!(appended(text, stderr)));
        return Outcome::Ok(fields);
    }
    if code != 0 {
        // Claude Code reports such a failure and goes on; so does etch.
        let mut why = format!(
            "exited with code {code}; a Claude Code hook's failure does not stop the action"
        );
        if let Some(line) = stderr.lines().rev().find(|l| !l.trim().is_empty()) {
            why = format!("{why}: {}", line.trim());
        }
        return Outcome::NonBlocking(why);
    }
    let stdout = String::from_utf8_lossy(&finished.stdout);
    let text = stdout.trim();
    if text.is_empty() {
        return Outcome::Ok(Map::new());
    }
    let context_events = matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart);
    let fields = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(fields)) => fields,
        // Claude Code adds plain stdout to the context for these two, and
        // only shows it in its transcript for the others.
        _ if context_events => return answer(event, envelope, Answer::context(text)),
        _ => return Outcome::Ok(Map::new()),
    };
    match read(event, fields) {
        Ok(read) => answer(event, envelope, read),
        Err(why) => Outcome::Failed(why),
    }
}

/// What a Claude Code answer said, before it is put in etch's terms.
#[derive(Debug, Default)]
struct Answer {
    /// `decision`.
    decision: Option<String>,
    /// `reason`.
    reason: Option<String>,
    /// `hookSpecificOutput.permissionDecision`.
    permission: Option<String>,
    /// `hookSpecificOutput.permissionDecisionReason`.
    permission_reason: Option<String>,
    /// `hookSpecificOutput.updatedInput`.
    updated_input: Option<Map<String, Value>>,
    /// `hookSpecificOutput.additionalContext` (or plain stdout).
    context: Option<String>,
}

impl Answer {
    /// Plain text for the context.
    fn context(text: &str) -> Self {
        Self {
            context: Some(text.to_owned()),
            ..Self::default()
        }
    }
}

/// Checks and reads the fields of a Claude Code answer.
fn read(event: HookEvent, mut fields: Map<String, Value>) -> Result<Answer, String> {
    let string = |value: Value, name: &str| -> Result<String, String> {
        match value {
            Value::String(text) => Ok(text),
            other => Err(format!(
                "returned `{name}` as {other}, but it must be a string"
            )),
        }
    };
    let mut read = Answer::default();
    if let Some(value) = fields.remove("decision") {
        read.decision = Some(string(value, "decision")?);
    }
    if let Some(value) = fields.remove("reason") {
        read.reason = Some(string(value, "reason")?);
    }
    if let Some(value) = fields.remove("hookSpecificOutput") {
        let Value::Object(mut specific) = value else {
            return Err("returned `hookSpecificOutput` that is not an object".to_owned());
        };
        if let Some(name) = specific
            .keys()
            .find(|k| !specific_fields(event).contains(&k.as_str()))
        {
            return Err(format!(
                "returned `hookSpecificOutput.{name}`, which etch does not support for {} hooks; it supports: {}",
                event_name(event).unwrap_or(event.name()),
                specific_fields(event).join(", ")
            ));
        }
        if let Some(value) = specific.remove("permissionDecision") {
            read.permission = Some(string(value, "permissionDecision")?);
        }
        if let Some(value) = specific.remove("permissionDecisionReason") {
            read.permission_reason = Some(string(value, "permissionDecisionReason")?);
        }
        if let Some(value) = specific.remove("additionalContext") {
            read.context = Some(string(value, "additionalContext")?);
        }
        match specific.remove("updatedInput") {
            None => {}
            Some(Value::Object(input)) => read.updated_input = Some(input),
            Some(_) => return Err("returned `updatedInput` that is not an object".to_owned()),
        }
    }
    if let Some(name) = fields.keys().next() {
        return Err(format!(
            "returned the field `{name}`, which etch does not support for Claude Code hooks; it supports decision, reason and hookSpecificOutput"
        ));
    }
    Ok(read)
}

/// Puts a Claude Code answer in etch's terms for the hook's event.
fn answer(event: HookEvent, envelope: &Value, read: Answer) -> Outcome {
    let payload = &envelope["payload"];
    let reason = read.reason.clone().filter(|r| !r.trim().is_empty());
    let mut out = Map::new();
    match (event, read.decision.as_deref()) {
        (_, None | Some("approve" | "allow")) => {}
        (HookEvent::PreToolUse | HookEvent::UserPromptSubmit, Some("block" | "deny")) => {
            return Outcome::Blocked(reason);
        }
        (HookEvent::PostToolUse, Some("block")) => {
            let text = payload["output"]["text"].as_str().unwrap_or("");
            out.insert(
                "output".into(),
                json!(appended(text, reason.as_deref().unwrap_or(""))),
            );
        }
        (_, Some(other)) => {
            return Outcome::Failed(format!(
                "returned decision `{other}`, which etch does not support for {} hooks",
                event_name(event).unwrap_or(event.name())
            ));
        }
    }
    match read.permission.as_deref() {
        None | Some("allow") => {}
        Some("deny") => {
            return Outcome::Blocked(read.permission_reason.filter(|r| !r.trim().is_empty()));
        }
        // `defer` hands the decision to the user as `ask` does.
        Some("ask" | "defer") => {
            let why = read.permission_reason.unwrap_or_default();
            return Outcome::Blocked(Some(format!(
                "a hook asked for the user's approval, which etch does not ask for; the call was not run{}",
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                }
            )));
        }
        Some(other) => {
            return Outcome::Failed(format!(
                "returned permissionDecision `{other}`; it must be allow, deny, ask or defer"
            ));
        }
    }
    if let Some(updated) = read.updated_input {
        let tool = payload["tool"]["name"].as_str().unwrap_or("");
        let mut merged = payload["tool"]["arguments"]
            .as_str()
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .map(|args| arguments_to_claude(tool, &args))
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        merged.extend(updated);
        out.insert(
            "arguments".into(),
            json!(arguments_from_claude(tool, &merged).to_string()),
        );
    }
    if let Some(context) = read.context.filter(|c| !c.trim().is_empty()) {
        match event {
            HookEvent::UserPromptSubmit => {
                let prompt = payload["prompt"].as_str().unwrap_or("");
                out.insert("prompt".into(), json!(appended(prompt, &context)));
            }
            HookEvent::PostToolUse => {
                let text = out.get("output").and_then(Value::as_str).map_or_else(
                    || payload["output"]["text"].as_str().unwrap_or("").to_owned(),
                    str::to_owned,
                );
                out.insert("output".into(), json!(appended(&text, &context)));
            }
            _ => {
                out.insert("additionalContext".into(), json!(context));
            }
        }
    }
    Outcome::Ok(out)
}

/// `text`, a blank line, then `more` (or `text` alone when `more` is
/// empty).
fn appended(text: &str, more: &str) -> String {
    if more.trim().is_empty() {
        text.to_owned()
    } else if text.is_empty() {
        more.to_owned()
    } else {
        format!("{text}\n\n{more}")
    }
}

#[cfg(test)]
mod tests;
