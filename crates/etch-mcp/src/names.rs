//! Provider-safe tool names for MCP tools: `mcp__<server>__<tool>`,
//! with every character outside `A-Z a-z 0-9 _ -` replaced by `_`, at
//! most 64 characters (what providers accept). A name that is too long,
//! or that two server tools would share after the replacement, keeps a
//! prefix and ends in a hash of the server's own tool name, so the same
//! tool list always maps to the same names, whatever order it comes in.
//!
//! This module must not know MCP or how names are used: it maps strings.

use std::collections::HashMap;

/// Longest tool name providers accept.
const MAX: usize = 64;

/// Characters of the hash suffix, with its `_`.
const SUFFIX: usize = 9;

/// The etch name of `tool` on `server` when nothing collides with it.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("mcp__{}__{}", safe(server), safe(tool));
    if full.len() <= MAX {
        full
    } else {
        hashed(&full, tool)
    }
}

/// The etch names of a server's `tools`, in their order: each distinct
/// tool gets a distinct name (duplicates in the list itself share one).
pub fn tool_names(server: &str, tools: &[String]) -> Vec<String> {
    let plain: Vec<String> = tools.iter().map(|t| tool_name(server, t)).collect();
    let mut owners: HashMap<&str, Vec<&str>> = HashMap::new();
    for (name, tool) in plain.iter().zip(tools) {
        let list = owners.entry(name.as_str()).or_default();
        if !list.contains(&tool.as_str()) {
            list.push(tool);
        }
    }
    plain
        .iter()
        .zip(tools)
        .map(|(name, tool)| {
            if owners.get(name.as_str()).is_some_and(|o| o.len() > 1) {
                hashed(name, tool)
            } else {
                name.clone()
            }
        })
        .collect()
}

/// `name` cut to leave room for a hash of `tool`, and that hash.
fn hashed(name: &str, tool: &str) -> String {
    // `name` is ASCII after `safe`, so any byte index is a boundary.
    let keep = name.len().min(MAX - SUFFIX);
    format!("{}_{:08x}", &name[..keep], fnv1a(tool))
}

/// `text` with every character a provider refuses in a tool name
/// replaced by `_`.
fn safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// 32-bit FNV-1a: small, stable across builds and platforms (unlike the
/// standard library's hasher), and enough to tell a few names apart.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_plain() {
        assert_eq!(tool_name("git", "git_status"), "mcp__git__git_status");
        assert_eq!(tool_name("my srv", "a.b/c"), "mcp__my_srv__a_b_c");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let long = "x".repeat(80);
        let name = tool_name("server", &long);
        assert_eq!(name.len(), MAX);
        assert_eq!(name, tool_name("server", &long));
        assert!(name.starts_with("mcp__server__xxx"));
        let other = tool_name("server", &format!("{long}y"));
        assert_ne!(name, other);
    }

    #[test]
    fn collisions_get_distinct_names_whatever_the_order() {
        let tools = vec!["a.b".to_owned(), "a_b".to_owned(), "c".to_owned()];
        let names = tool_names("s", &tools);
        assert_ne!(names[0], names[1]);
        assert_eq!(names[2], "mcp__s__c");
        let reversed = vec!["c".to_owned(), "a_b".to_owned(), "a.b".to_owned()];
        let again = tool_names("s", &reversed);
        assert_eq!(again[1], names[1]);
        assert_eq!(again[2], names[0]);
        for name in names.iter().chain(&again) {
            assert!(name.len() <= MAX);
        }
    }
}
