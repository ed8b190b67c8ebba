//! The one HTTP client stack every network provider shares: reqwest over
//! rustls with the `ring` crypto provider, the retry policy of C34, and the
//! idle timeout that turns a stalled stream into a clear error.
//!
//! It knows nothing about any vendor's JSON; providers hand it a request
//! and decide what a failure body means.

use std::sync::OnceLock;
use std::time::Duration;

use etch_model::{ErrorKind, ModelError};
use tokio_util::sync::CancellationToken;

/// Retry and timeout settings of one provider (C34).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 3).
    pub max_retries: u32,
    /// First backoff delay; doubles each retry (default 2 s).
    pub base_delay: Duration,
    /// Longest wait honoured from a `Retry-After` header.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(2000),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// How long to wait before retry number `attempt` (1-based), honouring a
    /// server's `Retry-After` seconds when it gave one.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        match retry_after {
            Some(wait) => wait.min(self.max_retry_after),
            None => self
                .base_delay
                .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1))),
        }
    }
}

/// The future a [`CredentialSource`] returns: request headers, or why the
/// credentials cannot be used.
pub type HeadersFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<(String, String)>, ModelError>> + Send + 'a>,
>;

/// Supplies request headers carrying credentials right before each request
/// (P-AUTH-01), so a login token that expires during a long tool phase is
/// refreshed instead of failing the next pass. Implemented outside this
/// crate (the binary wires the stored ChatGPT/Codex login).
pub trait CredentialSource: Send + Sync {
    /// The headers to add to the next request, e.g. `authorization`.
    fn headers(&self) -> HeadersFuture<'_>;
}

/// How many characters of a bad frame or error body a message quotes, so a
/// huge payload cannot flood the terminal.
pub const QUOTE_CHARS: usize = 200;

/// The first [`QUOTE_CHARS`] characters of `text`, with `…` if cut: how
/// every provider quotes a payload in an error message.
pub fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Default idle timeout: how long a stream may send nothing before it is
/// declared stalled.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The default cap on one assembled message: the text, reasoning and
/// tool-call arguments of one pass. A model's own output limit (on the
/// order of 128k tokens, well under a megabyte) never comes near it, and
/// a tool call writing a large file has room for tens of megabytes; yet
/// the message is held in memory and written as one session line, so a
/// server streaming without end is stopped at a size the machine and the
/// log can carry. It is four default frames, so one frame never decides it.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 << 20;

/// How much one model pass may make etch hold (`[provider]
/// max_frame_bytes` and `max_message_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Most bytes of one stream frame: an SSE event or a WebSocket message.
    pub max_frame_bytes: usize,
    /// Most bytes of text, reasoning and tool-call arguments (plus native
    /// items) of one pass.
    pub max_message_bytes: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_frame_bytes: crate::sse::DEFAULT_MAX_FRAME_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

/// The error of a frame past `[provider] max_frame_bytes`: not retried
/// (the same request would likely bring the same frame), naming the cap,
/// the size reached and the key.
pub fn frame_too_large(url: &str, limit: usize, reached: usize) -> ModelError {
    ModelError::new(
        ErrorKind::Protocol,
        format!(
            "{url} sent a stream frame of at least {reached} bytes, past [provider] \
             max_frame_bytes = {limit}; etch stopped reading it. Raise max_frame_bytes if \
             frames this large are expected from this server"
        ),
    )
}

/// The shared HTTP client, built once per process.
pub fn client() -> Result<reqwest::Client, ModelError> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| build(reqwest::Client::builder()))
        .clone()
        .map_err(|message| ModelError::new(ErrorKind::Other, message))
}

/// The client for requests to `url`: for a plain `http://` server (a
/// local llama.cpp, vLLM or Ollama) one without the system's certificate
/// roots, whose loading is most of setting a client up and which such a
/// server never needs; [`client`] for everything else.
pub fn client_for(url: &str) -> Result<reqwest::Client, ModelError> {
    static PLAIN: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    let plain = url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    if !plain {
        return client();
    }
    PLAIN
        .get_or_init(|| build(reqwest::Client::builder().tls_certs_only(std::iter::empty())))
        .clone()
        .map_err(|message| ModelError::new(ErrorKind::Other, message))
}

