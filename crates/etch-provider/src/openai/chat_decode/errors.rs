//! Provider error classification and error bodies (E-MOD-23): turns an
//! HTTP status, a provider message and its code or type into an
//! [`ErrorKind`], and a non-2xx reply body or an in-stream `error` value into
//! a typed [`ModelError`] with the provider's own message.
//!
//! It owns the wording and codes that mean a context overflow and the error
//! shapes of OpenAI-compatible servers (also used by the Responses and
//! Anthropic decoders). It must not know about stream chunks, SSE framing,
//! HTTP transport or retries: callers hand it a status and text and decide
//! what to do with the error.

use etch_model::{ErrorKind, ModelError};
use serde_json::Value;

use crate::http::quote;

/// Lower-case fragments of error messages that mean "the prompt does not fit
/// the context window", across the servers etch talks to.
const OVERFLOW_PHRASES: &[&str] = &[
    // llama.cpp: "request (9030 tokens) exceeds the available context size
    // (8192 tokens), try increasing it".
    "exceeds the available context size",
    // OpenAI, vLLM, OpenRouter, Mistral, Ollama: "This model's maximum
    // context length is 8192 tokens…".
    "maximum context length",
    "context length exceeded",
    "context_length_exceeded",
    // OpenAI Responses and others: "Your input exceeds the context window".
    "exceeds the context window",
    "context window exceeded",
    // Anthropic: "prompt is too long: 210000 tokens > 200000 maximum".
    "prompt is too long",
    // LM Studio and older llama.cpp builds.
    "greater than the context length",
    // Gemini's OpenAI-compatible endpoint.
    "exceeds the maximum number of tokens allowed",
];

/// Error codes or types that mean a context overflow without the wording.
const OVERFLOW_CODES: &[&str] = &["context_length_exceeded", "exceed_context_size_error"];

/// Classifies a provider error from its HTTP status (if any), message and
/// code (or type).
///
/// Context-overflow wording wins over the status (servers report it as 400
/// or 413); then 429, 408 and 5xx are `Transient`, 401/403 `Auth`, other 4xx
/// `InvalidRequest`. Without a status (an in-stream error) the code or type
/// decides. An exhausted quota (`insufficient_quota`, sent with 429) is not
/// worth retrying and is `Other`.
pub fn classify_error_message(status: Option<u16>, message: &str, code: Option<&str>) -> ErrorKind {
    let code = code.map(str::to_ascii_lowercase);
    let code = code.as_deref();
    if code.is_some_and(|c| OVERFLOW_CODES.contains(&c)) {
        return ErrorKind::ContextOverflow;
    }
    let lower = message.to_ascii_lowercase();
    if OVERFLOW_PHRASES.iter().any(|phrase| lower.contains(phrase)) {
        return ErrorKind::ContextOverflow;
    }
    if code == Some("insufficient_quota") {
        return ErrorKind::Other;
    }
    match status {
        Some(408 | 429 | 500..=599) => ErrorKind::Transient,
        Some(401 | 403) => ErrorKind::Auth,
        Some(400..=499) => ErrorKind::InvalidRequest,
        Some(_) => ErrorKind::Other,
        None => match code {
            Some(
                "rate_limit_exceeded"
                | "rate_limit_error"
                | "server_error"
                | "api_error"
                | "overloaded_error"
                | "timeout"
                | "service_unavailable",
            ) => ErrorKind::Transient,
            Some(
                "invalid_api_key"
                | "authentication_error"
                | "permission_error"
                | "permission_denied"
                | "unauthorized",
            ) => ErrorKind::Auth,
            Some("invalid_request_error" | "not_found_error" | "bad_request") => {
                ErrorKind::InvalidRequest
            }
            _ => ErrorKind::Other,
        },
    }
}

/// Decodes a non-SSE error body (a non-2xx reply, which servers send as plain
/// JSON even when a stream was asked for) into a typed error.
///
/// Understands OpenAI's and llama.cpp's `{"error": {"message", "type",
/// "code"}}`, `{"error": "text"}` (Ollama), Anthropic's `{"type": "error",
/// "error": {…}}`, and top-level `{"message"}` / `{"detail"}` (older vLLM,
/// FastAPI servers). The message is the provider's own text; anything else
/// (plain text, HTML from a proxy) is quoted after `HTTP <status>:`.
pub fn decode_error_body(status: u16, body: &str) -> ModelError {
    let body = body.trim();
    if body.is_empty() {
        return ModelError::new(
            classify_error_message(Some(status), "", None),
            format!("HTTP {status} with an empty body"),
        );
    }
    if let Ok(value) = serde_json::from_str::<Value>(body)
        && let Some(error) = error_from_value(Some(status), &value, true)
    {
        return error;
    }
    generic_error(Some(status), body)
}

/// An error for a body or object whose message could not be found: the text
/// itself, quoted.
pub(super) fn generic_error(status: Option<u16>, text: &str) -> ModelError {
    let kind = classify_error_message(status, text, None);
    match status {
        Some(status) => ModelError::new(kind, format!("HTTP {status}: {}", quote(text))),
        None => ModelError::new(kind, format!("provider error: {}", quote(text))),
    }
}

