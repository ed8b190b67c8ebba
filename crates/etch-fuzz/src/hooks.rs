//! `hook_output`: arbitrary bytes as what a hook printed, read by both
//! protocols (etch's own and Claude Code's) for an event and an exit the
//! input picks. Reading a hook's output never panics, whatever it
//! printed.

use std::time::Duration;

use etch_hooks::HookEvent;
use etch_hooks::process::{Exit, Finished};

/// Checks one input.
pub fn check(data: &[u8]) {
    let [event, exit, rest @ ..] = data else {
        return;
    };
    let event = HookEvent::ALL[usize::from(*event) % HookEvent::ALL.len()];
    let exit = match exit % 6 {
        0 => Exit::Code(0),
        1 => Exit::Code(2),
        2 => Exit::Code(1),
        3 => Exit::Signal(9),
        4 => Exit::TimedOut,
        _ => Exit::Overflowed,
    };
    let split = rest.len() / 2;
    let finished = Finished {
        exit,
        stdout: rest[..split].to_vec(),
        stderr: String::from_utf8_lossy(&rest[split..]).into_owned(),
        elapsed: Duration::from_millis(5),
    };
    let _ = etch_hooks::outcome::interpret(event, &finished, 30);
    let envelope = serde_json::json!({
        "event": "PreToolUse",
        "tool": {"name": "bash", "arguments": {"command": "ls"}},
        "prompt": "hi",
    });
    let _ = etch_hooks::claude::interpret(event, &finished, 30, &envelope);
}
