//! Tools that ask before they run. A front end that can ask its user
//! (an editor over ACP) wraps the tools its policy names in a [`Gated`]
//! tool: each call, once validated and scheduled, waits for the
//! [`Approver`]'s answer and runs only when allowed; a refusal is the
//! call's tool error. Scheduling, the schema and availability stay the
//! wrapped tool's, so a gated registry behaves like the plain one in
//! every other way.
//!
//! This module must not know who is asked or how (the protocol, the
//! remembered answers): that is the approver's business.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use etch_model::ToolSpec;
use serde_json::Value;

use crate::access::Access;
use crate::registry::{ToolRegistry, ToolSource};
use crate::tool::{ProgressSink, Tool, ToolContext, ToolError, ToolFuture};

/// The text of a call stopped while it waited for an answer.
const ABORTED: &str = "Operation aborted";

/// One call waiting for approval.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    /// The call id, as the model sent it.
    pub call_id: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// Its validated arguments.
    pub args: &'a Value,
    /// The working directory its paths resolve against.
    pub cwd: &'a Path,
    /// The session the call belongs to (empty outside one), so that a
    /// question reaches whoever watches that session.
    pub session_id: &'a str,
    /// Where the answer is recorded for the log
    /// ([`ProgressSink::decided`]).
    pub progress: &'a ProgressSink,
    /// Whether the tool says it only reads ([`Tool::read_only`]).
    pub read_only: bool,
}

/// The event type a [`Decision`] is logged as.
pub const APPROVAL_DECISION: &str = "approval.decision";

/// What was decided about a call that asked, kept in the session log
/// (`approval.decision`, whose data is this serialized) so "why did this
/// run, or not" has an answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The call id.
    #[serde(rename = "toolCallId")]
    pub call_id: String,
    /// The tool.
    #[serde(rename = "toolName")]
    pub tool: String,
    /// The answer.
    #[serde(rename = "decision")]
    pub verdict: Verdict,
    /// Who gave it: `user` (the chat or a protocol client), `editor`
    /// (ACP), `flag` (`-p`'s options), `policy` (refused without asking),
    /// `session` (an earlier allow-for-this-session).
    pub by: String,
    /// The reason given with a denial, or the justification of a request
    /// to leave the sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether the call asked to run outside the sandbox.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bypass: bool,
}

/// The answers a decision can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Allowed, this call only.
    Allowed,
    /// Allowed, and such calls are allowed for the rest of the session.
    AllowedForSession,
    /// Denied by whoever was asked.
    Denied,
    /// Denied, and such calls are denied for the rest of the session.
    DeniedForSession,
    /// Refused by the policy without asking anyone.
    Refused,
}

impl Verdict {
    /// The name written to the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::AllowedForSession => "allowed_for_session",
            Self::Denied => "denied",
            Self::DeniedForSession => "denied_for_session",
            Self::Refused => "refused",
        }
    }
}

/// What the approver decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run the call: someone approved it.
    Allow,
    /// Run the call: the policy needs no answer for it (it is not
    /// marked approved, so it may not leave the sandbox).
    Unasked,
    /// Do not run it; the text becomes the call's tool error.
    Reject(String),
}

/// A future an approver returns.
pub type ApprovalFuture<'a> = Pin<Box<dyn Future<Output = Approval> + Send + 'a>>;

/// Decides whether a gated call may run.
pub trait Approver: Send + Sync {
    /// Whether calls of tool `name` must ask at all.
    fn gates(&self, name: &str) -> bool;

    /// The answer for one call; dropped when the run is cancelled.
    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> ApprovalFuture<'a>;
}

/// A tool whose calls ask the approver first.
pub struct Gated {
    /// The tool that runs once allowed.
    inner: Arc<dyn Tool>,
    /// Who is asked.
    approver: Arc<dyn Approver>,
}

impl Gated {
    /// `inner` behind `approver`.
    pub fn new(inner: Arc<dyn Tool>, approver: Arc<dyn Approver>) -> Self {
        Self { inner, approver }
    }
}

impl Tool for Gated {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn compact_spec(&self) -> Option<&ToolSpec> {
        self.inner.compact_spec()
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

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let request = ApprovalRequest {
                call_id: &ctx.call_id,
                tool: &self.inner.spec().name,
                args: &args,
                cwd: &ctx.cwd,
                session_id: &ctx.origin.session_id,
                progress: &ctx.progress,
                read_only: self.inner.read_only(),
            };
            let answer = tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => return Err(ToolError(ABORTED.to_owned())),
                answer = self.approver.approve(request) => answer,
            };
            match answer {
                Approval::Allow => {
                    let ctx = ToolContext {
                        approved: true,
                        ..ctx
                    };
                    self.inner.execute(args, ctx).await
                }
                Approval::Unasked => self.inner.execute(args, ctx).await,
                Approval::Reject(why) => Err(ToolError(why)),
            }
        })
    }
}

/// Wraps `tool` when the approver gates its name.
fn gate(tool: Arc<dyn Tool>, approver: &Arc<dyn Approver>) -> Arc<dyn Tool> {
    if approver.gates(&tool.spec().name) {
        Arc::new(Gated::new(tool, Arc::clone(approver)))
    } else {
        tool
    }
}

