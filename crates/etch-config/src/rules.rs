//! Rules of array-table entries that one key's [`KeySpec`] cannot say:
//! across keys, such as "exactly one of `command` and `url`" for
//! `[[mcp.servers]]` (E-CFG-23), or about one table only, such as "no
//! `task` in a `[[subagents.profile]]`'s `allowed_tools`" (C38).
//!
//! This module owns those rules and which key each finding is about. It must
//! not know files, lines or TOML; the parser runs a table's
//! [`EntryRule`] on an entry whose keys all passed on their own, reports
//! each finding at the key it names, and drops the entry.
//!
//! [`KeySpec`]: crate::schema::KeySpec

use std::collections::BTreeMap;

use crate::problem::Problem;
use crate::schema::EntryRule;
use crate::value::Value;

/// One cross-key finding: the key it is about and what is wrong.
pub(crate) type Finding = (&'static str, Problem);

/// The findings of `rule` for one entry of table `table` (as written, e.g.
/// `mcp.servers`) with its valid `values`; empty when the entry is fine.
pub(crate) fn check(
    rule: EntryRule,
    table: &str,
    values: &BTreeMap<&'static str, Value>,
) -> Vec<Finding> {
    match rule {
        EntryRule::McpTransport => mcp_transport(table, values),
        EntryRule::NoNestedTask => no_nested_task(values),
    }
}

/// `[[subagents.profile]]` (C38): `allowed_tools` must not list the `task`
/// tool, as the first subagent release has no nested delegation
/// (E-SUB-11). Tool names are matched exactly, as the model sees them.
fn no_nested_task(values: &BTreeMap<&'static str, Value>) -> Vec<Finding> {
    let listed = values
        .get("allowed_tools")
        .and_then(Value::as_strings)
        .is_some_and(|tools| tools.iter().any(|tool| tool == "task"));
    if listed {
        vec![("allowed_tools", Problem::NestedTask)]
    } else {
        Vec::new()
    }
}

/// `[[mcp.servers]]`: an enabled entry sets exactly one of `command` (a
/// stdio server) and `url` (an HTTP server). An entry with one of them must
/// not set the other kind's keys: `args` and `env` belong to `command`,
/// `headers` and `bearer_token_env` to `url`. Empty strings and empty arrays
/// count as unset. A disabled entry may set neither or both; once it sets
/// exactly one, the other kind's keys are still refused.
fn mcp_transport(table: &str, values: &BTreeMap<&'static str, Value>) -> Vec<Finding> {
    let set = |key: &str| match values.get(key) {
        Some(Value::String(text)) => !text.trim().is_empty(),
        Some(Value::StringArray(items)) => !items.is_empty(),
        Some(_) => true,
        None => false,
    };
    let enabled = values.get("disabled").and_then(Value::as_bool) != Some(true);
    let (command, url) = (set("command"), set("url"));
    let (applies, other, misplaced): (_, _, &[&'static str]) = match (command, url) {
        (false, false) if enabled => {
            let problem = Problem::NoTransport {
                table: table.to_owned(),
            };
            return vec![("command", problem)];
        }
        (true, true) if enabled => {
            let problem = Problem::BothTransports {
                table: table.to_owned(),
            };
            return vec![("url", problem)];
        }
        (true, false) => ("url", "command", &["headers", "bearer_token_env"]),
        (false, true) => ("command", "url", &["args", "env"]),
        _ => return Vec::new(),
    };
    misplaced
        .iter()
        .filter(|key| set(key))
        .map(|&key| {
            (
                key,
                Problem::WrongTransport {
                    key,
                    applies,
                    other,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry's values from `(key, value)` pairs.
    fn values(pairs: &[(&'static str, Value)]) -> BTreeMap<&'static str, Value> {
        pairs.iter().cloned().collect()
    }

    /// The keys and messages `check` reports for `pairs`.
    fn run(pairs: &[(&'static str, Value)]) -> Vec<(&'static str, String)> {
        check(EntryRule::McpTransport, "mcp.servers", &values(pairs))
            .into_iter()
            .map(|(key, problem)| (key, problem.to_string()))
            .collect()
    }

    /// A string value.
    fn text(value: &str) -> Value {
        Value::String(value.to_owned())
    }

    /// A string-array value.
    fn list(items: &[&str]) -> Value {
        Value::StringArray(items.iter().map(|item| (*item).to_owned()).collect())
    }

    /// The keys and messages `check` reports for a `[[subagents.profile]]`
    /// entry made of `pairs`.
    fn run_profile(pairs: &[(&'static str, Value)]) -> Vec<(&'static str, String)> {
        check(EntryRule::NoNestedTask, "subagents.profile", &values(pairs))
            .into_iter()
            .map(|(key, problem)| (key, problem.to_string()))
            .collect()
    }

    /// One transport, with its own keys, is fine.
    #[test]
    fn one_transport_passes() {
        assert!(run(&[("command", text("srv")), ("args", list(&["-v"]))]).is_empty());
        assert!(run(&[("url", text("https://x")), ("headers", list(&["A: b"]))]).is_empty());
        // Empty values of the other kind count as unset.
        assert!(run(&[("url", text("https://x")), ("args", list(&[]))]).is_empty());
        assert!(run(&[("command", text("srv")), ("bearer_token_env", text(""))]).is_empty());
    }

    /// Neither or both is an error when enabled, fine when disabled.
    #[test]
    fn neither_or_both() {
        let neither = run(&[("command", text("  "))]);
        assert_eq!(neither.len(), 1);
        assert_eq!(neither[0].0, "command");
        assert!(neither[0].1.contains("needs command"), "{neither:?}");
        let both = run(&[("command", text("srv")), ("url", text("https://x"))]);
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].0, "url");
        assert!(both[0].1.contains("has both command and url"), "{both:?}");
        let off = Value::Boolean(true);
        assert!(run(&[("disabled", off.clone())]).is_empty());
        assert!(
            run(&[
                ("disabled", off),
                ("command", text("srv")),
                ("url", text("https://x")),
            ])
            .is_empty()
        );
    }

    /// Keys of the other kind of server name the key and the fix.
    #[test]
    fn keys_of_the_other_transport() {
        let found = run(&[
            ("url", text("https://x")),
            ("args", list(&["-v"])),
            ("env", list(&["HOME"])),
        ]);
        let keys: Vec<_> = found.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, ["args", "env"]);
        assert_eq!(
            found[0].1,
            "args applies to command servers and this entry sets url; remove args, or use \
             command instead of url"
        );
        let found = run(&[
            ("command", text("srv")),
            ("headers", list(&["A: b"])),
            ("bearer_token_env", text("TOKEN")),
        ]);
        let keys: Vec<_> = found.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, ["headers", "bearer_token_env"]);
        assert!(
            found[1]
                .1
                .starts_with("bearer_token_env applies to url servers"),
            "{found:?}"
        );
    }

    /// `task` in a profile's `allowed_tools` is refused at that key (C38);
    /// other tools, an empty list, no list, or a name that only contains
    /// `task` are fine.
    #[test]
    fn profile_without_nested_task() {
        let found = run_profile(&[
            ("name", text("explore")),
            ("allowed_tools", list(&["read", "task", "grep"])),
        ]);
        assert_eq!(
            found,
            [(
                "allowed_tools",
                "`task` cannot be given to a subagent: nested delegation comes later (C38); \
                 remove it from allowed_tools"
                    .to_owned()
            )]
        );
        assert!(run_profile(&[("name", text("explore"))]).is_empty());
        assert!(run_profile(&[("allowed_tools", list(&[]))]).is_empty());
        assert!(
            run_profile(&[("allowed_tools", list(&["read", "tasks", "mcp__x__task"]))]).is_empty()
        );
    }
}
