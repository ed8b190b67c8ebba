//! The approver every front end gates its tools with: the rules decide
//! whether a call asks, an [`Asker`] (the chat, a protocol client, an
//! editor, `-p`'s flags) answers, an answer "for this session" is
//! remembered, and every decision goes to the log.
//!
//! This module must not know how a question reaches anyone.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use etch_tool::{Approval, ApprovalFuture, ApprovalRequest, Approver, Decision, Verdict};

use super::{Need, Rules, Why, leaves_sandbox};

/// One answer to a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run this call.
    Once,
    /// Run this call, and such calls for the rest of the session without
    /// asking (the same tool; a command outside the sandbox is remembered
    /// apart from one inside).
    Session,
    /// Do not run it; the user's reason, if they gave one, goes to the
    /// model.
    Deny(Option<String>),
    /// Do not run it, nor such calls for the rest of the session.
    DenySession(Option<String>),
    /// Nobody could answer (no one watches the session, `-p` without
    /// the flag): the text is the model's tool error as it stands.
    Refuse(String),
}

/// A future an asker returns.
pub type AskFuture<'a> = Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;

/// Who answers the calls the policy asks about.
pub trait Asker: Send + Sync {
    /// Who that is, for the log: `user`, `editor` or `flag`.
    fn who(&self) -> &'static str;

    /// The answer for one call, asked because of `why`; dropped when
    /// the run is cancelled.
    fn ask<'a>(&'a self, request: ApprovalRequest<'a>, why: Why) -> AskFuture<'a>;
}

/// A kind of call an answer for the session covers: the session, the
/// tool, and whether it leaves the sandbox.
type Kind = (String, String, bool);

/// The rules with their asker and what was answered for the session.
pub struct PolicyApprover {
    /// When to ask.
    rules: Rules,
    /// Who answers.
    asker: Arc<dyn Asker>,
    /// Kinds of calls allowed for their session.
    allowed: Mutex<HashSet<Kind>>,
    /// Kinds of calls denied for their session.
    denied: Mutex<HashSet<Kind>>,
}

impl PolicyApprover {
    /// An approver under `rules`, asking `asker`.
    pub fn new(rules: Rules, asker: Arc<dyn Asker>) -> Self {
        Self {
            rules,
            asker,
            allowed: Mutex::default(),
            denied: Mutex::default(),
        }
    }

    /// The rules it applies.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }
}

/// The tool error of a denied call.
fn denied_text(tool: &str, reason: Option<&str>, session: bool) -> String {
    let scope = if session {
        format!("{tool} calls for this session; do not call {tool} again")
    } else {
        format!("this {tool} call")
    };
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) => format!("the user denied {scope}. Their reason: {reason}"),
        None if session => format!("the user denied {scope}"),
        None => format!("the user denied {scope}; ask them how to proceed or try another way"),
    }
}

