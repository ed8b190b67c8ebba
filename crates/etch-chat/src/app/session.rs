//! Session changes as the app sees them: a new session (none until the
//! next prompt), another session resumed (its recent transcript drawn
//! again, its prompts as history, its counters in the footer), a command
//! that could not be sent, and `/copy`.

use std::path::Path;

use etch_protocol::{Command, CommandBody};
use etch_runtime::Place;

use super::{App, Counters};
use crate::render::blocks::{Block, Level};
use crate::replay::Replay;

impl App {
    /// `/new`: the next prompt starts a new session.
    pub fn new_session(&mut self) {
        self.session = None;
        self.session_file = None;
        self.footer.counters = Counters::default();
        self.last_batch = None;
        self.last_answer = None;
        self.queued.clear();
        self.notice(Level::Info, "new session: it starts with your next prompt");
    }

    /// Another session was opened: draw its recent transcript and take
    /// its history and counters.
    pub fn resumed(&mut self, id: &str, file: &Path, replay: Option<Replay>) {
        self.session = Some(id.to_owned());
        self.session_file = Some(file.to_path_buf());
        self.notice(Level::Info, format!("resumed session {id}"));
        let replay = replay.unwrap_or_default();
        self.pending.extend(replay.blocks);
        let draft = self.editor.raw();
        self.editor = crate::editor::Editor::new(replay.history);
        self.editor.set(&draft);
        self.popup = None;
        self.footer.counters = replay.counters;
        self.last_batch = None;
    }

    /// A command could not reach a session (none could be opened, or it
    /// was handled without one): nothing more will come for it.
    pub fn output_refused(&mut self, command: &Command) {
        if let Some(id) = &command.id {
            self.waiting.remove(id);
            if self.run.as_ref().is_some_and(|r| r.id.as_ref() == Some(id)) {
                self.run = None;
            }
        }
        if matches!(command.body, CommandBody::Abort) {
            self.aborting = false;
        }
        if let CommandBody::Prompt { message, .. } = &command.body {
            // Give the text back rather than lose it.
            if self.editor.is_empty() {
                self.editor.set(message);
            }
        }
    }

    /// `/copy`: the last answer to the clipboard through OSC 52 (which
    /// terminals and tmux with `set-clipboard` honour), and to a file, since
    /// whether the terminal took it cannot be known.
    pub fn copy_last(&mut self, place: &Place) {
        let Some(answer) = self.last_answer.clone() else {
            self.notice(Level::Info, "there is no answer to copy yet");
            return;
        };
        if self.osc52 {
            self.raw_out
                .push(format!("\u{1b}]52;c;{}\u{7}", base64(answer.as_bytes())));
        }
        let dir = etch_runtime::paths::project_root(&place.cwd)
            .join(".etch")
            .join("tmp");
        let file = dir.join("last-answer.md");
        let saved = std::fs::create_dir_all(&dir).and_then(|()| {
            etch_fs::replace(&file, answer.as_bytes(), etch_fs::Options::keep_mode())
                .map_err(std::io::Error::from)
        });
        let _ = etch_runtime::paths::keep_state_out_of_git(&place.cwd);
        let how = if self.osc52 {
            "to the clipboard (OSC 52) and "
        } else {
            ""
        };
        match saved {
            Ok(()) => self.notice(
                Level::Info,
                format!(
                    "copied the last answer ({} bytes) {how}to {}",
                    answer.len(),
                    file.display()
                ),
            ),
            Err(err) => self.notice(
                Level::Warning,
                format!(
                    "could not save the last answer to {}: {err}",
                    file.display()
                ),
            ),
        }
    }

    /// The model the footer names.
    pub fn set_model(&mut self, provider: &str, model: &str) {
        provider.clone_into(&mut self.footer.provider);
        model.clone_into(&mut self.footer.model);
    }

    /// Queued texts that will not run (an abort, leaving the session):
    /// back into the editor, so nothing typed is lost.
    pub fn restore_unsent(&mut self, unsent: Vec<String>) {
        // Prompts held behind a command come after what the host had.
        self.barrier = false;
        self.release = false;
        let unsent: Vec<String> = unsent
            .into_iter()
            .chain(std::mem::take(&mut self.held))
            .collect();
        if unsent.is_empty() {
            return;
        }
        let n = unsent.len();
        if self.line_mode {
            self.queued.clear();
            self.notice(
                Level::Info,
                format!(
                    "{n} prompt(s) did not run; type them again to send them:\n{}",
                    unsent.join("\n\n")
                ),
            );
            return;
        }
        self.popup = None;
        let mut text = self.editor.raw();
        for piece in unsent {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&piece);
        }
        self.editor.clear();
        self.editor.set(&text);
        self.queued.clear();
        self.notice(
            Level::Info,
            format!("{n} queued prompt(s) did not run; they are back in the editor"),
        );
    }

    /// The skills Tab completes after `/skill:`.
    pub fn set_skills(&mut self, skills: Vec<String>) {
        self.skills = skills;
    }

    /// Puts `text` in the editor (replacing the draft).
    pub fn set_draft(&mut self, text: &str) {
        self.popup = None;
        self.editor.clear();
        self.editor.set(text);
    }

    /// Bytes the runner writes to the terminal as they are, between
    /// frames (OSC 52).
    pub fn take_raw(&mut self) -> Vec<String> {
        std::mem::take(&mut self.raw_out)
    }

    /// Replaces the pending history with `blocks` (tests, replays).
    pub fn push_all(&mut self, blocks: Vec<Block>) {
        self.pending.extend(blocks);
    }
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(TABLE[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_standard() {
        for (input, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(input.as_bytes()), want);
        }
    }
}
