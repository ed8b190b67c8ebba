//! `etch plugins list` and `etch plugins check`: the configured plugins
//! with their source, trust and state, started once (those allowed to
//! run) to show the tools each offers; `check` adds each tool's
//! description and what etch rejected, and fails when a plugin does not
//! start, so a plugin can be debugged without a model. Starting and
//! talking to plugins is `etch_plugins`; this module only prints. `etch
//! mcp` reports its servers through the same functions.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Subcommand;
use etch_config::PluginEntry;
use etch_config::trust::{TrustState, TrustStore, project_files};
use etch_plugins::{PluginSet, Status};
use etch_sanitize::visible;
use etch_tool::{Access, Tool, ToolSource};
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
    let (runnable, origins) = gate(place, &config.plugins);
    let started = Instant::now();
    let set = PluginSet::start(&runnable, &[], &place.cwd, builtins());
    let (statuses, tools) = settled(&set).await;
    let check = matches!(command, PluginsCommand::Check);
    let rows: Vec<Row<'_>> = config
        .plugins
        .iter()
        .zip(origins)
        .zip(statuses)
        .map(|((entry, origin), (_, status))| Row {
            name: entry.name.clone(),
            what: format!("{} · timeout {} s", entry.command, entry.timeout_seconds),
            disabled: entry.disabled,
            origin,
            source: &entry.source,
            status,
        })
        .collect();
    report(
        place,
        &rows,
        &tools,
        check,
        check.then(|| started.elapsed()),
    )
}

/// The built-in tool names, which no plugin may take.
pub fn builtins() -> Vec<String> {
    etch_tools::builtin::RESERVED
        .iter()
        .map(|n| (*n).to_owned())
        .collect()
}

/// `entries` with the untrusted project ones switched off (listed,
/// never started), and where each comes from (`user` or `project,
/// <trust>`).
pub fn gate(place: &Place, entries: &[PluginEntry]) -> (Vec<PluginEntry>, Vec<String>) {
    let config = &place.config;
    let projects = project_files(config, place.home.as_deref());
    let store = place
        .home
        .as_deref()
        .and_then(|h| TrustStore::load(h).ok())
        .unwrap_or_default();
    let mut runnable = entries.to_vec();
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
    (runnable, origins)
}

/// Waits for every plugin in `set` to settle, then stops them all; their
/// statuses and the tools they offered.
pub async fn settled(set: &PluginSet) -> (Vec<(String, Status)>, Vec<Arc<dyn Tool>>) {
    set.settle().await;
    let statuses = set.statuses();
    let tools = set.ready();
    set.shutdown().await;
    (statuses, tools)
}

/// One configured plugin or server, as reported.
pub struct Row<'a> {
    /// Its name.
    pub name: String,
    /// What it runs, and its timeout.
    pub what: String,
    /// Whether its entry says `disabled = true`.
    pub disabled: bool,
    /// `user` or `project, <trust>`.
    pub origin: String,
    /// The file declaring it.
    pub source: &'a Path,
    /// Where it stands.
    pub status: Status,
}

/// Prints `rows` with the `tools` they offered (descriptions and what
/// was rejected when `check`, and the time it took when given); with
/// `check`, fails when one did not run.
pub fn report(
    place: &Place,
    rows: &[Row<'_>],
    tools: &[Arc<dyn Tool>],
    check: bool,
    elapsed: Option<Duration>,
) -> Result<(), Failure> {
    let mut out = String::new();
    let mut failed = false;
    for row in rows {
        let state = match &row.status {
            Status::Disabled if row.disabled => "disabled".to_owned(),
            Status::Disabled => {
                failed = true;
                "not run: not trusted (review with etch trust)".to_owned()
            }
            Status::Starting => "still starting".to_owned(),
            Status::Ready { tools, .. } => format!(
                "runs · {} tool{}",
                tools.len(),
                if tools.len() == 1 { "" } else { "s" }
            ),
            Status::Failed(why) => {
                failed = true;
                format!("failed: {why}")
            }
        };
        let _ = writeln!(
            out,
            "{}  {}\n  {} · {} · {}",
            visible(&row.name),
            visible(&state),
            visible(&row.what),
            row.origin,
            visible(&row.source.display().to_string())
        );
        if let Status::Ready {
            tools: names,
            rejected,
        } = &row.status
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
                // A plugin names its tools and describes them: outside
                // text, shown exactly and inert.
                if check {
                    let _ = writeln!(
                        out,
                        "  tool {} ({safety}): {}",
                        visible(name),
                        visible(description)
                    );
                } else {
                    let _ = writeln!(out, "  tool {}", visible(name));
                }
            }
            for why in rejected {
                let _ = writeln!(out, "  rejected: {}", visible(why));
            }
        }
    }
    if let Some(elapsed) = elapsed {
        let _ = writeln!(out, "started and stopped in {} ms", elapsed.as_millis());
    }
    crate::output::print_text(&out);
    if check && failed {
        return Err(Failure::silent(exit::FAILED));
    }
    Ok(())
}
