//! The session service on real sessions (the echo model, logs on disk):
//! every operation through a handle, and two sessions served at once.
//! The barriers are the outputs themselves (a response, `agent_end`).

use std::time::Duration;

use etch_protocol::{Command, EventBody, Response, TreeRow};
use serde_json::json;
use tokio::sync::mpsc;

use super::*;
use crate::host::Output;

/// A sink whose outputs a test reads in order.
fn channel() -> (Sink, mpsc::UnboundedReceiver<Output>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        std::sync::Arc::new(move |o| {
            let _ = tx.send(o);
        }),
        rx,
    )
}

/// How a session runs in `dir`: the echo model, default tools.
fn spec(dir: &Path) -> Spec {
    let place = Place {
        cwd: dir.to_path_buf(),
        session_dir: dir.join("sessions"),
        home: None,
        config: etch_config::Config::default(),
    };
    let settings = RunSettings {
        provider: crate::ProviderFlags {
            provider: Some("echo".into()),
            ..crate::ProviderFlags::default()
        },
        ..RunSettings::default()
    };
    let context = Context::build(&place, &settings).unwrap();
    Spec {
        place,
        settings,
        context,
    }
}

/// A command from its JSON.
fn command(id: &str, mut body: serde_json::Value) -> Command {
    body["id"] = json!(id);
    serde_json::from_value(body).unwrap()
}

/// Reads outputs until `done` holds for one; returns them all. A test
/// that waits for something that never comes fails after 30 s instead
/// of hanging.
async fn until(
    rx: &mut mpsc::UnboundedReceiver<Output>,
    done: impl Fn(&Output) -> bool,
) -> Vec<Output> {
    let mut seen = Vec::new();
    loop {
        let output = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("the awaited output came")
            .expect("the session is served");
        let last = done(&output);
        seen.push(output);
        if last {
            return seen;
        }
    }
}

/// The response to command `id`.
async fn response(rx: &mut mpsc::UnboundedReceiver<Output>, id: &str) -> Response {
    let seen = until(
        rx,
        |o| matches!(o, Output::Response(r) if r.id.as_deref() == Some(id)),
    )
    .await;
    match seen.into_iter().last() {
        Some(Output::Response(r)) => r,
        _ => unreachable!("until returns with the response"),
    }
}

/// Waits for the end of the run command `id` started.
async fn run_end(rx: &mut mpsc::UnboundedReceiver<Output>, id: &str) {
    until(rx, |o| {
        matches!(o, Output::Event(e) if e.id.as_deref() == Some(id) && matches!(e.body, EventBody::AgentEnd { .. }))
    })
    .await;
}

