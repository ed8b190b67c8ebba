//! Fills the typed [`Config`] from merged values, taking every default from
//! the schema so defaults are written down exactly once.
//!
//! This module owns the conversion from dotted keys to struct fields. It
//! must not know files, precedence or TOML; validation already guaranteed
//! types and ranges, so conversions here only clamp defensively.

use std::collections::BTreeMap;

use crate::config::{
    AcpConfig, AnthropicConfig, ApprovalConfig, Config, ContextConfig, HookEntry, McpServerEntry,
    OpenAiConfig, PluginEntry, PriceConfig, ProcessConfig, PromptConfig, ProviderConfig,
    SandboxConfig, ServeConfig, SessionConfig, SubagentProfile, SubagentsConfig, ToolsConfig,
};
use crate::parse::Entry;
use crate::schema::{self, HOOKS_TABLE};
use crate::value::Value;

/// The typed config for merged plain-table `scalars` (by `table.key`) and
/// array-table `entries` in merged order.
pub(crate) fn build(scalars: &BTreeMap<String, Value>, entries: &[Entry]) -> Config {
    let get = |table: &'static str| Values {
        table,
        set: SetValues::Scalars(scalars),
    };
    let session = get("session");
    let context = get("context");
    let provider = get("provider");
    let openai = get("openai");
    let subagents = get("subagents");
    Config {
        session: SessionConfig {
            dir: session.string("dir"),
            max_tool_rounds: session.u32("max_tool_rounds"),
            keep_messages: session.u32("keep_messages"),
            max_identical_calls: session.u32("max_identical_calls"),
            tool_error_note_after: session.u32("tool_error_note_after"),
            max_tool_errors: session.u32("max_tool_errors"),
            grounding: session.set("grounding").and_then(Value::as_bool),
        },
        context: ContextConfig {
            auto_compact: context.bool("auto_compact"),
            auto_compact_threshold_tokens: context.u64("auto_compact_threshold_tokens"),
            keep_recent_tokens: context.u64("keep_recent_tokens"),
        },
        provider: ProviderConfig {
            name: provider.set_string("name"),
            model: provider.set_string("model"),
            max_retries: provider.u32("max_retries"),
            retry_base_delay_ms: provider.u64("retry_base_delay_ms"),
            idle_timeout_secs: provider.u64("idle_timeout_secs"),
            max_frame_bytes: provider.u64("max_frame_bytes"),
            max_message_bytes: provider.u64("max_message_bytes"),
            allow_http_credentials: provider.bool("allow_http_credentials"),
            vision: provider.bool("vision"),
        },
        openai: OpenAiConfig {
            base_url: openai.set_string("base_url"),
            api: openai.string("api"),
            reasoning_effort: openai.string("reasoning_effort"),
            reasoning_summary: openai.string("reasoning_summary"),
            stream_usage: openai.bool("stream_usage"),
            transport: openai.string("transport"),
            auth: openai.string("auth"),
        },
        anthropic: AnthropicConfig {
            auth: get("anthropic").string("auth"),
        },
        prompt: PromptConfig {
            text: get("prompt").set_string("text"),
        },
        tools: ToolsConfig {
            active: get("tools")
                .set("active")
                .and_then(Value::as_strings)
                .map(<[String]>::to_vec),
            profile: get("tools").string("profile"),
            bash_inherit_credentials: get("tools.bash").bool("inherit_credentials"),
            bash_max_spill_bytes: get("tools.bash").u64("max_spill_bytes"),
            read_image_max_edge: get("tools.read").u32("image_max_edge"),
        },
        subagents: SubagentsConfig {
            enabled: subagents.bool("enabled"),
            max_per_turn: subagents.u32("max_per_turn"),
            max_concurrent: subagents.u32("max_concurrent"),
            profiles: entries_of(entries, "subagents.profile")
                .map(profile)
                .collect(),
        },
        acp: AcpConfig {
            ask: get("acp")
                .set("ask")
                .and_then(Value::as_strings)
                .map(<[String]>::to_vec),
        },
        sandbox: SandboxConfig {
            mode: get("sandbox").set_string("mode"),
            network: get("sandbox").bool("network"),
            writable_roots: get("sandbox")
                .set("writable_roots")
                .and_then(Value::as_strings)
                .map(<[String]>::to_vec)
                .unwrap_or_default(),
            deny_read: get("sandbox")
                .set("deny_read")
                .and_then(Value::as_strings)
                .map(<[String]>::to_vec),
        },
        approval: ApprovalConfig {
            policy: get("approval").string("policy"),
            ask: get("approval")
                .set("ask")
                .or_else(|| get("acp").set("ask"))
                .and_then(Value::as_strings)
                .map(<[String]>::to_vec),
        },
        process: ProcessConfig {
            max_running: get("process").u32("max_running"),
            wake_on_output: get("process").bool("wake_on_output"),
        },
        serve: ServeConfig {
            token_file: get("serve").set_string("token_file"),
            max_running: get("serve").u32("max_running"),
            idle_unload_secs: get("serve").u64("idle_unload_secs"),
        },
        plugins: entries_of(entries, "plugins").map(plugin).collect(),
        mcp_servers: entries_of(entries, "mcp.servers").map(mcp_server).collect(),
        hooks: entries_of(entries, HOOKS_TABLE).map(hook).collect(),
        prices: entries_of(entries, "prices").map(price).collect(),
        project_settings: Vec::new(),
    }
}

