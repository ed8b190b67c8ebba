//! The prompt queues of a session (C21, G8, Pi's AgentSession): steering
//! prompts (text, and images as Pi's client sends with a steer),
//! admitted at the next boundary after a tool batch, and explicit
//! follow-ups, taken when the run would stop. Each drains `all` at once
//! (etch's default) or `one-at-a-time` (Pi's option for RPC clients).
//!
//! [`QueuedRun`] is the observer a run is driven with: it forwards the
//! loop's events to an [`EventBridge`] and hands the loop what the queues
//! hold, announcing every change as a `queue_update` event, so a front end
//! always shows what is pending. The queues are shared (`Arc<Mutex<_>>`)
//! with whoever accepts commands while the run is active. This module
//! must not know how commands arrive.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use etch_core::{AgentEvent, Observer, Prompt};
use etch_protocol::{EventBody, QueueMode};

use crate::events::EventBridge;

/// The pending steering and follow-up prompts, oldest first.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Queues {
    /// Steering prompts.
    steering: VecDeque<Prompt>,
    /// Follow-up prompts.
    follow_up: VecDeque<Prompt>,
    /// How steering drains.
    steering_mode: QueueMode,
    /// How follow-ups drain.
    follow_up_mode: QueueMode,
}

impl Queues {
    /// Queues a steering prompt (text, or text and images).
    pub fn steer(&mut self, prompt: impl Into<Prompt>) {
        self.steering.push_back(prompt.into());
    }

    /// Queues a follow-up prompt.
    pub fn follow_up(&mut self, prompt: impl Into<Prompt>) {
        self.follow_up.push_back(prompt.into());
    }

    /// Sets how steering drains.
    pub fn set_steering_mode(&mut self, mode: QueueMode) {
        self.steering_mode = mode;
    }

    /// Sets how follow-ups drain.
    pub fn set_follow_up_mode(&mut self, mode: QueueMode) {
        self.follow_up_mode = mode;
    }

    /// How steering drains.
    pub fn steering_mode(&self) -> QueueMode {
        self.steering_mode
    }

    /// How follow-ups drain.
    pub fn follow_up_mode(&self) -> QueueMode {
        self.follow_up_mode
    }

    /// Takes the steering prompts due now: all, or the oldest one.
    pub fn drain_steering(&mut self) -> Vec<Prompt> {
        drain(&mut self.steering, self.steering_mode)
    }

    /// Takes the follow-ups due now: all, or the oldest one.
    pub fn drain_follow_up(&mut self) -> Vec<Prompt> {
        drain(&mut self.follow_up, self.follow_up_mode)
    }

    /// How many images the queued prompts carry.
    pub fn image_count(&self) -> usize {
        self.steering
            .iter()
            .chain(&self.follow_up)
            .map(|p| p.images.len())
            .sum()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.steering.is_empty() && self.follow_up.is_empty()
    }

    /// Takes everything pending (an aborted run hands its texts back to
    /// the user rather than dropping them), steering first.
    pub fn take_all(&mut self) -> Vec<String> {
        self.steering
            .drain(..)
            .chain(self.follow_up.drain(..))
            .map(|prompt| prompt.text)
            .collect()
    }

    /// The `queue_update` event describing the queues now (their texts).
    pub fn update_event(&self) -> EventBody {
        let texts = |queue: &VecDeque<Prompt>| queue.iter().map(|p| p.text.clone()).collect();
        EventBody::QueueUpdate {
            steering: texts(&self.steering),
            follow_up: texts(&self.follow_up),
        }
    }
}

/// Takes all of `queue`, or its oldest entry.
fn drain(queue: &mut VecDeque<Prompt>, mode: QueueMode) -> Vec<Prompt> {
    match mode {
        QueueMode::All => queue.drain(..).collect(),
        QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
    }
}

/// The observer of a run fed by shared queues.
pub struct QueuedRun {
    /// Where the run's events go.
    bridge: EventBridge,
    /// The session's queues.
    queues: Arc<Mutex<Queues>>,
}

