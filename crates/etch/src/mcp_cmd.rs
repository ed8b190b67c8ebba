//! `etch mcp list`, `etch mcp check NAME` and the hidden `etch mcp
//! bridge SPEC`. The first two start the configured MCP servers (those
//! allowed to run) through their bridges, exactly as a session would,
//! and print what each offers, so a server can be debugged without a
//! model; the bridge is this binary serving one server to a parent etch
//! (`etch_mcp::serve`). This module only prints and dispatches.

use std::time::Instant;

use clap::Subcommand;
use etch_plugins::PluginSet;

use crate::exit::{self, Failure};
use crate::plugins_cmd::{Row, builtins, gate, report, settled};
use crate::run::Place;

/// `etch mcp` actions.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// List the configured MCP servers: how each is reached, source,
    /// trust, state and the tools it offers (as the model sees them).
    List,
    /// Start one server, initialize it, list its tools with their etch
    /// names and what was rejected, and stop it; exit 1 if it fails.
    Check {
        /// The server's name in [[mcp.servers]].
        name: String,
    },
    /// Serve one MCP server to a parent etch over the plugin protocol
    /// (etch starts this itself; SPEC is its JSON description).
    #[command(hide = true)]
    Bridge {
        /// The server, as etch describes it.
        spec: String,
    },
}

/// Runs `etch mcp bridge`.
pub async fn bridge(spec: &str) -> Result<(), Failure> {
    let spec = etch_mcp::ServerSpec::from_arg(spec)
        .map_err(|e| Failure::new(exit::USAGE, anyhow::anyhow!(e)))?;
    match etch_mcp::serve(spec).await {
        Ok(0) => Ok(()),
        Ok(_) => Err(Failure::silent(exit::FAILED)),
        Err(err) => Err(Failure::new(exit::FAILED, anyhow::anyhow!(err))),
    }
}

/// Runs `etch mcp list` or `etch mcp check`.
pub async fn run(place: &Place, command: McpCommand) -> Result<(), Failure> {
    let servers = &place.config.mcp_servers;
    if servers.is_empty() {
        crate::output::print_line(
            "no MCP servers configured; add an [[mcp.servers]] table (name, and command or url) to ~/.etch/config.toml or .etch/config.toml",
        );
        return Ok(());
    }
    let (chosen, check) = match &command {
        McpCommand::Check { name } => {
            let Some(server) = servers.iter().find(|s| s.name == *name) else {
                let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
                return Err(Failure::usage(format!(
                    "no MCP server named \"{name}\" is configured; configured: {}",
                    known.join(", ")
                )));
            };
            (vec![server.clone()], true)
        }
        McpCommand::List | McpCommand::Bridge { .. } => (servers.clone(), false),
    };
    let bridges = etch_runtime::mcp::bridge_entries(&chosen, &etch_runtime::context::etch_exe());
    let (runnable, origins) = gate(place, &bridges);
    let started = Instant::now();
    let set = PluginSet::start(&[], &runnable, &place.cwd, builtins());
    let (statuses, tools) = settled(&set).await;
    let rows: Vec<Row<'_>> = chosen
        .iter()
        .zip(origins)
        .zip(statuses)
        .map(|((server, origin), (_, status))| Row {
            name: server.name.clone(),
            what: format!("{} · timeout {} s", reached(server), server.timeout_seconds),
            disabled: server.disabled,
            origin,
            source: &server.source,
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

/// How a server is reached, for people.
fn reached(server: &etch_config::McpServerEntry) -> String {
    if server.url.is_empty() {
        std::iter::once(server.command.as_str())
            .chain(server.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        server.url.clone()
    }
}
