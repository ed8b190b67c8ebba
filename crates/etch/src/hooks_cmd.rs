//! `etch hooks list` and `etch hooks test EVENT` (and `etch hooks import`,
//! in `hooks_import`): the configured hooks
//! with where each comes from, and a dry run of the hooks an event would
//! run, with a sample envelope, showing what each answered, so a hook can
//! be debugged without a model or a session. Running hooks and reading
//! their answers is `etch_hooks`; this module only prints.

use std::fmt::Write as _;

use clap::Subcommand;
use etch_hooks::{HookEvent, Hooks, Outcome, envelope};
use etch_sanitize::visible;
use serde_json::{Value, json};

use crate::exit::{self, Failure};
use crate::run::Place;

/// `etch hooks` actions.
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// List the configured hooks in the order they run, with their source.
    List,
    /// Run the hooks EVENT would run, once, with a sample envelope, and
    /// show what each returned.
    Test {
        /// The event: SessionStart, UserPromptSubmit, TurnStart,
        /// TurnComplete, ContextBuild, PreToolUse, PostToolUse, PreCompact
        /// or PostCompact.
        #[arg(value_name = "EVENT")]
        event: String,
        /// What the matchers see: a tool name (PreToolUse, PostToolUse),
        /// new or resume (SessionStart), manual, auto or overflow
        /// (PreCompact, PostCompact). Default: bash, new or manual.
        #[arg(long, value_name = "SUBJECT")]
        subject: Option<String>,
    },
    /// Print the hooks of the project's Claude Code settings
    /// (.claude/settings.json, .claude/settings.local.json) as
    /// .etch/config.toml entries with protocol = "claude".
    Import {
        /// Append the entries .etch/config.toml does not have yet,
        /// instead of printing them.
        #[arg(long)]
        write: bool,
        /// Read this Claude Code settings file instead.
        #[arg(long, value_name = "FILE")]
        from: Option<std::path::PathBuf>,
    },
}

/// Runs an `etch hooks` action.
pub async fn run(place: &Place, command: HooksCommand) -> Result<(), Failure> {
    let hooks_of = |entries| Hooks::from_config(entries).map_err(|e| Failure::new(exit::FAILED, e));
    match command {
        HooksCommand::Import { write, from } => crate::hooks_import::run(place, from, write),
        HooksCommand::List => {
            let entries = &place.config.hooks;
            if entries.is_empty() {
                crate::output::print_line(
                    "no hooks configured; add [[hooks.PreToolUse]] (or another event) to ~/.etch/config.toml or .etch/config.toml",
                );
                return Ok(());
            }
            let home = place.home.as_deref();
            let store = home
                .and_then(|h| etch_config::trust::TrustStore::load(h).ok())
                .unwrap_or_default();
            let mut out = String::new();
            // Each project file's state once: it hashes the files its
            // commands name.
            let states: std::collections::HashMap<_, _> =
                crate::trust_cmd::project_files(&place.config, home)
                    .into_iter()
                    .map(|file| {
                        let state = store.state(&place.config, &file);
                        (file, state)
                    })
                    .collect();
            for entry in entries {
                let origin = match states.get(&entry.source) {
                    None => "user".to_owned(),
                    Some(state) => {
                        format!("project, {}", crate::trust_cmd::describe(*state))
                    }
                };
                let matcher = if entry.matcher.trim().is_empty() {
                    "*"
                } else {
                    entry.matcher.as_str()
                };
                let _ = writeln!(
                    out,
                    "{:<16} {:<14} {}{}\n                 {} · timeout {} s{} · {}",
                    entry.event,
                    visible(matcher),
                    visible(&entry.command),
                    if entry.disabled { "   (disabled)" } else { "" },
                    origin,
                    entry.timeout_seconds,
                    if entry.protocol == "claude" {
                        " · Claude Code protocol"
                    } else {
                        ""
                    },
                    visible(&entry.source.display().to_string())
                );
                if let Some(event) = HookEvent::parse(&entry.event)
                    && let Some(why) =
                        etch_hooks::claude::matcher_warning(event, &entry.protocol, &entry.matcher)
                {
                    let _ = writeln!(out, "                 warning: {}", visible(&why));
                }
            }
            crate::output::print_text(&out);
            Ok(())
        }
        HooksCommand::Test { event, subject } => {
            let Some(event) = HookEvent::parse(&event) else {
                return Err(Failure::usage(
                    etch_hooks::HookError::Event(event).to_string(),
                ));
            };
            let hooks = hooks_of(&place.config.hooks)?;
            let subject = subject.unwrap_or_else(|| default_subject(event).to_owned());
            let matching: Vec<_> = hooks.matching(event, &subject).collect();
            if matching.is_empty() {
                crate::output::print_line(&format!(
                    "no {event} hook matches \"{}\"",
                    visible(&subject)
                ));
                return Ok(());
            }
            let input = envelope(event, &place.cwd, sample_payload(event, &subject));
            let home = place.home.as_deref();
            let projects = crate::trust_cmd::project_files(&place.config, home);
            let store = home
                .and_then(|h| etch_config::trust::TrustStore::load(h).ok())
                .unwrap_or_default();
            let mut failed = false;
            for hook in matching {
                // Project hooks run only once trusted, here as in a run.
                if projects.contains(&hook.source) {
                    let state = store.state(&place.config, &hook.source);
                    if matches!(
                        state,
                        etch_config::trust::TrustState::Untrusted
                            | etch_config::trust::TrustState::Changed
                    ) {
                        failed = true;
                        crate::output::print_line(&format!(
                            "{}: not run, {}",
                            visible(&hook.command),
                            crate::trust_cmd::describe(state)
                        ));
                        continue;
                    }
                }
                let ran = etch_hooks::run(hook, &place.cwd, &input, &[]).await;
                let said = match &ran.outcome {
                    Outcome::Ok(fields) if fields.is_empty() => "ok (no output)".to_owned(),
                    Outcome::Ok(fields) => format!("ok: {}", Value::Object(fields.clone())),
                    Outcome::Blocked(Some(reason)) => format!("blocked: {reason}"),
                    Outcome::Blocked(None) => "blocked (no reason given)".to_owned(),
                    Outcome::Failed(why) => {
                        failed = true;
                        format!("failed: {why}")
                    }
                    Outcome::NonBlocking(why) => {
                        failed = true;
                        format!("failed (the action would go on): {why}")
                    }
                };
                crate::output::print_line(&format!(
                    "{} ({} ms): {}",
                    visible(&hook.command),
                    ran.elapsed.as_millis(),
                    visible(&said)
                ));
            }
            if failed {
                return Err(Failure::silent(exit::FAILED));
            }
            Ok(())
        }
    }
}

