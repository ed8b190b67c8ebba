//! The OpenAI provider: Chat Completions (every OpenAI-compatible server)
//! and, later, Responses over SSE and WebSocket.

pub mod chat;
pub mod chat_decode;
pub mod chat_request;
pub mod responses;
pub mod responses_decode;
pub mod responses_request;
