//! Who may talk to the server: every route but `/health` needs the
//! token, as `Authorization: Bearer TOKEN` or the `etch_token` cookie the
//! web page keeps (an `EventSource` cannot set headers); a request whose
//! `Origin` is not the server's own is refused (a page on another site
//! must not drive a local agent through the user's browser).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::{ApiError, ServeError};
use crate::state::App;

/// The cookie the web page keeps the token in.
pub const COOKIE: &str = "etch_token";

/// A fresh token: 32 random bytes as hex.
pub fn new_token() -> Result<String, ServeError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| ServeError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Refuses foreign origins and requests without the token.
pub async fn guard(
    State(app): State<Arc<App>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let headers = request.headers();
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !app.options.origins.iter().any(|o| o == origin) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "foreign_origin",
                format!(
                    "requests from the origin {origin:?} are refused; use the server's own page"
                ),
            ));
        }
    }
    if request.uri().path() == "/health" {
        return Ok(next.run(request).await);
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='));
    let given = bearer.or(cookie);
    if !given.is_some_and(|t| same(t.as_bytes(), app.options.token.as_bytes())) {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this server needs its token: send Authorization: Bearer TOKEN (etch serve printed it)",
        ));
    }
    Ok(next.run(request).await)
}

/// Compares without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_hex_and_compared_whole() {
        let a = new_token().unwrap();
        let b = new_token().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert!(same(a.as_bytes(), a.as_bytes()));
        assert!(!same(a.as_bytes(), b.as_bytes()));
        assert!(!same(a.as_bytes(), &a.as_bytes()[..63]));
    }
}