impl Approver for PolicyApprover {
    fn gates(&self, _name: &str) -> bool {
        // Whether a call asks depends on its arguments (a bypass, a
        // read-only command), so every tool goes through the approver.
        true
    }

    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> ApprovalFuture<'a> {
        Box::pin(async move {
            let bypass = leaves_sandbox(request.tool, request.args);
            let record = |verdict: Verdict, by: &str, reason: Option<String>| {
                request.progress.decided(&Decision {
                    call_id: request.call_id.to_owned(),
                    tool: request.tool.to_owned(),
                    verdict,
                    by: by.to_owned(),
                    reason,
                    bypass,
                });
            };
            let why = match self
                .rules
                .need(request.tool, request.args, request.read_only)
            {
                Need::Nothing => return Approval::Unasked,
                Need::Refused(why) => {
                    record(Verdict::Refused, "policy", Some(why.clone()));
                    return Approval::Reject(why);
                }
                Need::Answer(why) => why,
            };
            let justification = request.args["justification"]
                .as_str()
                .filter(|_| bypass)
                .map(str::to_owned);
            let kind: Kind = (
                request.session_id.to_owned(),
                request.tool.to_owned(),
                bypass,
            );
            let held = |set: &Mutex<HashSet<Kind>>| {
                set.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .contains(&kind)
            };
            if held(&self.allowed) {
                record(Verdict::Allowed, "session", justification);
                return Approval::Allow;
            }
            if held(&self.denied) {
                record(Verdict::Denied, "session", None);
                return Approval::Reject(denied_text(request.tool, None, true));
            }
            let who = self.asker.who();
            let keep = |set: &Mutex<HashSet<Kind>>| {
                set.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(kind.clone());
            };
            match self.asker.ask(request, why).await {
                Answer::Once => {
                    record(Verdict::Allowed, who, justification);
                    Approval::Allow
                }
                Answer::Session => {
                    keep(&self.allowed);
                    record(Verdict::AllowedForSession, who, justification);
                    Approval::Allow
                }
                Answer::Deny(reason) => {
                    let text = denied_text(request.tool, reason.as_deref(), false);
                    record(Verdict::Denied, who, reason);
                    Approval::Reject(text)
                }
                Answer::DenySession(reason) => {
                    keep(&self.denied);
                    let text = denied_text(request.tool, reason.as_deref(), true);
                    record(Verdict::DeniedForSession, who, reason);
                    Approval::Reject(text)
                }
                Answer::Refuse(text) => {
                    record(Verdict::Denied, who, Some(text.clone()));
                    Approval::Reject(text)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use etch_tool::ProgressSink;
    use serde_json::{Value, json};
    use tokio::sync::mpsc;

    use super::super::Policy;
    use super::*;

    /// Answers from a script, counting the questions.
    struct Scripted(Mutex<Vec<Answer>>);

    impl Asker for Scripted {
        fn who(&self) -> &'static str {
            "user"
        }
        fn ask<'a>(&'a self, _request: ApprovalRequest<'a>, _why: Why) -> AskFuture<'a> {
            let answer = self
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(0);
            Box::pin(std::future::ready(answer))
        }
    }

    /// Asks `approver` about `tool` with `args` in session `session`;
    /// the approval and the decisions logged.
    fn ask(
        approver: &PolicyApprover,
        session: &str,
        tool: &str,
        args: &Value,
    ) -> (Approval, Vec<Decision>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let progress = ProgressSink::new("c1", mpsc::unbounded_channel().0).with_records(tx);
        let request = ApprovalRequest {
            call_id: "c1",
            tool,
            args,
            cwd: Path::new("/w"),
            session_id: session,
            progress: &progress,
            read_only: false,
        };
        let approval = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_or(Approval::Reject("no runtime".into()), |rt| {
                rt.block_on(approver.approve(request))
            });
        let mut decisions = Vec::new();
        while let Ok(record) = rx.try_recv() {
            assert_eq!(record.kind, etch_tool::APPROVAL_DECISION);
            decisions.push(serde_json::from_value(record.data).unwrap_or_else(|e| {
                panic!("an approval.decision record that is no Decision: {e}")
            }));
        }
        (approval, decisions)
    }

    /// Once asks again, for the session does not (in that session only,
    /// and not for a bypass), a denial carries the user's reason, and
    /// each answer is recorded with who gave it.
    #[test]
    fn answers_are_remembered_per_session_and_recorded() {
        let asker = Arc::new(Scripted(Mutex::new(vec![
            Answer::Once,
            Answer::Session,
            Answer::Deny(Some("use the Makefile".into())),
            Answer::Session,
        ])));
        let rules = Rules {
            policy: Policy::Always,
            ask: Vec::new(),
        };
        let approver = PolicyApprover::new(rules, asker.clone());
        let plain = json!({"command": "make"});
        let (first, d) = ask(&approver, "s1", "bash", &plain);
        assert_eq!(first, Approval::Allow);
        assert_eq!(d[0].verdict, Verdict::Allowed);
        assert_eq!(d[0].by, "user");
        let (second, d) = ask(&approver, "s1", "bash", &plain);
        assert_eq!(second, Approval::Allow);
        assert_eq!(d[0].verdict, Verdict::AllowedForSession);
        let (third, d) = ask(&approver, "s1", "bash", &plain);
        assert_eq!(third, Approval::Allow);
        assert_eq!(
            (d[0].verdict, d[0].by.as_str()),
            (Verdict::Allowed, "session")
        );
        let bypass =
            json!({"command": "git commit", "bypass_sandbox": true, "justification": "commit"});
        let (fourth, d) = ask(&approver, "s1", "bash", &bypass);
        assert!(
            matches!(&fourth, Approval::Reject(text) if text.ends_with("Their reason: use the Makefile")),
            "{fourth:?}"
        );
        assert_eq!(d[0].verdict, Verdict::Denied);
        assert_eq!(d[0].reason.as_deref(), Some("use the Makefile"));
        assert!(d[0].bypass);
        let (fifth, d) = ask(&approver, "s2", "bash", &plain);
        assert_eq!(fifth, Approval::Allow);
        assert_eq!(d[0].verdict, Verdict::AllowedForSession);
        assert!(
            asker
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_empty()
        );
    }

    /// What the policy lets through is neither asked nor logged; what it
    /// refuses is logged as refused by the policy.
    #[test]
    fn unasked_calls_are_not_logged_and_refusals_are() {
        let asker = Arc::new(Scripted(Mutex::new(Vec::new())));
        let never = PolicyApprover::new(
            Rules {
                policy: Policy::Never,
                ask: Vec::new(),
            },
            asker,
        );
        let (approval, d) = ask(&never, "s", "bash", &json!({"command": "ls"}));
        assert_eq!(approval, Approval::Unasked);
        assert!(d.is_empty());
        let (approval, d) = ask(
            &never,
            "s",
            "bash",
            &json!({"command": "x", "bypass_sandbox": true}),
        );
        assert!(matches!(approval, Approval::Reject(_)));
        assert_eq!(
            (d[0].verdict, d[0].by.as_str()),
            (Verdict::Refused, "policy")
        );
    }
}
