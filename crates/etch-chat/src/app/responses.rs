//! The host's answers to commands, turned into blocks and state: a
//! prompt refused (its text back in the editor), a shell command's output,
//! a compaction, a fork or navigation, a session opened or left. The
//! events of a run are `events`' business.

use etch_protocol::Response;
use serde_json::Value;

use super::{App, Purpose};
use crate::render::blocks::{Block, Level};
use crate::render::tools::ToolView;

impl App {
    /// A command's answer.
    pub(super) fn response(&mut self, response: &Response) {
        let Some(id) = response.id.clone() else {
            return;
        };
        let purpose = self.waiting.get(&id).cloned();
        let data = response.data.clone().unwrap_or(Value::Null);
        let failed = !response.success;
        let error = response.error.clone().unwrap_or_default();
        match purpose {
            // A prompt is answered at once; a failed run answers it again,
            // and `agent_end` has said why already.
            Some(Purpose::Prompt(text)) => {
                self.waiting.remove(&id);
                self.prompt_answered(&id, text, failed, error);
            }
            Some(Purpose::Steer) => {
                self.waiting.remove(&id);
                if failed {
                    self.notice(Level::Error, error);
                }
            }
            Some(Purpose::Bash(command)) => {
                self.footer.branch = etch_runtime::git::branch(&self.cwd);
                self.waiting.remove(&id);
                self.end_command();
                self.bash_answered(id, &command, failed, error, &data);
            }
            Some(Purpose::Compact) => {
                self.waiting.remove(&id);
                self.end_command();
                if failed && !self.compaction_reported {
                    self.notice(Level::Error, format!("compaction failed: {error}"));
                }
            }
            Some(Purpose::Fork) => {
                self.waiting.remove(&id);
                self.fork_answered(failed, &error, &data);
            }
            Some(Purpose::Navigate) => {
                self.waiting.remove(&id);
                self.end_command();
                self.navigate_answered(failed, &error, &data);
            }
            Some(Purpose::Other(what)) => {
                self.waiting.remove(&id);
                if failed {
                    self.notice(Level::Error, error);
                } else if !what.is_empty() {
                    let path = data.get("path").and_then(Value::as_str);
                    let text = match path {
                        Some(path) => format!("{what} {path}"),
                        None => what,
                    };
                    self.notice(Level::Info, text);
                }
            }
            None => {
                if failed && !self.ended.contains(&id) {
                    if self
                        .run
                        .as_ref()
                        .is_some_and(|run| run.id.as_deref() == Some(id.as_str()))
                    {
                        self.run = None;
                    }
                    self.notice(Level::Error, error);
                }
            }
        }
        if response.command == "abort" {
            self.abort_answered(&data);
        }
    }

    /// A prompt's answer: refused before it ran, its text comes back.
    fn prompt_answered(&mut self, id: &str, text: String, failed: bool, error: String) {
        if !failed {
            return;
        }
        if self.ended.contains(id) {
            // agent_end said why.
            return;
        }
        // Refused before it ran: the run the chat expected is not
        // coming.
        if self
            .run
            .as_ref()
            .is_some_and(|run| run.id.as_deref() == Some(id) && !run.began)
        {
            self.run = None;
        }
        // Refused (another run had the session): the text comes
        // back rather than being lost.
        self.restore_unsent(vec![text]);
        if !error.is_empty() {
            self.notice(Level::Error, error);
        }
    }

    /// A shell command's answer: its output as a tool block.
    fn bash_answered(
        &mut self,
        id: String,
        command: &str,
        failed: bool,
        error: String,
        data: &Value,
    ) {
        if failed {
            self.notice(Level::Error, error);
            return;
        }
        let output = data
            .get("output")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let is_error = data
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let cancelled = data
            .get("cancelled")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        self.push(Block::Tools(vec![ToolView {
            id,
            name: "bash".into(),
            args: serde_json::json!({ "command": command }),
            result: Some(if output.trim().is_empty() {
                "(no output)".into()
            } else {
                output
            }),
            is_error,
            duration_ms: 0,
            details: None,
        }]));
        if cancelled {
            self.notice(Level::Info, "cancelled");
        }
    }

    /// A fork's answer: the new session, the prompt back in the editor.
    fn fork_answered(&mut self, failed: bool, error: &str, data: &Value) {
        if failed {
            self.notice(Level::Error, format!("fork failed: {error}"));
            return;
        }
        if let Some(session) = data.get("sessionId").and_then(Value::as_str) {
            self.session = Some(session.to_owned());
        }
        if let Some(file) = data.get("sessionFile").and_then(Value::as_str) {
            self.session_file = Some(file.into());
        }
        self.notice(
            Level::Info,
            format!(
                "forked into a new session {}; edit the prompt and send it",
                self.session.as_deref().unwrap_or("")
            ),
        );
        if let Some(text) = data.get("text").and_then(Value::as_str) {
            self.editor.clear();
            self.editor.set(text);
        }
    }

    /// A move in the tree answered.
    fn navigate_answered(&mut self, failed: bool, error: &str, data: &Value) {
        if failed {
            self.notice(Level::Error, format!("could not move there: {error}"));
            return;
        }
        let summary = data.get("summary").and_then(Value::as_str);
        let text = match summary {
            Some(_) => {
                "moved in the session tree; the branch left behind was summarized into the context"
            }
            None => "moved in the session tree; the next prompt starts a new branch here",
        };
        self.notice(Level::Info, text);
    }

    /// An abort answered: steering that will not run now comes back to
    /// the editor.
    fn abort_answered(&mut self, data: &Value) {
        self.aborting = false;
        // Steering that will not run now comes back to the editor.
        let unsent: Vec<String> = data
            .get("unsent")
            .and_then(Value::as_array)
            .map(|texts| {
                texts
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        self.restore_unsent(unsent);
    }
}
