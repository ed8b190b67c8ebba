//! Provider-neutral model types: the contract between the agent loop and
//! every model provider.
//!
//! This crate owns the shapes that cross the provider boundary: the
//! [`ModelRequest`] the core builds (system layers, messages, tool specs,
//! options), the [`StreamEvent`]s a provider emits while it answers, and the
//! [`ModelClient`] trait a provider implements. It must not know about HTTP,
//! JSON wire formats of any vendor, the session log or terminal rendering:
//! providers translate to and from these types, the core consumes them.

pub mod client;
pub mod content;
pub mod image;
pub mod message;
pub mod request;
pub mod stream;

pub use client::{ModelClient, ModelStream, ModelsFuture, StreamSender, stream_channel};
pub use content::{ContentPart, ToolCall};
pub use image::{Image, MediaType};
pub use message::{Message, ProviderItem};
pub use request::{ModelRequest, RequestOptions, SystemLayer, ToolSpec};
pub use stream::{ErrorKind, Metrics, ModelError, StopReason, StreamEvent, Usage};
