//! Test support for etch: a scripted fake HTTP server on loopback.
//!
//! Integration tests run the real `etch` binary (or the provider clients) against a
//! [`FakeServer`] that stands in for OpenAI-compatible Chat Completions, OpenAI
//! Responses and Anthropic Messages endpoints. The server answers successive
//! requests with scripted [`Reply`]s (SSE streams, complete bodies, raw bytes,
//! broken or stalled connections, WebSocket exchanges as in the OpenAI Responses
//! WebSocket mode) and records every request — and every WebSocket message — as
//! a [`Recorded`], so a test can assert on exactly what etch sent. The [`frames`]
//! helpers format the streaming wire formats of those APIs so tests need not
//! spell them out.
//!
//! Every model request is also checked against the invariants of
//! [`invariants`] (each tool result follows its call; each image is in its
//! API's shape and of the type it declares): a request that breaks one is
//! answered with 400 and fails the test when the server is dropped, as a
//! real provider would refuse it.
//!
//! This crate owns the HTTP/1.1 plumbing (request parsing, keep-alive, chunked
//! encoding, the WebSocket upgrade), the scripting model and the frame helpers.
//! It must not know etch's own types (providers, sessions, tools, configuration)
//! — only HTTP and the public wire formats of the APIs it imitates — and it uses
//! only std threads and sockets plus `serde_json`, and `tungstenite` for
//! WebSocket framing (its blocking API, no async runtime), so that synchronous
//! tests and tests on any async runtime can use it alike. It binds 127.0.0.1
//! only, never the network.

pub mod frames;
mod http;
pub mod invariants;
mod recorded;
mod reply;
mod server;
mod ws;

pub use frames::{
    anthropic_text, anthropic_tool_uses, chat_text, chat_text_chunks, chat_tool_call,
    chat_tool_calls, responses_function_calls, responses_text, sse_data, sse_event, ws_messages,
};
pub use recorded::Recorded;
pub use reply::{End, Reply, UNSCRIPTED_STATUS, WsEnd};
pub use server::FakeServer;

#[cfg(test)]
mod tests;
