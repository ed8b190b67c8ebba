//! What the next model request would contain, layer by layer, in bytes
//! and estimated tokens (E-CTX-21, E-CHAT-09 in docs/requirements.md),
//! and the plain-text dump of the logical projection (G12, E-CHAT-10):
//! `etch context` and the chat's `/context` show the same. It reads what
//! a run would (the context the runtime builds, the session log) and
//! never writes to the session.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use etch_model::Message;
use etch_prompt::estimate::tokens;
use etch_session::{LoadedSession, project_messages};
use serde::Serialize;

use crate::paths;
use crate::{Context, Place};

/// Size of one piece of context.
#[derive(Debug, Serialize)]
pub struct Size {
    /// What it is.
    pub name: String,
    /// Bytes.
    pub bytes: usize,
    /// Estimated tokens.
    pub tokens: u64,
}

impl Size {
    /// Measures `text`.
    pub fn of(name: impl Into<String>, text: &str) -> Self {
        Self {
            name: name.into(),
            bytes: text.len(),
            tokens: tokens(text),
        }
    }
}

/// Everything `etch context` reports.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextReport {
    /// The session measured, if any.
    pub session_id: Option<String>,
    /// Events on its active branch.
    pub events: usize,
    /// Pinned prompt layers, in order.
    pub layers: Vec<Size>,
    /// Pinned SYSTEM.md files.
    pub system_files: Vec<PathBuf>,
    /// Pinned AGENTS.md/CLAUDE.md files.
    pub instruction_files: Vec<PathBuf>,
    /// Skills in the catalog.
    pub skills: Vec<String>,
    /// The active summary, if the session was compacted.
    pub summary: Option<SummaryReport>,
    /// The replayed conversation (summary message included).
    pub conversation: Size,
    /// Messages replayed.
    pub messages: usize,
    /// Tool schemas.
    pub tools: Size,
    /// Estimated tokens of the whole next request.
    pub total_tokens: u64,
    /// Threshold compaction settings.
    pub auto_compact: bool,
    /// Threshold in estimated tokens.
    pub auto_compact_threshold_tokens: u64,
    /// Recent tokens kept raw by compaction.
    pub keep_recent_tokens: u64,
    /// Instruction-file and skill problems.
    pub diagnostics: Vec<String>,
}

/// The active summary.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryReport {
    /// `manual`, `auto` or `overflow`.
    pub trigger: String,
    /// Estimated tokens of the summary text.
    pub tokens: u64,
    /// First raw event kept after it.
    pub first_kept_event_id: Option<String>,
}

/// The conversation as text, the way the summarizer sees it.
pub fn conversation_text(messages: &[Message]) -> String {
    etch_compact::serialize(messages)
}

/// Measures every part of what the next request would hold: `context`
/// (the pinned layers and tools) with the projection of `session`.
pub fn measure(place: &Place, session: Option<&LoadedSession>, context: &Context) -> ContextReport {
    let assembled = context.assembled.clone();
    let schemas = serde_json::to_string(&context.tools.specs()).unwrap_or_default();
    let projection = session.map(project_messages).unwrap_or_default();
    let (messages, summary) = (&projection.messages, projection.summary);
    let layers: Vec<Size> = assembled
        .layers
        .iter()
        .map(|l| Size::of(l.name.clone(), &l.text))
        .collect();
    let conversation = Size::of("conversation", &conversation_text(messages));
    let tools = Size::of("tools", &schemas);
    let total_tokens =
        layers.iter().map(|l| l.tokens).sum::<u64>() + conversation.tokens + tools.tokens;
    let context = &place.config.context;
    ContextReport {
        session_id: session.map(|s| s.session_id().to_owned()),
        events: session.map_or(0, |s| s.active_events().count()),
        layers,
        system_files: assembled.system_files,
        instruction_files: assembled.instruction_files,
        skills: assembled.skills.into_iter().map(|s| s.name).collect(),
        summary: summary.map(|s| SummaryReport {
            tokens: tokens(&s.summary),
            trigger: s.trigger,
            first_kept_event_id: s.first_kept_event_id,
        }),
        conversation,
        messages: messages.len(),
        tools,
        total_tokens,
        auto_compact: context.auto_compact,
        auto_compact_threshold_tokens: context.auto_compact_threshold_tokens,
        keep_recent_tokens: context.keep_recent_tokens,
        diagnostics: assembled.diagnostics,
    }
}

