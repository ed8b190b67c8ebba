//! Shared argument handling: every tool validates its arguments against its
//! own schema before deserializing them, so a direct call (`etch tool ...`)
//! gets exactly the checks and messages a model call gets.

use etch_model::ToolSpec;
use etch_tool::ToolError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Validates `args` against `spec` and deserializes them.
pub fn parse<T: DeserializeOwned>(spec: &ToolSpec, args: Value) -> Result<T, ToolError> {
    if let Err(errors) = etch_tool::schema::validate(&spec.parameters, &args) {
        return Err(ToolError::new(etch_tool::schema::format_errors(
            &spec.name, &errors, &args,
        )));
    }
    serde_json::from_value(args)
        .map_err(|e| ToolError::new(format!("invalid arguments for {}: {e}", spec.name)))
}

/// Builds a spec from its parts.
pub fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    }
}
