//! The compact profile's tool specs (`[tools] profile = "compact"`): what
//! a small model on a local server is shown of each built-in tool.
//!
//! A 1.5B model reads every token of the tool block on every request and
//! gains little from the full descriptions (skip lists, limits, Pi
//! compatibility notes); what it needs is the tool's purpose in one line
//! and every parameter, so that any call the full profile accepts can
//! still be made. A search's `path` keeps a word on its default: without
//! it a 1.5B model searches one guessed file instead of the tree. Schemas here drop descriptions a name already says and
//! the validation keywords (`minimum`, `minLength`, `additionalProperties`):
//! arguments are still checked against the tool's full schema, with its
//! messages. All seven live in one file so that their total size, the
//! figure that matters, is seen at once.
//!
//! This module must not know which profile is in force; the registry
//! picks the spec.

use std::path::Path;
use std::sync::Arc;

use etch_model::ToolSpec;
use etch_tool::{Access, Tool, ToolFuture};
use serde_json::{Value, json};

use crate::args;

/// The compact spec of built-in `name`.
pub fn spec(name: &str) -> Option<ToolSpec> {
    let (description, properties, required): (&str, Value, &[&str]) = match name {
        "bash" => (
            "Run a shell command in the working directory; returns its output and exit code.",
            json!({
                "command": {"type": "string"},
                "timeout": {"type": "integer", "description": "seconds (default 30, max 120)"}
            }),
            &["command"],
        ),
        "process" => (
            "Manage processes started by bash background=true.",
            json!({
                "action": {"type": "string", "enum": ["list", "output", "write", "kill", "dismiss"]},
                "id": {"type": "string"},
                "wait_ms": {"type": "integer", "minimum": 0},
                "offset": {"type": "integer", "minimum": 0},
                "text": {"type": "string"},
                "signal": {"type": "string", "enum": ["term", "kill"]}
            }),
            &["action"],
        ),
        "edit" => (
            "Replace exact text in a file. Each oldText must match one place exactly; copy it from read output without the line numbers. To add text, replace the unique text next to it with that text plus the new text.",
            json!({
                "path": {"type": "string"},
                "edits": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                    "required": ["oldText", "newText"]
                }},
                "oldText": {"type": "string"},
                "newText": {"type": "string"},
                "dryRun": {"type": "boolean"}
            }),
            &["path"],
        ),
        "find" => (
            "Find files by name: a part of the path, or a glob such as *.py.",
            json!({
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "directory (default: the working directory)"},
                "glob": {"type": "string"},
                "limit": {"type": "integer"}
            }),
            &["pattern"],
        ),
        "grep" => (
            "Search inside files for text; prints path:line:text for each match.",
            json!({
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "directory or file to search (default: every file)"},
                "paths": {"type": "array", "items": {"type": "string"}},
                "glob": {"type": "string"},
                "ignoreCase": {"type": "boolean"},
                "regex": {"type": "boolean"},
                "literal": {"type": "boolean"},
                "context": {"type": "integer"},
                "limit": {"type": "integer"}
            }),
            &["pattern"],
        ),
        "ls" => (
            "List a directory.",
            json!({
                "path": {"type": "string", "description": "default: the working directory"},
                "limit": {"type": "integer"}
            }),
            &[],
        ),
        "read" => (
            "Read a file; each line is shown with its number.",
            json!({
                "path": {"type": "string"},
                "offset": {"type": "integer", "description": "first line, 1-based; leave out to start at the top"},
                "limit": {"type": "integer", "description": "most lines; leave out for the whole file"},
                "files": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "offset": {"type": "integer"},
                        "limit": {"type": "integer"}
                    },
                    "required": ["path"]
                }}
            }),
            &[],
        ),
        "write" => (
            "Create a file, or replace all of its content.",
            json!({
                "path": {"type": "string"},
                "content": {"type": "string"}
            }),
            &["path", "content"],
        ),
        _ => return None,
    };
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    Some(args::spec(name, description, schema))
}