/// `builder` with etch's settings.
fn build(builder: reqwest::ClientBuilder) -> Result<reqwest::Client, String> {
    // A provider may already be installed by another part of the
    // process; either way one is in place afterwards.
    let _ = rustls::crypto::ring::default_provider().install_default();
    builder
        .connect_timeout(Duration::from_secs(30))
        .tcp_nodelay(true)
        .user_agent(concat!("etch/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// Parses a `Retry-After` header given in seconds.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// Sleeps for `delay` unless cancelled first; returns false when cancelled.
pub async fn sleep_unless_cancelled(delay: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(delay) => true,
        () = cancel.cancelled() => false,
    }
}

/// Whether `err` is a request lost on a connection the server had
/// already closed, before any byte of an answer came: a keep-alive
/// connection that sat idle in the pool past the server's own idle
/// timeout (llama.cpp closes idle connections after 5 s) and was reused.
/// Such a request is sent again at once on a fresh connection
/// ([`fresh_client_for`]): it is no sign of a server in trouble, so it
/// waits no backoff and says nothing. A failure to connect or a timeout
/// is not this.
pub fn is_stale_connection(err: &reqwest::Error) -> bool {
    if err.is_connect() || err.is_timeout() || err.is_status() {
        return false;
    }
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        if let Some(hyper) = inner.downcast_ref::<hyper::Error>()
            && hyper.is_incomplete_message()
        {
            return true;
        }
        if let Some(io) = inner.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionAborted
            )
        {
            return true;
        }
        source = inner.source();
    }
    false
}

/// A client for `url` that keeps no connection for later: each request
/// opens its own, so the retry of a request lost on a stale pooled
/// connection ([`is_stale_connection`]) cannot meet another one.
pub fn fresh_client_for(url: &str) -> Result<reqwest::Client, ModelError> {
    let plain = url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    let builder = reqwest::Client::builder().pool_max_idle_per_host(0);
    let builder = if plain {
        builder.tls_certs_only(std::iter::empty())
    } else {
        builder
    };
    build(builder).map_err(|message| ModelError::new(ErrorKind::Other, message))
}

/// Describes a transport failure with the URL, so "connection refused"
/// names what it could not reach.
pub fn transport_error(url: &str, err: &reqwest::Error) -> ModelError {
    let mut message = format!("cannot reach {url}: {err}");
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    // A TLS handshake answered with plain HTTP bytes is a wrong URL, not a
    // passing failure: retrying it only makes the user wait.
    if url.starts_with("https://") && message.contains("InvalidContentType") {
        message.push_str(
            " (the server does not speak TLS here: if it is a local server, use http:// in the base URL)",
        );
        return ModelError::new(ErrorKind::InvalidRequest, message);
    }
    ModelError::new(ErrorKind::Transient, message)
}

/// Checks a provider base URL before any request: an absolute `http://` or
/// `https://` URL with a host, so that a typo fails at once with a usage
/// error instead of a run of retries against nothing.
pub fn check_base_url(url: &str) -> Result<(), String> {
    // `localhost:8080/v1` parses with "localhost" as its scheme, and
    // `127.0.0.1:8080` not at all: both are a missing scheme.
    if !url.contains("://") {
        return Err(format!(
            "base URL \"{url}\" has no scheme: write it as http://{url} (local servers) or https://{url}"
        ));
    }
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("base URL \"{url}\" is not a valid URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "base URL \"{url}\" must start with http:// or https://, not {}://",
            parsed.scheme()
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("base URL \"{url}\" names no host"));
    }
    // The URL is recorded in the session and shown on stderr: a password
    // in it would leak there.
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!(
            "base URL for host {} must not carry a user name or password; pass the key with \
             --api-key or an environment variable",
            parsed.host_str().unwrap_or_default()
        ));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!(
            "base URL \"{url}\" must not carry a query or fragment; etch appends the API path to it"
        ));
    }
    Ok(())
}

/// The host of `url`, lower-cased, if it parses.
pub fn host_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Base URLs a user mistypes fail with a message that says how to fix
    /// them; good ones pass.
    #[test]
    fn base_urls_are_checked() {
        assert!(check_base_url("http://127.0.0.1:8080/v1").is_ok());
        assert!(check_base_url("https://api.openai.com/v1").is_ok());
        let err = check_base_url("localhost:8080/v1").unwrap_err();
        assert!(
            err.contains("no scheme") && err.contains("http://localhost"),
            "{err}"
        );
        let err = check_base_url("127.0.0.1:8080/v1").unwrap_err();
        assert!(err.contains("no scheme"), "{err}");
        let err = check_base_url("ftp://host/v1").unwrap_err();
        assert!(err.contains("ftp://"), "{err}");
        assert!(check_base_url("http://").is_err());
        assert!(check_base_url("http://h/v1?x=1").is_err());
        let err = check_base_url("http://u:sekrit@h/v1").unwrap_err();
        assert!(
            !err.contains("sekrit") && err.contains("user name or password"),
            "{err}"
        );
        assert!(check_base_url("").is_err());
        assert_eq!(
            host_of("https://API.openai.com/v1").as_deref(),
            Some("api.openai.com")
        );
    }

    /// C34: 2 s, 4 s, 8 s; Retry-After wins but is capped.
    #[test]
    fn backoff_and_retry_after() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, None), Duration::from_secs(2));
        assert_eq!(p.delay(3, None), Duration::from_secs(8));
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(5))),
            Duration::from_secs(5)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(600))),
            Duration::from_secs(60)
        );
    }

    /// Retry-After in seconds is parsed; dates and garbage are ignored.
    #[test]
    fn parses_retry_after_seconds() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert(reqwest::header::RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }
}
