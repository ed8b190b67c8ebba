//! JSON-RPC 2.0 as ACP uses it, one message per line: what came in
//! (a request, a notification or the answer to one of ours) and the
//! lines that go out. The payloads are ACP's published types; the
//! envelope and its errors are plain JSON-RPC, written here because the
//! schema crate's envelope types are generic over payloads this crate
//! keeps as JSON until the method is known.
//!
//! This module must not know what a method means.

use agent_client_protocol_schema::v1::{Error, RequestId};
use serde::Serialize;
use serde_json::{Value, json};

/// One message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A call that wants an answer.
    Request {
        /// Its id, echoed in the answer.
        id: RequestId,
        /// The method.
        method: String,
        /// Its parameters (`null` when it had none).
        params: Value,
    },
    /// A call that wants none.
    Notification {
        /// The method.
        method: String,
        /// Its parameters.
        params: Value,
    },
    /// The answer to a request of ours.
    Response {
        /// The id we gave it.
        id: RequestId,
        /// The result, or the client's error.
        result: Result<Value, Error>,
    },
}

/// A line that is not a message, with the id to answer when it had one.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    /// The request's id, when one could be read.
    pub id: Option<RequestId>,
    /// The JSON-RPC error to answer with.
    pub error: Error,
}

/// Reads one line. The error is the answer to send, at once: boxing
/// it would only add an allocation.
#[allow(clippy::result_large_err)]
pub fn parse(line: &[u8]) -> Result<Message, Unreadable> {
    let value: Value = serde_json::from_slice(line).map_err(|e| Unreadable {
        id: None,
        error: Error::new(-32700, format!("parse error: the line is not JSON ({e})")),
    })?;
    let Value::Object(mut object) = value else {
        return Err(invalid(
            None,
            "a message must be a JSON object (batches are not supported)",
        ));
    };
    let id = match object.remove("id") {
        None => None,
        Some(raw) => Some(
            serde_json::from_value::<RequestId>(raw)
                .map_err(|_| invalid(None, "the id must be a string, a number or null"))?,
        ),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "the message must carry \"jsonrpc\": \"2.0\""));
    }
    let params = object.remove("params").unwrap_or(Value::Null);
    match (object.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method, params }),
        (Some(_), id) => Err(invalid(id, "the method must be a string")),
        (None, Some(id)) => {
            if let Some(error) = object.remove("error") {
                let error = serde_json::from_value::<Error>(error)
                    .unwrap_or_else(|e| Error::new(-32603, format!("unreadable error ({e})")));
                Ok(Message::Response {
                    id,
                    result: Err(error),
                })
            } else if let Some(result) = object.remove("result") {
                Ok(Message::Response {
                    id,
                    result: Ok(result),
                })
            } else {
                Err(invalid(
                    Some(id),
                    "a message needs a method, or a result or error",
                ))
            }
        }
        (None, None) => Err(invalid(None, "a message needs a method")),
    }
}

/// An invalid-request error for `id`.
fn invalid(id: Option<RequestId>, why: &str) -> Unreadable {
    Unreadable {
        id,
        error: Error::new(-32600, format!("invalid request: {why}")),
    }
}

/// The line answering request `id`.
pub fn response(id: &RequestId, result: Result<Value, Error>) -> String {
    let body = match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    };
    body.to_string()
}

/// The line answering a message whose id could not be read.
pub fn error_without_id(error: &Error) -> String {
    json!({"jsonrpc": "2.0", "id": null, "error": error}).to_string()
}

/// A notification line.
pub fn notification(method: &str, params: &impl Serialize) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// A request line of ours, with id `id`.
pub fn request(id: i64, method: &str, params: &impl Serialize) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A result as JSON (the ACP types are plain data: encoding them cannot
/// fail, but an answer must go out whatever happens).
pub fn to_value(result: &impl Serialize) -> Result<Value, Error> {
    serde_json::to_value(result)
        .map_err(|e| Error::new(-32603, format!("could not encode the answer: {e}")))
}

/// The error for a method etch does not serve.
pub fn method_not_found(method: &str) -> Error {
    Error::new(-32601, format!("method not found: {method}")).data(json!({"method": method}))
}

/// The error for parameters that do not fit the method.
pub fn invalid_params(method: &str, why: &impl std::fmt::Display) -> Error {
    Error::new(-32602, format!("invalid params for {method}: {why}"))
}

/// A failure while serving a request.
pub fn internal(message: impl Into<String>) -> Error {
    Error::new(-32603, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests, notifications and answers are told apart by their keys.
    #[test]
    fn messages_are_classified() {
        assert_eq!(
            parse(
                br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#
            ),
            Ok(Message::Request {
                id: RequestId::Number(1),
                method: "initialize".into(),
                params: json!({"protocolVersion": 1}),
            })
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#),
            Ok(Message::Notification {
                method: "session/cancel".into(),
                params: json!({"sessionId": "s"}),
            })
        );
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":"a","result":{"outcome":{"outcome":"cancelled"}}}"#),
            Ok(Message::Response {
                id: RequestId::Str(_),
                result: Ok(_)
            })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"x"}}"#),
            Ok(Message::Response { result: Err(_), .. })
        ));
    }

    /// Bad lines become the JSON-RPC error to answer, with the id when
    /// one was readable.
    #[test]
    fn bad_lines_are_errors_with_their_id() {
        let parse_error = parse(b"{not json").unwrap_err();
        assert_eq!(parse_error.id, None);
        assert_eq!(i32::from(parse_error.error.code), -32700);
        let no_version = parse(br#"{"id":3,"method":"x"}"#).unwrap_err();
        assert_eq!(no_version.id, Some(RequestId::Number(3)));
        assert_eq!(i32::from(no_version.error.code), -32600);
        assert_eq!(parse(b"[1]").unwrap_err().id, None);
        let line = response(&RequestId::Number(3), Err(method_not_found("nope")));
        let back: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back["error"]["code"], -32601);
        assert_eq!(back["error"]["data"]["method"], "nope");
        assert_eq!(back["id"], 3);
    }
}
