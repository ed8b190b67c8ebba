//! etch's interactive terminal chat: one more front end on the runtime's
//! session service (`etch_runtime::service`), holding no agent logic of
//! its own. Prompts, steering, aborts and session commands go through a
//! session handle as protocol commands; its responses and events come
//! back and are drawn. Replays, trees and lists are the runtime's
//! projections (`etch_protocol::session`): this crate never reads a
//! session file.
//!
//! The conversation is written once into the terminal's own scrollback,
//! so scrolling, search and copy work as in any terminal; only a live area
//! at the bottom (working line, streaming preview, queued prompts,
//! editor, footer) is redrawn, in one synchronized update per frame, at a
//! cost that does not grow with the session (`term::screen`). Everything
//! from outside (files, command output, model text) is sanitized before it
//! reaches the terminal.
//!
//! Layout: `term` (bytes on the terminal), `render` (blocks as rows),
//! `editor` (the prompt editor and its history), `complete` (Tab and `@`
//! completion), `slash` (the slash commands), `live` (the live area),
//! `app` (the state machine: keys and host output in, frames and commands
//! out) and `run` (the terminal session: raw mode, input, signals). This
//! crate must not know how sessions are stored or how models are called.

pub mod app;
pub mod attach;
pub mod choices;
pub mod complete;
pub mod editor;
pub mod export;
pub mod history;
pub mod line;
pub mod render;
pub mod replay;
pub mod run;
pub mod slash;
pub mod slot;
pub mod term;
