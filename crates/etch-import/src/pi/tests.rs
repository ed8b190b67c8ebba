//! Tests of importing Pi session files: hand-written files of each
//! version and shape, imported into a temporary store and read back
//! with etch's own loader and projection.

#![allow(clippy::unwrap_used, clippy::panic)]

use etch_model::{ContentPart, Message};
use serde_json::{Value, json};

use super::*;

/// A store in a temporary directory.
fn store(dir: &Path) -> SessionStore {
    SessionStore::new(dir.join("sessions"))
}

/// Writes `lines` as a Pi session file.
fn pi_file(dir: &Path, name: &str, lines: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// A v3 entry of `kind` with `id`, `parent` and `fields`.
fn entry(kind: &str, id: &str, parent: Option<&str>, fields: &Value) -> Value {
    let mut value = json!({"type": kind, "id": id, "parentId": parent, "timestamp": "2026-01-02T03:04:05.000Z"});
    for (k, v) in fields.as_object().unwrap() {
        value[k] = v.clone();
    }
    value
}

/// A v3 header.
fn header(id: &str) -> Value {
    json!({"type": "session", "version": 3, "id": id, "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/work/project"})
}

/// Imports `path` with default options.
fn import(path: &Path, store: &SessionStore) -> Outcome {
    let already = imported(store).unwrap();
    import_file(path, store, &already, &Options::default()).unwrap()
}

/// The loaded etch session of `outcome`.
fn loaded(store: &SessionStore, outcome: &Outcome) -> etch_session::LoadedSession {
    let id = outcome.session_id.as_deref().unwrap();
    let (rows, _) = store.list().unwrap();
    let row = rows.iter().find(|r| r.id == id).unwrap();
    etch_session::load_session(&store.session_file(row)).unwrap()
}

/// A small PNG as Pi keeps it: base64.
fn png_base64() -> (Vec<u8>, String) {
    let bytes = etch_image::sample(8, 6, etch_model::MediaType::Png).unwrap();
    let encoded = etch_model::Image::new(bytes.clone(), etch_model::MediaType::Png, 8, 6)
        .base64()
        .unwrap();
    (bytes, encoded)
}

/// A linear session: every kind of entry becomes what the model saw in
/// Pi, ids kept; the image moves to the assets; the name is the index
/// title; the header names the Pi file.
#[test]
fn a_linear_session_is_imported_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, encoded) = png_base64();
    let lines = vec![
        header("pi-1"),
        entry(
            "model_change",
            "a0",
            None,
            &json!({"provider": "anthropic", "modelId": "claude-x"}),
        ),
        entry(
            "thinking_level_change",
            "a1",
            Some("a0"),
            &json!({"thinkingLevel": "high"}),
        ),
        entry(
            "message",
            "a2",
            Some("a1"),
            &json!({"message": {"role": "user", "content": [
            {"type": "text", "text": "what is in shot.png?"}]}}),
        ),
        entry(
            "message",
            "a3",
            Some("a2"),
            &json!({"message": {"role": "assistant",
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-x",
            "stopReason": "toolUse",
            "usage": {"input": 10, "output": 5, "cacheRead": 90, "cacheWrite": 0, "totalTokens": 105},
            "content": [
                {"type": "thinking", "thinking": "Look first.", "thinkingSignature": "sig=="},
                {"type": "text", "text": "Reading."},
                {"type": "toolCall", "id": "call_1|fc_9", "name": "read", "arguments": {"path": "shot.png"}}
            ]}}),
        ),
        entry(
            "message",
            "a4",
            Some("a3"),
            &json!({"message": {"role": "toolResult",
            "toolCallId": "call_1|fc_9", "toolName": "read", "isError": false,
            "content": [{"type": "text", "text": "Read image file [image/png]"},
                        {"type": "image", "data": encoded, "mimeType": "image/png"}]}}),
        ),
        entry(
            "message",
            "a5",
            Some("a4"),
            &json!({"message": {"role": "bashExecution",
            "command": "ls", "output": "a.txt", "exitCode": 2, "cancelled": false, "truncated": false}}),
        ),
        entry(
            "custom_message",
            "a6",
            Some("a5"),
            &json!({"customType": "note", "content": "from an extension", "display": true}),
        ),
        entry(
            "label",
            "a7",
            Some("a6"),
            &json!({"targetId": "a2", "label": "start"}),
        ),
        entry(
            "session_info",
            "a8",
            Some("a7"),
            &json!({"name": "shot review"}),
        ),
        entry(
            "custom",
            "a9",
            Some("a8"),
            &json!({"customType": "ext-state", "data": {"k": 1}}),
        ),
    ];
    let path = pi_file(dir.path(), "pi.jsonl", &lines);
    let before = std::fs::read(&path).unwrap();
    let store = store(dir.path());
    let outcome = import(&path, &store);
    assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
    assert_eq!(outcome.entries(), 10);
    assert_eq!(outcome.images, 1);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "Pi's file is untouched"
    );
    let session = loaded(&store, &outcome);
    assert!(session.warnings.is_empty(), "{:?}", session.warnings);
    let from = session.header.imported_from.clone().unwrap();
    assert_eq!(
        (from.agent.as_str(), from.session_id.as_str(), from.version),
        ("pi", "pi-1", 3)
    );
    assert_eq!(session.header.cwd, "/work/project");
    // Pi's ids are etch's; the leaf is the last entry.
    assert_eq!(session.leaf(), Some("a9"));
    let kinds: Vec<(&str, &str)> = session
        .active_events()
        .map(|e| (e.id.as_str(), e.kind.as_str()))
        .filter(|(id, _)| id.len() == 2)
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("a0", "model.change"),
            ("a1", "thinking_level.change"),
            ("a2", "message.user"),
            ("a3", "message.assistant"),
            ("a4", "message.tool"),
            ("a5", "message.user"),
            ("a6", "message.user"),
            ("a7", "session.label"),
            ("a8", "pi.session_info"),
            ("a9", "pi.custom"),
        ]
    );
    let state = etch_session::model_state(&session);
    assert_eq!(
        (state.provider.as_str(), state.model.as_str()),
        ("anthropic", "claude-x")
    );
    assert_eq!(state.thinking_level.as_deref(), Some("high"));
    let all = etch_session::project_messages(&session).messages;
    let replays: Vec<&etch_model::ProviderItem> = all
        .iter()
        .filter_map(|m| match m {
            Message::ProviderItem(item) => Some(item),
            _ => None,
        })
        .collect();
    // The thinking block replays to Anthropic with its signature, to the
    // model that made it only.
    assert_eq!(replays.len(), 1);
    assert_eq!(replays[0].item["signature"], "sig==");
    assert_eq!(replays[0].model.as_deref(), Some("claude-x"));
    assert!(replays[0].replays_to("anthropic", "messages", "claude-x"));
    assert!(!replays[0].replays_to("anthropic", "messages", "claude-y"));
    let messages: Vec<Message> = all
        .iter()
        .filter(|m| !matches!(m, Message::ProviderItem(_)))
        .cloned()
        .collect();
    let texts: Vec<String> = messages
        .iter()
        .map(|m| etch_model::content::display_text(m.parts()))
        .collect();
    assert_eq!(texts[0], "what is in shot.png?");
    assert_eq!(texts[1], "Reading.");
    assert_eq!(
        texts[2],
        "Read image file [image/png]\n[image image/png 8x6]"
    );
    assert_eq!(
        texts[3],
        "Ran `ls`\n```\na.txt\n```\n\nCommand exited with code 2"
    );
    assert_eq!(texts[4], "from an extension");
    // The call id lost Pi's item half, in the call and its result.
    let Message::Assistant { content } = &messages[1] else {
        panic!("{messages:?}")
    };
    let ContentPart::ToolCall(call) = &content[1] else {
        panic!("{content:?}")
    };
    assert_eq!(call.id, "call_1");
    let Message::Tool {
        tool_call_id,
        content,
        ..
    } = &messages[2]
    else {
        panic!("{messages:?}")
    };
    assert_eq!(tool_call_id, "call_1");
    let ContentPart::Image(image) = &content[1] else {
        panic!("{content:?}")
    };
    assert_eq!(
        image.data(),
        Some(bytes.as_slice()),
        "the bytes load from the assets"
    );
    let (rows, _) = store.list().unwrap();
    assert_eq!(rows[0].title, "shot review");
}

