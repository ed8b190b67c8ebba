//! Opening a Responses WebSocket: the URL derived from the HTTP base URL,
//! the handshake with the request's headers over the same rustls stack as
//! HTTP, and what a failed handshake means.
//!
//! It knows nothing about the Responses JSON or continuation: it yields an
//! open socket or a typed error that says what could not be reached.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use etch_model::{ErrorKind, ModelError};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream, tungstenite};

use crate::openai::chat_decode::decode_error_body;

/// An open Responses WebSocket.
pub type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How long the TCP, TLS and WebSocket handshakes together may take, like
/// the HTTP client's connect timeout.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// The WebSocket URL for an HTTP base URL: `http` becomes `ws`, `https`
/// becomes `wss`, and the path gets `/responses` like the SSE endpoint.
pub fn url(base_url: &str) -> Result<String, ModelError> {
    let base = base_url.trim_end_matches('/');
    let rest = if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else if base.starts_with("ws://") || base.starts_with("wss://") {
        base.to_owned()
    } else {
        return Err(ModelError::new(
            ErrorKind::InvalidRequest,
            format!(
                "cannot derive a WebSocket URL from the base URL {base_url}: it must start with http:// or https://"
            ),
        ));
    };
    Ok(format!("{rest}/responses"))
}

/// The TLS settings of every WebSocket: the platform's trust store, like the
/// HTTP client, with the process's `ring` provider.
fn tls() -> Result<Arc<rustls::ClientConfig>, ModelError> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            // The HTTP client installs the provider too; whichever runs first
            // wins and the other is a no-op.
            let _ = rustls::crypto::ring::default_provider().install_default();
            <rustls::ClientConfig as rustls_platform_verifier::ConfigVerifierExt>::with_platform_verifier()
                .map(Arc::new)
                .map_err(|e| format!("cannot set up TLS for WebSockets: {e}"))
        })
        .clone()
        .map_err(|message| ModelError::new(ErrorKind::Other, message))
}

/// Opens a socket to `url` sending `headers` with the upgrade request,
/// within [`HANDSHAKE_TIMEOUT`] or `idle` (the idle timeout), whichever is
/// shorter: like the HTTP driver's wait for response headers, a server
/// that accepts the connection and never answers the upgrade must not
/// hold the pass longer than the user allowed.
///
/// No message (nor frame) from the server may pass `max_frame` bytes:
/// tungstenite refuses a larger one from its header, before reading it,
/// like the SSE reader's `[provider] max_frame_bytes`.
///
/// A refused connection, a timeout or a broken handshake is `Transient`; a
/// server that answers the upgrade with an HTTP status is classified like
/// the same status on the SSE endpoint (401 is `Auth`, 429 and 5xx are
/// `Transient`, other 4xx `InvalidRequest`) with its error body's message.
pub async fn open(
    url: &str,
    headers: &[(String, String)],
    idle: Duration,
    max_frame: usize,
) -> Result<Socket, ModelError> {
    let mut request = url.into_client_request().map_err(|e| {
        ModelError::new(
            ErrorKind::InvalidRequest,
            format!("invalid WebSocket URL {url}: {e}"),
        )
    })?;
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes());
        let value = HeaderValue::from_str(value);
        let (Ok(name), Ok(value)) = (name, value) else {
            // Header values may be credentials: never quote them.
            return Err(ModelError::new(
                ErrorKind::InvalidRequest,
                "a request header is not valid in a WebSocket handshake",
            ));
        };
        request.headers_mut().insert(name, value);
    }
    let connector = if url.starts_with("wss://") {
        Some(Connector::Rustls(tls()?))
    } else {
        Some(Connector::Plain)
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_frame))
        .max_frame_size(Some(max_frame));
    let connecting =
        tokio_tungstenite::connect_async_tls_with_config(request, Some(config), true, connector);
    let deadline = HANDSHAKE_TIMEOUT.min(idle);
    match tokio::time::timeout(deadline, connecting).await {
        Err(_) => {
            let hint = if deadline < HANDSHAKE_TIMEOUT {
                "; raise [provider] idle_timeout_secs if the server is just slow"
            } else {
                ""
            };
            Err(ModelError::new(
                ErrorKind::Transient,
                format!(
                    "the WebSocket handshake with {url} took more than {}{hint}",
                    crate::driver::seconds(deadline)
                ),
            ))
        }
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(err)) => Err(handshake_error(url, &err)),
    }
}

/// Describes a failed handshake.
fn handshake_error(url: &str, err: &tungstenite::Error) -> ModelError {
    if let tungstenite::Error::Http(response) = err {
        let status = response.status();
        let body = response
            .body()
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let decoded = decode_error_body(status.as_u16(), &body);
        return ModelError::new(
            decoded.kind,
            format!(
                "{url} answered the WebSocket upgrade with {status}: {}",
                decoded.message
            ),
        );
    }
    ModelError::new(
        ErrorKind::Transient,
        format!("cannot open a WebSocket to {url}: {err}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The WebSocket URL mirrors the HTTP one.
    #[test]
    fn url_from_base() {
        assert_eq!(
            url("https://api.openai.com/v1/").unwrap(),
            "wss://api.openai.com/v1/responses"
        );
        assert_eq!(
            url("http://127.0.0.1:9/v1").unwrap(),
            "ws://127.0.0.1:9/v1/responses"
        );
        let err = url("ftp://x").unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidRequest);
        assert!(err.message.contains("ftp://x"), "{err:?}");
    }

    /// A refused connection is a transient error naming the URL.
    #[tokio::test]
    async fn refused_is_transient() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = format!("ws://127.0.0.1:{port}/v1/responses");
        let err = open(&url, &[], Duration::from_secs(5), 1024)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Transient);
        assert!(err.message.contains(&url), "{err:?}");
    }
}
