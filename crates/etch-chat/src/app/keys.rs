//! The chat's keymap: what each key does to the editor, the completion
//! popup and the run (hotkeys listed in `slash::HOTKEYS`). Enter sends;
//! while a run is active it steers; a slash command runs at once or is
//! refused (never queued); ESC or Ctrl-C cancels the run; Ctrl-C clears
//! a draft and, twice on an empty one, quits; Ctrl-D on an empty draft
//! quits (G25 in docs/requirements.md).

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{App, Effect};
use crate::complete;
use crate::render::blocks::{Block, Level};
use crate::slash::{self, Slash};

/// A key press as the terminal reports it.
pub type Key = KeyEvent;

/// What a completion popup completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A slash command or skill.
    Command,
    /// A path at the caret.
    Path,
    /// A project file after `@`.
    File,
}

/// Completion choices under the editor.
#[derive(Debug, Clone)]
pub(crate) struct Popup {
    /// What it completes.
    pub kind: Kind,
    /// The choices.
    pub items: Vec<String>,
    /// The one Enter or Tab takes.
    pub selected: usize,
    /// Where the completed word starts on the caret line.
    pub start: usize,
}

/// Commands that change the session, refused while a run holds it.
fn needs_idle(command: &Slash) -> bool {
    !matches!(
        command,
        Slash::Help
            | Slash::Hotkeys
            | Slash::Ps
            | Slash::Quit
            | Slash::Status
            | Slash::Copy
            | Slash::Export { .. }
            | Slash::Unknown(_)
            | Slash::Usage(_)
    )
}

