//! What the pickers offer: recent sessions (`/resume`), models
//! (`/model`: the current and configured ones and those recent sessions
//! used), the prompts of the active branch (`/fork`) and the conversation
//! tree (`/tree`, indented at branch points, the active branch marked).
//! Read from the session store and log; this module must not know about
//! the terminal.

use std::collections::HashSet;

use etch_model::ContentPart;
use etch_session::event::{AssistantData, UserData};
use etch_session::{LoadedSession, SessionStore, types};

use crate::app::picker::Choice;
use crate::render::wrap::truncate;

/// Sessions listed by `/resume` and read for `/model`.
const RECENT: usize = 40;

/// Recent sessions, newest first; the current one is marked.
pub fn sessions(store: &SessionStore, current: Option<&str>) -> Vec<Choice> {
    let rows = store.list().map(|(rows, _)| rows).unwrap_or_default();
    rows.into_iter()
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
                value: row.path,
            }
        })
        .collect()
}

/// Models to switch to: the current one first, then the configured one,
/// then those recent sessions ran with (`provider/model`).
pub fn models(
    store: &SessionStore,
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
    let rows = store.list().map(|(rows, _)| rows).unwrap_or_default();
    for row in rows.iter().take(RECENT) {
        if let Some((provider, model)) = started_with(std::path::Path::new(&row.path)) {
            add(&provider, &model, "");
        }
    }
    out
}

/// The provider and model a session file started with, from its first
/// line only (a long log is not read for a picker).
fn started_with(path: &std::path::Path) -> Option<(String, String)> {
    use std::io::{BufRead, Read};
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file)
        .take(1 << 20)
        .read_line(&mut first)
        .ok()?;
    let event: serde_json::Value = serde_json::from_str(&first).ok()?;
    let data = event.get("data")?;
    let text = |key: &str| {
        data.get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    Some((text("provider")?, text("model")?))
}

/// The prompts of the active branch, newest first (values: event ids).
pub fn prompts(session: &LoadedSession) -> Vec<Choice> {
    let mut out: Vec<Choice> = session
        .active_events()
        .filter(|e| e.kind == types::MESSAGE_USER)
        .filter_map(|e| {
            let data = e.parse_data::<UserData>().ok()?;
            Some(Choice {
                label: first_line(&data.content),
                value: e.id.clone(),
            })
        })
        .collect();
    out.reverse();
    out
}

/// The conversation tree: prompts and answers in file order, indented
/// one step at each branch point, `●` on the active branch, the leaf
/// marked (values: event ids). Returns the choices and the leaf's row.
pub fn tree(session: &LoadedSession) -> (Vec<Choice>, usize) {
    let children = etch_session::tree::children(session);
    let active: HashSet<usize> = session.active.iter().copied().collect();
    let mut out = Vec::new();
    let mut selected = 0;
    // Depth-first from the root; depth grows where a node has several
    // children.
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    while let Some((i, depth)) = stack.pop() {
        let event = &session.events[i];
        let label = match event.kind.as_str() {
            types::MESSAGE_USER => event
                .parse_data::<UserData>()
                .ok()
                .map(|d| format!("you: {}", first_line(&d.content))),
            types::MESSAGE_ASSISTANT => event
                .parse_data::<AssistantData>()
                .ok()
                .map(|d| first_line(&d.content))
                .filter(|t| !t.is_empty())
                .map(|t| format!("etch: {t}")),
            _ => None,
        };
        if let Some(label) = label {
            let mark = if active.contains(&i) { "●" } else { "○" };
            if active.contains(&i) {
                // The deepest message of the active branch.
                selected = out.len();
            }
            out.push(Choice {
                label: format!("{}{mark} {label}", "  ".repeat(depth)),
                value: event.id.clone(),
            });
        }
        let kids = &children[i];
        let step = usize::from(kids.len() > 1);
        for &kid in kids.iter().rev() {
            stack.push((kid, depth + step));
        }
    }
    (out, selected)
}

/// The last `n` characters of `text`.
fn tail(text: &str, n: usize) -> &str {
    let skip = text.chars().count().saturating_sub(n);
    text.char_indices()
        .nth(skip)
        .map_or(text, |(i, _)| &text[i..])
}

/// The first non-empty line of a message's text, shortened.
fn first_line(content: &[ContentPart]) -> String {
    let text: String = content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            ContentPart::ToolCall(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    truncate(line.trim(), 100)
}
