//! The typed errors of etch-auth.
//!
//! This module owns the error messages: each names the file or URL involved and
//! tells the user what to do. It must never carry a token or key, so no variant
//! holds a [`Secret`](crate::Secret) or a raw response body from a successful
//! token response.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while storing, loading, obtaining or refreshing
/// OpenAI credentials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The credential file exists but could not be read.
    #[error(
        "cannot read the credential file {path}: {source}; check its permissions or run `etch auth login` again"
    )]
    Read {
        /// The credential file.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },
    /// The credential file is not in the expected format.
    #[error("the credential file {path} is malformed ({reason}); run `etch auth login` again")]
    Malformed {
        /// The credential file.
        path: PathBuf,
        /// What is wrong with it (never its contents).
        reason: String,
    },
    /// The credential file or its directory could not be written.
    #[error(
        "cannot write the credential file {path}: {source}; check that the directory is writable"
    )]
    Write {
        /// The file or directory being written.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },
    /// The credential file could not be removed.
    #[error("cannot delete the credential file {path}: {source}; remove it by hand")]
    Delete {
        /// The credential file.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },
    /// A refresh was requested but there is no stored login.
    #[error("no stored OpenAI login at {path}; run `etch auth login`")]
    NotLoggedIn {
        /// Where the credential file was expected.
        path: PathBuf,
    },
    /// The HTTP client could not be built.
    #[error("cannot set up the HTTP client for OpenAI auth: {0}")]
    Client(String),
    /// A request to the auth server failed before a response arrived.
    #[error("cannot reach the OpenAI auth server at {url}: {message}; check the network and retry")]
    Network {
        /// The endpoint.
        url: String,
        /// The transport error.
        message: String,
    },
    /// The auth server answered with an unexpected status.
    #[error("the OpenAI auth server at {url} answered {status}: {detail}; retry `etch auth login`")]
    Status {
        /// The endpoint.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// A short excerpt of the error body (error responses carry no tokens).
        detail: String,
    },
    /// The auth server answered 2xx with a body this crate cannot use.
    #[error(
        "the OpenAI auth server at {url} sent an unexpected response ({reason}); retry `etch auth login`"
    )]
    InvalidResponse {
        /// The endpoint.
        url: String,
        /// What was missing or wrong (never the body itself, which may hold tokens).
        reason: String,
    },
    /// The refresh token was rejected: the login is no longer valid.
    #[error(
        "the stored OpenAI login was rejected by {url} (status {status}); run `etch auth login` again"
    )]
    RefreshRejected {
        /// The token endpoint.
        url: String,
        /// The HTTP status code.
        status: u16,
    },
    /// The user did not finish the device login before the deadline.
    #[error(
        "the device login was not completed within {minutes} minutes; run `etch auth login` again and enter the code sooner"
    )]
    LoginTimedOut {
        /// The deadline in whole minutes.
        minutes: u64,
    },
}
