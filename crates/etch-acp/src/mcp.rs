//! The MCP servers an editor hands a session (`mcpServers` of
//! `session/new` and `session/load`) as etch's own `[[mcp.servers]]`
//! entries, so they start through the MCP bridge like configured ones:
//! supervised, their tools named `mcp__<server>__<tool>`, gated by
//! `[acp] ask` like any tool. Values the editor gives (a stdio server's
//! environment, an HTTP server's headers) reach the bridge as variables
//! set for it alone, never on a command line another user could read.
//!
//! This module must not know how servers run.

use std::collections::HashSet;
use std::path::PathBuf;

use agent_client_protocol_schema::v1::McpServer;
use etch_config::{EDITOR_SOURCE, McpServerEntry};

/// Seconds a server may take to start and to answer a call.
const TIMEOUT_SECONDS: u64 = 30;

/// The longest server name etch accepts.
const MAX_NAME: usize = 32;

/// The entries for `servers`, named so that none takes a name in
/// `taken` (the configured servers) or another's; `Err` names a server
/// etch cannot reach and why.
pub fn entries(servers: &[McpServer], taken: &[String]) -> Result<Vec<McpServerEntry>, String> {
    let mut used: HashSet<String> = taken.iter().cloned().collect();
    let mut out = Vec::new();
    for server in servers {
        let mut entry = McpServerEntry {
            name: String::new(),
            command: String::new(),
            args: Vec::new(),
            url: String::new(),
            headers: Vec::new(),
            bearer_token_env: String::new(),
            env: Vec::new(),
            set_env: Vec::new(),
            timeout_seconds: TIMEOUT_SECONDS,
            disabled: false,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            source: PathBuf::from(EDITOR_SOURCE),
        };
        let given = match server {
            McpServer::Stdio(stdio) => {
                entry.command = stdio.command.to_string_lossy().into_owned();
                entry.args.clone_from(&stdio.args);
                entry.set_env = stdio
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect();
                &stdio.name
            }
            McpServer::Http(http) => {
                entry.url.clone_from(&http.url);
                for (i, header) in http.headers.iter().enumerate() {
                    let var = format!("ETCH_ACP_HEADER_{i}");
                    entry.headers.push(format!("{}: ${{{var}}}", header.name));
                    entry.set_env.push((var, header.value.clone()));
                }
                &http.name
            }
            McpServer::Sse(sse) => {
                return Err(format!(
                    "MCP server {:?} uses SSE, which etch does not speak (mcpCapabilities.sse is false); give its streamable HTTP endpoint instead",
                    sse.name
                ));
            }
            _ => {
                return Err(
                    "an MCP server of a kind etch does not take; give a stdio or streamable HTTP server"
                        .to_owned(),
                );
            }
        };
        entry.name = unique(&name_of(given), &mut used);
        out.push(entry);
    }
    Ok(out)
}

/// `given` as a server name etch accepts: `[A-Za-z0-9_-]`, no `__` (it
/// separates the parts of tool names), at most [`MAX_NAME`] characters.
fn name_of(given: &str) -> String {
    let mut name = String::new();
    for c in given.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '_'
        };
        if !(c == '_' && name.ends_with('_')) {
            name.push(c);
        }
    }
    let name: String = name.trim_matches('_').chars().take(MAX_NAME).collect();
    let name = name.trim_end_matches('_').to_owned();
    if name.is_empty() {
        "editor".to_owned()
    } else {
        name
    }
}

/// `name`, or `name-2`, `name-3`, … when taken; recorded as used.
fn unique(name: &str, used: &mut HashSet<String>) -> String {
    let mut candidate = name.to_owned();
    let mut n = 2;
    while used.contains(&candidate) {
        let suffix = format!("-{n}");
        let stem: String = name.chars().take(MAX_NAME - suffix.len()).collect();
        candidate = format!("{stem}{suffix}");
        n += 1;
    }
    used.insert(candidate.clone());
    candidate
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The servers of a `session/new` request.
    fn servers(value: serde_json::Value) -> Vec<McpServer> {
        serde_json::from_value(value).unwrap()
    }

    /// Stdio and HTTP servers become entries whose values travel as
    /// variables; names are made acceptable and unique.
    #[test]
    fn servers_become_entries() {
        let given = servers(json!([
            {"name": "my files", "command": "/usr/bin/fs-server", "args": ["/w"], "env": [{"name": "TOKEN", "value": "t0"}]},
            {"type": "http", "name": "git", "url": "https://mcp.example/mcp", "headers": [{"name": "Authorization", "value": "Bearer s3"}]},
            {"name": "git", "command": "git-mcp", "args": [], "env": []}
        ]));
        let entries = entries(&given, &["git".to_owned()]).unwrap();
        assert_eq!(entries[0].name, "my_files");
        assert_eq!(entries[0].command, "/usr/bin/fs-server");
        assert_eq!(entries[0].set_env, [("TOKEN".to_owned(), "t0".to_owned())]);
        assert_eq!(entries[1].name, "git-2");
        assert_eq!(entries[1].headers, ["Authorization: ${ETCH_ACP_HEADER_0}"]);
        assert_eq!(
            entries[1].set_env,
            [("ETCH_ACP_HEADER_0".to_owned(), "Bearer s3".to_owned())]
        );
        assert_eq!(entries[2].name, "git-3");
        assert!(
            entries
                .iter()
                .all(|e| e.source == std::path::Path::new(EDITOR_SOURCE))
        );
    }

    /// Names keep to the accepted characters and length, never hold
    /// `__`, and are never empty.
    #[test]
    fn names_are_made_acceptable() {
        assert_eq!(name_of("a__b.c"), "a_b_c");
        assert_eq!(name_of("???"), "editor");
        assert_eq!(name_of(&"x".repeat(40)).len(), MAX_NAME);
    }

    /// SSE servers are refused with what to do instead.
    #[test]
    fn sse_is_refused() {
        let given =
            servers(json!([{"type": "sse", "name": "old", "url": "http://x/sse", "headers": []}]));
        let why = entries(&given, &[]).unwrap_err();
        assert!(why.contains("\"old\" uses SSE"), "{why}");
    }
}