/// The entries of one schema table, in merged order.
fn entries_of<'a>(entries: &'a [Entry], table: &'static str) -> impl Iterator<Item = &'a Entry> {
    entries
        .iter()
        .filter(move |entry| entry.table.name == table)
}

/// A `[[subagents.profile]]` entry.
fn profile(entry: &Entry) -> SubagentProfile {
    let values = entry_values(entry);
    SubagentProfile {
        name: values.string("name"),
        description: values.set_string("description"),
        provider: values.set_string("provider"),
        model: values.set_string("model"),
        openai_api: values.set_string("openai_api"),
        reasoning_effort: values.set_string("reasoning_effort"),
        reasoning_summary: values.set_string("reasoning_summary"),
        system_prompt_file: values.set_string("system_prompt_file"),
        allowed_tools: values
            .set("allowed_tools")
            .and_then(Value::as_strings)
            .map(<[String]>::to_vec),
        max_tool_rounds: values
            .set("max_tool_rounds")
            .and_then(Value::as_integer)
            .map(clamp_u32),
        auto_compact: values.set("auto_compact").and_then(Value::as_bool),
        auto_compact_threshold_tokens: values
            .set("auto_compact_threshold_tokens")
            .and_then(Value::as_integer)
            .map(clamp_u64),
        max_tokens: values
            .set("max_tokens")
            .and_then(Value::as_integer)
            .map(clamp_u64),
        max_seconds: values
            .set("max_seconds")
            .and_then(Value::as_integer)
            .map(clamp_u64),
        source: entry.source.clone(),
    }
}

/// A `[[prices]]` entry.
fn price(entry: &Entry) -> PriceConfig {
    let values = entry_values(entry);
    let number = |key| values.set(key).and_then(Value::as_number);
    PriceConfig {
        model: values.string("model"),
        input: number("input").unwrap_or_default(),
        output: number("output").unwrap_or_default(),
        cached_input: number("cached_input"),
        source: entry.source.clone(),
    }
}

/// A `[[plugins]]` entry.
fn plugin(entry: &Entry) -> PluginEntry {
    let values = entry_values(entry);
    PluginEntry {
        name: values.string("name"),
        command: values.string("command"),
        timeout_seconds: values.u64("timeout_seconds"),
        env: values.strings("env"),
        set_env: Vec::new(),
        disabled: values.bool("disabled"),
        sandbox: values.bool("sandbox"),
        source: entry.source.clone(),
    }
}

/// A `[[mcp.servers]]` entry.
fn mcp_server(entry: &Entry) -> McpServerEntry {
    let values = entry_values(entry);
    McpServerEntry {
        name: values.string("name"),
        command: values.string("command"),
        args: values.strings("args"),
        url: values.string("url"),
        headers: values.strings("headers"),
        bearer_token_env: values.string("bearer_token_env"),
        env: values.strings("env"),
        set_env: Vec::new(),
        timeout_seconds: values.u64("timeout_seconds"),
        disabled: values.bool("disabled"),
        enabled_tools: values
            .set("enabled_tools")
            .and_then(Value::as_strings)
            .map(<[String]>::to_vec),
        disabled_tools: values.strings("disabled_tools"),
        source: entry.source.clone(),
    }
}

/// A `[[hooks.<Event>]]` entry.
fn hook(entry: &Entry) -> HookEntry {
    let values = entry_values(entry);
    HookEntry {
        event: entry
            .name
            .strip_prefix("hooks.")
            .unwrap_or(&entry.name)
            .to_owned(),
        matcher: values.string("matcher"),
        command: values.string("command"),
        timeout_seconds: values.u64("timeout_seconds"),
        disabled: values.bool("disabled"),
        protocol: values.string("protocol"),
        source: entry.source.clone(),
    }
}

