//! What etch tells a bridge about its server: one JSON argument built
//! from a `[[mcp.servers]]` entry. Both ends are the same etch build, so
//! this is not a public format.
//!
//! This module must not know the configuration file it was built from.

use serde::{Deserialize, Serialize};

use crate::error::McpError;

/// One MCP server to bridge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerSpec {
    /// Its configured name (in tool names and messages).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Seconds for start-up (connect, initialize, tools/list) and for
    /// each tool call.
    pub timeout_seconds: u64,
    /// Only these server tools, when set.
    #[serde(default)]
    pub enabled_tools: Option<Vec<String>>,
    /// Server tools never offered.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Transport {
    /// A child process speaking MCP on its stdio.
    Stdio {
        /// The program, run directly (no shell).
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// `Name: value` headers; `${VAR}` is taken from the environment.
        headers: Vec<String>,
        /// Variable holding a bearer token; empty when none.
        bearer_token_env: String,
    },
}

impl ServerSpec {
    /// The spec as the bridge's command-line argument.
    pub fn to_arg(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads the bridge's command-line argument.
    pub fn from_arg(arg: &str) -> Result<Self, McpError> {
        serde_json::from_str(arg).map_err(|e| McpError::Spec(e.to_string()))
    }

    /// Whether server tool `tool` is offered under the entry's
    /// `enabled_tools` / `disabled_tools`.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trips_and_filters() {
        let spec = ServerSpec {
            name: "git".into(),
            transport: Transport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: vec!["X-A: b".into()],
                bearer_token_env: "TOKEN".into(),
            },
            timeout_seconds: 5,
            enabled_tools: Some(vec!["a".into(), "b".into()]),
            disabled_tools: vec!["b".into()],
        };
        let back = ServerSpec::from_arg(&spec.to_arg()).unwrap();
        assert_eq!(back, spec);
        assert!(spec.offers("a"));
        assert!(!spec.offers("b"));
        assert!(!spec.offers("c"));
        assert!(ServerSpec::from_arg("{").is_err());
    }
}
