//! `acp_rpc`: arbitrary bytes as one line from an ACP client. Every line
//! is a message or an error to answer; a request's answer is one line
//! of JSON.

use etch_acp::{RpcMessage, parse_rpc_line};

/// Checks one input.
pub fn check(data: &[u8]) {
    match parse_rpc_line(data) {
        Ok(RpcMessage::Request { id, .. }) => {
            let line = etch_acp::rpc_response(&id, Ok(serde_json::Value::Null));
            assert!(!line.contains('\n'), "an answer spans lines: {line}");
            assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
        }
        Ok(_) => {}
        Err(unreadable) => {
            assert!(!unreadable.error.message.is_empty());
        }
    }
}
