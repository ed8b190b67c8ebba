//! MCP servers as plugins (E-PLUG-22): each `[[mcp.servers]]` entry
//! becomes the plugin entry of an MCP bridge, which is this same etch
//! executable started as `etch mcp bridge SPEC`, so servers are
//! supervised, sandboxed in their environment and offered to the model
//! exactly as plugins are. The bridge's own deadline is the entry's
//! `timeout_seconds`; the plugin deadline around it is a little longer,
//! so the bridge's message (naming the server and the tool) is the one
//! the user sees.
//!
//! This module must not know MCP itself; that is `etch_mcp`.

use std::path::Path;

use etch_config::{McpServerEntry, PluginEntry};
use etch_mcp::{ServerSpec, Transport};
use etch_plugins::MCP_PREFIX;

/// Variables an HTTP bridge needs to reach a server through the user's
/// proxy and certificate set-up.
const NETWORK_ENV: [&str; 10] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Seconds the plugin deadline adds to the bridge's own.
const BACKSTOP_SECONDS: u64 = 5;

/// The plugin entries of the bridges for `servers`, started with `exe`
/// (the running etch).
pub fn bridge_entries(servers: &[McpServerEntry], exe: &Path) -> Vec<PluginEntry> {
    servers.iter().map(|s| bridge_entry(s, exe)).collect()
}

/// One bridge entry.
fn bridge_entry(server: &McpServerEntry, exe: &Path) -> PluginEntry {
    let transport = if server.url.is_empty() {
        Transport::Stdio {
            command: server.command.clone(),
            args: server.args.clone(),
        }
    } else {
        Transport::Http {
            url: server.url.clone(),
            headers: server.headers.clone(),
            bearer_token_env: server.bearer_token_env.clone(),
        }
    };
    let spec = ServerSpec {
        name: server.name.clone(),
        transport,
        timeout_seconds: server.timeout_seconds,
        enabled_tools: server.enabled_tools.clone(),
        disabled_tools: server.disabled_tools.clone(),
    };
    // The bridge needs the variables its headers and token name; a
    // model credential among them is still refused by the plugin
    // environment.
    let mut env = server.env.clone();
    if !server.bearer_token_env.is_empty() {
        env.push(server.bearer_token_env.clone());
    }
    env.extend(server.headers.iter().flat_map(|h| referenced(h)));
    if !server.url.is_empty() {
        // An HTTP server is reached the way the user's network is set up.
        env.extend(NETWORK_ENV.iter().map(|v| (*v).to_owned()));
    }
    PluginEntry {
        name: format!("{MCP_PREFIX}{}", server.name),
        command: format!(
            "exec {} mcp bridge {}",
            quote(&exe.to_string_lossy()),
            quote(&spec.to_arg())
        ),
        timeout_seconds: server.timeout_seconds.saturating_add(BACKSTOP_SECONDS),
        env,
        set_env: server.set_env.clone(),
        disabled: server.disabled || (server.command.is_empty() && server.url.is_empty()),
        sandbox: false,
        source: server.source.clone(),
    }
}

/// The variables `${VAR}` in `text` names.
fn referenced(text: &str) -> Vec<String> {
    text.split("${")
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_owned()))
        .collect()
}

/// `text` as one word for `sh`.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::PathBuf;

    use super::*;

    fn server() -> McpServerEntry {
        McpServerEntry {
            name: "git".into(),
            command: "mcp-server-git".into(),
            args: vec!["--repository".into(), "it's here".into()],
            url: String::new(),
            headers: Vec::new(),
            bearer_token_env: String::new(),
            env: vec!["GIT_DIR".into()],
            set_env: Vec::new(),
            timeout_seconds: 10,
            disabled: false,
            enabled_tools: None,
            disabled_tools: vec!["git_reset".into()],
            source: PathBuf::from("/p/.etch/config.toml"),
        }
    }

    #[test]
    fn a_server_becomes_a_bridge_plugin() {
        let entry = bridge_entry(&server(), Path::new("/bin/et'ch"));
        assert_eq!(entry.name, "mcp:git");
        assert_eq!(entry.timeout_seconds, 15);
        assert_eq!(entry.env, ["GIT_DIR"]);
        assert!(
            entry
                .command
                .starts_with(r"exec '/bin/et'\''ch' mcp bridge '")
        );
        // The shell gives the bridge back exactly the spec.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(
                entry
                    .command
                    .replace("exec '/bin/et'\\''ch' mcp bridge", "printf %s"),
            )
            .output()
            .unwrap();
        let spec = ServerSpec::from_arg(&String::from_utf8(out.stdout).unwrap()).unwrap();
        assert_eq!(spec.name, "git");
        assert!(!spec.offers("git_reset"));
        assert_eq!(
            spec.transport,
            Transport::Stdio {
                command: "mcp-server-git".into(),
                args: vec!["--repository".into(), "it's here".into()]
            }
        );
    }

    #[test]
    fn http_servers_pass_the_variables_they_name() {
        let mut s = server();
        s.command.clear();
        s.args.clear();
        s.env.clear();
        s.url = "http://127.0.0.1:9/mcp".into();
        s.headers = vec!["X-Team: ${TEAM} and ${ORG}".into()];
        s.bearer_token_env = "TOKEN".into();
        let entry = bridge_entry(&s, Path::new("etch"));
        assert_eq!(entry.env[..3], ["TOKEN", "TEAM", "ORG"]);
        assert!(entry.env.contains(&"HTTPS_PROXY".to_owned()));
    }
}
