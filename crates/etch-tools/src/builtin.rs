//! The set of built-in tools and how a selection of them becomes a registry
//! (C1, E-CLI-23).

use std::path::PathBuf;
use std::sync::Arc;

use etch_tool::{Tool, ToolRegistry};

use crate::bash::BashTool;
use crate::edit::EditTool;
use crate::find::FindTool;
use crate::grep::GrepTool;
use crate::lock::MutationLocks;
use crate::ls::LsTool;
use crate::protect::Protected;
use crate::read::ReadTool;
use crate::write::WriteTool;

/// Every built-in tool, sorted; all are active by default (C1).
pub const ALL: [&str; 7] = ["bash", "edit", "find", "grep", "ls", "read", "write"];

/// Every name the built-ins may take: the seven and `process`, which
/// comes with `bash` when the session keeps background processes. A
/// plugin or MCP tool may not take any of them.
pub const RESERVED: [&str; 8] = [
    "bash", "edit", "find", "grep", "ls", "process", "read", "write",
];

/// The `--read-only` selection (Pi's read-only set).
pub const READ_ONLY: [&str; 4] = ["find", "grep", "ls", "read"];

/// Settings that shape built-in tools.
#[derive(Debug, Clone)]
pub struct BuiltinOptions {
    /// Let `bash` children keep the model credential variables (G18).
    pub inherit_credentials: bool,
    /// Most bytes of one `bash` output stream kept in its spill file
    /// (`[tools.bash] max_spill_bytes`, E-CFG-25).
    pub max_spill_bytes: u64,
    /// The home directory whose `.etch` the tools never expose or change:
    /// its credential store is never read, listed or searched, and nothing
    /// under it is written (E-TOOL-22).
    pub home: Option<PathBuf>,
    /// How `bash` confines its commands; `None` runs them unconfined.
    pub sandbox: Option<Arc<etch_sandbox::Launcher>>,
    /// The sessions' background processes: `bash` offers `background`
    /// and the `process` tool comes with it; `None`: neither.
    pub processes: Option<Arc<etch_process::Processes>>,
    /// The long edge `read` resizes images to (`[tools.read]
    /// image_max_edge`).
    pub image_max_edge: u32,
}

impl Default for BuiltinOptions {
    /// Credentials scrubbed, spill files capped at 64 MiB, `$HOME`'s
    /// `.etch` protected.
    fn default() -> Self {
        Self {
            inherit_credentials: false,
            max_spill_bytes: crate::limits::BASH_DEFAULT_MAX_SPILL_BYTES,
            home: std::env::var_os("HOME").map(PathBuf::from),
            sandbox: None,
            processes: None,
            image_max_edge: etch_image::DEFAULT_MAX_EDGE,
        }
    }
}

/// A tool name that is not a built-in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool \"{0}\": expected one of bash, edit, find, grep, ls, read, write")]
pub struct UnknownTool(pub String);

/// Builds one built-in tool, with its compact spec; mutation tools share
/// `locks`.
pub fn tool(name: &str, options: &BuiltinOptions, locks: &MutationLocks) -> Option<Arc<dyn Tool>> {
    let protected = Protected::new(options.home.clone());
    let tool: Arc<dyn Tool> = match name {
        "bash" => Arc::new(
            BashTool::new(options.inherit_credentials)
                .with_max_spill_bytes(options.max_spill_bytes)
                .with_sandbox(options.sandbox.clone())
                .with_processes(options.processes.clone()),
        ),
        "edit" => Arc::new(EditTool::new(locks.clone()).with_protected(protected)),
        "find" => Arc::new(FindTool::new().with_protected(protected)),
        "grep" => Arc::new(GrepTool::new().with_protected(protected)),
        "ls" => Arc::new(LsTool::new().with_protected(protected)),
        "read" => Arc::new(
            ReadTool::new()
                .with_protected(protected)
                .with_image_max_edge(options.image_max_edge),
        ),
        "write" => Arc::new(WriteTool::new(locks.clone()).with_protected(protected)),
        _ => return None,
    };
    Some(crate::compact::Compacted::wrap(tool))
}

/// A registry holding the named built-ins (duplicates ignored).
pub fn registry(names: &[&str], options: &BuiltinOptions) -> Result<ToolRegistry, UnknownTool> {
    let locks = MutationLocks::shared();
    let mut registry = ToolRegistry::new();
    for name in names {
        if registry.get(name).is_some() {
            continue;
        }
        let tool = tool(name, options, &locks).ok_or_else(|| UnknownTool((*name).to_string()))?;
        // Built-in specs are valid by construction; a failure here is a bug
        // worth surfacing as an unknown tool rather than a panic.
        registry
            .register(tool)
            .map_err(|e| UnknownTool(format!("{name} ({e})")))?;
    }
    if let Some(processes) = options
        .processes
        .as_ref()
        .filter(|_| names.contains(&"bash"))
    {
        let process = crate::compact::Compacted::wrap(Arc::new(crate::process::ProcessTool::new(
            Arc::clone(processes),
        )));
        registry
            .register(process)
            .map_err(|e| UnknownTool(format!("process ({e})")))?;
    }
    Ok(registry)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the seven tool specs cost in every request, as sent (compact
    /// JSON). Small local models pay for each byte in prompt time and
    /// attention: a change that grows the schemas past this budget must
    /// cut elsewhere or raise it on purpose (issue 12 cut 7114 bytes to
    /// the figure below).
    #[test]
    fn schemas_stay_within_their_budget() {
        const BUDGET: usize = 6000;
        let r = registry(&ALL, &BuiltinOptions::default()).unwrap();
        let sizes: Vec<(String, usize)> = r
            .specs()
            .into_iter()
            .map(|s| (s.name.clone(), serde_json::to_string(&s).unwrap().len()))
            .collect();
        let total: usize = sizes.iter().map(|(_, n)| n).sum();
        assert!(
            total <= BUDGET,
            "tool schemas take {total} bytes > {BUDGET}: {sizes:?}"
        );
    }

    /// C1: all seven register with valid specs; unknown names are refused.
    #[test]
    fn all_builtins_register() {
        let r = registry(&ALL, &BuiltinOptions::default()).unwrap();
        assert_eq!(r.names(), ALL);
        let r = registry(&READ_ONLY, &BuiltinOptions::default()).unwrap();
        assert_eq!(r.names(), READ_ONLY);
        assert_eq!(
            registry(&["read", "nope"], &BuiltinOptions::default())
                .unwrap_err()
                .to_string(),
            "unknown tool \"nope\": expected one of bash, edit, find, grep, ls, read, write"
        );
    }
}
