//! `etch trust [--yes]`: what the project's `.etch/config.toml` would run
//! (its hooks and plugins), whether the user trusted exactly that,
//! and with `--yes` trusting it. The hashing and the store are
//! `etch_config::trust`; this module only prints and asks nothing.

use std::fmt::Write as _;

pub use etch_config::trust::project_files;
use etch_config::trust::{TrustState, TrustStore, project_entries};

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
            "nothing to trust: this project's configuration runs no commands",
        );
        return Ok(());
    }
    let mut out = String::new();
    for file in &files {
        let state = store.state(&place.config, file);
        let _ = writeln!(out, "{} ({}):", file.display(), describe(state));
        for entry in project_entries(&place.config, file) {
            let disabled = if entry["disabled"] == true {
                " (disabled)"
            } else {
                ""
            };
            let command = entry["command"].as_str().unwrap_or("");
            if entry["kind"] == "plugin" {
                let _ = writeln!(
                    out,
                    "  plugin {}: {command}{disabled}",
                    entry["name"].as_str().unwrap_or("")
                );
                continue;
            }
            if entry["kind"] == "mcp server" {
                let args: Vec<&str> = entry["args"]
                    .as_array()
                    .map(|a| a.iter().filter_map(serde_json::Value::as_str).collect())
                    .unwrap_or_default();
                let reached = match entry["url"].as_str().filter(|u| !u.is_empty()) {
                    Some(url) => url.to_owned(),
                    None => std::iter::once(command)
                        .chain(args)
                        .collect::<Vec<_>>()
                        .join(" "),
                };
                let _ = writeln!(
                    out,
                    "  mcp server {}: {reached}{disabled}",
                    entry["name"].as_str().unwrap_or("")
                );
                // What it is given decides which secrets reach it.
                for (key, label) in [("env", "gets variables"), ("headers", "sends headers")] {
                    let items: Vec<&str> = entry[key]
                        .as_array()
                        .map(|a| a.iter().filter_map(serde_json::Value::as_str).collect())
                        .unwrap_or_default();
                    if !items.is_empty() {
                        let _ = writeln!(out, "    {label}: {}", items.join(", "));
                    }
                }
                if let Some(var) = entry["bearerTokenEnv"].as_str().filter(|v| !v.is_empty()) {
                    let _ = writeln!(out, "    sends the token in ${var}");
                }
                continue;
            }
            let matcher = entry["matcher"]
                .as_str()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or("*");
            let _ = writeln!(
                out,
                "  hook {} [{matcher}]: {command}{disabled}",
                entry["event"].as_str().unwrap_or(""),
            );
        }
        if yes && state != TrustState::Trusted {
            store.trust(&place.config, file).map_err(failed)?;
            let _ = writeln!(
                out,
                "  trusted: these run from now on, until the file changes"
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