/// A built-in tool with its compact spec beside its full one.
pub struct Compacted {
    /// The tool itself.
    inner: Arc<dyn Tool>,
    /// Its compact spec.
    compact: ToolSpec,
}

impl Compacted {
    /// `inner` with the compact spec of its name, when it has one.
    pub fn wrap(inner: Arc<dyn Tool>) -> Arc<dyn Tool> {
        match spec(&inner.spec().name) {
            Some(mut compact) => {
                // Arguments only some setups offer (bash's way out of the
                // sandbox, its background processes) are offered under
                // both profiles alike.
                for extra in ["bypass_sandbox", "justification", "background"] {
                    let offered = inner.spec().parameters["properties"].get(extra).map(|full| {
                        match extra {
                            "background" => json!({"type": "boolean", "description": "return at once"}),
                            "bypass_sandbox" => json!({"type": "boolean", "description": "outside the sandbox; the user must approve"}),
                            _ => full.clone(),
                        }
                    });
                    if let (Some(offered), Some(properties)) =
                        (offered, compact.parameters["properties"].as_object_mut())
                    {
                        properties.insert(extra.to_owned(), offered);
                    }
                }
                Arc::new(Self { inner, compact })
            }
            None => inner,
        }
    }
}

impl Tool for Compacted {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn compact_spec(&self) -> Option<&ToolSpec> {
        Some(&self.compact)
    }

    fn access(&self, args: &Value, cwd: &Path) -> Access {
        self.inner.access(args, cwd)
    }

    fn available(&self) -> bool {
        self.inner.available()
    }

    fn read_only(&self) -> bool {
        self.inner.read_only()
    }

    fn execute(&self, args: Value, ctx: etch_tool::ToolContext) -> ToolFuture<'_> {
        self.inner.execute(args, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::{ALL, BuiltinOptions, registry};

    /// The property names of a schema, recursively (`items` of arrays
    /// included), as dotted paths.
    fn properties(schema: &Value, prefix: &str, out: &mut Vec<String>) {
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                let path = format!("{prefix}{name}");
                out.push(path.clone());
                properties(sub, &format!("{path}."), out);
                if let Some(items) = sub.get("items") {
                    properties(items, &format!("{path}[]."), out);
                }
                for alt in sub
                    .get("anyOf")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(items) = alt.get("items") {
                        properties(items, &format!("{path}[]."), out);
                    }
                }
            }
        }
        out.sort();
        out.dedup();
    }

    /// Every parameter of every tool is kept, with the same required
    /// ones, and each compact schema is one the full schema accepts
    /// calls of: a call written from it validates.
    #[test]
    fn every_parameter_is_kept() {
        let registry = registry(&ALL, &BuiltinOptions::default()).unwrap();
        for name in ALL {
            let tool = registry.get(name).unwrap();
            let compact = tool.compact_spec().unwrap();
            let (mut full, mut short) = (Vec::new(), Vec::new());
            properties(&tool.spec().parameters, "", &mut full);
            properties(&compact.parameters, "", &mut short);
            assert_eq!(full, short, "{name}");
            assert_eq!(
                tool.spec().parameters.get("required"),
                compact.parameters.get("required"),
                "{name}"
            );
        }
    }

    /// The compact block is at most half the full one: the point of
    /// the profile (issue 30 measured the full block at ~1,600 tokens).
    #[test]
    fn the_compact_block_is_less_than_half() {
        let size = |specs: Vec<ToolSpec>| serde_json::to_string(&specs).unwrap().len();
        let full = registry(&ALL, &BuiltinOptions::default()).unwrap();
        let compact = full.clone().with_profile(etch_tool::Profile::Compact);
        let (full, compact) = (size(full.specs()), size(compact.specs()));
        assert!(compact * 2 < full, "compact {compact} bytes, full {full}");
        assert!(compact < 2_600, "compact {compact} bytes");
    }
}
