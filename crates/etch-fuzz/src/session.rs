//! `session_log`: arbitrary bytes as a session log, loaded, projected
//! at its leaf and at an entry the input picks, counted; and a log
//! written back from what loaded must load the same (the loader is a
//! fixpoint: nothing it keeps is something it would drop).

use std::path::Path;

use etch_session::{
    LoadedSession, dangling_tool_calls, parse_session, project_messages, project_messages_at,
    session_stats,
};

/// Checks one input.
pub fn check(data: &[u8]) {
    let path = Path::new("fuzz.jsonl");
    let Ok(loaded) = parse_session(path, data) else {
        return;
    };
    let at_leaf = project_messages(&loaded);
    if let Some(leaf) = loaded.leaf() {
        let again = project_messages_at(&loaded, leaf);
        assert!(again.is_some(), "the leaf {leaf} cannot be projected");
    }
    if !loaded.events.is_empty() {
        let pick = data.iter().fold(0usize, |a, &b| {
            a.wrapping_mul(31).wrapping_add(usize::from(b))
        });
        let entry = &loaded.events[pick % loaded.events.len()];
        let _ = project_messages_at(&loaded, &entry.id);
    }
    let _ = dangling_tool_calls(&loaded);
    let _ = session_stats(&loaded);
    drop(at_leaf);

    let written = write_back(&loaded);
    let reloaded = match parse_session(path, written.as_bytes()) {
        Ok(reloaded) => reloaded,
        Err(e) => panic!("a log written from a loaded one does not load: {e}\n{written}"),
    };
    assert_eq!(
        lines(&reloaded),
        lines(&loaded),
        "the events differ after writing back"
    );
    assert_eq!(reloaded.active, loaded.active, "the active branch differs");
}

/// The loaded events as log lines.
fn write_back(loaded: &LoadedSession) -> String {
    let mut out = String::new();
    for line in lines(loaded) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Each event as the line it would be written as.
fn lines(loaded: &LoadedSession) -> Vec<String> {
    let text = |s: &str| serde_json::to_string(s).unwrap_or_default();
    loaded
        .events
        .iter()
        .map(|e| {
            format!(
                r#"{{"type":{},"id":{},"parentId":{},"time":{},"data":{}}}"#,
                text(&e.kind),
                text(&e.id),
                e.parent_id
                    .as_deref()
                    .map_or_else(|| "null".to_owned(), text),
                text(&e.time),
                e.data.get()
            )
        })
        .collect()
}
