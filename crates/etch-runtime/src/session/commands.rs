//! What a front end asks of an open session besides a prompt: a manual
//! compaction, a shell command run into the context, a user message
//! appended. Part of [`Session`].

use etch_model::Message;
use etch_session::writer::Appended;
use etch_session::{SessionError, types};
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::paths;

impl Session {
    /// Summarizes older history into a `context.summary` event (manual
    /// compaction, E-CTX-15), then projects the history again. `force`
    /// (asked for explicitly) keeps only the last turn and compacts even
    /// a short session.
    /// Each line appended besides the summary (hook runs, what the
    /// summary request cost) goes to `on_line`.
    pub async fn compact(
        &mut self,
        focus: Option<&str>,
        force: bool,
        cancel: &CancellationToken,
        on_line: &mut (dyn FnMut(&str) + Send),
    ) -> Result<etch_compact::Outcome, CompactFailure> {
        let loaded = self.load().map_err(CompactFailure::Session)?;
        let hooks = (!self.context.hooks.is_empty()).then(|| self.session_hooks());
        let outcome = crate::compaction::manual(
            &loaded,
            &mut self.writer,
            &crate::compaction::Manual {
                client: self.selection.client.as_ref(),
                config: &self.place.config,
                hooks: hooks.as_ref(),
                focus,
                force,
            },
            cancel,
            on_line,
        )
        .await
        .map_err(CompactFailure::Compact)?;
        self.reproject().map_err(CompactFailure::Session)?;
        Ok(outcome)
    }

    /// Appends a user message to the history without running the model
    /// (the output of a shell command run outside tool calls, which the
    /// model sees with the next prompt).
    pub fn append_user(&mut self, text: String) -> Result<Appended, SessionError> {
        let content = vec![etch_model::ContentPart::text(text)];
        let appended = self.writer.append(
            types::MESSAGE_USER,
            &etch_session::UserData {
                content: content.clone(),
            },
        )?;
        self.history.push(Message::User { content });
        Ok(appended)
    }

    /// Runs `command` through the bash tool, outside any tool call (the
    /// same shell, environment rules and output limits as the model's
    /// calls), and appends the result as a user message the model sees
    /// with the next prompt (P-BASH-03: `` Ran `{command}` `` and the
    /// output fenced, or `(no output)`). Returns the output and whether
    /// the command failed. With `record` false (the chat's `!!command`)
    /// nothing is appended: the output is the user's alone.
    pub async fn bash(
        &mut self,
        command: &str,
        record: bool,
        cancel: &CancellationToken,
    ) -> Result<(String, bool), SessionError> {
        // The user's own command runs in the foreground only.
        let options = crate::context::builtin_options(&self.place, &self.context.sandbox, None);
        let locks = etch_tools::lock::MutationLocks::shared();
        let (output, failed) = match etch_tools::builtin::tool("bash", &options, &locks) {
            Some(tool) => {
                let ctx = etch_tool::ToolContext {
                    call_id: format!("user-bash-{}", etch_session::id::new_id()),
                    cwd: self.place.cwd.clone(),
                    cancel: cancel.clone(),
                    progress: etch_tool::ProgressSink::default(),
                    temp_dir: paths::session_temp_dir(&self.place.cwd, self.id()),
                    origin: etch_tool::CallOrigin::default(),
                    approved: false,
                };
                let args = serde_json::json!({ "command": command });
                match tool.execute(args, ctx).await {
                    Ok(out) => (out.text, false),
                    Err(err) => (err.to_string(), true),
                }
            }
            None => ("the bash tool is not built in".to_owned(), true),
        };
        if !record {
            return Ok((output, failed));
        }
        // The user's own command, but its output goes to the model and the
        // log like a tool result's.
        let output = self.redactor().secrets().redact(&output).into_owned();
        let body = if output.trim().is_empty() {
            "(no output)".to_owned()
        } else {
            format!("```\n{}\n```", output.trim_end_matches('\n'))
        };
        self.append_user(format!("Ran `{command}`\n{body}"))?;
        Ok((output, failed))
    }
}

/// Why a manual compaction did not happen.
#[derive(Debug, thiserror::Error)]
pub enum CompactFailure {
    /// The log could not be read or written.
    #[error(transparent)]
    Session(SessionError),
    /// The summary request failed or was cancelled; the log is unchanged.
    #[error(transparent)]
    Compact(etch_compact::CompactError),
}