impl QueuedRun {
    /// A run reporting through `bridge` and fed from `queues`.
    pub fn new(bridge: EventBridge, queues: Arc<Mutex<Queues>>) -> Self {
        Self { bridge, queues }
    }

    /// Drains with `take` and announces the new state when it took any.
    fn take(&mut self, take: impl FnOnce(&mut Queues) -> Vec<Prompt>) -> Vec<Prompt> {
        let (taken, update) = {
            let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            let taken = take(&mut queues);
            (taken, queues.update_event())
        };
        if !taken.is_empty() {
            self.bridge.emit_body(update);
        }
        taken
    }
}

impl Observer for QueuedRun {
    fn agent_event(&mut self, event: &AgentEvent<'_>) {
        self.bridge.agent_event(event);
    }

    fn durable_line(&mut self, line: &str) {
        self.bridge.durable_line(line);
    }

    fn drain_steering(&mut self) -> Vec<Prompt> {
        self.take(Queues::drain_steering)
    }

    fn drain_follow_up(&mut self) -> Vec<Prompt> {
        self.take(Queues::drain_follow_up)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etch_protocol::Event;

    /// Both modes, for both queues; abort hands everything back.
    #[test]
    fn modes_drain_all_or_one() {
        let mut q = Queues::default();
        q.steer("a");
        q.steer("b");
        q.follow_up("c");
        q.follow_up("d");
        q.set_follow_up_mode(QueueMode::OneAtATime);
        let texts =
            |prompts: Vec<Prompt>| -> Vec<String> { prompts.into_iter().map(|p| p.text).collect() };
        assert_eq!(texts(q.drain_steering()), ["a", "b"]);
        assert_eq!(texts(q.drain_follow_up()), ["c"]);
        assert_eq!(
            q.update_event(),
            EventBody::QueueUpdate {
                steering: vec![],
                follow_up: vec!["d".into()]
            }
        );
        let image = etch_model::Image::new(
            b"\x89PNG\r\n\x1a\n".to_vec(),
            etch_model::MediaType::Png,
            1,
            1,
        );
        q.steer(Prompt {
            text: "e".into(),
            images: vec![image.clone(), image],
        });
        // The images are counted (one request takes 20), texts handed back.
        assert_eq!(q.image_count(), 2);
        assert_eq!(q.take_all(), ["e", "d"]);
        assert_eq!(q.image_count(), 0);
        assert!(q.is_empty());
        assert!(q.drain_steering().is_empty());
    }

    /// Driving a real run (echo model, session on disk): queued follow-ups
    /// are answered one at a time in the same run, each take announced by
    /// a queue_update carrying the command id.
    #[test]
    fn a_run_drains_the_shared_queues() {
        let dir = tempfile::tempdir().unwrap();
        let (mut writer, agent) = crate::testkit::echo_run(dir.path());
        let queues = Arc::new(Mutex::new(Queues::default()));
        {
            let mut q = queues.lock().unwrap();
            q.set_follow_up_mode(QueueMode::OneAtATime);
            q.follow_up("second");
            q.follow_up("third");
        }
        let seen: Arc<Mutex<Vec<Event>>> = Arc::default();
        let sink = Arc::clone(&seen);
        let bridge = EventBridge::new(
            Some("p1".into()),
            Box::new(move |event| sink.lock().unwrap().push(event)),
        );
        let mut run = QueuedRun::new(bridge, Arc::clone(&queues));
        let outcome = crate::testkit::block(agent.run(
            &mut writer,
            &mut Vec::new(),
            "first",
            &mut run,
            &tokio_util::sync::CancellationToken::new(),
        ))
        .unwrap();
        assert_eq!(outcome.final_text, "third");
        assert!(queues.lock().unwrap().is_empty());
        let events = seen.lock().unwrap();
        let updates: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e.body, EventBody::QueueUpdate { .. }))
            .collect();
        assert_eq!(updates.len(), 2);
        assert!(updates.iter().all(|e| e.id.as_deref() == Some("p1")));
        assert_eq!(
            updates[0].body,
            EventBody::QueueUpdate {
                steering: vec![],
                follow_up: vec!["third".into()]
            }
        );
    }
}
