//! The questions waiting for an answer from a front end that watches the
//! session (the chat, an RPC or HTTP client): the broker shows each to
//! the session's watcher as it comes and holds it until an `approve`
//! command answers it, the run is cancelled, or the watcher goes away.
//!
//! Questions are routed by session: a context (and so a broker) may
//! serve several sessions at once (`etch serve` shares one per
//! directory), and a subagent's calls go to the session that started it
//! ([`Broker::alias`]). A question is answered only from its own
//! session, so one client cannot approve another session's calls.
//!
//! This module must not know how a question is shown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use etch_tool::ApprovalRequest;
use serde_json::Value;
use tokio::sync::oneshot;

use super::{Answer, AskFuture, Asker, Why};

/// One question, as shown to a watcher.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    /// The session whose watcher is asked.
    pub session_id: String,
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The call's arguments.
    pub args: Value,
    /// Why it asks, in words.
    pub why: String,
}

/// Shows a question to a session's watcher.
pub type Show = Arc<dyn Fn(Asked) + Send + Sync>;

/// A question waiting for its answer.
struct Pending {
    /// The question.
    asked: Asked,
    /// Where the answer goes.
    reply: oneshot::Sender<Answer>,
    /// Its number, so that only its own call removes it.
    ticket: u64,
}

/// The state behind the lock.
#[derive(Default)]
struct State {
    /// Waiting questions, by (session, call id).
    pending: HashMap<(String, String), Pending>,
    /// Each watched session's watcher, with its registration number.
    watchers: HashMap<String, (u64, Show)>,
    /// Child sessions (subagents) and the session they ask through.
    aliases: HashMap<String, String>,
}

impl State {
    /// The session that answers for `session`: itself, or the session
    /// its chain of parents starts at.
    fn root(&self, session: &str) -> String {
        let mut at = session;
        // A chain longer than the map cannot be a chain (a loop).
        for _ in 0..=self.aliases.len() {
            match self.aliases.get(at) {
                Some(parent) => at = parent,
                None => break,
            }
        }
        at.to_owned()
    }
}

/// The questions of a context's sessions.
#[derive(Default)]
pub struct Broker {
    /// Questions, watchers and aliases.
    state: Mutex<State>,
    /// The next registration number.
    next: AtomicU64,
}

/// Watching a session; the watcher stops when this is dropped, and the
/// questions it had not answered are refused.
pub struct Watch {
    /// The broker watched.
    broker: Arc<Broker>,
    /// The session.
    session: String,
    /// The registration number.
    number: u64,
}

impl Watch {
    /// The session watched.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Whether this watches `session` at `broker` (and no later watcher
    /// took its place).
    pub fn watches(&self, broker: &Arc<Broker>, session: &str) -> bool {
        Arc::ptr_eq(&self.broker, broker)
            && self.session == session
            && broker
                .lock()
                .watchers
                .get(session)
                .is_some_and(|(number, _)| *number == self.number)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut state = self.broker.lock();
        if state
            .watchers
            .get(&self.session)
            .is_some_and(|(number, _)| *number == self.number)
        {
            state.watchers.remove(&self.session);
            // Dropping the replies tells the waiting calls.
            state
                .pending
                .retain(|(session, _), _| *session != self.session);
        }
    }
}

/// A child session asking through its parent; undone when dropped.
pub struct Alias {
    /// The broker.
    broker: Arc<Broker>,
    /// The child session.
    child: String,
}

impl Drop for Alias {
    fn drop(&mut self) {
        self.broker.lock().aliases.remove(&self.child);
    }
}

impl Broker {
    /// The state, even after a panic elsewhere (it stays consistent:
    /// every change is one map operation).
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Shows `session`'s questions with `show` until the returned watch
    /// is dropped; questions already waiting are shown again. A later
    /// watcher of the same session replaces this one.
    pub fn watch(self: &Arc<Self>, session: &str, show: &Show) -> Watch {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let waiting: Vec<Asked> = {
            let mut state = self.lock();
            state
                .watchers
                .insert(session.to_owned(), (number, Arc::clone(show)));
            state
                .pending
                .values()
                .filter(|p| p.asked.session_id == session)
                .map(|p| p.asked.clone())
                .collect()
        };
        for asked in waiting {
            show(asked);
        }
        Watch {
            broker: Arc::clone(self),
            session: session.to_owned(),
            number,
        }
    }

