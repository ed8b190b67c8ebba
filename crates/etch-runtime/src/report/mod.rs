//! Reports for people, shared by the command line and the chat: a
//! session's status (`status`) and what its context holds (`context`).
//! They return text; they must not know where it goes.

pub mod context;
pub mod status;

pub use status::status_text;
