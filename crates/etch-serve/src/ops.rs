//! What a client may do to the served sessions, whatever door it came
//! through: create one, prompt it, send it a command, rename it. The
//! HTTP routes and the 9P namespace both call these, so a prompt is
//! admitted, a fork re-keyed and a first prompt names its session the
//! same way over either.
//!
//! This module must not know HTTP bodies or 9P files: it takes plain
//! values and answers with [`ApiError`]s, whose message each door
//! passes on.

use std::path::PathBuf;

use axum::http::StatusCode;
use etch_protocol::{Command, CommandBody, ImageInput, Response, StreamingBehavior};
use etch_runtime::service::SessionHandle;

use crate::api::NewSession;
use crate::error::ApiError;
use crate::state::{App, InUse};

impl App {
    /// Creates a session as `asked`: its cwd (default: the first root)
    /// must be a directory inside a served root.
    pub async fn create_session(&self, asked: NewSession) -> Result<InUse, ApiError> {
        let roots = &self.options.roots;
        let cwd: PathBuf = asked
            .cwd
            .clone()
            .or_else(|| roots.first().cloned())
            .ok_or_else(|| ApiError::bad("no_root", "this server serves no directory"))?;
        let real = cwd.canonicalize().map_err(|e| {
            ApiError::bad(
                "bad_cwd",
                format!("cannot use {} as the cwd: {e}", cwd.display()),
            )
        })?;
        let inside = roots.iter().any(|root| real.starts_with(root));
        if !inside || !real.is_dir() {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "cwd_outside_roots",
                format!(
                    "{} is not a directory inside a served root ({}); start etch serve with \
                     --root for it",
                    cwd.display(),
                    roots
                        .iter()
                        .map(|r| r.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        let mut settings = self.options.defaults.clone();
        if let Some(provider) = asked.provider {
            settings.provider.provider = Some(provider);
        }
        if let Some(model) = asked.model {
            settings.provider.model = Some(model);
        }
        if let Some(thinking) = asked.thinking {
            settings.provider.reasoning_effort = Some(thinking);
        }
        if let Some(tools) = asked.tools {
            settings.tools = Some(tools);
        }
        self.create(&real, settings).await
    }

    /// Sends `message` (with `images`) to session `id` once it is
    /// admitted to run; answers the id the run's events carry. A
    /// session's first prompt names it, as `etch -p` names a session.
    pub async fn prompt(
        &self,
        id: &str,
        message: String,
        images: Vec<ImageInput>,
        streaming_behavior: Option<StreamingBehavior>,
    ) -> Result<String, ApiError> {
        let title = message.clone();
        let command = Command {
            id: None,
            body: CommandBody::Prompt {
                message,
                images,
                streaming_behavior,
            },
        };
        let served = self.session(id).await?;
        let admission = self.admit(&served)?;
        let was_running = admission.was_running;
        let (ours, response) = served.ask_with_id(command).await?;
        if response.success {
            admission.keep();
            if served.channels.first_prompt()
                && let Ok(name) = served.handle.rename(title).await
            {
                self.named(id, &name);
            }
            return Ok(ours);
        }
        drop(admission);
        let message = response
            .error
            .unwrap_or_else(|| "the prompt was refused".to_owned());
        Err(if was_running {
            ApiError::new(
                StatusCode::CONFLICT,
                "session_running",
                format!(
                    "{message} (send \"streamingBehavior\": \"steer\" or \"followUp\" to queue it)"
                ),
            )
        } else {
            ApiError::bad("prompt_refused", message)
        })
    }

    /// Sends any `etch rpc` command to session `id` and answers its
    /// response. A fork moves the handle to the new session, which is
    /// served under its own id from then on; commands that would move
    /// the session elsewhere (`new_session`, `switch_session`) are
    /// refused.
    pub async fn command(&self, id: &str, command: Command) -> Result<Response, ApiError> {
        if matches!(
            command.body,
            CommandBody::NewSession { .. } | CommandBody::SwitchSession { .. }
        ) {
            return Err(ApiError::bad(
                "not_served_here",
                format!(
                    "{} would move this session's address to another session; create one \
                     instead and address each session by its own id",
                    command.body.name()
                ),
            ));
        }
        let mut served = self.session(id).await?;
        // Commands that move the handle to another session go one at a
        // time per session, each from the session its address names: a
        // fork arriving while another moved the handle opens that
        // session again.
        let _moving = if matches!(command.body, CommandBody::Fork { .. }) {
            let guard = std::sync::Arc::clone(&served.channels.moving)
                .lock_owned()
                .await;
            if served.handle.id() == id {
                Some(guard)
            } else {
                drop(guard);
                drop(served);
                served = self.session(id).await?;
                Some(
                    std::sync::Arc::clone(&served.channels.moving)
                        .lock_owned()
                        .await,
                )
            }
        } else {
            None
        };
        // Text that can start a run takes one like a prompt.
        let admission = match command.body {
            CommandBody::Prompt { .. }
            | CommandBody::Steer { .. }
            | CommandBody::FollowUp { .. } => Some(self.admit(&served)?),
            _ => None,
        };
        let old_file = served.handle.file();
        let response = served.ask(command).await?;
        if let (Some(admission), true) = (admission, response.success) {
            admission.keep();
        }
        self.rekey(id, &old_file, &served);
        Ok(response)
    }

    /// Names session `id`; answers the name as stored (one line, cut to
    /// the index's length).
    pub async fn rename(&self, id: &str, name: String) -> Result<String, ApiError> {
        if name.trim().is_empty() {
            return Err(ApiError::bad("bad_name", "the name must not be empty"));
        }
        let served = self.session(id).await?;
        let stored = served
            .handle
            .rename(name)
            .await
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "cannot_name", e))?;
        self.named(id, &stored);
        Ok(stored)
    }
}
