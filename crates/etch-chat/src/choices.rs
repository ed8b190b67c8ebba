//! What the pickers offer: recent sessions (`/resume`), models
//! (`/model`: the current and configured ones and those recent sessions
//! used), the prompts of the active branch (`/fork`) and the conversation
//! tree (`/tree`, indented at branch points, the active branch marked).
//! Made from what the runtime's session service answers; this module
//! must not know about the terminal or how sessions are stored.

use std::collections::HashSet;

use etch_protocol::{ForkPoint, SessionSummary, TreeRow};

use crate::app::picker::Choice;
use crate::render::wrap::truncate;

/// Sessions listed by `/resume` and read for `/model`.
pub const RECENT: usize = 40;

/// Recent sessions (newest first, as the runtime lists them); the
/// current one is marked.
pub fn sessions(rows: &[SessionSummary], current: Option<&str>) -> Vec<Choice> {
    rows.iter()
        .take(RECENT)
        .map(|row| {
            let mark = if current == Some(row.id.as_str()) {
                "●"
            } else {
                " "
            };
            let when = row
                .created_at
                .get(..16)
                .unwrap_or(&row.created_at)
                .replace('T', " ");
            Choice {
                label: format!("{mark} {}  {when}  {}", tail(&row.id, 10), row.title),
                value: row.path.clone(),
            }
        })
        .collect()
}

/// Models to switch to: the current one first, then the configured one,
/// then those recent sessions ran with (`used`: provider, model).
pub fn models(
    used: &[(String, String)],
    current: (&str, &str),
    configured: Option<(&str, &str)>,
) -> Vec<Choice> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut add = |provider: &str, model: &str, note: &str| {
        let value = format!("{provider}/{model}");
        if !model.is_empty() && seen.insert(value.clone()) {
            out.push(Choice {
                label: format!("{value}{note}"),
                value,
            });
        }
    };
    add(current.0, current.1, "  (current)");
    if let Some((provider, model)) = configured {
        add(provider, model, "  (configured)");
    }
    for (provider, model) in used {
        add(provider, model, "");
    }
    out
}

/// The prompts of the active branch, newest first (values: event ids).
pub fn prompts(points: &[ForkPoint]) -> Vec<Choice> {
    points
        .iter()
        .rev()
        .map(|p| Choice {
            label: first_line(&p.text),
            value: p.entry_id.clone(),
        })
        .collect()
}

/// The conversation tree: prompts and answers, indented one step at each
/// branch point, `●` on the active branch (values: event ids). Returns
/// the choices and the row of the active branch's deepest message.
pub fn tree(rows: &[TreeRow]) -> (Vec<Choice>, usize) {
    let mut selected = 0;
    let choices = rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            if row.active {
                selected = i;
            }
            let mark = if row.active { "●" } else { "○" };
            let who = if row.is_user { "you" } else { "etch" };
            Choice {
                label: format!(
                    "{}{mark} {who}: {}",
                    "  ".repeat(row.depth),
                    truncate(&row.text, 100)
                ),
                value: row.id.clone(),
            }
        })
        .collect();
    (choices, selected)
}

/// The last `n` characters of `text`.
fn tail(text: &str, n: usize) -> &str {
    let skip = text.chars().count().saturating_sub(n);
    text.char_indices()
        .nth(skip)
        .map_or(text, |(i, _)| &text[i..])
}

/// The first non-empty line of `text`, shortened.
fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    truncate(line.trim(), 100)
}
