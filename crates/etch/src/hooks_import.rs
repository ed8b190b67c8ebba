//! `etch hooks import [--write] [--from FILE]`: the hooks of a project's
//! Claude Code settings (`.claude/settings.json`, then
//! `.claude/settings.local.json`) as `.etch/config.toml` entries with
//! `protocol = "claude"`, so the same scripts run under etch unchanged.
//! Printed by default; `--write` appends the entries the project config
//! does not have yet. Events and hook types etch has no counterpart for
//! are listed as skipped, never dropped in silence. The Claude Code wire
//! format itself is `etch_hooks::claude`; this module only translates
//! settings and prints.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use etch_hooks::claude;
use serde_json::Value;

use crate::exit::{self, Failure};
use crate::run::Place;

/// Claude Code's default hook timeout, in seconds (etch's is 30).
const CLAUDE_TIMEOUT_SECONDS: u64 = 60;

/// One imported hook.
#[derive(Debug, PartialEq, Eq)]
struct Imported {
    /// etch's event name.
    event: &'static str,
    /// The matcher (empty: everything).
    matcher: String,
    /// The command.
    command: String,
    /// Seconds.
    timeout_seconds: u64,
}

impl Imported {
    /// The entry as TOML (JSON string escapes are valid TOML ones).
    fn toml(&self) -> String {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
        let mut out = format!("[[hooks.{}]]\n", self.event);
        if !self.matcher.is_empty() {
            let _ = writeln!(out, "matcher = {}", quote(&self.matcher));
        }
        let _ = writeln!(out, "command = {}", quote(&self.command));
        let _ = writeln!(out, "timeout_seconds = {}", self.timeout_seconds);
        out.push_str("protocol = \"claude\"\n");
        out
    }

    /// Whether `config` already has this hook.
    fn is_in(&self, config: &etch_config::Config) -> bool {
        config.hooks.iter().any(|h| {
            h.event == self.event
                && h.matcher == self.matcher
                && h.command == self.command
                && h.protocol == "claude"
        })
    }
}

/// Reads the hooks of one Claude Code settings file; what cannot be
/// imported goes to `skipped`, saying why.
fn read(path: &Path, skipped: &mut Vec<String>) -> Result<Vec<Imported>, Failure> {
    let failed = |why: String| Failure::new(exit::FAILED, anyhow::anyhow!(why));
    let text = std::fs::read_to_string(path)
        .map_err(|e| failed(format!("cannot read {}: {e}", path.display())))?;
    let settings: Value = serde_json::from_str(&text).map_err(|e| {
        failed(format!(
            "{} is not valid JSON ({e}); fix it or pass another file with --from",
            path.display()
        ))
    })?;
    let Some(events) = settings.get("hooks") else {
        return Ok(Vec::new());
    };
    let Some(events) = events.as_object() else {
        return Err(failed(format!(
            "{}: \"hooks\" is not an object of events",
            path.display()
        )));
    };
    let mut imported = Vec::new();
    for (name, groups) in events {
        let Some(event) = claude::event_from_name(name) else {
            skipped.push(format!(
                "{name} hooks ({}): etch has no such event",
                path.display()
            ));
            continue;
        };
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group["matcher"].as_str().unwrap_or("").to_owned();
            for hook in group["hooks"].as_array().into_iter().flatten() {
                let kind = hook["type"].as_str().unwrap_or("command");
                let command = hook["command"].as_str().unwrap_or("");
                if kind != "command" || command.trim().is_empty() {
                    skipped.push(format!(
                        "a {name} hook of type \"{kind}\" ({}): etch runs command hooks only",
                        path.display()
                    ));
                    continue;
                }
                imported.push(Imported {
                    event: event.name(),
                    matcher: matcher.clone(),
                    command: command.to_owned(),
                    timeout_seconds: hook["timeout"]
                        .as_u64()
                        .filter(|t| *t > 0)
                        .unwrap_or(CLAUDE_TIMEOUT_SECONDS),
                });
            }
        }
    }
    Ok(imported)
}

/// Runs `etch hooks import`.
pub fn run(place: &Place, from: Option<PathBuf>, write: bool) -> Result<(), Failure> {
    let files: Vec<PathBuf> = match from {
        Some(file) => vec![file],
        None => [".claude/settings.json", ".claude/settings.local.json"]
            .iter()
            .map(|f| place.cwd.join(f))
            .filter(|f| f.is_file())
            .collect(),
    };
    if files.is_empty() {
        return Err(Failure::new(
            exit::FAILED,
            anyhow::anyhow!(
                "no .claude/settings.json or .claude/settings.local.json in {}; pass the settings file with --from",
                place.cwd.display()
            ),
        ));
    }
    let mut skipped = Vec::new();
    let mut imported = Vec::new();
    for file in &files {
        imported.extend(read(file, &mut skipped)?);
    }
    for why in &skipped {
        diag!("etch: skipped {why}");
    }
    if imported.is_empty() {
        crate::output::print_line("no command hooks to import");
        return Ok(());
    }
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# Imported from {} by etch hooks import: Claude Code hook scripts, run unchanged.",
        files
            .iter()
            .map(|f| f
                .strip_prefix(&place.cwd)
                .unwrap_or(f)
                .display()
                .to_string())
            .collect::<Vec<_>>()
            .join(" and ")
    );
    let mut new = 0;
    for hook in &imported {
        if write && hook.is_in(&place.config) {
            continue;
        }
        new += 1;
        text.push('\n');
        text.push_str(&hook.toml());
    }
    if !write {
        // Commands from a settings file someone else may have written:
        // shown exactly, nothing acting on the terminal.
        crate::output::print_text(&etch_sanitize::visible_lines(&text));
        return Ok(());
    }
    if new == 0 {
        crate::output::print_line(
            "nothing to write: .etch/config.toml has every one of these hooks",
        );
        return Ok(());
    }
    let target = place.cwd.join(".etch").join("config.toml");
    append(&target, &text).map_err(|e| Failure::new(exit::FAILED, anyhow::anyhow!("{e}")))?;
    crate::output::print_line(&format!(
        "wrote {new} hook{} to {}; review them with etch trust, then trust them with etch trust --yes",
        if new == 1 { "" } else { "s" },
        target.display()
    ));
    Ok(())
}

/// Appends `text` to `file` after a blank line, creating it (and its
/// directory) when missing. The file is replaced whole
/// (`etch_fs::replace`), never written in place: a kill midway leaves the
/// old configuration, never a torn one every later run would refuse, and
/// no temporary file beside it.
fn append(file: &Path, text: &str) -> Result<(), String> {
    let existing = match std::fs::read_to_string(file) {
        Ok(existing) => existing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let mut whole = existing;
    if !whole.is_empty() {
        whole.push_str(if whole.ends_with('\n') { "\n" } else { "\n\n" });
    }
    whole.push_str(text);
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    etch_fs::replace(file, whole.as_bytes(), etch_fs::Options::keep_mode())
        .map_err(|e| format!("cannot write {}: {e}", file.display()))
}
