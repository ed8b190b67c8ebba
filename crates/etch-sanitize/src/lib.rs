//! Text from outside etch, made safe to show a person.
//!
//! A cloned repository's configuration, a model's reply, a file the
//! model read and a server's error body can all hold escape sequences.
//! Written to a terminal as they are, those would clear lines, move the
//! cursor, set the window title, write the clipboard (OSC 52) or hide
//! text, and so show the person something other than what is there: a
//! forged hook command in `etch trust`, say. Two treatments, for two
//! kinds of text:
//!
//! - [`sanitize`], for prose (answers, tool output, transcripts, titles):
//!   escape sequences are removed whole, other control characters
//!   dropped; newlines and tabs stay.
//! - [`visible`], for what must be read exactly (commands, paths, names,
//!   values a person is asked to trust): nothing is removed, every
//!   control character and direction override is shown as an escape
//!   (`\e`, `\r`, `\u{202e}`), so what is shown is what runs.
//!
//! This crate owns only these rules; it must not know where text comes
//! from or goes. Colour etch adds itself is added after this, by the
//! front end.

mod prose;
mod shown;

pub use prose::{is_bidi_control, sanitize};
pub use shown::{needs_escaping, visible, visible_lines};