/// Reads the provider error out of a JSON value: `{"error": …}`, or with
/// `top_level` also `{"message": …}` / `{"detail": …}` at the top. A numeric
/// `code` (llama.cpp puts the HTTP status there) stands in for a missing
/// status; a string `code` (or else `type`) is the classification hint.
pub(super) fn error_from_value(
    status: Option<u16>,
    value: &Value,
    top_level: bool,
) -> Option<ModelError> {
    let (object, message) = match value.get("error").unwrap_or(value) {
        Value::String(text) => (None, text.clone()),
        Value::Object(object) => {
            let message = ["message", "detail", "error"]
                .iter()
                .find_map(|key| object.get(*key).and_then(Value::as_str))
                .map(str::to_owned);
            let is_error = value.get("error").is_some() || top_level;
            match message {
                Some(message) if is_error => (Some(object), message),
                // An error object without a readable message: show its JSON.
                None if value.get("error").is_some() => (Some(object), quote(&value.to_string())),
                _ => return None,
            }
        }
        _ => return None,
    };
    let code = object.and_then(|o| o.get("code"));
    let numeric = code
        .and_then(|c| {
            c.as_u64()
                .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
        })
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| (400..=599).contains(n));
    let hint = code
        .and_then(Value::as_str)
        .filter(|_| numeric.is_none())
        .or_else(|| object.and_then(|o| o.get("type")).and_then(Value::as_str));
    let message = if message.trim().is_empty() {
        quote(&value.to_string())
    } else {
        message
    };
    let kind = classify_error_message(status.or(numeric), &message, hint);
    Some(ModelError::new(kind, message))
}

#[cfg(test)]
mod tests {
    use etch_model::ErrorKind;

    use super::{classify_error_message, decode_error_body};
    use crate::http::QUOTE_CHARS;

    /// The classifier: overflow wording and codes first, then the status,
    /// then code hints for in-stream errors.
    #[test]
    fn classifies_errors() {
        use ErrorKind::{Auth, ContextOverflow, InvalidRequest, Other, Transient};
        let cases: &[(Option<u16>, &str, Option<&str>, ErrorKind)] = &[
            (
                Some(400),
                "request (9030 tokens) exceeds the available context size (8192 tokens)",
                None,
                ContextOverflow,
            ),
            (
                Some(400),
                "This model's maximum context length is 8192 tokens",
                None,
                ContextOverflow,
            ),
            (
                Some(400),
                "bad",
                Some("context_length_exceeded"),
                ContextOverflow,
            ),
            (
                Some(400),
                "prompt is too long: 210000 tokens > 200000 maximum",
                None,
                ContextOverflow,
            ),
            (
                None,
                "x",
                Some("exceed_context_size_error"),
                ContextOverflow,
            ),
            (
                Some(429),
                "slow down",
                Some("rate_limit_exceeded"),
                Transient,
            ),
            (
                Some(429),
                "You exceeded your current quota",
                Some("insufficient_quota"),
                Other,
            ),
            (
                Some(500),
                "[json.exception.parse_error.101] parse error",
                None,
                Transient,
            ),
            (Some(503), "overloaded", None, Transient),
            (Some(408), "timeout", None, Transient),
            (Some(401), "Incorrect API key", None, Auth),
            (Some(403), "forbidden", None, Auth),
            (Some(400), "'messages' is required", None, InvalidRequest),
            (Some(404), "model not found", None, InvalidRequest),
            (Some(302), "moved", None, Other),
            (None, "x", Some("server_error"), Transient),
            (None, "x", Some("authentication_error"), Auth),
            (None, "x", Some("invalid_request_error"), InvalidRequest),
            (None, "x", None, Other),
        ];
        for (status, message, code, expected) in cases {
            assert_eq!(
                classify_error_message(*status, message, *code),
                *expected,
                "{status:?} {message} {code:?}"
            );
        }
    }

    /// Error bodies in the shapes real servers send.
    #[test]
    fn decodes_error_bodies() {
        let openai = r#"{"error":{"message":"Incorrect API key provided: sk-…","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        let err = decode_error_body(401, openai);
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::Auth, "Incorrect API key provided: sk-…")
        );
        let err = decode_error_body(404, r#"{"error":"model 'qwen' not found"}"#);
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::InvalidRequest, "model 'qwen' not found")
        );
        let anthropic =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(decode_error_body(529, anthropic).kind, ErrorKind::Transient);
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(
            decode_error_body(400, vllm).kind,
            ErrorKind::ContextOverflow
        );
        let err = decode_error_body(422, r#"{"detail":"Unprocessable"}"#);
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::InvalidRequest, "Unprocessable")
        );
        let err = decode_error_body(502, "<html><body>Bad Gateway</body></html>\n");
        assert_eq!(
            (err.kind, err.message.as_str()),
            (
                ErrorKind::Transient,
                "HTTP 502: <html><body>Bad Gateway</body></html>"
            )
        );
        let err = decode_error_body(500, "  ");
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::Transient, "HTTP 500 with an empty body")
        );
        let err = decode_error_body(400, r#"{"unexpected":true}"#);
        assert_eq!(err.message, r#"HTTP 400: {"unexpected":true}"#);
        let err = decode_error_body(400, &"x".repeat(1000));
        assert_eq!(
            err.message.chars().count(),
            "HTTP 400: ".len() + QUOTE_CHARS + 1
        );
    }
}
