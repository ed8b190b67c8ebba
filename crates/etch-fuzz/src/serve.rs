//! `serve_body`: arbitrary bytes as the body of each `etch serve` route
//! that takes one. A body is the JSON the route expects or is refused
//! with a 400 (or 413) whose body is one JSON error with a code and a
//! message, as every client of the API is promised; nothing panics.

use etch_serve::fuzz::{ROUTES, parse_body};

thread_local! {
    /// A runtime to read the error responses' bodies with, made once.
    static RUNTIME: Option<tokio::runtime::Runtime> = tokio::runtime::Builder::new_current_thread()
        .build()
        .ok();
}

/// Checks one input against every route.
pub fn check(data: &[u8]) {
    RUNTIME.with(|runtime| {
        let Some(runtime) = runtime else {
            panic!("no tokio runtime could be made");
        };
        for (route, name) in ROUTES.iter().enumerate() {
            let Err((status, body)) = runtime.block_on(parse_body(route, data)) else {
                continue;
            };
            assert!(
                status == 400 || status == 413,
                "{name}: a bad body got status {status}"
            );
            let error: serde_json::Value = match serde_json::from_slice(&body) {
                Ok(error) => error,
                Err(e) => panic!("{name}: the error body is not JSON ({e})"),
            };
            let code = error["error"]["code"].as_str().unwrap_or_default();
            let message = error["error"]["message"].as_str().unwrap_or_default();
            assert!(
                !code.is_empty() && !message.is_empty(),
                "{name}: an error without code or message: {error}"
            );
        }
    });
}
