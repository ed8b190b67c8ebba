//! The configured hooks, compiled: per event, in order (user hooks, then
//! project hooks, each in file order: E-HOOK-04), with anchored matchers;
//! disabled entries left out. Running one hook: the envelope of
//! E-HOOK-02 in, its [`Outcome`] out. What a chain of hooks does to the
//! value it transforms is for the caller, which knows the value.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use etch_config::HookEntry;
use serde_json::{Value, json};

use crate::claude::{self, Protocol};
use crate::error::HookError;
use crate::event::HookEvent;
use crate::matcher::Matcher;
use crate::outcome::{Outcome, interpret};
use crate::process;

/// One hook, ready to run.
#[derive(Debug, Clone)]
pub struct Hook {
    /// Its event.
    pub event: HookEvent,
    /// What it matches.
    pub matcher: Matcher,
    /// The shell command.
    pub command: String,
    /// How long it may run.
    pub timeout_seconds: u64,
    /// Its wire format.
    pub protocol: Protocol,
    /// The file that declared it.
    pub source: PathBuf,
}

impl Hook {
    /// Whether it runs for `subject` (a Claude Code hook's matcher is
    /// matched against Claude Code's names: `Bash`, `startup`, `auto`).
    pub fn matches(&self, subject: &str) -> bool {
        if !self.event.uses_matcher() {
            return true;
        }
        match self.protocol {
            Protocol::Etch => self.matcher.matches(subject),
            Protocol::Claude => claude::subjects(self.event, subject)
                .iter()
                .any(|s| self.matcher.matches(s)),
        }
    }
}

/// One hook's run: what it meant and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// Its outcome.
    pub outcome: Outcome,
    /// How long it ran.
    pub elapsed: Duration,
}

/// The hooks of a session.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    /// In configuration order.
    hooks: Vec<Hook>,
}

impl Hooks {
    /// Compiles the configured entries (already in order: user first).
    pub fn from_config(entries: &[HookEntry]) -> Result<Self, HookError> {
        let mut hooks = Vec::new();
        for entry in entries.iter().filter(|e| !e.disabled) {
            let event = HookEvent::parse(&entry.event)
                .ok_or_else(|| HookError::Event(entry.event.clone()))?;
            let protocol = Protocol::parse(&entry.protocol)
                .ok_or_else(|| HookError::Protocol(entry.protocol.clone()))?;
            if protocol == Protocol::Claude && claude::event_name(event).is_none() {
                return Err(HookError::ClaudeEvent(event.name()));
            }
            hooks.push(Hook {
                event,
                matcher: Matcher::new(&entry.matcher)?,
                command: entry.command.clone(),
                timeout_seconds: entry.timeout_seconds,
                protocol,
                source: entry.source.clone(),
            });
        }
        Ok(Self { hooks })
    }

    /// Whether there are no hooks at all.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether any hook is configured for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// The hooks of `event` that match `subject`, in order (events without
    /// matchers run all their hooks).
    pub fn matching<'a>(
        &'a self,
        event: HookEvent,
        subject: &'a str,
    ) -> impl Iterator<Item = &'a Hook> + 'a {
        self.hooks
            .iter()
            .filter(move |h| h.event == event && h.matches(subject))
    }

    /// Every hook, in order.
    pub fn all(&self) -> &[Hook] {
        &self.hooks
    }
}

/// The envelope a hook reads on stdin (E-HOOK-02): version, event, cwd and
/// the event's payload (which carries `sessionPath` and `sessionId`, G5).
pub fn envelope(event: HookEvent, cwd: &Path, payload: Value) -> Value {
    let mut envelope = json!({
        "version": 1,
        "event": event.name(),
        "cwd": cwd.to_string_lossy(),
    });
    if let Value::Object(fields) = &mut envelope {
        fields.insert("payload".to_owned(), payload);
    }
    envelope
}

/// Runs `hook` with `input` (an etch envelope, translated for a Claude
/// Code hook, which also gets `CLAUDE_PROJECT_DIR`) from `cwd`, with the
/// process environment minus credentials plus `extra` variables. The
/// outcome is in etch's terms whatever the hook's protocol.
pub async fn run(hook: &Hook, cwd: &Path, input: &Value, extra: &[(OsString, OsString)]) -> Ran {
    let mut env = process::hook_env(std::env::vars_os());
    env.extend(extra.iter().cloned());
    let bytes = match hook.protocol {
        Protocol::Etch => input.to_string().into_bytes(),
        Protocol::Claude => {
            env.push(("CLAUDE_PROJECT_DIR".into(), cwd.as_os_str().to_owned()));
            claude::input(input).to_string().into_bytes()
        }
    };
    let timeout = Duration::from_secs(hook.timeout_seconds.max(1));
    match process::run(&hook.command, cwd, &bytes, &env, timeout).await {
        Ok(finished) => Ran {
            outcome: match hook.protocol {
                Protocol::Etch => interpret(hook.event, &finished, hook.timeout_seconds),
                Protocol::Claude => {
                    claude::interpret(hook.event, &finished, hook.timeout_seconds, input)
                }
            },
            elapsed: finished.elapsed,
        },
        Err(err) => Ran {
            outcome: Outcome::Failed(format!("could not be started: {err}")),
            elapsed: Duration::ZERO,
        },
    }
}