    /// Routes `child`'s questions to `parent`'s watcher until the alias
    /// is dropped (a subagent's calls ask the user of the session that
    /// started it).
    pub fn alias(self: &Arc<Self>, child: &str, parent: &str) -> Alias {
        self.lock()
            .aliases
            .insert(child.to_owned(), parent.to_owned());
        Alias {
            broker: Arc::clone(self),
            child: child.to_owned(),
        }
    }

    /// Answers call `call_id`'s question in `session`.
    ///
    /// # Errors
    /// When no such question waits, with the ones that do.
    pub fn answer(&self, session: &str, call_id: &str, answer: Answer) -> Result<(), String> {
        let mut state = self.lock();
        let key = (session.to_owned(), call_id.to_owned());
        if let Some(pending) = state.pending.remove(&key) {
            drop(state);
            return pending
                .reply
                .send(answer)
                .map_err(|_| format!("call {call_id} stopped waiting before the answer arrived"));
        }
        let mut waiting: Vec<&str> = state
            .pending
            .keys()
            .filter(|(s, _)| s == session)
            .map(|(_, call)| call.as_str())
            .collect();
        waiting.sort_unstable();
        Err(if waiting.is_empty() {
            format!("no call {call_id} waits for approval; none is waiting")
        } else {
            format!(
                "no call {call_id} waits for approval; waiting: {}",
                waiting.join(", ")
            )
        })
    }

    /// The questions waiting in `session`, oldest call id first.
    pub fn waiting(&self, session: &str) -> Vec<Asked> {
        let mut waiting: Vec<Asked> = self
            .lock()
            .pending
            .values()
            .filter(|p| p.asked.session_id == session)
            .map(|p| p.asked.clone())
            .collect();
        waiting.sort_by(|a, b| a.call_id.cmp(&b.call_id));
        waiting
    }
}

/// Removes a question when its call stops waiting (answered, cancelled),
/// unless another question took its key meanwhile.
struct Unask<'a> {
    /// The broker.
    broker: &'a Broker,
    /// The question's key.
    key: (String, String),
    /// The question's number.
    ticket: u64,
}

impl Drop for Unask<'_> {
    fn drop(&mut self) {
        let mut state = self.broker.lock();
        if state
            .pending
            .get(&self.key)
            .is_some_and(|p| p.ticket == self.ticket)
        {
            state.pending.remove(&self.key);
        }
    }
}

