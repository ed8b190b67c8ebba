//! The tool contract: what the agent loop needs to know about a tool.
//!
//! A tool has a model-facing [`ToolSpec`](etch_model::ToolSpec), classifies
//! each concrete call by the paths it reads or writes (or as a barrier) so the
//! scheduler can overlap calls that do not conflict (C19), and executes with a
//! cancellation token and a progress sink. The [`ToolRegistry`] holds the
//! active tools in one sorted list, whatever their source. Argument
//! validation against the tool's JSON Schema lives here too, so every tool
//! gets the same checks and messages.
//!
//! This crate must not know about particular tools (they live in `etch-tools`
//! and, later, plugins), the session log or providers.

pub mod access;
pub mod gate;
pub mod reading;
pub mod registry;
pub mod schema;
pub mod tool;

pub use access::Access;
pub use gate::{
    APPROVAL_DECISION, Approval, ApprovalFuture, ApprovalRequest, Approver, Decision, Gated,
    Verdict,
};
pub use reading::OnlyReading;
pub use registry::{Profile, RegistryError, ToolRegistry, ToolSource, check_tool};
pub use tool::{
    CallOrigin, ProgressSink, Record, Tool, ToolContext, ToolError, ToolFuture, ToolOutput,
};
