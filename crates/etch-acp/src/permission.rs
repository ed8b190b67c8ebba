//! Asking the editor before a tool runs (`[acp] ask`, E-CFG-24): the
//! session's gated tools (etch-tool's `Gated`) ask this approver, which
//! hands the question to the connection as a `session/request_permission`
//! request and waits for the answer. Allow-always and reject-always hold
//! for that tool for the rest of the session, so the editor is not asked
//! again.
//!
//! This module must not know how the request is framed or sent.

use std::collections::HashMap;
use std::sync::Mutex;

use agent_client_protocol_schema::v1::{
    Error, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, ToolCallUpdate, ToolCallUpdateFields,
};
use etch_config::AcpConfig;
use etch_tool::{Approval, ApprovalFuture, ApprovalRequest, Approver};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::toolcall;

/// One question for the editor, and where its answer goes.
#[derive(Debug)]
pub struct Ask {
    /// The request's parameters.
    pub request: RequestPermissionRequest,
    /// The client's answer (its result, or its error).
    pub reply: oneshot::Sender<Result<Value, Error>>,
}

/// The option ids etch offers, with their kinds and labels.
const OPTIONS: [(&str, &str, PermissionOptionKind); 4] = [
    ("allow_once", "Allow", PermissionOptionKind::AllowOnce),
    (
        "allow_always",
        "Always allow",
        PermissionOptionKind::AllowAlways,
    ),
    ("reject_once", "Reject", PermissionOptionKind::RejectOnce),
    (
        "reject_always",
        "Always reject",
        PermissionOptionKind::RejectAlways,
    ),
];

/// One session's approver.
#[derive(Debug)]
pub struct EditorApprover {
    /// The ACP session id the questions name, known once the session
    /// is open (its tools are gated before).
    session: std::sync::OnceLock<String>,
    /// Which tools ask.
    policy: AcpConfig,
    /// Answers that hold for the session: allowed (`true`) or rejected,
    /// by tool name.
    always: Mutex<HashMap<String, bool>>,
    /// Where questions go.
    asks: mpsc::UnboundedSender<Ask>,
}

impl EditorApprover {
    /// An approver under `policy`, sending its questions to `asks`.
    pub fn new(policy: AcpConfig, asks: mpsc::UnboundedSender<Ask>) -> Self {
        Self {
            session: std::sync::OnceLock::new(),
            policy,
            always: Mutex::default(),
            asks,
        }
    }

    /// Names the session the questions are about.
    pub fn name_session(&self, id: &str) {
        let _ = self.session.set(id.to_owned());
    }

    /// The standing answer for `tool`, if one was given.
    fn remembered(&self, tool: &str) -> Option<bool> {
        self.always
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(tool)
            .copied()
    }

    /// Keeps `allowed` as the answer for `tool` from now on.
    fn remember(&self, tool: &str, allowed: bool) {
        self.always
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(tool.to_owned(), allowed);
    }

    /// The question for one call.
    fn question(&self, request: &ApprovalRequest<'_>) -> RequestPermissionRequest {
        let call = ToolCallUpdate::new(
            request.call_id.to_owned(),
            ToolCallUpdateFields::new()
                .title(toolcall::title(request.tool, request.args))
                .kind(toolcall::kind(request.tool))
                .locations(toolcall::locations(request.tool, request.args, request.cwd))
                .raw_input(request.args.clone()),
        );
        let options = OPTIONS
            .iter()
            .map(|(id, name, kind)| PermissionOption::new(*id, *name, *kind))
            .collect();
        let session = self.session.get().cloned().unwrap_or_default();
        RequestPermissionRequest::new(session, call, options)
    }

    /// What the editor's answer means for a call of `tool`.
    fn decide(&self, tool: &str, answer: Result<Value, Error>) -> Approval {
        let response = match answer {
            Ok(value) => serde_json::from_value::<RequestPermissionResponse>(value),
            Err(error) => {
                return Approval::Reject(format!(
                    "the editor did not answer the permission request for {tool}: {} (code {})",
                    error.message,
                    i32::from(error.code)
                ));
            }
        };
        let outcome = match response {
            Ok(response) => response.outcome,
            Err(e) => {
                return Approval::Reject(format!(
                    "the editor's answer to the permission request for {tool} is unreadable ({e}); the call was not run"
                ));
            }
        };
        let chosen = match outcome {
            RequestPermissionOutcome::Selected(selected) => selected.option_id.0.to_string(),
            RequestPermissionOutcome::Cancelled => {
                return Approval::Reject(format!(
                    "the permission request for {tool} was cancelled; the call was not run"
                ));
            }
            _ => String::new(),
        };
        match chosen.as_str() {
            "allow_once" => Approval::Allow,
            "allow_always" => {
                self.remember(tool, true);
                Approval::Allow
            }
            "reject_always" => {
                self.remember(tool, false);
                Approval::Reject(rejected(tool, true))
            }
            "reject_once" => Approval::Reject(rejected(tool, false)),
            other => Approval::Reject(format!(
                "the editor chose {other:?}, which is none of the options offered for {tool}; the call was not run"
            )),
        }
    }
}

