//! `etch context [--session PREFIX] [--json]` and `etch context dump [PATH]`
//! (the seed's `/context`, G12): what the next model request would contain,
//! layer by layer, in bytes and estimated tokens (E-CTX-21), and a plain-text
//! dump of the logical projection.
//!
//! It reads the same inputs a run would (configuration, instruction files,
//! skills, the session log) and never writes to the session. Prompt assembly,
//! projection and estimation live in their crates; this module measures and
//! prints.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use etch_model::Message;
use etch_prompt::Assembled;
use etch_prompt::estimate::tokens;
use etch_session::{LoadedSession, SummaryData, load_session, project_messages};
use serde::Serialize;

use crate::cli::ContextAction;
use crate::exit::{self, Failure};
use crate::output::print_line;
use crate::run::Place;
use crate::session_arg;
use etch_runtime::paths;
use etch_runtime::{Context, RunSettings};

/// Size of one piece of context.
#[derive(Debug, Serialize)]
struct Size {
    /// What it is.
    name: String,
    /// Bytes.
    bytes: usize,
    /// Estimated tokens.
    tokens: u64,
}

impl Size {
    /// Measures `text`.
    fn of(name: impl Into<String>, text: &str) -> Self {
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
struct Report {
    /// The session measured, if any.
    session_id: Option<String>,
    /// Events on its active branch.
    events: usize,
    /// Pinned prompt layers, in order.
    layers: Vec<Size>,
    /// Pinned SYSTEM.md files.
    system_files: Vec<PathBuf>,
    /// Pinned AGENTS.md/CLAUDE.md files.
    instruction_files: Vec<PathBuf>,
    /// Skills in the catalog.
    skills: Vec<String>,
    /// The active summary, if the session was compacted.
    summary: Option<SummaryReport>,
    /// The replayed conversation (summary message included).
    conversation: Size,
    /// Messages replayed.
    messages: usize,
    /// Tool schemas.
    tools: Size,
    /// Estimated tokens of the whole next request.
    total_tokens: u64,
    /// Threshold compaction settings.
    auto_compact: bool,
    /// Threshold in estimated tokens.
    auto_compact_threshold_tokens: u64,
    /// Recent tokens kept raw by compaction.
    keep_recent_tokens: u64,
    /// Instruction-file and skill problems.
    diagnostics: Vec<String>,
}

/// The active summary.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SummaryReport {
    /// `manual`, `auto` or `overflow`.
    trigger: String,
    /// Estimated tokens of the summary text.
    tokens: u64,
    /// First raw event kept after it.
    first_kept_event_id: Option<String>,
}

/// Runs `etch context` or `etch context dump`.
pub fn run(
    place: &Place,
    prefix: Option<&str>,
    action: Option<&ContextAction>,
    json: bool,
) -> Result<(), Failure> {
    let session = load(place, prefix)?;
    // What a run with the default settings would offer: the same context
    // the runtime builds for `etch -p`.
    let Context { tools, assembled } =
        Context::build(place, &RunSettings::default()).map_err(crate::run::open_failure)?;
    // Measured as sent (compact JSON); the dump shows them readable.
    let specs = tools.specs();
    let sent = serde_json::to_string(&specs).unwrap_or_default();
    let schemas = serde_json::to_string_pretty(&specs).unwrap_or_default();
    let projection = session.as_ref().map(project_messages).unwrap_or_default();
    let (messages, summary) = (projection.messages, projection.summary);
    match action {
        Some(ContextAction::Dump { path }) => dump(
            place,
            session.as_ref(),
            &assembled,
            summary.as_ref(),
            &messages,
            &schemas,
            path.as_deref(),
        ),
        None => {
            let report = measure(
                place,
                session.as_ref(),
                assembled,
                summary,
                &messages,
                &sent,
            );
            if json {
                let text = serde_json::to_string(&report).map_err(|e| {
                    Failure::new(
                        exit::FAILED,
                        anyhow::anyhow!("could not encode the report: {e}"),
                    )
                })?;
                print_line(&text);
            } else {
                crate::output::print_text(&render(&report));
            }
            Ok(())
        }
    }
}

/// The session to measure: the one `prefix` names, else the newest, else
/// none (a project without sessions still has a pinned prompt to show).
fn load(place: &Place, prefix: Option<&str>) -> Result<Option<LoadedSession>, Failure> {
    let picked = match session_arg::pick(&place.session_dir, prefix) {
        Ok((_, path)) => path,
        Err(failure) if prefix.is_none() && failure.code == exit::FAILED => return Ok(None),
        Err(failure) => return Err(failure),
    };
    let loaded = load_session(&picked).map_err(|e| Failure::new(exit::FAILED, e))?;
    Ok(Some(loaded))
}

/// The conversation as text, the way the summarizer sees it.
fn conversation_text(messages: &[Message]) -> String {
    etch_compact::serialize(messages)
}

/// Measures every part.
fn measure(
    place: &Place,
    session: Option<&LoadedSession>,
    assembled: Assembled,
    summary: Option<SummaryData>,
    messages: &[Message],
    schemas: &str,
) -> Report {
    let layers: Vec<Size> = assembled
        .layers
        .iter()
        .map(|l| Size::of(l.name.clone(), &l.text))
        .collect();
    let conversation = Size::of("conversation", &conversation_text(messages));
    let tools = Size::of("tools", schemas);
    let total_tokens =
        layers.iter().map(|l| l.tokens).sum::<u64>() + conversation.tokens + tools.tokens;
    let context = &place.config.context;
    Report {
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
fn render(r: &Report) -> String {
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

/// Writes the G12 dump and says where.
fn dump(
    place: &Place,
    session: Option<&LoadedSession>,
    assembled: &Assembled,
    summary: Option<&SummaryData>,
    messages: &[Message],
    schemas: &str,
    path: Option<&Path>,
) -> Result<(), Failure> {
    let mut out = String::new();
    // The AGENTS.md layer is shown file by file below, without its wrapper.
    for layer in assembled.layers.iter().filter(|l| l.name != "AGENTS.md") {
        let _ = write!(out, "=== {} ===\n{}\n\n", layer.name, layer.text);
    }
    for file in &assembled.instruction_files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| format!("(unreadable: {e})"));
        let _ = write!(out, "=== AGENTS.md: {} ===\n{text}\n\n", file.display());
    }
    if let Some(summary) = summary {
        let _ = write!(out, "=== summary ===\n{}\n\n", summary.summary);
    }
    let _ = write!(
        out,
        "=== conversation ===\n{}\n\n=== tools ===\n{}\n",
        conversation_text(messages),
        schemas
    );
    if path.is_some_and(|p| p == Path::new("-")) {
        crate::output::print_text(&out);
        return Ok(());
    }
    let target = match path {
        Some(p) if p.is_absolute() => p.to_path_buf(),
        Some(p) => place.cwd.join(p),
        None => {
            let id = session.map_or("new", LoadedSession::session_id);
            let etch = paths::project_root(&place.cwd).join(".etch");
            std::fs::create_dir_all(&etch).map_err(|e| {
                Failure::new(
                    exit::FAILED,
                    anyhow::anyhow!("cannot create {}: {e}", etch.display()),
                )
            })?;
            if let Err(err) = paths::keep_state_out_of_git(&place.cwd) {
                eprintln!("etch: warning: {err}");
            }
            etch.join(format!("context-dump-{id}.txt"))
        }
    };
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            Failure::new(
                exit::FAILED,
                anyhow::anyhow!("cannot create {}: {e}", parent.display()),
            )
        })?;
    }
    std::fs::write(&target, out).map_err(|e| {
        Failure::new(
            exit::FAILED,
            anyhow::anyhow!("cannot write {}: {e}", target.display()),
        )
    })?;
    print_line(&format!("wrote context dump to {}", target.display()));
    Ok(())
}