/// A source whose tools are gated as they become ready.
struct GatedSource {
    /// The shared source.
    inner: Arc<dyn ToolSource>,
    /// Who is asked.
    approver: Arc<dyn Approver>,
}

impl ToolSource for GatedSource {
    fn ready(&self) -> Vec<Arc<dyn Tool>> {
        self.inner
            .ready()
            .into_iter()
            .map(|tool| gate(tool, &self.approver))
            .collect()
    }

    fn pending(&self) -> bool {
        self.inner.pending()
    }

    fn settle(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.inner.settle()
    }

    fn settle_for(&self, name: &str) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.inner.settle_for(name)
    }

    fn awaited(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.inner.awaited()
    }

    fn diagnostics(&self) -> Vec<(String, String)> {
        self.inner.diagnostics()
    }
}

impl ToolRegistry {
    /// The same tools, every one the approver gates asking it before
    /// each call, those of sources included as they arrive.
    #[must_use]
    pub fn gated(&self, approver: &Arc<dyn Approver>) -> Self {
        let mut gated = Self::new().with_profile(self.profile());
        for tool in self.registered() {
            gated.insert_unchecked(gate(tool, approver));
        }
        for source in self.sources() {
            gated.add_source(Arc::new(GatedSource {
                inner: Arc::clone(source),
                approver: Arc::clone(approver),
            }));
        }
        gated
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::tool::{CallOrigin, ProgressSink, ToolOutput};

    /// A tool that says it ran.
    struct Ran(ToolSpec);

    impl Tool for Ran {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn execute(&self, _args: Value, _ctx: ToolContext) -> ToolFuture<'_> {
            Box::pin(async { Ok(ToolOutput::text("ran")) })
        }
    }

    /// Gates `bash` only, answering from a fixed verdict, and records
    /// what it was asked.
    struct Fixed {
        /// The answer.
        answer: Option<Approval>,
        /// Tools asked about, in order.
        asked: Mutex<Vec<String>>,
    }

    impl Approver for Fixed {
        fn gates(&self, name: &str) -> bool {
            name == "bash"
        }
        fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> ApprovalFuture<'a> {
            self.asked
                .lock()
                .unwrap()
                .push(format!("{} {}", request.tool, request.call_id));
            match self.answer.clone() {
                Some(answer) => Box::pin(std::future::ready(answer)),
                None => Box::pin(std::future::pending()),
            }
        }
    }

    /// A registry with `bash` and `read`.
    fn registry() -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        for name in ["bash", "read"] {
            let spec = ToolSpec {
                name: name.into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            };
            registry.register(Arc::new(Ran(spec))).unwrap();
        }
        registry
    }

    /// A context for call `id`, cancelled by `cancel`.
    fn ctx(id: &str, cancel: &CancellationToken) -> ToolContext {
        ToolContext {
            call_id: id.into(),
            cwd: std::env::temp_dir(),
            cancel: cancel.clone(),
            progress: ProgressSink::default(),
            temp_dir: std::env::temp_dir(),
            origin: CallOrigin::default(),
            approved: false,
        }
    }

    /// Runs `tool` once on a current-thread runtime.
    fn run(tool: &Arc<dyn Tool>, id: &str, cancel: &CancellationToken) -> Result<String, String> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(tool.execute(json!({}), ctx(id, cancel)))
            .map(|out| out.text)
            .map_err(|e| e.0)
    }

    /// Only gated names ask; an allowed call runs, a rejected one is
    /// the rejection's text, and the names and specs stay the same.
    #[test]
    fn gated_tools_ask_and_others_do_not() {
        let cancel = CancellationToken::new();
        let allow = Arc::new(Fixed {
            answer: Some(Approval::Allow),
            asked: Mutex::default(),
        });
        let approver: Arc<dyn Approver> = allow.clone();
        let gated = registry().gated(&approver);
        assert_eq!(gated.names(), ["bash", "read"]);
        assert_eq!(
            run(&gated.get("bash").unwrap(), "c1", &cancel).unwrap(),
            "ran"
        );
        assert_eq!(
            run(&gated.get("read").unwrap(), "c2", &cancel).unwrap(),
            "ran"
        );
        assert_eq!(*allow.asked.lock().unwrap(), ["bash c1"]);

        let approver: Arc<dyn Approver> = Arc::new(Fixed {
            answer: Some(Approval::Reject("the user said no".into())),
            asked: Mutex::default(),
        });
        let gated = registry().gated(&approver);
        assert_eq!(
            run(&gated.get("bash").unwrap(), "c3", &cancel).unwrap_err(),
            "the user said no"
        );
    }

    /// A call still waiting for its answer stops with the run.
    #[test]
    fn a_waiting_call_stops_when_cancelled() {
        let cancel = CancellationToken::new();
        let approver: Arc<dyn Approver> = Arc::new(Fixed {
            answer: None,
            asked: Mutex::default(),
        });
        let gated = registry().gated(&approver);
        cancel.cancel();
        assert_eq!(
            run(&gated.get("bash").unwrap(), "c1", &cancel).unwrap_err(),
            ABORTED
        );
    }
}
