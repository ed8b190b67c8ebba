//! Pickers: a list to choose from under the editor (`/resume`, `/model`,
//! `/fork`, `/tree`), filtered by what is typed, moved with Up and Down,
//! chosen with Enter (Tab too, for `/tree`: navigate with a summary of
//! the branch left behind), closed with Esc. What a choice does is the
//! runner's business ([`Effect::Picked`]), except stopping a subagent
//! (Ctrl-T), which is a host command.

use crossterm::event::{KeyCode, KeyModifiers};
use ratatui_core::text::{Line, Span};

use super::{App, Effect, Key, LiveCall};
use crate::render::theme;
use crate::render::wrap::truncate;
use crate::term::sanitize;

/// Rows of choices shown at once.
const ROWS: usize = 10;

/// What a picker chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// A session to resume (values are session files).
    Resume,
    /// A model (values are `provider/model`; typed text is taken as a
    /// model name when nothing matches).
    Model,
    /// A prompt to fork before (values are event ids).
    Fork,
    /// A point of the session tree (values are event ids).
    Tree,
    /// A running subagent to stop (values are `task` call ids).
    Subagent,
    /// A background process to stop (values are process ids).
    Process,
}

/// One choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What is shown.
    pub label: String,
    /// What is handed back.
    pub value: String,
}

/// An open picker.
#[derive(Debug, Clone)]
pub struct Picker {
    /// What it chooses.
    pub pick: Pick,
    /// Its title row.
    pub title: String,
    /// All choices.
    pub choices: Vec<Choice>,
    /// Typed filter.
    pub filter: String,
    /// Selected row among the filtered choices.
    pub selected: usize,
    /// A line under the title about choices still coming (the server's
    /// models) or why they did not.
    pub status: Option<String>,
}

impl Picker {
    /// The choices the filter lets through.
    fn visible(&self) -> Vec<&Choice> {
        let filter = self.filter.to_lowercase();
        self.choices
            .iter()
            .filter(|c| filter.is_empty() || c.label.to_lowercase().contains(&filter))
            .collect()
    }

    /// The rows to draw, at most `max` (title, filter, choices around the
    /// selection).
    pub fn render(&self, width: usize, max: usize) -> Vec<Line<'static>> {
        let visible = self.visible();
        let mut rows = vec![Line::from(Span::styled(
            truncate(&self.title, width),
            theme::strong(),
        ))];
        if let Some(status) = &self.status {
            // It may quote a server's answer.
            rows.push(Line::from(Span::styled(
                truncate(&sanitize(status).replace('\n', " "), width),
                theme::muted(),
            )));
        }
        if !self.filter.is_empty() {
            rows.push(Line::from(Span::styled(
                truncate(&format!("filter: {}", self.filter), width),
                theme::muted(),
            )));
        }
        let room = max.saturating_sub(rows.len()).clamp(1, ROWS);
        let first = self.selected.saturating_sub(room - 1);
        for (i, choice) in visible.iter().enumerate().skip(first).take(room) {
            let style = if i == self.selected {
                theme::caret()
            } else {
                ratatui_core::style::Style::new()
            };
            rows.push(Line::from(Span::styled(
                // Titles and prompts come from session files, which a
                // cloned repository may ship: nothing in them may act on
                // the terminal, nor break a row in two.
                truncate(
                    &format!("  {}", sanitize(&choice.label).replace('\n', " ")),
                    width,
                ),
                style,
            )));
        }
        if visible.is_empty() {
            let text = if self.pick == Pick::Model && !self.filter.is_empty() {
                format!("  Enter: use the model \"{}\"", self.filter)
            } else {
                "  (nothing matches)".to_owned()
            };
            rows.push(Line::from(Span::styled(text, theme::muted())));
        }
        rows
    }
}