impl Asker for Broker {
    fn who(&self) -> &'static str {
        "user"
    }

    fn ask<'a>(&'a self, request: ApprovalRequest<'a>, why: Why) -> AskFuture<'a> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let (show, asked, key, ticket) = {
                let mut state = self.lock();
                let session = state.root(request.session_id);
                let Some((_, show)) = state.watchers.get(&session) else {
                    return Answer::Refuse(format!(
                        "this {} call needs the user's approval ({}), and nobody watching this \
                         session can give it; it was not run",
                        request.tool,
                        why.as_str()
                    ));
                };
                let show = Arc::clone(show);
                let ticket = self.next.fetch_add(1, Ordering::Relaxed);
                // Two calls may share an id (two subagents of one
                // session, a server that numbers calls per response): the
                // later one is asked under an id of its own.
                let mut call_id = request.call_id.to_owned();
                if state
                    .pending
                    .contains_key(&(session.clone(), call_id.clone()))
                {
                    call_id = format!("{}~{ticket}", request.call_id);
                }
                let key = (session.clone(), call_id.clone());
                let asked = Asked {
                    session_id: session,
                    call_id,
                    tool: request.tool.to_owned(),
                    args: request.args.clone(),
                    why: why.as_str().to_owned(),
                };
                state.pending.insert(
                    key.clone(),
                    Pending {
                        asked: asked.clone(),
                        reply,
                        ticket,
                    },
                );
                (show, asked, key, ticket)
            };
            let _unask = Unask {
                broker: self,
                key,
                ticket,
            };
            show(asked);
            answer.await.unwrap_or_else(|_| {
                Answer::Refuse(format!(
                    "the {} call was not run: whoever watched the session went away before \
                     answering",
                    request.tool
                ))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use etch_tool::ProgressSink;
    use serde_json::json;
    use tokio::sync::mpsc;

    use super::*;

    /// Asks `broker` about a bash call `call` of `session`.
    fn ask<'a>(
        broker: &'a Broker,
        session: &'a str,
        call: &'a str,
        args: &'a Value,
        progress: &'a ProgressSink,
    ) -> AskFuture<'a> {
        broker.ask(
            ApprovalRequest {
                call_id: call,
                tool: "bash",
                args,
                cwd: Path::new("/w"),
                session_id: session,
                progress,
                read_only: false,
            },
            Why::Bypass,
        )
    }

    /// A watcher that sends what it is shown into a channel.
    fn watcher() -> (Show, mpsc::UnboundedReceiver<Asked>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Arc::new(move |asked| {
                let _ = tx.send(asked);
            }),
            rx,
        )
    }

    /// A question reaches its session's watcher (a subagent's through
    /// its parent's), is answered from that session only, and an answer
    /// for nothing names what waits.
    #[tokio::test]
    async fn questions_are_shown_answered_and_routed() {
        let broker = Arc::new(Broker::default());
        let (show, mut shown) = watcher();
        let _watch = broker.watch("parent", &show);
        let _alias = broker.alias("child", "parent");
        let args = json!({"command": "git commit"});
        let progress = ProgressSink::default();
        let asking = ask(&broker, "child", "c1", &args, &progress);
        tokio::pin!(asking);
        let asked = tokio::select! {
            _ = &mut asking => panic!("answered before anyone answered"),
            asked = shown.recv() => asked.unwrap(),
        };
        assert_eq!(
            (asked.session_id.as_str(), asked.call_id.as_str()),
            ("parent", "c1")
        );
        assert_eq!(broker.waiting("parent").len(), 1);
        let wrong = broker.answer("other", "c1", Answer::Once).unwrap_err();
        assert!(wrong.contains("none is waiting"), "{wrong}");
        let missing = broker.answer("parent", "c9", Answer::Once).unwrap_err();
        assert!(missing.contains("waiting: c1"), "{missing}");
        broker
            .answer("parent", "c1", Answer::Deny(Some("no".into())))
            .unwrap();
        assert_eq!(asking.await, Answer::Deny(Some("no".into())));
        assert!(broker.waiting("parent").is_empty());
    }

    /// Two calls with one id (two subagents of a session) are both asked,
    /// the later under an id of its own, and each is answered alone.
    #[tokio::test]
    async fn calls_sharing_an_id_are_asked_apart() {
        let broker = Arc::new(Broker::default());
        let (show, mut shown) = watcher();
        let _watch = broker.watch("s", &show);
        let args = json!({"command": "x"});
        let progress = ProgressSink::default();
        let first = ask(&broker, "s", "call_0", &args, &progress);
        let second = ask(&broker, "s", "call_0", &args, &progress);
        tokio::pin!(first, second);
        let mut ids = Vec::new();
        while ids.len() < 2 {
            tokio::select! {
                biased;
                _ = &mut first => panic!("answered early"),
                _ = &mut second => panic!("answered early"),
                asked = shown.recv() => ids.push(asked.unwrap().call_id),
            }
        }
        assert_eq!(ids[0], "call_0");
        assert!(ids[1].starts_with("call_0~"), "{ids:?}");
        broker.answer("s", &ids[1], Answer::Once).unwrap();
        assert_eq!(second.await, Answer::Once);
        assert_eq!(broker.waiting("s").len(), 1);
        broker.answer("s", "call_0", Answer::Deny(None)).unwrap();
        assert_eq!(first.await, Answer::Deny(None));
    }

    /// Without a watcher the call is refused at once; when the watcher
    /// goes, its waiting calls are refused; a cancelled call leaves no
    /// question behind.
    #[tokio::test]
    async fn unwatched_and_abandoned_questions_are_refused() {
        let broker = Arc::new(Broker::default());
        let args = json!({"command": "x"});
        let progress = ProgressSink::default();
        let alone = ask(&broker, "s", "c1", &args, &progress).await;
        assert!(matches!(alone, Answer::Refuse(ref t) if t.contains("nobody watching")));
        let (show, mut shown) = watcher();
        let watch = broker.watch("s", &show);
        let asking = ask(&broker, "s", "c2", &args, &progress);
        tokio::pin!(asking);
        tokio::select! {
            _ = &mut asking => panic!("answered early"),
            _ = shown.recv() => {}
        }
        drop(watch);
        assert!(matches!(asking.await, Answer::Refuse(ref t) if t.contains("went away")));
        let (show, mut shown) = watcher();
        let _watch = broker.watch("s", &show);
        {
            let asking = ask(&broker, "s", "c3", &args, &progress);
            tokio::pin!(asking);
            tokio::select! {
                _ = &mut asking => panic!("answered early"),
                _ = shown.recv() => {}
            }
        }
        assert!(broker.waiting("s").is_empty());
    }
}
