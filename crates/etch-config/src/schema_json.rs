//! `etch config schema` (E-CFG-19) and the flat key list: the schema in a
//! model-neutral JSON form.
//!
//! This module owns only the JSON layout of the schema; it must not know
//! files or loading.

use serde_json::{Value as Json, json};

use crate::schema::{Form, HOOK_EVENTS, HOOKS_TABLE, KeySpec, Literal, TABLES, TableKind};

/// Every table and key with type, default, description, allowed values,
/// range, form (`server_name`, `profile_name`, `http_url`, `http_header`,
/// `env_var_name` or null) and merge rule: `{"tables":[{"name":"session","array":false,
/// "milestone":"M1","merge":"override","description":…,"keys":[{"key":"dir",
/// "type":"string","default":".etch/sessions",…}]}],"hook_events":[…]}`.
/// Hook tables appear once as `hooks.*`, with their valid events.
pub fn schema_json() -> Json {
    let tables: Vec<Json> = TABLES
        .iter()
        .map(|table| {
            let mut object = json!({
                "name": table.name,
                "array": table.kind == TableKind::ArrayTable,
                "milestone": table.milestone.label(),
                "merge": table.kind.merge_name(),
                "description": table.description,
                "keys": table.keys.iter().map(key_json).collect::<Vec<_>>(),
            });
            if table.name == HOOKS_TABLE {
                object["events"] = json!(HOOK_EVENTS);
            }
            object
        })
        .collect();
    json!({ "tables": tables, "hook_events": HOOK_EVENTS })
}

/// Every key as dotted `table.key`, in schema order; hook keys are listed
/// once as `hooks.*.matcher` and so on.
pub fn schema_keys() -> Vec<String> {
    TABLES
        .iter()
        .flat_map(|table| {
            table
                .keys
                .iter()
                .map(move |key| format!("{}.{}", table.name, key.name))
        })
        .collect()
}

/// One key's JSON object.
fn key_json(key: &KeySpec) -> Json {
    json!({
        "key": key.name,
        "type": key.ty.schema_name(),
        "default": key.default.map(|default| match default {
            Literal::Str(text) => json!(text),
            Literal::Int(number) => json!(number),
            Literal::Bool(flag) => json!(flag),
        }),
        "description": key.description,
        "allowed": key.allowed,
        "minimum": key.min,
        "maximum": key.max,
        "regex": key.regex,
        "path": key.path,
        "format": key.form.map(Form::schema_name),
        "required": key.required.schema_name(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON lists every key of `schema_keys`, with defaults and types.
    #[test]
    fn json_lists_every_schema_key() {
        let json = schema_json();
        let mut listed = Vec::new();
        for table in json["tables"].as_array().expect("tables") {
            let name = table["name"].as_str().expect("name");
            for key in table["keys"].as_array().expect("keys") {
                listed.push(format!("{name}.{}", key["key"].as_str().expect("key")));
            }
        }
        assert_eq!(listed, schema_keys());
        assert!(listed.contains(&"hooks.*.matcher".to_owned()));
        assert!(listed.contains(&"subagents.profile.allowed_tools".to_owned()));

        let session = &json["tables"][0];
        assert_eq!(session["name"], "session");
        assert_eq!(session["array"], false);
        assert_eq!(session["milestone"], "M1");
        assert_eq!(session["keys"][0]["key"], "dir");
        assert_eq!(session["keys"][0]["type"], "string");
        assert_eq!(session["keys"][0]["default"], ".etch/sessions");
        assert_eq!(session["keys"][0]["allowed"], Json::Null);
        let provider = json["tables"]
            .as_array()
            .expect("tables")
            .iter()
            .find(|table| table["name"] == "provider")
            .expect("provider");
        assert_eq!(provider["keys"][0]["default"], Json::Null);
        assert_eq!(
            provider["keys"][0]["allowed"],
            json!(["echo", "openai", "anthropic"])
        );
        let plugins = json["tables"]
            .as_array()
            .expect("tables")
            .iter()
            .find(|table| table["name"] == "plugins")
            .expect("plugins");
        assert_eq!(plugins["array"], true);
        assert_eq!(plugins["merge"], "append");
        assert_eq!(plugins["milestone"], "M2");
        let mcp = json["tables"]
            .as_array()
            .expect("tables")
            .iter()
            .find(|table| table["name"] == "mcp.servers")
            .expect("mcp.servers");
        assert_eq!(mcp["array"], true);
        assert_eq!(mcp["merge"], "append");
        assert_eq!(mcp["milestone"], "M2");
        let mcp_keys: Vec<_> = mcp["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .map(|key| key["key"].as_str().expect("key"))
            .collect();
        assert_eq!(
            mcp_keys,
            [
                "name",
                "command",
                "args",
                "url",
                "headers",
                "bearer_token_env",
                "env",
                "timeout_seconds",
                "disabled",
                "enabled_tools",
                "disabled_tools"
            ]
        );
        assert_eq!(mcp["keys"][0]["required"], "required");
        assert_eq!(mcp["keys"][0]["format"], "server_name");
        assert_eq!(mcp["keys"][3]["format"], "http_url");
        assert_eq!(mcp["keys"][4]["format"], "http_header");
        assert_eq!(mcp["keys"][5]["format"], "env_var_name");
        assert_eq!(mcp["keys"][7]["default"], 30);
        assert_eq!(mcp["keys"][7]["minimum"], 1);
        assert_eq!(mcp["keys"][8]["default"], false);
        assert_eq!(session["keys"][0]["format"], Json::Null);
        assert_eq!(json["hook_events"].as_array().map(Vec::len), Some(11));
    }
}
