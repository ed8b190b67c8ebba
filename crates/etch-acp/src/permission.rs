//! Asking the editor before a tool runs: a session's tools are gated by
//! the runtime's approval policy (`[approval]`, with `[acp] ask`'s tools
//! when no `ask` list is set, E-CFG-24), and this asker hands each
//! question to the connection as a `session/request_permission` request
//! and waits for the answer. Allow-always and reject-always become the
//! policy's answers for the rest of the session, so the editor is not
//! asked again.
//!
//! This module must not know how the request is framed or sent.

use agent_client_protocol_schema::v1::{
    Error, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, ToolCallUpdate, ToolCallUpdateFields,
};
use etch_runtime::approval::{Answer, AskFuture, Asker, Why};
use etch_tool::ApprovalRequest;
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

/// One session's asker.
#[derive(Debug)]
pub struct EditorAsker {
    /// The ACP session id the questions name, known once the session
    /// is open (its tools are gated before).
    session: std::sync::OnceLock<String>,
    /// Where questions go.
    asks: mpsc::UnboundedSender<Ask>,
}

impl EditorAsker {
    /// An asker sending its questions to `asks`.
    pub fn new(asks: mpsc::UnboundedSender<Ask>) -> Self {
        Self {
            session: std::sync::OnceLock::new(),
            asks,
        }
    }

    /// Names the session the questions are about.
    pub fn name_session(&self, id: &str) {
        let _ = self.session.set(id.to_owned());
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
}

/// What the editor's answer means for a call of `tool`.
fn decide(tool: &str, answer: Result<Value, Error>) -> Answer {
    let response = match answer {
        Ok(value) => serde_json::from_value::<RequestPermissionResponse>(value),
        Err(error) => {
            return Answer::Refuse(format!(
                "the editor did not answer the permission request for {tool}: {} (code {})",
                error.message,
                i32::from(error.code)
            ));
        }
    };
    let outcome = match response {
        Ok(response) => response.outcome,
        Err(e) => {
            return Answer::Refuse(format!(
                "the editor's answer to the permission request for {tool} is unreadable ({e}); the call was not run"
            ));
        }
    };
    let chosen = match outcome {
        RequestPermissionOutcome::Selected(selected) => selected.option_id.0.to_string(),
        RequestPermissionOutcome::Cancelled => {
            return Answer::Refuse(format!(
                "the permission request for {tool} was cancelled; the call was not run"
            ));
        }
        _ => String::new(),
    };
    match chosen.as_str() {
        "allow_once" => Answer::Once,
        "allow_always" => Answer::Session,
        "reject_always" => Answer::DenySession(None),
        "reject_once" => Answer::Deny(None),
        other => Answer::Refuse(format!(
            "the editor chose {other:?}, which is none of the options offered for {tool}; the call was not run"
        )),
    }
}

impl Asker for EditorAsker {
    fn who(&self) -> &'static str {
        "editor"
    }

    fn ask<'a>(&'a self, request: ApprovalRequest<'a>, _why: Why) -> AskFuture<'a> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let ask = Ask {
                request: self.question(&request),
                reply,
            };
            if self.asks.send(ask).is_err() {
                return Answer::Refuse("the editor is gone; the call was not run".to_owned());
            }
            match answer.await {
                Ok(answer) => decide(request.tool, answer),
                Err(_) => Answer::Refuse(
                    "the editor went away before answering; the call was not run".to_owned(),
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use etch_config::Config;
    use etch_runtime::approval::{PolicyApprover, Rules};
    use etch_tool::{Approval, Approver, ProgressSink};
    use serde_json::json;

    use super::*;

    /// An approver for session `s` under the editor's default rules,
    /// asking through an editor asker, and its question channel.
    fn approver() -> (PolicyApprover, mpsc::UnboundedReceiver<Ask>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let asker = Arc::new(EditorAsker::new(tx));
        asker.name_session("s");
        let approver = PolicyApprover::new(Rules::for_editor(&Config::default()), asker);
        (approver, rx)
    }

    /// Runs `future` to its end.
    fn block<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    /// Asks about call `c1` of `tool` and answers with `answer`.
    fn ask(
        approver: &PolicyApprover,
        rx: &mut mpsc::UnboundedReceiver<Ask>,
        tool: &str,
        answer: Option<Value>,
    ) -> Approval {
        let args = json!({"command": "ls"});
        let progress = ProgressSink::default();
        block(async {
            let request = ApprovalRequest {
                call_id: "c1",
                tool,
                args: &args,
                cwd: Path::new("/w"),
                session_id: "s",
                progress: &progress,
                read_only: tool == "read",
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

    /// The editor's default rules ask about the tools that change
    /// things; each answer means what it says, and the always answers
    /// are kept.
    #[test]
    fn answers_allow_reject_and_are_remembered() {
        let (approver, mut rx) = approver();
        assert_eq!(ask(&approver, &mut rx, "read", None), Approval::Unasked);
        let selected = |id: &str| Some(json!({"outcome": {"outcome": "selected", "optionId": id}}));
        assert_eq!(
            ask(&approver, &mut rx, "bash", selected("allow_once")),
            Approval::Allow
        );
        assert!(matches!(
            ask(&approver, &mut rx, "bash", selected("reject_once")),
            Approval::Reject(why) if why.contains("denied this bash call")
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
}
