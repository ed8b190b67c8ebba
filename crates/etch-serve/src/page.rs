//! The web page: one HTML file, one stylesheet and one script, embedded
//! in the binary (no build step, nothing fetched from elsewhere). The
//! page is opened once with the token in its URL (`/?token=...`, as
//! `etch serve` prints it); the server answers with the token in a
//! cookie marked `HttpOnly` and `SameSite=Strict` and sends the browser
//! on to `/`, so the token leaves the address bar and its history, no
//! script can read it, and no other site's page can send it.
//!
//! The page is served with a content security policy that lets it run
//! only its own script and talk only to this server: a model's reply that
//! slipped past the page's text-only drawing still could not load or run
//! anything.

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::auth::COOKIE;

/// The page.
const HTML: &str = include_str!("page/index.html");
/// Its script.
const SCRIPT: &str = include_str!("page/page.js");
/// Its stylesheet.
const STYLE: &str = include_str!("page/page.css");

/// Headers every part of the page carries.
const SECURITY: [(HeaderName, &str); 4] = [
    (
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
         img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::REFERRER_POLICY, "no-referrer"),
    (header::CACHE_CONTROL, "no-store"),
];

/// One embedded file with its type.
fn file(content_type: &'static str, body: &'static str) -> Response {
    let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    for (name, value) in SECURITY {
        response
            .headers_mut()
            .insert(name, HeaderValue::from_static(value));
    }
    response
}

/// `GET /`.
pub async fn index() -> Response {
    file("text/html; charset=utf-8", HTML)
}

/// `GET /page.js`.
pub async fn script() -> Response {
    file("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /page.css`.
pub async fn style() -> Response {
    file("text/css; charset=utf-8", STYLE)
}

/// The answer to `/?token=TOKEN` with the right token: the cookie, and
/// on to `/` (303, so a reload does not resend anything).
pub fn signed_in(token: &str) -> Response {
    let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The answer to the page without a token: what to open instead.
pub fn sign_in_first() -> Response {
    let mut response = file(
        "text/html; charset=utf-8",
        "<!doctype html><meta charset=utf-8><title>etch</title>\
         <p>This page needs the token etch serve printed: open the whole URL it printed \
         (<code>http://…/?token=…</code>) once, and this browser keeps it.</p>",
    );
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response
}
