//! The terminal side of the chat: making outside text safe to show
//! ([`sanitize`]), styled lines as bytes ([`ansi`]), and the inline
//! screen that writes history once and redraws only the live area
//! ([`screen`]). This module must not know what the chat shows.

pub mod ansi;
pub mod sanitize;
pub mod screen;

pub use sanitize::sanitize;
pub use screen::Screen;
