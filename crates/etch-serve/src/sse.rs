//! A session's event stream. Log lines go out as `event: entry` with
//! `id: <event id>`; protocol events (deltas, tool progress, queue
//! updates) as `event: live` without an id. A client that reconnects
//! with `Last-Event-ID` (or `?after=ID`, `?after=0` for the whole log)
//! first gets every log line after that event, read from the file, then
//! the live frames: the stream subscribes before it reads, and skips
//! live entries the file already gave, so nothing falls between the two
//! and nothing comes twice. A client too slow for the session's bounded
//! broadcast is dropped (its stream ends), never waited for.

use std::collections::HashSet;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use futures_util::stream::{self, StreamExt as _};
use tokio::sync::broadcast;

use crate::error::ApiError;
use crate::state::{Channels, FRAMES_PER_SESSION, Frame, Notify};

/// How often a quiet stream gets a comment, so proxies keep it open and
/// a dead client is noticed.
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// How soon a client should reconnect after a stream breaks.
pub const RECONNECT: Duration = Duration::from_secs(1);

/// Where a stream starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum From {
    /// Live frames only.
    Now,
    /// The whole log, then live.
    Start,
    /// The log after this event id, then live.
    After(String),
}

/// The stream of the session whose log is `file`, from `from`: its
/// replay, then the live frames of `live` until the handle moves to
/// another session; a session held by another process (`live` is
/// `None`) has its replay only.
pub async fn stream<S>(
    live: Option<(Arc<Channels>, Notify)>,
    file: PathBuf,
    from: From,
    stopped: S,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>> + use<S>>, ApiError>
where
    S: std::future::Future<Output = ()> + Send + 'static,
{
    // Subscribed before the file is read: a line appended meanwhile is
    // in both, and the copy from the broadcast is skipped.
    let rx = live
        .as_ref()
        .map(|(channels, _)| (channels.frames.subscribe(), channels.generation()));
    let (replay, seen) = match from {
        From::Now => (Vec::new(), HashSet::new()),
        From::Start | From::After(_) => {
            let text = tokio::fs::read_to_string(&file).await.map_err(|e| {
                ApiError::new(
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    "cannot_read_log",
                    format!("cannot read {}: {e}", file.display()),
                )
            })?;
            after(
                &text,
                match &from {
                    From::After(id) => Some(id.as_str()),
                    _ => None,
                },
            )?
        }
    };
    let replayed = stream::iter(replay.into_iter().map(|(id, line)| Ok(entry(&id, &line))));
    let session = file
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let state = live
        .zip(rx)
        .map(|((channels, notify), (rx, generation))| Live {
            rx,
            channels,
            generation,
            seen,
            session,
            notify,
        });
    // A browser reconnects after this long (its default is a few
    // seconds): a restarted server is found again soon.
    let retry = stream::once(async { Ok(Event::default().retry(RECONNECT)) });
    let stream = retry
        .chain(replayed)
        .chain(live_frames(state))
        .take_until(stopped);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(HEARTBEAT)))
}

