//! The slash commands the slot carries out itself: the dispatch, and
//! those that change or report the chat's own state (`/context`,
//! `/reload`, `/skill:`, `/new`) and the model list `/model` asks the
//! server for; the ones that show what the session answers are in
//! `pickers`. It must not know about the terminal.

use std::path::Path;
use std::time::Instant;

use etch_runtime::report::context as context_report;
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
    pub(super) fn list_server_models(&self, app: &mut App) {
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
            Slash::Status => self.status(app).await,
            Slash::Context | Slash::ContextDump(_) => self.context_report(app, &command),
            Slash::New if self.stays_attached(app, "/new") => {}
            Slash::Resume(_) if self.stays_attached(app, "/resume") => {}
            Slash::New => {
                self.leave(app).await;
                app.new_session();
            }
            Slash::Resume(Some(prefix)) => self.resume(app, Target::Prefix(&prefix)).await,
            Slash::Resume(None) => self.resume_picker(app),
            Slash::Model(Some(spec)) => self.switch_model(app, &spec).await,
            Slash::Model(None) => self.model_picker(app),
            Slash::Thinking(Some(level)) => self.switch_thinking(app, &level).await,
            Slash::Thinking(None) => self.show_thinking(app),
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
            Slash::Fork => self.fork_picker(app).await,
            Slash::Tree => self.tree_picker(app).await,
            Slash::Name(title) => self.rename(app, title).await,
            Slash::Help
            | Slash::Hotkeys
            | Slash::Ps
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