/// A tree: the branch Pi was on last is the active one; a branch
/// summary and its origin survive; a compaction keeps its first kept
/// entry, so the context is the summary and what followed.
#[test]
fn trees_and_compactions_keep_their_shape() {
    let dir = tempfile::tempdir().unwrap();
    let user = |id: &str, parent: Option<&str>, text: &str| {
        entry(
            "message",
            id,
            parent,
            &json!({"message": {"role": "user", "content": text}}),
        )
    };
    let answer = |id: &str, parent: &str, text: &str| {
        entry(
            "message",
            id,
            Some(parent),
            &json!({"message": {"role": "assistant", "provider": "openai",
            "api": "openai-responses", "model": "m", "stopReason": "stop",
            "content": [{"type": "text", "text": text}]}}),
        )
    };
    let lines = vec![
        header("pi-tree"),
        user("u1", None, "first"),
        answer("r1", "u1", "one"),
        user("u2", Some("r1"), "abandoned"),
        answer("r2", "u2", "two"),
        entry(
            "branch_summary",
            "b1",
            Some("r1"),
            &json!({"fromId": "r2", "summary": "We tried two."}),
        ),
        user("u3", Some("b1"), "second"),
        answer("r3", "u3", "three"),
        entry(
            "compaction",
            "c1",
            Some("r3"),
            &json!({"summary": "All so far.", "firstKeptEntryId": "u3", "tokensBefore": 500}),
        ),
        user("u4", Some("c1"), "after"),
    ];
    let path = pi_file(dir.path(), "tree.jsonl", &lines);
    let store = store(dir.path());
    let outcome = import(&path, &store);
    assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
    let session = loaded(&store, &outcome);
    let messages = etch_session::project_messages(&session).messages;
    let texts: Vec<String> = messages
        .iter()
        .map(|m| etch_model::content::joined_text(m.parts()))
        .collect();
    assert_eq!(
        texts,
        vec![
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\nAll so far.\n</summary>".to_owned(),
            "second".to_owned(),
            "three".to_owned(),
            "after".to_owned(),
        ]
    );
    let at_r2 = etch_session::project_messages_at(&session, "r2")
        .unwrap()
        .messages;
    assert_eq!(
        at_r2.len(),
        4,
        "the abandoned branch is still there: {at_r2:?}"
    );
    let branch = session.events.iter().find(|e| e.id == "b1").unwrap();
    assert_eq!(branch.kind, "context.branch_summary");
}