impl App {
    /// Ctrl-T: the running subagents (the `task` calls of the run, each
    /// with what it is doing), to stop one while the others go on.
    pub(crate) fn open_subagents(&mut self) -> Vec<Effect> {
        let choices: Vec<Choice> = self
            .run
            .as_ref()
            .map(|run| {
                run.tools
                    .iter()
                    .filter(|call| call.is_running_child())
                    .map(|LiveCall { view, partial, .. }| Choice {
                        label: if partial.is_empty() {
                            format!(
                                "{}: {}",
                                view.args["profile"].as_str().unwrap_or("?"),
                                view.args["task"].as_str().unwrap_or_default()
                            )
                        } else {
                            partial.clone()
                        },
                        value: view.id.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        if choices.is_empty() {
            self.notice(
                super::Level::Info,
                "no subagent is running (Ctrl-T lists them while they run, to stop one)",
            );
        } else {
            self.open_picker(
                Pick::Subagent,
                "stop which subagent? Enter stops it, the others go on; Esc keeps them all",
                choices,
                0,
            );
        }
        Vec::new()
    }

    /// `/ps`: the background processes running, to stop one (the list
    /// comes from the host's events; `list_processes` over RPC has the
    /// ended ones too).
    pub(crate) fn open_processes(&mut self) {
        let now = std::time::Instant::now();
        let choices: Vec<Choice> = self
            .processes
            .iter()
            .map(|p| Choice {
                label: format!(
                    "{}  {}s  {}",
                    p.id,
                    now.saturating_duration_since(p.started).as_secs(),
                    crate::term::sanitize(&p.command)
                ),
                value: p.id.clone(),
            })
            .collect();
        if choices.is_empty() {
            self.notice(
                super::Level::Info,
                "no background process is running (the model starts them with bash background=true)",
            );
        } else {
            self.open_picker(
                Pick::Process,
                "stop which background process? Enter stops it and its children (TERM, then KILL after 2 s); Esc keeps them",
                choices,
                0,
            );
        }
    }

    /// Opens a picker.
    pub fn open_picker(
        &mut self,
        pick: Pick,
        title: impl Into<String>,
        choices: Vec<Choice>,
        selected: usize,
    ) {
        self.popup = None;
        self.picker = Some(Picker {
            pick,
            title: title.into(),
            selected: selected.min(choices.len().saturating_sub(1)),
            choices,
            filter: String::new(),
            status: None,
        });
    }

    /// Says under the open `pick` picker's title what is still coming.
    pub fn set_picker_status(&mut self, pick: Pick, status: impl Into<String>) {
        if let Some(picker) = self.picker.as_mut().filter(|p| p.pick == pick) {
            picker.status = Some(status.into());
        }
    }

    /// The models `provider`'s server offers (or why it could not say),
    /// added to an open `/model` picker after the ones known already.
    pub fn offer_models(&mut self, provider: &str, offered: Result<Vec<String>, String>) {
        let Some(picker) = self.picker.as_mut().filter(|p| p.pick == Pick::Model) else {
            return;
        };
        match offered {
            Ok(names) => {
                picker.status = None;
                for name in names {
                    let value = format!("{provider}/{name}");
                    if !picker.choices.iter().any(|c| c.value == value) {
                        picker.choices.push(Choice {
                            label: format!("{value}  (offered by the server)"),
                            value,
                        });
                    }
                }
            }
            Err(why) => {
                picker.status = Some(format!("the server's models are not listed: {why}"));
            }
        }
    }

    /// A key while a picker is open.
    pub(crate) fn picker_key(&mut self, key: Key) -> Vec<Effect> {
        let Some(picker) = &mut self.picker else {
            return Vec::new();
        };
        let count = picker.visible().len();
        match key.code {
            KeyCode::Esc => self.picker = None,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.picker = None;
            }
            KeyCode::Up => {
                picker.selected = picker
                    .selected
                    .checked_sub(1)
                    .unwrap_or(count.saturating_sub(1));
            }
            KeyCode::Down => {
                picker.selected = if count == 0 {
                    0
                } else {
                    (picker.selected + 1) % count
                }
            }
            KeyCode::PageUp => picker.selected = picker.selected.saturating_sub(ROWS),
            KeyCode::PageDown => {
                picker.selected = (picker.selected + ROWS).min(count.saturating_sub(1));
            }
            KeyCode::Backspace => {
                picker.filter.pop();
                picker.selected = 0;
            }
            KeyCode::Enter | KeyCode::Tab => {
                let alternate = key.code == KeyCode::Tab;
                let value = match picker.visible().get(picker.selected) {
                    Some(choice) => Some(choice.value.clone()),
                    None if picker.pick == Pick::Model && !picker.filter.is_empty() => {
                        Some(picker.filter.clone())
                    }
                    None => None,
                };
                let pick = picker.pick;
                if alternate && pick != Pick::Tree {
                    return Vec::new();
                }
                self.picker = None;
                if pick == Pick::Process
                    && let Some(value) = value
                {
                    return vec![self.host_command(
                        etch_protocol::CommandBody::KillProcess {
                            process_id: value,
                            signal: None,
                        },
                        "stop the process",
                    )];
                }
                if pick == Pick::Subagent
                    && let Some(value) = value
                {
                    return vec![self.host_command(
                        etch_protocol::CommandBody::AbortSubagent {
                            tool_call_id: value,
                        },
                        "stop the subagent",
                    )];
                }
                if let Some(value) = value {
                    return vec![Effect::Picked {
                        pick,
                        value,
                        alternate,
                    }];
                }
            }
            KeyCode::Char(c)
                if !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                picker.filter.push(c);
                picker.selected = 0;
            }
            _ => {}
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `/tree` or `/resume` row whose label came from a session file
    /// (a prompt, a title) holding escape sequences and line breaks is
    /// drawn as one inert row.
    #[test]
    fn rows_from_session_files_are_inert() {
        let picker = Picker {
            pick: Pick::Tree,
            title: "tree".into(),
            choices: vec![Choice {
                label: "user: hi\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\nsecond".into(),
                value: "e1".into(),
            }],
            filter: String::new(),
            selected: 0,
            status: None,
        };
        let rows = picker.render(80, 10);
        let text: String = rows
            .iter()
            .flat_map(|line| line.spans.iter().map(|span| span.content.to_string()))
            .collect();
        assert!(!text.chars().any(char::is_control), "{text:?}");
        assert!(text.contains("user: hi second"), "{text:?}");
    }
}
