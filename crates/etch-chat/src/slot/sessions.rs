//! Choices made in a picker (a session to resume, a model, a point of
//! the tree), opening another session, and `/export`: the slot's work on
//! session files. It must not know about the terminal.

use std::path::Path;
use std::time::Instant;

use etch_protocol::CommandBody;
use etch_runtime::Target;
use etch_runtime::service::{Scope, SessionHandle, Spec, Stored, catalog};

use super::Slot;
use crate::app::App;
use crate::app::picker::Pick;
use crate::render::blocks::Level;
use crate::slash::Slash;

impl Slot {
    /// A picker's choice.
    pub async fn picked(
        &mut self,
        app: &mut App,
        pick: Pick,
        value: String,
        alternate: bool,
        now: Instant,
    ) {
        match pick {
            Pick::Resume => self.resume(app, Target::Path(Path::new(&value))).await,
            Pick::Model => Box::pin(self.slash(app, Slash::Model(Some(value)), now)).await,
            // The picker sends the stop itself (a host command).
            Pick::Subagent | Pick::Process => {}
            Pick::Fork => {
                let effect = app.fork(value);
                if let crate::app::Effect::Host(command) = effect {
                    self.command(app, command).await;
                }
            }
            Pick::Tree => {
                let Some(handle) = &self.handle else {
                    return;
                };
                let rows = match handle.tree().await {
                    Ok(rows) => rows,
                    Err(err) => return app.notice(Level::Error, err),
                };
                // A prompt is gone back to from before it, with its text in
                // the editor to change and send again (a new branch).
                let Some(row) = rows.iter().find(|r| r.id == value) else {
                    app.notice(Level::Warning, "that point is no longer in the session");
                    return;
                };
                let mut target = value.clone();
                if row.is_user
                    && let Some(parent) = &row.parent_id
                {
                    target.clone_from(parent);
                    app.set_draft(&row.full_text);
                }
                let effect = app.navigate(target, alternate, now);
                if let crate::app::Effect::Host(command) = effect {
                    self.command(app, command).await;
                }
            }
        }
    }

    /// `/resume`: the session `target` names replaces the current one.
    pub(super) async fn resume(&mut self, app: &mut App, target: Target<'_>) {
        if self.stays_attached(app, "/resume") {
            return;
        }
        let wanted = match target {
            Target::Path(path) => Some(path.to_path_buf()),
            Target::Prefix(prefix) => catalog::resolve(&self.launch.place.session_dir, prefix).ok(),
        };
        let Some(wanted) = wanted.filter(|w| w.is_file()) else {
            app.notice(Level::Warning, "no such session: see /resume for the list");
            return;
        };
        if let Some(current) = app.session_file()
            && paths_match(&wanted, current)
        {
            app.notice(Level::Info, "that is the session already open");
            return;
        }
        let previous = app.session_file().map(Path::to_path_buf);
        // The open session's lock must go before another can be opened
        // (a session is held by one etch at a time).
        self.leave(app).await;
        let spec = Spec {
            place: self.launch.place.clone(),
            settings: self.launch.settings.clone(),
            context: self.launch.context.clone(),
        };
        let opened = self
            .service
            .open(
                spec,
                Stored::Path(&wanted),
                crate::replay::scope(&app.footer.prices),
                self.sink.clone(),
            )
            .await;
        match opened {
            Ok(opened) => {
                let replay = Some(crate::replay::replay(&opened.replay, &app.footer.prices));
                let handle = opened.handle;
                app.resumed(&handle.id(), &handle.file(), replay);
                let (provider, model) = handle.model();
                app.set_model(&provider, &model);
                self.handle = Some(Box::new(handle));
                for notice in opened.notices {
                    if notice.level == etch_protocol::NoticeLevel::Warning {
                        app.notice(Level::Warning, notice.message);
                    }
                }
            }
            Err(err) => {
                app.notice(Level::Warning, err.to_string());
                // Back to where the user was, when there was a session.
                match previous {
                    Some(previous) if previous != wanted => {
                        Box::pin(self.resume(app, Target::Path(&previous))).await;
                    }
                    _ => app.new_session(),
                }
            }
        }
    }

    /// `/export [html|md|jsonl] [path]`.
    pub(super) async fn export(&mut self, app: &mut App, format: &str, path: Option<&str>) {
        let (Some(id), Some(file)) = (
            app.session().map(str::to_owned),
            app.session_file().map(Path::to_path_buf),
        ) else {
            app.notice(
                Level::Info,
                "no session yet: it starts with your first prompt",
            );
            return;
        };
        let target = path.map_or_else(
            || self.launch.place.cwd.join(format!("etch-{id}.{format}")),
            |p| self.launch.place.cwd.join(p),
        );
        let written = match format {
            "jsonl" => std::fs::copy(&file, &target)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            "md" => {
                self.send(
                    app,
                    CommandBody::Export {
                        output_path: Some(target.to_string_lossy().into_owned()),
                        format: Some("md".to_owned()),
                    },
                    "wrote the transcript to",
                )
                .await;
                return;
            }
            _ => match &self.handle {
                Some(handle) => match handle.replay(Scope::WHOLE).await {
                    Ok(replay) => std::fs::write(&target, crate::export::html(&replay))
                        .map_err(|e| e.to_string()),
                    Err(err) => Err(err),
                },
                None => Err("the session is not open".to_owned()),
            },
        };
        match written {
            Ok(()) => app.notice(
                Level::Info,
                format!("wrote the transcript to {}", target.display()),
            ),
            Err(err) => app.notice(
                Level::Error,
                format!("cannot write {}: {err}", target.display()),
            ),
        }
    }
}

/// Whether two paths name the same file.
fn paths_match(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
