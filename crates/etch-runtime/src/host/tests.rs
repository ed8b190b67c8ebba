//! The host on real sessions (the echo model, a log on disk), with its
//! own end-of-task signal as the barrier.

use super::*;

/// A command line.
fn command(id: &str, body: serde_json::Value) -> Command {
    let mut value = body;
    value["id"] = json!(id);
    serde_json::from_value(value).unwrap()
}

/// A host on a new echo session in a temp directory (kept alive by the
/// returned guard) and what it has output so far.
async fn echo_host() -> (tempfile::TempDir, Host, Arc<Mutex<Vec<Output>>>) {
    let dir = tempfile::tempdir().unwrap();
    let session = crate::testkit::echo_session(dir.path()).await;
    let (sink, seen) = collector();
    (dir, Host::new(session, sink), seen)
}

/// The texts of the idle host's history: user and assistant messages,
/// or only the user's.
fn history_texts(host: &Host, users_only: bool) -> Vec<String> {
    host.session
        .as_ref()
        .unwrap()
        .history()
        .iter()
        .filter_map(|m| match m {
            etch_model::Message::User { content } => {
                Some(etch_model::content::joined_text(content))
            }
            etch_model::Message::Assistant { content } if !users_only => {
                Some(etch_model::content::joined_text(content))
            }
            _ => None,
        })
        .collect()
}

/// A sink collecting outputs.
fn collector() -> (Sink, Arc<Mutex<Vec<Output>>>) {
    let seen: Arc<Mutex<Vec<Output>>> = Arc::default();
    let sink = Arc::clone(&seen);
    (Arc::new(move |o| sink.lock().unwrap().push(o)), seen)
}

/// Text queued after the run took its last look at the queues (the
/// run's task has finished, the host has not taken the session back)
/// is not lost: settling starts the next run with it, tagged with the
/// first prompt's id. The barrier is the host's own end-of-run signal.
#[test]
fn text_queued_after_the_last_look_runs_next() {
    crate::testkit::block(async {
        let (_dir, mut host, seen) = echo_host().await;
        let ended = host.task_ended();
        host.handle(command("p1", json!({"type": "prompt", "message": "first"})))
            .await;
        ended.notified().await;
        assert!(host.is_busy());
        host.handle(command(
            "f1",
            json!({"type": "follow_up", "message": "second"}),
        ))
        .await;
        host.settle().await;
        assert!(host.is_busy(), "the queued text started a run");
        ended.notified().await;
        host.settle().await;
        assert!(!host.is_busy());
        let outputs = seen.lock().unwrap();
        let ends: Vec<&Event> = outputs
            .iter()
            .filter_map(|o| match o {
                Output::Event(e) if matches!(e.body, EventBody::AgentEnd { .. }) => Some(e),
                _ => None,
            })
            .collect();
        assert_eq!(ends.len(), 2);
        assert!(ends.iter().all(|e| e.id.as_deref() == Some("p1")));
        assert_eq!(
            history_texts(&host, false),
            ["first", "first", "second", "second"]
        );
    });
}

/// An abort is answered only once the run has ended (after its
/// agent_end), handing the queued text back instead of running it.
#[test]
fn abort_is_answered_after_the_run_ends() {
    crate::testkit::block(async {
        let (_dir, mut host, seen) = echo_host().await;
        host.handle(command("p1", json!({"type": "prompt", "message": "first"})))
            .await;
        host.handle(command(
            "f1",
            json!({"type": "prompt", "message": "later", "streamingBehavior": "followUp"}),
        ))
        .await;
        host.handle(command("a1", json!({"type": "abort"}))).await;
        let answered = |id: &str| {
            seen.lock()
                .unwrap()
                .iter()
                .any(|o| matches!(o, Output::Response(r) if r.id.as_deref() == Some(id)))
        };
        assert!(!answered("a1"));
        host.abort_and_settle().await;
        assert!(answered("a1"));
        let outputs = seen.lock().unwrap();
        let end = outputs
            .iter()
            .position(|o| {
                matches!(
                    o,
                    Output::Event(Event {
                        body: EventBody::AgentEnd { .. },
                        ..
                    })
                )
            })
            .unwrap();
        let abort = outputs
            .iter()
            .position(|o| matches!(o, Output::Response(r) if r.command == "abort"))
            .unwrap();
        assert!(end < abort);
        assert!(!host.is_busy());
        assert_eq!(host.state()["followUp"], json!([]));
        let answer = outputs
            .iter()
            .find_map(|o| match o {
                Output::Response(r) if r.command == "abort" => r.data.clone(),
                _ => None,
            })
            .unwrap();
        assert_eq!(answer, json!({"unsent": ["later"]}));
    });
}

/// Leftover follow-ups drain per their mode: with one-at-a-time, the
/// next run gets only the oldest text, and the rest follow one per run
/// end, never joined into one prompt.
#[test]
fn leftovers_drain_one_at_a_time() {
    crate::testkit::block(async {
        let (_dir, mut host, _seen) = echo_host().await;
        let ended = host.task_ended();
        host.handle(command(
            "m",
            json!({"type": "set_follow_up_mode", "mode": "one-at-a-time"}),
        ))
        .await;
        host.handle(command("p1", json!({"type": "prompt", "message": "first"})))
            .await;
        ended.notified().await;
        for (id, text) in [("f1", "second"), ("f2", "third")] {
            host.handle(command(id, json!({"type": "follow_up", "message": text})))
                .await;
        }
        while host.is_busy() {
            host.settle().await;
            if host.is_busy() {
                ended.notified().await;
            }
        }
        assert_eq!(history_texts(&host, true), ["first", "second", "third"]);
    });
}
