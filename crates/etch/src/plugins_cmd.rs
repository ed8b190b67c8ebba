//! `etch plugins list` and `etch plugins check`: the configured plugins
//! with their source, trust and state, started once (those allowed to
//! run) to show the tools each offers; `check` adds each tool's
//! description and what etch rejected, and fails when a plugin does not
//! start, so a plugin can be debugged without a model. Starting and
//! talking to plugins is `etch_plugins`; this module only prints.

use std::fmt::Write as _;
use std::time::Instant;

use clap::Subcommand;
use etch_config::trust::{TrustState, TrustStore, project_files};
use etch_plugins::{PluginSet, Status};
use etch_tool::{Access, ToolSource};
use serde_json::Value;

use crate::exit::{self, Failure};
use crate::run::Place;

/// `etch plugins` actions.
#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// List the configured plugins: source, trust, state and tools.
    List,
    /// Start each plugin once, initialize it, show its tools (and what
    /// was rejected), and stop it; exit 1 if one fails.
    Check,
}

/// Runs an `etch plugins` action.
pub async fn run(place: &Place, command: PluginsCommand) -> Result<(), Failure> {
    let config = &place.config;
    if config.plugins.is_empty() {
        crate::output::print_line(
            "no plugins configured; add a [[plugins]] table (name, command) to ~/.etch/config.toml or .etch/config.toml",
        );
        return Ok(());
    }
    let home = place.home.as_deref();
    let projects = project_files(config, home);
    let store = home
        .and_then(|h| TrustStore::load(h).ok())
        .unwrap_or_default();
    // Untrusted project plugins are listed, never started.
    let mut runnable = config.plugins.clone();
    let mut origins = Vec::new();
    for entry in &mut runnable {
        let origin = if projects.contains(&entry.source) {
            let state = store.state(config, &entry.source);
            if matches!(state, TrustState::Untrusted | TrustState::Changed) {
                entry.disabled = true;
            }
            format!("project, {}", crate::trust_cmd::describe(state))
        } else {
            "user".to_owned()
        };
        origins.push(origin);
    }
    let builtins: Vec<String> = etch_tools::builtin::ALL
        .iter()
        .map(|n| (*n).to_owned())
        .collect();
    let started = Instant::now();
    let set = PluginSet::start(&runnable, &place.cwd, builtins);
    set.settle().await;
    let elapsed = started.elapsed();
    let statuses = set.statuses();
    let tools = set.ready();
    set.shutdown().await;
    let check = matches!(command, PluginsCommand::Check);
    let mut out = String::new();
    let mut failed = false;
    for ((entry, origin), (_, status)) in config.plugins.iter().zip(&origins).zip(&statuses) {
        let state = match status {
            Status::Disabled if entry.disabled => "disabled".to_owned(),
            Status::Disabled => {
                failed = true;
                "not run: not trusted (review with etch trust)".to_owned()
            }
            Status::Starting => "still starting".to_owned(),
            Status::Ready { tools, .. } => format!("runs · {} tools", tools.len()),
            Status::Failed(why) => {
                failed = true;
                format!("failed: {why}")
            }
        };
        let _ = writeln!(
            out,
            "{}  {state}\n  {} · timeout {} s · {} · {}",
            entry.name,
            entry.command,
            entry.timeout_seconds,
            origin,
            entry.source.display()
        );
        if let Status::Ready {
            tools: names,
            rejected,
        } = status
        {
            for name in names {
                let tool = tools.iter().find(|t| t.spec().name == *name);
                let (safety, description) = tool.map_or(("", ""), |t| {
                    let safety = if t.access(&Value::Null, &place.cwd) == Access::Barrier {
                        "serial"
                    } else {
                        "overlaps"
                    };
                    (safety, t.spec().description.as_str())
                });
                if check {
                    let _ = writeln!(out, "  tool {name} ({safety}): {description}");
                } else {
                    let _ = writeln!(out, "  tool {name}");
                }
            }
            for why in rejected {
                let _ = writeln!(out, "  rejected: {why}");
            }
        }
    }
    if check {
        let _ = writeln!(out, "started and stopped in {} ms", elapsed.as_millis());
    }
    crate::output::print_text(&out);
    if check && failed {
        return Err(Failure::silent(exit::FAILED));
    }
    Ok(())
}