/// The user texts of a replay.
fn prompts(replay: &Replay) -> Vec<String> {
    replay
        .entries
        .iter()
        .filter_map(|e| match e {
            etch_protocol::ReplayEntry::User { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Runs a prompt to its end.
async fn prompt(handle: &Local, rx: &mut mpsc::UnboundedReceiver<Output>, id: &str, text: &str) {
    handle.send(command(id, json!({"type": "prompt", "message": text})));
    assert!(response(rx, id).await.success);
    run_end(rx, id).await;
}

#[tokio::test]
async fn create_prompt_replay_status_name_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = SessionService::new();
    let (sink, mut rx) = channel();
    let (handle, _) = service
        .create(spec(dir.path()), None, "first".into(), sink)
        .await
        .unwrap();
    let id = handle.id();
    assert!(handle.file().is_file());
    assert_eq!(handle.model().0, "echo");
    prompt(&handle, &mut rx, "p1", "hello there").await;
    let replay = handle.replay(Scope::WHOLE).await.unwrap();
    assert_eq!(replay.session_id, id);
    assert_eq!(prompts(&replay), ["hello there"]);
    assert!(matches!(
        replay.entries.last(),
        Some(etch_protocol::ReplayEntry::Assistant { .. })
    ));
    assert!(handle.status().await.unwrap().contains(&id));
    assert_eq!(handle.rename("my work".into()).await.unwrap(), "my work");
    let listed = catalog::sessions(&dir.path().join("sessions"));
    assert!(listed.iter().any(|s| s.id == id && s.title == "my work"));
    assert_eq!(service.ids(), std::slice::from_ref(&id));
    let closed = service.close(&id).await.unwrap();
    assert!(closed.unsent.is_empty());
    assert_eq!(
        closed.settings.unwrap().provider.provider.as_deref(),
        Some("echo")
    );
    assert!(service.ids().is_empty());
    assert!(service.get(&id).is_none());
}

#[tokio::test]
async fn open_by_prefix_id_path_and_last() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = SessionService::new();
    let (sink, mut rx) = channel();
    let (handle, _) = service
        .create(spec(dir.path()), None, "t".into(), sink.clone())
        .await
        .unwrap();
    prompt(&handle, &mut rx, "p1", "remember me").await;
    let (id, file) = (handle.id(), handle.file());
    service.close(&id).await.unwrap();
    for stored in [
        Stored::Prefix(&id[..16]),
        Stored::Id(&id),
        Stored::Path(&file),
        Stored::Last,
    ] {
        let opened = service
            .open(spec(dir.path()), stored, Scope::WHOLE, sink.clone())
            .await
            .unwrap_or_else(|e| panic!("{stored:?}: {e}"));
        assert_eq!(opened.handle.id(), id, "{stored:?}");
        assert_eq!(prompts(&opened.replay), ["remember me"], "{stored:?}");
        // The session is held while open: it must be closed before the
        // next opening.
        service.close(&id).await.unwrap();
    }
    let unknown = service
        .open(
            spec(dir.path()),
            Stored::Id("01NOSUCHID"),
            Scope::WHOLE,
            sink.clone(),
        )
        .await;
    assert!(matches!(unknown, Err(OpenError::Usage(m)) if m.contains("01NOSUCHID")));
    assert!(
        service
            .open(spec(dir.path()), Stored::Prefix("zzzz"), Scope::WHOLE, sink)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_session_held_open_cannot_be_opened_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = SessionService::new();
    let (sink, _rx) = channel();
    let (handle, _) = service
        .create(spec(dir.path()), None, "t".into(), sink.clone())
        .await
        .unwrap();
    let again = service
        .open(
            spec(dir.path()),
            Stored::Id(&handle.id()),
            Scope::WHOLE,
            sink,
        )
        .await;
    assert!(again.is_err(), "the log has one writer");
}

#[tokio::test]
async fn tree_fork_navigate_compact_export_and_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = SessionService::new();
    let (sink, mut rx) = channel();
    let (handle, _) = service
        .create(spec(dir.path()), None, "t".into(), sink)
        .await
        .unwrap();
    prompt(&handle, &mut rx, "p1", "one").await;
    prompt(&handle, &mut rx, "p2", "two").await;
    let points = handle.fork_points().await.unwrap();
    assert_eq!(
        points.iter().map(|p| p.text.as_str()).collect::<Vec<_>>(),
        ["one", "two"]
    );
    // Back to the first answer: a new branch from there.
    let tree: Vec<TreeRow> = handle.tree().await.unwrap();
    let first_answer = tree.iter().find(|r| !r.is_user).unwrap().id.clone();
    handle.send(command(
        "n1",
        json!({"type": "navigate", "entryId": first_answer}),
    ));
    assert!(response(&mut rx, "n1").await.success);
    prompt(&handle, &mut rx, "p3", "three").await;
    let tree = handle.tree().await.unwrap();
    assert!(
        tree.iter().any(|r| r.depth == 1),
        "a branch point: {tree:?}"
    );
    let active: Vec<&str> = tree
        .iter()
        .filter(|r| r.active && r.is_user)
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(active, ["one", "three"]);
    // Compaction, export and a model change go through commands.
    handle.send(command("c1", json!({"type": "compact", "force": true})));
    let compacted = response(&mut rx, "c1").await;
    assert!(compacted.success, "{compacted:?}");
    let out = dir.path().join("t.md");
    handle.send(command(
        "e1",
        json!({"type": "export", "outputPath": out, "format": "md"}),
    ));
    assert!(response(&mut rx, "e1").await.success);
    assert!(std::fs::read_to_string(&out).unwrap().contains("three"));
    handle.send(command(
        "m1",
        json!({"type": "set_model", "provider": "echo", "modelId": "other"}),
    ));
    assert!(response(&mut rx, "m1").await.success);
    assert_eq!(handle.model(), ("echo".to_owned(), "other".to_owned()));
    // A fork moves the handle to the new session.
    let before = handle.id();
    let point = handle.fork_points().await.unwrap()[0].entry_id.clone();
    handle.send(command("f1", json!({"type": "fork", "entryId": point})));
    let forked = response(&mut rx, "f1").await;
    assert!(forked.success, "{forked:?}");
    assert_ne!(handle.id(), before);
    assert_eq!(forked.data.unwrap()["sessionId"], handle.id());
    assert!(service.get(&handle.id()).is_some(), "found by its new id");
    service.close_all().await;
}

/// Two sessions served from one process at once: prompts to each sent
/// before the other's run ends, each log with exactly its own prompts
/// and answers, in order.
#[tokio::test]
async fn two_sessions_are_served_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = SessionService::new();
    let (sink_a, mut rx_a) = channel();
    let (sink_b, mut rx_b) = channel();
    let (a, _) = service
        .create(spec(dir.path()), None, "a".into(), sink_a)
        .await
        .unwrap();
    let (b, _) = service
        .create(spec(dir.path()), None, "b".into(), sink_b)
        .await
        .unwrap();
    assert_ne!(a.id(), b.id());
    for round in 0..3 {
        let (pa, pb) = (format!("a{round}"), format!("b{round}"));
        // Both sent before either is answered.
        a.send(command(
            &pa,
            json!({"type": "prompt", "message": format!("to a {round}")}),
        ));
        b.send(command(
            &pb,
            json!({"type": "prompt", "message": format!("to b {round}")}),
        ));
        run_end(&mut rx_b, &pb).await;
        run_end(&mut rx_a, &pa).await;
    }
    let mut ids = service.ids();
    ids.sort();
    let mut want = vec![a.id(), b.id()];
    want.sort();
    assert_eq!(ids, want);
    for (handle, name) in [(&a, "a"), (&b, "b")] {
        let replay = handle.replay(Scope::WHOLE).await.unwrap();
        let want: Vec<String> = (0..3).map(|r| format!("to {name} {r}")).collect();
        assert_eq!(prompts(&replay), want);
        let answers = replay
            .entries
            .iter()
            .filter(|e| matches!(e, etch_protocol::ReplayEntry::Assistant { .. }))
            .count();
        assert_eq!(answers, 3);
        let loaded = etch_session::load_session(&handle.file()).unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    }
    assert_eq!(service.close_all().await.len(), 2);
}

/// State, messages, the context report, exports in every format, a new
/// session, switching back and a reasoning effort, all through the
/// handle.
#[tokio::test]
async fn state_messages_context_exports_new_and_switch() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = SessionService::new().with_html(std::sync::Arc::new(|r: &Replay| {
        format!("<html>{}</html>", r.session_id)
    }));
    let (sink, mut rx) = channel();
    let spec = spec(dir.path());
    let (handle, _) = service
        .create(spec.clone(), None, "t".into(), sink)
        .await
        .unwrap();
    prompt(&handle, &mut rx, "p1", "what is here").await;
    let first = (handle.id(), handle.file());

    handle.send(command("s1", json!({"type": "get_state"})));
    let state = response(&mut rx, "s1").await.data.unwrap();
    assert_eq!(state["sessionId"], first.0.as_str());
    assert_eq!(state["isStreaming"], false);
    handle.send(command("g1", json!({"type": "get_messages"})));
    let messages = response(&mut rx, "g1").await.data.unwrap();
    assert_eq!(messages["messages"].as_array().unwrap().len(), 2);

    let report =
        crate::report::context::report_for(&spec.place, Some(&handle.file()), &spec.context)
            .unwrap();
    assert!(!report.is_empty());
    let dumped = crate::report::context::dump_for(
        &spec.place,
        Some((&first.0, &first.1)),
        &spec.context,
        Some(Path::new("dump.txt")),
    )
    .unwrap();
    assert!(
        std::fs::read_to_string(dumped)
            .unwrap()
            .contains("what is here")
    );

    for (format, want) in [
        ("html", format!("<html>{}</html>", first.0)),
        ("jsonl", String::new()),
    ] {
        let out = dir.path().join(format!("t.{format}"));
        let id = format!("e-{format}");
        handle.send(command(&id, json!({"type": "export", "outputPath": out})));
        assert!(response(&mut rx, &id).await.success, "{format}");
        let written = std::fs::read_to_string(&out).unwrap();
        if format == "html" {
            assert_eq!(written, want);
        } else {
            assert_eq!(written, std::fs::read_to_string(&first.1).unwrap());
        }
    }

    handle.send(command(
        "t1",
        json!({"type": "set_thinking_level", "level": "high"}),
    ));
    assert!(response(&mut rx, "t1").await.success);
    assert_eq!(handle.thinking().as_deref(), Some("high"));

    handle.send(command("n1", json!({"type": "new_session"})));
    assert!(response(&mut rx, "n1").await.success);
    assert_ne!(handle.id(), first.0);
    assert!(
        handle
            .replay(Scope::WHOLE)
            .await
            .unwrap()
            .entries
            .is_empty()
    );

    handle.send(command(
        "w1",
        json!({"type": "switch_session", "sessionPath": first.1}),
    ));
    let switched = response(&mut rx, "w1").await;
    assert!(switched.success, "{switched:?}");
    assert_eq!(handle.id(), first.0);
    assert_eq!(
        prompts(&handle.replay(Scope::WHOLE).await.unwrap()),
        ["what is here"]
    );
    service.close_all().await;
}
