//! `etch trust [--yes]`: what the project's `.etch/config.toml` would run
//! (its hooks, plugins and MCP servers, with the project files their
//! commands name) and the settings it makes that choose the model or what
//! it may do, whether the user trusted exactly that, and with `--yes`
//! trusting it. The hashing and the store are
//! `etch_config::trust`; this module only prints and asks nothing.

use std::fmt::Write as _;

pub use etch_config::trust::project_files;
use etch_config::trust::{TrustState, TrustStore, project_entries};
use etch_sanitize::visible;
use serde_json::Value;

use crate::exit::{self, Failure};
use crate::run::Place;

/// The trust state of `file`'s entries, in words for listings.
pub fn describe(state: TrustState) -> &'static str {
    match state {
        TrustState::Nothing | TrustState::Trusted => "trusted",
        TrustState::Untrusted => "not trusted: review with etch trust",
        TrustState::Changed => "changed since trusted: review with etch trust",
    }
}

/// What `etch trust` says after the entries of a file that runs
/// commands: what the pin covers and what it does not.
const NOT_PINNED: &str = "  pinned: these entries and the project files their commands name (\"pins\"); \
not pinned: programs found on PATH, files outside the project, and whatever a pinned file runs in turn";

/// Runs `etch trust`.
pub fn run(place: &Place, yes: bool) -> Result<(), Failure> {
    let home = place.home.as_deref().ok_or_else(|| {
        Failure::new(
            exit::FAILED,
            anyhow::anyhow!("HOME is not set, so there is no ~/.etch/trust.json to keep trust in"),
        )
    })?;
    let failed = |e: etch_config::trust::TrustError| Failure::new(exit::FAILED, e);
    let mut store = TrustStore::load(home).map_err(failed)?;
    let files = project_files(&place.config, Some(home));
    if files.is_empty() {
        crate::output::print_line(
            "nothing to trust: this project's configuration runs no commands and sets nothing that needs trust",
        );
        return Ok(());
    }
    let mut out = String::new();
    for file in &files {
        let state = store.state(&place.config, file);
        let _ = writeln!(
            out,
            "{} ({}):",
            visible(&file.display().to_string()),
            describe(state)
        );
        let entries = project_entries(&place.config, file);
        for entry in &entries {
            describe_entry(&mut out, entry);
        }
        if entries.iter().any(|e| e["kind"] != "setting") {
            let _ = writeln!(out, "{NOT_PINNED}");
        }
        if yes && state != TrustState::Trusted {
            store.trust(&place.config, file).map_err(failed)?;
            let _ = writeln!(
                out,
                "  trusted: these run from now on, until the file or a file it pins changes"
            );
        } else if matches!(state, TrustState::Untrusted | TrustState::Changed) {
            let _ = writeln!(
                out,
                "  to let exactly these run, review them and run etch trust --yes"
            );
        }
    }
    crate::output::print_text(&out);
    Ok(())
}

/// The strings of array `value`.
fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Appends one project entry (hook, plugin, MCP server or setting) to
/// `out`, every outside string through [`visible`] so what is shown is
/// what runs.
fn describe_entry(out: &mut String, entry: &Value) {
    let text = |key: &str| visible(entry[key].as_str().unwrap_or("")).into_owned();
    let disabled = if entry["disabled"] == true {
        " (disabled)"
    } else {
        ""
    };
    let command = text("command");
    match entry["kind"].as_str() {
        Some("setting") => {
            let _ = writeln!(out, "  setting {} = {}", text("label"), text("value"));
            if let Some(why) = gated_why(entry) {
                let _ = writeln!(out, "    {why}");
            }
            return;
        }
        Some("plugin") => {
            let _ = writeln!(out, "  plugin {}: {command}{disabled}", text("name"));
        }
        Some("mcp server") => {
            let reached = match entry["url"].as_str().filter(|u| !u.is_empty()) {
                Some(url) => visible(url).into_owned(),
                None => std::iter::once(command.as_str())
                    .chain(strings(&entry["args"]))
                    .map(|word| visible(word).into_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
            };
            let _ = writeln!(out, "  mcp server {}: {reached}{disabled}", text("name"));
            // What it is given decides which secrets reach it.
            for (key, label) in [("env", "gets variables"), ("headers", "sends headers")] {
                let items: Vec<String> = strings(&entry[key])
                    .into_iter()
                    .map(|item| visible(item).into_owned())
                    .collect();
                if !items.is_empty() {
                    let _ = writeln!(out, "    {label}: {}", items.join(", "));
                }
            }
            if let Some(var) = entry["bearerTokenEnv"].as_str().filter(|v| !v.is_empty()) {
                let _ = writeln!(out, "    sends the token in ${}", visible(var));
            }
        }
        _ => {
            let matcher = entry["matcher"]
                .as_str()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or("*");
            let _ = writeln!(
                out,
                "  hook {} [{}]: {command}{disabled}",
                text("event"),
                visible(matcher)
            );
        }
    }
    if let Some(pins) = entry["pins"].as_object() {
        for (path, digest) in pins {
            let digest = digest.as_str().unwrap_or("");
            let short = digest.get(..12).unwrap_or(digest);
            let _ = writeln!(out, "    pins {} (sha256 {short}…)", visible(path));
        }
    }
}

/// Why a gated setting needs trust, as the configuration says it.
fn gated_why(entry: &Value) -> Option<&'static str> {
    let key = entry["key"].as_str()?;
    etch_config::GatedSetting::why_of(key)
}
