//! Reads the typed [`Config`] back by schema key, so `--effective` shows the
//! values the program will use, including overrides the caller applied from
//! flags after loading.
//!
//! This module owns the mapping from struct fields back to dotted keys (the
//! inverse of `build`). It must not know files, provenance or formatting.

use crate::config::{Config, HookEntry, McpServerEntry, PluginEntry, PriceConfig, SubagentProfile};
use crate::value::Value;

/// The value `config` holds for plain-table key `dotted`; `None` for optional
/// keys that nothing set and for names outside the schema.
pub(crate) fn scalar(config: &Config, dotted: &str) -> Option<Value> {
    let text = |value: &str| Some(Value::String(value.to_owned()));
    let optional = |value: &Option<String>| value.clone().map(Value::String);
    let int = |value: u64| Some(Value::Integer(i64::try_from(value).unwrap_or(i64::MAX)));
    let flag = |value: bool| Some(Value::Boolean(value));
    match dotted {
        "session.dir" => text(&config.session.dir),
        "session.max_tool_rounds" => int(config.session.max_tool_rounds.into()),
        "session.keep_messages" => int(config.session.keep_messages.into()),
        "session.max_identical_calls" => int(config.session.max_identical_calls.into()),
        "session.tool_error_note_after" => int(config.session.tool_error_note_after.into()),
        "session.max_tool_errors" => int(config.session.max_tool_errors.into()),
        "session.grounding" => config.session.grounding.map(Value::Boolean),
        "context.auto_compact" => flag(config.context.auto_compact),
        "context.auto_compact_threshold_tokens" => {
            int(config.context.auto_compact_threshold_tokens)
        }
        "context.keep_recent_tokens" => int(config.context.keep_recent_tokens),
        "provider.name" => optional(&config.provider.name),
        "provider.model" => optional(&config.provider.model),
        "provider.max_retries" => int(config.provider.max_retries.into()),
        "provider.retry_base_delay_ms" => int(config.provider.retry_base_delay_ms),
        "provider.idle_timeout_secs" => int(config.provider.idle_timeout_secs),
        "provider.max_frame_bytes" => int(config.provider.max_frame_bytes),
        "provider.max_message_bytes" => int(config.provider.max_message_bytes),
        "provider.allow_http_credentials" => flag(config.provider.allow_http_credentials),
        "provider.vision" => flag(config.provider.vision),
        "openai.base_url" => optional(&config.openai.base_url),
        "openai.api" => text(&config.openai.api),
        "openai.reasoning_effort" => text(&config.openai.reasoning_effort),
        "openai.reasoning_summary" => text(&config.openai.reasoning_summary),
        "openai.stream_usage" => flag(config.openai.stream_usage),
        "openai.transport" => text(&config.openai.transport),
        "openai.auth" => text(&config.openai.auth),
        "anthropic.auth" => text(&config.anthropic.auth),
        "prompt.text" => optional(&config.prompt.text),
        "tools.active" => config.tools.active.clone().map(Value::StringArray),
        "tools.profile" => text(&config.tools.profile),
        "tools.bash.inherit_credentials" => flag(config.tools.bash_inherit_credentials),
        "tools.bash.max_spill_bytes" => int(config.tools.bash_max_spill_bytes),
        "tools.read.image_max_edge" => int(config.tools.read_image_max_edge.into()),
        "subagents.enabled" => flag(config.subagents.enabled),
        "subagents.max_per_turn" => int(config.subagents.max_per_turn.into()),
        "subagents.max_concurrent" => int(config.subagents.max_concurrent.into()),
        "acp.ask" => config.acp.ask.clone().map(Value::StringArray),
        "sandbox.mode" => optional(&config.sandbox.mode),
        "sandbox.network" => flag(config.sandbox.network),
        "sandbox.writable_roots" => (!config.sandbox.writable_roots.is_empty())
            .then(|| Value::StringArray(config.sandbox.writable_roots.clone())),
        "sandbox.deny_read" => config.sandbox.deny_read.clone().map(Value::StringArray),
        "approval.policy" => text(&config.approval.policy),
        "approval.ask" => config.approval.ask.clone().map(Value::StringArray),
        "process.max_running" => int(config.process.max_running.into()),
        "process.wake_on_output" => flag(config.process.wake_on_output),
        "serve.token_file" => optional(&config.serve.token_file),
        "serve.max_running" => int(config.serve.max_running.into()),
        "serve.idle_unload_secs" => int(config.serve.idle_unload_secs),
        _ => None,
    }
}

