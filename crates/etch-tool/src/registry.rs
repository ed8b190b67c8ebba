//! The registry of active tools: one sorted, unified list (E-TOOL-02).

use std::collections::BTreeMap;
use std::sync::Arc;

use etch_model::ToolSpec;

use crate::tool::Tool;

/// A tool that cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The name is not a provider-compatible identifier.
    #[error("tool name {0:?} is invalid: use 1-64 characters from A-Z, a-z, 0-9, _ and -")]
    InvalidName(String),
    /// The parameters are not a JSON object schema.
    #[error("tool {0:?} has parameters that are not a JSON object schema (\"type\": \"object\")")]
    InvalidSchema(String),
    /// Two tools share a name.
    #[error("tool {0:?} is registered twice")]
    Duplicate(String),
}

/// Active tools by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    /// Tools sorted by name.
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

/// Whether a name matches `^[A-Za-z0-9_-]{1,64}$`.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool after checking its name and schema shape.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let spec = tool.spec();
        if !valid_name(&spec.name) {
            return Err(RegistryError::InvalidName(spec.name.clone()));
        }
        if spec.parameters.get("type").and_then(|t| t.as_str()) != Some("object") {
            return Err(RegistryError::InvalidSchema(spec.name.clone()));
        }
        if self.tools.contains_key(&spec.name) {
            return Err(RegistryError::Duplicate(spec.name.clone()));
        }
        self.tools.insert(spec.name.clone(), tool);
        Ok(())
    }

    /// Looks a tool up by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Specs of every tool that is available now, sorted by name, as sent
    /// to the model: a tool whose backing process died is not offered.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .values()
            .filter(|t| t.available())
            .map(|t| t.spec().clone())
            .collect()
    }

    /// Names of every tool, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ToolContext, ToolFuture, ToolOutput};
    use serde_json::{Value, json};

    /// A tool with a configurable spec.
    struct Named(ToolSpec);

    impl Tool for Named {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn execute(&self, _args: Value, _ctx: ToolContext) -> ToolFuture<'_> {
            Box::pin(async { Ok(ToolOutput::text("ok")) })
        }
    }

    /// Builds a test tool.
    fn tool(name: &str, params: Value) -> Arc<dyn Tool> {
        Arc::new(Named(ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: params,
        }))
    }

    /// Names and schemas are checked; the list comes out sorted.
    #[test]
    fn registers_checks_and_sorts() {
        let mut r = ToolRegistry::new();
        r.register(tool("zeta", json!({"type": "object"}))).unwrap();
        r.register(tool("alpha", json!({"type": "object"})))
            .unwrap();
        assert_eq!(r.names(), ["alpha", "zeta"]);
        assert_eq!(r.specs()[0].name, "alpha");
        assert_eq!(
            r.register(tool("alpha", json!({"type": "object"}))),
            Err(RegistryError::Duplicate("alpha".into()))
        );
        assert!(matches!(
            r.register(tool("a b", json!({"type": "object"}))),
            Err(RegistryError::InvalidName(_))
        ));
        assert!(matches!(
            r.register(tool("x", json!({"type": "string"}))),
            Err(RegistryError::InvalidSchema(_))
        ));
    }
}
