//! ACP session modes, which an editor shows as a picker: `ask` (the
//! tools that change files or run commands ask the editor first, as
//! `[approval]` and `[acp] ask` say: the default), `auto` (nothing asks;
//! commands still run in the sandbox) and `read-only` (only tools that
//! only read run; the others are refused with a reason the model reads).
//! The mode is the session's approval policy, switched by
//! `session/set_mode`.
//!
//! This module must not know about the connection.

use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol_schema::v1::{SessionMode, SessionModeState};
use etch_runtime::approval::{PolicyApprover, Rules};
use etch_tool::{Approval, ApprovalFuture, ApprovalRequest, Approver, Decision, Verdict};

/// The mode a session starts in.
pub const DEFAULT: &str = "ask";

/// The modes: id, name, description.
pub const MODES: [(&str, &str, &str); 3] = [
    (
        "ask",
        "Ask",
        "Edits and commands ask first (the tools [acp] ask names)",
    ),
    (
        "auto",
        "Auto",
        "Nothing asks; commands still run in the sandbox",
    ),
    (
        "read-only",
        "Read only",
        "Only tools that read run; edits and commands are refused",
    ),
];

/// What the editor is told of the modes, with `current` chosen.
pub fn state(current: &str) -> SessionModeState {
    SessionModeState::new(
        current.to_owned(),
        MODES
            .iter()
            .map(|(id, name, description)| {
                SessionMode::new(*id, *name).description((*description).to_owned())
            })
            .collect(),
    )
}

/// The approval policy of a session with modes.
pub struct ModeApprover {
    /// The mode now.
    mode: Mutex<&'static str>,
    /// `ask`: the editor's rules.
    ask: PolicyApprover,
    /// `auto`: a policy that never asks.
    auto: PolicyApprover,
}

impl ModeApprover {
    /// Modes over `ask` (the editor's policy) and `auto` (one that never
    /// asks), starting in [`DEFAULT`].
    pub fn new(ask: PolicyApprover, auto: PolicyApprover) -> Self {
        Self {
            mode: Mutex::new(DEFAULT),
            ask,
            auto,
        }
    }

    /// The editor's rules and a never-asking policy, sharing `asker`.
    pub fn for_editor(
        config: &etch_config::Config,
        asker: Arc<dyn etch_runtime::approval::Asker>,
    ) -> Self {
        let never = etch_config::ApprovalConfig {
            policy: "never".to_owned(),
            ask: None,
        };
        Self::new(
            PolicyApprover::new(Rules::for_editor(config), Arc::clone(&asker)),
            PolicyApprover::new(Rules::new(&never), asker),
        )
    }

    /// The mode now.
    pub fn mode(&self) -> &'static str {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Switches to mode `id`.
    ///
    /// # Errors
    /// When `id` is no mode, naming the ones there are.
    pub fn set(&self, id: &str) -> Result<(), String> {
        let Some((mode, _, _)) = MODES.iter().find(|(m, _, _)| *m == id) else {
            let known: Vec<&str> = MODES.iter().map(|(m, _, _)| *m).collect();
            return Err(format!(
                "there is no mode {id:?}; the modes are {}",
                known.join(", ")
            ));
        };
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
        Ok(())
    }
}

impl Approver for ModeApprover {
    fn gates(&self, _name: &str) -> bool {
        true
    }

    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> ApprovalFuture<'a> {
        match self.mode() {
            "auto" => self.auto.approve(request),
            "read-only" => Box::pin(async move {
                if request.read_only {
                    return Approval::Unasked;
                }
                let why = format!(
                    "the session is in read-only mode: {} may change files or run commands; the user can switch the mode to ask or auto",
                    request.tool
                );
                request.progress.decided(&Decision {
                    call_id: request.call_id.to_owned(),
                    tool: request.tool.to_owned(),
                    verdict: Verdict::Refused,
                    by: "policy".to_owned(),
                    reason: Some(why.clone()),
                    bypass: false,
                });
                Approval::Reject(why)
            }),
            _ => self.ask.approve(request),
        }
    }
}
