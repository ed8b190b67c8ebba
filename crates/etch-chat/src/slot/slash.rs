//! The slash commands the slot carries out itself (`/model`, `/thinking`,
//! `/status`, `/context`, `/reload`, `/skill:`, `/new`, `/fork`, `/tree`,
//! …), and the model list they ask the server for. It must not know
//! about the terminal.

use std::path::Path;
use std::time::Instant;

use etch_protocol::{CommandBody, ThinkingLevel};
use etch_runtime::report::context as context_report;
use etch_runtime::service::catalog;
use etch_runtime::{Context, Target};

use super::{Late, Slot};
use crate::app::App;
use crate::app::picker::Pick;
use crate::render::blocks::{Block, Level};
use crate::slash::Slash;

impl Slot {
    /// Asks the current client's server which models it offers, in the
    /// background: the `/model` picker is open at once and the list joins
    /// it when it comes (bounded in time by the provider).
    fn list_server_models(&self, app: &mut App) {
        let Some(late) = self.late.clone() else {
            return;
        };
        let (provider, asked) = match (&self.handle, &self.launch.selection) {
            (Some(handle), _) => (handle.model().0, handle.server_models()),
            (None, Some(selection)) => {
                let client = std::sync::Arc::clone(&selection.client);
                let asked: etch_runtime::service::Later<Result<Vec<String>, String>> =
                    Box::pin(async move { client.list_models().await.map_err(|e| e.to_string()) });
                (selection.client.provider().to_owned(), asked)
            }
            (None, None) => return,
        };
        if provider == "echo" {
            return;
        }
        app.set_picker_status(Pick::Model, "asking the server which models it offers…");
        tokio::spawn(async move {
            let offered = asked.await;
            let _ = late.send(Late::Models { provider, offered });
        });
    }

    /// Carries out a slash command that needs the session.
    pub async fn slash(&mut self, app: &mut App, command: Slash, now: Instant) {
        match command {
            Slash::Status => match &self.handle {
                Some(handle) => match handle.status().await {
                    Ok(text) => app.push(Block::Output(text.trim_end().to_owned())),
                    Err(err) => app.notice(Level::Error, err),
                },
                None => app.notice(
                    Level::Info,
                    "no session yet: it starts with your first prompt",
                ),
            },
            Slash::Context | Slash::ContextDump(_) => self.context_report(app, &command),
            Slash::New => {
                self.leave(app).await;
                app.new_session();
            }
            Slash::Resume(Some(prefix)) => self.resume(app, Target::Prefix(&prefix)).await,
            Slash::Resume(None) => {
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
            Slash::Model(Some(spec)) => {
                let (provider, model) = match spec.split_once('/') {
                    Some((p, m)) if etch_runtime::PROVIDERS.contains(&p) => {
                        (p.to_owned(), m.to_owned())
                    }
                    _ => (app.footer.provider.clone(), spec.clone()),
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
            Slash::Model(None) => {
                let used =
                    catalog::models_used(&self.launch.place.session_dir, crate::choices::RECENT);
                let config = &self.launch.place.config.provider;
                let configured = config.name.as_deref().zip(config.model.as_deref());
                let choices = crate::choices::models(
                    &used,
                    (&app.footer.provider, &app.footer.model),
                    configured,
                );
                app.open_picker(
                    Pick::Model,
                    "switch to which model? (type a name to filter or to use it; Enter)",
                    choices,
                    0,
                );
                self.list_server_models(app);
            }
            Slash::Thinking(Some(level)) => {
                match serde_json::from_value::<ThinkingLevel>(serde_json::Value::String(
                    level.clone(),
                )) {
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
            Slash::Thinking(None) => {
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
            Slash::Export { format, path } => self.export(app, &format, path.as_deref()).await,
            Slash::Copy => app.copy_last(&self.launch.place),
            Slash::Skill { name, text } => match self.context().expand_skill(&name, &text) {
                Ok(expanded) => {
                    let typed = format!("/skill:{name} {text}").trim_end().to_owned();
                    app.show_prompt_as(&expanded, typed);
                    let effect = app.send_prompt(expanded, now);
                    if let crate::app::Effect::Host(command) = effect {
                        Box::pin(self.command(app, command)).await;
                    }
                }
                Err(err) => app.notice(Level::Warning, err.to_string()),
            },
            Slash::Reload => self.reload(app),
            Slash::Fork | Slash::Tree => {
                let Some(handle) = &self.handle else {
                    app.notice(
                        Level::Info,
                        "no session yet: it starts with your first prompt",
                    );
                    return;
                };
                if command == Slash::Fork {
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
                } else {
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
            }
            Slash::Name(title) => match (&self.handle, app.session().map(str::to_owned)) {
                (Some(handle), Some(id)) => match handle.rename(title).await {
                    Ok(title) => app.notice(
                        Level::Info,
                        format!("session {id} is now named \"{title}\""),
                    ),
                    Err(err) => {
                        app.notice(Level::Error, format!("could not rename the session: {err}"));
                    }
                },
                _ => app.notice(
                    Level::Info,
                    "no session yet: it starts with your first prompt",
                ),
            },
            Slash::Help
            | Slash::Hotkeys
            | Slash::Quit
            | Slash::Compact(_)
            | Slash::Unknown(_)
            | Slash::Usage(_) => {}
        }
    }

    /// `/reload`: configuration, instruction files and skills read again;
    /// the next run uses them (the model stays: `/model` changes it).
    fn reload(&mut self, app: &mut App) {
        let (place, warnings) = match (self.launch.reload)() {
            Ok(read) => read,
            Err(why) => {
                app.notice(
                    Level::Error,
                    format!("the configuration was not reloaded: {why}"),
                );
                return;
            }
        };
        let context = match Context::build(&place, &self.launch.settings) {
            Ok(context) => context,
            Err(err) => {
                app.notice(Level::Error, format!("the context was not reloaded: {err}"));
                return;
            }
        };
        for warning in warnings.iter().chain(&context.assembled.diagnostics) {
            app.notice(Level::Warning, warning.clone());
        }
        let skills: Vec<String> = context
            .assembled
            .skills
            .iter()
            .map(|s| s.name.clone())
            .collect();
        let summary = format!(
            "reloaded: {} instruction file(s), {} skill(s), {} tool(s)",
            context.assembled.instruction_files.len(),
            skills.len(),
            context.tools.specs().len()
        );
        if let Some(handle) = &self.handle {
            handle.reload(place.clone(), context.clone());
        }
        self.launch.place = place;
        self.launch.context = context;
        self.launch.selection = None;
        app.set_skills(skills);
        app.notice(Level::Info, summary);
    }

    /// `/context` and `/context dump [path]`.
    fn context_report(&self, app: &mut App, command: &Slash) {
        let file = app.session_file().map(Path::to_path_buf);
        let context = self.context();
        let place = &self.launch.place;
        if let Slash::ContextDump(path) = command {
            let session = app.session().zip(file.as_deref());
            match context_report::dump_for(place, session, context, path.as_deref().map(Path::new))
            {
                Ok(target) => app.notice(
                    Level::Info,
                    format!("wrote context dump to {}", target.display()),
                ),
                Err(err) => app.notice(Level::Error, err),
            }
        } else {
            match context_report::report_for(place, file.as_deref(), context) {
                Ok(text) => app.push(Block::Output(text.trim_end().to_owned())),
                Err(err) => app.notice(Level::Error, err),
            }
        }
    }
}
