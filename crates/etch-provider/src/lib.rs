//! Model providers: adapters from vendor APIs to the provider-neutral
//! [`etch_model::ModelClient`] stream.
//!
//! Each provider lives in its own module and knows only its own wire format
//! and `etch-model` types; none knows about sessions, tools or the loop. The
//! `echo` provider is the deterministic offline fixture (G9); `sse` is the
//! frame reader every HTTP streaming provider shares.

pub mod anthropic;
pub mod driver;
pub mod echo;
pub mod http;
pub mod openai;
pub mod sse;

pub use echo::EchoClient;
