//! Renders `etch config show --effective` (E-CFG-18): the merged config with
//! compiled defaults, as TOML that parses back, each value followed by where
//! it came from.
//!
//! This module owns the layout of that output. It must not know how values
//! were merged; it reads the typed config and the provenance of [`Loaded`].

use std::fmt::Write as _;

use crate::load::Loaded;
use crate::reflect;
use crate::schema::{self, TableKind};
use crate::value::Value;

/// The comment for `provider.name` when nothing set it (C42).
const AUTO_PROVIDER: &str = "default: auto-selected from the available credentials (openai, then anthropic, else echo) because no config file or flag sets it";

/// The effective configuration as commented TOML.
pub(crate) fn render(loaded: &Loaded) -> String {
    let mut out = String::new();
    let file = |path: Option<&std::path::Path>| {
        path.map_or_else(|| "(none)".to_owned(), |path| path.display().to_string())
    };
    out.push_str("# etch effective configuration: defaults < user file < project file < flags\n");
    let _ = writeln!(out, "# user file: {}", file(loaded.files.user.as_deref()));
    let _ = writeln!(
        out,
        "# project file: {}",
        file(loaded.files.project.as_deref())
    );
    if !loaded.withheld.is_empty() {
        let _ = writeln!(
            out,
            "# held back until you trust the project file (etch trust): {}",
            loaded.withheld.join(", ")
        );
    }
    for table in schema::TABLES
        .iter()
        .filter(|table| table.kind == TableKind::Table)
    {
        let _ = writeln!(out, "\n[{}]", table.name);
        for key in table.keys {
            let dotted = format!("{}.{}", table.name, key.name);
            let source = loaded.source(&dotted);
            match reflect::scalar(&loaded.config, &dotted) {
                Some(value) => line(&mut out, key.name, &value, &source.to_string()),
                None if dotted == "provider.name" => {
                    line(
                        &mut out,
                        key.name,
                        &Value::String("echo".into()),
                        AUTO_PROVIDER,
                    );
                }
                None => match key.default {
                    Some(default) => {
                        line(
                            &mut out,
                            key.name,
                            &Value::from_literal(default),
                            &source.to_string(),
                        );
                    }
                    None => {
                        let _ = writeln!(out, "# {} is not set (optional, no default)", key.name);
                    }
                },
            }
        }
    }
    let config = &loaded.config;
    for profile in &config.subagents.profiles {
        entry(
            &mut out,
            "subagents.profile",
            &profile.source,
            &reflect::profile(profile),
        );
    }
    for plugin in &config.plugins {
        entry(
            &mut out,
            "plugins",
            &plugin.source,
            &reflect::plugin(plugin),
        );
    }
    for server in &config.mcp_servers {
        entry(
            &mut out,
            "mcp.servers",
            &server.source,
            &reflect::mcp_server(server),
        );
    }
    for hook in &config.hooks {
        entry(
            &mut out,
            &format!("hooks.{}", hook.event),
            &hook.source,
            &reflect::hook(hook),
        );
    }
    for price in &config.prices {
        entry(&mut out, "prices", &price.source, &reflect::price(price));
    }
    out
}

/// One `key = value  # comment` line.
fn line(out: &mut String, key: &str, value: &Value, comment: &str) {
    let _ = writeln!(out, "{key} = {}  # {comment}", value.to_toml());
}

/// One `[[table]]` entry with the file that declared it.
fn entry(out: &mut String, table: &str, source: &std::path::Path, values: &[(&str, Value)]) {
    let _ = writeln!(out, "\n[[{table}]]  # from {}", source.display());
    for (key, value) in values {
        let _ = writeln!(out, "{key} = {}", value.to_toml());
    }
}
