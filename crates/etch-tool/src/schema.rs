//! Validation of tool arguments against a tool's JSON Schema (P-TEXEC-04).
//!
//! Supports the keywords tool schemas actually use: `type` (a name or a list),
//! `properties`, `required`, `additionalProperties` (boolean or schema),
//! `items`, `enum`, `const`, `minimum`, `maximum`, `minLength`, `minItems`,
//! `anyOf` and `oneOf`. Unknown keywords are ignored, as JSON Schema requires.
//! A general validator crate would pull in remote-reference fetching and a
//! regex engine for a job this size; this one is small, total and fast.

use serde_json::{Map, Value};

/// `args` without the placeholders small models put in optional
/// arguments they mean to leave out: `null`, or a number below the
/// property's `minimum`, or a string shorter than its `minLength`
/// (`"limit": 0`, `"offset": 0`, `"pattern": ""` for an optional one).
/// Such a value has no meaning the tool could honour; leaving it out
/// gives the default the model wanted instead of a validation error it
/// would repeat. Required properties are kept as sent, so their errors
/// still reach the model.
pub fn without_placeholders(schema: &Value, args: &Value) -> Value {
    let (Some(props), Some(given)) = (
        schema.get("properties").and_then(Value::as_object),
        args.as_object(),
    ) else {
        return args.clone();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let placeholder = |key: &str, value: &Value| {
        if required.contains(&key) {
            return false;
        }
        let prop = props.get(key);
        let bound = |name: &str| prop.and_then(|p| p.get(name)).and_then(Value::as_f64);
        match value {
            Value::Null => true,
            Value::Number(n) => {
                bound("minimum").is_some_and(|min| n.as_f64().is_some_and(|v| v < min))
            }
            Value::String(s) => prop
                .and_then(|p| p.get("minLength"))
                .and_then(Value::as_u64)
                .is_some_and(|min| u64::try_from(s.chars().count()).is_ok_and(|n| n < min)),
            _ => false,
        }
    };
    Value::Object(
        given
            .iter()
            .filter(|(key, value)| !placeholder(key, value))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
    )
}

/// Validates `value` against `schema`, returning every problem found as
/// `"{path}: {message}"` lines (path `root` for the top level).
pub fn validate(schema: &Value, value: &Value) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    check(schema, value, "root", &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Formats validation problems the way Pi reports them to the model.
pub fn format_errors(tool: &str, errors: &[String], args: &Value) -> String {
    let list: Vec<String> = errors.iter().map(|e| format!("  - {e}")).collect();
    let received = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
    format!(
        "Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{received}",
        list.join("\n")
    )
}

/// The JSON Schema type name of a value.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `value` has JSON Schema type `ty` (integers are numbers; a float
/// without a fractional part counts as an integer).
fn has_type(value: &Value, ty: &str) -> bool {
    match (ty, value) {
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        ("number", Value::Number(_)) => true,
        _ => type_name(value) == ty,
    }
}

/// Recursive worker of [`validate`].
fn check(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    if let Some(ty) = schema.get("type") {
        let allowed: Vec<&str> = match ty {
            Value::String(s) => vec![s.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| has_type(value, t)) {
            errors.push(format!("{path}: must be {}", allowed.join(" or ")));
            return;
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.contains(value)
    {
        let list: Vec<String> = options.iter().map(Value::to_string).collect();
        errors.push(format!("{path}: must be one of {}", list.join(", ")));
    }
    if let Some(expected) = schema.get("const")
        && expected != value
    {
        errors.push(format!("{path}: must be {expected}"));
    }
    check_bounds(schema, value, path, errors);
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(keyword) {
            let passing = options
                .iter()
                .filter(|o| {
                    let mut sub = Vec::new();
                    check(o, value, path, &mut sub);
                    sub.is_empty()
                })
                .count();
            let ok = if keyword == "anyOf" {
                passing > 0
            } else {
                passing == 1
            };
            if !ok {
                errors.push(format!(
                    "{path}: must match {keyword} of the allowed shapes"
                ));
            }
        }
    }
    match value {
        Value::Object(map) => check_object(schema, map, path, errors),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}/{i}"), errors);
                }
            }
        }
        _ => {}
    }
}

/// Numeric, length and size bounds.
fn check_bounds(schema: &Map<String, Value>, value: &Value, path: &str, errors: &mut Vec<String>) {
    let number = |key| schema.get(key).and_then(Value::as_f64);
    let count = |key| schema.get(key).and_then(Value::as_u64);
    if let (Some(n), Some(min)) = (value.as_f64(), number("minimum"))
        && n < min
    {
        errors.push(format!("{path}: must be >= {min}"));
    }
    if let (Some(n), Some(max)) = (value.as_f64(), number("maximum"))
        && n > max
    {
        errors.push(format!("{path}: must be <= {max}"));
    }
    if let (Some(s), Some(min)) = (value.as_str(), count("minLength"))
        && (s.chars().count() as u64) < min
    {
        errors.push(format!("{path}: must have at least {min} characters"));
    }
    if let (Some(a), Some(min)) = (value.as_array(), count("minItems"))
        && (a.len() as u64) < min
    {
        errors.push(format!("{path}: must have at least {min} items"));
    }
}

/// `required`, `properties` and `additionalProperties` of an object value.
fn check_object(
    schema: &Map<String, Value>,
    map: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<String>,
) {
    let child = |key: &str| {
        if path == "root" {
            key.to_string()
        } else {
            format!("{path}/{key}")
        }
    };
    if let Some(Value::Array(required)) = schema.get("required") {
        for key in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(key) {
                errors.push(format!("{path}: must have required property '{key}'"));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, item) in map {
        match properties.and_then(|p| p.get(key)) {
            Some(prop_schema) => check(prop_schema, item, &child(key), errors),
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    errors.push(format!("{path}: must not have additional property '{key}'"));
                }
                Some(extra @ Value::Object(_)) => check(extra, item, &child(key), errors),
                _ => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A schema shaped like the built-in tools'.
    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["a", "b"]},
                "files": {"type": "array", "items": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    /// Valid arguments pass, including an integral float.
    #[test]
    fn accepts_valid_arguments() {
        assert!(validate(&schema(), &json!({"path": "a", "limit": 3.0, "mode": "a"})).is_ok());
    }

    /// Every kind of problem is reported with its path.
    #[test]
    fn reports_each_problem_with_its_path() {
        let errors = validate(
            &schema(),
            &json!({"limit": 0, "mode": "c", "extra": 1, "files": [{"x": 1}]}),
        )
        .unwrap_err();
        assert!(errors.contains(&"root: must have required property 'path'".to_string()));
        assert!(errors.contains(&"limit: must be >= 1".to_string()));
        assert!(errors.contains(&"mode: must be one of \"a\", \"b\"".to_string()));
        assert!(errors.contains(&"root: must not have additional property 'extra'".to_string()));
        assert!(errors.contains(&"files/0: must have required property 'path'".to_string()));
        let wrong = validate(&schema(), &json!({"path": 5})).unwrap_err();
        assert_eq!(wrong, ["path: must be string"]);
        assert_eq!(
            validate(&schema(), &json!("x")).unwrap_err(),
            ["root: must be object"]
        );
    }

    /// The model-facing message names the tool and echoes the arguments.
    #[test]
    fn formats_like_pi() {
        let text = format_errors(
            "read",
            &["root: must have required property 'path'".into()],
            &json!({}),
        );
        assert!(text.starts_with("Validation failed for tool \"read\":\n  - root: must have"));
        assert!(text.ends_with("Received arguments:\n{}"));
    }
}
