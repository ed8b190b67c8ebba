//! Errors: [`ServeError`] for the server as a whole, [`ApiError`] for one
//! request, answered as `{"error":{"code","message"}}` with its status.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// No random bytes for the token.
    #[error("cannot make a token: the system's random source failed: {0}")]
    Random(String),
    /// `[serve] token_file` cannot be used.
    #[error("cannot use the token file {}: {why}", file.display())]
    TokenFile {
        /// The file.
        file: std::path::PathBuf,
        /// Why.
        why: String,
    },
    /// A served root's configuration has errors.
    #[error("the configuration for {} has errors: {errors}", root.display())]
    Config {
        /// The root.
        root: std::path::PathBuf,
        /// What is wrong.
        errors: String,
    },
    /// The 9P socket cannot be made.
    #[error("cannot listen for 9P on {}: {why}", path.display())]
    Socket {
        /// The socket's path.
        path: std::path::PathBuf,
        /// Why.
        why: String,
    },
    /// Serving connections failed.
    #[error("serving HTTP failed: {0}")]
    Serve(#[source] std::io::Error),
}

/// A request's failure: its status, a stable code and what to do.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable, machine-readable code (`not_found`, `bad_json`, ...).
    pub code: &'static str,
    /// What failed and what to do.
    pub message: String,
    /// Seconds to wait before retrying (429).
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// An error with `status`, `code` and `message`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400 with `code`.
    pub fn bad(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 404 for the session `id`.
    pub fn no_session(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "unknown_session",
            format!("no served root has a session with the id {id}; GET /v1/sessions lists them"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = crate::api::ErrorBody {
            error: crate::api::ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
            },
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