/// A v1 file (no ids, a compaction by index, `hookMessage`) is migrated
/// as Pi migrates it.
#[test]
fn version_1_files_are_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let old = |fields: Value| {
        let mut v = fields;
        v["timestamp"] = json!("2025-05-06T07:08:09.000Z");
        v
    };
    let lines = vec![
        json!({"type": "session", "id": "pi-old", "timestamp": "2025-05-06T07:08:09.000Z", "cwd": "/old"}),
        old(json!({"type": "message", "message": {"role": "user", "content": "dropped"}})),
        old(json!({"type": "message", "message": {"role": "user", "content": "kept"}})),
        old(
            json!({"type": "compaction", "summary": "S.", "firstKeptEntryIndex": 2, "tokensBefore": 9}),
        ),
        old(
            json!({"type": "message", "message": {"role": "hookMessage", "customType": "h", "content": "from a hook", "display": true}}),
        ),
    ];
    let path = pi_file(dir.path(), "v1.jsonl", &lines);
    let store = store(dir.path());
    let outcome = import(&path, &store);
    assert_eq!(outcome.version, 1);
    assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
    let session = loaded(&store, &outcome);
    let texts: Vec<String> = etch_session::project_messages(&session)
        .messages
        .iter()
        .map(|m| etch_model::content::joined_text(m.parts()))
        .collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert!(texts[0].contains("<summary>\nS.\n</summary>"), "{texts:?}");
    assert_eq!(texts[1..], ["kept".to_owned(), "from a hook".to_owned()]);
}

/// A v2 file keeps its ids and tree (a branch whose leaf is the last
/// entry) and has its `hookMessage`s read as custom messages, as Pi's
/// migration to v3 does.
#[test]
fn version_2_files_are_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let mut head = header("pi-v2");
    head["version"] = json!(2);
    let lines = vec![
        head,
        entry(
            "message",
            "u1",
            None,
            &json!({"message": {"role": "user", "content": "first"}}),
        ),
        entry(
            "message",
            "a1",
            Some("u1"),
            &json!({"message": {"role": "assistant", "provider": "openai", "api": "openai-completions",
            "model": "m1", "stopReason": "stop", "content": [{"type": "text", "text": "abandoned"}]}}),
        ),
        entry(
            "message",
            "h1",
            Some("u1"),
            &json!({"message": {"role": "hookMessage", "customType": "h", "content": "from a hook", "display": true}}),
        ),
        entry(
            "message",
            "u2",
            Some("h1"),
            &json!({"message": {"role": "user", "content": "second"}}),
        ),
    ];
    let path = pi_file(dir.path(), "v2.jsonl", &lines);
    let store = store(dir.path());
    let outcome = import(&path, &store);
    assert_eq!(outcome.version, 2);
    assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
    let session = loaded(&store, &outcome);
    let ids: Vec<&str> = session.events.iter().map(|e| e.id.as_str()).collect();
    for id in ["u1", "a1", "h1", "u2"] {
        assert!(ids.contains(&id), "{id} kept: {ids:?}");
    }
    let texts: Vec<String> = etch_session::project_messages(&session)
        .messages
        .iter()
        .map(|m| etch_model::content::joined_text(m.parts()))
        .collect();
    // The active branch: the abandoned answer is off it.
    assert_eq!(texts, ["first", "from a hook", "second"], "{texts:?}");
}