/// The tool error of a rejected call.
fn rejected(tool: &str, always: bool) -> String {
    if always {
        format!("the user rejected {tool} calls for this session; do not call {tool} again")
    } else {
        format!("the user rejected this {tool} call; ask them how to proceed or try another way")
    }
}

impl Approver for EditorApprover {
    fn gates(&self, name: &str) -> bool {
        self.policy.asks(name)
    }

    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> ApprovalFuture<'a> {
        Box::pin(async move {
            match self.remembered(request.tool) {
                Some(true) => return Approval::Allow,
                Some(false) => return Approval::Reject(rejected(request.tool, true)),
                None => {}
            }
            let (reply, answer) = oneshot::channel();
            let ask = Ask {
                request: self.question(&request),
                reply,
            };
            if self.asks.send(ask).is_err() {
                return Approval::Reject("the editor is gone; the call was not run".to_owned());
            }
            match answer.await {
                Ok(answer) => self.decide(request.tool, answer),
                Err(_) => Approval::Reject(
                    "the editor went away before answering; the call was not run".to_owned(),
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;

    /// An approver for session `s` with the default policy, and its
    /// question channel.
    fn approver() -> (EditorApprover, mpsc::UnboundedReceiver<Ask>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let policy = AcpConfig { ask: None };
        let approver = EditorApprover::new(policy, tx);
        approver.name_session("s");
        (approver, rx)
    }

    /// Runs `future` to its end.
    fn block<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    /// Asks about call `id` of `tool` and answers with `answer`.
    fn ask(
        approver: &EditorApprover,
        rx: &mut mpsc::UnboundedReceiver<Ask>,
        tool: &str,
        answer: Option<Value>,
    ) -> Approval {
        let args = json!({"command": "ls"});
        block(async {
            let request = ApprovalRequest {
                call_id: "c1",
                tool,
                args: &args,
                cwd: Path::new("/w"),
            };
            let asking = approver.approve(request);
            tokio::pin!(asking);
            tokio::select! {
                approval = &mut asking => approval,
                Some(question) = rx.recv() => {
                    let params = serde_json::to_value(&question.request).unwrap();
                    assert_eq!(params["sessionId"], "s");
                    assert_eq!(params["toolCall"]["toolCallId"], "c1");
                    assert_eq!(params["options"].as_array().unwrap().len(), 4);
                    let _ = question.reply.send(Ok(answer.unwrap()));
                    asking.await
                }
            }
        })
    }

    /// The default policy gates the tools that change things; each
    /// answer means what it says, and the always answers are kept.
    #[test]
    fn answers_allow_reject_and_are_remembered() {
        let (approver, mut rx) = approver();
        assert!(approver.gates("bash") && approver.gates("edit") && !approver.gates("read"));
        let selected = |id: &str| Some(json!({"outcome": {"outcome": "selected", "optionId": id}}));
        assert_eq!(
            ask(&approver, &mut rx, "bash", selected("allow_once")),
            Approval::Allow
        );
        assert!(matches!(
            ask(&approver, &mut rx, "bash", selected("reject_once")),
            Approval::Reject(why) if why.contains("rejected this bash call")
        ));
        assert_eq!(
            ask(&approver, &mut rx, "bash", selected("allow_always")),
            Approval::Allow
        );
        // Not asked again: no answer is given.
        assert_eq!(ask(&approver, &mut rx, "bash", None), Approval::Allow);
        assert!(matches!(
            ask(&approver, &mut rx, "edit", selected("reject_always")),
            Approval::Reject(_)
        ));
        assert!(matches!(
            ask(&approver, &mut rx, "edit", None),
            Approval::Reject(_)
        ));
        assert!(matches!(
            ask(&approver, &mut rx, "write", Some(json!({"outcome": {"outcome": "cancelled"}}))),
            Approval::Reject(why) if why.contains("cancelled")
        ));
    }

    /// A policy with a prefix pattern gates by prefix; `[]` gates nothing.
    #[test]
    fn patterns_match_by_prefix() {
        let prefix = AcpConfig {
            ask: Some(vec!["mcp__*".into(), "bash".into()]),
        };
        assert!(prefix.asks("mcp__git__status") && prefix.asks("bash") && !prefix.asks("edit"));
        let none = AcpConfig {
            ask: Some(Vec::new()),
        };
        assert!(!none.asks("bash"));
    }
}
