//! The slash commands that ask the session something and show it or
//! open a picker with it: `/status`, `/resume`, `/model`, `/thinking`,
//! `/fork`, `/tree` and `/name`. It must not know about the terminal or
//! how sessions are stored (the runtime's service and catalog answer).

use etch_protocol::{CommandBody, ThinkingLevel};
use etch_runtime::service::catalog;

use super::Slot;
use crate::app::App;
use crate::app::picker::Pick;
use crate::render::blocks::{Block, Level};

/// What the commands that need a session say before the first prompt.
const NO_SESSION: &str = "no session yet: it starts with your first prompt";

impl Slot {
    /// `/status`: the session's counters.
    pub(super) async fn status(&self, app: &mut App) {
        match &self.handle {
            Some(handle) => match handle.status().await {
                Ok(text) => app.push(Block::Output(text.trim_end().to_owned())),
                Err(err) => app.notice(Level::Error, err),
            },
            None => app.notice(Level::Info, NO_SESSION),
        }
    }

    /// `/resume` without a prefix: the recent sessions to pick from.
    pub(super) fn resume_picker(&self, app: &mut App) {
        let rows = catalog::sessions(&self.launch.place.session_dir);
        let choices = crate::choices::sessions(&rows, app.session());
        if choices.is_empty() {
            app.notice(Level::Info, "no sessions yet");
        } else {
            app.open_picker(
                Pick::Resume,
                "resume which session? (type to filter, Enter to open, Esc to close)",
                choices,
                0,
            );
        }
    }

    /// `/model PROVIDER/MODEL` or `/model MODEL` (the current provider's).
    pub(super) async fn switch_model(&mut self, app: &mut App, spec: &str) {
        let (provider, model) = match spec.split_once('/') {
            Some((p, m)) if etch_runtime::PROVIDERS.contains(&p) => (p.to_owned(), m.to_owned()),
            _ => (app.footer.provider.clone(), spec.to_owned()),
        };
        self.send(
            app,
            CommandBody::SetModel {
                provider,
                model_id: model,
            },
            "",
        )
        .await;
    }

    /// `/model`: the models to pick from, the server's joining later.
    pub(super) fn model_picker(&self, app: &mut App) {
        let used = catalog::models_used(&self.launch.place.session_dir, crate::choices::RECENT);
        let config = &self.launch.place.config.provider;
        let configured = config.name.as_deref().zip(config.model.as_deref());
        let choices =
            crate::choices::models(&used, (&app.footer.provider, &app.footer.model), configured);
        app.open_picker(
            Pick::Model,
            "switch to which model? (type a name to filter or to use it; Enter)",
            choices,
            0,
        );
        self.list_server_models(app);
    }

    /// `/thinking LEVEL`.
    pub(super) async fn switch_thinking(&mut self, app: &mut App, level: &str) {
        match serde_json::from_value::<ThinkingLevel>(serde_json::Value::String(level.to_owned())) {
            Ok(level) => {
                self.send(app, CommandBody::SetThinkingLevel { level }, "")
                    .await;
            }
            Err(_) => app.notice(
                Level::Warning,
                format!(
                    "unknown thinking level \"{level}\": use one of {}",
                    etch_config::REASONING_EFFORTS.join(", ")
                ),
            ),
        }
    }

    /// `/thinking`: the effort asked for and the ones to choose from.
    pub(super) fn show_thinking(&self, app: &mut App) {
        let level = match &self.handle {
            Some(handle) => handle.thinking(),
            None => self.launch.settings.provider.reasoning_effort.clone(),
        }
        .unwrap_or_else(|| "the provider's default".into());
        // `off` first: it is the one to reach for.
        let mut levels = vec!["off"];
        levels.extend(
            etch_config::REASONING_EFFORTS
                .iter()
                .filter(|l| **l != "off"),
        );
        app.push(Block::Output(format!(
            "thinking: {level}\nchange with /thinking {}",
            levels.join("|")
        )));
    }

    /// `/fork`: the prompts of the active branch to fork before.
    pub(super) async fn fork_picker(&self, app: &mut App) {
        let Some(handle) = &self.handle else {
            return app.notice(Level::Info, NO_SESSION);
        };
        let choices = match handle.fork_points().await {
            Ok(points) => crate::choices::prompts(&points),
            Err(err) => return app.notice(Level::Error, err),
        };
        if choices.is_empty() {
            app.notice(Level::Info, "there is no prompt to fork from yet");
        } else {
            app.open_picker(
                Pick::Fork,
                "fork a new session before which prompt? (Enter; Esc to close)",
                choices,
                0,
            );
        }
    }

    /// `/tree`: the conversation tree to move in.
    pub(super) async fn tree_picker(&self, app: &mut App) {
        let Some(handle) = &self.handle else {
            return app.notice(Level::Info, NO_SESSION);
        };
        let (choices, selected) = match handle.tree().await {
            Ok(rows) => crate::choices::tree(&rows),
            Err(err) => return app.notice(Level::Error, err),
        };
        if choices.is_empty() {
            app.notice(Level::Info, "the session has no messages yet");
        } else {
            app.open_picker(
                Pick::Tree,
                "move to which point? (● active branch; Enter: go there, Tab: go and summarize the branch left; Esc)",
                choices,
                selected,
            );
        }
    }

    /// `/name TITLE`.
    pub(super) async fn rename(&self, app: &mut App, title: String) {
        match (&self.handle, app.session().map(str::to_owned)) {
            (Some(handle), Some(id)) => match handle.rename(title).await {
                Ok(title) => app.notice(
                    Level::Info,
                    format!("session {id} is now named \"{title}\""),
                ),
                Err(err) => {
                    app.notice(Level::Error, format!("could not rename the session: {err}"));
                }
            },
            _ => app.notice(Level::Info, NO_SESSION),
        }
    }
}
