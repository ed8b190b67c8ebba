//! Why attaching failed.

/// Why a session could not be attached.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The URL is not one of etch serve's.
    #[error(
        "--attach {url:?}: {why}; give the URL etch serve printed (http://127.0.0.1:7411/?token=...), \
         optionally with /v1/sessions/ID or #ID for a session"
    )]
    Url {
        /// What was given.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// No token: neither in the URL nor in `ETCH_SERVE_TOKEN`.
    #[error(
        "--attach needs the server's token: keep the ?token=... of the URL etch serve printed, \
         or set ETCH_SERVE_TOKEN"
    )]
    NoToken,
    /// The server could not be reached or answered badly.
    #[error("etch serve at {base}: {why}")]
    Server {
        /// The server.
        base: String,
        /// What happened.
        why: String,
    },
}