impl App {
    /// Handles one key.
    pub fn key(&mut self, key: Key, now: Instant) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if !(ctrl && key.code == KeyCode::Char('c')) {
            self.armed = false;
        }
        if self.asking()
            && let Some(effects) = self.approval_key(key, now)
        {
            return effects;
        }
        if self.picker.is_some() {
            return self.picker_key(key);
        }
        if self.popup.is_some()
            && let Some(effects) = self.popup_key(key)
        {
            return effects;
        }
        if self.editor.is_selected() {
            // A refused command's text is selected: typing replaces it,
            // Backspace or Delete removes it, anything else keeps it.
            match key.code {
                KeyCode::Char(_) if !ctrl && !alt => self.editor.clear(),
                KeyCode::Backspace | KeyCode::Delete => {
                    self.editor.clear();
                    return Vec::new();
                }
                _ => self.editor.deselect(),
            }
        }
        match key.code {
            KeyCode::Enter if alt || key.modifiers.contains(KeyModifiers::SHIFT) => {
                self.editor.newline();
            }
            KeyCode::Char('j') if ctrl => self.editor.newline(),
            KeyCode::Enter => return self.submit(now),
            KeyCode::Esc if self.is_busy() => return self.abort().into_iter().collect(),
            KeyCode::Char('c') if ctrl => return self.ctrl_c(now),
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    return vec![Effect::Quit];
                }
                self.editor.delete();
            }
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('u') if ctrl => self.editor.kill_before(),
            KeyCode::Char('k') if ctrl => self.editor.kill_after(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word(),
            KeyCode::Char('b') if alt => self.editor.word_left(),
            KeyCode::Char('f') if alt => self.editor.word_right(),
            KeyCode::Backspace if alt || ctrl => self.editor.delete_word(),
            KeyCode::Char('t') if ctrl => return self.open_subagents(),
            KeyCode::Char(_) if ctrl || alt => {}
            KeyCode::Char(c) => {
                self.editor.insert(c.encode_utf8(&mut [0; 4]));
                if c == '@' {
                    self.open_files();
                }
                // A `/` starting the prompt opens the command menu, which
                // then follows what is typed.
                if c == '/' && self.editor.raw() == "/" {
                    self.tab();
                }
            }
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Up => self.editor.up(),
            KeyCode::Down => self.editor.down(),
            KeyCode::Tab => self.tab(),
            _ => {}
        }
        Vec::new()
    }

    /// A whole line typed in line mode: a prompt, a command or `!cmd`.
    pub fn submit_line(&mut self, text: &str, now: Instant) -> Vec<Effect> {
        self.editor.clear();
        self.editor.insert(text);
        self.submit(now)
    }

    /// Ctrl-C from a signal (line mode): cancel the run.
    pub fn interrupt(&mut self) -> Vec<Effect> {
        self.abort().into_iter().collect()
    }

    /// Whether a picker is open.
    pub fn picker_open(&self) -> bool {
        self.picker.is_some()
    }

    /// Closes the picker.
    pub fn close_picker(&mut self) {
        self.picker = None;
    }

    /// A bracketed paste.
    pub fn paste(&mut self, text: &str) {
        self.armed = false;
        self.popup = None;
        if self.editor.is_selected() {
            self.editor.clear();
        }
        // A dropped or pasted image file becomes an attachment.
        if let Some(path) = crate::attach::pasted_path(text, &self.cwd) {
            let shown = path.display().to_string();
            match crate::attach::load(&path, &shown, self.image_max_edge) {
                Ok(image) => return self.editor.attach(&path, image),
                Err(why) => self.notice(Level::Warning, why),
            }
        }
        self.editor.paste(text);
    }

    /// Enter: a slash command, `!command`, or a prompt (steering while a
    /// run is active).
    fn submit(&mut self, now: Instant) -> Vec<Effect> {
        let text = self.editor.text();
        // A long paste is sent whole and shown as its marker.
        let typed = self.editor.raw();
        if text.trim().is_empty() {
            return Vec::new();
        }
        if let Some(command) = slash::parse(&text) {
            // A mistyped or refused command stays in the editor, selected:
            // fix it with a movement key, or type anything to replace it,
            // so it never runs into the next line; anything else was
            // taken.
            let refused = needs_idle(&command) && self.is_busy();
            if refused || matches!(command, Slash::Unknown(_) | Slash::Usage(_)) {
                self.editor.select_all();
            } else {
                self.editor.clear();
            }
            return self.slash(command, now);
        }
        if let Some(command) = text.strip_prefix('!') {
            let (command, exclude) = match command.strip_prefix('!') {
                Some(rest) => (rest.trim(), true),
                None => (command.trim(), false),
            };
            if command.is_empty() {
                self.hint(
                    "type a command after ! (or !! to keep its output out of the context)",
                    now,
                );
                return Vec::new();
            }
            if self.is_busy() {
                self.hint(
                    "a run is active: wait for it, or press Esc, before running a command",
                    now,
                );
                return Vec::new();
            }
            self.editor.remember(&text);
            self.editor.clear();
            return vec![self.bash(command.to_owned(), exclude, now)];
        }
        let images = match self.prompt_images(&text) {
            Ok(images) => images,
            Err(why) => {
                self.hint(why, now);
                return Vec::new();
            }
        };
        if !images.is_empty() && self.is_busy() {
            self.hint(
                "images go with a prompt that starts a run: send this when the run ends (Esc stops it)",
                now,
            );
            return Vec::new();
        }
        self.editor.clear();
        self.show_prompt_as(&text, typed);
        if !images.is_empty() {
            return vec![self.send_prompt_with(text, images, now)];
        }
        // Behind a command that ran while texts were queued: held, so it
        // is never joined with what was typed before the command.
        if self.is_busy() && self.barrier {
            self.editor.remember(&text);
            self.held.push(text);
            return Vec::new();
        }
        vec![self.send_prompt(text, now)]
    }

    /// The images of the prompt `text`: the attachments whose markers
    /// are still whole, then the image files it names (typed paths and
    /// `@` mentions), as the prompt command carries them.
    fn prompt_images(&self, text: &str) -> Result<Vec<etch_protocol::ImageInput>, String> {
        let mut images = self.editor.attached();
        let typed = self.editor.without_image_markers(text);
        for path in crate::attach::named_in(&typed, &self.cwd) {
            let shown = path
                .strip_prefix(&self.cwd)
                .unwrap_or(&path)
                .display()
                .to_string();
            images.push(crate::attach::load(&path, &shown, self.image_max_edge)?);
        }
        etch_runtime::images::check_count(images.len()).map_err(|e| e.to_string())?;
        Ok(images.iter().filter_map(crate::attach::input).collect())
    }

    /// A command that runs while texts are queued is an ordering barrier
    /// (E-CHAT-05): whatever is typed after it waits in `held` for its own
    /// turn.
    fn barrier(&mut self) {
        if self.is_busy() && !self.queued.is_empty() {
            self.barrier = true;
        }
    }

    /// A slash command: the ones the app can answer alone, else an effect
    /// for the runner. Never queued behind a run (E-CHAT-05).
    fn slash(&mut self, command: Slash, now: Instant) -> Vec<Effect> {
        self.barrier();
        match command {
            Slash::Help => self.push(Block::Output(slash::help())),
            Slash::Hotkeys => self.push(Block::Output(slash::hotkeys())),
            Slash::Ps => self.open_processes(),
            Slash::Quit => return vec![Effect::Quit],
            Slash::Unknown(name) => {
                self.notice(Level::Warning, format!("unknown command: /{name}"));
            }
            Slash::Usage(text) => self.notice(Level::Warning, text),
            command if needs_idle(&command) && self.is_busy() => {
                self.hint(
                    "a run is active: wait for it or press Esc, then run the command again",
                    now,
                );
            }
            Slash::Compact(focus) => return vec![self.compact(focus, now)],
            command => return vec![Effect::Slash(command)],
        }
        Vec::new()
    }

    /// Ctrl-C: cancel the run, else clear the draft, else (twice) quit.
    fn ctrl_c(&mut self, now: Instant) -> Vec<Effect> {
        if self.is_busy() {
            return self.abort().into_iter().collect();
        }
        if !self.editor.is_empty() {
            self.editor.clear();
            self.popup = None;
            return Vec::new();
        }
        if self.armed {
            return vec![Effect::Quit];
        }
        self.armed = true;
        self.hint("press Ctrl-C again to quit (or Ctrl-D)", now);
        Vec::new()
    }

    /// Tab: complete the command, skill or path at the caret.
    fn tab(&mut self) {
        let (start, word) = self.editor.word_at_caret();
        let (kind, items) = if self.editor.on_first_line() && start == 0 && word.starts_with('/') {
            (Kind::Command, complete::commands(&word, &self.skills))
        } else if word.starts_with('@') {
            self.open_files();
            return;
        } else {
            (Kind::Path, complete::paths(&self.cwd, &word))
        };
        match items.len() {
            0 => {}
            1 => self.accept(kind, start, &items[0]),
            _ => {
                let common = common_prefix(&items);
                if kind != Kind::File && common.chars().count() > word.chars().count() {
                    self.editor.replace_before_caret(start, &common);
                }
                self.popup = Some(Popup {
                    kind,
                    items,
                    selected: 0,
                    start,
                });
            }
        }
    }

    /// Opens (or follows) the `@` file search for the word at the caret;
    /// the project's files are listed in the background the first time.
    fn open_files(&mut self) {
        let (start, word) = self.editor.word_at_caret();
        let Some(query) = word.strip_prefix('@') else {
            return;
        };
        let index = self
            .files
            .get_or_insert_with(|| complete::FileIndex::start(&self.cwd));
        self.files_awaited = index.get().is_none();
        let items = index
            .get()
            .map(|files| {
                complete::fuzzy(files, query)
                    .into_iter()
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        self.popup = Some(Popup {
            kind: Kind::File,
            items,
            selected: 0,
            start,
        });
    }

    /// Lists the files again for an open `@` search (after tools ran).
    pub(crate) fn refresh_files(&mut self) {
        if self.popup.as_ref().is_some_and(|p| p.kind == Kind::File) {
            self.open_files();
        }
    }

    /// Whether the `@` search waits for the file list.
    pub(crate) fn files_loading(&self) -> bool {
        self.files_awaited && self.popup.as_ref().is_some_and(|p| p.kind == Kind::File)
    }

    /// Fills the `@` popup once the file list has arrived.
    pub(crate) fn poll_files(&mut self) {
        if self.files_loading() && self.files.as_ref().is_some_and(|f| f.get().is_some()) {
            self.open_files();
        }
    }

    /// Puts a chosen completion in place of the word.
    fn accept(&mut self, kind: Kind, start: usize, item: &str) {
        // The word must still be the one the choices were made for.
        if self.editor.word_at_caret().0 != start {
            self.popup = None;
            return;
        }
        self.popup = None;
        // A chosen image file (an `@` match or a completed path) becomes
        // an attachment, shown as its marker.
        if kind != Kind::Command
            && let Some(path) = crate::attach::pasted_path(item, &self.cwd)
        {
            match crate::attach::load(&path, item, self.image_max_edge) {
                Ok(image) => {
                    self.editor.replace_before_caret(start, "");
                    self.editor.attach(&path, image);
                    self.editor.insert(" ");
                    return;
                }
                Err(why) => self.notice(Level::Warning, why),
            }
        }
        let text = match kind {
            Kind::Command | Kind::File => format!("{item} "),
            Kind::Path => item.to_owned(),
        };
        self.editor.replace_before_caret(start, &text);
    }

    /// A key while the popup is open; `None` passes it on to the editor
    /// (the popup then follows what is typed).
    fn popup_key(&mut self, key: Key) -> Option<Vec<Effect>> {
        let popup = self.popup.as_mut()?;
        match key.code {
            KeyCode::Esc => self.popup = None,
            KeyCode::Up => {
                popup.selected = popup
                    .selected
                    .checked_sub(1)
                    .unwrap_or(popup.items.len().saturating_sub(1));
            }
            KeyCode::Down => popup.selected = (popup.selected + 1) % popup.items.len().max(1),
            // Enter in the command menu runs the chosen command (Tab
            // completes it, to add what it takes).
            KeyCode::Enter if popup.kind == Kind::Command && !popup.items.is_empty() => {
                let (start, item) = (popup.start, popup.items[popup.selected].clone());
                self.accept(Kind::Command, start, &item);
                self.popup = None;
                // Run as chosen: no argument was typed after it.
                let typed = self.editor.raw();
                if typed.ends_with(' ') {
                    self.editor.set(typed.trim_end());
                }
                return None;
            }
            KeyCode::Tab | KeyCode::Enter if !popup.items.is_empty() => {
                let (kind, start, item) =
                    (popup.kind, popup.start, popup.items[popup.selected].clone());
                self.accept(kind, start, &item);
            }
            _ => {
                // Typing goes to the editor; the popup is then refreshed
                // (or closed when the word no longer fits it).
                let _ = popup;
                self.popup = None;
                let effects = self.key_without_popup(key);
                self.refresh_popup();
                return Some(effects);
            }
        }
        Some(Vec::new())
    }

    /// Handles `key` as if no popup were open.
    fn key_without_popup(&mut self, key: Key) -> Vec<Effect> {
        match key.code {
            KeyCode::Char(c)
                if !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                self.editor.insert(c.encode_utf8(&mut [0; 4]));
                Vec::new()
            }
            KeyCode::Backspace => {
                self.editor.backspace();
                Vec::new()
            }
            _ => self.key(key, Instant::now()),
        }
    }

    /// After typing with the popup open: `@` search follows the query,
    /// other completions close.
    fn refresh_popup(&mut self) {
        self.open_files();
        // The command menu follows the command being typed (never
        // completing by itself: that is Tab's or Enter's to do).
        let (start, word) = self.editor.word_at_caret();
        if self.popup.is_none()
            && self.editor.on_first_line()
            && start == 0
            && word.starts_with('/')
            && !self.editor.raw().contains(char::is_whitespace)
        {
            let items = complete::commands(&word, &self.skills);
            if !items.is_empty() {
                self.popup = Some(Popup {
                    kind: Kind::Command,
                    items,
                    selected: 0,
                    start,
                });
            }
        }
    }
}

/// The longest prefix all `items` share.
fn common_prefix(items: &[String]) -> String {
    let Some(first) = items.first() else {
        return String::new();
    };
    let mut len = first.len();
    for item in &items[1..] {
        len = first
            .char_indices()
            .zip(item.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8())
            .min(len);
    }
    first[..len].to_owned()
}
