//! The conversation as styled rows: blocks (user, assistant, reasoning,
//! tool batches, notices), markdown, syntax highlighting, tool results
//! and diffs, wrapping, and the few styles they share. Pure functions of
//! their input and a width, so they are snapshot-tested at several
//! widths. This module must not know about the terminal or the session.

pub mod blocks;
pub mod highlight;
pub mod markdown;
pub mod theme;
pub mod tools;
pub mod wrap;