/// The values of one entry.
fn entry_values(entry: &Entry) -> Values<'_> {
    Values {
        table: entry.table.name,
        set: SetValues::Entry(&entry.values),
    }
}

/// Where the values set by files are kept.
enum SetValues<'v> {
    /// Merged plain-table values by dotted `table.key`.
    Scalars(&'v BTreeMap<String, Value>),
    /// One entry's values by bare key.
    Entry(&'v BTreeMap<&'static str, Value>),
}

/// Typed reads of one table's values with schema defaults filled in.
struct Values<'v> {
    /// The schema table name, to find defaults.
    table: &'static str,
    /// The values files set.
    set: SetValues<'v>,
}

impl<'v> Values<'v> {
    /// The value a file set for `key`, if any.
    fn set(&self, key: &str) -> Option<&'v Value> {
        match self.set {
            SetValues::Scalars(scalars) => scalars.get(&format!("{}.{key}", self.table)),
            SetValues::Entry(values) => values.get(key),
        }
    }

    /// The value set for `key`, else its compiled default.
    fn value(&self, key: &str) -> Option<Value> {
        self.set(key).cloned().or_else(|| {
            schema::key(&format!("{}.{key}", self.table))
                .and_then(|(_, spec)| spec.default)
                .map(Value::from_literal)
        })
    }

    /// A string with its default (empty only for keys without one).
    fn string(&self, key: &str) -> String {
        self.value(key)
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// A string only when a file set it.
    fn set_string(&self, key: &str) -> Option<String> {
        self.set(key).and_then(Value::as_str).map(str::to_owned)
    }

    /// A string array (empty when unset).
    fn strings(&self, key: &str) -> Vec<String> {
        self.set(key)
            .and_then(Value::as_strings)
            .map(<[String]>::to_vec)
            .unwrap_or_default()
    }

    /// A boolean with its default.
    fn bool(&self, key: &str) -> bool {
        self.value(key)
            .and_then(|value| value.as_bool())
            .unwrap_or_default()
    }

    /// A `u32` integer with its default.
    fn u32(&self, key: &str) -> u32 {
        clamp_u32(self.integer(key))
    }

    /// A `u64` integer with its default.
    fn u64(&self, key: &str) -> u64 {
        clamp_u64(self.integer(key))
    }

    /// An integer with its default.
    fn integer(&self, key: &str) -> i64 {
        self.value(key)
            .and_then(|value| value.as_integer())
            .unwrap_or_default()
    }
}

/// Validation keeps `u32` fields in range; clamp anyway rather than panic.
fn clamp_u32(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(if value < 0 { 0 } else { u32::MAX })
}

/// Validation keeps `u64` fields non-negative; clamp anyway rather than panic.
fn clamp_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With nothing set, every field holds the requirement's default.
    #[test]
    fn defaults_match_requirements() {
        let config = Config::default();
        assert_eq!(config.session.dir, ".etch/sessions");
        assert_eq!(config.session.max_tool_rounds, 32);
        assert_eq!(config.session.keep_messages, 12);
        assert!(!config.context.auto_compact);
        assert_eq!(config.context.auto_compact_threshold_tokens, 120_000);
        assert_eq!(config.context.keep_recent_tokens, 20_000);
        assert_eq!(config.provider.name, None);
        assert_eq!(config.provider.model, None);
        assert_eq!(config.provider.max_retries, 3);
        assert_eq!(config.provider.retry_base_delay_ms, 2000);
        assert_eq!(config.openai.base_url, None);
        assert_eq!(config.openai.api, "chat");
        assert_eq!(config.openai.reasoning_effort, "minimal");
        assert_eq!(config.openai.reasoning_summary, "auto");
        assert!(config.openai.stream_usage);
        assert_eq!(config.openai.transport, "sse");
        assert_eq!(config.prompt.text, None);
        assert!(!config.tools.bash_inherit_credentials);
        assert!(!config.subagents.enabled);
        assert_eq!(config.subagents.max_per_turn, 4);
        assert_eq!(config.subagents.max_concurrent, 2);
        assert!(config.subagents.profiles.is_empty());
        assert!(config.plugins.is_empty());
        assert!(config.mcp_servers.is_empty());
        assert!(config.hooks.is_empty());
    }

    /// Out-of-range integers clamp instead of wrapping.
    #[test]
    fn clamps_integers() {
        assert_eq!(clamp_u32(-1), 0);
        assert_eq!(clamp_u32(i64::MAX), u32::MAX);
        assert_eq!(clamp_u64(-5), 0);
    }
}
