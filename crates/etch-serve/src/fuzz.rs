//! The server's reading of request bodies, public (hidden) for the fuzz
//! target `serve_body` in `etch-fuzz`, so that it runs the code the
//! routes run; nothing else may call it.

use axum::body::Bytes;
use axum::response::IntoResponse as _;

use crate::api;
use crate::routes::body;

/// The routes that take a body, in the order [`parse_body`] numbers
/// them.
pub const ROUTES: [&str; 4] = [
    "POST /v1/sessions",
    "POST /v1/sessions/{id}/prompt",
    "POST /v1/sessions/{id}/commands",
    "POST /v1/sessions/{id}/name",
];

/// What a client that sent `bytes` to route `route` (an index into
/// [`ROUTES`], taken modulo their number) gets before the request goes
/// on: `Ok` when the body is the JSON expected, else the HTTP status and
/// the body of the error response.
///
/// # Errors
/// The status and body of the error response.
pub async fn parse_body(route: usize, bytes: &[u8]) -> Result<(), (u16, Vec<u8>)> {
    let bytes = Ok(Bytes::copy_from_slice(bytes));
    let parsed = match route % ROUTES.len() {
        0 => body::<api::NewSession>(bytes).map(drop),
        1 => body::<api::Prompt>(bytes).map(drop),
        2 => body::<etch_protocol::Command>(bytes).map(drop),
        _ => body::<api::Name>(bytes).map(drop),
    };
    match parsed {
        Ok(()) => Ok(()),
        Err(error) => {
            let response = error.into_response();
            let status = response.status().as_u16();
            let body = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .map_err(|e| (status, e.to_string().into_bytes()))?;
            Err((status, body.to_vec()))
        }
    }
}
