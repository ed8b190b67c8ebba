//! Choices made in a picker (a session to resume, a model, a point of
//! the tree), opening another session, and `/export`: the slot's work on
//! session files. It must not know about the terminal.

use std::path::Path;
use std::time::Instant;

use etch_core::NoopObserver;
use etch_protocol::CommandBody;
use etch_runtime::host::Host;
use etch_runtime::{Notice, Session, Target};
use etch_session::load_session;

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
            Pick::Subagent => {}
            Pick::Fork => {
                let effect = app.fork(value);
                if let crate::app::Effect::Host(command) = effect {
                    self.command(app, command).await;
                }
            }
            Pick::Tree => {
                let Some(loaded) = Self::loaded(app) else {
                    return;
                };
                // A prompt is gone back to from before it, with its text in
                // the editor to change and send again (a new branch).
                let Some(event) = loaded.events.iter().find(|e| e.id == value) else {
                    app.notice(Level::Warning, "that point is no longer in the session");
                    return;
                };
                let mut target = value.clone();
                if event.kind == etch_session::types::MESSAGE_USER
                    && let Some(parent) = &event.parent_id
                {
                    target.clone_from(parent);
                    if let Ok(data) = event.parse_data::<etch_session::event::UserData>() {
                        app.set_draft(&etch_model::content::joined_text(&data.content));
                    }
                }
                let effect = app.navigate(target, alternate, now);
                if let crate::app::Effect::Host(command) = effect {
                    self.command(app, command).await;
                }
            }
        }
    }

    /// The session's log, loaded, or a notice saying why not.
    pub(super) fn loaded(app: &mut App) -> Option<etch_session::LoadedSession> {
        let Some(path) = app.session_file().map(Path::to_path_buf) else {
            app.notice(
                Level::Info,
                "no session yet: it starts with your first prompt",
            );
            return None;
        };
        match load_session(&path) {
            Ok(loaded) => Some(loaded),
            Err(err) => {
                app.notice(
                    Level::Error,
                    format!("cannot read {}: {err}", path.display()),
                );
                None
            }
        }
    }

    /// `/resume`: the session `target` names replaces the current one.
    pub(super) async fn resume(&mut self, app: &mut App, target: Target<'_>) {
        let wanted = match target {
            Target::Path(path) => Some(path.to_path_buf()),
            Target::Prefix(prefix) => {
                etch_session::SessionStore::new(&self.launch.place.session_dir)
                    .resolve(prefix)
                    .ok()
                    .map(|row| std::path::PathBuf::from(row.path))
            }
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
        let mut notices = Vec::new();
        let opened = Session::open_loaded(
            self.launch.place.clone(),
            self.launch.settings.clone(),
            self.launch.context.clone(),
            target,
            &mut |n: Notice| notices.push(n),
            &mut NoopObserver,
        )
        .await;
        match opened {
            Ok((session, loaded)) => {
                let replay = Some(crate::replay::replay(&loaded, &app.footer.prices));
                app.resumed(session.id(), session.path(), replay);
                let client = &session.selection().client;
                app.set_model(client.provider(), client.model());
                self.host = Some(Host::new(session, self.sink.clone()));
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
        for notice in notices {
            if notice.level == etch_protocol::NoticeLevel::Warning {
                app.notice(Level::Warning, notice.message);
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
            _ => match load_session(&file) {
                Ok(loaded) => {
                    std::fs::write(&target, crate::export::html(&loaded)).map_err(|e| e.to_string())
                }
                Err(err) => Err(err.to_string()),
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