/// A second import of a file is skipped, naming the session it became;
/// `force` imports it again; a dry run writes nothing.
#[test]
fn imports_are_idempotent_and_dry_runs_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lines = vec![
        header("pi-2"),
        entry(
            "message",
            "m1",
            None,
            &json!({"message": {"role": "user", "content": "hi"}}),
        ),
    ];
    let path = pi_file(dir.path(), "p.jsonl", &lines);
    let store = store(dir.path());
    let dry = import_file(
        &path,
        &store,
        &HashMap::new(),
        &Options {
            dry_run: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(dry.entries(), 1);
    assert!(dry.session_id.is_none());
    assert!(!store.dir().exists(), "a dry run creates nothing");
    let first = import(&path, &store);
    let again = import(&path, &store);
    assert!(again.skipped);
    assert_eq!(again.session_id, first.session_id);
    let already = imported(&store).unwrap();
    let forced = import_file(
        &path,
        &store,
        &already,
        &Options {
            force: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(!forced.skipped);
    assert_ne!(forced.session_id, first.session_id);
}

/// Bad lines, unknown entries, orphans and broken images are reported,
/// never fatal and never dropped silently; a file that is no Pi session
/// is refused.
#[test]
fn damage_is_reported_and_unknown_entries_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    let text = format!(
        "{}\nnot json\n{}\n{}\n{}\n",
        header("pi-bad"),
        entry(
            "message",
            "m1",
            None,
            &json!({"message": {"role": "user", "content": [
            {"type": "text", "text": "see"}, {"type": "image", "data": "!!", "mimeType": "image/png"}]}})
        ),
        entry("future_thing", "f1", Some("m1"), &json!({"x": 1})),
        entry(
            "message",
            "m2",
            Some("ghost"),
            &json!({"message": {"role": "user", "content": "orphan"}})
        ),
    );
    std::fs::write(&path, text).unwrap();
    let store = store(dir.path());
    let outcome = import(&path, &store);
    let problems = outcome.problems.join("\n");
    assert!(problems.contains("line 2: not JSON"), "{problems}");
    assert!(
        problems.contains("line 3: an image could not be imported"),
        "{problems}"
    );
    assert!(problems.contains("names parent ghost"), "{problems}");
    let session = loaded(&store, &outcome);
    assert!(session.events.iter().any(|e| e.kind == "pi.future_thing"));
    let text = etch_model::content::joined_text(
        etch_session::project_messages_at(&session, "m1")
            .unwrap()
            .messages[0]
            .parts(),
    );
    assert!(
        text.contains("[image omitted (image/png): it could not be imported"),
        "{text}"
    );
    std::fs::write(dir.path().join("x.jsonl"), "{\"type\":\"message\"}\n").unwrap();
    let err = import_file(
        &dir.path().join("x.jsonl"),
        &store,
        &HashMap::new(),
        &Options::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("is not a Pi session file"),
        "{err}"
    );
}

/// Pi's directory for a project: its path with separators as dashes.
#[test]
fn the_default_directory_is_pis() {
    assert_eq!(
        default_dir(None, Path::new("/home/u"), Path::new("/home/u/code/app")),
        Path::new("/home/u/.pi/agent/sessions/--home-u-code-app--")
    );
    assert_eq!(
        default_dir(Some(Path::new("/x")), Path::new("/home/u"), Path::new("/a")),
        Path::new("/x/sessions/--a--")
    );
}

/// A line longer than the limit is skipped, never held whole, and the
/// lines after it are read.
#[test]
fn over_long_lines_are_skipped() {
    let text = format!("short\n{}\nnext\n", "x".repeat(3 << 20));
    let mut lines = Lines::with_limit(std::io::Cursor::new(text.into_bytes()), 1 << 20);
    let (_, first) = lines.next_line().unwrap().unwrap();
    assert_eq!(first, b"short\n");
    let (n, next) = lines.next_line().unwrap().unwrap();
    assert_eq!((n, next.as_slice()), (3, &b"next\n"[..]));
    assert!(lines.next_line().unwrap().is_none());
    assert_eq!(
        lines.problems,
        ["line 2: longer than 1048576 bytes, skipped"]
    );
}