/// The plain-text report.
pub fn render(r: &ContextReport) -> String {
    let mut out = String::new();
    match &r.session_id {
        Some(id) => {
            let _ = writeln!(out, "session        {id} ({} events)", r.events);
        }
        None => {
            let _ = writeln!(out, "session        none yet (pinned context only)");
        }
    }
    let _ = writeln!(out, "prompt layers");
    for layer in &r.layers {
        let _ = writeln!(
            out,
            "  {:<40} {:>8} B  ~{} tokens",
            layer.name, layer.bytes, layer.tokens
        );
    }
    let files = |paths: &[PathBuf]| -> String {
        if paths.is_empty() {
            "none".to_owned()
        } else {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let _ = writeln!(out, "SYSTEM.md      {}", files(&r.system_files));
    let _ = writeln!(out, "AGENTS.md      {}", files(&r.instruction_files));
    let _ = writeln!(
        out,
        "skills         {}",
        if r.skills.is_empty() {
            "none".to_owned()
        } else {
            format!("{}: {}", r.skills.len(), r.skills.join(", "))
        }
    );
    match &r.summary {
        Some(s) => {
            let _ = writeln!(
                out,
                "summary        active ({}), ~{} tokens, raw replay from {}",
                s.trigger,
                s.tokens,
                s.first_kept_event_id.as_deref().unwrap_or("the summary")
            );
        }
        None => {
            let _ = writeln!(out, "summary        none");
        }
    }
    let _ = writeln!(
        out,
        "conversation   {} messages, {} B, ~{} tokens",
        r.messages, r.conversation.bytes, r.conversation.tokens
    );
    let _ = writeln!(
        out,
        "tool schemas   {} B, ~{} tokens",
        r.tools.bytes, r.tools.tokens
    );
    let _ = writeln!(
        out,
        "total          ~{} estimated tokens for the next request",
        r.total_tokens
    );
    let _ = writeln!(
        out,
        "compaction     auto {} (threshold {} tokens, keep {} recent tokens); overflow recovery on",
        if r.auto_compact { "on" } else { "off" },
        r.auto_compact_threshold_tokens,
        r.keep_recent_tokens
    );
    for diagnostic in &r.diagnostics {
        let _ = writeln!(out, "warning        {diagnostic}");
    }
    out
}

/// The G12 dump of what the next request would hold (E-CHAT-10): the
/// prompt layers, each AGENTS.md file, the active summary, the
/// conversation as the summarizer sees it and the tool schemas, taken
/// before any provider shaping.
pub fn dump(session: Option<&LoadedSession>, context: &Context) -> String {
    let assembled = &context.assembled;
    let schemas = serde_json::to_string_pretty(&context.tools.specs()).unwrap_or_default();
    let projection = session.map(project_messages).unwrap_or_default();
    let mut out = String::new();
    // The AGENTS.md layer is shown file by file below, without its wrapper.
    for layer in assembled.layers.iter().filter(|l| l.name != "AGENTS.md") {
        let _ = write!(out, "=== {} ===\n{}\n\n", layer.name, layer.text);
    }
    for file in &assembled.instruction_files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| format!("(unreadable: {e})"));
        let _ = write!(out, "=== AGENTS.md: {} ===\n{text}\n\n", file.display());
    }
    if let Some(summary) = &projection.summary {
        let _ = write!(out, "=== summary ===\n{}\n\n", summary.summary);
    }
    let _ = write!(
        out,
        "=== conversation ===\n{}\n\n=== tools ===\n{}\n",
        conversation_text(&projection.messages),
        schemas
    );
    out
}

/// Where a dump goes: `path` (relative to the cwd), else
/// `.etch/context-dump-<session-id>.txt` in the project root (G12).
/// Creates the directories; keeps `.etch/` state out of git.
pub fn dump_path(
    place: &Place,
    session_id: Option<&str>,
    path: Option<&Path>,
) -> Result<PathBuf, String> {
    let target = match path {
        Some(p) if p.is_absolute() => p.to_path_buf(),
        Some(p) => place.cwd.join(p),
        None => {
            let etch = paths::project_root(&place.cwd).join(".etch");
            std::fs::create_dir_all(&etch)
                .map_err(|e| format!("cannot create {}: {e}", etch.display()))?;
            // Best effort: a failure only means the dump is not ignored.
            let _ = paths::keep_state_out_of_git(&place.cwd);
            etch.join(format!("context-dump-{}.txt", session_id.unwrap_or("new")))
        }
    };
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    Ok(target)
}

/// The session file's log, when there is a session.
fn load_file(file: Option<&Path>) -> Result<Option<LoadedSession>, String> {
    file.map(|file| {
        etch_session::load_session(file).map_err(|e| format!("cannot read {}: {e}", file.display()))
    })
    .transpose()
}

/// The `/context` report for the session in `file` (none before the
/// first prompt), rendered.
pub fn report_for(place: &Place, file: Option<&Path>, context: &Context) -> Result<String, String> {
    let loaded = load_file(file)?;
    Ok(render(&measure(place, loaded.as_ref(), context)))
}

/// Writes the `/context dump` of the session `id` in `file` (none before
/// the first prompt) to `path` (see [`dump_path`]); returns where.
pub fn dump_for(
    place: &Place,
    session: Option<(&str, &Path)>,
    context: &Context,
    path: Option<&Path>,
) -> Result<PathBuf, String> {
    let loaded = load_file(session.map(|(_, file)| file))?;
    let text = dump(loaded.as_ref(), context);
    let target = dump_path(place, session.map(|(id, _)| id), path)?;
    std::fs::write(&target, text).map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    Ok(target)
}
