//! The `sample-config.toml` coverage test (E-CFG-16): the sample at the
//! repository root and the schema must list exactly the same keys, the
//! sample must load cleanly, and its comments must carry the schema's
//! descriptions.
//!
//! This module owns only that check; it must not define config behaviour.

use std::collections::BTreeSet;
use std::path::Path;

use toml::de::{DeTable, DeValue};

use crate::config::Config;
use crate::discover::ConfigFiles;
use crate::load::load_files;
use crate::reflect;
use crate::schema::{self, TableKind};
use crate::schema_json::schema_keys;

/// The sample, read at test time so edits need no rebuild of the crate.
const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sample-config.toml");

/// Dotted keys assigned in `table`, with `hooks.<Event>` folded to `hooks.*`.
fn collect(prefix: &str, table: &DeTable<'_>, keys: &mut BTreeSet<String>) {
    for (key, value) in table {
        let name = key.get_ref().as_ref();
        let dotted = match prefix {
            "" => name.to_owned(),
            "hooks" => "hooks.*".to_owned(),
            _ => format!("{prefix}.{name}"),
        };
        match value.get_ref() {
            DeValue::Table(inner) => collect(&dotted, inner, keys),
            DeValue::Array(items)
                if items.iter().all(|item| item.get_ref().is_table()) && !items.is_empty() =>
            {
                for item in items {
                    if let DeValue::Table(inner) = item.get_ref() {
                        collect(&dotted, inner, keys);
                    }
                }
            }
            _ => {
                keys.insert(dotted);
            }
        }
    }
}

/// The sample's text.
fn sample_text() -> String {
    std::fs::read_to_string(SAMPLE).expect("sample-config.toml at the repository root")
}

/// Schema keys and sample keys match exactly, both ways.
#[test]
fn sample_and_schema_list_the_same_keys() {
    let text = sample_text();
    let root = DeTable::parse(&text).expect("sample parses");
    let mut sample = BTreeSet::new();
    collect("", root.get_ref(), &mut sample);
    let schema: BTreeSet<String> = schema_keys().into_iter().collect();
    let missing: Vec<_> = schema.difference(&sample).collect();
    let extra: Vec<_> = sample.difference(&schema).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "sample-config.toml and the schema differ.\n  in the schema but not the sample: {missing:?}\n  in the sample but not the schema: {extra:?}"
    );
}

/// The sample loads with zero diagnostics and fills every field.
#[test]
fn sample_loads_cleanly() {
    let path = Path::new(SAMPLE).to_path_buf();
    let files = ConfigFiles {
        user: None,
        project: Some(path),
    };
    let loaded = load_files(files, Path::new("/"));
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);

    let config = &loaded.config;
    for table in schema::TABLES
        .iter()
        .filter(|table| table.kind == TableKind::Table)
    {
        for key in table.keys {
            let dotted = format!("{}.{}", table.name, key.name);
            assert!(
                reflect::scalar(config, &dotted).is_some(),
                "{dotted} not read back"
            );
        }
    }
    let names = |table: &str| -> Vec<&str> {
        schema::table(table)
            .expect("table")
            .keys
            .iter()
            .map(|key| key.name)
            .collect()
    };
    let keys_of = |values: Vec<(&'static str, crate::value::Value)>| -> Vec<&'static str> {
        values.into_iter().map(|(key, _)| key).collect()
    };
    assert_eq!(config.subagents.profiles.len(), 1);
    assert_eq!(
        keys_of(reflect::profile(&config.subagents.profiles[0])),
        names("subagents.profile")
    );
    assert_eq!(config.plugins.len(), 1);
    assert_eq!(
        keys_of(reflect::plugin(&config.plugins[0])),
        names("plugins")
    );
    // One stdio and one HTTP server: together they set every key.
    assert_eq!(config.mcp_servers.len(), 2);
    let mcp_keys: BTreeSet<&str> = config
        .mcp_servers
        .iter()
        .flat_map(|server| keys_of(reflect::mcp_server(server)))
        .collect();
    assert_eq!(
        mcp_keys,
        names("mcp.servers").into_iter().collect::<BTreeSet<_>>()
    );
    assert_eq!(config.mcp_servers[0].command, "mcp-server-git");
    assert_eq!(config.mcp_servers[1].url, "https://mcp.example.com/mcp");
    assert_eq!(config.prices.len(), 1);
    assert_eq!(keys_of(reflect::price(&config.prices[0])), names("prices"));
    assert_eq!(config.price_of("gpt-5.5").map(|p| p.input), Some(1.25));
    assert_eq!(config.hooks.len(), 1);
    assert_eq!(
        keys_of(reflect::hook(&config.hooks[0])),
        names(schema::HOOKS_TABLE)
    );
    assert_eq!(config.hooks[0].event, "PreToolUse");
    assert_eq!(config.hooks[0].matcher, "^bash$");

    let explore = &config.subagents.profiles[0];
    assert_eq!(explore.name, "explore");
    assert_eq!(
        explore.allowed_tools.as_deref(),
        Some(&["ls", "read", "find", "grep"].map(String::from)[..])
    );
    assert_eq!(explore.max_tool_rounds, Some(16));
    assert_eq!(explore.auto_compact, Some(true));
    assert_eq!(explore.max_tokens, Some(500_000));
    assert_eq!(explore.max_seconds, Some(600));
    assert_ne!(*config, Config::default());
}

/// Each table and key is introduced by its schema description, and milestone
/// 2 tables say so.
#[test]
fn sample_comments_come_from_the_schema() {
    let text = sample_text();
    let comments: BTreeSet<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("# "))
        .collect();
    let mut absent = Vec::new();
    for table in schema::TABLES {
        let expected = table.description.to_owned();
        if !comments.contains(expected.as_str()) {
            absent.push(expected);
        }
        for key in table.keys {
            if !comments.contains(key.description) {
                absent.push(key.description.to_owned());
            }
        }
    }
    assert!(
        absent.is_empty(),
        "comment lines missing from sample-config.toml: {absent:#?}"
    );
}