/// The subject a dry run matches when none is given.
fn default_subject(event: HookEvent) -> &'static str {
    match event {
        HookEvent::SessionStart => "new",
        HookEvent::PreCompact | HookEvent::PostCompact => "manual",
        HookEvent::SubagentStart | HookEvent::SubagentStop => "explore",
        _ => "bash",
    }
}

/// A payload of the event's shape (G5) with sample values.
fn sample_payload(event: HookEvent, subject: &str) -> Value {
    let mut payload = json!({"sessionPath": "/tmp/etch-hooks-test.jsonl", "sessionId": "01HOOKSTEST0000000000000000"});
    let tool = json!({"id": "call_1", "name": subject, "arguments": "{\"command\":\"ls\"}"});
    let extra = match event {
        HookEvent::SessionStart => json!({"reason": subject}),
        HookEvent::UserPromptSubmit => json!({"prompt": "a sample prompt"}),
        HookEvent::TurnStart => json!({"turn": 1, "prompt": "a sample prompt"}),
        HookEvent::TurnComplete => {
            json!({"turn": 1, "finalText": "a sample answer", "error": null})
        }
        HookEvent::ContextBuild => {
            json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "a sample prompt"}]}]})
        }
        HookEvent::PreToolUse => json!({"tool": tool}),
        HookEvent::PostToolUse => {
            json!({"tool": tool, "output": {"text": "sample output", "isError": false}})
        }
        HookEvent::PreCompact => {
            json!({"trigger": subject, "instructions": null, "tokensBefore": 12000})
        }
        HookEvent::PostCompact => json!({"trigger": subject, "summary": "a sample summary"}),
        HookEvent::SubagentStart => {
            json!({"profile": subject, "task": "a sample task", "childSessionId": "01HOOKSCHILD00000000000000", "toolCallId": "call_1"})
        }
        HookEvent::SubagentStop => {
            json!({"profile": subject, "task": "a sample task", "childSessionId": "01HOOKSCHILD00000000000000", "toolCallId": "call_1", "outcome": "ok", "detail": "a sample answer", "durationMs": 1200})
        }
    };
    if let (Value::Object(base), Value::Object(extra)) = (&mut payload, extra) {
        base.extend(extra);
    }
    payload
}