/// The live frames of `state` (none for `None`), until the handle moves
/// to another session or the client falls too far behind.
fn live_frames(state: Option<Live>) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(state, |state| async move {
        let mut state = state?;
        loop {
            let frame = state.rx.recv().await;
            if state.channels.generation() != state.generation {
                // The handle moved to another session (a fork): this
                // stream's session is no longer served here.
                return None;
            }
            match frame {
                Ok(Frame::Entry { id, line }) => {
                    if state.seen.contains(&*id) {
                        continue;
                    }
                    return Some((Ok(entry(&id, &line)), Some(state)));
                }
                Ok(Frame::Live(json)) => {
                    return Some((Ok(Event::default().event("live").data(&*json)), Some(state)));
                }
                // Too slow (frames were lost): the stream ends, and the
                // client reconnects from its last id and loses nothing.
                Err(broadcast::error::RecvError::Lagged(lost)) => {
                    state.notify.say(&format!(
                        "dropped an event stream of session {}: it fell {lost} frames behind \
                         (the most kept is {FRAMES_PER_SESSION}); it can reconnect from its last \
                         event id",
                        state.session
                    ));
                    return None;
                }
                // The session is gone.
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

/// A live stream's state.
struct Live {
    /// The session's frames.
    rx: broadcast::Receiver<Frame>,
    /// The session's channels, for its generation.
    channels: Arc<Channels>,
    /// The generation the stream started in.
    generation: u64,
    /// Entries the replay sent.
    seen: HashSet<String>,
    /// The session's id, for the report of a dropped client.
    session: String,
    /// Where that report goes.
    notify: Notify,
}

impl Drop for Live {
    /// A stream dropped while its client is more than a queue behind
    /// was closed for not reading (its connection gave up): say so.
    fn drop(&mut self) {
        let behind = self.rx.len();
        if behind > FRAMES_PER_SESSION {
            self.notify.say(&format!(
                "closed an event stream of session {}: its client stopped reading ({behind} \
                 frames behind)",
                self.session
            ));
        }
    }
}

/// The server-wide lifecycle stream: `event: session` frames, live only.
pub fn lifecycle<S>(
    rx: broadcast::Receiver<Arc<str>>,
    stopped: S,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<S>>
where
    S: std::future::Future<Output = ()> + Send + 'static,
{
    let events = stream::unfold(rx, |mut rx| async move {
        match rx.recv().await {
            Ok(json) => Some((Ok(Event::default().event("session").data(&*json)), rx)),
            // A client too slow for the server's events is dropped.
            Err(_) => None,
        }
    });
    Sse::new(events.take_until(stopped)).keep_alive(KeepAlive::new().interval(HEARTBEAT))
}

/// Log lines to send, each with its event id.
type Lines = Vec<(String, String)>;

/// The lines of `text` after the event `last` (all of them for `None`)
/// with their ids, and the ids of every line read (so live copies of
/// them are skipped). Lines that are not events with a plain id are left
/// out (a torn or foreign line).
fn after(text: &str, last: Option<&str>) -> Result<(Lines, HashSet<String>), ApiError> {
    let events: Vec<(String, &str)> = text
        .lines()
        .filter_map(|line| Some((event_id(line)?, line)))
        .collect();
    let seen: HashSet<String> = events.iter().map(|(id, _)| id.clone()).collect();
    let start = match last {
        None => 0,
        Some(id) => events.iter().position(|(e, _)| e == id).ok_or_else(|| {
            ApiError::bad(
                "unknown_event",
                format!(
                    "the session has no event {id}; reconnect with ?after=0 to get the whole log"
                ),
            )
        })? + 1,
    };
    let replay = events[start..]
        .iter()
        .map(|(id, line)| (id.clone(), (*line).to_owned()))
        .collect();
    Ok((replay, seen))
}

/// A log line's event id, when it is a plain one (letters and digits:
/// anything else could break the SSE framing).
fn event_id(line: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: String,
    }
    let id = serde_json::from_str::<Id>(line).ok()?.id;
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(id)
}

/// The frame of a log line.
fn entry(id: &str, line: &str) -> Event {
    Event::default().id(id).event("entry").data(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Live state over fresh channels, its reports kept in `said`.
    fn watching(channels: &Arc<Channels>, said: &Arc<std::sync::Mutex<Vec<String>>>) -> Live {
        let said = Arc::clone(said);
        Live {
            rx: channels.frames.subscribe(),
            channels: Arc::clone(channels),
            generation: channels.generation(),
            seen: HashSet::new(),
            session: "S1".to_owned(),
            notify: Notify(Arc::new(move |m: &str| {
                said.lock().unwrap().push(m.to_owned());
            })),
        }
    }

    /// A client that stops reading loses its stream once it is a queue
    /// behind, and the sender never waited for it; a client that keeps
    /// up gets every frame; a fork's move ends the streams of the old
    /// session.
    #[tokio::test]
    async fn a_stalled_client_is_dropped_and_others_keep_every_frame() {
        let channels = Channels::new(broadcast::channel(4).0);
        let said = Arc::default();
        let mut stalled = Box::pin(live_frames(Some(watching(&channels, &said))));
        let mut reading = Box::pin(live_frames(Some(watching(&channels, &said))));
        let total = crate::state::FRAMES_PER_SESSION + 10;
        for n in 0..total {
            // Never blocks, however far behind `stalled` is.
            channels
                .frames
                .send(Frame::Live(format!("{{\"n\":{n}}}").into()))
                .unwrap();
            assert!(reading.next().await.is_some(), "frame {n}");
        }
        assert!(
            stalled.next().await.is_none(),
            "the stalled client is cut off"
        );

        channels.moved();
        channels.frames.send(Frame::Live("{}".into())).unwrap();
        assert!(
            reading.next().await.is_none(),
            "a moved handle ends the stream"
        );
    }

    const LOG: &str = "{\"id\":\"A1\",\"type\":\"session.started\"}\n\
                       torn {\n\
                       {\"id\":\"B2\",\"type\":\"message.user\"}\n\
                       {\"id\":\"bad\\nid\",\"type\":\"x\"}\n\
                       {\"id\":\"C3\",\"type\":\"message.assistant\"}\n";

    fn ids(replay: &[(String, String)]) -> Vec<&str> {
        replay.iter().map(|(id, _)| id.as_str()).collect()
    }

    /// A replay starts after the given event, or at the start for
    /// `after=0`; torn lines and ids that could break framing are
    /// skipped; an unknown id is an error saying how to recover.
    #[test]
    fn replay_starts_after_the_last_event_seen() {
        let (all, seen) = after(LOG, None).unwrap();
        assert_eq!(ids(&all), ["A1", "B2", "C3"]);
        assert_eq!(seen.len(), 3);
        let (rest, _) = after(LOG, Some("B2")).unwrap();
        assert_eq!(ids(&rest), ["C3"]);
        let (none, _) = after(LOG, Some("C3")).unwrap();
        assert!(none.is_empty());
        let err = after(LOG, Some("Z9")).unwrap_err();
        assert_eq!(err.code, "unknown_event");
        assert!(err.message.contains("?after=0"), "{}", err.message);
    }
}