/// A `[[subagents.profile]]` entry's set keys, in schema order.
pub(crate) fn profile(entry: &SubagentProfile) -> Vec<(&'static str, Value)> {
    let strings = [
        ("name", Some(&entry.name)),
        ("description", entry.description.as_ref()),
        ("provider", entry.provider.as_ref()),
        ("model", entry.model.as_ref()),
        ("openai_api", entry.openai_api.as_ref()),
        ("reasoning_effort", entry.reasoning_effort.as_ref()),
        ("reasoning_summary", entry.reasoning_summary.as_ref()),
        ("system_prompt_file", entry.system_prompt_file.as_ref()),
    ];
    let mut values: Vec<_> = strings
        .into_iter()
        .filter_map(|(key, value)| value.map(|value| (key, Value::String(value.clone()))))
        .collect();
    let rest = [
        (
            "allowed_tools",
            entry.allowed_tools.clone().map(Value::StringArray),
        ),
        (
            "max_tool_rounds",
            entry
                .max_tool_rounds
                .map(|rounds| Value::Integer(rounds.into())),
        ),
        ("auto_compact", entry.auto_compact.map(Value::Boolean)),
        (
            "auto_compact_threshold_tokens",
            entry.auto_compact_threshold_tokens.map(int),
        ),
        ("max_tokens", entry.max_tokens.map(int)),
        ("max_seconds", entry.max_seconds.map(int)),
    ];
    values.extend(
        rest.into_iter()
            .filter_map(|(key, value)| value.map(|value| (key, value))),
    );
    values
}

/// A `u64` field as a schema integer; validation keeps it within `i64`.
fn int(value: u64) -> Value {
    Value::Integer(i64::try_from(value).unwrap_or(i64::MAX))
}

/// A `[[prices]]` entry's keys, in schema order (`cached_input` when
/// set).
pub(crate) fn price(entry: &PriceConfig) -> Vec<(&'static str, Value)> {
    let mut keys = vec![
        ("model", Value::String(entry.model.clone())),
        ("input", Value::Number(entry.input)),
        ("output", Value::Number(entry.output)),
    ];
    if let Some(cached) = entry.cached_input {
        keys.push(("cached_input", Value::Number(cached)));
    }
    keys
}

/// A `[[plugins]]` entry's keys, in schema order.
pub(crate) fn plugin(entry: &PluginEntry) -> Vec<(&'static str, Value)> {
    vec![
        ("name", Value::String(entry.name.clone())),
        ("command", Value::String(entry.command.clone())),
        (
            "timeout_seconds",
            Value::Integer(i64::try_from(entry.timeout_seconds).unwrap_or(i64::MAX)),
        ),
        ("env", Value::StringArray(entry.env.clone())),
        ("disabled", Value::Boolean(entry.disabled)),
        ("sandbox", Value::Boolean(entry.sandbox)),
    ]
}

/// A `[[mcp.servers]]` entry's keys, in schema order: `name`,
/// `timeout_seconds` and `disabled` always, the other keys only when set
/// (non-empty; `enabled_tools` when present), so a stdio server shows no
/// `url` and an HTTP server no `command` and the output loads back.
pub(crate) fn mcp_server(entry: &McpServerEntry) -> Vec<(&'static str, Value)> {
    let text = |value: &str| (!value.is_empty()).then(|| Value::String(value.to_owned()));
    let list = |items: &[String]| (!items.is_empty()).then(|| Value::StringArray(items.to_vec()));
    let keys = [
        ("name", Some(Value::String(entry.name.clone()))),
        ("command", text(&entry.command)),
        ("args", list(&entry.args)),
        ("url", text(&entry.url)),
        ("headers", list(&entry.headers)),
        ("bearer_token_env", text(&entry.bearer_token_env)),
        ("env", list(&entry.env)),
        (
            "timeout_seconds",
            Some(Value::Integer(
                i64::try_from(entry.timeout_seconds).unwrap_or(i64::MAX),
            )),
        ),
        ("disabled", Some(Value::Boolean(entry.disabled))),
        (
            "enabled_tools",
            entry.enabled_tools.clone().map(Value::StringArray),
        ),
        ("disabled_tools", list(&entry.disabled_tools)),
    ];
    keys.into_iter()
        .filter_map(|(key, value)| value.map(|value| (key, value)))
        .collect()
}

/// A `[[hooks.<Event>]]` entry's keys, in schema order.
pub(crate) fn hook(entry: &HookEntry) -> Vec<(&'static str, Value)> {
    vec![
        ("matcher", Value::String(entry.matcher.clone())),
        ("command", Value::String(entry.command.clone())),
        (
            "timeout_seconds",
            Value::Integer(i64::try_from(entry.timeout_seconds).unwrap_or(i64::MAX)),
        ),
        ("disabled", Value::Boolean(entry.disabled)),
        ("protocol", Value::String(entry.protocol.clone())),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{self, TableKind};

    /// Every plain-table key with a default reads back from the defaults, and
    /// only keys without a default read as unset: no key is forgotten here.
    #[test]
    fn covers_every_plain_key() {
        let config = Config::default();
        for table in schema::TABLES
            .iter()
            .filter(|table| table.kind == TableKind::Table)
        {
            for key in table.keys {
                let dotted = format!("{}.{}", table.name, key.name);
                let value = scalar(&config, &dotted);
                let optional_by_design =
                    matches!(dotted.as_str(), "provider.model" | "openai.base_url");
                if key.default.is_some() && !optional_by_design {
                    assert_eq!(value, key.default.map(Value::from_literal), "{dotted}");
                } else {
                    assert_eq!(value, None, "{dotted}");
                }
            }
        }
        assert_eq!(scalar(&config, "nope.nope"), None);
    }
}
