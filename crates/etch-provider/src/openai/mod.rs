//! The OpenAI provider: Chat Completions (every OpenAI-compatible server)
//! and Responses over HTTP/SSE and WebSocket.

pub mod chat;
pub mod chat_decode;
pub mod chat_request;
pub mod continuation;
pub mod responses;
pub mod responses_decode;
pub mod responses_request;
pub mod responses_ws;
