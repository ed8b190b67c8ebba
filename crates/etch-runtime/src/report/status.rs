//! The status block of a session (`etch status`, `/status`: E-CHAT-11
//! in docs/requirements.md). Counting lives in `etch_session::stats`;
//! this module only words the numbers.

use std::fmt::Write as _;
use std::path::Path;

use etch_session::SessionStats;

/// A duration in milliseconds as `1h 2m`, `3m 4s` or `5.6s`.
fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    if secs >= 3600 {
        format!("{}h {}m", secs / 3600, secs % 3600 / 60)
    } else if secs >= 60 {
        format!("{}m {}s", secs / 60, secs % 60)
    } else {
        format!("{}.{}s", secs, ms % 1000 / 100)
    }
}

/// A byte count with a binary unit.
fn bytes(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let f = n as f64;
    if n >= 1 << 20 {
        format!("{:.1} MiB", f / f64::from(1 << 20))
    } else if n >= 1 << 10 {
        format!("{:.1} KiB", f / 1024.0)
    } else {
        format!("{n} B")
    }
}

/// `n` with the singular or plural noun.
fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The plain-text status block.
pub fn status_text(s: &SessionStats, path: &Path) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "session      {}", s.session_id);
    let _ = writeln!(out, "file         {}", path.display());
    let _ = writeln!(
        out,
        "age          {} ({} to {})",
        duration(s.age_ms),
        s.started.as_deref().unwrap_or("?"),
        s.last_event.as_deref().unwrap_or("?")
    );
    let _ = writeln!(
        out,
        "events       {} · {} of messages",
        s.events,
        bytes(s.message_bytes)
    );
    let _ = writeln!(out, "user turns   {}", s.user_turns);
    let _ = writeln!(
        out,
        "model calls  {} ({}, {})",
        s.model_calls,
        count(
            usize::try_from(s.model_requests).unwrap_or(usize::MAX),
            "request",
            "requests"
        ),
        count(s.model_errors, "error", "errors")
    );
    let _ = writeln!(
        out,
        "tool calls   {} in {} ({})",
        s.tool_calls,
        count(s.tool_batches, "batch", "batches"),
        count(s.tool_errors, "error", "errors")
    );
    let compactions = if s.compactions.is_empty() {
        "none".to_owned()
    } else {
        s.compactions
            .iter()
            .map(|(trigger, n)| format!("{trigger} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(out, "compactions  {compactions}");
    let hook_runs: usize = s.hook_runs.values().sum();
    if hook_runs > 0 {
        let outcomes: Vec<String> = s
            .hook_runs
            .iter()
            .map(|(outcome, n)| format!("{outcome} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "hooks        {} ({})",
            count(hook_runs, "run", "runs"),
            outcomes.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "time         model ~{} · tools ~{} (from gaps between events)",
        duration(s.model_wait_ms),
        duration(s.tool_wait_ms)
    );
    let u = &s.usage;
    let _ = writeln!(
        out,
        "tokens       input {} (cached {}) · output {} (reasoning {}) · total {}",
        u.input_tokens,
        u.cached_input_tokens,
        u.output_tokens,
        u.reasoning_output_tokens,
        u.total_tokens
    );
    // What the provider's prompt cache served: shown once it served any
    // (a stable prompt prefix is what makes it grow).
    if u.cached_input_tokens > 0 {
        let last = s.last_usage.as_ref().map_or_else(String::new, |l| {
            format!(
                "; last request {} of {}",
                l.cached_input_tokens, l.input_tokens
            )
        });
        let _ = writeln!(
            out,
            "cache reads  {} of {} input tokens ({}%){last}",
            u.cached_input_tokens,
            u.input_tokens,
            u.cached_input_tokens * 100 / u.input_tokens.max(1)
        );
    }
    let t = &s.transport;
    if !t.passes.is_empty() {
        let passes: Vec<String> = t
            .passes
            .iter()
            .map(|(name, n)| format!("{name} ×{n}"))
            .collect();
        let calls = u64::try_from(s.model_calls.max(1)).unwrap_or(1);
        let _ = writeln!(
            out,
            "transport    {} · sent {} · received {} · avg headers {} ms · avg first event {} ms · avg pass {} ms",
            passes.join(", "),
            bytes(t.request_bytes),
            bytes(t.response_bytes),
            t.headers_ms / calls,
            t.first_event_ms / calls,
            t.duration_ms / calls
        );
        if t.ws_opens + t.ws_reuses > 0 {
            let _ = writeln!(
                out,
                "websocket    {} opened · {} reused · continuation {} attempted, {} fell back",
                t.ws_opens, t.ws_reuses, t.continuation_attempts, t.continuation_fallbacks
            );
        }
        if let Some(reason) = &t.last_fallback {
            let _ = writeln!(out, "last fallback {reason}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Durations and sizes read naturally.
    #[test]
    fn units() {
        assert_eq!(duration(5_600), "5.6s");
        assert_eq!(duration(185_000), "3m 5s");
        assert_eq!(duration(7_500_000), "2h 5m");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(2048), "2.0 KiB");
        assert_eq!(count(1, "batch", "batches"), "1 batch");
        assert_eq!(count(2, "batch", "batches"), "2 batches");
    }

    /// Cache reads are reported once the provider served any, with the
    /// last request's share; never otherwise.
    #[test]
    fn cache_reads_are_reported_when_there_are_any() {
        let mut stats = SessionStats::default();
        stats.usage.input_tokens = 2000;
        let text = status_text(&stats, Path::new("/s.jsonl"));
        assert!(!text.contains("cache reads"), "{text}");
        stats.usage.cached_input_tokens = 1500;
        stats.last_usage = Some(etch_model::Usage {
            input_tokens: 1000,
            cached_input_tokens: 900,
            ..etch_model::Usage::default()
        });
        let text = status_text(&stats, Path::new("/s.jsonl"));
        assert!(
            text.contains(
                "cache reads  1500 of 2000 input tokens (75%); last request 900 of 1000\n"
            ),
            "{text}"
        );
    }
}
